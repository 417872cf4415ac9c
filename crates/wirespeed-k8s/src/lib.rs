//! wirespeed on Kubernetes: typed manifests for agents on the host
//! network, the pod network or NICs claimed through DRA (DraNet); applying
//! them with server-side apply, discovering the agents' addresses, running
//! the fleet matrix against them and deleting what a run made.
//!
//! - [`manifests`], `deploy` (internal), [`cluster`]: the objects, applied and
//!   deleted again; `lock` (internal): one run per namespace at a time; [`runner_job`]: what runs `k8s run` inside the cluster;
//!   [`cleanup`]: what runs that did not end left behind, deleted by label.
//! - [`dranet`]: DraNet's vocabulary (NIC selectors, its config mapped
//!   from a profile, the devices a ResourceSlice publishes); [`dra`]: the
//!   checks against a cluster's ResourceSlices and the shared DeviceClass
//!   made when missing (the DeviceClass and claim template themselves are
//!   built with the other objects in [`manifests`]).
//! - [`rollout`], [`discover()`]: waiting for the agents, saying why they
//!   are not Ready, and reading their addresses.
//! - `proxy` (internal): the agents' HTTP APIs through the API server's pod proxy;
//!   [`retry`]: requests to the API server retried within a bounded time.
//! - [`nodes`], `paths` (internal): which nodes a run tests, the paths between
//!   them (same node, across nodes and zones, through a Service, hairpin,
//!   host network, DRA NICs), the pairs no asked path measures, and rounds
//!   that never put two tests on one host's CPUs (nodes sharing a boot id).
//! - [`sysctls`]: which of a profile's sysctls the pods may set, per
//!   node's kernel and kubelet, and what each pod had in force.
//! - [`run`]: the whole run; [`compare()`]: the paths side by side, one row
//!   per path (and each path under each policy load); [`gates`]: pass or
//!   fail per case (floors, a baseline, the gap to the host network),
//!   contended cases neither; [`policy_load`]: the NetworkPolicies of
//!   `--policy-load` and the probe that sees them in force.
//! - [`watch`]: `fleet watch` as a Deployment beside the agents, finding
//!   them through the API server (`k8s watch`).
//! - `testkit` (feature `testkit`, which only the tests' dev-dependencies
//!   enable): a real apiserver for tests and the controllers it lacks.
//!
//! kube-rs and k8s-openapi live in this crate only.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(test)]
mod advice_tests;
pub mod cleanup;
pub mod cluster;
pub mod compare;
mod deploy;
pub mod discover;
pub mod dra;
pub mod dranet;
mod error;
pub mod gates;
mod lock;
pub mod manifests;
pub mod nodes;
mod paths;
pub mod policy_load;
mod proxy;
pub mod retry;
pub mod rollout;
pub mod run;
pub mod runner_job;
pub mod sysctls;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod watch;

pub use compare::{Comparison, compare, compare_policy, render_comparison};
pub use deploy::Deployment;
pub use discover::{Agent, AgentNic, discover, discover_with};
pub use error::{ConfigError, K8sError, RenderError};
pub use manifests::{Network, NicSelector, Object, Options};
pub use paths::PathKind;
pub use proxy::Reach;
pub use run::{OnCase, PathRun, RunConfig, RunOutcome, run_blocking};
