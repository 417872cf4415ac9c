//! Bulk UDP: the sender sends numbered, timestamped datagrams of the
//! spec's size, as fast as the socket takes them or evenly paced at the
//! target rate; the receiver counts distinct, late and duplicate
//! datagrams and the RFC 3550 jitter. With GSO a send carries up to 64
//! datagrams, each with its own header; with GRO a receive may hold as
//! many, split again by the segment size the kernel reports.

use crate::error::EngineError;
use crate::harness::{Counters, EV_TIMER, Flow, FlowEnd, Reg, Status, ThreadState, want};
use crate::proto::UdpFlowCounts;
use crate::spec::Workload;
use crate::sys::{self, EV_IN, EV_OUT, Received, RecvBatch, SendBatch};
use crate::udp::{
    BATCH, GRO_BYTES, GSO_BYTES, GSO_SEGMENTS, Header, Jitter, Kind, QuietEnd, SeqTrack,
    is_transient, now_ns,
};
use crate::uring::{UringPlan, UringRole};
use crate::workload_def::{FlowArgs, WorkloadDef, take_sock};
use socket2::Socket;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The registry's row: registered UDP sockets, one way per flow.
pub const WORKLOAD: WorkloadDef = WorkloadDef {
    workload: Workload::UdpStream,
    client: |a| flow(a).map(|f| f as Box<dyn Flow>),
    server: |a| flow(a).map(|f| Some(f as Box<dyn Flow>)),
    listener: None,
};

fn flow(mut a: FlowArgs) -> Result<Box<dyn Flow>, EngineError> {
    let sender = a.sender();
    let s = take_sock(&mut a)?;
    let size = a.spec.msg_size as usize;
    Ok(if sender {
        Box::new(UdpSender::new(a.plan.id, s, a.counters, a.spec, a.notes))
    } else {
        Box::new(UdpReceiver::new(
            a.plan.id, s, a.counters, a.spec, size, a.notes,
        ))
    })
}

/// Sends per readiness event before yielding to other flows.
const BUDGET: usize = 8;

/// The most a late paced sender sends at once: what the rate allows in
/// this time (at least 2 datagrams), so a delayed thread catches up in
/// small steps instead of one burst.
const CATCH_UP: Duration = Duration::from_micros(100);

/// A paced sender further behind than this gives the time up (starved
/// for that long, it would otherwise send a long burst).
const GIVE_UP: Duration = Duration::from_millis(10);

/// A sending flow.
pub struct UdpSender {
    id: u32,
    sock: Socket,
    counters: Arc<Counters>,
    size: usize,
    seq: u64,
    /// Datagrams per send: 1 without GSO.
    segs: usize,
    batch: SendBatch,
    /// Paced: ns between datagrams.
    interval_ns: Option<f64>,
    next_at: Instant,
    reg: Option<Reg>,
    token: u64,
    gso_used: bool,
}

impl UdpSender {
    fn new(
        id: u32,
        sock: Socket,
        counters: Arc<Counters>,
        spec: &crate::spec::TestSpec,
        notes: &mut Vec<String>,
    ) -> UdpSender {
        let size = spec.msg_size as usize;
        let mut segs = (GSO_BYTES / size).clamp(1, GSO_SEGMENTS);
        if !spec.udp_gso {
            segs = 1;
        }
        if segs > 1
            && let Err(e) = sys::set_udp_gso(&sock, size as u16)
        {
            push_note(
                notes,
                format!("UDP GSO unavailable ({e}): datagrams are sent one by one"),
            );
            segs = 1;
        }
        let interval_ns = spec
            .rate_bps
            .filter(|&r| r > 0)
            .map(|r| size as f64 * 8.0 * 1e9 / r as f64);
        // Paced, a GSO batch would leave as one burst: send what is due.
        let msgs = if segs > 1 { BATCH / 8 } else { BATCH };
        UdpSender {
            id,
            sock,
            counters,
            size,
            seq: 0,
            segs,
            batch: SendBatch::new(msgs),
            interval_ns,
            next_at: Instant::now(),
            reg: None,
            token: 0,
            gso_used: false,
        }
    }

    /// Datagrams due now (paced), or as many as one call takes.
    fn due(&mut self, now: Instant) -> usize {
        let Some(iv) = self.interval_ns else {
            return self.batch.capacity() * self.segs;
        };
        let cap = self.batch.capacity();
        if now < self.next_at {
            return 0;
        }
        let behind = now.duration_since(self.next_at);
        if behind > GIVE_UP {
            self.next_at = now;
            return 1;
        }
        let burst = (CATCH_UP.as_nanos() as f64 / iv).floor().max(2.0) as usize;
        let due = (behind.as_nanos() as f64 / iv) as usize + 1;
        due.min(burst).min(cap)
    }

