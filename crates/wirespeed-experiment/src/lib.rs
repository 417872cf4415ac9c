//! Measured tests for wirespeed, planned and judged: experiment files
//! (the format, the planner, placeholder resolution and the runner),
//! optimize's search, doctor's measured (peer) rules and the demo's
//! scenario, and doctor itself ([`doctor_peer::doctor`]). Tests run with the
//! engine in-process, inside a lab's network namespaces when there is a
//! lab (the internal `in_netns`, which also runs a cell beside loaders from other lab
//! hosts for `--loaders`); tuning a lab host runs wirespeed-host's tune session
//! in-process too, on a thread with that namespace's /sys. It starts no
//! wirespeed process.
//!
//! A cell ([`cell::BenchArgs`] and the [`wirespeed_types::TestSpec`] it
//! makes) is built through the same clap definitions `wirespeed bench`
//! parses. This crate neither renders pages (wirespeed-report) nor
//! changes a host itself (wirespeed-host's journal and the lab do).

#![warn(missing_docs)]
// Unsafe code only in the sys module(s) allowed below.
#![deny(unsafe_code)]

pub mod cell;
pub mod demo;
pub mod doctor_peer;
mod error;
pub mod experiment;
mod in_netns;
pub mod optimize;
pub mod progress;
pub mod runner;
#[allow(unsafe_code)]
pub mod sys;

pub use cell::{BenchArgs, spec_from};
pub use error::{CellError, Context, ExperimentError, Result};
