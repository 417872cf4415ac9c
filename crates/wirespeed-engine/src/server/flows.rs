//! Taking a test's flows: TCP connections checked by their preamble's
//! token, or UDP flows registered, while the control connection is watched.

use super::answer::fail;
use super::config::ServerConfig;
use super::data_port::{is_out_of_fds, open_data_port};
use crate::error::EngineError;
use crate::proto::{DATA_PREAMBLE_LEN, Msg, hex, parse_data_preamble, write_msg_until};
use crate::spec::{FlowKind, TestSpec};
use crate::sys;
use crate::udp::Registrar;
use socket2::Socket;
use std::collections::VecDeque;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// Opens the test's data port, tells the client, and takes its
/// `persistent` flows (accepted, or registered for UDP) by the idle
/// timeout plus a millisecond a flow; returns the TCP listener, kept for
/// the test, and the flows' sockets.
pub(super) fn take_flows(
    stream: &TcpStream,
    cfg: &ServerConfig,
    spec: &TestSpec,
    token: &[u8; 16],
    persistent: usize,
) -> Result<(Option<Socket>, Vec<Option<Socket>>), EngineError> {
    let fd = stream.as_fd();
    let answer_by = || Instant::now() + cfg.idle_timeout;
    let (listener, registration, port) = open_data_port(stream, cfg, spec, persistent)?;
    write_msg_until(
        fd,
        &Msg::Accepted {
            token: hex(token),
            data_port: port,
        },
        answer_by(),
    )?;
    // Accept while the client connects: it sends Start once all are up.
    let deadline = answer_by() + Duration::from_millis(persistent as u64);
    let flows = match (&listener, &registration) {
        (Some(l), _) => accept_flows(l, token, spec, persistent, deadline, fd, cfg),
        (_, Some(r)) => register_udp_flows(r, token, spec, persistent, deadline, fd),
        _ => unreachable!("a listener or a registration socket was opened"),
    };
    drop(registration);
    match flows {
        Ok(s) => Ok((listener, s)),
        Err(FlowsError::ClientGone(got)) => Err(EngineError::Protocol(format!(
            "the client went away with {got} of {persistent} data flows connected"
        ))),
        Err(FlowsError::Fail(code, msg)) => Err(fail(stream, code, msg)),
    }
}

