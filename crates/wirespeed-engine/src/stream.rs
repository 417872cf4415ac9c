//! Bulk TCP: one side sends fixed-size messages as fast as the socket takes
//! them, the other receives (optionally discarding in the kernel with
//! MSG_TRUNC). At stop the sender shuts down its write side and both wait
//! for the other's close, so every byte sent is counted as received.

use crate::error::EngineError;
use crate::harness::{
    Counters, Flow, FlowEnd, Moved, PASSES, Reg, Status, ThreadState, recv_left, tcp_info_of,
};
use crate::result::{RxZeroCopy, TcpInfo};
use crate::rr::go_solo;
use crate::sockets::enable_zerocopy;
use crate::spec::Workload;
use crate::sys::{self, EV_ERR, EV_HUP, EV_IN, EV_OUT};
use crate::uring::{UringPlan, UringRole};
use crate::workload_def::{FlowArgs, WorkloadDef, take_sock};
use socket2::Socket;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;

/// The registry's row: persistent TCP connections, one way per flow.
pub const WORKLOAD: WorkloadDef = WorkloadDef {
    workload: Workload::Stream,
    client: |a| flow(a).map(|f| f as Box<dyn Flow>),
    server: |a| flow(a).map(|f| Some(f as Box<dyn Flow>)),
    listener: None,
};

fn flow(mut a: FlowArgs) -> Result<Box<StreamFlow>, EngineError> {
    let sender = a.sender();
    let s = take_sock(&mut a)?;
    let mut zc = a.spec.zerocopy && sender;
    if zc && let Some(n) = enable_zerocopy(&s) {
        a.notes.push(n);
        zc = false;
    }
    let mut f = StreamFlow::new(a.plan.id, s, a.counters, sender, zc);
    f.send_len = a.spec.msg_size as usize;
    if a.spec.rx_zerocopy && !sender {
        f.rx = Some(RxZc::open(&f.sock, a.spec.msg_size as usize, a.notes));
    }
    if a.spec.sendfile && sender {
        // The file's bytes are the message sendfile sends on every call.
        let data = vec![0x5a; a.spec.msg_size as usize];
        f.file = Some(
            sys::memfd_with(&data).map_err(|e| EngineError::io("create the sendfile source", e))?,
        );
    }
    Ok(Box::new(f))
}

/// The largest message a solo sender sends with blocking calls. Over
/// veth (2026-11-30, 10 alternating rounds of 3 s, bbr): at 128 KiB a
/// blocking sender moved 1.08x the event loop with a thread per flow
/// (-F 4 -T 4, ahead 10 of 10) and 1.03-1.06x with one flow; at 512 KiB
/// it was level with 4 flows and 0.92x with one (ahead 4 of 10).
const SOLO_MAX: usize = 128 * 1024;

/// One bulk-TCP connection, sending or receiving.
pub struct StreamFlow {
    id: u32,
    sock: Socket,
    counters: Arc<Counters>,
    sender: bool,
    zerocopy: bool,
    /// -Z: the in-memory file each send is a sendfile(2) of.
    file: Option<std::fs::File>,
    reg: Option<Reg>,
    shut: bool,
    info: Option<TcpInfo>,
    /// --rx-zerocopy at the receiver.
    rx: Option<RxZc>,
    /// Bytes per send (the message size).
    send_len: usize,
    /// The thread's only flow, on a blocking socket ([`go_solo`]).
    solo: bool,
}

/// A receiver's TCP_ZEROCOPY_RECEIVE state: its mapping (None once it fell
/// back to copying) and what it mapped and copied.
struct RxZc {
    map: Option<sys::RxMap>,
    mapped: u64,
    copied: u64,
    fallback: Option<String>,
}

impl RxZc {
    /// Maps a window of `len` bytes of the socket; on failure the flow
    /// copies, with the reason in the side's notes and the flow's report.
    fn open(sock: &Socket, len: usize, notes: &mut Vec<String>) -> RxZc {
        let mut z = RxZc {
            map: None,
            mapped: 0,
            copied: 0,
            fallback: None,
        };
        match sys::RxMap::new(sock.as_fd(), len) {
            Ok(m) => z.map = Some(m),
            Err(e) => z.fall_back(format!("mmap of the socket failed ({e})"), notes),
        }
        z
    }

