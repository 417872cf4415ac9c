//! `--breakdown`: per-transaction timestamps of an rr flow, on one side.
//!
//! Each side turns on kernel software timestamping of its socket
//! ([`crate::sys_ts`]) and, per transaction, reads the application's send
//! and receive times (CLOCK_REALTIME, the clock of the kernel's software
//! timestamps), the receive timestamp of the message's last segment and
//! the SCHED and SND timestamps of its last byte, tied to it by the key of
//! SOF_TIMESTAMPING_OPT_ID: the byte offset on TCP (rr, crr), the
//! transaction number set per datagram on UDP (udp-rr). crr adds the
//! client's connect (from the start of the connection to its write) and
//! the server's accept (when it returned after the request's receive
//! timestamp). Each side reduces them to five segments on its own clock
//! ([`FlowStamps`]); the client joins both sides' by transaction number
//! ([`crate::breakdown`]). Nothing is added to the data path: the
//! server's samples travel in its report.

use crate::harness::{
    Counters, Moved, Reg, Status, ThreadState, received_status, recv_left_with, recv_message,
    send_left_with, send_message, sent_status,
};
pub use crate::stamps::FlowStamps;
use crate::sys_ts::{self, TxKind, TxStamp};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::os::fd::BorrowedFd;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Transactions whose transmit timestamps may still be outstanding.
const MAX_PENDING: usize = 64;

/// CLOCK_REALTIME now, nanoseconds: the clock of software timestamps.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A message sent and waiting for its transmit timestamps.
#[derive(Debug, Clone, Copy)]
struct Pending {
    seq: u64,
    key: u32,
    /// When the application began writing it.
    wrote: i64,
    /// Segments known before sending (client: connect; server: accept,
    /// receive stack, application).
    head: [i64; 3],
    window: bool,
    sched: Option<i64>,
    snd: Option<i64>,
    /// Client: the response's receive timestamp, read time and monotonic
    /// round trip, once read.
    answer: Option<(Option<i64>, i64, i64)>,
}

/// Receives the rest of a message through the flow's stamper when it has
/// one (it samples some transactions), else plainly: what rr's client
/// and server both do on every receive.
pub(crate) fn recv_via(
    stamps: Option<&mut Stamper>,
    fd: BorrowedFd<'_>,
    ts: &mut ThreadState,
    left: &mut u64,
    c: &Counters,
    wait: bool,
    reg: &mut Option<Reg>,
) -> io::Result<Option<Status>> {
    match stamps {
        Some(b) => b.recv_message(fd, ts, left, c, wait, reg),
        None => recv_message(fd, ts, left, c, wait, reg),
    }
}

/// Sends the rest of a message through the flow's stamper when it has
/// one, else plainly (see [`recv_via`]).
pub(crate) fn send_via(
    stamps: Option<&mut Stamper>,
    fd: BorrowedFd<'_>,
    ts: &ThreadState,
    left: &mut u64,
    c: &Counters,
    wait: bool,
    reg: &mut Option<Reg>,
) -> io::Result<Option<Status>> {
    match stamps {
        Some(b) => b.send_message(fd, ts, left, c, wait, reg),
        None => send_message(fd, ts, left, c, wait, reg),
    }
}

/// One side's timestamping of one flow: an rr connection, a udp-rr
/// socket, or the current connection of a crr flow.
pub struct Stamper {
    /// Bytes this side sends per message.
    msg: u64,
    /// A datagram socket: keys are transaction numbers, set per send.
    datagram: bool,
    /// crr client: when the sampled connection was begun.
    opened: Option<i64>,
    /// crr server: when the sampled connection was accepted.
    accepted: Option<i64>,
    /// The server's end (records are kept once transmitted).
    server: bool,
    /// crr: keeps the kernel's receive stamping on between connections.
    _keeper: Option<socket2::Socket>,
    /// Bytes sent since timestamping began.
    sent: u64,
    seq: u64,
    pending: VecDeque<Pending>,
    buf: Vec<TxStamp>,
    /// Current message: when the application began writing it.
    wrote: i64,
    /// Receive timestamp of the last segment read of the incoming message.
    rx: Option<i64>,
    /// When the application finished reading the incoming message.
    read: i64,
    /// A message is being written (`wrote` is set).
    in_write: bool,
    /// crr: connections stamped, and sampled ones the kernel refused.
    attached: u64,
    refused: u64,
    out: FlowStamps,
}

