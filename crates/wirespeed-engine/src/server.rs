//! The server: one thread per control connection, a fresh data listener per
//! test that only takes connections carrying that test's token, limits on
//! what a client may ask for, and a count of tests sharing the machine.

use crate::client::drain_time;
use crate::error::EngineError;
use crate::proto::{
    CONTROL_MAGIC, DATA_PREAMBLE_LEN, FrameReader, MAX_FRAME, Msg, PROTOCOL_VERSION, SideReport,
    auth_verify, hex, parse_data_preamble, printable, random_bytes, read_exact_until,
    read_msg_until, write_msg_until,
};
use crate::side::{Side, SideSetup, Tick};
use crate::sockets::{apply_common, tcp_socket};
use crate::spec::{FlowKind, Limits, SocketType, TestSpec};
use crate::sys;
use crate::udp::{Registrar, bind_registration};
use crate::workloads;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the server runs. Every deadline and cap here is in
/// docs/protocol.md with what the peer sees when it strikes.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; `::` takes IPv4 and IPv6.
    pub bind: IpAddr,
    /// Control port (0 = any free port).
    pub port: u16,
    /// Bounds on what a client may ask for.
    pub limits: Limits,
    /// Tests that may run at once.
    pub max_tests: u32,
    /// Authenticated control connections at once; more are answered `busy`.
    pub max_connections: usize,
    /// Connections still in the handshake at once; when full, the oldest
    /// is dropped (answered `busy`) so the newest always gets its turn.
    pub max_unauthenticated: usize,
    /// Control connections from one address (an IPv6 /64) at once,
    /// handshaking or not; a new one first displaces that address's oldest
    /// handshake, and is refused `busy` when all of them are authenticated.
    pub max_per_source: usize,
    /// Shared key clients must prove; None = anyone who reaches the port.
    pub key: Option<Vec<u8>>,
    /// Time from accepting a control connection to sending the welcome.
    pub handshake_timeout: Duration,
    /// How long a client may take over each whole message after the
    /// handshake (a spec, start, the next spec), and to read each answer.
    pub idle_timeout: Duration,
    /// How long a data connection may take to send its preamble.
    pub preamble_timeout: Duration,
    /// How long after a test's warm-up plus duration the server waits for
    /// the client's stop before it ends the test itself.
    pub stop_grace: Duration,
    /// Where to send a line per test started, finished or failed (the
    /// server's log); None = silent.
    pub events: Option<Sender<ServerEvent>>,
    /// Ports the tests' data listeners take, first free one first (a
    /// firewall, NetworkPolicy or Kubernetes Service can then name them);
    /// None = any free port.
    pub data_ports: Option<(u16, u16)>,
}

/// Something the server did, for its log. Text that came from the wire is
/// escaped and bounded ([`printable`]) before it gets here.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// A test began its traffic.
    Started {
        /// The test's number on this server.
        id: u64,
        /// The client's control address.
        peer: SocketAddr,
        /// The name the client gave in its hello, escaped.
        client: String,
        /// What runs, e.g. "stream forward, 4 flows, 2 threads, 10 s".
        summary: String,
    },
    /// A test ended and its report was sent.
    Finished {
        /// The test's number.
        id: u64,
        /// The client's control address.
        peer: SocketAddr,
        /// Bytes this side moved in the window.
        bytes: u64,
    },
    /// A control connection ended with an error (refused, aborted).
    Failed {
        /// The client's control address.
        peer: SocketAddr,
        /// What went wrong, escaped.
        error: String,
    },
}

impl std::fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerEvent::Started {
                id,
                peer,
                client,
                summary,
            } => {
                write!(f, "test {id} from {peer} ({client}) started: {summary}")
            }
            ServerEvent::Finished { id, peer, bytes } => {
                write!(
                    f,
                    "test {id} from {peer} finished: {bytes} bytes moved in the window"
                )
            }
            ServerEvent::Failed { peer, error } => write!(f, "client {peer}: {error}"),
        }
    }
}

fn emit(cfg: &ServerConfig, ev: ServerEvent) {
    if let Some(tx) = &cfg.events {
        let _ = tx.send(ev);
    }
}

fn emit_failed(cfg: &ServerConfig, peer: SocketAddr, error: &str) {
    emit(
        cfg,
        ServerEvent::Failed {
            peer,
            error: printable(error, MAX_LOGGED),
        },
    );
}

/// Most characters of wire-borne text in one log line.
const MAX_LOGGED: usize = 400;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            port: crate::client::DEFAULT_PORT,
            limits: Limits::default(),
            max_tests: 4,
            max_connections: 32,
            max_unauthenticated: 64,
            max_per_source: 8,
            key: None,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            preamble_timeout: Duration::from_secs(2),
            stop_grace: Duration::from_secs(3),
            events: None,
            data_ports: None,
        }
    }
}

/// The default `--max-flows` for a server whose open-file limit is
/// `nofile`: what is left after keeping a quarter of the limit (at least
/// 1024 descriptors) for everything else, never less than a quarter of
/// the limit, at most 20,000. So one client cannot exhaust the server's
/// descriptors alone, and a 10,000-flow test fits a limit of 20,000.
pub fn flow_limit_for(nofile: u64) -> u32 {
    let spare = nofile.saturating_sub((nofile / 4).max(1024));
    spare.max(nofile / 4).clamp(1, 20_000) as u32
}

/// Tests running now, and the most each has seen at once.
#[derive(Debug, Default)]
struct Registry {
    running: Mutex<HashMap<u64, u32>>,
    next: AtomicUsize,
}

/// A test's place in the registry; leaving frees it.
struct Admission<'a> {
    reg: &'a Registry,
    id: u64,
}

impl Registry {
    fn admit(&self, max: u32) -> Option<Admission<'_>> {
        let mut r = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() as u32 >= max {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        r.insert(id, 0);
        let n = r.len() as u32;
        for peak in r.values_mut() {
            *peak = (*peak).max(n);
        }
        Some(Admission { reg: self, id })
    }
}

