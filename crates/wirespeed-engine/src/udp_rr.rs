//! Request/response over UDP: the client sends one numbered request
//! datagram and waits for the answer carrying the same number; an answer
//! that does not come within the spec's timeout counts as a lost
//! transaction and the next request goes out, so loss never stalls a
//! flow. Answers that come after their timeout are counted as late and
//! dropped. The server answers every request with a datagram of the
//! response size echoing the request's header.

use crate::error::EngineError;
use crate::harness::{Counters, EV_TIMER, Flow, FlowEnd, Reg, Status, ThreadState, want};
use crate::proto::UdpFlowCounts;
use crate::rr::go_solo;
use crate::spec::Workload;
use crate::sys::{self, EV_IN};
use crate::sys_ts;
use crate::timestamps::Stamper;
use crate::udp::{Header, Kind, QuietEnd, is_transient, now_ns};
use crate::workload_def::{FlowArgs, WorkloadDef, take_sock};
use socket2::Socket;
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The registry's row: registered UDP sockets, request/response.
pub const WORKLOAD: WorkloadDef = WorkloadDef {
    workload: Workload::UdpRr,
    client: client_flow,
    server: server_flow,
    listener: None,
};

fn client_flow(mut a: FlowArgs) -> Result<Box<dyn Flow>, EngineError> {
    let s = take_sock(&mut a)?;
    let msg = a.spec.request_size as u64;
    let stamps = Stamper::for_flow(a.spec, s.as_fd(), a.plan.id, msg, true, a.notes);
    Ok(Box::new(UdpRrClient {
        id: a.plan.id,
        sock: s,
        counters: a.counters,
        request: a.spec.request_size as usize,
        timeout: Duration::from_secs_f64(a.spec.rr_timeout_s),
        seq: 0,
        waiting: None,
        reg: None,
        token: 0,
        solo: false,
        stop_wanted: false,
        counts: UdpFlowCounts::default(),
        stamps,
    }))
}

fn server_flow(mut a: FlowArgs) -> Result<Option<Box<dyn Flow>>, EngineError> {
    let s = take_sock(&mut a)?;
    let msg = a.spec.response_size as u64;
    let stamps = Stamper::for_flow(a.spec, s.as_fd(), a.plan.id, msg, true, a.notes);
    Ok(Some(Box::new(UdpRrServer {
        id: a.plan.id,
        sock: s,
        counters: a.counters,
        response: a.spec.response_size as usize,
        solo: false,
        end: QuietEnd::new(QUIET),
        counts: UdpFlowCounts::default(),
        stamps,
    })))
}

/// Receives one datagram; with a stamper, its receive timestamp too.
fn recv_one(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    wait: bool,
    stamps: &Option<Stamper>,
) -> io::Result<(usize, Option<i64>)> {
    match stamps {
        Some(_) => sys_ts::recv_stamped(fd, buf, false, wait),
        None => sys::recv_flags(fd, buf, false, wait).map(|n| (n, None)),
    }
}

/// Sends one datagram; through the stamper when there is one (it asks
/// for transmit timestamps of the sampled transactions).
fn send_one(
    fd: BorrowedFd<'_>,
    buf: &[u8],
    wait: bool,
    stamps: &mut Option<Stamper>,
) -> io::Result<usize> {
    match stamps {
        Some(b) => b.send(fd, &[IoSlice::new(buf)], wait),
        None => sys::send_flags(fd, buf, false, wait),
    }
}

/// Transactions per readiness event before yielding to other flows.
const BUDGET: usize = 8;

/// The client end.
pub struct UdpRrClient {
    id: u32,
    sock: Socket,
    counters: Arc<Counters>,
    request: usize,
    timeout: Duration,
    seq: u64,
    /// The request in flight: its number and when it went.
    waiting: Option<(u64, Instant)>,
    reg: Option<Reg>,
    token: u64,
    solo: bool,
    stop_wanted: bool,
    counts: UdpFlowCounts,
    /// `--breakdown`: the flow's timestamps.
    stamps: Option<Stamper>,
}

impl UdpRrClient {
    fn send_request(&mut self, ts: &mut ThreadState) -> io::Result<bool> {
        let n = self.request;
        Header {
            kind: Kind::Request,
            flow: self.id,
            seq: self.seq,
            sent_ns: now_ns(),
        }
        .write(&mut ts.tx[..n]);
        let started = Instant::now();
        if let Some(b) = self.stamps.as_mut() {
            b.set_seq(self.seq);
        }
        match send_one(self.sock.as_fd(), &ts.tx[..n], false, &mut self.stamps) {
            Ok(_) => {}
            // A full socket buffer or an ICMP error: the request is lost,
            // as if on the wire; its timeout counts it.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || is_transient(&e) => {}
            Err(e) => return Err(e),
        }
        self.counters.add_sent(n);
        self.counts.sent += 1;
        if let Some(b) = self.stamps.as_mut() {
            b.request_sent(self.sock.as_fd(), ts.measuring);
        }
        self.waiting = Some((self.seq, started));
        self.seq += 1;
        Ok(true)
    }

