//! The agent's HTTP API against real agents on loopback: the key,
//! the fleet boundary, Prometheus metrics (checked by promtool), slow and
//! oversized requests, and a small matrix run by the controller.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use wirespeed_fleet::agent::{RunRequest, RunState};
use wirespeed_fleet::run::{AgentClient, RunOptions, WorkloadSpec};
use wirespeed_fleet::{Fleet, Pattern};
use wirespeed_types::PathSpec;

#[test]
fn run_without_or_with_a_wrong_key_is_refused_and_starts_no_traffic() {
    let p = pair();
    let body = serde_json::to_string(&RunRequest {
        peer: "b".into(),
        spec: short_spec(),
        label: None,
    })
    .unwrap();
    let (st, msg) = post(p.a.http_addr(), "/v1/run", "", &body);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("made with the fleet key"), "{msg}");
    // Signed with another key.
    let t = target(p.a.http_addr());
    let extra = signed(b"not-the-fleet-key-at-all", &t, "POST", "/v1/run", &body);
    let (st, msg) = post(p.a.http_addr(), "/v1/run", &extra, &body);
    assert_eq!(st, 401, "{msg}");
    assert!(msg.contains("wrong signature"), "{msg}");
    // The right key, but the body changed after signing.
    let extra = signed(KEY, &t, "POST", "/v1/run", &body);
    let tampered = body.replace("0.5", "60.0");
    let (st, _) = post(p.a.http_addr(), "/v1/run", &extra, &tampered);
    assert_eq!(st, 401);
    // Nothing ran: no result on a, no test served by b.
    assert_eq!(read(p.a.http_addr(), "/v1/results").1.trim(), "[]");
    let (_, m) = read(p.b.http_addr(), "/metrics");
    assert_eq!(
        counter(&m, "wirespeed_tests_total", "role=\"server\""),
        0.0,
        "{m}"
    );
    let (_, m) = read(p.a.http_addr(), "/metrics");
    assert_eq!(
        counter(&m, "wirespeed_refusals_total", "unauthenticated"),
        3.0,
        "{m}"
    );
    // A signed request replayed is refused the second time.
    let first = post(p.a.http_addr(), "/v1/run", &extra, &body);
    assert_eq!(first.0, 202, "{}", first.1);
    let (st, msg) = post(p.a.http_addr(), "/v1/run", &extra, &body);
    assert_eq!(st, 401);
    assert!(msg.contains("replay"), "{msg}");
    let _ = p.fleet;
}

#[test]
fn a_peer_outside_the_fleet_is_refused_with_403() {
    let p = pair();
    let rt = rt();
    let c = AgentClient::new(&p.fleet.agents[0], KEY, Duration::from_secs(5)).unwrap();
    let mut req = RunRequest {
        peer: "mallory".into(),
        spec: short_spec(),
        label: None,
    };
    let e = rt.block_on(c.start(&req)).unwrap_err();
    assert!(
        matches!(e, wirespeed_fleet::FleetError::Status { status: 403, .. }),
        "{e:?}"
    );
    assert_eq!(e.fault(), Some(wirespeed_fleet::Fault::Refused));
    let e = e.to_string();
    assert!(
        e.contains("403") && e.contains("not in this agent's fleet"),
        "{e}"
    );
    // A fleet peer, but a path to an address that is not the peer's.
    req.peer = "b".into();
    req.spec.paths = vec![PathSpec {
        local: None,
        remote: "192.0.2.7".into(),
    }];
    let e = rt.block_on(c.start(&req)).unwrap_err().to_string();
    assert!(
        e.contains("403") && e.contains("not an address of peer"),
        "{e}"
    );
    assert_eq!(read(p.a.http_addr(), "/v1/results").1.trim(), "[]");
}

