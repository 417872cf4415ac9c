//! The answers a refused or failed client gets: an error message on the
//! control connection, and the texts of the common refusals.

use crate::error::EngineError;
use crate::proto::{Msg, write_msg_until};
use crate::sys;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// What a client refused for want of descriptors is told.
pub(super) const OUT_OF_FDS: &str = "the server is out of file descriptors; try again later";

/// Why a handshaking connection was dropped.
pub(super) const DISPLACED: &str =
    "dropped to make room: too many connections waiting to authenticate; try again";

/// Answers a connection at accept with an error and closes it without
/// waiting on the client: the write cannot block (a new socket's buffer is
/// empty), and what the client sent already is read first so that the
/// close sends a FIN behind the answer rather than an RST that could
/// destroy it.
pub(super) fn refuse(stream: TcpStream, code: &str, why: &str) {
    let fd = stream.as_fd();
    let _ = write_msg_until(fd, &Msg::error(code, why), Instant::now());
    let _ = stream.shutdown(Shutdown::Write);
    let mut buf = [0u8; 4096];
    for _ in 0..16 {
        if !matches!(sys::recv(fd, &mut buf, false), Ok(n) if n > 0) {
            break;
        }
    }
}

/// How long an error answer may take to send.
pub(super) const ERROR_WRITE: Duration = Duration::from_secs(1);

/// Sends an error reply and returns the error for the caller's log.
pub(super) fn fail(stream: &TcpStream, code: &str, msg: String) -> EngineError {
    let _ = write_msg_until(
        stream.as_fd(),
        &Msg::error(code, msg.clone()),
        Instant::now() + ERROR_WRITE,
    );
    EngineError::Refused(msg)
}

/// The answer to a failed read: none when the client left, `timeout` at
/// a deadline, `busy` when the connection was dropped to make room,
/// `protocol` for anything unreadable.
pub(super) fn fail_read(stream: &TcpStream, e: EngineError, displaced: bool) -> EngineError {
    if displaced {
        return fail(stream, "busy", DISPLACED.into());
    }
    match e {
        EngineError::Io { ref error, .. } if error.kind() == std::io::ErrorKind::UnexpectedEof => e,
        EngineError::Timeout(m) => fail(stream, "timeout", format!("timed out {m}")),
        e => fail(stream, "protocol", e.to_string()),
    }
}

/// A duration as messages say it, e.g. "2.5 s".
pub(super) fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}
