//! The engine end to end over loopback: a real server and client in one
//! process, real sockets. Namespaced multi-NIC tests live in the binary's
//! tests; these need no privileges.

mod common;
use common::TestServer;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use wirespeed_engine::proto::{CONTROL_MAGIC, Msg, PROTOCOL_VERSION, read_msg, write_msg};
use wirespeed_engine::{EngineError, ServerConfig, run_test};
use wirespeed_types::spec::{FlowKind, parse_paths};
use wirespeed_types::{Direction, Limits, TestSpec, Workload};

fn short(spec: TestSpec) -> TestSpec {
    TestSpec {
        duration_s: 0.5,
        warmup_s: 0.1,
        ..spec
    }
}

#[test]
fn stream_bytes_sent_equal_bytes_received() {
    let srv = TestServer::start(ServerConfig::default());
    for dir in [Direction::Forward, Direction::Reverse, Direction::Bidir] {
        let r = srv
            .run(&short(TestSpec {
                direction: dir,
                flows: 3,
                threads: 2,
                ..TestSpec::default()
            }))
            .unwrap();
        assert!(r.throughput_bps > 1e6, "{dir:?}: {}", r.throughput_bps);
        for f in &r.flows {
            assert_eq!(
                f.client_sent_total, f.server_received_total,
                "{dir:?} flow {}",
                f.id
            );
            assert_eq!(
                f.server_sent_total, f.client_received_total,
                "{dir:?} flow {}",
                f.id
            );
        }
        let moved: u64 = r
            .flows
            .iter()
            .map(|f| f.client_sent_total + f.server_sent_total)
            .sum();
        assert!(moved > 0);
        let want_dirs = if dir == Direction::Bidir { 2 } else { 1 };
        assert_eq!(r.directions.len(), want_dirs);
        let dsum: f64 = r.directions.iter().map(|d| d.received_bps).sum();
        assert!((dsum - r.throughput_bps).abs() < 1.0);
        assert!(r.fairness > 0.0 && r.fairness <= 1.0);
        assert!(r.local_cpu.total_pct > 0.0);
        // Every sending flow has TCP_INFO from its sender.
        assert!(
            r.flows
                .iter()
                .all(|f| f.tcp_info.as_ref().is_some_and(|i| i.mss > 0))
        );
    }
}

#[test]
fn per_path_figures_add_up_to_the_total() {
    let srv = TestServer::start(ServerConfig::default());
    let paths = parse_paths("127.0.0.1=127.0.0.1,lo=127.0.0.1").unwrap();
    let spec = short(TestSpec {
        flows: 4,
        threads: 2,
        paths,
        ..TestSpec::default()
    });
    let r = srv.run(&spec);
    let r = match r {
        // SO_BINDTODEVICE needs CAP_NET_RAW.
        Err(e) if e.to_string().contains("bind to device") => return,
        r => r.unwrap(),
    };
    assert_eq!(r.paths.len(), 2);
    assert!(
        r.paths
            .iter()
            .all(|p| p.flows == 2 && p.throughput_bps > 0.0)
    );
    let sum: f64 = r.paths.iter().map(|p| p.throughput_bps).sum();
    assert!((sum - r.throughput_bps).abs() / r.throughput_bps < 1e-9);
    assert!(r.path_balance > 0.0 && r.path_balance <= 1.0);
}

#[test]
fn rr_percentiles_are_ordered_and_plausible() {
    let srv = TestServer::start(ServerConfig::default());
    let spec = short(TestSpec {
        workload: Workload::Rr,
        request_size: 100,
        response_size: 80_000,
        nodelay: true,
        ..TestSpec::default()
    });
    let r = srv.run(&spec).unwrap();
    let l = r.latency.clone().expect("rr has latency");
    assert!(l.count > 10, "{l:?}");
    assert!(l.min_us > 0.0 && l.min_us <= l.p50_us && l.p50_us <= l.p90_us);
    assert!(l.p90_us <= l.p99_us && l.p99_us <= l.p999_us && l.p999_us <= l.max_us);
    assert!(
        l.max_us < 1_000_000.0,
        "a loopback round trip under 1 s: {l:?}"
    );
    // Transactions/s and mean latency agree for one flow (within 2x).
    let implied = 1e6 / l.mean_us;
    assert!(
        r.transactions_per_s > implied / 2.0 && r.transactions_per_s < implied * 2.0,
        "{r:?}"
    );
    let f = &r.flows[0];
    assert_eq!(f.client_received_total % 80_000, 0);
    assert_eq!(f.server_received_total % 100, 0);
}