// Interference across agents on loopback: the victim (b) to a's server,
// alone and beside K=2 stream loaders run by c; every point measured,
// a goodput per loader flow.
#[test]
fn a_victim_is_measured_alone_and_beside_loaders_on_another_agent() {
    use wirespeed_fleet::interference::{Plan, Roles, run_blocking};
    let (a, b, c) = (agent("a"), agent("b"), agent("c"));
    let fleet = Fleet {
        agents: vec![spec_of("a", &a), spec_of("b", &b), spec_of("c", &c)],
    };
    let victim = wirespeed_types::TestSpec {
        workload: wirespeed_types::Workload::Rr,
        duration_s: 0.5,
        warmup_s: 0.2,
        ..wirespeed_types::TestSpec::default()
    };
    let plan = Plan {
        victim,
        loader: wirespeed_types::Workload::Stream,
        ks: vec![0, 2],
        sizes: vec![4096],
    };
    let roles = Roles {
        server: 0,
        victim: 1,
        loaders: vec![2],
    };
    let opts = RunOptions::new(Vec::new(), KEY.to_vec());
    let seen = std::sync::Mutex::new(Vec::new());
    let r = run_blocking(&fleet, &roles, &plan, &opts, &|size, p| {
        seen.lock().unwrap().push((size, p.k));
    })
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), [(4096, 0), (4096, 2)]);
    let pts = &r.curves[0].points;
    assert!(
        pts.iter().all(|p| p.victim_tps > 0.0 && p.p99_us > 0.0),
        "{pts:?}"
    );
    assert!(pts[0].loader_bps.is_empty());
    assert_eq!(pts[1].loader_bps.len(), 2, "a flow per loader");
    assert!(
        pts[1].loader_bps.iter().all(|b| *b > 0.0),
        "{:?}",
        pts[1].loader_bps
    );
    assert_eq!(pts[1].victim.spec.request_size, 4096);
    // K loaders with nobody to run them: refused before any test.
    let alone = Roles {
        loaders: vec![],
        ..roles
    };
    let e = run_blocking(&fleet, &alone, &plan, &opts, &|_, _| {}).unwrap_err();
    assert!(e.to_string().contains("need an agent besides"), "{e}");
}

