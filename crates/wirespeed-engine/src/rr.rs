//! Request/response on a persistent connection: the client writes a request
//! of `request_size` bytes, the server reads it whole and writes
//! `response_size` bytes back; the client times each round trip. The probe
//! of `--probe-rr` is the same flow with 1-byte messages.

use crate::harness::{Counters, Flow, Reg, Status, ThreadState, tcp_info_of};
use crate::result::TcpInfo;
use crate::sys::{self, EV_IN, EV_OUT};
use socket2::Socket;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Round trips per readiness event before yielding to other flows.
const BUDGET: usize = 8;

/// How long a solo flow blocks in send/recv before it looks at the phase.
const SOLO_WAIT: Duration = Duration::from_millis(10);

/// Sends up to `left` bytes from the thread's zero buffer; Ok(0) = would
/// block (or, with `wait`, timed out).
pub(crate) fn send_part(fd: i32, ts: &ThreadState, left: u64, wait: bool) -> io::Result<usize> {
    let n = (left as usize).min(ts.tx.len());
    match sys::send_flags(fd, &ts.tx[..n], false, wait) {
        Ok(k) => Ok(k),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(e),
    }
}

/// Receives up to `left` bytes; Ok(None) = would block (or, with `wait`,
/// timed out), Ok(Some(0)) = EOF.
pub(crate) fn recv_part(
    fd: i32,
    ts: &mut ThreadState,
    left: u64,
    wait: bool,
) -> io::Result<Option<usize>> {
    let n = (left as usize).min(ts.rx.len());
    let discard = ts.spec.skip_rx_copy;
    match sys::recv_flags(fd, &mut ts.rx[..n], discard, wait) {
        Ok(k) => Ok(Some(k)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// Puts a thread's only flow in blocking mode with short timeouts: one
/// recv per message instead of epoll_wait plus recv, as sockperf does.
fn go_solo(sock: &Socket) -> io::Result<()> {
    sock.set_nonblocking(false)?;
    sock.set_read_timeout(Some(SOLO_WAIT))?;
    sock.set_write_timeout(Some(SOLO_WAIT))
}

/// Changes a flow's epoll interest, if it has a registration.
fn want(reg: &mut Option<Reg>, ts: &ThreadState, interest: u32) -> io::Result<()> {
    match reg.as_mut() {
        Some(r) => r.want(ts.epoll, interest),
        None => Ok(()),
    }
}

/// The client end of a request/response flow.
pub struct RrClient {
    id: u32,
    sock: Socket,
    counters: Arc<Counters>,
    probe: bool,
    request: u64,
    response: u64,
    reg: Option<Reg>,
    solo: bool,
    sending: bool,
    left: u64,
    started: Instant,
    stop_wanted: bool,
    shut: bool,
    info: Option<TcpInfo>,
}

impl RrClient {
    /// A client flow; `probe` records into the probe histogram.
    pub fn new(
        id: u32,
        sock: Socket,
        counters: Arc<Counters>,
        request: u64,
        response: u64,
        probe: bool,
    ) -> RrClient {
        RrClient {
            id,
            sock,
            counters,
            probe,
            request,
            response,
            reg: None,
            solo: false,
            sending: true,
            left: request,
            started: Instant::now(),
            stop_wanted: false,
            shut: false,
            info: None,
        }
    }

    fn shut(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        self.shut = true;
        self.sock.shutdown(std::net::Shutdown::Write)?;
        want(&mut self.reg, ts, EV_IN)?;
        Ok(Status::Active)
    }

    fn step(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        let fd = self.sock.as_raw_fd();
        if self.shut {
            // Drain whatever arrives until the server closes.
            loop {
                match recv_part(fd, ts, u64::MAX, false)? {
                    Some(0) => return Ok(Status::Done),
                    Some(_) => continue,
                    None => return Ok(Status::Active),
                }
            }
        }
        let solo = self.solo;
        let mut rounds = 0;
        loop {
            if self.sending {
                while self.left > 0 {
                    let n = send_part(fd, ts, self.left, solo)?;
                    if n == 0 {
                        want(&mut self.reg, ts, EV_OUT)?;
                        return Ok(Status::Active);
                    }
                    self.counters.add_sent(n);
                    self.left -= n as u64;
                }
                self.sending = false;
                self.left = self.response;
                if !solo {
                    // Wait for the answer in epoll rather than try a read
                    // that would almost always find nothing yet.
                    want(&mut self.reg, ts, EV_IN)?;
                    return Ok(Status::Active);
                }
            }
            while self.left > 0 {
                match recv_part(fd, ts, self.left, solo)? {
                    Some(0) => return Ok(Status::Done),
                    Some(n) => {
                        self.counters.add_received(n);
                        self.left -= n as u64;
                    }
                    None => {
                        want(&mut self.reg, ts, EV_IN)?;
                        return Ok(Status::Active);
                    }
                }
            }
            let now = Instant::now();
            ts.record_until(self.started, now, self.probe);
            self.counters.add_transaction();
            if self.stop_wanted {
                return self.shut(ts);
            }
            rounds += 1;
            self.sending = true;
            self.left = self.request;
            self.started = now;
            let yield_now = if solo {
                ts.phase_changed()
            } else {
                rounds >= BUDGET
            };
            if yield_now {
                want(&mut self.reg, ts, EV_OUT)?;
                return Ok(Status::Active);
            }
        }
    }
}

impl Flow for RrClient {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        if ts.solo {
            go_solo(&self.sock)?;
            self.solo = true;
        }
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_raw_fd(), token, EV_OUT)?);
        self.started = Instant::now();
        Ok(())
    }

    fn on_event(&mut self, ts: &mut ThreadState, _events: u32) -> io::Result<Status> {
        self.step(ts)
    }

    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        self.info = tcp_info_of(self.sock.as_raw_fd());
        self.stop_wanted = true;
        if self.sending && self.left == self.request {
            // Between transactions: stop now.
            return self.shut(ts);
        }
        Ok(Status::Active)
    }

    fn report(&self) -> Option<(u32, Option<TcpInfo>)> {
        Some((self.id, self.info.clone()))
    }
}

