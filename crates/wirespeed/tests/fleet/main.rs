//! The fleet's live tests (root): six agents as processes in a lab of
//! namespaces, the matrix, a killed agent, the watcher and its drift
//! events. A binary of their own because the watcher judges latency floors
//! over three minutes: a test of another binary on the same two cores
//! doubles them (a host named for drift that did not happen), and cargo
//! runs test binaries one after another. Run it with
//! `cargo test --release -p wirespeed --test fleet`.

#[path = "../chromium/mod.rs"]
mod chromium;
#[path = "../common/mod.rs"]
mod common;

mod fleet_live;
