//! The io_uring engine (`--io uring`) end to end over loopback: the same
//! checks the epoll tests make (bytes sent equal bytes received, ordered
//! percentiles, datagram counts that add up), a result that says io_uring
//! ran on both sides, and the fallback to epoll on a thread whose seccomp
//! filter refuses io_uring_setup, as container runtimes' profiles do.
//! When this kernel refuses io_uring to the whole process, the tests say
//! so and check the fallback note instead.

mod common;
use common::TestServer;

use wirespeed_engine::ServerConfig;
use wirespeed_types::result::{IoEngines, TestResult};
use wirespeed_types::spec::{DEFAULT_DATAGRAM, IoEngine};
use wirespeed_types::{Direction, TestSpec, Workload};

fn uring(spec: TestSpec) -> TestSpec {
    TestSpec {
        io: IoEngine::Uring,
        duration_s: 0.5,
        warmup_s: 0.1,
        ..spec
    }
}

/// Whether this process may use io_uring at all (the sysctl and seccomp
/// of the test's own sandbox); when not, the result must say why.
fn kernel_allows(r: &TestResult) -> bool {
    if wirespeed_engine::testing::disabled_by_sysctl().is_none() && io_uring_setup_works() {
        return true;
    }
    eprintln!("io_uring is refused to this process: checking the fallback only");
    assert!(
        r.notes.iter().any(|n| n.contains("io_uring")),
        "{:?}",
        r.notes
    );
    false
}

fn io_uring_setup_works() -> bool {
    wirespeed_engine::testing::Ring::new(wirespeed_engine::testing::RingSize {
        entries: 8,
        io_len: 4096,
        slots: (0, 0),
        provided: (0, 0),
    })
    .is_ok()
}

/// Runs `spec` with io_uring; None when this process may not use it (the
/// fallback is then checked), else the result, checked to say io_uring
/// ran on both sides.
fn run_uring(srv: &TestServer, spec: TestSpec) -> Option<TestResult> {
    let r = srv.run(&uring(spec)).unwrap();
    if !kernel_allows(&r) {
        return None;
    }
    ran_uring(&r);
    Some(r)
}

/// io_uring ran on both sides and no fallback was noted.
fn ran_uring(r: &TestResult) {
    assert_eq!(
        r.io_engines,
        Some(IoEngines {
            client: IoEngine::Uring,
            server: Some(IoEngine::Uring),
        }),
        "{:?}",
        r.notes
    );
    assert!(
        !r.notes.iter().any(|n| n.contains("io_uring")),
        "{:?}",
        r.notes
    );
}

#[test]
fn uring_stream_both_ways_counts_every_byte() {
    let srv = TestServer::start(ServerConfig::default());
    for dir in [Direction::Forward, Direction::Reverse, Direction::Bidir] {
        let Some(r) = run_uring(
            &srv,
            TestSpec {
                direction: dir,
                flows: 3,
                threads: 2,
                interval_s: 0.2,
                ..TestSpec::default()
            },
        ) else {
            return;
        };
        assert!(r.throughput_bps > 1e6, "{dir:?}: {}", r.throughput_bps);
        for f in &r.flows {
            assert_eq!(
                f.client_sent_total, f.server_received_total,
                "{dir:?} {}",
                f.id
            );
            assert_eq!(
                f.server_sent_total, f.client_received_total,
                "{dir:?} {}",
                f.id
            );
            assert!(f.tcp_info.as_ref().is_some_and(|i| i.mss > 0));
        }
        let want_dirs = if dir == Direction::Bidir { 2 } else { 1 };
        assert_eq!(r.directions.len(), want_dirs);
        assert!(r.intervals.iter().any(|i| i.bps > 0.0), "{:?}", r.intervals);
    }
}

