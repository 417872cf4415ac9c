//! Connect, request, response, close. Each client slot opens a connection,
//! sends its data preamble with the request, reads the response and closes
//! with an RST (SO_LINGER 0, so neither side piles up TIME_WAIT), then
//! starts over. A thread's only slot makes its connections with blocking
//! calls (connect, send, receive), as a bare C loop does, and goes back
//! to epoll when the test's phase changes or a call times out. The server
//! accepts on the test's data listener in every worker, checks the
//! preamble and answers.

use crate::error::EngineError;
use crate::harness::{
    Counters, Flow, FlowEnd, Moved, Reg, Status, ThreadState, drain_to_eof, recv_left, send_left,
    want_for,
};
use crate::proto::{DATA_PREAMBLE_LEN, data_preamble, parse_data_preamble};
use crate::rr::solo_timeouts;
use crate::sockets::{ResolvedPath, data_socket};
use crate::spec::Workload;
use crate::sys::{self, EV_IN, EV_OUT};
use crate::timestamps::{SharedStamps, Stamper, now_ns, refused};
use crate::workload_def::{FlowArgs, ListenerArgs, WorkloadDef};
use socket2::{SockAddr, Socket};
use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The registry's row: the client opens its own connections during the
/// test; the server answers them from the test's data listener, kept open.
pub const WORKLOAD: WorkloadDef = WorkloadDef {
    workload: Workload::Crr,
    client: client_flow,
    server: |_| Ok(None),
    listener: Some(listener_flow),
};

fn client_flow(a: FlowArgs) -> Result<Box<dyn Flow>, EngineError> {
    let path = a.path.cloned().ok_or_else(|| {
        EngineError::Spec(format!(
            "flow {} names path {} that does not exist",
            a.plan.id, a.plan.path
        ))
    })?;
    let mut f = CrrClient::new(a.plan.id, path, &a.token, a.counters);
    if a.spec.breakdown {
        let msg = DATA_PREAMBLE_LEN as u64 + a.spec.request_size as u64;
        f.stamps = Some(Stamper::for_connections(a.plan.id, msg));
    }
    Ok(Box::new(f))
}

fn listener_flow(a: ListenerArgs) -> Box<dyn Flow> {
    let mut l = CrrListener::new(a.listener, a.token, a.counters, a.preamble_timeout);
    l.stamps = a.stamps;
    Box::new(l)
}

/// One client slot: a chain of short connections.
pub struct CrrClient {
    id: u32,
    path: ResolvedPath,
    head: [u8; DATA_PREAMBLE_LEN],
    counters: Arc<Counters>,
    sock: Option<Socket>,
    reg: Option<Reg>,
    token: u64,
    connecting: bool,
    sent: u64,
    left: u64,
    started: Instant,
    /// The request is all out on the current connection.
    asked: bool,
    /// `--breakdown`: the flow's timestamps, one sampled connection at a
    /// time.
    stamps: Option<Stamper>,
    /// The thread's only flow (and no `--breakdown`): connections are
    /// made and answered with blocking calls ([`CrrClient::solo_rounds`]).
    solo: bool,
}

/// Where the current connection's transaction stands.
#[derive(PartialEq)]
enum Progress {
    /// A call would block (or, blocking, timed out).
    Blocked,
    /// The whole response is in.
    Answered,
}

impl CrrClient {
    /// A slot for roster flow `id` on `path`.
    pub fn new(
        id: u32,
        path: ResolvedPath,
        token: &[u8; 16],
        counters: Arc<Counters>,
    ) -> CrrClient {
        CrrClient {
            id,
            path,
            head: data_preamble(token, id),
            counters,
            sock: None,
            reg: None,
            token: 0,
            connecting: false,
            sent: 0,
            left: 0,
            started: Instant::now(),
            asked: false,
            stamps: None,
            solo: false,
        }
    }

    fn open(&mut self, ts: &mut ThreadState) -> io::Result<()> {
        self.started = Instant::now();
        if let Some(b) = self.stamps.as_mut() {
            b.opening();
        }
        let sock = data_socket(&self.path, ts.spec, None).map_err(io::Error::other)?;
        sock.set_nonblocking(true)?;
        self.connect(&sock)?;
        if let Some(b) = self.stamps.as_mut().filter(|b| b.sampled())
            && let Err(e) = b.attach(sock.as_fd())
            && b.refused_once(&e)
        {
            refused(&e, &mut ts.notes);
            self.stamps = None;
        }
        self.reg = Some(Reg::add(ts.epoll, sock.as_fd(), self.token, EV_OUT)?);
        self.hold(sock, ts, true);
        Ok(())
    }

