//! The server: one thread per control connection, a fresh data listener per
//! test that only takes connections carrying that test's token, limits on
//! what a client may ask for, and a count of tests sharing the machine.

use crate::client::drain_time;
use crate::error::EngineError;
use crate::proto::{
    CONTROL_MAGIC, DATA_PREAMBLE_LEN, Msg, PROTOCOL_VERSION, SideReport, auth_verify, hex,
    parse_data_preamble, random_bytes, read_msg, write_msg,
};
use crate::side::{Side, SideSetup, Tick};
use crate::sockets::apply_common;
use crate::spec::{FlowKind, Limits, TestSpec};
use crate::sys;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the server runs.
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
    /// Control connections handled at once (handshakes included).
    pub max_connections: usize,
    /// Shared key clients must prove; None = anyone who reaches the port.
    pub key: Option<Vec<u8>>,
    /// How long a silent client is waited for.
    pub idle_timeout: Duration,
    /// Where to send a line per test started, finished or failed (the
    /// server's log); None = silent.
    pub events: Option<Sender<ServerEvent>>,
}

/// Something the server did, for its log.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// A test began its traffic.
    Started {
        /// The test's number on this server.
        id: u64,
        /// The client's control address.
        peer: SocketAddr,
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
        /// What went wrong.
        error: String,
    },
}

impl std::fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerEvent::Started { id, peer, summary } => {
                write!(f, "test {id} from {peer} started: {summary}")
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

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            port: crate::client::DEFAULT_PORT,
            limits: Limits::default(),
            max_tests: 4,
            max_connections: 64,
            key: None,
            idle_timeout: Duration::from_secs(10),
            events: None,
        }
    }
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