    fn step(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        let mut rounds = 0;
        loop {
            let Some((seq, started)) = self.waiting else {
                if self.stop_wanted {
                    return Ok(Status::Done);
                }
                if rounds >= BUDGET && !self.solo {
                    // Yield; come back at once.
                    ts.wake_at(self.token, Instant::now());
                    return Ok(Status::Active);
                }
                self.send_request(ts)?;
                continue;
            };
            match recv_one(self.sock.as_fd(), &mut ts.rx, self.solo, &self.stamps) {
                Ok((n, stamp)) => {
                    let Some(h) = Header::read(&ts.rx[..n]) else {
                        continue;
                    };
                    if h.kind != Kind::Response || h.flow != self.id {
                        continue;
                    }
                    if h.seq != seq {
                        // The answer to a request that timed out.
                        self.counts.out_of_order += 1;
                        continue;
                    }
                    let now = Instant::now();
                    if let Some(b) = self.stamps.as_mut() {
                        b.received(stamp);
                        b.response_read(now.saturating_duration_since(started));
                    }
                    ts.record_until(started, now, false);
                    self.counters.add_received(n);
                    self.counters.add_transaction();
                    self.counts.received += 1;
                    self.waiting = None;
                    rounds += 1;
                    if self.solo && ts.phase_changed() {
                        ts.wake_at(self.token, now);
                        return Ok(Status::Active);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || is_transient(&e) => {
                    let due = started + self.timeout;
                    let now = Instant::now();
                    if now >= due {
                        self.counts.timeouts += 1;
                        self.waiting = None;
                        if let Some(b) = self.stamps.as_mut() {
                            b.lost();
                        }
                        continue;
                    }
                    if self.solo {
                        if ts.phase_changed() {
                            ts.wake_at(self.token, now);
                            return Ok(Status::Active);
                        }
                        continue;
                    }
                    ts.wake_at(self.token, due);
                    return want(&mut self.reg, self.sock.as_fd(), ts, EV_IN)
                        .map(|_| Status::Active);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Flow for UdpRrClient {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        self.token = token;
        if ts.solo {
            go_solo(&self.sock)?;
            self.solo = true;
        }
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_fd(), token, EV_IN)?);
        ts.wake_at(token, Instant::now());
        Ok(())
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if let Some(b) = self.stamps.as_mut() {
            b.on_error_event(self.sock.as_fd(), events);
        }
        if events & (EV_IN | EV_TIMER) != 0 {
            return self.step(ts);
        }
        Ok(Status::Active)
    }

    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        // The request in flight gets its answer or its timeout.
        self.stop_wanted = true;
        if self.waiting.is_none() {
            return Ok(Status::Done);
        }
        ts.wake_at(self.token, Instant::now());
        Ok(Status::Active)
    }

    fn report(&self) -> Option<FlowEnd> {
        let mut c = self.counts.clone();
        // Closed by force with a request in flight: it was not answered.
        c.timeouts += u64::from(self.waiting.is_some());
        Some(FlowEnd {
            id: self.id,
            stamps: self.stamps.as_ref().map(Stamper::report),
            rx_zerocopy: None,
            tcp_info: None,
            udp: Some(c),
        })
    }
}

/// How long a stopping server keeps answering after the last request.
const QUIET: Duration = Duration::from_millis(200);

/// The server end.
pub struct UdpRrServer {
    id: u32,
    sock: Socket,
    counters: Arc<Counters>,
    response: usize,
    solo: bool,
    end: QuietEnd,
    counts: UdpFlowCounts,
    /// `--breakdown`: the flow's timestamps.
    stamps: Option<Stamper>,
}

impl UdpRrServer {
    /// Answers requests: up to [`BUDGET`] before the next wait, or, as a
    /// thread's only flow (solo: blocking calls with a timeout), until
    /// the test's phase changes or a receive times out, as the TCP rr
    /// server does (back in epoll each few requests, a solo server met
    /// every eighth request through an epoll wait).
    fn answer_some(&mut self, ts: &mut ThreadState) -> io::Result<()> {
        let fd = self.sock.as_fd();
        let mut rounds = 0;
        loop {
            // Every pass looks at the phase when solo, so that datagrams
            // that are not requests cannot hold the thread either.
            let enough = if self.solo {
                rounds > 0 && ts.phase_changed()
            } else {
                rounds >= BUDGET
            };
            if enough {
                return Ok(());
            }
            rounds += 1;
            let (n, stamp) = match recv_one(fd, &mut ts.rx, self.solo, &self.stamps) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || is_transient(&e) => {
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            let Some(h) = Header::read(&ts.rx[..n]) else {
                continue;
            };
            if h.kind != Kind::Request || h.flow != self.id {
                continue;
            }
            self.end.heard();
            self.counters.add_received(n);
            self.counts.received += 1;
            if let Some(b) = self.stamps.as_mut() {
                b.set_seq(h.seq);
                b.received(stamp);
                b.request_read();
            }
            let m = self.response;
            Header {
                kind: Kind::Response,
                ..h
            }
            .write(&mut ts.tx[..m]);
            match send_one(fd, &ts.tx[..m], self.solo, &mut self.stamps) {
                Ok(_) => {
                    self.counters.add_sent(m);
                    self.counters.add_transaction();
                    self.counts.sent += 1;
                    if let Some(b) = self.stamps.as_mut() {
                        b.response_sent(self.sock.as_fd());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || is_transient(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Flow for UdpRrServer {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        self.end.set_token(token);
        if ts.solo {
            go_solo(&self.sock)?;
            self.solo = true;
        }
        Reg::add(ts.epoll, self.sock.as_fd(), token, EV_IN).map(drop)
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if let Some(b) = self.stamps.as_mut() {
            b.on_error_event(self.sock.as_fd(), events);
        }
        if events & EV_IN != 0 {
            self.answer_some(ts)?;
        }
        Ok(self.end.on_timer(ts, events))
    }

    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        // The client stops first; answer what it still sends.
        Ok(self.end.stop(ts))
    }

    fn report(&self) -> Option<FlowEnd> {
        Some(FlowEnd {
            id: self.id,
            stamps: self.stamps.as_ref().map(Stamper::report),
            rx_zerocopy: None,
            tcp_info: None,
            udp: Some(self.counts.clone()),
        })
    }
}
