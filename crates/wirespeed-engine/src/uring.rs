//! The io_uring engine (`--io uring`): a second event loop beside the
//! harness's epoll loop, over the same flows, counters, histograms,
//! timers and phases. A worker that asked for io_uring opens one ring
//! ([`open`]); when the kernel refuses (the `io_uring_disabled` sysctl,
//! io_uring_setup failing with ENOSYS, or EPERM from a container's
//! seccomp profile) it runs epoll instead and says why in its notes.
//!
//! What a flow does here is its [`UringRole`] (from [`Flow::uring`]):
//! - a stream sender keeps [`DEPTH`] sends of the message size in flight;
//! - a stream or UDP receiver has one multishot receive into the ring's
//!   provided buffers, re-armed when the kernel ends it (single-shot
//!   receives when the kernel has no provided-buffer rings);
//! - an rr client submits its request (MSG_WAITALL, no completion unless
//!   it fails) and the receive of the whole response (MSG_WAITALL) in one
//!   system call that also waits: one io_uring_enter per transaction;
//!   at stop it finishes the transaction in flight, then shuts its write
//!   side, so the server's last answer is never cut by its close;
//! - an rr server receives a whole request, then submits the response
//!   and the next request's receive together;
//! - a UDP sender keeps [`DEPTH`] sends of datagram slots in flight (one
//!   GSO send each when the socket has UDP_SEGMENT set), each slot's
//!   headers written by the flow ([`Flow::datagrams`]).
//!
//! The flow objects keep what they own: the socket, TCP_INFO at stop,
//! the shutdown of a stream sender's write side, UDP sequence tracking,
//! the end of a UDP receiver after a quiet spell (a timer), and the
//! report.

use crate::harness::{Control, Flow, Slab, ThreadState, WindowStart, WorkerOut};
pub use crate::harness::{UringPlan, UringRole};
use crate::spec::{IoEngine, TestSpec};
use crate::sys_uring::{self, Done, Ring, RingSize, UNCOUNTED};
use std::io;
use std::time::Instant;

/// Sends a stream or UDP sender keeps in flight.
pub const DEPTH: usize = 4;

/// Opens the worker's ring when the test asks for io_uring and every
/// flow has an io_uring role; None (epoll runs) otherwise, with the
/// reason in `notes` when io_uring was asked for.
pub fn open(spec: &TestSpec, flows: &[Box<dyn Flow>], notes: &mut Vec<String>) -> Option<Ring> {
    if spec.io != IoEngine::Uring {
        return None;
    }
    let mut note = |why: String| {
        let n = format!("io_uring: {why}; this worker runs epoll instead");
        if !notes.contains(&n) {
            notes.push(n);
        }
    };
    if let Some(why) = sys_uring::disabled_by_sysctl() {
        note(why);
        return None;
    }
    let Some(plans) = flows.iter().map(|f| f.uring()).collect::<Option<Vec<_>>>() else {
        note("a flow of this test has no io_uring path".into());
        return None;
    };
    let size = ring_size(spec, &plans);
    match Ring::new(size) {
        Ok(r) => Some(r),
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::ENOSYS) => "this kernel has no io_uring (io_uring_setup: ENOSYS)".into(),
                Some(libc::EPERM) => {
                    "io_uring_setup was refused (EPERM: a seccomp profile, as in most containers, or the io_uring_disabled sysctl)".into()
                }
                _ => format!("could not set up a ring ({e})"),
            };
            note(why);
            None
        }
    }
}

/// Bytes of each provided buffer: a receive call's worth, 64 KiB (a GRO
/// batch of datagrams) to 256 KiB.
fn provided_len(spec: &TestSpec) -> usize {
    (spec.msg_size as usize).clamp(64 << 10, 256 << 10)
}

/// The ring a worker's flows need.
fn ring_size(spec: &TestSpec, plans: &[UringPlan]) -> RingSize {
    let udp_senders = plans
        .iter()
        .filter(|p| matches!(p.role, UringRole::UdpSend { .. }))
        .count();
    let receivers = plans
        .iter()
        .any(|p| matches!(p.role, UringRole::StreamRecv | UringRole::UdpRecv));
    let buf = provided_len(spec);
    let provided = if receivers {
        (
            ((8 << 20) / buf).next_power_of_two().clamp(16, 256) as u16,
            buf,
        )
    } else {
        (0, 0)
    };
    RingSize {
        entries: (plans.len() * (DEPTH + 2))
            .next_power_of_two()
            .clamp(64, 4096) as u32,
        io_len: crate::harness::io_len(spec),
        slots: (udp_senders * DEPTH, crate::udp::GSO_BYTES),
        provided,
    }
}

