//! The locked agent, attacked on loopback: nothing but `/healthz`
//! without the key (and no host fact in the refusal), replays to the same
//! agent, to another agent and to a restarted agent refused, a signature
//! that does not cover the query string sent refused, an invalid
//! spec refused before anything runs, and slow-loris connections, slow
//! bodies and huge requests that do not keep normal requests out.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use wirespeed_fleet::agent::RunRequest;
use wirespeed_fleet::run::AgentClient;
use wirespeed_fleet::{Agent, Fleet};

/// Words of the host's facts a refusal must not tell: kernel release,
/// host name, interface names.
fn host_words() -> Vec<String> {
    let mut w = Vec::new();
    for f in ["/proc/sys/kernel/osrelease", "/proc/sys/kernel/hostname"] {
        if let Ok(s) = std::fs::read_to_string(f) {
            w.push(s.trim().to_string());
        }
    }
    if let Ok(d) = std::fs::read_dir("/sys/class/net") {
        w.extend(
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned()),
        );
    }
    w.retain(|s| !s.is_empty());
    w
}

/// Whether `body` holds `word` as a whole word.
fn tells(body: &str, word: &str) -> bool {
    body.split(|c: char| c.is_whitespace() || "\"',:;(){}[]=".contains(c))
        .any(|t| t == word)
}

fn run_body(peer: &str) -> String {
    serde_json::to_string(&RunRequest {
        peer: peer.into(),
        spec: short_spec(),
        label: None,
    })
    .unwrap()
}

#[test]
fn no_endpoint_but_healthz_answers_without_the_key_and_refusals_tell_nothing() {
    let Pair { a, .. } = pair();
    let addr = a.http_addr();
    let words = host_words();
    assert!(!words.is_empty());
    let wrong = format!(
        "Authorization: Bearer {}\r\n",
        wirespeed_fleet::auth::bearer_token(b"not-the-fleet-key-at-all")
    );
    for path in ["/metrics", "/v1/facts", "/v1/results", "/v1/results/1"] {
        for extra in ["", wrong.as_str(), "Authorization: Basic YTpi\r\n"] {
            let (st, body) = get_with(addr, path, extra);
            assert_eq!(st, 401, "{path} {extra:?}: {body}");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            let e = v["error"].as_str().unwrap();
            assert!(e.contains("key") || e.contains("Bearer"), "{body}");
            for w in &words {
                assert!(!tells(&body, w), "{path}: the refusal tells {w:?}: {body}");
            }
        }
        // With the token it answers (so the check above meant something).
        assert_eq!(
            read(addr, path).0,
            if path == "/v1/results/1" { 404 } else { 200 }
        );
    }
    let (_, facts) = read(addr, "/v1/facts");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(facts.contains(kernel.trim()), "the facts tell the kernel");
    // The token reads only: it starts nothing and sets no fleet.
    let body = run_body("b");
    let (st, msg) = post(addr, "/v1/run", &bearer(), &body);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("only reads"), "{msg}");
    let put = format!(
        "PUT /v1/fleet HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{}Content-Length: 2\r\n\r\n{{}}",
        bearer()
    );
    assert_eq!(raw(addr, &put).0, 401);
    // /healthz tells the name, boot id and protocol versions, nothing else.
    let (st, h) = get(addr, "/healthz");
    assert_eq!(st, 200);
    let t = target(addr);
    assert_eq!(
        h,
        format!(
            "ok a {} {}\n",
            t.boot,
            wirespeed_fleet::protocol::statement()
        )
    );
    let (_, m) = read(addr, "/metrics");
    assert!(
        counter(&m, "wirespeed_refusals_total", "unauthenticated") >= 14.0,
        "{m}"
    );
}

#[test]
fn metrics_open_serves_metrics_only() {
    let mut cfg = config("a");
    cfg.metrics_open = true;
    let a = Agent::start(cfg).unwrap();
    let (st, m) = get(a.http_addr(), "/metrics");
    assert_eq!(st, 200);
    assert!(m.contains("wirespeed_host_info"), "{m}");
    for path in ["/v1/facts", "/v1/results"] {
        assert_eq!(get(a.http_addr(), path).0, 401, "{path}");
    }
}