impl Admission<'_> {
    fn peak(&self) -> u32 {
        let r = self.reg.running.lock().unwrap_or_else(|p| p.into_inner());
        r.get(&self.id).copied().unwrap_or(1).max(1)
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.reg
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

/// Control connections by state and source address: the caps of
/// [`ServerConfig`] are checked here, under one lock.
#[derive(Debug, Default)]
struct Table {
    inner: Mutex<TableInner>,
}

#[derive(Debug, Default)]
struct TableInner {
    next: u64,
    /// Connections in the handshake, oldest first (ids only grow).
    handshaking: BTreeMap<u64, Handshaking>,
    authenticated: usize,
    per_source: HashMap<IpAddr, usize>,
}

/// The "address" a per-source cap counts: an IPv4 address, or the /64 an
/// IPv6 address is in (one host commonly holds a whole /64, so counting
/// single IPv6 addresses would cap nothing).
pub fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
        v4 => v4,
    }
}

#[derive(Debug)]
struct Handshaking {
    ip: IpAddr,
    /// A second handle on the socket, to shut its reading side when the
    /// connection is dropped to make room: its thread then wakes at once.
    kick: TcpStream,
    dropped: Arc<AtomicBool>,
}

/// Why a handshaking connection was dropped.
const DISPLACED: &str =
    "dropped to make room: too many connections waiting to authenticate; try again";

impl TableInner {
    fn displace(&mut self, id: u64) {
        if let Some(h) = self.handshaking.remove(&id) {
            self.leave_source(h.ip);
            h.dropped.store(true, Ordering::SeqCst);
            let _ = h.kick.shutdown(Shutdown::Read);
        }
    }

    fn leave_source(&mut self, ip: IpAddr) {
        if let Some(n) = self.per_source.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&ip);
            }
        }
    }
}

/// A control connection's place in the [`Table`]; dropping it frees it.
struct Ticket {
    table: Arc<Table>,
    id: u64,
    ip: IpAddr,
    dropped: Arc<AtomicBool>,
    authenticated: bool,
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, TableInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a new connection in the handshake, displacing the oldest
    /// handshake of its address (at the per-source cap) or of all (at the
    /// handshake cap); Err(why) when the address holds its whole share in
    /// authenticated connections.
    fn admit(
        self: &Arc<Self>,
        ip: IpAddr,
        stream: &TcpStream,
        cfg: &ServerConfig,
    ) -> Result<Ticket, String> {
        let kick = stream.try_clone().map_err(|e| match e.raw_os_error() {
            Some(libc::EMFILE) | Some(libc::ENFILE) => OUT_OF_FDS.to_string(),
            _ => format!("cannot take the connection: {e}"),
        })?;
        let mut t = self.lock();
        if t.per_source.get(&ip).copied().unwrap_or(0) >= cfg.max_per_source {
            let oldest = t
                .handshaking
                .iter()
                .find(|(_, h)| h.ip == ip)
                .map(|(id, _)| *id);
            match oldest {
                Some(id) => t.displace(id),
                None => {
                    return Err(format!(
                        "too many connections from your address: the server takes {} per address at once",
                        cfg.max_per_source
                    ));
                }
            }
        }
        if t.handshaking.len() >= cfg.max_unauthenticated
            && let Some(id) = t.handshaking.keys().next().copied()
        {
            t.displace(id);
        }
        let id = t.next;
        t.next += 1;
        let dropped = Arc::new(AtomicBool::new(false));
        t.handshaking.insert(
            id,
            Handshaking {
                ip,
                kick,
                dropped: dropped.clone(),
            },
        );
        *t.per_source.entry(ip).or_default() += 1;
        Ok(Ticket {
            table: self.clone(),
            id,
            ip,
            dropped,
            authenticated: false,
        })
    }
}

impl Ticket {
    /// Whether the connection was dropped to make room.
    fn displaced(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Moves the connection from the handshake to the authenticated pool.
    fn authenticate(&mut self, max: usize) -> Result<(), String> {
        let mut t = self.table.lock();
        if !t.handshaking.contains_key(&self.id) {
            return Err(DISPLACED.into());
        }
        if t.authenticated >= max {
            return Err(format!(
                "too many control connections at once (the server takes {max}); try again later"
            ));
        }
        t.handshaking.remove(&self.id);
        t.authenticated += 1;
        self.authenticated = true;
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut t = self.table.lock();
        if self.authenticated {
            t.authenticated -= 1;
            t.leave_source(self.ip);
        } else if t.handshaking.remove(&self.id).is_some() {
            t.leave_source(self.ip);
        }
    }
}

/// What a client refused for want of descriptors is told.
const OUT_OF_FDS: &str = "the server is out of file descriptors; try again later";

/// A bound server, ready to serve.
pub struct Server {
    listener: TcpListener,
    cfg: Arc<ServerConfig>,
    registry: Arc<Registry>,
    table: Arc<Table>,
}

fn listen_socket(addr: SocketAddr, backlog: i32) -> std::io::Result<Socket> {
    let s = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.cloexec(),
        Some(Protocol::TCP),
    )?;
    if addr.is_ipv6() {
        // Dual stack on `::`, so IPv4 clients reach it too.
        let _ = s.set_only_v6(false);
    }
    s.set_reuse_address(true)?;
    s.bind(&SockAddr::from(addr))?;
    s.listen(backlog)?;
    Ok(s)
}

/// A descriptor kept open so that, out of descriptors, the server can
/// still close it, accept one client, tell it why, and reopen it.
fn reserve_fd() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