/// What a submission was, in the low byte of its user data.
const OP_SEND: u64 = 1;
const OP_RECV: u64 = 2;
const OP_SLOT: u64 = 3;

/// User data of operation `op` of the flow at `token`, `k` its slot.
fn user_data(token: usize, k: usize, op: u64) -> u64 {
    ((token as u64) << 16) | ((k as u64) << 8) | op
}

/// Token, slot and op of a completion's user data.
fn decode(ud: u64) -> (usize, usize, u64) {
    let ud = ud & !UNCOUNTED;
    ((ud >> 16) as usize, ((ud >> 8) & 0xff) as usize, ud & 0xff)
}

/// One flow's io_uring state.
struct UFlow {
    plan: UringPlan,
    /// Counted sends in flight.
    sends: usize,
    /// A receive is in flight.
    receiving: bool,
    /// Bytes of the current message still to come (rr).
    left: u64,
    /// When the current transaction started (rr client).
    started: Instant,
    /// The test stopped: no new sends; wait for the peer's close.
    stopping: bool,
    /// UDP sender: the slots this flow owns.
    first_slot: usize,
}

/// The loop's state: the ring and each slab slot's io_uring state.
struct Driver {
    ring: Ring,
    flows: Vec<Option<UFlow>>,
    io_len: usize,
}

/// Runs `flows` on `ring` until the test stops, aborts or they all end;
/// returns when its measured window opened.
pub(crate) fn run(
    ring: Ring,
    flows: Vec<Box<dyn Flow>>,
    slab: &mut Slab,
    ts: &mut ThreadState,
    ctl: &Control,
    out: &mut WorkerOut,
) -> WindowStart {
    let mut d = Driver {
        ring,
        flows: Vec::new(),
        io_len: crate::harness::io_len(ts.spec),
    };
    let mut udp_slots = 0;
    for f in flows {
        let Some(plan) = f.uring() else { continue };
        if let Err(e) = sys_uring::set_blocking(plan.fd) {
            ts.note(format!("io_uring: could not make a socket blocking: {e}"));
        }
        let token = slab.adopt(f);
        d.flows.resize_with(d.flows.len().max(token + 1), || None);
        let first_slot = udp_slots;
        if matches!(plan.role, UringRole::UdpSend { .. }) {
            udp_slots += DEPTH;
        }
        d.flows[token] = Some(UFlow {
            plan,
            sends: 0,
            receiving: false,
            left: 0,
            started: Instant::now(),
            stopping: false,
            first_slot,
        });
        if let Err(e) = d.start(token, slab, ts) {
            d.fail(token, e, slab, ts);
        }
    }
    d.event_loop(slab, ts, ctl, out)
}

impl Driver {
    fn event_loop(
        &mut self,
        slab: &mut Slab,
        ts: &mut ThreadState,
        ctl: &Control,
        out: &mut WorkerOut,
    ) -> WindowStart {
        let mut done: Vec<Done> = Vec::with_capacity(256);
        let mut measure_start: WindowStart = None;
        let mut deadline: Option<Instant> = None;
        let mut next_tick = Instant::now() + crate::harness::TICK;
        loop {
            let was_stopping = ts.stopping;
            let go_on =
                crate::harness::go_on(slab, ts, ctl, out, &mut measure_start, &mut deadline);
            if !go_on {
                break;
            }
            if ts.stopping && !was_stopping {
                self.stop_all(slab, ts);
            }
            let wait = ts.timer_wait().unwrap_or(crate::harness::MAX_WAIT);
            if let Err(e) = self.ring.submit_and_wait(wait) {
                ts.note(format!("io_uring_enter failed: {e}"));
                break;
            }
            self.ring.completions(&mut done);
            for c in done.iter() {
                self.complete(*c, slab, ts);
            }
            slab.after_wait(ts, &mut next_tick);
            self.forget_ended(slab);
        }
        measure_start
    }

    /// Drops the state of flows the slab ended (a UDP sender at stop, a
    /// UDP receiver after its quiet spell).
    fn forget_ended(&mut self, slab: &Slab) {
        for (i, f) in self.flows.iter_mut().enumerate() {
            if f.is_some() && !slab.is_live(i) {
                *f = None;
            }
        }
    }