#[test]
fn uring_rr_counts_transactions_with_ordered_percentiles() {
    let srv = TestServer::start(ServerConfig::default());
    for (q, a, flows) in [(1u32, 1u32, 1u32), (100, 80_000, 1), (4 << 20, 4 << 20, 2)] {
        let Some(r) = run_uring(
            &srv,
            TestSpec {
                workload: Workload::Rr,
                request_size: q,
                response_size: a,
                nodelay: true,
                flows,
                interval_s: 0.2,
                ..TestSpec::default()
            },
        ) else {
            return;
        };
        assert!(r.transactions_per_s > 0.0, "{q}/{a}");
        let l = r.latency.clone().expect("rr has latency");
        assert!(l.count > 0, "{l:?}");
        assert!(l.min_us > 0.0 && l.min_us <= l.p50_us && l.p50_us <= l.p99_us);
        assert!(l.p99_us <= l.max_us && l.max_us < 1_000_000.0, "{l:?}");
        for f in &r.flows {
            assert!(f.transactions > 0);
            assert_eq!(f.client_received_total % a as u64, 0, "{q}/{a}");
            assert_eq!(f.server_received_total % q as u64, 0, "{q}/{a}");
        }
        if flows == 1 && q == 1 {
            // One flow: transactions/s and the mean latency agree (2x).
            let implied = 1e6 / l.mean_us;
            assert!(r.transactions_per_s > implied / 2.0, "{r:?}");
            assert!(r.intervals.iter().any(|i| i.latency.is_some()));
        }
    }
}

#[test]
fn uring_probe_measures_latency_beside_a_stream() {
    let srv = TestServer::start(ServerConfig::default());
    let Some(r) = run_uring(
        &srv,
        TestSpec {
            probe_rr: true,
            ..TestSpec::default()
        },
    ) else {
        return;
    };
    let p = r.probe_latency.expect("probe latency");
    assert!(p.count > 0 && p.p50_us <= p.p99_us);
    assert_eq!(r.paths[0].flows, 1);
}

#[test]
fn uring_udp_stream_counts_every_datagram() {
    let srv = TestServer::start(ServerConfig::default());
    for (dir, gso) in [(Direction::Forward, true), (Direction::Reverse, false)] {
        let Some(r) = run_uring(
            &srv,
            TestSpec {
                workload: Workload::UdpStream,
                msg_size: DEFAULT_DATAGRAM,
                direction: dir,
                udp_gso: gso,
                udp_gro: gso,
                flows: 2,
                ..TestSpec::default()
            },
        ) else {
            return;
        };
        let u = r.udp.clone().expect("datagram figures");
        assert_eq!(u.datagrams_sent - u.datagrams_received, u.lost, "{u:?}");
        assert!(u.datagrams_received > 0, "{u:?}");
        assert!(u.jitter_us.is_finite() && u.jitter_us >= 0.0);
        for f in &r.flows {
            assert!(f.udp.as_ref().unwrap().datagrams_received > 0, "{dir:?}");
        }
        assert!(r.throughput_bps > 1e6, "{dir:?}: {}", r.throughput_bps);
    }
}

#[test]
fn uring_refuses_what_it_does_not_cover_at_spec_check() {
    let srv = TestServer::start(ServerConfig::default());
    for spec in [
        TestSpec {
            workload: Workload::Crr,
            ..TestSpec::default()
        },
        TestSpec {
            workload: Workload::UdpRr,
            msg_size: DEFAULT_DATAGRAM,
            request_size: 64,
            response_size: 64,
            ..TestSpec::default()
        },
        TestSpec {
            zerocopy: true,
            ..TestSpec::default()
        },
    ] {
        let e = srv.run(&uring(spec)).unwrap_err().to_string();
        assert!(e.contains("--io uring does not cover"), "{e}");
    }
}

/// A thread whose seccomp filter refuses io_uring_setup (EPERM), as
/// Docker's default profile does, runs the server and the client; every
/// worker it starts inherits the filter, falls back to epoll, moves data
/// and says why. Other test threads are untouched (no TSYNC).
#[test]
fn a_seccomp_refusal_falls_back_to_epoll_with_the_reason() {
    let r = std::thread::spawn(|| {
        wirespeed_engine::testing::deny_io_uring_on_this_thread()
            .expect("seccomp filter (PR_SET_NO_NEW_PRIVS, then SECCOMP_MODE_FILTER)");
        assert!(!io_uring_setup_works(), "the filter refuses io_uring_setup");
        let srv = TestServer::start(ServerConfig::default());
        srv.run(&uring(TestSpec {
            workload: Workload::Rr,
            ..TestSpec::default()
        }))
        .unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(
        r.io_engines,
        Some(IoEngines {
            client: IoEngine::Epoll,
            server: Some(IoEngine::Epoll),
        })
    );
    assert!(r.transactions_per_s > 0.0);
    for side in ["", "server: "] {
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with(&format!("{side}io_uring: "))
                    && n.contains("EPERM")
                    && n.contains("runs epoll instead")),
            "{side}: {:?}",
            r.notes
        );
    }
}
