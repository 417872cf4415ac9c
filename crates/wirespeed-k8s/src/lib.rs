//! wirespeed on Kubernetes: typed manifests for agents on the host
//! network, the pod network or NICs claimed through DRA (DraNet); applying
//! them with server-side apply, discovering the agents' addresses, running
//! the fleet matrix against them and deleting what a run made.
//!
//! kube-rs and k8s-openapi live in this crate only.

#![warn(missing_docs)]

pub mod cluster;
pub mod deploy;
pub mod discover;
mod error;
pub mod manifests;
pub mod run;
pub mod testkit;

pub use deploy::Deployment;
pub use discover::{Agent, AgentNic, discover};
pub use error::K8sError;
pub use manifests::{Network, NicSelector, Object, Options};
pub use run::{Comparison, NetworkRun, RunConfig, compare, render_comparison, run_blocking};