    /// The first submissions of the flow at `token`.
    fn start(&mut self, token: usize, slab: &mut Slab, ts: &mut ThreadState) -> io::Result<()> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(());
        };
        match f.plan.role {
            UringRole::StreamSend { .. } => {
                for _ in 0..DEPTH {
                    self.send(token)?;
                }
                Ok(())
            }
            UringRole::StreamRecv | UringRole::UdpRecv => self.arm_recv(token),
            UringRole::RrClient { .. } => self.next_request(token),
            UringRole::RrServer { request, .. } => {
                f.left = request;
                self.recv_message(token)
            }
            UringRole::UdpSend { .. } => {
                for k in 0..DEPTH {
                    self.send_datagrams(token, k, slab, ts)?;
                }
                Ok(())
            }
        }
    }

    /// One more stream send of the flow at `token`.
    fn send(&mut self, token: usize) -> io::Result<()> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(());
        };
        if let UringRole::StreamSend { len } = f.plan.role {
            f.sends += 1;
            let fd = f.plan.fd;
            self.ring
                .send_zeros(fd, len, user_data(token, 0, OP_SEND), false)?;
        }
        Ok(())
    }

    /// Fills UDP slot `k` of the flow at `token` with datagrams and sends it.
    fn send_datagrams(
        &mut self,
        token: usize,
        k: usize,
        slab: &mut Slab,
        ts: &mut ThreadState,
    ) -> io::Result<()> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(());
        };
        let UringRole::UdpSend { len } = f.plan.role else {
            return Ok(());
        };
        let slot = f.first_slot + k;
        let fd = f.plan.fd;
        let buf = &mut self.ring.slot_mut(slot)[..len];
        let Some(flow) = slab.flow_mut(token) else {
            return Ok(());
        };
        let n = flow.datagrams(ts, buf);
        // n: the bytes of whole datagrams written.
        if n == 0 {
            return Ok(());
        }
        f.sends += 1;
        self.ring
            .send_slot(fd, slot, n, user_data(token, k, OP_SLOT))
    }

    /// Arms the receive of a stream or UDP receiver (or of a stopping
    /// sender waiting for the peer's close).
    fn arm_recv(&mut self, token: usize) -> io::Result<()> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(());
        };
        f.receiving = true;
        let (fd, ud) = (f.plan.fd, user_data(token, 0, OP_RECV));
        if matches!(f.plan.role, UringRole::StreamRecv | UringRole::UdpRecv) {
            self.ring.recv_multi(fd, ud)
        } else {
            self.ring.recv_sink(fd, self.io_len, ud, false)
        }
    }

    /// Receives the rest of an rr message (MSG_WAITALL).
    fn recv_message(&mut self, token: usize) -> io::Result<()> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(());
        };
        f.receiving = true;
        let (fd, left) = (f.plan.fd, f.left as usize);
        self.ring
            .recv_sink(fd, left, user_data(token, 0, OP_RECV), true)
    }

    /// An rr client's next transaction: the request and the receive of
    /// the response, submitted together.
    fn next_request(&mut self, token: usize) -> io::Result<()> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(());
        };
        let UringRole::RrClient {
            request, response, ..
        } = f.plan.role
        else {
            return Ok(());
        };
        f.started = Instant::now();
        f.left = response;
        let fd = f.plan.fd;
        f.plan.counters.add_sent(request as usize);
        self.ring
            .send_zeros(fd, request as usize, user_data(token, 0, OP_SEND), true)?;
        self.recv_message(token)
    }
}

impl Driver {
    /// The test stopped: senders stop sending and wait for the peer's
    /// close once their sends are in; the flows themselves already took
    /// TCP_INFO and shut their write side ([`Flow::on_stop`]).
    fn stop_all(&mut self, slab: &mut Slab, ts: &mut ThreadState) {
        for token in 0..self.flows.len() {
            let Some(f) = live(&mut self.flows, token) else {
                continue;
            };
            f.stopping = true;
            let idle_sender =
                matches!(f.plan.role, UringRole::StreamSend { .. }) && f.sends == 0 && !f.receiving;
            if idle_sender && let Err(e) = self.arm_recv(token) {
                self.fail(token, e, slab, ts);
            }
        }
    }

    /// Ends the flow at `token` after `e` (noted unless the test's stop
    /// caused it).
    fn fail(&mut self, token: usize, e: io::Error, slab: &mut Slab, ts: &mut ThreadState) {
        ts.note_flow_error(&e);
        self.end(token, slab);
    }

    /// Ends the flow at `token`.
    fn end(&mut self, token: usize, slab: &mut Slab) {
        if let Some(f) = self.flows.get_mut(token) {
            *f = None;
        }
        if slab.is_live(token) {
            slab.done(token);
        }
    }

    /// Handles one completion.
    fn complete(&mut self, c: Done, slab: &mut Slab, ts: &mut ThreadState) {
        let (token, k, op) = decode(c.user_data);
        if c.user_data == UNCOUNTED {
            return; // the cancel
        }
        let r = match op {
            OP_SEND => self.sent(token, c),
            OP_SLOT => self.sent_datagrams(token, k, c, slab, ts),
            OP_RECV => self.received(token, c, slab, ts),
            _ => Ok(true),
        };
        if let Some(bid) = c.buffer() {
            self.ring.recycle(bid);
        }
        match r {
            Ok(true) => {}
            Ok(false) => self.end(token, slab),
            Err(e) => self.fail(token, e, slab, ts),
        }
    }