impl Stamper {
    /// Turns on timestamping of `fd`; `msg` is the size of what this side
    /// sends per transaction; `datagram` for a UDP socket.
    pub fn new(fd: BorrowedFd<'_>, id: u32, msg: u64, datagram: bool) -> io::Result<Stamper> {
        sys_ts::enable(fd, !datagram)?;
        Ok(Stamper::off(id, msg, datagram))
    }

    /// A stamper with timestamping not (yet) enabled on any socket.
    fn off(id: u32, msg: u64, datagram: bool) -> Stamper {
        Stamper {
            msg,
            datagram,
            opened: None,
            accepted: None,
            server: false,
            _keeper: None,
            sent: 0,
            seq: 0,
            pending: VecDeque::new(),
            buf: Vec::new(),
            wrote: 0,
            rx: None,
            read: 0,
            in_write: false,
            attached: 0,
            refused: 0,
            out: FlowStamps {
                id,
                stride: 1,
                ..FlowStamps::default()
            },
        }
    }

    /// A crr client flow's stamper; each sampled connection is attached
    /// with [`Stamper::opening`] and [`Stamper::attach`].
    pub fn for_connections(id: u32, msg: u64) -> Stamper {
        let mut s = Stamper::off(id, msg, false);
        s._keeper = keeper();
        s
    }

    /// Whether the current transaction is one of the sample.
    pub fn sampled(&self) -> bool {
        self.seq.is_multiple_of(self.out.stride)
    }

