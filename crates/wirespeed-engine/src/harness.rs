//! The shared flow and thread harness, in the way neper does it: each worker
//! thread is one epoll loop owning a set of flows; workloads (stream, rr,
//! crr) are small state machines implementing [`Flow`]. Counters are
//! per-flow atomics written by the owning thread and sampled by the
//! coordinator; latency goes into per-thread HDR histograms.

use crate::proto::UdpFlowCounts;
use crate::result::{IntervalLatency, TcpInfo, finite};
use crate::spec::{IoEngine, TestSpec};
use crate::sys::{self, EV_IN, EV_OUT, Epoll, ZcDrain};
use hdrhistogram::Histogram;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Traffic runs but is not counted yet.
pub const PHASE_WARMUP: u8 = 0;
/// Inside the measured window.
pub const PHASE_MEASURE: u8 = 1;
/// Window over: senders stop, receivers drain to EOF.
pub const PHASE_STOP: u8 = 2;

/// What the coordinator tells its workers.
#[derive(Debug)]
pub struct Control {
    /// One of the PHASE_* values.
    pub phase: AtomicU8,
    /// Quit now without draining (peer gone, error).
    pub abort: AtomicBool,
    /// The window is over and the peer is told to stop: a close from the
    /// peer from now on is the stop's, not a fault (set before PHASE_STOP).
    pub ending: AtomicBool,
    /// How long workers may drain after PHASE_STOP.
    pub drain_timeout: Duration,
    /// Workers still running.
    pub running: AtomicUsize,
}

impl Control {
    /// A control block in the warm-up phase.
    pub fn new(drain_timeout: Duration) -> Arc<Control> {
        Arc::new(Control {
            phase: AtomicU8::new(PHASE_WARMUP),
            abort: AtomicBool::new(false),
            ending: AtomicBool::new(false),
            drain_timeout,
            running: AtomicUsize::new(0),
        })
    }
}

/// Per-flow byte and transaction counters, sampled by the coordinator.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bytes sent.
    pub sent: AtomicU64,
    /// Bytes received.
    pub received: AtomicU64,
    /// Transactions completed.
    pub transactions: AtomicU64,
}

impl Counters {
    /// Adds sent bytes.
    #[inline]
    pub fn add_sent(&self, n: usize) {
        self.sent.fetch_add(n as u64, Ordering::Relaxed);
    }
    /// Adds received bytes.
    #[inline]
    pub fn add_received(&self, n: usize) {
        self.received.fetch_add(n as u64, Ordering::Relaxed);
    }
    /// Counts one transaction.
    #[inline]
    pub fn add_transaction(&self) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
    }
    /// (sent, received, transactions) now.
    pub fn read(&self) -> (u64, u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
            self.transactions.load(Ordering::Relaxed),
        )
    }
}

/// Bits of sub-bucket index per power of two in [`LatencyBuckets`].
const SUB_BITS: u32 = 4;
/// Sub-buckets per power of two: 16, so a bucket spans at most 1/16 of its value.
const SUB: usize = 1 << SUB_BITS;
/// Buckets of [`LatencyBuckets`]: exact below 16 ns, log-linear up to
/// 2^40 ns (about 18 minutes); longer latencies land in the last bucket.
pub const LATENCY_BUCKETS: usize = SUB + (40 - SUB_BITS as usize) * SUB;

/// The bucket of a latency in nanoseconds.
#[inline]
pub fn latency_bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros();
    let sub = (ns >> (e - SUB_BITS)) as usize & (SUB - 1);
    (SUB + (e - SUB_BITS) as usize * SUB + sub).min(LATENCY_BUCKETS - 1)
}

/// The lowest value of bucket `i` and the bucket's width, nanoseconds.
pub fn latency_bucket_range(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, 1);
    }
    let e = ((i - SUB) / SUB) as u32 + SUB_BITS;
    let width = 1u64 << (e - SUB_BITS);
    ((1u64 << e) + ((i - SUB) % SUB) as u64 * width, width)
}

/// A log-linear latency histogram that one worker thread writes and the
/// coordinator reads every interval: per-interval percentiles at the cost
/// of one uncontended counter increment per transaction, without locks.
#[derive(Debug)]
pub struct LatencyBuckets {
    counts: Box<[AtomicU64]>,
}