#[test]
fn a_signed_read_replayed_to_the_same_agent_is_refused() {
    let a = agent("a");
    let t = target(a.http_addr());
    let extra = signed(KEY, &t, "GET", "/v1/results", "");
    let (st, body) = get_with(a.http_addr(), "/v1/results", &extra);
    assert_eq!((st, body.trim()), (200, "[]"));
    let (st, msg) = get_with(a.http_addr(), "/v1/results", &extra);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("replay refused"), "{msg}");
    // Signed over another path: refused too.
    let (st, msg) = get_with(a.http_addr(), "/v1/facts", &extra);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("wrong signature"), "{msg}");
}

#[test]
fn a_request_signed_for_a_path_is_refused_with_a_query_added() {
    let Pair { a, .. } = pair();
    let addr = a.http_addr();
    let t = target(addr);
    // Signed for /v1/run, sent to /v1/run?x=1: refused, nothing runs.
    let body = run_body("b");
    let extra = signed(KEY, &t, "POST", "/v1/run", &body);
    let (st, msg) = post(addr, "/v1/run?x=1", &extra, &body);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("wrong signature"), "{msg}");
    assert_eq!(read(addr, "/v1/results").1.trim(), "[]");
    // A read signed for its whole target, query and all: refused with the
    // query dropped or changed, answered as signed.
    let extra = signed(KEY, &t, "GET", "/v1/results?x=1", "");
    for other in ["/v1/results", "/v1/results?x=2"] {
        let (st, msg) = get_with(addr, other, &extra);
        assert_eq!(st, 401, "{other}: {msg}");
        assert!(msg.contains("wrong signature"), "{other}: {msg}");
    }
    let (st, body) = get_with(addr, "/v1/results?x=1", &extra);
    assert_eq!((st, body.trim()), (200, "[]"));
}

#[test]
fn a_request_signed_for_agent_a_is_refused_by_agent_b() {
    let Pair { a, b, .. } = pair();
    let body = run_body("b");
    let ta = target(a.http_addr());
    let extra = signed(KEY, &ta, "POST", "/v1/run", &body);
    let (st, msg) = post(b.http_addr(), "/v1/run", &extra, &body);
    assert_eq!(st, 403, "{msg}");
    let e: serde_json::Value = serde_json::from_str(&msg).unwrap();
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("signed for agent \"a\""),
        "{msg}"
    );
    // The name in the header changed to b's: the signature breaks.
    let forged = extra.replace("x-wirespeed-agent: a\r\n", "x-wirespeed-agent: b\r\n");
    assert_ne!(forged, extra);
    let (st, msg) = post(b.http_addr(), "/v1/run", &forged, &body);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("wrong signature"), "{msg}");
    assert_eq!(read(b.http_addr(), "/v1/results").1.trim(), "[]");
    let (_, m) = read(b.http_addr(), "/metrics");
    assert_eq!(
        counter(&m, "wirespeed_refusals_total", "wrong_agent"),
        1.0,
        "{m}"
    );
    // The same request to a, as signed, runs (peer a -> b is in its fleet):
    // it was a valid request, only for another agent.
    let body_a = run_body("b");
    let extra_a = signed(KEY, &ta, "POST", "/v1/run", &body_a);
    let (st, msg) = post(a.http_addr(), "/v1/run", &extra_a, &body_a);
    assert_eq!(st, 202, "{msg}");
}

