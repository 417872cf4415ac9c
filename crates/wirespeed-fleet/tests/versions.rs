//! Every endpoint states the protocol versions it speaks, and a runner
//! and an agent that share none fail naming both releases and which one
//! to upgrade; an agent of a release that stated nothing still works.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;
use wirespeed_fleet::AgentSpec;
use wirespeed_fleet::protocol::{HEADER, statement};
use wirespeed_fleet::run::AgentClient;

/// A raw request's whole answer, headers included.
fn whole(addr: SocketAddr, req: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn header_of(answer: &str) -> Option<String> {
    let head = answer.split("\r\n\r\n").next()?;
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{HEADER}: ")))
        .map(str::to_string)
}

#[test]
fn every_answer_states_the_versions_and_a_foreign_one_is_refused_naming_both() {
    let a = agent("a");
    let addr = a.http_addr();
    for req in [
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        "GET /v1/facts HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        format!(
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{}\r\n",
            bearer()
        ),
    ] {
        let answer = whole(addr, &req);
        assert_eq!(header_of(&answer).as_deref(), Some(statement()), "{answer}");
    }
    let (_, m) = read(addr, "/metrics");
    let release = env!("CARGO_PKG_VERSION");
    assert!(
        m.contains(&format!("wirespeed_build_info{{release=\"{release}\",fleet_protocol=\"2\",control_protocol=\"1\"}} 1")),
        "{m}"
    );
    // A runner two releases ahead: refused before the key is looked at,
    // naming both sides and what to upgrade.
    let t = target(addr);
    let body = r#"{"peer":"b","spec":{}}"#;
    let extra = format!(
        "{HEADER}: fleet=7-8 control=5 release=9.0.0\r\n{}",
        signed(KEY, &t, "POST", "/v1/run", body)
    );
    let (st, msg) = post(addr, "/v1/run", &extra, body);
    assert_eq!(st, 400, "{msg}");
    for want in [
        format!("the agent (wirespeed {release}) speaks fleet protocol 2"),
        "the runner (wirespeed 9.0.0) speaks 7-8".to_string(),
        "upgrade the agent to wirespeed 9.0.0".to_string(),
    ] {
        assert!(msg.contains(&want), "{want:?} in {msg}");
    }
    // Stating this release's versions is no obstacle.
    let extra = format!("{HEADER}: {}\r\n{}", statement(), bearer());
    assert_eq!(get_with(addr, "/v1/facts", &extra).0, 200);
}

/// An HTTP server on loopback that answers every request with `healthz`
/// as the body of a 200, for `n` requests.
fn fake_agent(healthz: &'static str, n: usize) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut s, _)) = l.accept() else { return };
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{healthz}",
                healthz.len()
            );
        }
    });
    addr
}

fn client_of(addr: SocketAddr) -> AgentClient {
    let spec = AgentSpec {
        name: "x".into(),
        control: "127.0.0.1:1".into(),
        http: addr.to_string(),
        ..AgentSpec::default()
    };
    AgentClient::new(&spec, KEY, Duration::from_secs(5)).unwrap()
}

#[test]
fn a_runner_reads_the_agents_versions_before_it_signs_anything() {
    let rt = rt();
    let boot = "0123456789abcdef0123456789abcdef";
    // Two releases ahead of this runner.
    let addr = fake_agent(
        "ok x 0123456789abcdef0123456789abcdef fleet=7-8 control=5 release=9.0.0\n",
        1,
    );
    let e = rt.block_on(client_of(addr).health()).unwrap_err();
    let wirespeed_fleet::FleetError::Version { error, .. } = &e else {
        panic!("not a version error: {e:?}");
    };
    assert_eq!(error.older().role, "runner");
    let e = e.to_string();
    for want in [
        "the agent (wirespeed 9.0.0) speaks 7-8",
        "upgrade the runner to wirespeed 9.0.0",
    ] {
        assert!(e.contains(want), "{want:?} in {e}");
    }
    // A release from before the statements: it spoke fleet 2 and works.
    let addr = fake_agent("ok x 0123456789abcdef0123456789abcdef\n", 1);
    let t = rt.block_on(client_of(addr).health()).unwrap();
    assert_eq!((t.name.as_str(), t.boot.as_str()), ("x", boot));
}

/// The watcher's face states its versions too, and refuses a foreign
/// fleet protocol as the watcher (it once said "agent").
#[test]
fn the_watcher_states_its_versions_and_names_itself_when_it_refuses() {
    use std::sync::Arc;
    use wirespeed_fleet::watch_http::{Live, serve};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = Arc::new(tokio::sync::Notify::new());
    let page: wirespeed_fleet::watch_http::PageFn = Arc::new(|_| String::new());
    let (s2, live) = (stop.clone(), Arc::new(Live::default()));
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(serve(l, live, page, s2))
    });
    let ok = whole(
        addr,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(header_of(&ok).as_deref(), Some(statement()), "{ok}");
    let foreign = format!(
        "GET /v1/watch HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{HEADER}: fleet=7-8 control=5 release=9.0.0\r\n\r\n"
    );
    let answer = whole(addr, &foreign);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("the watcher (wirespeed "), "{answer}");
    // The server thread ends with the test binary.
    drop((stop, server));
}