impl Default for LatencyBuckets {
    fn default() -> Self {
        LatencyBuckets {
            counts: (0..LATENCY_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl LatencyBuckets {
    /// Counts one latency of `ns` nanoseconds. Only the owning worker
    /// writes, so a load and a store suffice (no locked read-modify-write).
    #[inline]
    pub fn record(&self, ns: u64) {
        let c = &self.counts[latency_bucket(ns)];
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Adds the counts so far to `acc` (of [`LATENCY_BUCKETS`] entries).
    pub fn add_to(&self, acc: &mut [u64]) {
        for (a, c) in acc.iter_mut().zip(self.counts.iter()) {
            *a += c.load(Ordering::Relaxed);
        }
    }
}

/// A worker's interval latency histograms: request/response and probe.
#[derive(Debug, Default)]
pub struct ThreadLatency {
    /// rr and crr transactions.
    pub rr: LatencyBuckets,
    /// Probe transactions.
    pub probe: LatencyBuckets,
}

/// Percentiles of bucket counts (the difference of two readings), in
/// microseconds; None when no transaction was counted.
pub fn interval_latency(counts: &[u64]) -> Option<IntervalLatency> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let mid = |i: usize| {
        let (lo, w) = latency_bucket_range(i);
        (lo as f64 + (w as f64 - 1.0) / 2.0) / 1000.0
    };
    let at = |q: f64| {
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, &c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return mid(i);
            }
        }
        0.0
    };
    let max = counts.iter().rposition(|&c| c > 0).map_or(0.0, mid);
    Some(IntervalLatency {
        count: total,
        p50_us: at(0.50),
        p90_us: at(0.90),
        p99_us: at(0.99),
        max_us: max,
    })
}

/// A flow reports Active while it has work, Done when it can be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Still running.
    Active,
    /// Moved a whole call's bytes and can move more at once: the worker
    /// calls [`Flow::on_event`] again with the same events after the
    /// round's other flows had theirs, up to [`ThreadState::turn`] passes
    /// a round, so the flows of a thread take turns call by call.
    Again,
    /// Finished; drop it.
    Done,
}

/// Per-thread state flows use.
pub struct ThreadState<'a> {
    /// The thread's epoll.
    pub epoll: &'a Epoll,
    /// The test's phase and abort flags.
    pub ctl: &'a Control,
    /// The phase the worker loop last acted on.
    pub seen_phase: u8,
    /// The thread owns a single flow: request/response flows then block in
    /// send/recv (as sockperf does) instead of going through epoll.
    pub solo: bool,
    /// The test.
    pub spec: &'a TestSpec,
    /// Zeroed source bytes for sends.
    pub tx: IoBuf,
    /// Sink for receives.
    pub rx: IoBuf,
    /// Inside the measured window.
    pub measuring: bool,
    /// After PHASE_STOP.
    pub stopping: bool,
    /// Transaction latencies, nanoseconds.
    pub hist: Histogram<u64>,
    /// Probe latencies, nanoseconds.
    pub probe: Histogram<u64>,
    /// The same latencies, for the coordinator's interval samples.
    pub lat: Arc<ThreadLatency>,
    /// Zerocopy completions.
    pub zc: ZcDrain,
    /// New flows to add (a crr listener's accepted connections).
    pub spawned: Vec<Box<dyn Flow>>,
    /// Remarks for the report.
    pub notes: Vec<String>,
    /// Flows the thread owns (what a flow's turn is sized by).
    pub flows: usize,
    /// Wake-ups flows asked for: (when, token); see [`ThreadState::wake_at`].
    pub(crate) timers: BinaryHeap<Reverse<(Instant, u64)>>,
}

/// The event bit a flow sees when a wake-up it asked for is due (epoll
/// never reports this bit itself).
pub const EV_TIMER: u32 = 1 << 24;

impl ThreadState<'_> {
    /// Calls the flow registered under `token` with [`EV_TIMER`] at `at`
    /// (to the microsecond, not at the next [`TICK`]). A flow may get a
    /// timer event it no longer wants, and must then just look at the time.
    pub fn wake_at(&mut self, token: u64, at: Instant) {
        self.timers.push(Reverse((at, token)));
    }

    /// When the earliest wake-up flows asked for is due.
    pub fn next_timer(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((at, _))| *at)
    }

    /// How long a worker loop may wait for events: until the earliest
    /// timer, at most [`MAX_WAIT`]; None without a timer (wait
    /// [`MAX_WAIT`] then).
    pub(crate) fn timer_wait(&self) -> Option<Duration> {
        self.next_timer()
            .map(|at| at.saturating_duration_since(Instant::now()).min(MAX_WAIT))
    }

    /// Send or receive calls one flow makes per turn: up to `most` with a
    /// few flows, down to one with thousands, so that a full round over
    /// the thread's flows stays short and every flow moves data early in
    /// a test. (With 5,000 flows per thread at 16 calls of 4 KiB a turn,
    /// one round was 320 MiB: at 2 Gbit/s the last flows waited 2.5 s
    /// for their first turn.)
    #[inline]
    pub fn turn(&self, most: usize) -> usize {
        (ROUND_CALLS / self.flows.max(1)).clamp(1, most)
    }

    /// Whether the test moved to another phase (or aborted) since the
    /// worker loop last looked: a flow looping on its own must return.
    #[inline]
    pub fn phase_changed(&self) -> bool {
        self.ctl.phase.load(Ordering::Relaxed) != self.seen_phase
            || self.ctl.abort.load(Ordering::Relaxed)
    }

    /// Whether the test is stopping or was asked to stop (or aborted),
    /// even before the worker loop looked: a flow looping on its own can
    /// meet the peer's close at stop before the loop sees the stop.
    pub fn stop_asked(&self) -> bool {
        self.stopping
            || self.ctl.phase.load(Ordering::Relaxed) >= PHASE_STOP
            || self.ctl.abort.load(Ordering::Relaxed)
            || self.ctl.ending.load(Ordering::Relaxed)
    }

    /// Notes the error that ended a flow, unless the test's stop caused it.
    pub fn note_flow_error(&mut self, e: &io::Error) {
        if self.stop_asked() {
            return;
        }
        if is_peer_gone(e) {
            self.note("the peer closed a flow before the test ended".to_string());
        } else {
            self.note(format!("flow error: {e}"));
        }
    }

    /// Records `ended - started` if inside the window (one clock read
    /// serves as this transaction's end and the next one's start).
    pub fn record_until(&mut self, started: Instant, ended: Instant, probe: bool) {
        if !self.measuring {
            return;
        }
        let ns = ended
            .saturating_duration_since(started)
            .as_nanos()
            .min(u64::MAX as u128) as u64;
        let (h, b) = if probe {
            (&mut self.probe, &self.lat.probe)
        } else {
            (&mut self.hist, &self.lat.rr)
        };
        h.saturating_record(ns.max(1));
        b.record(ns);
    }

    /// Adds a note once (deduplicated, bounded).
    pub fn note(&mut self, s: String) {
        if self.notes.len() < 8 && !self.notes.contains(&s) {
            self.notes.push(s);
        }
    }
}

