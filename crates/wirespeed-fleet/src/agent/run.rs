//! `POST /v1/run`: a test towards a fleet peer, checked, admitted under
//! `--max-tests`, recorded and run in the background.

use super::api::{RunRecord, RunRequest, RunStarted, RunState, json_error};
use super::config::MAX_RESULTS;
use super::state::Shared;
use crate::fleet::AgentSpec;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use wirespeed_engine::ClientConfig;
use wirespeed_types::{TestResult, TestSpec};

/// Checks a run's spec before it is accepted: the engine's sanity bounds
/// (the peer's own limits are checked when the test connects). A test
/// ended by bytes has no duration of its own to bound.
fn check_spec(spec: &TestSpec) -> std::result::Result<(), wirespeed_types::Invalid> {
    let mut limits = wirespeed_types::Limits::default();
    if spec.bytes.is_some() {
        limits.max_duration_s = f64::INFINITY;
    }
    spec.validate(&limits)
}

/// `POST /v1/run`: checks the request, admits it, records it and runs the
/// test in the background; 202 with the test's id.
pub(super) async fn run(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let admitted = parse_request(&body).and_then(|req| {
        let peer = fleet_peer(&st, &req)?;
        Ok((req, peer, take_test_place(&st)?))
    });
    let (req, peer, before) = match admitted {
        Ok(x) => x,
        Err(r) => {
            st.metrics.refuse(r.reason);
            return json_error(r.status, r.message);
        }
    };
    let id = st.next_id.fetch_add(1, Ordering::SeqCst) + 1;
    let label = req
        .label
        .clone()
        .unwrap_or_else(|| format!("{:?}", req.spec.workload).to_lowercase());
    record_started(&st, id, &peer.name, &label, before);
    let cfg = ClientConfig {
        server: peer.control.clone(),
        port: wirespeed_engine::DEFAULT_PORT,
        key: Some(st.key.clone()),
        timeout: st.test_timeout,
    };
    let st2 = st.clone();
    tokio::task::spawn_blocking(move || {
        let out = wirespeed_engine::run_test(&cfg, &req.spec, &mut |_| {});
        finish_run(&st2, id, &peer.name, &label, out);
    });
    (StatusCode::ACCEPTED, axum::Json(RunStarted { id })).into_response()
}

/// A run refused: the reason counted in the metrics, the answer's status
/// and message.
pub(super) struct Refused {
    pub(super) reason: &'static str,
    pub(super) status: StatusCode,
    pub(super) message: String,
}

impl Refused {
    pub(super) fn new(
        reason: &'static str,
        status: StatusCode,
        message: impl Into<String>,
    ) -> Refused {
        Refused {
            reason,
            status,
            message: message.into(),
        }
    }
}

/// The request in `body` with a spec that passes [`check_spec`], or the
/// 400 refusal.
fn parse_request(body: &[u8]) -> Result<RunRequest, Refused> {
    let req: RunRequest = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => {
            return Err(Refused::new(
                "bad_request",
                StatusCode::BAD_REQUEST,
                format!("not a run request: {e}"),
            ));
        }
    };
    if let Err(e) = check_spec(&req.spec) {
        return Err(Refused::new(
            "bad_request",
            StatusCode::BAD_REQUEST,
            format!("invalid spec: {e}"),
        ));
    }
    Ok(req)
}

/// The request's peer from the agent's fleet, every path ending at one of
/// its addresses; else the 403 refusal.
fn fleet_peer(st: &Shared, req: &RunRequest) -> Result<AgentSpec, Refused> {
    let peer = peer_named(st, &req.peer)?;
    if let Some(p) = req.spec.paths.iter().find(|p| !peer.owns(&p.remote)) {
        return Err(Refused::new(
            "not_in_fleet",
            StatusCode::FORBIDDEN,
            format!(
                "path remote {:?} is not an address of peer {:?} in the fleet",
                wirespeed_engine::proto::printable(&p.remote, 80),
                peer.name
            ),
        ));
    }
    Ok(peer)
}

/// The agent named `name` in this agent's fleet, or the 403 refusal: an
/// agent connects only to peers of its fleet.
pub(super) fn peer_named(st: &Shared, name: &str) -> Result<AgentSpec, Refused> {
    let fleet = st.fleet.read().unwrap_or_else(|p| p.into_inner());
    let Some(fleet) = fleet.as_ref() else {
        return Err(Refused::new(
            "no_fleet",
            StatusCode::FORBIDDEN,
            "this agent has no fleet yet (start it with --fleet FILE, or PUT /v1/fleet): it tests only peers of its fleet",
        ));
    };
    match fleet.agent(name) {
        Some(p) => Ok(p.clone()),
        None => Err(Refused::new(
            "not_in_fleet",
            StatusCode::FORBIDDEN,
            format!(
                "peer {:?} is not in this agent's fleet ({} agents): it tests only peers of its fleet",
                wirespeed_engine::proto::printable(name, 80),
                fleet.agents.len()
            ),
        )),
    }
}

/// Takes one of the `--max-tests` places: the number of tests running
/// before this one, or the 429 refusal.
fn take_test_place(st: &Shared) -> Result<u64, Refused> {
    if st.stopping.load(Ordering::Relaxed) {
        return Err(Refused::new(
            "stopping",
            StatusCode::SERVICE_UNAVAILABLE,
            "this agent is stopping (its pod or process is being shut down)".to_string(),
        ));
    }
    // Count ourselves in before the check so two requests cannot both pass.
    let before = st.running.fetch_add(1, Ordering::SeqCst);
    if before as usize >= st.max_tests {
        st.running.fetch_sub(1, Ordering::SeqCst);
        return Err(Refused::new(
            "busy",
            StatusCode::TOO_MANY_REQUESTS,
            format!("this agent runs {} tests already (its limit)", st.max_tests),
        ));
    }
    Ok(before)
}

/// Records test `id` as running, dropping the oldest records past
/// [`MAX_RESULTS`].
fn record_started(st: &Shared, id: u64, peer: &str, label: &str, before: u64) {
    let mut rs = st.results.lock().unwrap_or_else(|p| p.into_inner());
    while rs.len() >= MAX_RESULTS {
        let first = *rs.keys().next().expect("not empty");
        rs.remove(&first);
    }
    rs.insert(
        id,
        RunRecord {
            id,
            peer: peer.to_string(),
            label: label.to_string(),
            state: RunState::Running,
            concurrent_with: before as u32,
            error: None,
            result: None,
            throughput_bps: None,
        },
    );
}

/// Counts test `id`'s outcome in the metrics, stores it in its record and
/// gives its `--max-tests` place back.
fn finish_run(
    st: &Shared,
    id: u64,
    peer: &str,
    label: &str,
    out: Result<TestResult, wirespeed_engine::EngineError>,
) {
    let outcome = if out.is_ok() { "ok" } else { "error" };
    st.metrics
        .tests
        .get_or_create(&vec![
            ("role".into(), "client".into()),
            ("outcome".into(), outcome.into()),
        ])
        .inc();
    if let Ok(r) = &out {
        st.metrics.record(peer, label, r);
    } else {
        st.metrics
            .errors
            .get_or_create(&vec![("role".into(), "client".into())])
            .inc();
    }
    if let Some(rec) = st
        .results
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_mut(&id)
    {
        match out {
            Ok(r) => {
                rec.state = RunState::Done;
                rec.throughput_bps = Some(r.throughput_bps);
                rec.result = Some(r);
            }
            Err(e) => {
                rec.state = RunState::Failed;
                rec.error = Some(e.to_string());
            }
        }
    }
    st.running.fetch_sub(1, Ordering::SeqCst);
}