impl Server {
    /// Binds the control port; falls back from `::` to 0.0.0.0 without IPv6.
    pub fn bind(mut cfg: ServerConfig) -> Result<Server, EngineError> {
        sys::raise_fd_limit();
        cfg.max_connections = cfg.max_connections.max(1);
        cfg.max_unauthenticated = cfg.max_unauthenticated.max(1);
        cfg.max_per_source = cfg.max_per_source.max(1);
        let addr = SocketAddr::new(cfg.bind, cfg.port);
        let sock = match listen_socket(addr, 128) {
            Err(e)
                if cfg.bind == IpAddr::V6(Ipv6Addr::UNSPECIFIED)
                    && e.raw_os_error() == Some(libc::EAFNOSUPPORT) =>
            {
                listen_socket(SocketAddr::new(IpAddr::from([0, 0, 0, 0]), cfg.port), 128)
            }
            r => r,
        }
        .map_err(|e| {
            EngineError::io(
                format!("listen on {addr} (is another server on that port?)"),
                e,
            )
        })?;
        Ok(Server {
            listener: sock.into(),
            cfg: Arc::new(cfg),
            registry: Arc::default(),
            table: Arc::default(),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, EngineError> {
        self.listener
            .local_addr()
            .map_err(|e| EngineError::io("read the listening address", e))
    }

    /// Serves until `stop` becomes true (checked at least every 200 ms).
    pub fn serve(self, stop: Arc<AtomicBool>) -> Result<(), EngineError> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| EngineError::io("configure the listener", e))?;
        let fd = self.listener.as_raw_fd();
        let mut reserve = reserve_fd();
        let quiet = Arc::new(QuietLog::default());
        while !stop.load(Ordering::Relaxed) {
            if !sys::poll_readable(fd, 200).unwrap_or(false) {
                continue;
            }
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                    // Answer one waiting client with the reserve descriptor,
                    // then back off: the listener stays readable until
                    // descriptors free up, and must not spin.
                    drop(reserve.take());
                    if let Ok((s, peer)) = self.listener.accept() {
                        refuse(s, "busy", OUT_OF_FDS);
                        quiet.note(&self.cfg, peer, &format!("refused: {OUT_OF_FDS}"));
                    }
                    reserve = reserve_fd();
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                Err(_) => continue,
            };
            let ticket = match self.table.admit(source_of(peer.ip()), &stream, &self.cfg) {
                Ok(t) => t,
                Err(why) => {
                    refuse(stream, "busy", &why);
                    quiet.note(&self.cfg, peer, &format!("refused: {why}"));
                    continue;
                }
            };
            let slot = Arc::new(Mutex::new(Some(stream)));
            let (cfg, reg, s2) = (self.cfg.clone(), self.registry.clone(), slot.clone());
            let q2 = quiet.clone();
            let mut ticket = ticket;
            let spawned = std::thread::Builder::new()
                .name("ws-control".into())
                .spawn(move || {
                    let stream = s2.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if let Some(stream) = stream
                        && let Err(e) = handle_control(stream, peer, &cfg, &reg, &mut ticket)
                    {
                        // Before authentication anyone can cause a failure:
                        // those lines are rationed like refusals.
                        if ticket.authenticated {
                            emit_failed(&cfg, peer, &e.to_string());
                        } else {
                            q2.note(&cfg, peer, &e.to_string());
                        }
                    }
                });
            if let Err(e) = spawned {
                let stream = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(s) = stream {
                    let why = format!("the server cannot start a thread ({e}); try again later");
                    refuse(s, "busy", &why);
                    quiet.note(&self.cfg, peer, &format!("refused: {why}"));
                }
            }
        }
        Ok(())
    }
}

/// What unauthenticated peers cause (refusals at accept, failed
/// handshakes) goes to the log at most once a second, with a count of the
/// lines left out: a flood must not flood the log too.
#[derive(Default)]
struct QuietLog {
    inner: Mutex<(Option<Instant>, u64)>,
}

impl QuietLog {
    fn note(&self, cfg: &ServerConfig, peer: SocketAddr, what: &str) {
        let now = Instant::now();
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (last, left_out) = &mut *g;
        if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            *left_out += 1;
            return;
        }
        let more = match std::mem::take(left_out) {
            0 => String::new(),
            n => format!(" ({n} more like it from unauthenticated clients since the last line)"),
        };
        *last = Some(now);
        drop(g);
        emit_failed(cfg, peer, &format!("{what}{more}"));
    }
}

/// Answers a connection at accept with an error and closes it without
/// waiting on the client: the write cannot block (a new socket's buffer is
/// empty), and what the client sent already is read first so that the
/// close sends a FIN behind the answer rather than an RST that could
/// destroy it.
fn refuse(stream: TcpStream, code: &str, why: &str) {
    let fd = stream.as_raw_fd();
    let _ = write_msg_until(fd, &Msg::error(code, why), Instant::now());
    let _ = stream.shutdown(Shutdown::Write);
    let mut buf = [0u8; 4096];
    for _ in 0..16 {
        if !matches!(sys::recv(fd, &mut buf, false), Ok(n) if n > 0) {
            break;
        }
    }
}

/// How long an error answer may take to send.
const ERROR_WRITE: Duration = Duration::from_secs(1);

/// Sends an error reply and returns the error for the caller's log.
fn fail(stream: &TcpStream, code: &str, msg: String) -> EngineError {
    let _ = write_msg_until(
        stream.as_raw_fd(),
        &Msg::error(code, msg.clone()),
        Instant::now() + ERROR_WRITE,
    );
    EngineError::Refused(msg)
}

/// The answer to a failed read: none when the client left, `timeout` at
/// a deadline, `busy` when the connection was dropped to make room,
/// `protocol` for anything unreadable.
fn fail_read(stream: &TcpStream, e: EngineError, displaced: bool) -> EngineError {
    if displaced {
        return fail(stream, "busy", DISPLACED.into());
    }
    match e {
        EngineError::Io { ref error, .. } if error.kind() == std::io::ErrorKind::UnexpectedEof => e,
        EngineError::Timeout(m) => fail(stream, "timeout", format!("timed out {m}")),
        e => fail(stream, "protocol", e.to_string()),
    }
}

fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// What a handshake deadline error says: `what` was due by the end of
/// the handshake.
fn within(cfg: &ServerConfig, what: &str) -> String {
    format!(
        "{what} (the handshake must end within {})",
        secs(cfg.handshake_timeout)
    )
}

fn handle_control(
    stream: TcpStream,
    peer: SocketAddr,
    cfg: &ServerConfig,
    reg: &Registry,
    ticket: &mut Ticket,
) -> Result<(), EngineError> {
    stream.set_nodelay(true).ok();
    let hs = Instant::now() + cfg.handshake_timeout;
    let Some(client) = read_hello(&stream, cfg, hs, ticket)? else {
        return Ok(());
    };
    authenticate(&stream, cfg, hs, ticket)?;
    serve_specs(&stream, peer, &client, cfg, reg)
}