    /// udp-rr: the current transaction's number (from the datagram's
    /// header at the server), which may skip lost ones.
    pub fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
        // A datagram that could not be sent left its write open.
        self.in_write = false;
    }

    /// crr client: a connection is about to be opened (before its socket
    /// is made: the client's round trip starts there too).
    pub fn opening(&mut self) {
        self.opened = self.sampled().then(now_ns);
    }

    /// crr: the sampled transaction's connection is `fd` (connecting or
    /// just accepted): the stamper uses it from here, timestamping is
    /// turned on for it and its byte keys count from here. Timestamps
    /// still awaited on the previous one are lost with it.
    pub fn attach(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        // The flow passes `fd` to every call from here, stamped or not (a
        // refused connection's transaction goes without stamps).
        self.sent = 0;
        self.out.incomplete += self.pending.len() as u64;
        self.pending.clear();
        sys_ts::enable(fd, true)?;
        self.attached += 1;
        Ok(())
    }

    /// crr client: [`Stamper::attach`] failed with `e`. A connection the
    /// kernel has already closed (reset while connecting, its socket in
    /// CLOSE) refuses OPT_ID with EINVAL: that transaction goes unstamped
    /// and the flow keeps stamping. Returns whether to stop for good: any
    /// other error, or EINVAL on the first 16 connections with none ever
    /// stamped (the kernel refuses them all).
    pub fn refused_once(&mut self, e: &io::Error) -> bool {
        self.refused += 1;
        e.raw_os_error() != Some(libc::EINVAL) || (self.attached == 0 && self.refused >= 16)
    }

    /// The application is about to write a message (again, after a
    /// blocked send: the first call counts).
    pub fn writing(&mut self) {
        if self.sampled() && !self.in_write {
            self.wrote = now_ns();
            self.in_write = true;
        }
    }

    /// The message is all written: queue it for its transmit timestamps.
    /// `head` is what the side knew before writing (client: connect;
    /// server: accept, receive stack, application).
    fn written(&mut self, head: [i64; 3], window: bool) {
        self.in_write = false;
        self.sent += self.msg;
        let key = if self.datagram {
            self.seq as u32
        } else {
            (self.sent - 1) as u32
        };
        self.pending.push_back(Pending {
            seq: self.seq,
            key,
            wrote: self.wrote,
            head,
            window,
            sched: None,
            snd: None,
            answer: None,
        });
        if self.pending.len() > MAX_PENDING {
            self.pending.pop_front();
            self.out.incomplete += 1;
        }
    }

    /// Reads the error queue into the pending messages' timestamps.
    fn collect(&mut self, fd: BorrowedFd<'_>) {
        self.buf.clear();
        if sys_ts::read_tx_stamps(fd, &mut self.buf).is_err() {
            return;
        }
        for s in &self.buf {
            let Some(p) = self.pending.iter_mut().find(|p| p.key == s.key) else {
                continue;
            };
            match s.kind {
                // The last SCHED before the SND: a stacked device (an
                // overlay) stamps SCHED at each queue it passes.
                TxKind::Sched if p.snd.is_none() => p.sched = Some(s.ns),
                TxKind::Snd if p.snd.is_none() => p.snd = Some(s.ns),
                _ => {}
            }
        }
    }

    /// Receives the rest of a message, keeping the receive timestamp of
    /// its last segment; as [`crate::harness::recv_message`] otherwise.
    pub fn recv_message(
        &mut self,
        fd: BorrowedFd<'_>,
        ts: &mut ThreadState,
        left: &mut u64,
        c: &Counters,
        wait: bool,
        reg: &mut Option<Reg>,
    ) -> io::Result<Option<Status>> {
        if !self.sampled() {
            return recv_message(fd, ts, left, c, wait, reg);
        }
        let moved = self.recv_left(fd, ts, left, c, wait)?;
        received_status(moved, fd, ts, reg)
    }

    /// Receives the rest of a sampled message with
    /// [`crate::harness::recv_left_with`], keeping the receive timestamp
    /// of its last segment and, once it is all in, the read time.
    pub fn recv_left(
        &mut self,
        fd: BorrowedFd<'_>,
        ts: &mut ThreadState,
        left: &mut u64,
        c: &Counters,
        wait: bool,
    ) -> io::Result<Moved> {
        let discard = ts.spec.skip_rx_copy;
        let rx = &mut self.rx;
        let moved = recv_left_with(ts, left, c, |b| {
            let (k, stamp) = sys_ts::recv_stamped(fd, b, discard, wait)?;
            if stamp.is_some() {
                *rx = stamp;
            }
            Ok(k)
        })?;
        if moved == Moved::Done {
            self.read = now_ns();
        }
        Ok(moved)
    }

    /// udp-rr: the current transaction's incoming datagram was read, with
    /// this receive timestamp.
    pub fn received(&mut self, stamp: Option<i64>) {
        if self.sampled() {
            self.read = now_ns();
            self.rx = stamp;
        }
    }

    /// Sends the rest of a message, asking for its transmit timestamps
    /// when the transaction is sampled; as
    /// [`crate::harness::send_message`] otherwise.
    pub fn send_message(
        &mut self,
        fd: BorrowedFd<'_>,
        ts: &ThreadState,
        left: &mut u64,
        c: &Counters,
        wait: bool,
        reg: &mut Option<Reg>,
    ) -> io::Result<Option<Status>> {
        if !self.sampled() {
            return send_message(fd, ts, left, c, wait, reg);
        }
        let moved = self.send_left(fd, ts, left, c, wait)?;
        sent_status(moved, fd, ts, reg)
    }

    /// Sends the rest of a sampled message with
    /// [`crate::harness::send_left_with`], each send asking for transmit
    /// timestamps (the one holding the last byte is the one matched).
    pub fn send_left(
        &mut self,
        fd: BorrowedFd<'_>,
        ts: &ThreadState,
        left: &mut u64,
        c: &Counters,
        wait: bool,
    ) -> io::Result<Moved> {
        self.writing();
        send_left_with(ts, left, c, |b| {
            sys_ts::send_stamped(fd, &[IoSlice::new(b)], wait, true, None)
        })
    }

    /// Sends `bufs` once (a datagram, or crr's first write with the
    /// preamble), asking for transmit timestamps when the transaction is
    /// sampled (keyed by its number on a datagram socket).
    pub fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        bufs: &[IoSlice<'_>],
        wait: bool,
    ) -> io::Result<usize> {
        let stamp = self.sampled();
        if stamp {
            self.writing();
        }
        let key = (stamp && self.datagram).then_some(self.seq as u32);
        sys_ts::send_stamped(fd, bufs, wait, stamp, key)
    }

    /// Client: the request went out (all of it). The timestamps of an
    /// earlier sampled transaction are read now, while this one's response
    /// is on its way: never inside the sampled transaction itself (unless
    /// every transaction is sampled), so its round trip carries no error
    /// queue reads.
    pub fn request_sent(&mut self, fd: BorrowedFd<'_>, window: bool) {
        let answered = self.pending.iter().any(|p| p.answer.is_some());
        if self.sampled() {
            let connect = self.opened.take().map_or(0, |o| self.wrote - o);
            self.written([connect, 0, 0], window);
        } else {
            self.sent += self.msg;
        }
        if answered {
            self.timed(fd, Stamper::collect);
            self.settle_client();
        }
    }

    /// Client: the response is all read; the transaction is complete and
    /// took `rtt` by the client's monotonic clock.
    pub fn response_read(&mut self, rtt: std::time::Duration) {
        self.out.transactions += 1;
        if self.sampled() {
            let rx = self.rx.take();
            let (seq, read) = (self.seq, self.read);
            let rtt = rtt.as_nanos().min(i64::MAX as u128) as i64;
            match self.pending.iter_mut().find(|p| p.seq == seq) {
                Some(p) => p.answer = Some((rx, read, rtt)),
                None => self.out.incomplete += 1,
            }
        }
        self.seq += 1;
    }

    /// udp-rr client: the current transaction's answer did not come in
    /// time; its timestamps are given up.
    pub fn lost(&mut self) {
        self.out.transactions += 1;
        if self.sampled() {
            let seq = self.seq;
            let before = self.pending.len();
            self.pending.retain(|p| p.seq != seq);
            self.out.incomplete += (before - self.pending.len()) as u64;
            self.rx = None;
        }
        self.seq += 1;
    }

    /// crr client: the connection is answered and about to close: its
    /// transmit timestamps are in (the response came after them); read
    /// them now, before the close and outside the round trip.
    pub fn connection_done(&mut self, fd: BorrowedFd<'_>) {
        if self.pending.iter().any(|p| p.answer.is_some()) {
            self.timed(fd, Stamper::collect);
            self.settle_client();
        }
    }

    /// The socket has error-queue entries (epoll reported EPOLLERR): read
    /// the transmit timestamps now, as a level-triggered epoll would wake
    /// the thread for them again and again. Only a thread that waits in
    /// epoll gets here (crr, or more flows than threads); the read falls
    /// inside the sampled transaction, while it waits for the answer.
    pub fn on_error_event(&mut self, fd: BorrowedFd<'_>, events: u32) {
        if events & crate::sys::EV_ERR == 0 {
            return;
        }
        self.timed(fd, Stamper::collect);
        if self.server {
            self.settle_server(fd);
        }
    }

    /// Client: turns the answered transactions into records.
    fn settle_client(&mut self) {
        while let Some(p) = self.pending.front().copied() {
            let Some((rx, read, rtt)) = p.answer else {
                break;
            };
            self.pending.pop_front();
            match (p.sched, p.snd, rx) {
                (Some(sc), Some(sn), Some(rx)) => {
                    let segs = [p.head[0], sc - p.wrote, sn - sc, rx - sn, read - rx];
                    self.out.keep((p.seq, segs, p.window, rtt));
                }
                _ => self.out.incomplete += 1,
            }
        }
    }

    fn timed(&mut self, fd: BorrowedFd<'_>, f: fn(&mut Stamper, BorrowedFd<'_>)) {
        let t0 = Instant::now();
        f(self, fd);
        self.out.cost_ns += t0.elapsed().as_nanos() as u64;
    }

    /// Server: the request is all read; the response is written next.
    pub fn request_read(&mut self) {
        self.server = true;
        self.writing();
    }

    /// crr server: the sampled connection was accepted at `at`
    /// (CLOCK_REALTIME ns).
    pub fn accepted(&mut self, at: i64) {
        self.accepted = Some(at);
    }

    /// Server: the response went out (all of it). The responses of earlier
    /// transactions have their timestamps in by now: read them (outside
    /// the sampled transaction, as at the client).
    pub fn response_sent(&mut self, fd: BorrowedFd<'_>) {
        self.out.transactions += 1;
        match self.rx.take() {
            Some(rx) if self.sampled() => {
                // crr: an accept that returned after the request was
                // stamped held it up; the receive stack starts after it.
                let from = self.accepted.take().map_or(rx, |a| a.max(rx));
                self.written([from - rx, self.read - from, self.wrote - self.read], true)
            }
            rx => {
                self.out.incomplete += u64::from(self.sampled() && rx.is_none());
                self.sent += self.msg;
                self.in_write = false;
            }
        }
        self.seq += 1;
        if self.pending.front().is_none_or(|p| p.seq + 1 >= self.seq) {
            return;
        }
        self.settle_server(fd);
    }

    /// Server: reads the error queue and turns the transactions with both
    /// transmit timestamps into records.
    fn settle_server(&mut self, fd: BorrowedFd<'_>) {
        self.timed(fd, Stamper::collect);
        while let Some(p) = self.pending.front().copied() {
            let (Some(sc), Some(sn)) = (p.sched, p.snd) else {
                break;
            };
            self.pending.pop_front();
            self.out.keep((
                p.seq,
                [p.head[0], p.head[1], p.head[2], sc - p.wrote, sn - sc],
                p.window,
                0,
            ));
        }
    }

    /// A stamper for an rr or udp-rr flow when the test asks for a
    /// breakdown; when the kernel refuses timestamping, a note and None.
    pub fn for_flow(
        spec: &crate::spec::TestSpec,
        fd: BorrowedFd<'_>,
        id: u32,
        msg: u64,
        datagram: bool,
        notes: &mut Vec<String>,
    ) -> Option<Stamper> {
        if !spec.breakdown {
            return None;
        }
        match Stamper::new(fd, id, msg, datagram) {
            Ok(s) => Some(s),
            Err(e) => {
                refused(&e, notes);
                None
            }
        }
    }

    /// The records so far.
    pub fn report(&self) -> FlowStamps {
        self.out.clone()
    }
}