/// A bound server, ready to serve.
pub struct Server {
    listener: TcpListener,
    cfg: Arc<ServerConfig>,
    registry: Arc<Registry>,
    connections: Arc<AtomicUsize>,
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

impl Server {
    /// Binds the control port; falls back from `::` to 0.0.0.0 without IPv6.
    pub fn bind(cfg: ServerConfig) -> Result<Server, EngineError> {
        sys::raise_fd_limit();
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
            connections: Arc::default(),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, EngineError> {
        self.listener
            .local_addr()
            .map_err(|e| EngineError::io("read the listening address", e))
    }

    /// Serves until `stop` becomes true (checked between connections).
    pub fn serve(self, stop: Arc<AtomicBool>) -> Result<(), EngineError> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| EngineError::io("configure the listener", e))?;
        let fd = self.listener.as_raw_fd();
        while !stop.load(Ordering::Relaxed) {
            if !sys::poll_readable(fd, 200).unwrap_or(false) {
                continue;
            }
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                Err(_) => continue,
            };
            let _ = stream.set_nonblocking(false);
            if self.connections.load(Ordering::SeqCst) >= self.cfg.max_connections {
                refuse_busy(stream, "too many control connections at once");
                continue;
            }
            self.connections.fetch_add(1, Ordering::SeqCst);
            let (cfg, reg, conns) = (
                self.cfg.clone(),
                self.registry.clone(),
                self.connections.clone(),
            );
            let spawned = std::thread::Builder::new()
                .name("ws-control".into())
                .spawn(move || {
                    if let Err(e) = handle_control(stream, peer, &cfg, &reg) {
                        emit(
                            &cfg,
                            ServerEvent::Failed {
                                peer,
                                error: e.to_string(),
                            },
                        );
                    }
                    conns.fetch_sub(1, Ordering::SeqCst);
                });
            if spawned.is_err() {
                self.connections.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

fn refuse_busy(mut stream: TcpStream, why: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = write_msg(&mut stream, &Msg::error("busy", why));
}

/// Sends an error reply and returns the error for the caller's log.
fn fail(stream: &mut TcpStream, code: &str, msg: String) -> EngineError {
    let _ = write_msg(stream, &Msg::error(code, msg.clone()));
    EngineError::Refused(msg)
}

fn handle_control(
    mut stream: TcpStream,
    peer: SocketAddr,
    cfg: &ServerConfig,
    reg: &Registry,
) -> Result<(), EngineError> {
    stream.set_read_timeout(Some(cfg.idle_timeout)).ok();
    stream.set_write_timeout(Some(cfg.idle_timeout)).ok();
    stream.set_nodelay(true).ok();
    let mut magic = [0u8; 4];
    stream
        .read_exact(&mut magic)
        .map_err(|e| EngineError::io(format!("read preamble from {peer}"), e))?;
    if magic != CONTROL_MAGIC {
        return Err(fail(
            &mut stream,
            "protocol",
            "not a wirespeed control connection (bad preamble)".into(),
        ));
    }
    let hello = match read_msg(&mut stream) {
        Ok(m) => m,
        Err(e) => return Err(fail(&mut stream, "protocol", e.to_string())),
    };
    match hello {
        Msg::Hello { version, .. } if version == PROTOCOL_VERSION => {}
        Msg::Hello { version, .. } => {
            return Err(fail(
                &mut stream,
                "version",
                format!(
                    "server speaks protocol {PROTOCOL_VERSION}, client {version}: run the same wirespeed version on both ends"
                ),
            ));
        }
        other => {
            return Err(fail(
                &mut stream,
                "protocol",
                format!("expected hello, got {}", kind(&other)),
            ));
        }
    }
    let nonce: [u8; 32] = random_bytes()?;
    write_msg(
        &mut stream,
        &Msg::Challenge {
            nonce: hex(&nonce),
            auth_required: cfg.key.is_some(),
        },
    )?;
    let mac = match read_msg(&mut stream) {
        Ok(Msg::Auth { mac }) => mac,
        Ok(other) => {
            return Err(fail(
                &mut stream,
                "protocol",
                format!("expected auth, got {}", kind(&other)),
            ));
        }
        Err(e) => return Err(fail(&mut stream, "protocol", e.to_string())),
    };
    if let Some(key) = &cfg.key {
        let ok = mac.as_deref().is_some_and(|m| auth_verify(key, &nonce, m));
        if !ok {
            return Err(fail(
                &mut stream,
                "auth",
                "wrong or missing key: use the server's --key-file".into(),
            ));
        }
    }
    write_msg(
        &mut stream,
        &Msg::Welcome {
            limits: cfg.limits.clone(),
        },
    )?;
    loop {
        let m = match read_msg(&mut stream) {
            Ok(m) => m,
            Err(EngineError::Io { error: source, .. })
                if source.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                return Ok(());
            }
            Err(e) => return Err(fail(&mut stream, "protocol", e.to_string())),
        };
        match m {
            Msg::Spec { spec } => run_test(&mut stream, peer, *spec, cfg, reg)?,
            other => {
                return Err(fail(
                    &mut stream,
                    "protocol",
                    format!("expected spec, got {}", kind(&other)),
                ));
            }
        }
    }
}

fn kind(m: &Msg) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn run_test(
    stream: &mut TcpStream,
    peer: SocketAddr,
    spec: TestSpec,
    cfg: &ServerConfig,
    reg: &Registry,
) -> Result<(), EngineError> {
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
    let roster = spec.roster();
    let persistent = roster.iter().filter(|p| p.kind != FlowKind::Crr).count();
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
    let backlog = persistent.clamp(128, 65535) as i32;
    let listener = listen_data(SocketAddr::new(any, 0), backlog, &spec)
        .or_else(|_| {
            listen_data(
                SocketAddr::new(IpAddr::from([0, 0, 0, 0]), 0),
                backlog,
                &spec,
            )
        })
        .map_err(|e| {
            fail(
                stream,
                "internal",
                format!("cannot open a data listener: {e}"),
            )
        })?;
    let port = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .map(|a| a.port())
        .unwrap_or(0);
    write_msg(
        stream,
        &Msg::Accepted {
            token: hex(&token),
            data_port: port,
        },
    )?;
    // Accept while the client connects: it sends Start once all are up.
    let deadline = Instant::now() + cfg.idle_timeout + Duration::from_millis(persistent as u64);
    let socks = match accept_flows(&listener, &token, &spec, persistent, deadline) {
        Ok(s) => s,
        Err(e) => return Err(fail(stream, "timeout", e.to_string())),
    };
    match read_msg(stream) {
        Ok(Msg::Start) => {}
        Ok(other) => {
            return Err(fail(
                stream,
                "protocol",
                format!("expected start, got {}", kind(&other)),
            ));
        }
        Err(e) => return Err(fail(stream, "protocol", e.to_string())),
    }
    let spec = Arc::new(spec);
    let crr = roster.iter().any(|p| p.kind == FlowKind::Crr);
    let listener = if crr {
        listener
            .set_nonblocking(true)
            .map_err(|e| EngineError::io("configure the data listener", e))?;
        Some(Arc::new(listener))
    } else {
        None
    };
    let setup = SideSetup {
        spec: spec.clone(),
        client: false,
        socks,
        paths: Vec::new(),
        listener,
        token,
    };
    let side = Side::start(setup, drain_time(&spec))
        .map_err(|e| fail(stream, "internal", e.to_string()))?;
    write_msg(stream, &Msg::Started)?;
    emit(
        cfg,
        ServerEvent::Started {
            id: admission.id,
            peer,
            summary: spec.summary(),
        },
    );
    let fd = stream.as_raw_fd();
    let mut stop_seen = false;
    let mut control_error: Option<EngineError> = None;
    let window = side.run_window(&spec, |_, _| {
        if sys::poll_readable(fd, 0).unwrap_or(false) {
            match read_msg(&mut &*stream) {
                Ok(Msg::Stop) => {
                    stop_seen = true;
                    return Ok(Tick::EndNow);
                }
                Ok(other) => {
                    control_error = Some(EngineError::Protocol(format!(
                        "unexpected {} mid-test",
                        kind(&other)
                    )))
                }
                Err(e) => {
                    control_error = Some(EngineError::Protocol(format!(
                        "the client went away mid-test ({e})"
                    )))
                }
            }
            return Err(EngineError::Protocol(
                "the client went away mid-test".into(),
            ));
        }
        Ok(Tick::Continue)
    });
    let window = match window {
        Ok(w) => w,
        Err(e) => {
            drop(side);
            let e = control_error.unwrap_or(e);
            let _ = write_msg(stream, &Msg::error("aborted", e.to_string()));
            return Err(e);
        }
    };
    if !stop_seen {
        stream.set_read_timeout(Some(cfg.idle_timeout)).ok();
        match read_msg(stream) {
            Ok(Msg::Stop) => {}
            Ok(other) => {
                drop(side);
                return Err(fail(
                    stream,
                    "protocol",
                    format!("expected stop, got {}", kind(&other)),
                ));
            }
            Err(e) => {
                drop(side);
                return Err(e);
            }
        }
    }
    let mut report: SideReport = side.finish(&window);
    report.concurrent_tests = admission.peak();
    let id = admission.id;
    drop(admission);
    let bytes = report
        .flows
        .iter()
        .map(|f| f.window_sent + f.window_received)
        .sum();
    write_msg(
        stream,
        &Msg::Report {
            report: Box::new(report),
        },
    )?;
    emit(cfg, ServerEvent::Finished { id, peer, bytes });
    Ok(())
}

fn listen_data(addr: SocketAddr, backlog: i32, spec: &TestSpec) -> Result<Socket, EngineError> {
    let s = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.cloexec(),
        Some(Protocol::TCP),
    )
    .map_err(|e| EngineError::io("create the data listener", e))?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    // Buffer sizes and congestion control set here are inherited by every
    // accepted flow, in time for the handshake's window scale.
    apply_common(&s, spec)?;
    s.bind(&SockAddr::from(addr))
        .map_err(|e| EngineError::io(format!("bind the data listener to {addr}"), e))?;
    s.listen(backlog)
        .map_err(|e| EngineError::io("listen for data flows", e))?;
    Ok(s)
}

/// Accepts the test's persistent flows; anything without the token is dropped.
fn accept_flows(
    listener: &Socket,
    token: &[u8; 16],
    spec: &TestSpec,
    want: usize,
    deadline: Instant,
) -> Result<Vec<Option<Socket>>, EngineError> {
    let roster = spec.roster();
    let mut socks: Vec<Option<Socket>> = (0..roster.len()).map(|_| None).collect();
    let mut got = 0;
    let fd = listener.as_raw_fd();
    while got < want {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(EngineError::Timeout(format!(
                "only {got} of {want} data flows connected in time"
            )));
        }
        if !sys::poll_readable(fd, left.as_millis().min(200) as i32).unwrap_or(false) {
            continue;
        }
        let Ok((s, _)) = listener.accept() else {
            continue;
        };
        s.set_read_timeout(Some(Duration::from_secs(2))).ok();
        let mut head = [0u8; DATA_PREAMBLE_LEN];
        if (&s).read_exact(&mut head).is_err() {
            continue;
        }
        let Some(id) = parse_data_preamble(&head, token) else {
            continue;
        };
        let Some(plan) = roster.get(id as usize) else {
            continue;
        };
        if plan.kind == FlowKind::Crr || socks[id as usize].is_some() {
            continue;
        }
        s.set_read_timeout(None).ok();
        if spec.nodelay || plan.kind == FlowKind::Probe {
            s.set_tcp_nodelay(true).ok();
        }
        if s.set_nonblocking(true).is_err() {
            continue;
        }
        socks[id as usize] = Some(s);
        got += 1;
    }
    Ok(socks)
}

/// Reads a key file: its bytes with surrounding whitespace trimmed.
pub fn read_key_file(path: &std::path::Path) -> Result<Vec<u8>, EngineError> {
    let raw = std::fs::read(path)
        .map_err(|e| EngineError::io(format!("read key file {}", path.display()), e))?;
    let key: Vec<u8> = raw.trim_ascii().to_vec();
    if key.len() < 16 {
        return Err(EngineError::Spec(format!(
            "key file {} holds {} bytes; use at least 16 (e.g. `head -c 32 /dev/urandom | base64 > key`)",
            path.display(),
            key.len()
        )));
    }
    Ok(key)
}
