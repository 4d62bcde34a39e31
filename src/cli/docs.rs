//! Shell completions and the man page, generated from the clap definitions so they
//! never drift from what the binary accepts.

use clap::Args;
use clap_complete::Shell;

use super::{Exit, fail};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell
    pub shell: Shell,
}

pub fn completions(args: &CompletionsArgs) -> Exit {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut super::command(), "send-once", &mut out);
    super::print_stdout(&String::from_utf8_lossy(&out));
    Exit::Ok
}

pub fn man() -> Exit {
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(super::command()).render(&mut out) {
        return fail(Exit::Refused, format!("could not render the man page: {e}"));
    }
    super::print_stdout(&String::from_utf8_lossy(&out));
    Exit::Ok
}
