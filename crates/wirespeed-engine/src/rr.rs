//! Request/response on a persistent connection: the client writes a request
//! of `request_size` bytes, the server reads it whole and writes
//! `response_size` bytes back; the client times each round trip. The probe
//! of `--probe-rr` is the same flow with 1-byte messages.

use crate::error::EngineError;
use crate::harness::{
    Counters, Flow, FlowEnd, Reg, Status, ThreadState, drain_to_eof, tcp_info_of, want, want_for,
};
use crate::result::TcpInfo;
use crate::spec::{FlowKind, Workload};
use crate::sys::{EV_IN, EV_OUT};
use crate::timestamps::{Stamper, recv_via, send_via};
use crate::uring::{UringPlan, UringRole};
use crate::workload_def::{FlowArgs, WorkloadDef, take_sock};
use socket2::Socket;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The registry's row: persistent TCP connections, no listener of its own.
pub const WORKLOAD: WorkloadDef = WorkloadDef {
    workload: Workload::Rr,
    client: client_flow,
    server: server_flow,
    listener: None,
};

/// Request and response sizes of a flow: the probe's are 1 byte.
fn sizes(a: &FlowArgs) -> (u64, u64) {
    if a.plan.kind == FlowKind::Probe {
        (1, 1)
    } else {
        (a.spec.request_size as u64, a.spec.response_size as u64)
    }
}

fn client_flow(mut a: FlowArgs) -> Result<Box<dyn Flow>, EngineError> {
    let (q, r) = sizes(&a);
    let probe = a.plan.kind == FlowKind::Probe;
    let s = take_sock(&mut a)?;
    let stamps = (!probe)
        .then(|| Stamper::for_flow(a.spec, s.as_fd(), a.plan.id, q, false, a.notes))
        .flatten();
    let mut f = RrClient::new(a.plan.id, s, a.counters, q, r, probe);
    f.stamps = stamps;
    Ok(Box::new(f))
}

fn server_flow(mut a: FlowArgs) -> Result<Option<Box<dyn Flow>>, EngineError> {
    let (q, r) = sizes(&a);
    let s = take_sock(&mut a)?;
    let stamps = (a.plan.kind != FlowKind::Probe)
        .then(|| Stamper::for_flow(a.spec, s.as_fd(), a.plan.id, r, false, a.notes))
        .flatten();
    let mut f = RrServer::new(a.plan.id, s, a.counters, q, r);
    f.stamps = stamps;
    Ok(Some(Box::new(f)))
}

/// Round trips per readiness event before yielding to other flows.
const BUDGET: usize = 8;

/// How long a solo flow blocks in send/recv before it looks at the phase.
const SOLO_WAIT: Duration = Duration::from_millis(10);

/// Puts a thread's only flow in blocking mode with short timeouts: one
/// recv per message instead of epoll_wait plus recv, as sockperf does.
pub(crate) fn go_solo(sock: &Socket) -> io::Result<()> {
    sock.set_nonblocking(false)?;
    solo_timeouts(sock)
}

