//! The terminal, always given back: a guard restores it on every way out (quit, an
//! error), and a panic hook restores it before the panic message is printed.

use std::io::{Stdout, stdout};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Owns the terminal while the UI runs; dropping it restores the terminal.
pub struct TerminalGuard {
    pub terminal: Tui,
}

impl TerminalGuard {
    pub fn enter() -> std::io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        let entered = execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)
            .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match entered {
            Ok(mut terminal) => {
                terminal.hide_cursor()?;
                Ok(TerminalGuard { terminal })
            }
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Gives the terminal back. Safe to call more than once; it never panics (a failure
/// to restore is reported on stderr, where the shell will show it).
pub fn restore() {
    let raw = disable_raw_mode();
    let screen = execute!(
        stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    if let Err(e) = raw.and(screen) {
        eprintln!("send-once: could not restore the terminal: {e}; try `reset`");
    }
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