/// One flow's epoll registration and its current interest (the flow
/// owns the socket and names it at each change).
#[derive(Debug, Clone, Copy)]
pub struct Reg {
    /// Its token in the thread's slab.
    pub token: u64,
    /// Events asked for now.
    pub interest: u32,
}

impl Reg {
    /// Registers `fd` with `interest`.
    pub fn add(ep: &Epoll, fd: BorrowedFd<'_>, token: u64, interest: u32) -> io::Result<Reg> {
        ep.add(fd, interest, token)?;
        Ok(Reg { token, interest })
    }

    /// Changes the interest of the registered socket `fd` if it differs.
    #[inline]
    pub fn want(&mut self, ep: &Epoll, fd: BorrowedFd<'_>, interest: u32) -> io::Result<()> {
        if interest != self.interest {
            ep.modify(fd, interest, self.token)?;
            self.interest = interest;
        }
        Ok(())
    }
}

/// Where a data buffer starts: a page boundary (see [`IoBuf`]).
const IO_ALIGN: usize = 4096;

/// A zeroed data buffer that starts on a page boundary. The kernel copies
/// to and from user memory far slower when the user address is not
/// cache-line aligned, and glibc hands out large blocks 16 bytes past a
/// page: four bbr flows on one thread moved 13-17 Gbit/s into such a
/// buffer and 25-32 into an aligned one (docs/benchmarks.md, "Fifth
/// follow-up").
pub struct IoBuf {
    mem: Vec<u8>,
    start: usize,
    len: usize,
}

impl IoBuf {
    /// `len` zeroed bytes, page-aligned.
    pub fn new(len: usize) -> IoBuf {
        let mem = vec![0u8; len + IO_ALIGN];
        let start = (IO_ALIGN - mem.as_ptr() as usize % IO_ALIGN) % IO_ALIGN;
        IoBuf { mem, start, len }
    }
}

impl std::ops::Deref for IoBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.mem[self.start..self.start + self.len]
    }
}

impl std::ops::DerefMut for IoBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.mem[self.start..self.start + self.len]
    }
}

/// Send/receive calls one round over a thread's flows aims at, at most.
const ROUND_CALLS: usize = 1024;

/// Passes a round makes, at most, over flows that answered
/// [`Status::Again`] (fewer with many flows: [`ThreadState::turn`]).
pub const PASSES: usize = 16;

/// A workload's per-connection state machine.
pub trait Flow: Send {
    /// Registers with the thread's epoll under `token`.
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()>;
    /// Handles readiness `events`.
    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status>;
    /// The window is over: read TCP_INFO, stop sending, start draining.
    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status>;
    /// What the flow hands back at its end, if it is a roster flow.
    fn report(&self) -> Option<FlowEnd>;
    /// Called every [`TICK`] or so with the time: for deadlines that no
    /// socket event marks (a connection that never sends).
    fn on_tick(&mut self, _ts: &mut ThreadState, _now: Instant) -> io::Result<Status> {
        Ok(Status::Active)
    }
    /// How the io_uring loop ([`crate::uring`]) drives this flow; None
    /// when it cannot (the worker then runs epoll). No side effects.
    fn uring(&self) -> Option<UringPlan> {
        None
    }
    /// io_uring, rr client: the last answer is in; shut the socket's
    /// write side (the server then closes). Only an rr client does.
    fn shutdown_write(&self) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }
    /// io_uring, UDP: a sender writes the headers of as many whole
    /// datagrams as fit in `buf` and returns their bytes; a receiver
    /// takes the datagrams in `buf` (several with GRO) and returns the
    /// bytes it took.
    fn datagrams(&mut self, _ts: &mut ThreadState, _buf: &mut [u8]) -> usize {
        0
    }
}