#[test]
fn rr_sizes_up_to_megabytes() {
    let srv = TestServer::start(ServerConfig::default());
    for size in [1u32, 4 << 20] {
        let spec = short(TestSpec {
            workload: Workload::Rr,
            request_size: size,
            response_size: size,
            nodelay: true,
            flows: 2,
            ..TestSpec::default()
        });
        let r = srv.run(&spec).unwrap();
        assert!(r.transactions_per_s > 0.0, "size {size}");
        for f in &r.flows {
            assert_eq!(f.client_received_total % size as u64, 0);
        }
    }
}

/// Two flows per thread go through epoll; one flow alone makes its
/// connections with blocking calls. Either way every request and every
/// answer is whole, and the server answers each request the client sent.
#[test]
fn crr_counts_connections() {
    let srv = TestServer::start(ServerConfig::default());
    for flows in [2, 1] {
        let spec = short(TestSpec {
            workload: Workload::Crr,
            flows,
            request_size: 5,
            response_size: 7,
            nodelay: true,
            ..TestSpec::default()
        });
        let r = srv.run(&spec).unwrap();
        assert!(r.transactions_per_s > 50.0, "{}", r.transactions_per_s);
        let l = r.latency.unwrap();
        assert!(l.p50_us <= l.p99_us);
        assert!(r.flows.iter().all(|f| f.kind == Some(FlowKind::Crr)));
        // The server's close at stop is not a fault, even when it meets a
        // blocking client before the client's loop saw the stop.
        assert!(r.notes.is_empty(), "{flows} flows: {:?}", r.notes);
        for f in &r.flows {
            assert_eq!(f.server_received_total % 5, 0, "{f:?}");
            assert_eq!(f.client_received_total % 7, 0, "{f:?}");
            assert!(f.server_sent_total >= f.client_received_total, "{f:?}");
            assert!(f.server_received_total / 5 >= f.transactions, "{f:?}");
        }
    }
}

#[test]
fn probe_measures_latency_under_load() {
    let srv = TestServer::start(ServerConfig::default());
    let r = srv
        .run(&short(TestSpec {
            probe_rr: true,
            ..TestSpec::default()
        }))
        .unwrap();
    let p = r.probe_latency.expect("probe latency");
    assert!(p.count > 0 && p.p50_us <= p.p99_us);
    // The probe is not counted in the stream's throughput.
    assert_eq!(r.paths[0].flows, 1);
}

#[test]
fn ipv6_loopback_works() {
    let srv = TestServer::start(ServerConfig::default());
    let spec = short(TestSpec {
        paths: parse_paths("::1=::1").unwrap(),
        ..TestSpec::default()
    });
    // The server listens on 127.0.0.1 for control; the data listener is
    // dual-stack only when bound to ::, so accept a clean refusal here.
    match srv.run(&spec) {
        Ok(r) => assert!(r.throughput_bps > 0.0),
        Err(e) => assert!(e.to_string().contains("connect"), "{e}"),
    }
}

#[test]
fn zerocopy_and_skip_rx_copy_run_and_say_when_copied() {
    let srv = TestServer::start(ServerConfig::default());
    let r = srv
        .run(&short(TestSpec {
            zerocopy: true,
            skip_rx_copy: true,
            ..TestSpec::default()
        }))
        .unwrap();
    assert!(r.throughput_bps > 1e6);
    assert!(
        r.notes.iter().any(|n| n.contains("zerocopy")),
        "{:?}",
        r.notes
    );
    assert_eq!(
        r.flows[0].client_sent_total,
        r.flows[0].server_received_total
    );
}

#[test]
fn knobs_reach_the_sockets() {
    let srv = TestServer::start(ServerConfig::default());
    let spec = short(TestSpec {
        congestion: Some("cubic".into()),
        sndbuf: Some(1 << 20),
        rcvbuf: Some(1 << 20),
        pacing_bps: Some(200_000_000),
        ..TestSpec::default()
    });
    let r = srv.run(&spec).unwrap();
    assert_eq!(r.congestion_control, "cubic");
    // Paced at 200 Mbit/s: well under, not a loopback's many Gbit/s.
    assert!(r.throughput_bps < 300e6, "{}", r.throughput_bps);
    let bad = TestSpec {
        congestion: Some("nosuchcc".into()),
        ..short(TestSpec::default())
    };
    let e = srv.run(&bad).unwrap_err().to_string();
    assert!(e.contains("congestion"), "{e}");
}