    /// Makes `sock` the current connection, nothing of it sent yet.
    fn hold(&mut self, sock: Socket, ts: &ThreadState, connecting: bool) {
        self.sock = Some(sock);
        self.connecting = connecting;
        self.asked = false;
        self.sent = 0;
        self.left = ts.spec.response_size as u64;
    }

    /// Opens the next connection with a blocking connect (SO_SNDTIMEO
    /// bounds it): true when it is up, false when it is still on its way.
    fn open_blocking(&mut self, ts: &mut ThreadState) -> io::Result<bool> {
        self.started = Instant::now();
        let sock = data_socket(&self.path, ts.spec, None).map_err(io::Error::other)?;
        solo_timeouts(&sock)?;
        let up = self.connect(&sock)?;
        self.hold(sock, ts, !up);
        Ok(up)
    }

    /// Connects `sock` to the path's server: true when the connection is
    /// up, false while it is still on its way (EINPROGRESS).
    fn connect(&self, sock: &Socket) -> io::Result<bool> {
        match sock.connect(&SockAddr::from(self.path.remote)) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// A thread's only flow: transactions with blocking calls, one
    /// connection each, as crr.c makes them (no epoll wait for the connect
    /// or the answer), until the test's phase changes or a call times out.
    /// Then the connection in hand goes on in epoll.
    fn solo_rounds(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        while !ts.phase_changed() {
            if self.open_blocking(ts)? && self.transact(ts)? == Progress::Answered {
                self.answered(ts);
                continue;
            }
            let Some(sock) = self.sock.as_ref() else {
                break;
            };
            sock.set_nonblocking(true)?;
            self.reg = Some(Reg::add(ts.epoll, sock.as_fd(), self.token, EV_OUT)?);
            return Ok(Status::Active);
        }
        self.open(ts)?;
        Ok(Status::Active)
    }

    fn close(&mut self) {
        if let Some(s) = self.sock.take() {
            // RST instead of FIN: no TIME_WAIT on either side.
            let _ = s.set_linger(Some(Duration::ZERO));
        }
        self.reg = None;
    }

    fn step(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        if self.transact(ts)? == Progress::Blocked {
            return Ok(Status::Active);
        }
        self.answered(ts);
        if ts.stopping {
            return Ok(Status::Done);
        }
        if self.solo {
            return self.solo_rounds(ts);
        }
        self.open(ts)?;
        Ok(Status::Active)
    }

    /// Moves the current connection's transaction on: the connect's
    /// result, the preamble and request, the response. Its calls block
    /// (up to the socket's timeouts) when the connection is outside epoll.
    fn transact(&mut self, ts: &mut ThreadState) -> io::Result<Progress> {
        let Some(sock) = self.sock.as_ref() else {
            return Ok(Progress::Blocked);
        };
        let fd = sock.as_fd();
        let wait = self.reg.is_none();
        if self.connecting {
            if let Some(e) = sock.take_error()? {
                return Err(e);
            }
            self.connecting = false;
        }
        let total = DATA_PREAMBLE_LEN as u64 + ts.spec.request_size as u64;
        while self.sent < total {
            if self.sent < DATA_PREAMBLE_LEN as u64 {
                let rest = ((total - DATA_PREAMBLE_LEN as u64) as usize).min(ts.tx.len());
                let bufs = [
                    IoSlice::new(&self.head[self.sent as usize..]),
                    IoSlice::new(&ts.tx[..rest]),
                ];
                let sent = match self.stamps.as_mut().filter(|b| b.sampled()) {
                    Some(b) => b.send(fd, &bufs, false),
                    None => sock.send_vectored(&bufs),
                };
                let n = match sent {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                    Err(e) => return Err(e),
                };
                if n == 0 {
                    want_for(&mut self.reg, fd, ts, true)?;
                    return Ok(Progress::Blocked);
                }
                self.sent += n as u64;
                self.counters.add_sent(n);
            } else {
                let mut left = total - self.sent;
                let r = match self.stamps.as_mut().filter(|b| b.sampled()) {
                    Some(b) => b.send_left(fd, ts, &mut left, &self.counters, false)?,
                    None => send_left(fd, ts, &mut left, &self.counters, wait)?,
                };
                self.sent = total - left;
                if r == Moved::Blocked {
                    want_for(&mut self.reg, fd, ts, true)?;
                    return Ok(Progress::Blocked);
                }
            }
        }
        if !self.asked {
            self.asked = true;
            if let Some(b) = self.stamps.as_mut() {
                b.request_sent(fd, ts.measuring);
            }
        }
        want_for(&mut self.reg, fd, ts, false)?;
        let got = match self.stamps.as_mut().filter(|b| b.sampled()) {
            Some(b) => b.recv_left(fd, ts, &mut self.left, &self.counters, false)?,
            None => recv_left(fd, ts, &mut self.left, &self.counters, wait)?,
        };
        match got {
            Moved::Eof => Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "server closed before answering",
            )),
            Moved::Blocked => Ok(Progress::Blocked),
            Moved::Done => Ok(Progress::Answered),
        }
    }

    /// The response is in: counts the transaction and closes.
    fn answered(&mut self, ts: &mut ThreadState) {
        let now = Instant::now();
        ts.record_until(self.started, now, false);
        self.counters.add_transaction();
        if let Some(b) = self.stamps.as_mut() {
            b.response_read(now.saturating_duration_since(self.started));
            if let Some(s) = self.sock.as_ref() {
                b.connection_done(s.as_fd());
            }
        }
        self.close();
    }
}

