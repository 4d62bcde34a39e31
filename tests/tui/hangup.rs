//! The TUI outlives no terminal. When its terminal goes away and no SIGHUP reaches it
//! (it is not the terminal's controlling process: a wrapper that ignores SIGHUP, a
//! multiplexer that closes the pty without signalling), crossterm's reader spins on
//! the dead tty (crossterm-rs/crossterm#793). The TUI must notice the hangup itself
//! and end as on a SIGHUP.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn patience() -> Duration {
    crate::harness::patience(10)
}

#[test]
fn a_tui_whose_terminal_hangs_up_without_a_sighup_ends() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let made = Command::new(env!("CARGO_BIN_EXE_send-once"))
        .arg("run")
        .arg(&ledger)
        .args(["--key", "k-1", "--", "true"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");

    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills two descriptors; no name or termios is asked for.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty");
    // The master must not leak into the TUI (openpty does not set close-on-exec): a
    // copy open there would keep the terminal alive.
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: the descriptors are ours, each owned once.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut tui = Command::new(env!("CARGO_BIN_EXE_send-once"));
    tui.arg("tui")
        .arg(&ledger)
        .args(["--by", "dana"])
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    // SAFETY: setsid is async-signal-safe. A session of its own, without a
    // controlling terminal: closing the pty sends it no SIGHUP.
    unsafe {
        tui.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = tui.spawn().unwrap();
    drop(tui);

    // Drain what it draws, so it never blocks on a full terminal; told to stop, the
    // reader lets go of its copy of the master, so closing ours hangs the pty up.
    let seen = Arc::new(Mutex::new(String::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (seen, stop) = (Arc::clone(&seen), Arc::clone(&stop));
        let mut master = std::fs::File::from(master.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !stop.load(Ordering::SeqCst) {
                let mut fds = libc::pollfd {
                    fd: master.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                if unsafe { libc::poll(&mut fds, 1, 50) } <= 0 {
                    continue;
                }
                match master.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
        })
    };
    let start = Instant::now();
    while !seen.lock().unwrap().contains("Approvals") {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the TUI ended before it drew: {status:?}\n{}",
                seen.lock().unwrap()
            );
        }
        assert!(start.elapsed() < patience(), "the TUI did not draw");
        std::thread::sleep(Duration::from_millis(20));
    }

    // The terminal goes away: every descriptor of its master side is closed.
    stop.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    drop(master);
    let gone = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if gone.elapsed() > patience() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the TUI lived on after its terminal hung up");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGHUP),
        "it ends as on a SIGHUP: {status:?} (signal {:?})",
        status.signal()
    );
}