/// A roster flow's figures that only the flow itself knows, taken when it
/// ends: its id, TCP_INFO (taken at stop), UDP datagram counts.
#[derive(Debug, Clone, Default)]
pub struct FlowEnd {
    /// Roster id.
    pub id: u32,
    /// TCP_INFO at the end of the window.
    pub tcp_info: Option<TcpInfo>,
    /// Datagram counts (UDP workloads).
    pub udp: Option<UdpFlowCounts>,
    /// Per-transaction timestamps (rr with `--breakdown`).
    pub stamps: Option<crate::stamps::FlowStamps>,
    /// Bytes received mapped and copied (stream with `--rx-zerocopy`).
    pub rx_zerocopy: Option<crate::result::RxZeroCopy>,
}

impl FlowEnd {
    /// A TCP flow's end.
    pub fn tcp(id: u32, tcp_info: Option<TcpInfo>) -> Option<FlowEnd> {
        Some(FlowEnd {
            id,
            tcp_info,
            udp: None,
            stamps: None,
            rx_zerocopy: None,
        })
    }
}

/// What moving one message's bytes came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// Every byte moved.
    Done,
    /// The socket would block (or, waiting, timed out) with bytes left.
    Blocked,
    /// The peer closed (receiving only).
    Eof,
}

/// Sends the `left` bytes of a message from the thread's zero buffer,
/// counting them into `c`, until none is left or the socket would block;
/// with `wait` each call blocks up to the socket's send timeout. The one
/// send-with-progress loop of every TCP workload.
pub fn send_left(
    fd: BorrowedFd<'_>,
    ts: &ThreadState,
    left: &mut u64,
    c: &Counters,
    wait: bool,
) -> io::Result<Moved> {
    send_left_with(ts, left, c, |b| sys::send_flags(fd, b, false, wait))
}

/// [`send_left`] with the send call given: `send` writes a prefix of the
/// slice and returns how much (`--breakdown` asks for timestamps there).
pub fn send_left_with(
    ts: &ThreadState,
    left: &mut u64,
    c: &Counters,
    mut send: impl FnMut(&[u8]) -> io::Result<usize>,
) -> io::Result<Moved> {
    while *left > 0 {
        let n = (*left as usize).min(ts.tx.len());
        match send(&ts.tx[..n]) {
            Ok(k) => {
                c.add_sent(k);
                *left -= k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Moved::Blocked),
            Err(e) => return Err(e),
        }
    }
    Ok(Moved::Done)
}

/// Receives the `left` bytes of a message into the thread's sink, counting
/// them into `c`, until none is left, the socket would block or the peer
/// closes. The one receive-with-progress loop of every TCP workload.
pub fn recv_left(
    fd: BorrowedFd<'_>,
    ts: &mut ThreadState,
    left: &mut u64,
    c: &Counters,
    wait: bool,
) -> io::Result<Moved> {
    let discard = ts.spec.skip_rx_copy;
    recv_left_with(ts, left, c, |b| sys::recv_flags(fd, b, discard, wait))
}

