//! What the agent tests share: agents on loopback, raw HTTP/1.1, signed
//! and bearer requests.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use wirespeed_fleet::agent::{AgentConfig, HttpLimits};
use wirespeed_fleet::auth::{self, Target};
use wirespeed_fleet::run::AgentClient;
use wirespeed_fleet::{Agent, AgentSpec, Fleet};
use wirespeed_types::TestSpec;

/// The fleet key of the tests.
pub const KEY: &[u8] = b"fleet-test-key-0123456789";

/// An agent's config on loopback (any free ports), 1 s header deadline.
pub fn config(name: &str) -> AgentConfig {
    let mut cfg = AgentConfig::new(name, KEY.to_vec());
    cfg.server.bind = "127.0.0.1".parse().unwrap();
    cfg.server.port = 0;
    cfg.http = "127.0.0.1:0".parse().unwrap();
    cfg.limits = HttpLimits {
        header_timeout: Duration::from_secs(1),
        max_per_source: 64,
        ..HttpLimits::default()
    };
    cfg
}

/// A started agent of [`config`].
pub fn agent(name: &str) -> Agent {
    Agent::start(config(name)).expect("agent starts")
}

/// An agent whose header deadline (60 s) outlasts a test: slow clients
/// stay until they are displaced.
pub fn patient_agent(name: &str) -> Agent {
    let mut cfg = config(name);
    cfg.limits = HttpLimits {
        header_timeout: Duration::from_secs(60),
        ..HttpLimits::default()
    };
    Agent::start(cfg).expect("agent starts")
}

/// Agents a and b, each given the fleet of both.
pub struct Pair {
    /// Agent a.
    pub a: Agent,
    /// Agent b.
    pub b: Agent,
    /// The fleet of both.
    pub fleet: Fleet,
}

/// Starts a [`Pair`] and pushes the fleet to both.
pub fn pair() -> Pair {
    let (a, b) = (agent("a"), agent("b"));
    let fleet = Fleet {
        agents: vec![spec_of("a", &a), spec_of("b", &b)],
    };
    let rt = rt();
    for x in &fleet.agents {
        let c = AgentClient::new(x, KEY, Duration::from_secs(5)).unwrap();
        assert!(rt.block_on(c.push_fleet(&fleet)).unwrap());
    }
    Pair { a, b, fleet }
}

/// The fleet entry of agent `a` named `name`.
pub fn spec_of(name: &str, a: &Agent) -> AgentSpec {
    AgentSpec {
        name: name.into(),
        control: a.control_addr().to_string(),
        http: a.http_addr().to_string(),
        ..AgentSpec::default()
    }
}

/// A half-second stream test.
pub fn short_spec() -> TestSpec {
    TestSpec {
        duration_s: 0.5,
        warmup_s: 0.1,
        ..TestSpec::default()
    }
}

/// A current-thread runtime for the async client.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A raw HTTP/1.1 request; (status, body).
pub fn raw(addr: SocketAddr, req: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// `GET path` with `extra` header lines (each ending in CRLF).
pub fn get_with(addr: SocketAddr, path: &str, extra: &str) -> (u16, String) {
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n"),
    )
}

/// `GET path` without credentials.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    get_with(addr, path, "")
}

/// `GET path` with the fleet's bearer token.
pub fn read(addr: SocketAddr, path: &str) -> (u16, String) {
    get_with(addr, path, &bearer())
}

/// The bearer token's header line.
pub fn bearer() -> String {
    format!("Authorization: Bearer {}\r\n", auth::bearer_token(KEY))
}

/// `POST path` with `extra` header lines and a JSON body.
pub fn post(addr: SocketAddr, path: &str, extra: &str, body: &str) -> (u16, String) {
    raw(
        addr,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Who the agent at `addr` is, from its `/healthz` (`ok NAME BOOT`, then
/// its protocol statement).
pub fn target(addr: SocketAddr) -> Target {
    let (st, body) = get(addr, "/healthz");
    assert_eq!(st, 200, "{body}");
    let w: Vec<&str> = body.split_whitespace().collect();
    assert!(w.len() >= 3, "{body}");
    Target {
        name: w[1].into(),
        boot: w[2].into(),
    }
}

/// Header lines signing `method path body` with `key` for `t` (`path`:
/// the request target, any `?query` included).
pub fn signed(key: &[u8], t: &Target, method: &str, path: &str, body: &str) -> String {
    auth::sign(key, t, method, path, body.as_bytes())
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect()
}

/// Counter value of `name{labels}` in a metrics page (0 when absent).
pub fn counter(page: &str, name: &str, label: &str) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(name) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
