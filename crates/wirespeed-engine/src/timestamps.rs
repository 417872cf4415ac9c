//! `--breakdown`: per-transaction timestamps of an rr flow, on one side.
//!
//! Each side turns on kernel software timestamping of its connection
//! ([`crate::sys_ts`]) and, per transaction, reads the application's send
//! and receive times (CLOCK_REALTIME, the clock of the kernel's software
//! timestamps), the receive timestamp of the message's last segment and
//! the SCHED and SND timestamps of its last byte, tied to it by the byte
//! key of SOF_TIMESTAMPING_OPT_ID. Each side reduces them to four
//! segments on its own clock ([`FlowStamps`]); the client joins both
//! sides' by transaction number ([`crate::breakdown`]). Nothing is added
//! to the data path: the server's samples travel in its report.

use crate::harness::{
    Counters, Moved, Reg, Status, ThreadState, recv_message, send_message, want_for,
};
use crate::sys_ts::{self, TxKind, TxStamp};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Most records a side keeps per flow: beyond, it keeps every other one
/// (a stride both sides derive from the transaction number alone). Only
/// the transactions of the current stride are timestamped at all, so the
/// cost falls as a test runs on.
pub const CAP: usize = 8192;

/// Transactions whose transmit timestamps may still be outstanding.
const MAX_PENDING: usize = 64;

/// One transaction at one side: (number, four segments in ns, in the
/// client's measured window, the client's own monotonic-clock round trip
/// in ns or 0 at the server). The client's segments are send stack,
/// queue, SND-to-receive-timestamp and receive stack; the server's are
/// receive stack, application, send stack and queue.
pub type Rec = (u64, [i64; 4], bool, i64);

/// One flow's timestamp records, as a side reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowStamps {
    /// Roster flow id.
    pub id: u32,
    /// Records kept are those whose number is a multiple of this.
    pub stride: u64,
    /// The records, by transaction number.
    pub recs: Vec<Rec>,
    /// Transactions a timestamp was missing for.
    pub incomplete: u64,
    /// Transactions seen (stamped or not).
    pub transactions: u64,
    /// Nanoseconds spent on timestamp bookkeeping.
    pub cost_ns: u64,
}

impl FlowStamps {
    fn keep(&mut self, r: Rec) {
        if !r.0.is_multiple_of(self.stride) {
            return;
        }
        self.recs.push(r);
        if self.recs.len() > CAP {
            self.stride *= 2;
            let s = self.stride;
            self.recs.retain(|r| r.0.is_multiple_of(s));
        }
    }
}

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
    /// Segments known before sending (server: receive stack, app).
    head: [i64; 2],
    window: bool,
    sched: Option<i64>,
    snd: Option<i64>,
    /// Client: the response's receive timestamp, read time and monotonic
    /// round trip, once read.
    answer: Option<(Option<i64>, i64, i64)>,
}

/// One side's timestamping of one rr connection.
pub struct Stamper {
    fd: RawFd,
    /// Bytes this side sends per message.
    msg: u64,
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
    out: FlowStamps,
}

impl Stamper {
    /// Turns on timestamping of `fd`; `msg` is the size of what this side
    /// sends per transaction.
    pub fn new(fd: RawFd, id: u32, msg: u64) -> io::Result<Stamper> {
        sys_ts::enable(fd)?;
        Ok(Stamper {
            fd,
            msg,
            sent: 0,
            seq: 0,
            pending: VecDeque::new(),
            buf: Vec::new(),
            wrote: 0,
            rx: None,
            read: 0,
            in_write: false,
            out: FlowStamps {
                id,
                stride: 1,
                ..FlowStamps::default()
            },
        })
    }

