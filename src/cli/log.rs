//! Where the library's spans go: `SEND_ONCE_LOG` (a `tracing` filter such as `info` or
//! `send_once=debug`) turns them on, on stderr, as text or, with `--log-format json`,
//! as JSON lines. Off by default: a command's stderr is for the person.

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// How spans are written on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One readable line per span when it closes, with its fields and duration.
    #[default]
    Text,
    /// One JSON object per line, for a log collector.
    Json,
}

/// Installs the subscriber when `SEND_ONCE_LOG` asks for one. A filter that cannot be
/// read is said once and ignored: logging must never stop a send.
pub fn init(format: LogFormat) {
    let Some(directives) = std::env::var_os("SEND_ONCE_LOG") else {
        return;
    };
    let directives = directives.to_string_lossy();
    if directives.trim().is_empty() {
        return;
    }
    let filter = match EnvFilter::builder().parse(directives.as_ref()) {
        Ok(filter) => filter,
        Err(e) => {
            super::note(format!(
                "SEND_ONCE_LOG={}: {e}; no log is written (try SEND_ONCE_LOG=info)",
                send_once::text::visible_inline(&directives)
            ));
            return;
        }
    };
    // A span's close event carries its fields and how long it took: the one line an
    // operator needs per gate.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    if let Err(e) = installed {
        super::note(format!("the log could not be set up: {e}"));
    }
}
