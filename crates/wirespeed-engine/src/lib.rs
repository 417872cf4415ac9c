//! wirespeed's data plane and control protocol.
//!
//! A test is a [`TestSpec`]: a workload (stream, rr, crr, udp-stream,
//! udp-rr; one row each in [`workloads::REGISTRY`]) run by N threads over
//! M flows striped across P paths. The client ([`client::run_test`])
//! and the server ([`server::Server`]) agree on the spec over a versioned,
//! optionally authenticated control connection, derive the same flow
//! roster from it, run their workers for the same window and return both
//! sides' figures as one [`TestResult`]. [`interference`] runs a victim
//! test beside loader tests on the same server (`bench --interference`).
//!
//! This crate knows nothing of netlink, CLIs or rendering: it moves bytes
//! and counts them. Its `unsafe` lives in three modules: [`sys`] (sockets,
//! epoll, scheduler), [`sys_ts`] (kernel timestamping for `--breakdown`)
//! and [`sys_uring`] (the io_uring submissions of `--io uring`, whose
//! buffers the ring owns).

#![warn(missing_docs)]
// Unsafe code only in the sys module(s) allowed below.
#![deny(unsafe_code)]

pub mod breakdown;
pub mod client;
pub mod cpu;
mod crr;
pub mod error;
pub mod harness;
pub mod interference;
pub mod merge;
pub mod proto;
mod rr;
pub mod server;
pub mod side;
pub mod sockets;
pub mod stamps;
mod stream;
#[allow(unsafe_code)]
pub mod sys;
#[allow(unsafe_code)]
pub mod sys_ts;
#[allow(unsafe_code)]
pub mod sys_uring;
pub mod timestamps;
pub mod udp;
mod udp_rr;
mod udp_stream;
pub mod uring;
pub mod worker;
pub mod workload;
pub mod workloads;

/// The shared vocabulary, re-exported so `wirespeed_engine::spec::TestSpec`
/// and friends keep their paths; they live in `wirespeed-types`.
pub use wirespeed_types::{result, spec, units};

pub use client::{ClientConfig, DEFAULT_PORT, Reach, run_test, run_test_via};
pub use error::EngineError;
pub use result::{Report, SCHEMA_VERSION, TestResult};
pub use server::{Server, ServerConfig};
pub use spec::{Direction, Limits, PathSpec, TestSpec, Workload};
