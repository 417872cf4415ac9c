//! `--data-ports`: a server takes its tests' data connections on the
//! first free port of its range, and says so when every one is taken.

mod common;

use common::TestServer;
use std::net::TcpListener;
use wirespeed_engine::{EngineError, ServerConfig};
use wirespeed_types::TestSpec;

/// Two adjacent free ports (held until the caller drops them).
fn two_free_ports() -> (TcpListener, TcpListener) {
    for _ in 0..100 {
        let a = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if p < u16::MAX
            && let Ok(b) = TcpListener::bind(("127.0.0.1", p + 1))
        {
            return (a, b);
        }
    }
    panic!("no two adjacent free ports in 100 tries");
}

fn short() -> TestSpec {
    TestSpec {
        duration_s: 0.3,
        warmup_s: 0.0,
        ..TestSpec::default()
    }
}

#[test]
fn data_flows_take_a_free_port_of_the_range_or_a_clear_busy() {
    let (a, b) = two_free_ports();
    let lo = a.local_addr().unwrap().port();
    let srv = TestServer::start(ServerConfig {
        data_ports: Some((lo, lo + 1)),
        ..ServerConfig::default()
    });
    // Both ports held by someone else: the test is refused, naming them.
    let err = srv.run(&short()).unwrap_err();
    assert!(
        matches!(&err, EngineError::Busy(m) if m.contains(&format!("{lo}-{}", lo + 1))),
        "{err:?}"
    );
    // One freed: the test runs on it, again and again (TIME_WAIT on the
    // fixed port does not block the next test).
    drop(b);
    for _ in 0..3 {
        let r = srv.run(&short()).expect("a test on the free data port");
        assert!(r.throughput_bps > 0.0);
    }
    drop(a);
}
