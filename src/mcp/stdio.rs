//! Standard input and output as the MCP session's transport, read and written on the
//! runtime's own event loop where the descriptors allow it.
//!
//! `tokio::io::stdin()` reads on a blocking thread: every message an agent sends is
//! handed from that thread to the runtime and back, which on two cores made the
//! proxy's extra hop cost as much as the whole call straight to the upstream. The
//! descriptors an MCP client gives its server are a pipe (Python, Rust) or a socket
//! (Node's libuv), and both can be polled. Anything else (a file, a terminal) keeps
//! tokio's blocking reader and writer.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

/// What the session reads the agent's messages from.
pub type Reader = Pin<Box<dyn AsyncRead + Send>>;
/// What the session writes its answers to.
pub type Writer = Pin<Box<dyn AsyncWrite + Send>>;

/// The session's reader and writer, and a guard that puts the descriptors back in
/// blocking mode when dropped (the mode is shared with whoever else holds them, such
/// as a shell that started the server). Call it inside the runtime.
pub fn transport() -> (Reader, Writer, BlockingAgain) {
    // Non-blocking mode belongs to the open pipe or socket, not the descriptor: when
    // standard error is the same one (`2>&1`, or one socket for all three), a note
    // written to it could fail with "would block" in the middle of a session, so that
    // side stays on tokio's blocking reader or writer.
    let stderr = identity(io::stderr().as_fd());
    let reader: Option<Reader> = match polled(io::stdin().as_fd(), stderr) {
        Some(Polled::Pipe(fd)) => tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
            .ok()
            .map(|pipe| Box::pin(pipe) as Reader),
        Some(Polled::Socket(fd)) => socket(fd).ok().map(|s| Box::pin(s) as Reader),
        None => None,
    };
    let writer: Option<Writer> = match polled(io::stdout().as_fd(), stderr) {
        Some(Polled::Pipe(fd)) => tokio::net::unix::pipe::Sender::from_owned_fd(fd)
            .ok()
            .map(|pipe| Box::pin(pipe) as Writer),
        Some(Polled::Socket(fd)) => socket(fd).ok().map(|s| Box::pin(s) as Writer),
        None => None,
    };
    (
        reader.unwrap_or_else(|| Box::pin(tokio::io::stdin())),
        writer.unwrap_or_else(|| Box::pin(tokio::io::stdout())),
        BlockingAgain,
    )
}

/// Whether standard error is the open pipe, socket or file that standard output is
/// (`2>&1`): then a note written while an answer is on its way could land inside the
/// answer's line. A terminal is not: no MCP client reads one, and a person at it
/// should see at once that the server is stopping.
pub fn stderr_is_stdout() -> bool {
    use std::io::IsTerminal;
    if io::stdout().is_terminal() {
        return false;
    }
    match (
        identity(io::stdout().as_fd()),
        identity(io::stderr().as_fd()),
    ) {
        (Some(out), Some(err)) => out == err,
        _ => false,
    }
}

/// Writes `text` to standard error, waiting for it to take the text until `deadline`
/// (`None`: as long as it takes). When standard error is the agent's pipe and the agent
/// reads nothing, a plain write would hold the process forever, and one without any
/// wait drops what a reading agent has not emptied from the pipe yet. The text goes a
/// pipe's atomic size (`PIPE_BUF`, 4096 bytes on Linux) at a time, each once poll says
/// the pipe has that much room, so that no write waits past the deadline; and straight
/// to fd 2, not through std's lock, so that a write left waiting holds no other writer.
/// False when the deadline came first (the rest is not written) or it cannot be written.
pub fn write_stderr_until(text: &str, deadline: Option<std::time::Instant>) -> bool {
    const PIPE_BUF: usize = 4096;
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        let wait_ms = match deadline {
            None => -1,
            Some(deadline) => deadline
                .saturating_duration_since(std::time::Instant::now())
                .as_millis()
                .min(i32::MAX as u128) as i32,
        };
        let mut ready = libc::pollfd {
            fd: libc::STDERR_FILENO,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: poll on one pollfd that lives on this stack frame.
        match unsafe { libc::poll(&mut ready, 1, wait_ms) } {
            0 => return false,
            n if n < 0 => {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return false;
            }
            _ if ready.revents & libc::POLLOUT == 0 => return false,
            _ => {}
        }
        let chunk = &rest[..rest.len().min(PIPE_BUF)];
        // SAFETY: write from a live slice of `chunk.len()` bytes to fd 2, which this
        // process holds open.
        let written =
            unsafe { libc::write(libc::STDERR_FILENO, chunk.as_ptr().cast(), chunk.len()) };
        if written < 0 {
            match io::Error::last_os_error().kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => continue,
                _ => return false,
            }
        }
        rest = &rest[written as usize..];
    }
    true
}

/// What `fd` is open on, as its device and inode.
fn identity(fd: BorrowedFd<'_>) -> Option<(u64, u64)> {
    described(fd).map(|(_, meta)| (meta.dev(), meta.ino()))
}

enum Polled {
    Pipe(OwnedFd),
    Socket(OwnedFd),
}

/// A duplicate of `fd` (so that fd 0 and 1 stay open for the rest of the process),
/// and what it is.
fn described(fd: BorrowedFd<'_>) -> Option<(OwnedFd, std::fs::Metadata)> {
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let meta = file.metadata().ok()?;
    Some((file.into(), meta))
}

/// A duplicate of `fd` when it is a pipe or a socket other than `stderr` (its device
/// and inode), else `None`.
fn polled(fd: BorrowedFd<'_>, stderr: Option<(u64, u64)>) -> Option<Polled> {
    let (owned, meta) = described(fd)?;
    if stderr == Some((meta.dev(), meta.ino())) {
        return None;
    }
    let kind = meta.file_type();
    if kind.is_fifo() {
        Some(Polled::Pipe(owned))
    } else if kind.is_socket() {
        Some(Polled::Socket(owned))
    } else {
        None
    }
}

fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}

/// Clears `O_NONBLOCK` on standard input and output when dropped.
pub struct BlockingAgain;

impl Drop for BlockingAgain {
    fn drop(&mut self) {
        for fd in [io::stdin().as_fd(), io::stdout().as_fd()] {
            let _ = blocking(fd);
        }
    }
}

fn blocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process holds open (fd 0 or 1), reading and
    // writing only its status flags.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK != 0 {
        // SAFETY: as above.
        if unsafe { libc::fcntl(raw, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