#[test]
fn limits_and_busy_are_clear_answers() {
    let srv = TestServer::start(ServerConfig {
        limits: Limits {
            max_flows: 4,
            ..Limits::default()
        },
        max_tests: 1,
        ..ServerConfig::default()
    });
    let e = srv
        .run(&short(TestSpec {
            flows: 5,
            ..TestSpec::default()
        }))
        .unwrap_err();
    assert!(e.to_string().contains("limit"), "{e}");
    // Hold the only slot with a long test, then ask for another.
    let cfg = srv.client();
    let long = std::thread::spawn(move || {
        run_test(
            &cfg,
            &TestSpec {
                duration_s: 1.5,
                warmup_s: 0.0,
                ..TestSpec::default()
            },
            &mut |_| {},
        )
    });
    let mut busy = None;
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(50));
        match srv.run(&short(TestSpec::default())) {
            Err(EngineError::Busy(m)) => {
                busy = Some(m);
                break;
            }
            Ok(_) => continue,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(busy.is_some(), "second test never got a busy answer");
    let r = long.join().unwrap().unwrap();
    assert_eq!(r.server_concurrent_tests, 1);
}

#[test]
fn concurrent_tests_are_reported() {
    let srv = TestServer::start(ServerConfig {
        max_tests: 4,
        ..ServerConfig::default()
    });
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let cfg = srv.client();
            std::thread::spawn(move || {
                run_test(
                    &cfg,
                    &TestSpec {
                        duration_s: 1.0,
                        warmup_s: 0.2,
                        ..TestSpec::default()
                    },
                    &mut |_| {},
                )
            })
        })
        .collect();
    let rs: Vec<_> = hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
    assert!(
        rs.iter().any(|r| r.server_concurrent_tests == 2),
        "{:?}",
        rs.iter()
            .map(|r| r.server_concurrent_tests)
            .collect::<Vec<_>>()
    );
}