#[test]
fn the_controller_signs_for_the_name_the_agent_runs_as() {
    let a = agent("host-a");
    let rt = rt();
    // The fleet calls it x: without agent_name the client names both.
    let mut entry = spec_of("x", &a);
    let c = AgentClient::new(&entry, KEY, Duration::from_secs(5)).unwrap();
    let e = rt.block_on(c.record(1)).unwrap_err().to_string();
    assert!(
        e.contains("runs as \"host-a\"") && e.contains("agent_name = \"host-a\""),
        "{e}"
    );
    // With agent_name (as k8s run sets it to the pod's name) it signs for it.
    entry.agent_name = Some("host-a".into());
    let c = AgentClient::new(&entry, KEY, Duration::from_secs(5)).unwrap();
    let e = rt.block_on(c.record(1)).unwrap_err();
    assert_eq!(e.fault(), Some(wirespeed_fleet::Fault::NotFound), "{e}");
    let e = e.to_string();
    assert!(e.contains("404") && e.contains("no test 1"), "{e}");
}

#[test]
fn a_restarted_agent_refuses_what_it_accepted_before() {
    let a = agent("a");
    let http = a.http_addr();
    let fleet = Fleet {
        agents: vec![spec_of("a", &a)],
    };
    let body = serde_json::to_string(&fleet).unwrap();
    let t = target(http);
    let put = format!(
        "PUT /v1/fleet HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n{}Content-Length: {}\r\n\r\n{body}",
        signed(KEY, &t, "PUT", "/v1/fleet", &body),
        body.len()
    );
    assert_eq!(raw(http, &put).0, 204);
    assert_eq!(raw(http, &put).0, 401, "replayed to the same start");
    let client = AgentClient::new(&fleet.agents[0], KEY, Duration::from_secs(5)).unwrap();
    let rt = rt();
    assert!(rt.block_on(client.push_fleet(&fleet)).unwrap());
    drop(a);
    // The same name, key and HTTP address: a restart.
    let mut cfg = config("a");
    cfg.http = http;
    let a2 = Agent::start(cfg).unwrap();
    let (st, msg) = raw(http, &put);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("earlier start"), "{msg}");
    assert_ne!(target(http).boot, t.boot);
    // The controller's client learns the new boot id and goes on.
    assert!(rt.block_on(client.push_fleet(&fleet)).unwrap());
    drop(a2);
}

/// A signed `PUT path` of `body` to the agent at `http`.
fn put_signed(http: SocketAddr, path: &str, body: &str) -> (u16, String) {
    let t = target(http);
    raw(
        http,
        &format!(
            "PUT {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n{}Content-Length: {}\r\n\r\n{body}",
            signed(KEY, &t, "PUT", path, body),
            body.len()
        ),
    )
}

// A fleet in parts over HTTP: a part that contradicts its upload gets
// 400, the first part 202, the last installs the fleet (a run to its
// peer is then let through, where before it got 403); an unsigned part
// gets 401 and an agent pinned with --fleet 409.
#[test]
fn a_fleet_in_parts_installs_on_its_last_part_and_lies_are_refused() {
    let (a, b) = (agent("a"), agent("b"));
    let http = a.http_addr();
    let fleet = Fleet {
        agents: vec![spec_of("a", &a), spec_of("b", &b)],
    };
    // A body limit with room for one agent (and the part's 200 bytes)
    // puts each agent in a part of its own.
    let one = serde_json::to_vec(&fleet.agents[0]).unwrap().len();
    let parts = wirespeed_fleet::upload::split(&fleet, one + 211).unwrap();
    assert_eq!(parts.len(), 2);
    let json = |p: &wirespeed_fleet::upload::FleetPart| serde_json::to_string(p).unwrap();
    let run = |peer: &str| {
        let body = run_body(peer);
        post(
            http,
            "/v1/run",
            &signed(KEY, &target(http), "POST", "/v1/run", &body),
            &body,
        )
        .0
    };
    assert_eq!(run("b"), 403, "no fleet yet");
    let mut lie = parts[0].clone();
    lie.index = 7;
    assert_eq!(put_signed(http, "/v1/fleet/part", &json(&lie)).0, 400);
    let (st, body) = put_signed(http, "/v1/fleet/part", &json(&parts[0]));
    assert_eq!(st, 202, "{body}");
    assert!(body.contains("\"of\":2"), "{body}");
    assert_eq!(put_signed(http, "/v1/fleet/part", "{\"upload\": 1}").0, 400);
    assert_eq!(run("b"), 403, "half a fleet installs nothing");
    assert_eq!(put_signed(http, "/v1/fleet/part", &json(&parts[1])).0, 204);
    assert_eq!(run("b"), 202, "the assembled fleet holds b");
    let unsigned = format!(
        "PUT /v1/fleet/part HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
        json(&parts[0]).len(),
        json(&parts[0])
    );
    assert_eq!(raw(http, &unsigned).0, 401);
    let mut cfg = config("p");
    cfg.fleet = Some(fleet.clone());
    let pinned = Agent::start(cfg).unwrap();
    assert_eq!(
        put_signed(pinned.http_addr(), "/v1/fleet/part", &json(&parts[0])).0,
        409
    );
    drop((a, b, pinned));
}

