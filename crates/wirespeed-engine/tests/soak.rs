//! 1000 tests in a row with descriptor and memory accounting, alone in its
//! own test binary so no other test's sockets blur the counts. (10,000
//! flows in one test need two processes' descriptor limits: that test is
//! in the binary crate's tests.)

mod common;
use common::TestServer;
use std::time::Duration;
use wirespeed_engine::{ServerConfig, TestSpec};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn a_thousand_tests_leave_no_descriptors_or_memory_behind() {
    let srv = TestServer::start(ServerConfig::default());
    let spec = TestSpec {
        duration_s: 0.005,
        warmup_s: 0.0,
        msg_size: 16384,
        ..TestSpec::default()
    };
    for _ in 0..50 {
        srv.run(&spec).unwrap();
    }
    // Let the server's control threads of the warm-up runs exit.
    std::thread::sleep(Duration::from_millis(200));
    let (fds0, rss0) = (wirespeed_engine::sys::open_fds(), rss_kib());
    for i in 0..1000 {
        srv.run(&spec).unwrap_or_else(|e| panic!("test {i}: {e}"));
    }
    std::thread::sleep(Duration::from_millis(200));
    let (fds1, rss1) = (wirespeed_engine::sys::open_fds(), rss_kib());
    assert!(fds1 <= fds0 + 2, "descriptors {fds0} -> {fds1}");
    assert!(rss1 < rss0 + 16 * 1024, "RSS {rss0} KiB -> {rss1} KiB");
}
