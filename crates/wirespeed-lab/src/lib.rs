//! Emulated hosts for wirespeed: network namespaces joined by veth pairs,
//! with per-NIC rate caps (tbf or htb), VXLAN overlays, ECMP multipath
//! routes (the stand-in for a bond's hash policy), per-NIC source routing,
//! sysctls and firewall rule sets (nftables or iptables, as a network
//! policy enforcer loads them), described in TOML or in code.
//!
//! A [`Lab`] is a guard: dropping it removes every namespace it made, also
//! when a test fails or panics. This crate builds topologies; it does not
//! move traffic or inspect hosts.
//!
//! [`fault`] plants delay, loss and rate-cap faults on chosen packets of a
//! lab host (NFQUEUE, iptables, htb: no netem here), removed on drop.

#![warn(missing_docs)]
// Unsafe code only in the sys module(s) allowed below.
#![deny(unsafe_code)]

mod build;
mod error;
pub mod fault;
pub mod plan;
mod policy;
pub mod spec;
#[allow(unsafe_code)]
mod sys;

pub use build::{
    Lab, LabState, apply, build_ops, cap_ops, destroy, flow_cap_ops, is_root, load_state, ns_name,
    owner_pid, pid_alive, save_state, sweep_stale, tbf_sizes,
};
pub use error::LabError;
pub use fault::{FaultKind, FaultMatch, FaultSpec, Planted};
pub use plan::{Addressing, Nic, Pair};
pub use spec::{
    CapKind, Enforcer, Hook, HostSpec, LabSpec, LinkSpec, Lookup, PolicySpec, RouteSpec, VxlanSpec,
};
pub use sys::spawn_in;
pub use wirespeed_host::Op;