/// Why accepting a test's flows stopped.
enum FlowsError {
    /// The control connection closed: the client is gone (flows so far).
    ClientGone(usize),
    /// Answer the client with this code and message.
    Fail(&'static str, String),
}

/// Most data connections waiting for their preamble at once; past it the
/// oldest is dropped.
const MAX_PENDING: usize = 512;

/// A data connection whose preamble is not all in yet.
struct Pending {
    sock: Socket,
    head: [u8; DATA_PREAMBLE_LEN],
    got: usize,
    until: Instant,
}

/// What reading a preamble gave.
enum Preamble {
    /// Not all in yet.
    More,
    /// Complete: this flow id (not yet checked against the roster).
    Flow(u32),
    /// Closed, failed or not this test's: drop it.
    Drop,
}

impl Pending {
    fn read(&mut self, token: &[u8; 16]) -> Preamble {
        while self.got < DATA_PREAMBLE_LEN {
            match sys::recv(self.sock.as_fd(), &mut self.head[self.got..], false) {
                Ok(0) => return Preamble::Drop,
                Ok(n) => self.got += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Preamble::More,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Preamble::Drop,
            }
        }
        match parse_data_preamble(&self.head, token) {
            Some(id) => Preamble::Flow(id),
            None => Preamble::Drop,
        }
    }
}

/// Accepts the test's persistent flows. Preambles are read from every
/// waiting connection at once, each within `cfg.preamble_timeout` of its
/// accept, so idle or garbage connections cost one descriptor for a short
/// time and delay nobody; anything without the token is dropped. The
/// control connection is watched throughout: if the client goes, so do
/// its flows, at once.
fn accept_flows(
    listener: &Socket,
    token: &[u8; 16],
    spec: &TestSpec,
    want: usize,
    deadline: Instant,
    control: BorrowedFd<'_>,
    cfg: &ServerConfig,
) -> Result<Vec<Option<Socket>>, FlowsError> {
    let roster = spec.roster();
    let mut socks: Vec<Option<Socket>> = (0..roster.len()).map(|_| None).collect();
    let mut got = 0;
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    if want > 0 {
        listener.set_nonblocking(true).map_err(|e| {
            FlowsError::Fail("internal", format!("configure the data listener: {e}"))
        })?;
    }
    let place = |socks: &mut Vec<Option<Socket>>, id: u32, s: Socket| -> bool {
        let Some(plan) = roster.get(id as usize) else {
            return false;
        };
        if plan.kind == FlowKind::Crr || socks[id as usize].is_some() {
            return false;
        }
        if spec.nodelay || plan.kind == FlowKind::Probe {
            s.set_tcp_nodelay(true).ok();
        }
        socks[id as usize] = Some(s);
        true
    };
    while got < want {
        let now = Instant::now();
        if now >= deadline {
            return Err(FlowsError::Fail(
                "timeout",
                format!("only {got} of {want} data flows connected in time"),
            ));
        }
        while pending.front().is_some_and(|p| p.until <= now) {
            pending.pop_front();
        }
        fds.clear();
        fds.push(sys::pollfd(listener.as_fd(), libc::POLLIN));
        fds.push(sys::pollfd(control, libc::POLLRDHUP));
        fds.extend(
            pending
                .iter()
                .map(|p| sys::pollfd(p.sock.as_fd(), libc::POLLIN)),
        );
        let next = pending.front().map_or(deadline, |p| p.until.min(deadline));
        let ms = next
            .saturating_duration_since(now)
            .as_micros()
            .div_ceil(1000)
            .clamp(1, 200) as i32;
        sys::poll(&mut fds, ms)
            .map_err(|e| FlowsError::Fail("internal", format!("poll data connections: {e}")))?;
        if fds[1].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return Err(FlowsError::ClientGone(got));
        }
        let ready: Vec<bool> = fds[2..].iter().map(|f| f.revents != 0).collect();
        let mut still = VecDeque::with_capacity(pending.len());
        for (mut p, r) in pending.drain(..).zip(ready) {
            if !r {
                still.push_back(p);
                continue;
            }
            match p.read(token) {
                Preamble::More => still.push_back(p),
                Preamble::Flow(id) => got += usize::from(place(&mut socks, id, p.sock)),
                Preamble::Drop => {}
            }
        }
        pending = still;
        if fds[0].revents & libc::POLLIN == 0 {
            continue;
        }
        for _ in 0..1024 {
            let s = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                    return Err(FlowsError::Fail(
                        "busy",
                        format!(
                            "the server ran out of file descriptors with {got} of {want} data flows connected; try fewer flows or later"
                        ),
                    ));
                }
                Err(_) => break,
            };
            if s.set_nonblocking(true).is_err() {
                continue;
            }
            let mut p = Pending {
                sock: s,
                head: [0; DATA_PREAMBLE_LEN],
                got: 0,
                until: Instant::now() + cfg.preamble_timeout,
            };
            match p.read(token) {
                Preamble::More => {
                    if pending.len() >= MAX_PENDING {
                        pending.pop_front();
                    }
                    pending.push_back(p);
                }
                Preamble::Flow(id) => got += usize::from(place(&mut socks, id, p.sock)),
                Preamble::Drop => {}
            }
        }
    }
    Ok(socks)
}

/// Registers the test's UDP flows (see [`crate::udp`]): every flow's
/// `register` datagram must carry the token and come by `deadline`;
/// anything else on the registration socket is dropped. The control
/// connection is watched throughout, as for TCP flows.
fn register_udp_flows(
    reg: &Socket,
    token: &[u8; 16],
    spec: &TestSpec,
    want: usize,
    deadline: Instant,
    control: BorrowedFd<'_>,
) -> Result<Vec<Option<Socket>>, FlowsError> {
    let roster = spec.roster();
    let mut r = Registrar::new(&roster, *token, spec);
    while r.got < want {
        let now = Instant::now();
        if now >= deadline {
            return Err(FlowsError::Fail(
                "timeout",
                format!("only {} of {want} UDP flows registered in time", r.got),
            ));
        }
        let mut fds = [
            sys::pollfd(reg.as_fd(), libc::POLLIN),
            sys::pollfd(control, libc::POLLRDHUP),
        ];
        let ms = deadline
            .saturating_duration_since(now)
            .as_millis()
            .clamp(1, 200) as i32;
        sys::poll(&mut fds, ms)
            .map_err(|e| FlowsError::Fail("internal", format!("poll UDP registrations: {e}")))?;
        if fds[1].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return Err(FlowsError::ClientGone(r.got));
        }
        if fds[0].revents != 0
            && let Err(e) = r.serve(reg)
        {
            let code = if is_out_of_fds(&e) {
                "busy"
            } else {
                "internal"
            };
            return Err(FlowsError::Fail(
                code,
                format!(
                    "registering UDP flows ({} of {want} in): {e}; try fewer flows or later",
                    r.got
                ),
            ));
        }
    }
    Ok(r.into_sockets())
}
