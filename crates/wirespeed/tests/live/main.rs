//! The tests that build labs in network namespaces (root; each test makes
//! and removes its own) or drive real agents and servers: host inspection
//! and tuning, the engine end to end, scenarios, iperf3's own
//! tools against wirespeed. Each module was a test binary of its own; run one
//! with `cargo test --release -p wirespeed --test live host_live::`. Tests
//! that measure throughput take common::heavy(), so they never share the
//! two cores with each other.

#[path = "../chromium/mod.rs"]
mod chromium;
#[path = "../common/mod.rs"]
mod common;

mod cutoff_live;
mod demo_live;
mod experiment_live;
mod faults_live;
mod flow_caps_live;
mod host_live;
mod iperf3_live;
mod lab_cli;
mod lab_e2e;
mod optimize_live;
mod scenarios_live;
mod udp_live;
mod versions_live;
mod zerocopy_live;