impl Flow for CrrClient {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        self.token = token;
        self.solo = ts.solo && self.stamps.is_none();
        self.open(ts)
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if let (Some(b), Some(s)) = (self.stamps.as_mut(), self.sock.as_ref()) {
            b.on_error_event(s.as_fd(), events);
        }
        match self.step(ts) {
            Ok(s) => Ok(s),
            Err(e) => {
                self.close();
                Err(e)
            }
        }
    }

    fn on_stop(&mut self, _ts: &mut ThreadState) -> io::Result<Status> {
        self.close();
        Ok(Status::Done)
    }

    fn report(&self) -> Option<FlowEnd> {
        let mut end = FlowEnd::tcp(self.id, None)?;
        end.stamps = self.stamps.as_ref().map(Stamper::report);
        Some(end)
    }
}

/// The test's data listener inside one server worker.
pub struct CrrListener {
    listener: Arc<Socket>,
    token: [u8; 16],
    counters: Arc<Vec<Arc<Counters>>>,
    preamble_timeout: Duration,
    epoll_token: u64,
    /// Out of descriptors: off the epoll set until then, so the worker
    /// does not spin on a listener it cannot accept from.
    paused_until: Option<Instant>,
    /// `--breakdown`: the server's records, shared by the workers.
    stamps: Option<Arc<SharedStamps>>,
}

impl CrrListener {
    /// Accepts on `listener` for the test with `token`; counts into
    /// `counters[flow id]`; drops connections whose preamble is not in
    /// within `preamble_timeout`.
    pub fn new(
        listener: Arc<Socket>,
        token: [u8; 16],
        counters: Arc<Vec<Arc<Counters>>>,
        preamble_timeout: Duration,
    ) -> CrrListener {
        CrrListener {
            listener,
            token,
            counters,
            preamble_timeout,
            epoll_token: 0,
            paused_until: None,
            stamps: None,
        }
    }

    fn listen(&self, ts: &ThreadState) -> io::Result<()> {
        // EPOLLEXCLUSIVE: wake one worker per connection, not all of them.
        ts.epoll.add(
            self.listener.as_fd(),
            EV_IN | libc::EPOLLEXCLUSIVE as u32,
            self.epoll_token,
        )
    }
}

/// How long a crr listener rests after running out of descriptors.
const FD_BACKOFF: Duration = Duration::from_millis(50);

