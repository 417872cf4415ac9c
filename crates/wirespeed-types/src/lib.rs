//! wirespeed's shared vocabulary: what a test is ([`TestSpec`]), what it
//! measured ([`TestResult`], [`Report`]) and the units a user types (sizes,
//! rates, durations), each parsed once with one range per unit; the
//! result schemas with their statistics ([`experiment`], [`fleet`],
//! [`paths`], [`interference`]) and the one median ([`stats`]); whether a test's ends had
//! CPU to spare ([`contention`]); what is read from and
//! changed on a host ([`host`]); numbers as people read them ([`text`]);
//! the protocol versions two releases agree on ([`protocol`]).
//!
//! The engine produces these types, the model judges them and the report
//! renders them; this crate has no sockets, so the pure crates do not
//! compile the data plane.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod breakdown;
pub mod contention;
pub mod error;
pub mod experiment;
pub mod fleet;
pub mod host;
pub mod interference;
pub mod paths;
pub mod protocol;
pub mod result;
pub mod spec;
pub mod stats;
pub mod text;
pub mod units;

pub use error::Invalid;
pub use result::{Report, SCHEMA_VERSION, TestResult};
pub use spec::{Direction, Limits, PathSpec, TestSpec, Workload};