/// Reads the client's preamble and hello by `hs`; returns its name, or
/// None for a connection that closed at once.
fn read_hello(
    stream: &TcpStream,
    cfg: &ServerConfig,
    hs: Instant,
    ticket: &Ticket,
) -> Result<Option<String>, EngineError> {
    let fd = stream.as_raw_fd();
    let mut magic = [0u8; 4];
    match read_exact_until(fd, &mut magic, hs, &within(cfg, "the client's preamble")) {
        Ok(()) => {}
        // A port probe (a health check, a scan) that closes at once is
        // not worth a log line.
        Err(EngineError::Io { error, .. })
            if error.kind() == std::io::ErrorKind::UnexpectedEof && !ticket.displaced() =>
        {
            return Ok(None);
        }
        Err(e) => return Err(fail_read(stream, e, ticket.displaced())),
    }
    if magic != CONTROL_MAGIC {
        return Err(fail(
            stream,
            "protocol",
            "not a wirespeed control connection (bad preamble)".into(),
        ));
    }
    let hello = read_msg_until(
        fd,
        MAX_HANDSHAKE_FRAME,
        hs,
        &within(cfg, "the client's hello"),
    )
    .map_err(|e| fail_read(stream, e, ticket.displaced()))?;
    match hello {
        Msg::Hello { version, client } if version == PROTOCOL_VERSION => {
            Ok(Some(printable(&client, MAX_CLIENT_NAME)))
        }
        Msg::Hello { version, .. } => Err(fail(
            stream,
            "version",
            format!(
                "server speaks protocol {PROTOCOL_VERSION}, client {version}: run the same wirespeed version on both ends"
            ),
        )),
        other => Err(fail(
            stream,
            "protocol",
            format!("expected hello, got {}", other.kind()),
        )),
    }
}

/// Challenges the client, checks its answer against the key and takes a
/// connection slot, by `hs`; then welcomes it.
fn authenticate(
    stream: &TcpStream,
    cfg: &ServerConfig,
    hs: Instant,
    ticket: &mut Ticket,
) -> Result<(), EngineError> {
    let fd = stream.as_raw_fd();
    let nonce: [u8; 32] = random_bytes()?;
    write_msg_until(
        fd,
        &Msg::Challenge {
            nonce: hex(&nonce),
            auth_required: cfg.key.is_some(),
        },
        hs,
    )?;
    let mac = match read_msg_until(
        fd,
        MAX_HANDSHAKE_FRAME,
        hs,
        &within(cfg, "the client's auth"),
    ) {
        Ok(Msg::Auth { mac }) => mac,
        Ok(other) => {
            return Err(fail(
                stream,
                "protocol",
                format!("expected auth, got {}", other.kind()),
            ));
        }
        Err(e) => return Err(fail_read(stream, e, ticket.displaced())),
    };
    if let Some(key) = &cfg.key {
        let ok = mac.as_deref().is_some_and(|m| auth_verify(key, &nonce, m));
        if !ok {
            return Err(fail(
                stream,
                "auth",
                "wrong or missing key: use the server's --key-file".into(),
            ));
        }
    }
    if let Err(why) = ticket.authenticate(cfg.max_connections) {
        return Err(fail(stream, "busy", why));
    }
    write_msg_until(
        fd,
        &Msg::Welcome {
            limits: cfg.limits.clone(),
        },
        hs,
    )
}

