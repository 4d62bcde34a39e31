//! The `send-once` binary: parses flags, opens a ledger, hands over to a command, and
//! maps what happened to an exit code (see `cli::Exit`).

mod cli;

fn main() -> std::process::ExitCode {
    // Only for a panic's report: every expected failure is a message and an exit code.
    let _ = color_eyre::install();
    // Every send command this process starts has its session noted before it starts
    // (a send that cannot be noted is not started), so its claims say so.
    send_once::procs::notes::promise();
    cli::main()
}