    /// A stream send (or a failed rr request) completed: Ok(false) when
    /// the flow is over.
    fn sent(&mut self, token: usize, c: Done) -> io::Result<bool> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(true);
        };
        if c.user_data & UNCOUNTED != 0 {
            // A request (MSG_WAITALL, completion only on failure).
            return Err(errno(c.res));
        }
        f.sends = f.sends.saturating_sub(1);
        if c.res < 0 && !f.stopping {
            return Err(errno(c.res));
        }
        if c.res > 0 {
            f.plan.counters.add_sent(c.res as usize);
        }
        if !f.stopping {
            self.send(token)?;
        } else if f.sends == 0 && !f.receiving {
            self.arm_recv(token)?;
        }
        Ok(true)
    }

    /// A UDP send of slot `k` completed; sends the slot again.
    fn sent_datagrams(
        &mut self,
        token: usize,
        k: usize,
        c: Done,
        slab: &mut Slab,
        ts: &mut ThreadState,
    ) -> io::Result<bool> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(true);
        };
        f.sends = f.sends.saturating_sub(1);
        if c.res >= 0 {
            f.plan.counters.add_sent(c.res as usize);
        } else {
            let e = errno(c.res);
            if !crate::udp::is_transient(&e) {
                return Err(e);
            }
            ts.note(format!("some UDP sends failed ({e}): counted as lost"));
        }
        if !f.stopping {
            self.send_datagrams(token, k, slab, ts)?;
        }
        Ok(true)
    }

    /// A receive completed: Ok(false) at the peer's close.
    fn received(
        &mut self,
        token: usize,
        c: Done,
        slab: &mut Slab,
        ts: &mut ThreadState,
    ) -> io::Result<bool> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(true);
        };
        if !c.more() {
            f.receiving = false;
        }
        if c.res == -libc::ENOBUFS {
            // The provided buffers ran out: the multishot receive ended.
            return self.arm_recv(token).map(|_| true);
        }
        if c.res < 0 {
            return Err(errno(c.res));
        }
        if c.res == 0 {
            return Ok(false);
        }
        let n = c.res as usize;
        let (role, stopping) = (f.plan.role, f.stopping);
        match role {
            UringRole::UdpRecv => {
                if let (Some(bid), Some(flow)) = (c.buffer(), slab.flow_mut(token)) {
                    flow.datagrams(ts, self.ring.provided(bid, n));
                }
            }
            _ => f.plan.counters.add_received(n),
        }
        let rearm = !c.more();
        match role {
            UringRole::RrClient { .. } | UringRole::RrServer { .. } if !stopping || f.left > 0 => {
                self.message_part(token, n, slab, ts)?
            }
            _ if rearm => self.arm_recv(token)?,
            _ => {}
        }
        Ok(true)
    }

    /// `n` more bytes of an rr message arrived: receive the rest, or
    /// finish the transaction and start the next.
    fn message_part(
        &mut self,
        token: usize,
        n: usize,
        slab: &mut Slab,
        ts: &mut ThreadState,
    ) -> io::Result<()> {
        let Some(f) = live(&mut self.flows, token) else {
            return Ok(());
        };
        f.left = f.left.saturating_sub(n as u64);
        if f.left > 0 {
            return self.recv_message(token);
        }
        match f.plan.role {
            UringRole::RrClient { probe, .. } => {
                let now = Instant::now();
                ts.record_until(f.started, now, probe);
                f.plan.counters.add_transaction();
                if f.stopping {
                    // The last answer is in: shut the write side (the
                    // server then closes, its sends all done) and wait.
                    if let Some(flow) = slab.flow_mut(token) {
                        flow.shutdown_write()?;
                    }
                    self.arm_recv(token)
                } else {
                    self.next_request(token)
                }
            }
            UringRole::RrServer { request, response } => {
                let fd = f.plan.fd;
                f.plan.counters.add_sent(response as usize);
                f.plan.counters.add_transaction();
                f.left = request;
                self.ring
                    .send_zeros(fd, response as usize, user_data(token, 0, OP_SEND), true)?;
                self.recv_message(token)
            }
            _ => Ok(()),
        }
    }
}

/// The live io_uring state of the flow at `token`.
fn live(flows: &mut [Option<UFlow>], token: usize) -> Option<&mut UFlow> {
    flows.get_mut(token).and_then(|f| f.as_mut())
}

/// The io::Error of a negative completion result.
fn errno(res: i32) -> io::Error {
    io::Error::from_raw_os_error(-res)
}