    /// Sends `n` datagrams' worth of messages from the thread's scratch
    /// buffer; returns the datagrams that went.
    fn send(&mut self, ts: &mut ThreadState, n: usize) -> io::Result<usize> {
        let size = self.size;
        let per = if self.interval_ns.is_some() {
            // Paced: one datagram per message, never a GSO burst.
            1
        } else {
            self.segs
        };
        let msgs = n.div_ceil(per).min(self.batch.capacity());
        let msg = per * size;
        let bytes = (msgs * msg).min(ts.tx.len()) / msg * msg;
        self.stamp(&mut ts.tx[..bytes]);
        let slices: Vec<&[u8]> = ts.tx[..bytes].chunks(msg).collect();
        let sent = sys::send_batch(self.sock.as_fd(), &mut self.batch, &slices)?;
        let datagrams = slices[..sent].iter().map(|m| m.len() / size).sum::<usize>();
        if per > 1 && sent > 0 {
            self.gso_used = true;
        }
        self.seq += datagrams as u64;
        self.counters.add_sent(datagrams * size);
        Ok(datagrams)
    }

    /// Writes the headers of the whole datagrams in `buf`, numbered from
    /// the next sequence number on; returns how many.
    fn stamp(&self, buf: &mut [u8]) -> usize {
        let now = now_ns();
        let mut n = 0;
        for (i, d) in buf.chunks_exact_mut(self.size).enumerate() {
            Header {
                kind: Kind::Data,
                flow: self.id,
                seq: self.seq + i as u64,
                sent_ns: now,
            }
            .write(d);
            n += 1;
        }
        n
    }

    fn step(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        for _ in 0..BUDGET {
            let now = Instant::now();
            let n = self.due(now);
            if n == 0 {
                ts.wake_at(self.token, self.next_at);
                return want(&mut self.reg, self.sock.as_fd(), ts, 0).map(|_| Status::Active);
            }
            match self.send(ts, n) {
                Ok(k) => {
                    if let Some(iv) = self.interval_ns {
                        self.next_at += Duration::from_nanos((iv * k as f64) as u64);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return want(&mut self.reg, self.sock.as_fd(), ts, EV_OUT)
                        .map(|_| Status::Active);
                }
                Err(e)
                    if self.segs > 1
                        && !self.gso_used
                        && matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIO)) =>
                {
                    // The path cannot take GSO (a datagram beyond the
                    // MTU, no checksum offload): send them one by one.
                    sys::set_udp_gso(&self.sock, 0)?;
                    self.segs = 1;
                    ts.note(format!(
                        "UDP GSO refused by the kernel ({e}): datagrams are sent one by one"
                    ));
                }
                Err(e) if is_transient(&e) => {
                    // These datagrams are lost; count them as sent.
                    self.seq += n as u64;
                    self.counters.add_sent(n * self.size);
                    ts.note(format!("some UDP sends failed ({e}): counted as lost"));
                }
                Err(e) => return Err(e),
            }
        }
        let interest = if self.interval_ns.is_some() {
            ts.wake_at(self.token, self.next_at);
            0
        } else {
            EV_OUT
        };
        want(&mut self.reg, self.sock.as_fd(), ts, interest).map(|_| Status::Active)
    }
}

impl Flow for UdpSender {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        self.token = token;
        if self.interval_ns.is_some() {
            // Timers to the microsecond for even pacing (best effort).
            let _ = sys::set_timer_slack(1000);
            ts.wake_at(token, Instant::now());
        }
        let interest = if self.interval_ns.is_some() {
            0
        } else {
            EV_OUT
        };
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_fd(), token, interest)?);
        Ok(())
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if ts.stopping {
            return Ok(Status::Done);
        }
        if events & (EV_OUT | EV_TIMER) != 0 {
            return self.step(ts);
        }
        Ok(Status::Active)
    }

    fn on_stop(&mut self, _ts: &mut ThreadState) -> io::Result<Status> {
        Ok(Status::Done)
    }

    fn uring(&self) -> Option<UringPlan> {
        self.interval_ns.is_none().then(|| UringPlan {
            fd: self.sock.as_raw_fd(),
            counters: self.counters.clone(),
            role: UringRole::UdpSend {
                len: (self.segs * self.size).min(GSO_BYTES),
            },
        })
    }

    fn datagrams(&mut self, _ts: &mut ThreadState, buf: &mut [u8]) -> usize {
        let n = self.stamp(buf);
        self.seq += n as u64;
        if n > 1 {
            self.gso_used = true;
        }
        n * self.size
    }

    fn report(&self) -> Option<FlowEnd> {
        Some(FlowEnd {
            id: self.id,
            stamps: None,
            rx_zerocopy: None,
            tcp_info: None,
            udp: Some(UdpFlowCounts {
                sent: self.seq,
                gso: self.gso_used,
                ..UdpFlowCounts::default()
            }),
        })
    }
}