#[test]
fn an_invalid_spec_is_refused_before_anything_runs() {
    let Pair { a, fleet, .. } = pair();
    let c = AgentClient::new(&fleet.agents[0], KEY, Duration::from_secs(5)).unwrap();
    let rt = rt();
    for (tweak, want) in [
        (
            (|s: &mut wirespeed_types::TestSpec| s.duration_s = -1.0) as fn(&mut _),
            "duration must be > 0",
        ),
        (|s| s.flows = 0, "flows must be at least 1"),
        (|s| s.msg_size = 0, "message size 0"),
    ] {
        let mut spec = short_spec();
        tweak(&mut spec);
        let req = RunRequest {
            peer: "b".into(),
            spec,
            label: None,
        };
        let e = rt.block_on(c.start(&req)).unwrap_err().to_string();
        assert!(e.contains("400") && e.contains(want), "{e}");
    }
    assert_eq!(read(a.http_addr(), "/v1/results").1.trim(), "[]");
}

/// Loopback address number `i` (127.1.x.y): a source of its own.
fn source(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 1, (i / 250) as u8, (i % 250 + 1) as u8))
}

/// Connects from `from` to `to` and writes `first`; reads time out
/// after 5 s.
fn open_from(
    rt: &tokio::runtime::Runtime,
    from: IpAddr,
    to: SocketAddr,
    first: &[u8],
) -> TcpStream {
    let s = rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind(SocketAddr::new(from, 0)).unwrap();
        s.connect(to).await.unwrap().into_std().unwrap()
    });
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    (&s).write_all(first).unwrap();
    s
}

/// What `s` says next (empty when it closed).
fn next_words(s: &mut TcpStream) -> std::io::Result<String> {
    let mut b = [0u8; 256];
    let n = s.read(&mut b)?;
    Ok(String::from_utf8_lossy(&b[..n]).into_owned())
}

fn metric(addr: SocketAddr, name: &str) -> f64 {
    let (st, m) = read(addr, "/metrics");
    assert_eq!(st, 200, "{m}");
    counter(&m, name, "")
}

/// 30 requests, half with the bearer token, half signed; each must be
/// answered 200. Their wall time.
fn thirty_normal_requests(addr: SocketAddr) -> Duration {
    let t0 = Instant::now();
    let who = target(addr);
    for i in 0..30 {
        let (st, body) = if i % 2 == 0 {
            read(addr, "/v1/results")
        } else {
            get_with(
                addr,
                "/v1/results",
                &signed(KEY, &who, "GET", "/v1/results", ""),
            )
        };
        assert_eq!(st, 200, "request {i}: {body}");
    }
    t0.elapsed()
}