/// [`recv_left`] with the receive call given: `recv` fills a prefix of the
/// slice and returns how much, 0 at end of stream (`--breakdown` reads
/// receive timestamps there).
pub fn recv_left_with(
    ts: &mut ThreadState,
    left: &mut u64,
    c: &Counters,
    mut recv: impl FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<Moved> {
    while *left > 0 {
        let n = (*left as usize).min(ts.rx.len());
        match recv(&mut ts.rx[..n]) {
            Ok(0) => return Ok(Moved::Eof),
            Ok(k) => {
                c.add_received(k);
                *left -= k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Moved::Blocked),
            Err(e) => return Err(e),
        }
    }
    Ok(Moved::Done)
}

/// Receives the rest of a message with [`recv_left`]: None once it is all
/// in; otherwise what the flow returns now: Done when the peer closed,
/// Active (waiting for readability) when the socket would block.
pub fn recv_message(
    fd: BorrowedFd<'_>,
    ts: &mut ThreadState,
    left: &mut u64,
    c: &Counters,
    wait: bool,
    reg: &mut Option<Reg>,
) -> io::Result<Option<Status>> {
    let moved = recv_left(fd, ts, left, c, wait)?;
    received_status(moved, fd, ts, reg)
}

/// What a flow returns after receiving part of a message (see
/// [`recv_message`]).
pub fn received_status(
    moved: Moved,
    fd: BorrowedFd<'_>,
    ts: &ThreadState,
    reg: &mut Option<Reg>,
) -> io::Result<Option<Status>> {
    Ok(match moved {
        Moved::Done => None,
        Moved::Eof => Some(Status::Done),
        Moved::Blocked => {
            want_for(reg, fd, ts, false)?;
            Some(Status::Active)
        }
    })
}

/// Sends the rest of a message with [`send_left`]: None once it is all
/// out; Some(Active), waiting for writability, when the socket would block.
pub fn send_message(
    fd: BorrowedFd<'_>,
    ts: &ThreadState,
    left: &mut u64,
    c: &Counters,
    wait: bool,
    reg: &mut Option<Reg>,
) -> io::Result<Option<Status>> {
    let moved = send_left(fd, ts, left, c, wait)?;
    sent_status(moved, fd, ts, reg)
}

/// What a flow returns after sending part of a message (see
/// [`send_message`]).
pub fn sent_status(
    moved: Moved,
    fd: BorrowedFd<'_>,
    ts: &ThreadState,
    reg: &mut Option<Reg>,
) -> io::Result<Option<Status>> {
    Ok(match moved {
        Moved::Blocked => {
            want_for(reg, fd, ts, true)?;
            Some(Status::Active)
        }
        _ => None,
    })
}

/// Reads and drops whatever is queued until the peer closes: Ok(true) at
/// EOF, Ok(false) when nothing more is there yet.
pub fn drain_to_eof(fd: BorrowedFd<'_>, ts: &mut ThreadState) -> io::Result<bool> {
    loop {
        let discard = ts.spec.skip_rx_copy;
        match sys::recv_flags(fd, &mut ts.rx, discard, false) {
            Ok(0) => return Ok(true),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
}

/// Changes the epoll interest of a flow's socket `fd`, if it has a
/// registration.
pub fn want(
    reg: &mut Option<Reg>,
    fd: BorrowedFd<'_>,
    ts: &ThreadState,
    interest: u32,
) -> io::Result<()> {
    match reg.as_mut() {
        Some(r) => r.want(ts.epoll, fd, interest),
        None => Ok(()),
    }
}

/// Waits for the socket to be writable (`Moved::Blocked` on a send) or
/// readable (on a receive).
pub fn want_for(
    reg: &mut Option<Reg>,
    fd: BorrowedFd<'_>,
    ts: &ThreadState,
    sending: bool,
) -> io::Result<()> {
    want(reg, fd, ts, if sending { EV_OUT } else { EV_IN })
}

/// How often a worker calls [`Flow::on_tick`].
pub const TICK: Duration = Duration::from_millis(100);

/// The longest a worker loop waits for events before it looks at the
/// test's phase again.
pub(crate) const MAX_WAIT: Duration = Duration::from_millis(10);

/// What a worker thread hands back.
#[derive(Debug)]
pub struct WorkerOut {
    /// Transaction latencies.
    pub hist: Histogram<u64>,
    /// Probe latencies.
    pub probe: Histogram<u64>,
    /// Zerocopy completions.
    pub zc: ZcDrain,
    /// Thread CPU microseconds inside the window.
    pub cpu_window_us: u64,
    /// Nanoseconds the thread waited for a CPU inside the window (None
    /// where the kernel keeps no count).
    pub wait_window_ns: Option<u64>,
    /// Window length the thread saw, seconds.
    pub window_s: f64,
    /// What each roster flow handed back at its end.
    pub ends: Vec<FlowEnd>,
    /// Flows closed by force at the drain deadline.
    pub forced: usize,
    /// Remarks.
    pub notes: Vec<String>,
    /// The I/O engine the thread ran.
    pub io: IoEngine,
}

impl WorkerOut {
    /// The thread's CPU % of one core over its window.
    pub fn cpu_pct(&self) -> f64 {
        finite(self.cpu_window_us as f64 / 1e6 / self.window_s * 100.0)
    }

    /// The % of its window the thread waited for a CPU, where known.
    pub fn wait_pct(&self) -> Option<f64> {
        let ns = self.wait_window_ns?;
        Some(finite(ns as f64 / 1e9 / self.window_s * 100.0).clamp(0.0, 100.0))
    }
}

/// A new latency histogram (1 ns .. 1 h, 3 significant digits).
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static histogram bounds are valid")
}

/// Largest single send or receive call, bytes.
const MAX_IO: usize = 4 << 20;

/// A worker's flows: a slab indexed by epoll token, its free slots, how
/// many flows are live, and what the finished ones handed back.
pub(crate) struct Slab {
    slots: Vec<Option<Box<dyn Flow>>>,
    free: Vec<usize>,
    pub(crate) active: usize,
    pub(crate) ends: Vec<FlowEnd>,
}

impl Slab {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Slab {
            slots: Vec::with_capacity(n),
            free: Vec::new(),
            active: 0,
            ends: Vec::new(),
        }
    }

    /// Registers `f` with the thread's epoll in a free slot; counts it live.
    pub(crate) fn insert(&mut self, ts: &mut ThreadState, mut f: Box<dyn Flow>) {
        let idx = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        match f.register(ts, idx as u64) {
            Ok(()) => {
                self.slots[idx] = Some(f);
                self.active += 1;
            }
            Err(e) => {
                ts.note(format!("could not register a flow with epoll: {e}"));
                self.free.push(idx);
            }
        }
    }

    /// Puts `f` in a free slot without registering it with epoll (the
    /// io_uring loop drives it); returns its token.
    pub(crate) fn adopt(&mut self, f: Box<dyn Flow>) -> usize {
        let idx = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.slots[idx] = Some(f);
        self.active += 1;
        idx
    }

    /// Whether slot `idx` holds a live flow.
    pub(crate) fn is_live(&self, idx: usize) -> bool {
        self.slots.get(idx).is_some_and(|s| s.is_some())
    }

    /// The live flow at `idx`.
    pub(crate) fn flow_mut(&mut self, idx: usize) -> Option<&mut Box<dyn Flow>> {
        self.slots.get_mut(idx).and_then(|s| s.as_mut())
    }

    /// Ends the live flow in slot `idx`.
    pub(crate) fn done(&mut self, idx: usize) {
        finish(&mut self.slots, &mut self.free, idx, &mut self.ends);
        self.active -= 1;
    }

    /// Hands the flow at `token` its events `bits`; ends it when done.
    fn step(&mut self, ts: &mut ThreadState, token: usize, bits: u32) -> Status {
        let Some(f) = self.slots.get_mut(token).and_then(|s| s.as_mut()) else {
            return Status::Done;
        };
        let st = f.on_event(ts, bits).unwrap_or_else(|e| {
            ts.note_flow_error(&e);
            Status::Done
        });
        if st == Status::Done {
            self.done(token);
        }
        st
    }

    /// Hands each of `events` to its flow; then flows that can move more
    /// take turns, one call each per pass (docs/benchmarks.md, "Fifth
    /// follow-up"). `again` and `pass` are scratch lists kept between calls.
    fn run_events(
        &mut self,
        ts: &mut ThreadState,
        events: &[libc::epoll_event],
        again: &mut Vec<(usize, u32)>,
        pass: &mut Vec<(usize, u32)>,
    ) {
        again.clear();
        for ev in events.iter() {
            let (bits, token) = (ev.events, ev.u64 as usize);
            if self.step(ts, token, bits) == Status::Again {
                again.push((token, bits));
            }
        }
        for _ in 1..ts.turn(PASSES) {
            if again.is_empty() {
                break;
            }
            std::mem::swap(again, pass);
            again.clear();
            for &(token, bits) in pass.iter() {
                if self.step(ts, token, bits) == Status::Again {
                    again.push((token, bits));
                }
            }
        }
    }

    /// What a worker loop does after each wait besides its events: fires
    /// the timers now due and, every [`TICK`], ticks every flow.
    pub(crate) fn after_wait(&mut self, ts: &mut ThreadState, next_tick: &mut Instant) {
        let now = Instant::now();
        self.fire_timers(ts, now);
        if now >= *next_tick {
            *next_tick = now + TICK;
            self.tick_all(ts, now);
        }
    }

    /// Fires the timers due by `now`.
    fn fire_timers(&mut self, ts: &mut ThreadState, now: Instant) {
        while let Some(&Reverse((at, token))) = ts.timers.peek() {
            if at > now {
                break;
            }
            ts.timers.pop();
            self.step(ts, token as usize, EV_TIMER);
        }
    }

    /// Tells every flow the test is stopping; ends those that are done.
    fn stop_all(&mut self, ts: &mut ThreadState) {
        for idx in 0..self.slots.len() {
            let Some(f) = self.slots[idx].as_mut() else {
                continue;
            };
            let st = f.on_stop(ts).unwrap_or(Status::Done);
            if st == Status::Done {
                self.done(idx);
            }
        }
    }

    /// Calls every flow's [`Flow::on_tick`]; ends those that are done.
    fn tick_all(&mut self, ts: &mut ThreadState, now: Instant) {
        for idx in 0..self.slots.len() {
            let Some(f) = self.slots[idx].as_mut() else {
                continue;
            };
            if f.on_tick(ts, now).unwrap_or(Status::Done) == Status::Done {
                self.done(idx);
            }
        }
    }

    /// Takes in the flows spawned this pass (stopped at once when the test
    /// is stopping).
    fn adopt_spawned(&mut self, ts: &mut ThreadState) {
        for f in std::mem::take(&mut ts.spawned) {
            let mut f = f;
            if ts.stopping {
                let _ = f.on_stop(ts);
                continue;
            }
            self.insert(ts, f);
        }
    }

    /// Ends every flow still in the slab.
    pub(crate) fn finish_all(&mut self) {
        for idx in 0..self.slots.len() {
            if self.slots[idx].is_some() {
                finish(&mut self.slots, &mut self.free, idx, &mut self.ends);
            }
        }
    }
}

/// Asks `epoll` to busy poll as `spec` says; a note in `notes` when the
/// kernel cannot.
pub(crate) fn set_busy_poll(epoll: &Epoll, spec: &TestSpec, notes: &mut Vec<String>) {
    if let Some(us) = spec.busy_poll_us {
        // The epoll wait busy polls the NAPI context of its sockets too;
        // budget 8 is the kernel's default (BUSY_POLL_BUDGET).
        if let Err(e) = epoll.set_busy_poll(us, 8, false) {
            let why = match e.raw_os_error() {
                Some(libc::ENOTTY) | Some(libc::EINVAL) => {
                    "this kernel has no EPIOCSPARAMS (Linux 6.9+)".to_string()
                }
                _ => e.to_string(),
            };
            let n =
                format!("busy-poll: the epoll instance does not busy poll ({why}); the sockets do");
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
}

/// What the io_uring loop does with a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UringRole {
    /// Bulk TCP sender: `len`-byte sends.
    StreamSend {
        /// Bytes per send.
        len: usize,
    },
    /// Bulk TCP receiver.
    StreamRecv,
    /// Request/response client.
    RrClient {
        /// Request bytes.
        request: u64,
        /// Response bytes.
        response: u64,
        /// Records into the probe histogram.
        probe: bool,
    },
    /// Request/response server.
    RrServer {
        /// Request bytes.
        request: u64,
        /// Response bytes.
        response: u64,
    },
    /// UDP sender: sends of `len` bytes, whole datagrams of `size`.
    UdpSend {
        /// Bytes per send (several datagrams with GSO).
        len: usize,
    },
    /// UDP receiver.
    UdpRecv,
}

/// A flow as the io_uring loop sees it: its socket, counters and role.
#[derive(Clone)]
pub struct UringPlan {
    /// The flow's socket, by number (io_uring submissions name sockets by
    /// number, so it cannot be a borrow); the flow keeps owning it.
    pub fd: RawFd,
    /// The flow's counters.
    pub counters: Arc<Counters>,
    /// What to do with it.
    pub role: UringRole,
}

/// Bytes of a worker's scratch buffers a UDP flow may use per call.
pub const UDP_SCRATCH: usize = 1 << 20;

/// The size of a worker's send and receive buffers.
pub(crate) fn io_len(spec: &TestSpec) -> usize {
    let scratch = if spec.workload.is_udp() {
        UDP_SCRATCH
    } else {
        0
    };
    (spec.msg_size.max(spec.request_size).max(spec.response_size) as usize)
        .max(scratch)
        .clamp(4096, MAX_IO)
}

/// When the measured window opened, if it has.
pub(crate) type WindowStart = Option<WindowMark>;

/// A worker thread's counters when its measured window opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WindowMark {
    at: Instant,
    cpu_us: u64,
    wait_ns: Option<u64>,
}

impl WindowMark {
    /// The counters now.
    pub(crate) fn now() -> WindowMark {
        WindowMark {
            at: Instant::now(),
            cpu_us: sys::thread_cpu_us(),
            wait_ns: crate::cpu::thread_run_wait_ns(),
        }
    }

    /// Closes the window into `out`: its length, and the thread's CPU
    /// time and run-queue wait inside it.
    pub(crate) fn close(&self, out: &mut WorkerOut) {
        out.window_s = self.at.elapsed().as_secs_f64();
        out.cpu_window_us = sys::thread_cpu_us().saturating_sub(self.cpu_us);
        out.wait_window_ns = self
            .wait_ns
            .zip(crate::cpu::thread_run_wait_ns())
            .map(|(a, b)| b.saturating_sub(a));
    }
}

/// Runs the worker's flows until the test stops, aborts or they all
/// end; returns when its measured window opened.
pub(crate) fn event_loop(
    slab: &mut Slab,
    ts: &mut ThreadState,
    epoll: &Epoll,
    ctl: &Control,
    out: &mut WorkerOut,
) -> WindowStart {
    let mut events: Vec<libc::epoll_event> = Vec::with_capacity(256);
    // Flows that answered Again this pass, as (token, events), and the last pass's.
    let mut again: Vec<(usize, u32)> = Vec::new();
    let mut pass: Vec<(usize, u32)> = Vec::new();
    let mut measure_start: WindowStart = None;
    let mut deadline: Option<Instant> = None;
    let mut next_tick = Instant::now() + TICK;
    loop {
        if !go_on(slab, ts, ctl, out, &mut measure_start, &mut deadline) {
            break;
        }
        let waited = match ts.timer_wait() {
            Some(wait) => epoll.wait_precise(&mut events, wait),
            None => epoll.wait(&mut events, MAX_WAIT.as_millis() as i32),
        };
        if let Err(e) = waited {
            ts.note(format!("epoll_wait failed: {e}"));
            break;
        }
        slab.run_events(ts, &events, &mut again, &mut pass);
        slab.after_wait(ts, &mut next_tick);
        slab.adopt_spawned(ts);
    }
    measure_start
}

/// A worker loop's look at the test each turn: follows the phase
/// ([`follow_phase`]), then says whether to go on: not when the test
/// aborted, every flow ended, or the drain deadline passed (the flows
/// left are then counted as closed by force).
pub(crate) fn go_on(
    slab: &mut Slab,
    ts: &mut ThreadState,
    ctl: &Control,
    out: &mut WorkerOut,
    measure_start: &mut WindowStart,
    deadline: &mut Option<Instant>,
) -> bool {
    let abort = follow_phase(slab, ts, ctl, out, measure_start, deadline);
    if abort || slab.active == 0 {
        return false;
    }
    if let Some(d) = *deadline
        && Instant::now() >= d
    {
        out.forced = slab.active;
        return false;
    }
    true
}

/// Follows the test's phase: opens the measured window, or on stop (or
/// abort) closes it, sets the drain `deadline` and stops the flows.
/// Returns whether the test was aborted.
fn follow_phase(
    slab: &mut Slab,
    ts: &mut ThreadState,
    ctl: &Control,
    out: &mut WorkerOut,
    measure_start: &mut WindowStart,
    deadline: &mut Option<Instant>,
) -> bool {
    let phase = ctl.phase.load(Ordering::Acquire);
    let abort = ctl.abort.load(Ordering::Acquire);
    ts.seen_phase = phase;
    ts.flows = slab.active;
    if phase >= PHASE_MEASURE && measure_start.is_none() && !ts.stopping {
        ts.measuring = true;
        *measure_start = Some(WindowMark::now());
    }
    if (phase >= PHASE_STOP || abort) && !ts.stopping {
        ts.stopping = true;
        ts.measuring = false;
        if let Some(m) = measure_start {
            m.close(out);
        }
        *deadline = Some(Instant::now() + ctl.drain_timeout);
        slab.stop_all(ts);
    }
    abort
}

fn finish(
    slab: &mut [Option<Box<dyn Flow>>],
    free: &mut Vec<usize>,
    idx: usize,
    ends: &mut Vec<FlowEnd>,
) {
    if let Some(f) = slab[idx].take() {
        if let Some(r) = f.report() {
            ends.push(r);
        }
        free.push(idx);
    }
}

/// Whether an error means the peer closed or reset the connection.
pub fn is_peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
    )
}