/// The server end of a request/response flow.
pub struct RrServer {
    id: u32,
    sock: Socket,
    counters: Arc<Counters>,
    request: u64,
    response: u64,
    reg: Option<Reg>,
    solo: bool,
    sending: bool,
    left: u64,
    info: Option<TcpInfo>,
}

impl RrServer {
    /// A server flow answering `request`-byte requests with `response` bytes.
    pub fn new(
        id: u32,
        sock: Socket,
        counters: Arc<Counters>,
        request: u64,
        response: u64,
    ) -> RrServer {
        RrServer {
            id,
            sock,
            counters,
            request,
            response,
            reg: None,
            solo: false,
            sending: false,
            left: request,
            info: None,
        }
    }
}

impl Flow for RrServer {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        if ts.solo {
            go_solo(&self.sock)?;
            self.solo = true;
        }
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_raw_fd(), token, EV_IN)?);
        Ok(())
    }

    fn on_event(&mut self, ts: &mut ThreadState, _events: u32) -> io::Result<Status> {
        let fd = self.sock.as_raw_fd();
        let solo = self.solo;
        loop {
            if !self.sending {
                while self.left > 0 {
                    match recv_part(fd, ts, self.left, solo)? {
                        Some(0) => return Ok(Status::Done),
                        Some(n) => {
                            self.counters.add_received(n);
                            self.left -= n as u64;
                        }
                        None => {
                            want(&mut self.reg, ts, EV_IN)?;
                            return Ok(Status::Active);
                        }
                    }
                }
                self.sending = true;
                self.left = self.response;
            }
            while self.left > 0 {
                let n = send_part(fd, ts, self.left, solo)?;
                if n == 0 {
                    want(&mut self.reg, ts, EV_OUT)?;
                    return Ok(Status::Active);
                }
                self.counters.add_sent(n);
                self.left -= n as u64;
            }
            self.counters.add_transaction();
            self.sending = false;
            self.left = self.request;
            // Not solo: one transaction per event; the next request is
            // rarely here yet, so wait for it in epoll (level-triggered).
            if !solo || ts.phase_changed() {
                want(&mut self.reg, ts, EV_IN)?;
                return Ok(Status::Active);
            }
        }
    }

    fn on_stop(&mut self, _ts: &mut ThreadState) -> io::Result<Status> {
        self.info = tcp_info_of(self.sock.as_raw_fd());
        // Keep answering until the client, which stops first, closes.
        Ok(Status::Active)
    }

    fn report(&self) -> Option<(u32, Option<TcpInfo>)> {
        Some((self.id, self.info.clone()))
    }
}