/// Runs each test the client specifies until it closes the connection.
fn serve_specs(
    stream: &TcpStream,
    peer: SocketAddr,
    client: &str,
    cfg: &ServerConfig,
    reg: &Registry,
) -> Result<(), EngineError> {
    let fd = stream.as_raw_fd();
    loop {
        let what = format!(
            "the client's next spec (--idle-timeout {})",
            secs(cfg.idle_timeout)
        );
        let m = read_msg_until(fd, MAX_FRAME, Instant::now() + cfg.idle_timeout, &what)
            .map_err(|e| fail_read(stream, e, false));
        let m = match m {
            Ok(m) => m,
            Err(EngineError::Io { error, .. })
                if error.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        match m {
            Msg::Spec { spec } => run_test(stream, peer, client, *spec, cfg, reg)?,
            other => {
                return Err(fail(
                    stream,
                    "protocol",
                    format!("expected spec, got {}", other.kind()),
                ));
            }
        }
    }
}

/// Largest hello or auth frame, bytes: before authentication a client
/// gets no more buffer than those need (the 1 MiB of a spec comes after).
const MAX_HANDSHAKE_FRAME: usize = 4096;

/// Most characters of a client's name kept for the log.
const MAX_CLIENT_NAME: usize = 64;

fn run_test(
    stream: &TcpStream,
    peer: SocketAddr,
    client: &str,
    spec: TestSpec,
    cfg: &ServerConfig,
    reg: &Registry,
) -> Result<(), EngineError> {
    let fd = stream.as_raw_fd();
    let answer_by = || Instant::now() + cfg.idle_timeout;
    if let Err(e) = spec.validate(&cfg.limits) {
        return Err(fail(stream, "limits", e.to_string()));
    }
    let Some(admission) = reg.admit(cfg.max_tests) else {
        return Err(fail(
            stream,
            "busy",
            format!(
                "the server is running its maximum of {} tests; try again later",
                cfg.max_tests
            ),
        ));
    };
    let token: [u8; 16] = random_bytes()?;
    let persistent = spec
        .roster()
        .iter()
        .filter(|p| p.kind != FlowKind::Crr)
        .count();
    let (listener, socks) = take_flows(stream, cfg, &spec, &token, persistent)?;
    let mut frames = FrameReader::new(MAX_FRAME);
    read_start(stream, cfg, &mut frames)?;
    let spec = Arc::new(spec);
    let (listener, joins) = keep_listener(listener, &spec)?;
    let setup = SideSetup {
        spec: spec.clone(),
        client: false,
        socks,
        paths: Vec::new(),
        listener,
        token,
        preamble_timeout: cfg.preamble_timeout,
    };
    let side = Side::start(setup, drain_time(&spec))
        .map_err(|e| fail(stream, "internal", e.to_string()))?;
    write_msg_until(fd, &Msg::Started, answer_by())?;
    // The server's own end of the test: a client that never sends (or
    // trickles) its stop does not keep the workers going past it. The
    // grace grows by 0.1 ms a flow (2 s at 20,000): the client builds its
    // flows after our start, so its window ends that much later.
    let grace = stop_grace(cfg, &spec);
    let hard_end =
        Instant::now() + Duration::from_secs_f64(spec.warmup_s + spec.duration_s) + grace;
    emit(
        cfg,
        ServerEvent::Started {
            id: admission.id,
            peer,
            client: client.to_string(),
            summary: spec.summary(),
        },
    );
    let (window, stop_seen) = match watch_window(&side, &spec, &mut frames, fd) {
        Ok(w) => w,
        Err(e) => {
            drop(side);
            let _ = write_msg_until(
                fd,
                &Msg::error("aborted", e.to_string()),
                Instant::now() + ERROR_WRITE,
            );
            return Err(e);
        }
    };
    let side = if stop_seen {
        side
    } else {
        await_stop(side, stream, &mut frames, hard_end, grace)?
    };
    send_report(side, &window, joins, admission, fd, cfg, peer)
}

/// Ends the test: the side's report (the MPTCP listener closed and the
/// admission released once it is made) to the client, then the log's
/// event.
fn send_report(
    side: Side,
    window: &crate::side::Window,
    joins: Option<Socket>,
    admission: Admission<'_>,
    fd: RawFd,
    cfg: &ServerConfig,
    peer: SocketAddr,
) -> Result<(), EngineError> {
    let mut report: SideReport = side.finish(window);
    drop(joins);
    report.concurrent_tests = admission.peak();
    let id = admission.id;
    drop(admission);
    let bytes = report
        .flows
        .iter()
        .map(|f| f.window_sent + f.window_received)
        .sum();
    write_msg_until(
        fd,
        &Msg::Report {
            report: Box::new(report),
        },
        Instant::now() + cfg.idle_timeout,
    )?;
    emit(cfg, ServerEvent::Finished { id, peer, bytes });
    Ok(())
}

/// Opens the test's data port, tells the client, and takes its
/// `persistent` flows (accepted, or registered for UDP) by the idle
/// timeout plus a millisecond a flow; returns the TCP listener, kept for
/// the test, and the flows' sockets.
fn take_flows(
    stream: &TcpStream,
    cfg: &ServerConfig,
    spec: &TestSpec,
    token: &[u8; 16],
    persistent: usize,
) -> Result<(Option<Socket>, Vec<Option<Socket>>), EngineError> {
    let fd = stream.as_raw_fd();
    let answer_by = || Instant::now() + cfg.idle_timeout;
    let (listener, registration, port) = open_data_port(stream, cfg, spec, persistent)?;
    write_msg_until(
        fd,
        &Msg::Accepted {
            token: hex(token),
            data_port: port,
        },
        answer_by(),
    )?;
    // Accept while the client connects: it sends Start once all are up.
    let deadline = answer_by() + Duration::from_millis(persistent as u64);
    let flows = match (&listener, &registration) {
        (Some(l), _) => accept_flows(l, token, spec, persistent, deadline, fd, cfg),
        (_, Some(r)) => register_udp_flows(r, token, spec, persistent, deadline, fd),
        _ => unreachable!("a listener or a registration socket was opened"),
    };
    drop(registration);
    match flows {
        Ok(s) => Ok((listener, s)),
        Err(FlowsError::ClientGone(got)) => Err(EngineError::Protocol(format!(
            "the client went away with {got} of {persistent} data flows connected"
        ))),
        Err(FlowsError::Fail(code, msg)) => Err(fail(stream, code, msg)),
    }
}

/// Opens a test's data port: a listener for TCP, a registration socket
/// for UDP, on the control connection's address (or the bound one);
/// returns them and the port.
fn open_data_port(
    stream: &TcpStream,
    cfg: &ServerConfig,
    spec: &TestSpec,
    persistent: usize,
) -> Result<(Option<Socket>, Option<Socket>, u16), EngineError> {
    let local = stream
        .local_addr()
        .map_err(|e| EngineError::io("read control address", e))?;
    let any = match local.ip() {
        IpAddr::V4(_) if cfg.bind.is_unspecified() && cfg.bind.is_ipv4() => {
            IpAddr::from([0, 0, 0, 0])
        }
        _ if cfg.bind.is_unspecified() => cfg.bind,
        ip => ip,
    };
    let udp = workloads::def(spec.workload).socket() == SocketType::Udp;
    let backlog = persistent.clamp(128, 65535) as i32;
    let open_fail = |e: EngineError, what: &str| {
        let code = if is_out_of_fds(&e) || matches!(e, EngineError::Busy(_)) {
            "busy"
        } else {
            "internal"
        };
        fail(stream, code, format!("cannot open {what}: {e}"))
    };
    let v4_any = SocketAddr::new(IpAddr::from([0, 0, 0, 0]), 0);
    let (listener, registration) = if udp {
        let r = on_data_port(cfg, |p| {
            bind_registration(SocketAddr::new(any, p))
                .or_else(|_| bind_registration(SocketAddr::new(v4_any.ip(), p)))
        })
        .map_err(|e| open_fail(e, "a UDP registration socket"))?;
        (None, Some(r))
    } else {
        let l = on_data_port(cfg, |p| {
            listen_data(SocketAddr::new(any, p), backlog, spec)
                .or_else(|_| listen_data(SocketAddr::new(v4_any.ip(), p), backlog, spec))
        })
        .map_err(|e| open_fail(e, "a data listener"))?;
        (Some(l), None)
    };
    let port = listener
        .as_ref()
        .or(registration.as_ref())
        .and_then(|l| l.local_addr().ok())
        .and_then(|a| a.as_socket())
        .map(|a| a.port())
        .unwrap_or(0);
    Ok((listener, registration, port))
}

/// Reads the client's start, due within the idle timeout.
fn read_start(
    stream: &TcpStream,
    cfg: &ServerConfig,
    frames: &mut FrameReader,
) -> Result<(), EngineError> {
    let what = format!(
        "the client's start (--idle-timeout {})",
        secs(cfg.idle_timeout)
    );
    match frames
        .read_until(stream.as_raw_fd(), Instant::now() + cfg.idle_timeout, &what)
        .map_err(|e| fail_read(stream, e, false))?
    {
        Msg::Start => Ok(()),
        other => Err(fail(
            stream,
            "protocol",
            format!("expected start, got {}", other.kind()),
        )),
    }
}

/// What becomes of the data listener once every flow is in: the
/// workers' (nonblocking) when the workload accepts mid-test, else kept
/// open for an MPTCP test's joins (the second), else closed.
fn keep_listener(
    listener: Option<Socket>,
    spec: &TestSpec,
) -> Result<(Option<Arc<Socket>>, Option<Socket>), EngineError> {
    // An MPTCP test's extra subflows join (MP_JOIN) through the listener
    // for as long as the test runs: it stays open, never accepted from.
    let mut joins = None;
    let listener = match listener {
        Some(l) if workloads::def(spec.workload).listener.is_some() => {
            l.set_nonblocking(true)
                .map_err(|e| EngineError::io("configure the data listener", e))?;
            Some(Arc::new(l))
        }
        other if spec.mptcp => {
            joins = other;
            None
        }
        // Every flow is in: close the port rather than let it complete
        // handshakes nobody will read for the rest of the test.
        other => {
            drop(other);
            None
        }
    };
    Ok((listener, joins))
}

/// Runs the test's window while watching the control connection for the
/// client's stop; returns the window and whether the stop came in it.
fn watch_window(
    side: &Side,
    spec: &TestSpec,
    frames: &mut FrameReader,
    fd: RawFd,
) -> Result<(crate::side::Window, bool), EngineError> {
    let mut stop_seen = false;
    let mut control_error: Option<EngineError> = None;
    let window = side.run_window(spec, |_, _| {
        match frames.poll(fd, "the client's stop") {
            Ok(None) => return Ok(Tick::Continue),
            Ok(Some(Msg::Stop)) => {
                stop_seen = true;
                return Ok(Tick::EndNow);
            }
            Ok(Some(other)) => {
                control_error = Some(EngineError::Protocol(format!(
                    "unexpected {} mid-test",
                    other.kind()
                )))
            }
            Err(e) => {
                control_error = Some(EngineError::Protocol(format!(
                    "the client went away mid-test ({e})"
                )))
            }
        }
        Err(EngineError::Protocol(
            "the client went away mid-test".into(),
        ))
    });
    match window {
        Ok(w) => Ok((w, stop_seen)),
        Err(e) => Err(control_error.unwrap_or(e)),
    }
}

/// Waits until `hard_end` for the client's stop after the window; on
/// anything else ends the test (`side` dropped first) and tells the client.
fn await_stop(
    side: Side,
    stream: &TcpStream,
    frames: &mut FrameReader,
    hard_end: Instant,
    grace: Duration,
) -> Result<Side, EngineError> {
    let what = format!(
        "the client's stop (due within {} of the test's end)",
        secs(grace)
    );
    match frames.read_until(stream.as_raw_fd(), hard_end, &what) {
        Ok(Msg::Stop) => Ok(side),
        Ok(other) => {
            drop(side);
            Err(fail(
                stream,
                "protocol",
                format!("expected stop, got {}", other.kind()),
            ))
        }
        Err(EngineError::Timeout(_)) => {
            drop(side);
            Err(fail(
                stream,
                "aborted",
                format!(
                    "no stop from the client within {} of the test's end: the server ended the test",
                    secs(grace)
                ),
            ))
        }
        Err(e) => {
            drop(side);
            Err(fail_read(stream, e, false))
        }
    }
}

/// How long after warm-up plus duration the server waits for the stop.
fn stop_grace(cfg: &ServerConfig, spec: &TestSpec) -> Duration {
    cfg.stop_grace + Duration::from_micros(100 * spec.connections())
}

fn is_out_of_fds(e: &EngineError) -> bool {
    matches!(e, EngineError::Io { error, .. }
        if matches!(error.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)))
}