fn raw_control(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn expect_error_reply(s: &mut TcpStream, code: &str) {
    match read_msg(s) {
        Ok(Msg::Error { code: c, .. }) => assert_eq!(c, code),
        other => panic!("expected error {code}, got {other:?}"),
    }
}

#[test]
fn bad_control_input_gets_an_error_and_the_server_keeps_serving() {
    let srv = TestServer::start(ServerConfig::default());
    // Garbage instead of the preamble.
    let mut s = raw_control(srv.addr);
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    expect_error_reply(&mut s, "protocol");
    // A huge length prefix.
    let mut s = raw_control(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0xf0]).unwrap();
    expect_error_reply(&mut s, "protocol");
    // Valid frame, unreadable JSON.
    let mut s = raw_control(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    s.write_all(&5u32.to_be_bytes()).unwrap();
    s.write_all(b"{nope").unwrap();
    expect_error_reply(&mut s, "protocol");
    // An old protocol version.
    let mut s = raw_control(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    write_msg(
        &mut s,
        &Msg::Hello {
            version: PROTOCOL_VERSION - 1,
            min_version: None,
            client: "old".into(),
        },
    )
    .unwrap();
    expect_error_reply(&mut s, "version");
    // A spec before authentication.
    let mut s = raw_control(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    write_msg(&mut s, &Msg::Start).unwrap();
    expect_error_reply(&mut s, "protocol");
    // A data connection with a wrong token is dropped, not served.
    let mut s = raw_control(srv.addr);
    s.write_all(b"WSPD0123456789abcdef\0\0\0\0").unwrap();
    let mut buf = [0u8; 64];
    let _ = s.read(&mut buf);
    // The server still runs tests.
    assert!(srv.run(&short(TestSpec::default())).unwrap().throughput_bps > 0.0);
}

/// Sends a hello speaking `min..=max` as `client`; the server's answer.
fn hello(srv: &TestServer, min: u32, max: u32, client: &str) -> Msg {
    let mut s = raw_control(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    write_msg(
        &mut s,
        &Msg::Hello {
            version: max,
            min_version: Some(min),
            client: client.into(),
        },
    )
    .unwrap();
    read_msg(&mut s).unwrap()
}

#[test]
fn the_handshake_agrees_on_the_newest_shared_version_or_names_both_sides() {
    let srv = TestServer::start(ServerConfig::default());
    let release = format!("wirespeed {}", env!("CARGO_PKG_VERSION"));
    // A newer client that still speaks this version: the server says
    // which one it chose and who it is.
    match hello(
        &srv,
        PROTOCOL_VERSION,
        PROTOCOL_VERSION + 1,
        "wirespeed 9.0.0",
    ) {
        Msg::Challenge {
            version, server, ..
        } => {
            assert_eq!(version, Some(PROTOCOL_VERSION));
            assert_eq!(server.as_deref(), Some(release.as_str()));
        }
        other => panic!("expected a challenge, got {other:?}"),
    }
    // Two releases ahead: refused, naming both and the side to upgrade.
    let (lo, hi) = (PROTOCOL_VERSION + 4, PROTOCOL_VERSION + 5);
    match hello(&srv, lo, hi, "wirespeed 9.0.0") {
        Msg::Error { code, message } => {
            assert_eq!(code, "version");
            for want in [
                format!("the server ({release}) speaks control protocol {PROTOCOL_VERSION}"),
                format!("the client (wirespeed 9.0.0) speaks {lo}-{hi}"),
                "upgrade the server to wirespeed 9.0.0".to_string(),
            ] {
                assert!(message.contains(&want), "{want:?} in {message}");
            }
        }
        other => panic!("expected a version error, got {other:?}"),
    }
    // A hello without min_version (releases before it) speaks exactly
    // `version`, as those releases did.
    let old =
        format!(r#"{{"type":"hello","version":{PROTOCOL_VERSION},"client":"wirespeed 0.0.9"}}"#);
    let mut s = raw_control(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    s.write_all(&(old.len() as u32).to_be_bytes()).unwrap();
    s.write_all(old.as_bytes()).unwrap();
    assert!(matches!(read_msg(&mut s).unwrap(), Msg::Challenge { .. }));
}

#[test]
fn a_client_that_vanishes_mid_test_leaves_the_server_serving() {
    let srv = TestServer::start(ServerConfig {
        idle_timeout: Duration::from_secs(2),
        ..ServerConfig::default()
    });
    // Handshake and start a test by hand, connect no flows, then vanish.
    let mut s = raw_control(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    write_msg(
        &mut s,
        &Msg::Hello {
            version: PROTOCOL_VERSION,
            min_version: None,
            client: "t".into(),
        },
    )
    .unwrap();
    assert!(matches!(read_msg(&mut s).unwrap(), Msg::Challenge { .. }));
    write_msg(&mut s, &Msg::Auth { mac: None }).unwrap();
    assert!(matches!(read_msg(&mut s).unwrap(), Msg::Welcome { .. }));
    write_msg(
        &mut s,
        &Msg::Spec {
            spec: Box::new(short(TestSpec::default())),
        },
    )
    .unwrap();
    assert!(matches!(read_msg(&mut s).unwrap(), Msg::Accepted { .. }));
    drop(s);
    // A client killed mid-window: run a long test on a thread and drop its
    // sockets by aborting the connection from outside is not possible
    // in-process, so the binary's lab test covers SIGKILL; here the server
    // must simply go on.
    assert!(srv.run(&short(TestSpec::default())).unwrap().throughput_bps > 0.0);
}

#[test]
fn key_file_authentication() {
    let key = b"0123456789abcdef0123".to_vec();
    let srv = TestServer::start(ServerConfig {
        key: Some(key.clone()),
        ..ServerConfig::default()
    });
    let spec = short(TestSpec::default());
    let e = run_test(&srv.client(), &spec, &mut |_| {}).unwrap_err();
    assert!(matches!(e, EngineError::Auth(_)), "{e}");
    let mut wrong = srv.client();
    wrong.key = Some(b"not-the-right-key-at-all".to_vec());
    assert!(matches!(
        run_test(&wrong, &spec, &mut |_| {}).unwrap_err(),
        EngineError::Auth(_)
    ));
    let mut right = srv.client();
    right.key = Some(key);
    assert!(run_test(&right, &spec, &mut |_| {}).unwrap().throughput_bps > 0.0);
}
