//! Shell completions and the man pages, generated from the clap definitions so they
//! never drift from what the binary accepts; the sections clap cannot know (the
//! environment, files, exit status and the TUI's keys) are written here.

use std::path::PathBuf;

use clap::Args;
use clap_complete::Shell;

use super::{Exit, Kind, Problem, fail, output::fail_with};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell
    pub shell: Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write send-once.1 and one page per command (send-once-ls.1, send-once-draft-submit.1,
    /// ...) into this directory, made if missing, instead of printing send-once(1)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn completions(args: &CompletionsArgs) -> Exit {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut super::command(), "send-once", &mut out);
    super::print_stdout(&String::from_utf8_lossy(&out));
    Exit::Ok
}

/// What clap cannot know about send-once, in roff. Hyphens that are options or
/// commands are `\-`, so they copy and search as the ASCII hyphen.
const EXTRA_SECTIONS: &str = r#".SH ENVIRONMENT
.TP
\fBSEND_ONCE_LEDGER\fR
The ledger every command uses when none is given (a path; a name ending in .jsonl is a JSON Lines ledger).
.TP
\fBSEND_ONCE_USER\fR
The name recorded on every decision (resolve, reset, approve, reject, withdraw, draft submit, draft edit, the TUI) when \fB\-\-by\fR is not given; ignored when blank. Else the OS user.
.TP
\fBNO_COLOR\fR
When set and not empty, no colour: audit prints plain text, and the TUI marks the selection with reversed text and an arrow, and badges with words.
.TP
\fBCLICOLOR_FORCE\fR
When set and not "0", audit prints colour even when stdout is not a terminal (NO_COLOR and \fB\-\-no\-colour\fR still win).
.TP
\fBPAGER\fR
The program the TUI's \fBo\fR key opens a payload or a diff in (the TUI is suspended meanwhile and restored after).
.TP
\fBSEND_ONCE_KEY\fR, \fBSEND_ONCE_ATTEMPT\fR
Set by run and dispatch in the send command's environment: the send key (forward it to providers as the idempotency key) and the attempt number.
.SH FILES
.TP
\fI~/.local/share/send\-once/ledger.db\fR
The default ledger on Linux (\fI$XDG_DATA_HOME/send\-once/ledger.db\fR when XDG_DATA_HOME is set), where neither a ledger argument nor SEND_ONCE_LEDGER is given. On macOS it is \fI~/Library/Application Support/send\-once/ledger.db\fR (the data directory of the \fBdirectories\fR crate). run and draft submit create its directory (mode 0700) on first use.
.TP
\fILEDGER.decisions.jsonl\fR
The decision log beside a JSON Lines ledger (an SQLite ledger keeps it in a table).
.TP
\fILEDGER.lock\fR
The lock a JSON Lines ledger's writers hold, shared with the Node library.
.SH EXIT STATUS
.TP
\fB0\fR
Done: sent now or already sent, nothing unknown (audit), every key resolved.
.TP
\fB1\fR
The send failed definitely and may be retried (run, dispatch); something is unknown (audit); refused: no such entry or draft, a sent entry marked failed, a decision on something that changed since it was seen.
.TP
\fB2\fR
Refused or could not run: bad input (a missing or bad flag, value or file, an ambiguous key prefix), a ledger that is missing or is not a ledger, a gate that fired at dispatch. Bad input changes nothing on disk. Under \fB\-\-json\fR, every error is one object on stdout: {"error": {"kind", "message", ...}, "exitCode": N}.
.TP
\fB3\fR
Unknown: the send may or may not have gone out; check with the provider, then resolve it.
.SH KEYS
In \fBsend\-once tui\fR, \fB?\fR shows every key of the view you are in. Always: \fBq\fR or \fBCtrl\-c\fR quits; the number keys or \fBTab\fR change the view; \fBj\fR/\fBk\fR or the arrows move; \fB/\fR filters; \fBEsc\fR closes the top overlay. Approvals: \fBa\fR approve, \fBr\fR reject, \fBc\fR recheck the facts. Unknown sends: \fBs\fR mark sent, \fBf\fR mark failed. Every decision asks to confirm.
.SH SEE ALSO
Each command has a page of its own, send\-once\-COMMAND(1) (send\-once\-resolve(1), send\-once\-draft\-submit(1), ...), written by \fBsend\-once man \-\-dir\fR \fIDIR\fR. Every command also takes \fB\-h\fR (short help) and \fB\-\-help\fR.
"#;

/// send-once(1): clap's sections, then those only this file knows.
fn main_page() -> Result<Vec<u8>, std::io::Error> {
    // As `generate_to` writes the pages: no page for `help`, so none is named.
    let man = clap_mangen::Man::new(super::command().disable_help_subcommand(true));
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    man.render_subcommands_section(&mut out)?;
    out.extend_from_slice(EXTRA_SECTIONS.as_bytes());
    man.render_version_section(&mut out)?;
    Ok(out)
}

pub fn man(args: &ManArgs) -> Exit {
    let Some(dir) = &args.dir else {
        return match main_page() {
            Ok(out) => {
                super::print_stdout(&String::from_utf8_lossy(&out));
                Exit::Ok
            }
            Err(e) => fail(Exit::Refused, format!("could not render the man page: {e}")),
        };
    };
    if dir.exists() && !dir.is_dir() {
        return fail(
            Exit::Refused,
            format!("--dir {} is not a directory", dir.display()),
        );
    }
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| clap_mangen::generate_to(super::command(), dir))
        .and_then(|()| main_page())
        .and_then(|page| std::fs::write(dir.join("send-once.1"), page));
    match written {
        Ok(()) => {
            super::note(format!("man pages written to {}", dir.display()));
            Exit::Ok
        }
        Err(e) => fail_with(
            Exit::Refused,
            Problem::new(
                Kind::Io,
                format!("could not write the man pages to {}: {e}", dir.display()),
            ),
        ),
    }
}