fn listen_data(addr: SocketAddr, backlog: i32, spec: &TestSpec) -> Result<Socket, EngineError> {
    // An MPTCP test needs an MPTCP listener: a TCP one would make every
    // flow fall back to plain TCP.
    let s = tcp_socket(Domain::for_address(addr), spec)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    // Buffer sizes and congestion control set here are inherited by every
    // accepted flow, in time for the handshake's window scale.
    apply_common(&s, spec)?;
    if addr.port() != 0 {
        // A fixed data port is taken again by the next test while the
        // last one's connections sit in TIME_WAIT.
        let _ = s.set_reuse_address(true);
    }
    s.bind(&SockAddr::from(addr))
        .map_err(|e| EngineError::io(format!("bind the data listener to {addr}"), e))?;
    s.listen(backlog)
        .map_err(|e| EngineError::io("listen for data flows", e))?;
    Ok(s)
}

/// Opens a test's data socket with `open` on a port of `cfg.data_ports`
/// (the first one free), or on any port when no range is set.
fn on_data_port<T>(
    cfg: &ServerConfig,
    open: impl Fn(u16) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let Some((lo, hi)) = cfg.data_ports else {
        return open(0);
    };
    let mut last = None;
    for p in lo..=hi {
        match open(p) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => EngineError::Busy(format!(
            "every data port {lo}-{hi} is taken (last: {e}); widen --data-ports or lower --max-tests"
        )),
        None => EngineError::Busy(format!("empty data port range {lo}-{hi}")),
    })
}

