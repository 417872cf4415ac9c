//! The HTTP API's bodies: what `POST /v1/run` and `POST /v1/probe` take
//! and answer, a
//! test's record, and the error body every refusal carries.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use wirespeed_types::{TestResult, TestSpec};

/// What `POST /v1/run` takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The peer (an agent of the fleet) whose server answers.
    pub peer: String,
    /// What to run; each path's remote must be one of the peer's addresses.
    pub spec: TestSpec,
    /// The workload's label for metrics and results (e.g. `rr-64k`).
    #[serde(default)]
    pub label: Option<String>,
}

/// What `POST /v1/probe` takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeRequest {
    /// The peer (an agent of the fleet) whose HTTP address is tried.
    pub peer: String,
    /// How long to wait for the connection, ms (default 1000, at most 5000).
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// What `POST /v1/probe` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeAnswer {
    /// Whether the connection was made.
    pub reached: bool,
    /// The address and what happened (`connected to ...`, the error).
    pub detail: String,
}

/// What `POST /v1/run` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    /// The test's id on this agent.
    pub id: u64,
}

/// A test's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Still running.
    Running,
    /// Finished with a result.
    Done,
    /// Ended with an error.
    Failed,
}

/// One test an agent ran (`GET /v1/results/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Its id.
    pub id: u64,
    /// The peer.
    pub peer: String,
    /// The workload's label.
    pub label: String,
    /// Its state.
    pub state: RunState,
    /// Tests this agent ran at once with it (besides itself), at its start.
    pub concurrent_with: u32,
    /// Why it failed.
    pub error: Option<String>,
    /// The result (done only; left out of `GET /v1/results`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TestResult>,
    /// Goodput, bits per second (done only).
    pub throughput_bps: Option<f64>,
}

/// What error answers carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What is wrong and what to do.
    pub error: String,
}

/// An [`ErrorBody`] answer with `status`.
pub(crate) fn json_error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, axum::Json(ErrorBody { error: msg.into() })).into_response()
}
