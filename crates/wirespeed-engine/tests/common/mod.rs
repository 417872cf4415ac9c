//! Shared by the engine's integration tests: an in-process server.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use wirespeed_engine::{ClientConfig, EngineError, Server, ServerConfig, run_test};
use wirespeed_types::TestSpec;
use wirespeed_types::result::TestResult;

/// A server on 127.0.0.1 with a free port, stopped on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(cfg: ServerConfig) -> TestServer {
        let server = Server::bind(ServerConfig {
            bind: "127.0.0.1".parse().unwrap(),
            port: 0,
            ..cfg
        })
        .unwrap();
        let addr = server.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let handle = Some(std::thread::spawn(move || server.serve(s2).unwrap()));
        TestServer { addr, stop, handle }
    }

    pub fn client(&self) -> ClientConfig {
        ClientConfig::new(&self.addr.to_string())
    }

    pub fn run(&self, spec: &TestSpec) -> Result<TestResult, EngineError> {
        run_test(&self.client(), spec, &mut |_| {})
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};
use wirespeed_engine::proto::{
    CONTROL_MAGIC, Msg, PROTOCOL_VERSION, auth_mac, data_preamble, read_msg_max, unhex, write_msg,
};

/// Connects a raw control connection with a 5 s read timeout.
pub fn raw_connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Reads one server message (reports may be large).
pub fn recv(s: &mut TcpStream) -> Result<Msg, EngineError> {
    read_msg_max(s, wirespeed_engine::proto::MAX_REPORT_FRAME)
}

/// A hand-driven handshake up to the welcome; the server's answer if not.
pub fn handshake(addr: SocketAddr, key: Option<&[u8]>, name: &str) -> Result<TcpStream, Msg> {
    let mut s = raw_connect(addr);
    let fail = |e: EngineError| Msg::error("test", e.to_string());
    s.write_all(&CONTROL_MAGIC)
        .map_err(|e| fail(EngineError::io("magic", e)))?;
    write_msg(
        &mut s,
        &Msg::Hello {
            version: PROTOCOL_VERSION,
            min_version: None,
            client: name.into(),
        },
    )
    .map_err(fail)?;
    let nonce = match recv(&mut s).map_err(fail)? {
        Msg::Challenge { nonce, .. } => unhex(&nonce).unwrap(),
        m => return Err(m),
    };
    let mac = key.map(|k| auth_mac(k, &nonce));
    write_msg(&mut s, &Msg::Auth { mac }).map_err(fail)?;
    match recv(&mut s).map_err(fail)? {
        Msg::Welcome { .. } => Ok(s),
        m => Err(m),
    }
}

/// Sends a spec on an authenticated connection; returns (token, data port).
pub fn send_spec(s: &mut TcpStream, spec: &TestSpec) -> ([u8; 16], u16) {
    write_msg(
        s,
        &Msg::Spec {
            spec: Box::new(spec.clone()),
        },
    )
    .unwrap();
    match recv(s).unwrap() {
        Msg::Accepted { token, data_port } => {
            (unhex(&token).unwrap().try_into().unwrap(), data_port)
        }
        m => panic!("expected accepted, got {m:?}"),
    }
}

/// Connects `n` data flows with valid preambles (ids from 0).
pub fn connect_flows(
    ip: std::net::IpAddr,
    port: u16,
    token: &[u8; 16],
    ids: std::ops::Range<u32>,
) -> Vec<TcpStream> {
    ids.map(|id| {
        let mut d = TcpStream::connect((ip, port)).unwrap();
        d.write_all(&data_preamble(token, id)).unwrap();
        d
    })
    .collect()
}

/// Polls `cond` every 20 ms until it holds or `limit` passes; returns
/// whether it held.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Waits (at most 10 s) until the server on control port `port` has
/// closed every control connection it accepted (their threads are done
/// with them, and so with the tests they ran); panics naming `what`.
pub fn wait_control_closed(port: u16, what: &str) {
    assert!(
        wait_for(Duration::from_secs(10), || ports::connections_on(
            "self", port
        ) == 0),
        "{what}: {} control connections still open on port {port} after 10 s",
        ports::connections_on("self", port)
    );
}

mod ports;
#[allow(unused_imports)]
pub use ports::{connections_on, listening_ports};

/// A TCP connection to `to` from local address `from` (e.g. 127.0.0.2,
/// to act as another host over loopback).
pub fn connect_from(from: &str, to: SocketAddr) -> Option<TcpStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    let local: SocketAddr = format!("{from}:0").parse().ok()?;
    s.bind(&SockAddr::from(local)).ok()?;
    s.connect_timeout(&SockAddr::from(to), Duration::from_secs(2))
        .ok()?;
    Some(s.into())
}