/// Why accepting a test's flows stopped.
enum FlowsError {
    /// The control connection closed: the client is gone (flows so far).
    ClientGone(usize),
    /// Answer the client with this code and message.
    Fail(&'static str, String),
}

/// Most data connections waiting for their preamble at once; past it the
/// oldest is dropped.
const MAX_PENDING: usize = 512;

/// A data connection whose preamble is not all in yet.
struct Pending {
    sock: Socket,
    head: [u8; DATA_PREAMBLE_LEN],
    got: usize,
    until: Instant,
}

/// What reading a preamble gave.
enum Preamble {
    /// Not all in yet.
    More,
    /// Complete: this flow id (not yet checked against the roster).
    Flow(u32),
    /// Closed, failed or not this test's: drop it.
    Drop,
}

impl Pending {
    fn read(&mut self, token: &[u8; 16]) -> Preamble {
        while self.got < DATA_PREAMBLE_LEN {
            match sys::recv(self.sock.as_raw_fd(), &mut self.head[self.got..], false) {
                Ok(0) => return Preamble::Drop,
                Ok(n) => self.got += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Preamble::More,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Preamble::Drop,
            }
        }
        match parse_data_preamble(&self.head, token) {
            Some(id) => Preamble::Flow(id),
            None => Preamble::Drop,
        }
    }
}

/// Accepts the test's persistent flows. Preambles are read from every
/// waiting connection at once, each within `cfg.preamble_timeout` of its
/// accept, so idle or garbage connections cost one descriptor for a short
/// time and delay nobody; anything without the token is dropped. The
/// control connection is watched throughout: if the client goes, so do
/// its flows, at once.
fn accept_flows(
    listener: &Socket,
    token: &[u8; 16],
    spec: &TestSpec,
    want: usize,
    deadline: Instant,
    control: RawFd,
    cfg: &ServerConfig,
) -> Result<Vec<Option<Socket>>, FlowsError> {
    let roster = spec.roster();
    let mut socks: Vec<Option<Socket>> = (0..roster.len()).map(|_| None).collect();
    let mut got = 0;
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    if want > 0 {
        listener.set_nonblocking(true).map_err(|e| {
            FlowsError::Fail("internal", format!("configure the data listener: {e}"))
        })?;
    }
    let place = |socks: &mut Vec<Option<Socket>>, id: u32, s: Socket| -> bool {
        let Some(plan) = roster.get(id as usize) else {
            return false;
        };
        if plan.kind == FlowKind::Crr || socks[id as usize].is_some() {
            return false;
        }
        if spec.nodelay || plan.kind == FlowKind::Probe {
            s.set_tcp_nodelay(true).ok();
        }
        socks[id as usize] = Some(s);
        true
    };
    while got < want {
        let now = Instant::now();
        if now >= deadline {
            return Err(FlowsError::Fail(
                "timeout",
                format!("only {got} of {want} data flows connected in time"),
            ));
        }
        while pending.front().is_some_and(|p| p.until <= now) {
            pending.pop_front();
        }
        fds.clear();
        fds.push(sys::pollfd(listener.as_raw_fd(), libc::POLLIN));
        fds.push(sys::pollfd(control, libc::POLLRDHUP));
        fds.extend(
            pending
                .iter()
                .map(|p| sys::pollfd(p.sock.as_raw_fd(), libc::POLLIN)),
        );
        let next = pending.front().map_or(deadline, |p| p.until.min(deadline));
        let ms = next
            .saturating_duration_since(now)
            .as_micros()
            .div_ceil(1000)
            .clamp(1, 200) as i32;
        sys::poll(&mut fds, ms)
            .map_err(|e| FlowsError::Fail("internal", format!("poll data connections: {e}")))?;
        if fds[1].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return Err(FlowsError::ClientGone(got));
        }
        let ready: Vec<bool> = fds[2..].iter().map(|f| f.revents != 0).collect();
        let mut still = VecDeque::with_capacity(pending.len());
        for (mut p, r) in pending.drain(..).zip(ready) {
            if !r {
                still.push_back(p);
                continue;
            }
            match p.read(token) {
                Preamble::More => still.push_back(p),
                Preamble::Flow(id) => got += usize::from(place(&mut socks, id, p.sock)),
                Preamble::Drop => {}
            }
        }
        pending = still;
        if fds[0].revents & libc::POLLIN == 0 {
            continue;
        }
        for _ in 0..1024 {
            let s = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                    return Err(FlowsError::Fail(
                        "busy",
                        format!(
                            "the server ran out of file descriptors with {got} of {want} data flows connected; try fewer flows or later"
                        ),
                    ));
                }
                Err(_) => break,
            };
            if s.set_nonblocking(true).is_err() {
                continue;
            }
            let mut p = Pending {
                sock: s,
                head: [0; DATA_PREAMBLE_LEN],
                got: 0,
                until: Instant::now() + cfg.preamble_timeout,
            };
            match p.read(token) {
                Preamble::More => {
                    if pending.len() >= MAX_PENDING {
                        pending.pop_front();
                    }
                    pending.push_back(p);
                }
                Preamble::Flow(id) => got += usize::from(place(&mut socks, id, p.sock)),
                Preamble::Drop => {}
            }
        }
    }
    Ok(socks)
}

/// Registers the test's UDP flows (see [`crate::udp`]): every flow's
/// `register` datagram must carry the token and come by `deadline`;
/// anything else on the registration socket is dropped. The control
/// connection is watched throughout, as for TCP flows.
fn register_udp_flows(
    reg: &Socket,
    token: &[u8; 16],
    spec: &TestSpec,
    want: usize,
    deadline: Instant,
    control: RawFd,
) -> Result<Vec<Option<Socket>>, FlowsError> {
    let roster = spec.roster();
    let mut r = Registrar::new(&roster, *token, spec);
    while r.got < want {
        let now = Instant::now();
        if now >= deadline {
            return Err(FlowsError::Fail(
                "timeout",
                format!("only {} of {want} UDP flows registered in time", r.got),
            ));
        }
        let mut fds = [
            sys::pollfd(reg.as_raw_fd(), libc::POLLIN),
            sys::pollfd(control, libc::POLLRDHUP),
        ];
        let ms = deadline
            .saturating_duration_since(now)
            .as_millis()
            .clamp(1, 200) as i32;
        sys::poll(&mut fds, ms)
            .map_err(|e| FlowsError::Fail("internal", format!("poll UDP registrations: {e}")))?;
        if fds[1].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return Err(FlowsError::ClientGone(r.got));
        }
        if fds[0].revents != 0
            && let Err(e) = r.serve(reg)
        {
            let code = if is_out_of_fds(&e) {
                "busy"
            } else {
                "internal"
            };
            return Err(FlowsError::Fail(
                code,
                format!(
                    "registering UDP flows ({} of {want} in): {e}; try fewer flows or later",
                    r.got
                ),
            ));
        }
    }
    Ok(r.into_sockets())
}