impl Flow for CrrListener {
    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        self.epoll_token = token;
        self.listen(ts)
    }

    fn on_event(&mut self, ts: &mut ThreadState, _events: u32) -> io::Result<Status> {
        // One flow opens one connection at a time: a second accept would
        // only say EAGAIN (a system call per transaction, 1 of the server's
        // 5). Several flows may have several waiting: take up to 64.
        let tries = if ts.spec.flows <= 1 { 1 } else { 64 };
        for _ in 0..tries {
            match sys::accept_nonblocking(self.listener.as_fd()) {
                Ok(s) => {
                    let accepted = self.stamps.as_ref().map(|_| now_ns());
                    let mut conn = CrrConn {
                        sock: Socket::from(s),
                        token: self.token,
                        counters: self.counters.clone(),
                        flow: None,
                        head: [0; DATA_PREAMBLE_LEN],
                        got: 0,
                        sent: 0,
                        reg: None,
                        preamble_by: Instant::now() + self.preamble_timeout,
                        shared: self.stamps.clone(),
                        accepted,
                        stamper: None,
                    };
                    // The client sends its request right after connecting,
                    // so it is usually in by the time this thread woke and
                    // accepted: answer it now, without an epoll round. Its
                    // outcome is handled as the worker handles any event's.
                    match conn.on_event(ts, EV_IN) {
                        Ok(Status::Done) => {}
                        Ok(_) => ts.spawned.push(Box::new(conn)),
                        Err(e) => ts.note_flow_error(&e),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e)
                    if e.raw_os_error() == Some(libc::EMFILE)
                        || e.raw_os_error() == Some(libc::ENFILE) =>
                {
                    ts.note("out of file descriptors while accepting crr connections".into());
                    if ts.epoll.delete(self.listener.as_fd()).is_ok() {
                        self.paused_until = Some(Instant::now() + FD_BACKOFF);
                    }
                    break;
                }
                Err(_) => break,
            }
        }
        Ok(Status::Active)
    }

    fn on_tick(&mut self, ts: &mut ThreadState, now: Instant) -> io::Result<Status> {
        if self.paused_until.is_some_and(|t| now >= t) && !ts.stopping {
            self.paused_until = None;
            self.listen(ts)?;
        }
        Ok(Status::Active)
    }

    fn on_stop(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        if self.paused_until.is_none() {
            let _ = ts.epoll.delete(self.listener.as_fd());
        }
        Ok(Status::Done)
    }

    fn report(&self) -> Option<FlowEnd> {
        None
    }
}

/// One accepted crr connection at the server.
struct CrrConn {
    sock: Socket,
    token: [u8; 16],
    counters: Arc<Vec<Arc<Counters>>>,
    flow: Option<Arc<Counters>>,
    head: [u8; DATA_PREAMBLE_LEN],
    got: u64,
    sent: u64,
    reg: Option<Reg>,
    /// When it is dropped if its preamble is not all in.
    preamble_by: Instant,
    /// `--breakdown`: the server's records, when the test has them.
    shared: Option<Arc<SharedStamps>>,
    /// When accept() returned (CLOCK_REALTIME ns), with `--breakdown`.
    accepted: Option<i64>,
    /// This connection's timestamps, when its transaction is sampled.
    stamper: Option<Stamper>,
}

impl Flow for CrrConn {
    fn on_tick(&mut self, _ts: &mut ThreadState, now: Instant) -> io::Result<Status> {
        if self.flow.is_none() && now >= self.preamble_by {
            return Ok(Status::Done);
        }
        Ok(Status::Active)
    }

    fn on_event(&mut self, ts: &mut ThreadState, events: u32) -> io::Result<Status> {
        if let Some(b) = self.stamper.as_mut() {
            b.on_error_event(self.sock.as_fd(), events);
        }
        let r = match self.step(ts) {
            // The client closes with an RST once answered.
            Err(e) if crate::harness::is_peer_gone(&e) => Ok(Status::Done),
            r => r,
        };
        if !matches!(r, Ok(Status::Active)) {
            // Closed: the response's transmit timestamps are all in.
            if let (Some(sh), Some(st)) = (&self.shared, self.stamper.take()) {
                sh.done(st, self.sock.as_fd());
            }
        }
        r
    }

    fn register(&mut self, ts: &mut ThreadState, token: u64) -> io::Result<()> {
        // A response the first try (at accept) left half sent waits to
        // write; anything else waits to read.
        let sending = self.sent > 0 && self.sent < ts.spec.response_size as u64;
        let interest = if sending { EV_OUT } else { EV_IN };
        self.reg = Some(Reg::add(ts.epoll, self.sock.as_fd(), token, interest)?);
        Ok(())
    }

    fn on_stop(&mut self, _ts: &mut ThreadState) -> io::Result<Status> {
        Ok(Status::Done)
    }

    fn report(&self) -> Option<FlowEnd> {
        None
    }
}

