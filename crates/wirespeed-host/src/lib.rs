//! The host side of wirespeed: read every knob that limits bandwidth
//! (rtnetlink, the ethtool netlink family, /proc/sys, sysfs) into a
//! [`Snapshot`]; turn it into [`Finding`]s with evidence and fixes
//! ([`doctor`]); and change the host through a [`Plan`] of [`Action`]s,
//! applied with a journal of old values, verified, and rolled back on
//! failure, on request or when a confirmation deadline passes ([`tune`]).
//! It also builds topologies for labs ([`netops`]: namespaces, veth,
//! vxlan, routes, qdiscs and MPTCP path managers through [`mptcp`]).
//!
//! [`session`] is the one API that changes a host, used by the
//! binary, optimize and the experiment runner alike; [`netns`] runs code
//! inside a named namespace (on a thread, with that namespace's /sys when
//! asked), and [`reentry`] is the one place the binary is re-run (`--netns`,
//! the tune watchdog, the backup timer). The serde types (snapshot,
//! findings, settings, plans, journals) are wirespeed-types' `host`,
//! re-exported here at their old paths.
//!
//! It never parses `ip` or `ethtool` output; it renders its actions as
//! those commands so people can read them. It carries no traffic. Its
//! `unsafe` is all in the private `sys` module.
#![warn(missing_docs)]
// Unsafe code only in the sys module(s) allowed below.
#![deny(unsafe_code)]

pub mod doctor;
mod error;
pub mod ethtool;
pub mod fsroot;
pub mod guard;
pub mod inspect;
pub mod mptcp;
pub mod netns;
pub mod netops;
mod nl;
pub mod pathmtu;
pub mod profiles;
pub mod reentry;
mod rtnl;
pub mod session;
pub mod snapshot;
#[allow(unsafe_code)]
mod sys;
pub mod sysctl_scope;
pub mod tune;

pub use doctor::{Finding, Severity, diagnose};
pub use error::HostError;
pub use fsroot::Fs;
pub use inspect::inspect;
pub use netops::{LinkSize, Op};
pub use snapshot::{Known, Snapshot};
pub use tune::{Action, Plan};

/// Whether the process runs with effective uid 0 (read from /proc).
pub fn is_root() -> bool {
    tune::euid() == Some(0)
}