/// Bounds a blocking socket's connect, sends and receives by
/// [`SOLO_WAIT`], so a solo flow comes back to look at the phase.
pub(crate) fn solo_timeouts(sock: &Socket) -> io::Result<()> {
    sock.set_read_timeout(Some(SOLO_WAIT))?;
    sock.set_write_timeout(Some(SOLO_WAIT))
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
    stamps: Option<Stamper>,
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
            stamps: None,
        }
    }

    fn shut(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        self.shut = true;
        self.sock.shutdown(std::net::Shutdown::Write)?;
        want(&mut self.reg, self.sock.as_fd(), ts, EV_IN)?;
        Ok(Status::Active)
    }

    fn step(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        let fd = self.sock.as_fd();
        if self.shut {
            // Drain whatever arrives until the server closes.
            return Ok(if drain_to_eof(fd, ts)? {
                Status::Done
            } else {
                Status::Active
            });
        }
        let solo = self.solo;
        let mut rounds = 0;
        loop {
            if self.sending {
                if let Some(b) = self.stamps.as_mut() {
                    b.writing();
                }
                let stamps = self.stamps.as_mut();
                let sent = send_via(
                    stamps,
                    fd,
                    ts,
                    &mut self.left,
                    &self.counters,
                    solo,
                    &mut self.reg,
                )?;
                if let Some(st) = sent {
                    return Ok(st);
                }
                if let Some(b) = self.stamps.as_mut() {
                    b.request_sent(self.sock.as_fd(), ts.measuring);
                }
                self.sending = false;
                self.left = self.response;
                if !solo {
                    // Wait for the answer in epoll rather than try a read
                    // that would almost always find nothing yet.
                    want_for(&mut self.reg, self.sock.as_fd(), ts, false)?;
                    return Ok(Status::Active);
                }
            }
            let stamps = self.stamps.as_mut();
            let got = recv_via(
                stamps,
                fd,
                ts,
                &mut self.left,
                &self.counters,
                solo,
                &mut self.reg,
            )?;
            if let Some(st) = got {
                return Ok(st);
            }
            let now = Instant::now();
            if let Some(b) = self.stamps.as_mut() {
                b.response_read(now.saturating_duration_since(self.started));
            }
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
                want(&mut self.reg, self.sock.as_fd(), ts, EV_OUT)?;
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
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_fd(), token, EV_OUT)?);
        self.started = Instant::now();
        Ok(())
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if let Some(b) = self.stamps.as_mut() {
            b.on_error_event(self.sock.as_fd(), events);
        }
        self.step(ts)
    }

    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        self.info = tcp_info_of(self.sock.as_fd());
        self.stop_wanted = true;
        if self.reg.is_none() {
            // io_uring drives this flow (it never joined epoll): the
            // driver shuts after the transaction in flight.
            return Ok(Status::Active);
        }
        if self.sending && self.left == self.request {
            // Between transactions: stop now.
            return self.shut(ts);
        }
        Ok(Status::Active)
    }

    fn shutdown_write(&self) -> io::Result<()> {
        crate::sys::shutdown_write(self.sock.as_fd())
    }

    fn uring(&self) -> Option<UringPlan> {
        self.stamps.is_none().then(|| UringPlan {
            fd: self.sock.as_raw_fd(),
            counters: self.counters.clone(),
            role: UringRole::RrClient {
                request: self.request,
                response: self.response,
                probe: self.probe,
            },
        })
    }

    fn report(&self) -> Option<FlowEnd> {
        let mut end = FlowEnd::tcp(self.id, self.info.clone())?;
        end.stamps = self.stamps.as_ref().map(Stamper::report);
        Some(end)
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
    stamps: Option<Stamper>,
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
            stamps: None,
        }
    }
}

impl Flow for RrServer {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        if ts.solo {
            go_solo(&self.sock)?;
            self.solo = true;
        }
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_fd(), token, EV_IN)?);
        Ok(())
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if let Some(b) = self.stamps.as_mut() {
            b.on_error_event(self.sock.as_fd(), events);
        }
        let fd = self.sock.as_fd();
        let solo = self.solo;
        loop {
            if !self.sending {
                let stamps = self.stamps.as_mut();
                let got = recv_via(
                    stamps,
                    fd,
                    ts,
                    &mut self.left,
                    &self.counters,
                    solo,
                    &mut self.reg,
                )?;
                if let Some(st) = got {
                    return Ok(st);
                }
                if let Some(b) = self.stamps.as_mut() {
                    b.request_read();
                }
                self.sending = true;
                self.left = self.response;
            }
            let stamps = self.stamps.as_mut();
            let sent = send_via(
                stamps,
                fd,
                ts,
                &mut self.left,
                &self.counters,
                solo,
                &mut self.reg,
            )?;
            if let Some(st) = sent {
                return Ok(st);
            }
            if let Some(b) = self.stamps.as_mut() {
                b.response_sent(self.sock.as_fd());
            }
            self.counters.add_transaction();
            self.sending = false;
            self.left = self.request;
            // Not solo: one transaction per event; the next request is
            // rarely here yet, so wait for it in epoll (level-triggered).
            if !solo || ts.phase_changed() {
                want(&mut self.reg, self.sock.as_fd(), ts, EV_IN)?;
                return Ok(Status::Active);
            }
        }
    }

    fn on_stop(&mut self, _ts: &mut ThreadState) -> io::Result<Status> {
        self.info = tcp_info_of(self.sock.as_fd());
        // Keep answering until the client, which stops first, closes.
        Ok(Status::Active)
    }

    fn uring(&self) -> Option<UringPlan> {
        self.stamps.is_none().then(|| UringPlan {
            fd: self.sock.as_raw_fd(),
            counters: self.counters.clone(),
            role: UringRole::RrServer {
                request: self.request,
                response: self.response,
            },
        })
    }

    fn report(&self) -> Option<FlowEnd> {
        let mut end = FlowEnd::tcp(self.id, self.info.clone())?;
        end.stamps = self.stamps.as_ref().map(Stamper::report);
        Some(end)
    }
}
