//! The read handlers (`/healthz`, `/metrics`, `/v1/facts`,
//! `/v1/results`) and the fleet's (`PUT /v1/fleet`, `PUT /v1/fleet/part`).

use super::api::{RunRecord, json_error};
use super::openmetrics::openmetrics_to_prometheus;
use super::state::{FACTS_TTL, FactsError, Shared};
use crate::error::Result;
use crate::fleet::Fleet;
use crate::protocol::statement;
use crate::upload::{FleetPart, Progress};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use std::sync::Arc;
use std::time::Instant;

/// `GET /healthz`: `ok NAME BOOT` and the protocol statement
/// (`fleet=2 control=1 release=0.1.0`, [`crate::protocol`]); 503
/// `stopping NAME BOOT ...` once the agent is stopping, so that a
/// controller sees it gone before its process ends.
pub(super) async fn healthz(State(st): State<Arc<Shared>>) -> Response {
    if st.stopping.load(std::sync::atomic::Ordering::Relaxed) {
        let body = format!("stopping {} {} {}\n", st.name, st.boot, statement());
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    }
    format!("ok {} {} {}\n", st.name, st.boot, statement()).into_response()
}

/// Reads the host (at most every [`FACTS_TTL`]) and refreshes the info metrics.
async fn facts_json(st: &Arc<Shared>) -> Result<Arc<serde_json::Value>, FactsError> {
    let mut f = st.facts.lock().await;
    if let (Some(at), Some(j)) = (f.at, &f.json)
        && at.elapsed() < FACTS_TTL
    {
        return j.clone();
    }
    let st2 = st.clone();
    let read = tokio::task::spawn_blocking(move || {
        let s = wirespeed_host::inspect(&wirespeed_host::Fs::default())
            .map_err(|e| FactsError::Host(Arc::new(e)))?;
        st2.metrics.set_facts(&s);
        serde_json::to_value(&s).map_err(|e| FactsError::Encode(Arc::new(e)))
    })
    .await
    .map_err(|e| FactsError::Task(Arc::new(e)))
    .and_then(|r| r)
    .map(Arc::new);
    if read.is_err() {
        st.metrics
            .errors
            .get_or_create(&vec![("role".into(), "facts".into())])
            .inc();
    }
    f.at = Some(Instant::now());
    f.json = Some(read.clone());
    read
}

/// `GET /v1/facts`: the host's snapshot as JSON, with its CPU counters
/// read now (`cpu_ticks`: the watcher's busy hosts come from two
/// readings a probe period apart, not from the snapshot's cache).
pub(super) async fn facts(State(st): State<Arc<Shared>>) -> Response {
    match facts_json(&st).await {
        Ok(j) => {
            let mut v = j.as_ref().clone();
            if let (Some(o), Some(t)) = (v.as_object_mut(), cpu_ticks()) {
                o.insert("cpu_ticks".into(), serde_json::json!(t));
            }
            axum::Json(v).into_response()
        }
        Err(e) => json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read this host: {e}"),
        ),
    }
}

/// `/metrics`: OpenMetrics when the scraper asks for it (Prometheus
/// does), else the Prometheus text format.
pub(super) async fn metrics(State(st): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let _ = facts_json(&st).await;
    let mut out = String::new();
    if encode(&mut out, &st.metrics.registry).is_err() {
        return json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "encoding the metrics failed",
        );
    }
    let openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    if openmetrics {
        let ct = "application/openmetrics-text; version=1.0.0; charset=utf-8";
        return ([(header::CONTENT_TYPE, ct)], out).into_response();
    }
    let ct = "text/plain; version=0.0.4; charset=utf-8";
    (
        [(header::CONTENT_TYPE, ct)],
        openmetrics_to_prometheus(&out),
    )
        .into_response()
}

/// `GET /v1/results`: every test's record, without its full result.
pub(super) async fn results(State(st): State<Arc<Shared>>) -> Response {
    let list: Vec<RunRecord> = st
        .results
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .map(|r| RunRecord {
            result: None,
            ..r.clone()
        })
        .collect();
    axum::Json(list).into_response()
}

/// `GET /v1/results/{id}`: one test's record with its result.
pub(super) async fn result(State(st): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return json_error(StatusCode::BAD_REQUEST, format!("{id:?} is not a test id"));
    };
    match st
        .results
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&id)
    {
        Some(r) => axum::Json(r.clone()).into_response(),
        None => json_error(StatusCode::NOT_FOUND, format!("no test {id} on this agent")),
    }
}

/// `PUT /v1/fleet`: the agent's fleet, unless pinned by `--fleet`.
pub(super) async fn set_fleet(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    if let Some(r) = fleet_pinned(&st) {
        return r;
    }
    match serde_json::from_slice::<Fleet>(&body) {
        Ok(f) => install_fleet(&st, f),
        Err(e) => json_error(StatusCode::BAD_REQUEST, format!("not a fleet: {e}")),
    }
}

/// `PUT /v1/fleet/part`: one part of a fleet too large for one body
/// ([`crate::upload`]); 202 until the last part, then as `PUT /v1/fleet`.
pub(super) async fn set_fleet_part(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    if let Some(r) = fleet_pinned(&st) {
        return r;
    }
    let part: FleetPart = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, format!("not a fleet part: {e}")),
    };
    let progress = st
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .add(part);
    match progress {
        Ok(Progress::Complete(f)) => install_fleet(&st, f),
        Ok(Progress::Partial(got, of)) => (
            StatusCode::ACCEPTED,
            axum::Json(serde_json::json!({ "received": got, "of": of })),
        )
            .into_response(),
        Err(e) => json_error(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

/// The refusal to change a fleet given with --fleet, or None.
fn fleet_pinned(st: &Shared) -> Option<Response> {
    if !st.pinned {
        return None;
    }
    st.metrics.refuse("fleet_pinned");
    Some(json_error(
        StatusCode::CONFLICT,
        "this agent's fleet was given with --fleet and cannot be changed over HTTP",
    ))
}

/// Validates and installs a fleet.
fn install_fleet(st: &Shared, fleet: Fleet) -> Response {
    if let Err(e) = fleet.validate() {
        return json_error(StatusCode::BAD_REQUEST, e.to_string());
    }
    *st.fleet.write().unwrap_or_else(|p| p.into_inner()) = Some(fleet);
    StatusCode::NO_CONTENT.into_response()
}

/// The host's CPU counters now, summed over its cores; None without
/// /proc/stat.
fn cpu_ticks() -> Option<wirespeed_types::fleet::CpuTicks> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let cores = wirespeed_engine::parse_proc_stat(&text);
    (!cores.is_empty()).then(|| wirespeed_types::fleet::CpuTicks {
        busy: cores.iter().map(|c| c.0).sum(),
        total: cores.iter().map(|c| c.1).sum(),
    })
}
