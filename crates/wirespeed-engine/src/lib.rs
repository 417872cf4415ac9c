//! wirespeed's data plane and control protocol.
//!
//! A test is a `TestSpec` (from `wirespeed_types::spec`): a workload
//! (stream, rr, crr, udp-stream, udp-rr; one row each in the private
//! `workloads` registry) run by N threads over M flows striped across P
//! paths. The client ([`run_test`]) and the server ([`Server`]) agree on
//! the spec over a versioned, optionally authenticated control
//! connection, derive the same flow roster from it, run their workers for
//! the same window and return both sides' figures as one `TestResult`.
//! [`interference`] runs a victim test beside loader tests on the same
//! server (`bench --interference`).
//!
//! This crate knows nothing of netlink, CLIs or rendering: it moves bytes
//! and counts them. Its `unsafe` lives in three private modules: `sys`
//! (sockets, epoll, scheduler), `sys_ts` (kernel timestamping for
//! `--breakdown`) and `sys_uring` (the io_uring submissions of `--io
//! uring`, whose buffers the ring owns).
//!
//! # Public surface
//!
//! Every module is private but two (and the hidden [`testing`]); what
//! other crates use is re-exported here:
//!
//! - the client: [`ClientConfig`], [`Reach`], [`Family`], [`run_test`],
//!   [`run_test_via`], [`DEFAULT_PORT`];
//! - the server: [`Server`], [`ServerConfig`], [`ServerEvent`],
//!   [`read_key_file`], [`KeyFile`], [`flow_limit_for`], [`source_of`];
//! - the error: [`EngineError`];
//! - helpers the binaries share: [`split_host_port`], [`raise_fd_limit`],
//!   [`BYTES_TICK`].
//!
//! Two modules stay public because their items are a vocabulary of their
//! own that reads better qualified (and `interference::run` would clash
//! with [`run_test`] at the top):
//!
//! - [`proto`]: the control protocol's messages, frames and versions
//!   (peers, the fleet agent and the fuzz bodies speak it);
//! - [`interference`]: the victim-beside-loaders plan and its runner.
//!
//! The shared vocabulary (`TestSpec`, `TestResult`, `Report`, units) is
//! not re-exported: it has one path, `wirespeed_types`. [`testing`] is
//! hidden and only for this workspace's integration tests and fuzz
//! bodies.

#![warn(missing_docs)]
// Unsafe code only in the sys module(s) allowed below.
#![deny(unsafe_code)]

mod breakdown;
mod client;
mod cpu;
mod crr;
mod error;
mod harness;
pub mod interference;
mod merge;
pub mod proto;
mod rr;
mod server;
mod side;
mod sockets;
mod stamps;
mod stream;
#[allow(unsafe_code)]
mod sys;
#[allow(unsafe_code)]
mod sys_ts;
#[allow(unsafe_code)]
mod sys_uring;
mod timestamps;
mod udp;
mod udp_rr;
mod udp_stream;
mod uring;
mod worker;
mod workload_def;
mod workloads;

// The shared vocabulary under its crate-local names (`crate::spec`,
// `crate::result`); not re-exported.
use wirespeed_types::{result, spec};

pub use client::{ClientConfig, DEFAULT_PORT, Family, Reach, run_test, run_test_via};
pub use cpu::parse_proc_stat;
pub use error::EngineError;
pub use server::{
    KeyFile, Server, ServerConfig, ServerEvent, flow_limit_for, read_key_file, source_of,
};
pub use side::BYTES_TICK;
pub use sockets::split_host_port;
pub use sys::raise_fd_limit;

/// Internals this workspace's integration tests and fuzz bodies reach
/// (raw wire formats, descriptor counts, the io_uring probe): not an API.
#[doc(hidden)]
pub mod testing {
    pub use crate::client::{Control, check_report};
    pub use crate::sockets::{LocalBind, ResolvedPath, connect_flow};
    pub use crate::sys::open_fds;
    pub use crate::sys_uring::{Ring, RingSize, deny_io_uring_on_this_thread, disabled_by_sysctl};
    pub use crate::udp::{Kind, REGISTER_LEN, parse_registration, registration};
}