// The probe k8s run's --policy-load waits on: a connection to a fleet
// peer's HTTP port, reached or not, and nothing outside the fleet.
#[test]
fn a_probe_reaches_fleet_peers_only() {
    let p = pair();
    let rt = rt();
    let c = AgentClient::new(&p.fleet.agents[0], KEY, Duration::from_secs(5)).unwrap();
    let wait = Duration::from_millis(500);
    let ok = rt.block_on(c.probe("b", wait)).unwrap();
    let b_http = p.b.http_addr().to_string();
    assert!(ok.reached && ok.detail.contains(&b_http), "{ok:?}");
    let e = rt
        .block_on(c.probe("mallory", wait))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("403") && e.contains("not in this agent's fleet"),
        "{e}"
    );
    let (st, msg) = post(p.a.http_addr(), "/v1/probe", "", r#"{"peer":"b"}"#);
    assert_eq!(st, 401, "no key, no probe: {msg}");
    let t = target(p.a.http_addr());
    for (body, want) in [
        (r#"{"peer":"b","wait_ms":60000}"#, "give 1 to 5000"),
        (r#"{"peer":"b","port":80}"#, "not a probe request"),
    ] {
        let extra = signed(KEY, &t, "POST", "/v1/probe", body);
        let (st, msg) = post(p.a.http_addr(), "/v1/probe", &extra, body);
        assert!(st == 400 && msg.contains(want), "{st} {msg}");
    }
    // b gone: its port refuses, and the answer says so (not an error).
    drop(p.b);
    let gone = rt.block_on(c.probe("b", wait)).unwrap();
    assert!(!gone.reached && gone.detail.contains(&b_http), "{gone:?}");
}

#[test]
fn a_keyed_run_measures_and_metrics_pass_promtool() {
    let p = pair();
    let rt = rt();
    let c = AgentClient::new(&p.fleet.agents[0], KEY, Duration::from_secs(5)).unwrap();
    let id = rt
        .block_on(c.start(&RunRequest {
            peer: "b".into(),
            spec: short_spec(),
            label: Some("stream".into()),
        }))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let rec = loop {
        let r = rt.block_on(c.record(id)).unwrap();
        if r.state != RunState::Running {
            break r;
        }
        assert!(Instant::now() < deadline, "the test did not end");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(rec.state, RunState::Done, "{:?}", rec.error);
    assert!(rec.result.unwrap().throughput_bps > 1e6);
    let (st, facts) = read(p.a.http_addr(), "/v1/facts");
    assert_eq!(st, 200);
    assert!(facts.contains("\"links\""), "{facts}");
    let (st, m) = read(p.a.http_addr(), "/metrics");
    assert_eq!(st, 200);
    for want in [
        "wirespeed_link_throughput_bytes_per_second{",
        "peer=\"b\"",
        "workload=\"stream\"",
        "wirespeed_tests_total{",
        "wirespeed_nic_mtu_bytes{nic=",
        "wirespeed_host_info{",
        "congestion_control=",
    ] {
        assert!(m.contains(want), "no {want} in\n{m}");
    }
    assert_eq!(
        counter(&m, "wirespeed_tests_total", "outcome=\"ok\""),
        1.0,
        "{m}"
    );
    let (_, mb) = read(p.b.http_addr(), "/metrics");
    assert_eq!(
        counter(&mb, "wirespeed_tests_total", "role=\"server\""),
        1.0,
        "{mb}"
    );
    match std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Err(_) => {
            let why = "promtool is missing (apt-get install prometheus)";
            wirespeed_testkit::require(false, why, "promtool check metrics");
        }
        Ok(mut child) => {
            child.stdin.take().unwrap().write_all(m.as_bytes()).unwrap();
            let out = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.status.success() && text.trim().is_empty(),
                "promtool: {text}\n{m}"
            );
        }
    }
}

#[test]
fn slow_and_oversized_requests_do_not_hold_the_agent() {
    let a = agent("a");
    let addr = a.http_addr();
    // A client trickling its headers a byte at a time is cut off at the
    // header deadline (1 s here), however steadily it sends.
    let t = Instant::now();
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let mut closed = false;
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        if slow.write_all(b"X").is_err() {
            closed = true;
            break;
        }
        // Meanwhile another client is served.
        if t.elapsed() < Duration::from_millis(300) {
            assert_eq!(get(addr, "/healthz").0, 200);
        }
    }
    let mut buf = [0u8; 256];
    slow.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let n = slow.read(&mut buf).unwrap_or(0);
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(
        closed || n == 0 || answer.starts_with("HTTP/1.1 408"),
        "a trickling client was not cut off: {answer:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // Many idle connections from other sockets do not stop a new client.
    let idle: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(addr).unwrap()).collect();
    assert_eq!(get(addr, "/healthz").0, 200);
    drop(idle);
    // A body over the limit is refused before it is read.
    let big = "x".repeat(200_000);
    let (st, _) = post(addr, "/v1/run", "", &big);
    assert_eq!(st, 413);
}

#[test]
fn a_small_matrix_runs_over_loopback_and_a_stopped_agent_is_down() {
    let (a, b, c) = (agent("a"), agent("b"), agent("c"));
    let fleet = Fleet {
        agents: vec![spec_of("a", &a), spec_of("b", &b), spec_of("c", &c)],
    };
    drop(c); // c is gone before the run starts
    let plan = wirespeed_fleet::plan(&fleet, Pattern::AllToAll, 1).unwrap();
    let mut opts = RunOptions::new(
        vec![WorkloadSpec {
            label: "stream".into(),
            spec: short_spec(),
        }],
        KEY.to_vec(),
    );
    opts.http_timeout = Duration::from_secs(2);
    let r = wirespeed_fleet::run(&fleet, &plan, &opts).unwrap();
    assert_eq!(r.tests.len(), 3);
    let ok: Vec<_> = r.tests.iter().filter(|t| t.error.is_none()).collect();
    assert_eq!(ok.len(), 1, "{:#?}", r.tests);
    assert!(ok[0].throughput_bps > 1e6);
    let down: Vec<_> = r
        .agents
        .iter()
        .filter(|x| !x.up)
        .map(|x| x.name.as_str())
        .collect();
    assert_eq!(down, ["c"]);
    assert!(
        r.tests.iter().filter(|t| t.error.is_some()).all(|t| t
            .error
            .as_ref()
            .unwrap()
            .contains("agent c is down"))
    );
    let v = wirespeed_fleet::analyze::judge(&r, None, None, 10.0);
    assert!(
        v.failures.iter().any(|f| f.contains("agent c is down")),
        "{v:?}"
    );
    drop((a, b));
}