/// A key read from a `--key-file`, with a warning for its owner to see.
#[derive(Debug)]
pub struct KeyFile {
    /// The key: the file's bytes with surrounding whitespace trimmed.
    pub key: Vec<u8>,
    /// Set when the file is readable by every user (to print on stderr).
    pub warning: Option<String>,
}

/// Largest key file read, bytes: a key is a short secret, and `/dev/zero`
/// must not be read for ever.
pub const MAX_KEY_FILE: u64 = 4096;

/// Reads a key file as ssh reads a private key: a regular file writable
/// by group or others is refused (anyone could replace the key), one
/// readable by everyone is taken with a warning; at most [`MAX_KEY_FILE`]
/// bytes are read, and the key must hold at least 16.
pub fn read_key_file(path: &std::path::Path) -> Result<KeyFile, EngineError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let p = path.display();
    let f =
        std::fs::File::open(path).map_err(|e| EngineError::io(format!("open key file {p}"), e))?;
    let meta = f
        .metadata()
        .map_err(|e| EngineError::io(format!("read key file {p}"), e))?;
    let mut warning = None;
    if meta.is_file() {
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o022 != 0 {
            let who = if mode & 0o002 != 0 {
                "every user"
            } else {
                "its group"
            };
            return Err(EngineError::Key(format!(
                "{p} is writable by {who} (mode {mode:03o}), so anyone there could replace the key: run `chmod 600 {p}`"
            )));
        }
        if mode & 0o004 != 0 {
            warning = Some(format!(
                "key file {p} is readable by every user (mode {mode:03o}): run `chmod 600 {p}`"
            ));
        }
    }
    let mut raw = Vec::new();
    f.take(MAX_KEY_FILE + 1)
        .read_to_end(&mut raw)
        .map_err(|e| EngineError::io(format!("read key file {p}"), e))?;
    if raw.len() as u64 > MAX_KEY_FILE {
        return Err(EngineError::Key(format!(
            "{p} holds more than {MAX_KEY_FILE} bytes: is it the key? (make one with `head -c 32 /dev/urandom | base64 > key`)"
        )));
    }
    let key: Vec<u8> = raw.trim_ascii().to_vec();
    if key.len() < 16 {
        return Err(EngineError::Key(format!(
            "{p} holds {} bytes; use at least 16 (e.g. `head -c 32 /dev/urandom | base64 > key`)",
            key.len()
        )));
    }
    Ok(KeyFile { key, warning })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_an_ipv4_address_or_an_ipv6_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(source_of(a), source_of(b));
        assert_ne!(source_of(a), source_of(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(source_of(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
        let v4: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(source_of(v4), v4);
    }

    #[test]
    fn the_flow_limit_leaves_descriptors_to_spare() {
        assert_eq!(flow_limit_for(1 << 20), 20_000);
        assert_eq!(flow_limit_for(20_000), 15_000);
        assert_eq!(flow_limit_for(4096), 3072);
        assert_eq!(flow_limit_for(1024), 256);
        assert_eq!(flow_limit_for(48), 12);
        assert_eq!(flow_limit_for(0), 1);
    }

    /// A connected loopback pair: (the server's end, the client's end).
    fn pair(l: &TcpListener, from: &str) -> (TcpStream, TcpStream) {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.bind(&SockAddr::from(SocketAddr::new(from.parse().unwrap(), 0)))
            .unwrap();
        s.connect(&SockAddr::from(l.local_addr().unwrap())).unwrap();
        (l.accept().unwrap().0, s.into())
    }

    #[test]
    fn handshakes_make_room_and_never_take_authenticated_places() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let cfg = ServerConfig {
            max_connections: 2,
            max_unauthenticated: 3,
            max_per_source: 2,
            ..ServerConfig::default()
        };
        let table = Arc::new(Table::default());
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let mut keep = Vec::new();
        let mut admit = |ip: IpAddr| {
            let (srv, cli) = pair(&l, &ip.to_string());
            let t = table.admit(ip, &srv, &cfg);
            keep.push((srv, cli));
            t
        };
        // Two from a: the per-source cap; a third displaces a's oldest.
        let a1 = admit(a).unwrap();
        let mut a2 = admit(a).unwrap();
        let a3 = admit(a).unwrap();
        assert!(a1.displaced() && !a2.displaced() && !a3.displaced());
        // b's first fills the pool of 3 handshakes; its second displaces
        // the oldest of all (a2).
        let b1 = admit(b).unwrap();
        let mut b2 = admit(b).unwrap();
        assert!(a2.displaced() && !b1.displaced());
        assert!(a2.authenticate(cfg.max_connections).is_err());
        // Authenticated places are only for the authenticated.
        b2.authenticate(cfg.max_connections).unwrap();
        let mut a3 = a3;
        a3.authenticate(cfg.max_connections).unwrap();
        let mut b1 = b1;
        let e = b1.authenticate(cfg.max_connections).unwrap_err();
        assert!(e.contains("too many control connections"), "{e}");
        // A new one from a displaces a's other handshake, not a3.
        let a4 = admit(a).unwrap();
        let mut a5 = admit(a).unwrap();
        assert!(a4.displaced() && !a5.displaced());
        // With both of a's places authenticated, a is refused outright.
        drop(b2);
        a5.authenticate(cfg.max_connections).unwrap();
        let e = admit(a).map(|_| ()).unwrap_err();
        assert!(e.contains("per address"), "{e}");
        drop((a1, a2, a3, a4, a5, b1));
        let t = table.lock();
        assert!(t.handshaking.is_empty() && t.authenticated == 0 && t.per_source.is_empty());
    }
}