/// A UDP socket with receive timestamping on, kept open for a crr test's
/// life. The kernel stamps received packets only while some socket asks
/// for it, and turns that on and off in deferred work; crr's short-lived
/// connections alone would flip it with every connection, and the first
/// packets of a new one would come without their receive timestamps.
fn keeper() -> Option<socket2::Socket> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).ok()?;
    sys_ts::enable(std::os::fd::AsFd::as_fd(&s), false).ok()?;
    Some(s)
}

/// Notes once that the kernel refused timestamping.
pub fn refused(e: &io::Error, notes: &mut Vec<String>) {
    let n = format!("--breakdown: the kernel refused SO_TIMESTAMPING ({e}); no timestamps");
    if !notes.contains(&n) {
        notes.push(n);
    }
}

/// The server's records of crr flows, shared by its workers: a flow's
/// connections come one after another, but any worker may accept one.
/// Transaction numbers count the flow's connections in the order their
/// preambles are read, as the client counts its connections.
pub struct SharedStamps {
    flows: Vec<Mutex<FlowStamps>>,
    /// Keeps the kernel's receive stamping on between connections.
    _keeper: Option<socket2::Socket>,
}

impl SharedStamps {
    /// Empty records for `flows` roster flows.
    pub fn new(flows: usize) -> SharedStamps {
        SharedStamps {
            flows: (0..flows as u32)
                .map(|id| {
                    Mutex::new(FlowStamps {
                        id,
                        stride: 1,
                        ..FlowStamps::default()
                    })
                })
                .collect(),
            _keeper: keeper(),
        }
    }