impl CrrConn {
    /// The preamble named flow `id`: when this connection's transaction is
    /// sampled, timestamping is turned on for it.
    fn sampled(&mut self, ts: &mut ThreadState, id: u32, resp: u64) {
        let Some(sh) = &self.shared else { return };
        match sh.connection(id, self.sock.as_fd(), resp) {
            Ok(Some(mut b)) => {
                if let Some(at) = self.accepted {
                    b.accepted(at);
                }
                self.stamper = Some(b);
            }
            Ok(None) => {}
            Err(e) => refused(&e, &mut ts.notes),
        }
    }

    /// Receives the rest of the preamble and, in the same call, as much
    /// of the request as fits (apart with `--breakdown`, whose stamper
    /// reads the request). Ok(0) at the peer's close.
    fn recv_head(&mut self, ts: &mut ThreadState, req: u64) -> io::Result<usize> {
        let want = DATA_PREAMBLE_LEN - self.got as usize;
        let extra = if self.shared.is_some() {
            0
        } else {
            req as usize
        };
        let len = (want + extra).min(ts.rx.len());
        let n = sys::recv(self.sock.as_fd(), &mut ts.rx[..len], false)?;
        let k = n.min(want);
        self.head[self.got as usize..][..k].copy_from_slice(&ts.rx[..k]);
        self.got += n as u64;
        Ok(n)
    }

    fn step(&mut self, ts: &mut ThreadState) -> io::Result<Status> {
        let req = ts.spec.request_size as u64;
        let resp = ts.spec.response_size as u64;
        while (self.got as usize) < DATA_PREAMBLE_LEN {
            match self.recv_head(ts, req) {
                Ok(0) => return Ok(Status::Done),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Status::Active),
                Err(e) => return Err(e),
            }
            if self.got as usize >= DATA_PREAMBLE_LEN {
                let id = parse_data_preamble(&self.head, &self.token);
                match id.and_then(|i| self.counters.get(i as usize).map(|c| (i, c))) {
                    Some((i, c)) => {
                        // The request's bytes that came with the preamble.
                        c.add_received(self.got as usize - DATA_PREAMBLE_LEN);
                        self.flow = Some(c.clone());
                        self.sampled(ts, i, resp);
                    }
                    // Not this test's connection: drop it.
                    None => return Ok(Status::Done),
                }
            }
        }
        let Some(c) = self.flow.clone() else {
            return Ok(Status::Done);
        };
        let fd = self.sock.as_fd();
        let head = DATA_PREAMBLE_LEN as u64;
        let mut left = head + req - self.got;
        let r = match self.stamper.as_mut() {
            Some(b) if left > 0 => b.recv_left(self.sock.as_fd(), ts, &mut left, &c, false)?,
            _ => recv_left(fd, ts, &mut left, &c, false)?,
        };
        self.got = head + req - left;
        match r {
            Moved::Eof => return Ok(Status::Done),
            Moved::Blocked => return Ok(Status::Active),
            Moved::Done => {}
        }
        if self.sent < resp {
            if self.sent == 0
                && let Some(b) = self.stamper.as_mut()
            {
                b.request_read();
            }
            let mut left = resp - self.sent;
            let r = match self.stamper.as_mut() {
                Some(b) => b.send_left(self.sock.as_fd(), ts, &mut left, &c, false)?,
                None => send_left(fd, ts, &mut left, &c, false)?,
            };
            self.sent = resp - left;
            if r == Moved::Blocked {
                want_for(&mut self.reg, self.sock.as_fd(), ts, true)?;
                return Ok(Status::Active);
            }
            if let Some(b) = self.stamper.as_mut() {
                b.response_sent(self.sock.as_fd());
            }
            c.add_transaction();
            if self.stamper.is_none() && self.shared.is_none() {
                // Answered: close now, as a blocking server does (the
                // client's RST then ends the socket, so neither side keeps
                // TIME_WAIT); no epoll wait and read for that RST.
                return Ok(Status::Done);
            }
            // `--breakdown`: wait for the client's close (it cannot have
            // come yet: the client closes once it has the answer), so the
            // response's transmit timestamps are all in.
            want_for(&mut self.reg, self.sock.as_fd(), ts, false)?;
            return Ok(Status::Active);
        }
        Ok(if drain_to_eof(fd, ts)? {
            Status::Done
        } else {
            Status::Active
        })
    }
}
