//! The live tests that need the machine to themselves (root): the fleet's
//! (six agents in a lab of namespaces, the matrix, a killed agent, and the
//! watcher, which judges 20 us latency floors over three minutes), the
//! watch's planted faults (watch_faults: six faults found, named and
//! cleared one after another, and busy CPUs that raise nothing) and
//! --breakdown's (growths of under a microsecond in a transaction's
//! segments). A test of another module on the same two cores doubles such
//! floors or moves such segments (the watcher named two hosts for drift
//! that did not happen in CI, 2026-11-30, and the vxlan breakdown failed
//! in a full run the same day, both while in the `live` binary), and cargo
//! runs test binaries one after another. Run one module with
//! `cargo test --release -p wirespeed --test quiet fleet_live::`.

#[path = "../chromium/mod.rs"]
mod chromium;
#[path = "../common/mod.rs"]
mod common;

mod fleet_live;
mod latency_live;
mod watch_faults;
