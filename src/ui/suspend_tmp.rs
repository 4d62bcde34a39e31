//! Stand-ins until the pager and clipboard land in `terminal`.
use super::terminal::TerminalGuard;

pub fn run_pager(_guard: &mut TerminalGuard, _text: &str) -> Result<(), String> {
    Err("no pager yet".into())
}

pub fn copy_to_clipboard(_guard: &mut TerminalGuard, _text: &str) -> Result<(), String> {
    Err("no clipboard yet".into())
}