    /// A connection of flow `id` has sent its preamble: a stamper for it
    /// when its transaction is sampled (timestamping turned on for `fd`).
    pub fn connection(&self, id: u32, fd: BorrowedFd<'_>, msg: u64) -> io::Result<Option<Stamper>> {
        let Some(m) = self.flows.get(id as usize) else {
            return Ok(None);
        };
        let mut f = m.lock().unwrap_or_else(|p| p.into_inner());
        let seq = f.transactions;
        f.transactions += 1;
        if !seq.is_multiple_of(f.stride) {
            return Ok(None);
        }
        let mut s = Stamper::new(fd, id, msg, false)?;
        s.seq = seq;
        s.out.stride = f.stride;
        Ok(Some(s))
    }

    /// The connection (socket `fd`) is closed: its timestamps are all in;
    /// its record joins the flow's.
    pub fn done(&self, mut s: Stamper, fd: BorrowedFd<'_>) {
        s.settle_server(fd);
        let Some(m) = self.flows.get(s.out.id as usize) else {
            return;
        };
        let mut f = m.lock().unwrap_or_else(|p| p.into_inner());
        f.incomplete += s.out.incomplete + s.pending.len() as u64;
        f.cost_ns += s.out.cost_ns;
        for r in s.out.recs {
            f.keep(r);
        }
    }

    /// The flows' records, for the server's report.
    pub fn report(&self) -> Vec<FlowStamps> {
        self.flows
            .iter()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .filter(|f| f.transactions > 0)
            .collect()
    }
}