    fn fall_back(&mut self, why: String, notes: &mut Vec<String>) {
        let n = format!("rx-zerocopy: {why}; this receiver copies instead");
        if !notes.contains(&n) {
            notes.push(n);
        }
        self.map = None;
        self.fallback = Some(why);
    }
}

impl StreamFlow {
    /// A flow that sends (`sender`) or receives on `sock`.
    pub fn new(
        id: u32,
        sock: Socket,
        counters: Arc<Counters>,
        sender: bool,
        zerocopy: bool,
    ) -> StreamFlow {
        StreamFlow {
            id,
            sock,
            counters,
            sender,
            zerocopy,
            file: None,
            reg: None,
            shut: false,
            info: None,
            rx: None,
            send_len: 0,
            solo: false,
        }
    }

    /// One send: Again when the whole message went (the socket may take
    /// more), Active when the socket is full. A thread's senders thus take
    /// turns call by call ([`Status::Again`]): four bbr flows on one
    /// thread moved a median 30.6 Gbit/s against 20.4 with 16 calls in a
    /// row per flow (docs/benchmarks.md, "Fifth follow-up").
    fn send_some(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        let fd = self.sock.as_fd();
        let (sent, len) = match &self.file {
            Some(f) => {
                let len = ts.spec.msg_size as usize;
                (sys::sendfile(fd, f.as_fd(), len), len)
            }
            None => {
                let len = (ts.spec.msg_size as usize).min(ts.tx.len());
                (sys::send(fd, &ts.tx[..len], self.zerocopy), len)
            }
        };
        match sent {
            Ok(n) => {
                self.counters.add_sent(n);
                if n == len {
                    return Ok(Status::Again);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if self.zerocopy && e.raw_os_error() == Some(libc::ENOBUFS) => {
                // Too many zerocopy sends outstanding (optmem_max):
                // reap completions, then wait for EPOLLERR/OUT.
                self.reap(ts)?;
            }
            Err(e) => return Err(e),
        }
        Ok(Status::Active)
    }

    /// Receives one message (the buffer's length) or what is queued, if
    /// less, with [`recv_left`]: Done at the peer's close. The thread then waits again, so each
    /// ready flow gets one message per wake, as iperf3's reader does: four
    /// bbr flows on one thread moved 1.15x what up to 16 reads in a row per
    /// flow moved, level with a C select reader (docs/benchmarks.md, "The
    /// four-bbr-flow row closed").
    fn recv_some(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        if self.rx.as_ref().is_some_and(|z| z.map.is_some()) {
            return self.recv_mapped(ts);
        }
        let mut left = ts.rx.len() as u64;
        let moved = recv_left(self.sock.as_fd(), ts, &mut left, &self.counters, false)?;
        Ok(if moved == Moved::Eof {
            Status::Done
        } else {
            Status::Active
        })
    }

    /// --rx-zerocopy: maps what the kernel can (whole pages), reads the
    /// rest it names (recv_skip_hint) with copies; Done at the peer's
    /// close. A refusal of the zero-copy call itself falls back to copies.
    fn recv_mapped(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        let fd = self.sock.as_fd();
        let Some(z) = self.rx.as_mut() else {
            return Ok(Status::Active);
        };
        for _ in 0..ts.turn(PASSES) {
            let Some(map) = z.map.as_mut() else {
                break;
            };
            let r = match map.receive(fd) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINVAL | libc::EOPNOTSUPP | libc::ENOPROTOOPT | libc::EFAULT)
                    ) =>
                {
                    z.fall_back(
                        format!("the kernel refused TCP_ZEROCOPY_RECEIVE ({e})"),
                        &mut ts.notes,
                    );
                    break;
                }
                Err(e) => return Err(e),
            };
            if r.mapped > 0 {
                z.mapped += r.mapped as u64;
                self.counters.add_received(r.mapped);
            }
            if r.skip > 0 {
                let want = r.skip.min(ts.rx.len());
                match sys::recv(fd, &mut ts.rx[..want], false) {
                    Ok(0) => return Ok(Status::Done),
                    Ok(n) => {
                        z.copied += n as u64;
                        self.counters.add_received(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
            if r.mapped == 0 && r.skip == 0 {
                // Nothing queued: the peer's close, or wait for more.
                match sys::peek(fd) {
                    Ok(0) => return Ok(Status::Done),
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        if z.map.is_none() {
            return self.recv_some(ts);
        }
        Ok(Status::Active)
    }

    /// A solo sender: blocking sends of whole messages until the phase
    /// changes, as iperf3 3.21's thread per stream and a C sender do (no
    /// epoll_wait between sends). Done when the peer closed first.
    fn send_solo(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        let fd = self.sock.as_fd();
        let len = (ts.spec.msg_size as usize).min(ts.tx.len());
        while !ts.phase_changed() {
            match sys::send_flags(fd, &ts.tx[..len], false, true) {
                Ok(n) => self.counters.add_sent(n),
                // SO_SNDTIMEO passed: look at the phase again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The receiver closed: its FIN is queued (peek reads 0).
                Err(_) if matches!(sys::peek(fd), Ok(0)) => return Ok(Status::Done),
                Err(e) => return Err(e),
            }
        }
        Ok(Status::Active)
    }

    fn reap(&mut self, ts: &mut ThreadState) -> io::Result<()> {
        let d = sys::drain_zerocopy(self.sock.as_fd())?;
        ts.zc.completions += d.completions;
        ts.zc.copied += d.copied;
        Ok(())
    }
}

impl Flow for StreamFlow {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        // A thread's only sender blocks in send (zerocopy and sendfile
        // keep the event loop); receivers keep it too (level either way).
        if ts.solo
            && self.sender
            && self.send_len <= SOLO_MAX
            && !self.zerocopy
            && self.file.is_none()
        {
            go_solo(&self.sock)?;
            self.solo = true;
        }
        let interest = if self.sender { EV_OUT | EV_IN } else { EV_IN };
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_fd(), token, interest)?);
        Ok(())
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        // Draining after stop goes through the event loop, whose deadline
        // closes a flow whose peer never does.
        if self.solo && !self.shut && !ts.stopping && events & EV_OUT != 0 {
            return self.send_solo(ts);
        }
        if self.zerocopy && events & EV_ERR != 0 {
            self.reap(ts)?;
        }
        if events & (EV_IN | EV_HUP) != 0 {
            // A sender sees IN only when the peer closes; drain to learn it.
            if self.recv_some(ts)? == Status::Done {
                return Ok(Status::Done);
            }
        }
        if self.sender && !self.shut && events & EV_OUT != 0 {
            return self.send_some(ts);
        }
        Ok(Status::Active)
    }

    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        self.info = tcp_info_of(self.sock.as_fd());
        if self.sender && !self.shut {
            self.shut = true;
            if self.zerocopy {
                let _ = self.reap(ts);
            }
            self.sock.shutdown(std::net::Shutdown::Write)?;
            if let Some(r) = self.reg.as_mut() {
                r.want(ts.epoll, self.sock.as_fd(), EV_IN)?;
            }
        }
        Ok(Status::Active)
    }

    fn uring(&self) -> Option<UringPlan> {
        if self.zerocopy || self.file.is_some() || self.rx.is_some() {
            return None;
        }
        Some(UringPlan {
            fd: self.sock.as_raw_fd(),
            counters: self.counters.clone(),
            role: if self.sender {
                UringRole::StreamSend { len: self.send_len }
            } else {
                UringRole::StreamRecv
            },
        })
    }

    fn report(&self) -> Option<FlowEnd> {
        let mut end = FlowEnd::tcp(self.id, self.info.clone())?;
        end.rx_zerocopy = self
            .rx
            .as_ref()
            .map(|z| RxZeroCopy::of(z.mapped, z.copied, z.fallback.clone()));
        Some(end)
    }
}