/// Converts the kernel's TCP_INFO into the report's form.
pub fn tcp_info_of(fd: BorrowedFd<'_>) -> Option<TcpInfo> {
    let i = sys::tcp_info(fd).ok()?;
    Some(TcpInfo {
        retransmits: i.total_retrans as u64,
        rtt_us: i.rtt as u64,
        rttvar_us: i.rttvar as u64,
        min_rtt_us: i.min_rtt as u64,
        cwnd: i.snd_cwnd as u64,
        mss: i.snd_mss as u64,
        pmtu: i.pmtu as u64,
        delivery_rate_bps: i.delivery_rate.saturating_mul(8),
        pacing_rate_bps: i.pacing_rate.saturating_mul(8),
        rwnd_limited_us: i.rwnd_limited,
        sndbuf_limited_us: i.sndbuf_limited,
        dsack_dups: i.dsack_dups as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_tight() {
        let mut prev = (0u64, 0u64);
        for i in 0..LATENCY_BUCKETS {
            let (lo, w) = latency_bucket_range(i);
            if i > 0 {
                assert_eq!(lo, prev.0 + prev.1, "bucket {i}");
            }
            assert_eq!(latency_bucket(lo), i);
            assert_eq!(latency_bucket(lo + w - 1), i);
            assert!(
                w == 1 || (w as f64) <= lo as f64 / 16.0 * 1.0001,
                "bucket {i}"
            );
            prev = (lo, w);
        }
        assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS - 1);
    }

    #[test]
    fn interval_percentiles_are_within_the_bucket_error() {
        let b = LatencyBuckets::default();
        // 1..=1000 us: p50 500 us, p90 900, p99 990, max 1000.
        for us in 1..=1000u64 {
            b.record(us * 1000);
        }
        let mut counts = vec![0; LATENCY_BUCKETS];
        b.add_to(&mut counts);
        let l = interval_latency(&counts).unwrap();
        assert_eq!(l.count, 1000);
        for (got, want) in [
            (l.p50_us, 500.0),
            (l.p90_us, 900.0),
            (l.p99_us, 990.0),
            (l.max_us, 1000.0),
        ] {
            assert!((got / want - 1.0).abs() < 0.035, "{got} vs {want}");
        }
        assert_eq!(interval_latency(&[0; 4]), None);
    }
}