/// The watch's state once `done` holds of it, polled for at most 30 s.
fn watched(
    live: &wirespeed_fleet::watch_http::Live,
    what: &str,
    done: impl Fn(&wirespeed_types::fleet::WatchState) -> bool,
) {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let st = live.state.lock().unwrap().clone();
        if done(&st) {
            return;
        }
        assert!(
            Instant::now() < end,
            "timed out after 30 s waiting for {what}; recent: {:#?}",
            st.recent
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `st` holds a probe led by `client` that measured, after `t`.
fn led_by(st: &wirespeed_types::fleet::WatchState, client: &str, t: f64) -> bool {
    st.recent
        .iter()
        .any(|r| r.client == client && r.error.is_none() && r.at_unix > t)
}

#[test]
fn a_watched_agent_restarted_in_place_is_given_the_fleet_again() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use wirespeed_fleet::schedule::Budget;
    use wirespeed_fleet::watch::WatchOptions;
    use wirespeed_types::{TestSpec, Workload};
    let (a, b) = (agent("a"), agent("b"));
    let fleet = Fleet {
        agents: vec![spec_of("a", &a), spec_of("b", &b)],
    };
    // b again later on the same addresses: a container restarted in its
    // pod, with a new boot id and no fleet.
    let mut again = config("b");
    again.http = b.http_addr();
    again.server.port = b.control_addr().port();
    let dir = std::env::temp_dir().join(format!("ws-watch-again-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spec = |workload, s| TestSpec {
        workload,
        duration_s: s,
        warmup_s: 0.0,
        ..TestSpec::default()
    };
    let mut run = RunOptions::new(Vec::new(), KEY.to_vec());
    run.http_timeout = Duration::from_secs(2);
    let opts = WatchOptions {
        run,
        probes: vec![WorkloadSpec {
            label: "rr".into(),
            spec: spec(Workload::Rr, 0.2),
        }],
        bandwidth: WorkloadSpec {
            label: "stream".into(),
            spec: spec(Workload::Stream, 0.2),
        },
        budget: Budget {
            probe_period_s: 1.0,
            bandwidth_s: 0.3,
            probe_bytes: 1e3,
            ..Budget::default()
        },
        rules: Default::default(),
        history: dir.join("history.db"),
        duration: Some(Duration::from_secs(90)),
        retain: None,
        on_event: None,
        stop: Some(stop.clone()),
        interrupt: None,
    };
    let live = Arc::new(wirespeed_fleet::watch_http::Live::default());
    let watcher = {
        let (fleet, live) = (fleet.clone(), live.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(wirespeed_fleet::watch::watch(&fleet, &opts, live))
        })
    };
    watched(&live, "a probe led by b", |st| led_by(st, "b", 0.0));
    drop(b);
    let restarted = now_unix();
    let b = wirespeed_fleet::Agent::start(again).expect("b starts again on its addresses");
    watched(&live, "a probe led by the restarted b", |st| {
        led_by(st, "b", restarted)
    });
    stop.store(true, Ordering::Relaxed);
    let st = watcher.join().unwrap().unwrap();
    assert_eq!(st.agents_with_fleet, 2);
    let _ = std::fs::remove_dir_all(&dir);
    drop((a, b));
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}