#[test]
fn three_hundred_slow_loris_sources_do_not_keep_normal_requests_out() {
    // The slow ones stay for the whole test: only displacing them makes room.
    let a = patient_agent("a");
    let addr = a.http_addr();
    let rt = rt();
    let t0 = Instant::now();
    let slow: Vec<_> = (0..300)
        .map(|i| {
            open_from(
                &rt,
                source(i),
                addr,
                b"GET /v1/results HTTP/1.1\r\nHost: x\r\n",
            )
        })
        .collect();
    // Ready when the agent took all 300: 44 displaced beyond its 256, plus
    // one for each of these reads.
    let mut reads = 0.0;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        reads += 1.0;
        let evicted = metric(addr, "wirespeed_http_evictions_total");
        if evicted >= 44.0 + reads {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the agent took {evicted} - {reads} of 300"
        );
    }
    let took = thirty_normal_requests(addr);
    eprintln!(
        "300 slow-loris sources: 30 normal requests answered in {took:?} ({:?} from the first connection)",
        t0.elapsed()
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The slow ones that are left still wait, none was answered.
    assert!(metric(addr, "wirespeed_http_connections") >= 200.0);
    drop(slow);
}

#[test]
fn slow_loris_from_one_source_displaces_only_its_own() {
    let a = patient_agent("a");
    let addr = a.http_addr();
    let rt = rt();
    // Source 0 opens 40 slow connections (16 allowed per source); the rest
    // of the table is not touched: 16 stay.
    let slow: Vec<_> = (0..40)
        .map(|_| open_from(&rt, source(0), addr, b"GET / HTTP/1.1\r\n"))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(addr, "wirespeed_http_evictions_total") < 24.0 {
        assert!(Instant::now() < deadline, "the agent did not take the 40");
    }
    for (i, mut s) in slow.into_iter().enumerate() {
        if i < 24 {
            // The oldest 24 were closed (no answer, and no time-out) ...
            match next_words(&mut s) {
                Ok(w) => assert!(w.is_empty(), "slow {i}: {w:?}"),
                Err(e) => assert!(
                    !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    "slow {i} is still open"
                ),
            }
            continue;
        }
        // ... the newest 16 are still served when they end their headers.
        s.write_all(b"Host: x\r\n\r\n").unwrap();
        let got = next_words(&mut s).unwrap();
        assert!(got.starts_with("HTTP/1.1 404"), "slow {i}: {got:?}");
    }
    thirty_normal_requests(addr);
}

#[test]
fn slow_bodies_hold_no_place_in_flight() {
    let a = agent("a");
    let addr = a.http_addr();
    let rt = rt();
    // 70 requests (more than the 64 in flight) whose body never ends;
    // each waits for the agent's 100 Continue, proof that it is reading
    // the body, not refused 503.
    let head =
        "PUT /v1/fleet HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n";
    let slow: Vec<_> = (0..70)
        .map(|i| {
            let mut c = open_from(&rt, source(i), addr, head.as_bytes());
            let got = next_words(&mut c).expect("an answer to the head");
            assert!(got.starts_with("HTTP/1.1 100"), "slow body {i}: {got:?}");
            c.write_all(b"{\"agent\": [").unwrap();
            c
        })
        .collect();
    thirty_normal_requests(addr);
    drop(slow);
}

#[test]
fn huge_requests_are_refused_and_hold_nothing() {
    let a = agent("a");
    let addr = a.http_addr();
    // A declared body over the limit: 413 before it is read.
    let (st, _) = post(addr, "/v1/run", "", &"x".repeat(200_000));
    assert_eq!(st, 413);
    // A chunked body that never says its size: cut at the limit, 413.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t = target(addr);
    write!(
        s,
        "PUT /v1/fleet HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{}Transfer-Encoding: chunked\r\n\r\n",
        signed(KEY, &t, "PUT", "/v1/fleet", "")
    )
    .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 16384, "y".repeat(16384));
    // 80 KiB sent, no end: the agent reads all of it and stops at 64.
    for _ in 0..5 {
        if s.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 413"), "{out:?}");
    // Headers of a megabyte: refused (431) or cut, never served.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = write!(
        s,
        "GET /v1/results HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "z".repeat(1 << 20)
    );
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || out.starts_with("HTTP/1.1 431"), "{out:?}");
    thirty_normal_requests(addr);
}