    /// Whether the current transaction is one of the sample.
    fn sampled(&self) -> bool {
        self.seq.is_multiple_of(self.out.stride)
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
    /// `head` is what the server knew before writing (receive stack,
    /// application); the client passes zeros.
    fn written(&mut self, head: [i64; 2], window: bool) {
        self.in_write = false;
        self.sent += self.msg;
        self.pending.push_back(Pending {
            seq: self.seq,
            key: (self.sent - 1) as u32,
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
    fn collect(&mut self) {
        self.buf.clear();
        if sys_ts::read_tx_stamps(self.fd, &mut self.buf).is_err() {
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
        ts: &mut ThreadState,
        left: &mut u64,
        c: &Counters,
        wait: bool,
        reg: &mut Option<Reg>,
    ) -> io::Result<Option<Status>> {
        if !self.sampled() {
            return recv_message(self.fd, ts, left, c, wait, reg);
        }
        let moved = self.recv_left(ts, left, c, wait)?;
        Ok(match moved {
            Moved::Done => {
                self.read = now_ns();
                None
            }
            Moved::Eof => Some(Status::Done),
            Moved::Blocked => {
                want_for(reg, ts, false)?;
                Some(Status::Active)
            }
        })
    }

    fn recv_left(
        &mut self,
        ts: &mut ThreadState,
        left: &mut u64,
        c: &Counters,
        wait: bool,
    ) -> io::Result<Moved> {
        let discard = ts.spec.skip_rx_copy;
        while *left > 0 {
            let n = (*left as usize).min(ts.rx.len());
            match sys_ts::recv_stamped(self.fd, &mut ts.rx[..n], discard, wait) {
                Ok((0, _)) => return Ok(Moved::Eof),
                Ok((k, stamp)) => {
                    c.add_received(k);
                    *left -= k as u64;
                    if stamp.is_some() {
                        self.rx = stamp;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Moved::Blocked),
                Err(e) => return Err(e),
            }
        }
        Ok(Moved::Done)
    }

    /// Sends the rest of a message, asking for its transmit timestamps
    /// when the transaction is sampled; as
    /// [`crate::harness::send_message`] otherwise.
    pub fn send_message(
        &mut self,
        ts: &ThreadState,
        left: &mut u64,
        c: &Counters,
        wait: bool,
        reg: &mut Option<Reg>,
    ) -> io::Result<Option<Status>> {
        if !self.sampled() {
            return send_message(self.fd, ts, left, c, wait, reg);
        }
        while *left > 0 {
            let n = (*left as usize).min(ts.tx.len());
            match sys_ts::send_stamped(self.fd, &ts.tx[..n], wait) {
                Ok(k) => {
                    c.add_sent(k);
                    *left -= k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    want_for(reg, ts, true)?;
                    return Ok(Some(Status::Active));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Client: the request went out (all of it). The timestamps of an
    /// earlier sampled transaction are read now, while this one's response
    /// is on its way: never inside the sampled transaction itself (unless
    /// every transaction is sampled), so its round trip carries no error
    /// queue reads.
    pub fn request_sent(&mut self, window: bool) {
        let answered = self.pending.iter().any(|p| p.answer.is_some());
        if self.sampled() {
            self.written([0, 0], window);
        } else {
            self.sent += self.msg;
        }
        if answered {
            self.timed(Stamper::collect);
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

    /// Client: turns the answered transactions into records.
    fn settle_client(&mut self) {
        while let Some(p) = self.pending.front().copied() {
            let Some((rx, read, rtt)) = p.answer else {
                break;
            };
            self.pending.pop_front();
            match (p.sched, p.snd, rx) {
                (Some(sc), Some(sn), Some(rx)) => {
                    let segs = [sc - p.wrote, sn - sc, rx - sn, read - rx];
                    self.out.keep((p.seq, segs, p.window, rtt));
                }
                _ => self.out.incomplete += 1,
            }
        }
    }

    fn timed(&mut self, f: fn(&mut Stamper)) {
        let t0 = Instant::now();
        f(self);
        self.out.cost_ns += t0.elapsed().as_nanos() as u64;
    }

    /// Server: the request is all read; the response is written next.
    pub fn request_read(&mut self) {
        self.writing();
    }

    /// Server: the response went out (all of it). The responses of earlier
    /// transactions have their timestamps in by now: read them (outside
    /// the sampled transaction, as at the client).
    pub fn response_sent(&mut self) {
        self.out.transactions += 1;
        match self.rx.take() {
            Some(rx) if self.sampled() => {
                self.written([self.read - rx, self.wrote - self.read], true)
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
        self.timed(Stamper::collect);
        while let Some(p) = self.pending.front().copied() {
            let (Some(sc), Some(sn)) = (p.sched, p.snd) else {
                break;
            };
            self.pending.pop_front();
            self.out.keep((
                p.seq,
                [p.head[0], p.head[1], sc - p.wrote, sn - sc],
                p.window,
                0,
            ));
        }
    }

    /// A stamper for an rr flow when the test asks for a breakdown; when
    /// the kernel refuses timestamping, a note and None.
    pub fn for_flow(
        spec: &crate::spec::TestSpec,
        fd: RawFd,
        id: u32,
        msg: u64,
        notes: &mut Vec<String>,
    ) -> Option<Stamper> {
        if !spec.breakdown {
            return None;
        }
        match Stamper::new(fd, id, msg) {
            Ok(s) => Some(s),
            Err(e) => {
                let n =
                    format!("--breakdown: the kernel refused SO_TIMESTAMPING ({e}); no timestamps");
                if !notes.contains(&n) {
                    notes.push(n);
                }
                None
            }
        }
    }

    /// The records so far.
    pub fn report(&self) -> FlowStamps {
        self.out.clone()
    }
}
