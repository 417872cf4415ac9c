//! wirespeed's fleet: many hosts, every link measured, the odd ones
//! explained.
//!
//! - [`agent`]: `wirespeed agent`, the engine server plus a keyed HTTP API
//!   (`/healthz`, Prometheus `/metrics`, results and facts,
//!   `POST /v1/run` to test a peer of its fleet; all but `/healthz` keyed,
//!   [`auth`]); [`agent::serve`].
//! - [`fleet`]: the agents of a fleet (a TOML file or built in code);
//!   [`upload`]: a fleet too large for one request, sent in parts.
//! - [`plan`](mod@plan): who tests whom, in rounds that keep each host in at most
//!   K tests at once; [`plan()`].
//! - [`run`](mod@run): the controller that runs a plan through the agents;
//!   [`run()`] / [`run_async`].
//! - [`transport`]: how the controller reaches an agent's HTTP API
//!   ([`transport::Direct`] HTTP by default; a relay such as the
//!   Kubernetes API server's pod proxy through [`RunOptions::transport`]).
//! - [`schedule`]: the watcher's schedule of probes and bandwidth tests
//!   under a budget, computed from the clock.
//! - [`watch`]: `wirespeed fleet watch`, the schedule run for ever:
//!   results stored as they come, Prometheus series and a live page
//!   ([`watch_http`]); each series judged against its own baseline
//!   ([`health`]), the links that are not healthy explained by the
//!   smallest thing they share ([`localize`]), incidents opened and
//!   closed ([`incident`]) with the host facts that changed ([`drift`]).
//! - [`history`]: every run's tests and host facts in one SQLite file,
//!   queried by pair and time, pruned by age.
//! - [`protocol`]: the versions every endpoint states (a header on each
//!   request and response, the end of `/healthz`), and the error that
//!   names both releases when a runner and an agent share none.
//! - [`analyze`]: the matrix per workload, outliers against the noise
//!   band, drift from the fleet majority, and the `--min`/baseline verdict.
//! - [`interference`]: a victim agent's rr to a server beside K loaders
//!   on other agents, per K and block size (report 3's many clients).
//!
//! The results are [`wirespeed_types::fleet::FleetResults`] (serde,
//! versioned); wirespeed-report renders them. The Kubernetes runner
//! (wirespeed-k8s) builds a [`Fleet`] from the pods it finds and calls
//! [`plan()`] and [`run_async`].

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod agent;
pub mod analyze;
pub mod auth;
pub mod drift;
mod error;
pub mod fleet;
pub mod health;
pub mod history;
pub mod incident;
pub mod interference;
pub mod localize;
pub mod plan;
pub mod protocol;
pub mod run;
pub mod schedule;
pub mod transport;
pub mod upload;
pub mod watch;
pub mod watch_http;

pub use agent::{Agent, AgentConfig, serve};
pub use error::{Fault, FleetError, Result};
pub use fleet::{AgentSpec, Fleet, NicSpec};
pub use plan::{Job, Pattern, Plan, Round, plan};
pub use run::{Progress, RunOptions, WorkloadSpec, run, run_async};
pub use transport::{
    AgentRequest, AgentResponse, AgentTransport, TransportError, TransportFactory,
};
pub use wirespeed_types::fleet::FleetResults;