/// How long a stopping receiver waits for stragglers after the last
/// datagram (longer when paced slower than that).
const QUIET: Duration = Duration::from_millis(150);

/// A receiving flow.
pub struct UdpReceiver {
    id: u32,
    sock: Socket,
    counters: Arc<Counters>,
    size: usize,
    gro: bool,
    batch: RecvBatch,
    got: Vec<Received>,
    track: SeqTrack,
    jitter: Jitter,
    gro_seen: bool,
    end: QuietEnd,
}

impl UdpReceiver {
    fn new(
        id: u32,
        sock: Socket,
        counters: Arc<Counters>,
        spec: &crate::spec::TestSpec,
        size: usize,
        notes: &mut Vec<String>,
    ) -> UdpReceiver {
        let mut gro = spec.udp_gro;
        if gro && let Err(e) = sys::set_udp_gro(&sock, true) {
            push_note(
                notes,
                format!("UDP GRO unavailable ({e}): datagrams arrive one by one"),
            );
            gro = false;
        }
        let gap = spec
            .rate_bps
            .filter(|&r| r > 0)
            .map(|r| Duration::from_secs_f64(size as f64 * 8.0 / r as f64 * 3.0))
            .unwrap_or_default();
        UdpReceiver {
            id,
            sock,
            counters,
            size,
            gro,
            batch: RecvBatch::new(BATCH),
            got: Vec::with_capacity(BATCH),
            track: SeqTrack::default(),
            jitter: Jitter::default(),
            gro_seen: false,
            end: QuietEnd::new(QUIET.max(gap).min(Duration::from_secs(2))),
        }
    }

    fn take(&mut self, d: &[u8], arrived: u64) {
        let Some(h) = Header::read(d) else {
            return;
        };
        if h.kind != Kind::Data || h.flow != self.id {
            return;
        }
        if self.track.see(h.seq) {
            self.jitter.add(h.sent_ns, arrived);
            self.counters.add_received(d.len());
        }
    }

    fn recv_some(&mut self, ts: &mut ThreadState) -> io::Result<()> {
        let chunk = if self.gro { GRO_BYTES } else { self.size };
        for _ in 0..BUDGET {
            let mut bufs: Vec<&mut [u8]> = ts.rx.chunks_exact_mut(chunk).take(BATCH).collect();
            match sys::recv_batch(self.sock.as_fd(), &mut self.batch, &mut bufs, &mut self.got) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if is_transient(&e) => continue,
                Err(e) => return Err(e),
            }
            drop(bufs);
            let arrived = now_ns();
            self.end.heard();
            let got = std::mem::take(&mut self.got);
            for (i, r) in got.iter().enumerate() {
                let buf = &ts.rx[i * chunk..i * chunk + r.len.min(chunk)];
                match r.segment {
                    Some(seg) if seg < buf.len() => {
                        self.gro_seen = true;
                        for d in buf.chunks(seg) {
                            self.take(d, arrived);
                        }
                    }
                    _ => self.take(buf, arrived),
                }
            }
            let full = got.len() == BATCH;
            self.got = got;
            if !full {
                return Ok(());
            }
        }
        Ok(())
    }
}

impl Flow for UdpReceiver {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        self.end.set_token(token);
        Reg::add(ts.epoll, self.sock.as_fd(), token, EV_IN).map(drop)
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if events & EV_IN != 0 {
            self.recv_some(ts)?;
        }
        Ok(self.end.on_timer(ts, events))
    }

    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        // Whatever is still in flight counts: wait for a quiet spell.
        Ok(self.end.stop(ts))
    }

    fn uring(&self) -> Option<UringPlan> {
        Some(UringPlan {
            fd: self.sock.as_raw_fd(),
            counters: self.counters.clone(),
            role: UringRole::UdpRecv,
        })
    }

    fn datagrams(&mut self, _ts: &mut ThreadState, buf: &mut [u8]) -> usize {
        let arrived = now_ns();
        self.end.heard();
        if buf.len() > self.size {
            self.gro_seen = true;
        }
        for d in buf.chunks(self.size) {
            self.take(d, arrived);
        }
        buf.len()
    }

    fn report(&self) -> Option<FlowEnd> {
        Some(FlowEnd {
            id: self.id,
            stamps: None,
            rx_zerocopy: None,
            tcp_info: None,
            udp: Some(UdpFlowCounts {
                received: self.track.received,
                out_of_order: self.track.out_of_order,
                duplicates: self.track.duplicates,
                jitter_us: self.jitter.us(),
                gro: self.gro_seen,
                ..UdpFlowCounts::default()
            }),
        })
    }
}

/// Adds a note once.
pub(crate) fn push_note(notes: &mut Vec<String>, n: String) {
    if !notes.contains(&n) {
        notes.push(n);
    }
}
