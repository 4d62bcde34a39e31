//! What `/proc` says of processes on this host: when one started, and which live
//! processes are in a session; and the notes of which session a send is in
//! ([`notes`]). A claim's liveness (`ledger::claimer`) and a send's time limit
//! (`command`) both ask it.

pub mod notes;

/// The start time of process `pid` in clock ticks since boot, or None when there is
/// no such process (or no `/proc` to ask). A zombie has ended.
pub fn start_time(pid: u32) -> Option<u64> {
    let fields = stat_fields(pid)?;
    // stat(5) from field 3 (state): the start time is field 22.
    if matches!(fields.first().map(String::as_str), Some("Z" | "X")) {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// The processes in session `session` that have not ended, this process excepted.
/// Read from `/proc` rather than asked with kill(2): an orphan that ended stays a
/// zombie, in its session, until the host's init reaps it, and some never do so
/// promptly. None when there is no `/proc` to read.
pub fn live_in_session(session: u32) -> Option<Vec<u32>> {
    let me = std::process::id();
    let processes = std::fs::read_dir("/proc").ok()?;
    Some(
        processes
            .flatten()
            .filter_map(|process| process.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
            .filter(|&pid| {
                // stat(5) from field 3: state, ppid, pgrp, session.
                stat_fields(pid).is_some_and(|f| {
                    !matches!(f.first().map(String::as_str), Some("Z" | "X"))
                        && f.get(3).and_then(|s| s.parse().ok()) == Some(session)
                })
            })
            .collect(),
    )
}

/// Kills every process of session `session` that has not ended (this one excepted):
/// what a command left running, in a process group of its own or not.
pub fn kill_session(session: u32) {
    for member in live_in_session(session).unwrap_or_default() {
        // SAFETY: kill(2) of one process; it touches no memory of ours.
        unsafe {
            libc::kill(member as i32, libc::SIGKILL);
        }
    }
}

/// The fields of `/proc/PID/stat` after the command name, from field 3 (state) on. The
/// name is in parentheses and may hold anything, spaces and parentheses included.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_start_and_a_session_of_live_members() {
        assert!(start_time(std::process::id()).is_some());
        // SAFETY: getsid(0) has no preconditions.
        let session = unsafe { libc::getsid(0) } as u32;
        assert!(live_in_session(session).is_some());
        assert_eq!(start_time(u32::MAX), None);
    }
}
