//! The routes, the key check in front of all but `/healthz`, and the
//! limits on each request (deadline, body size, requests in flight), and
//! the protocol statement on every response ([`crate::protocol::stamp`]).

use super::api::json_error;
use super::config::HttpLimits;
use super::conn::{RawBody, read_body};
use super::handlers::{facts, healthz, metrics, result, results, set_fleet, set_fleet_part};
use super::probe::probe;
use super::run::run;
use super::state::Shared;
use crate::auth::Refusal;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post, put};
use std::sync::Arc;

/// Lets through only requests with the fleet key: a signature for this
/// agent, or the bearer token for reads ([`crate::auth`]).
async fn require_key(State(st): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let body = req
        .extensions()
        .get::<RawBody>()
        .map(|b| b.0.clone())
        .unwrap_or_default();
    let headers = req.headers();
    let get = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let verdict = st
        .verifier
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .verify(
            req.method().as_str(),
            crate::auth::signed_target(req.uri()),
            get,
            &body,
        );
    match verdict {
        Ok(()) => next.run(req).await,
        Err(r) => {
            st.metrics.refuse(match r {
                Refusal::Unauthenticated(_) => "unauthenticated",
                Refusal::WrongAgent(_) => "wrong_agent",
            });
            let status = StatusCode::from_u16(r.status()).unwrap_or(StatusCode::UNAUTHORIZED);
            let mut resp = json_error(status, r.message());
            if status == StatusCode::UNAUTHORIZED {
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer realm=\"wirespeed\""),
                );
            }
            resp
        }
    }
}

/// The agent's HTTP routes under `limits`; `/metrics` without a key when
/// `metrics_open`.
pub(super) fn router(st: Arc<Shared>, limits: &HttpLimits, metrics_open: bool) -> Router {
    use tower::ServiceBuilder;
    let overload = |e: tower::BoxError| async move {
        if e.is::<tower::load_shed::error::Overloaded>() {
            json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the agent is handling too many requests: retry",
            )
        } else {
            json_error(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}"))
        }
    };
    let keyed = Router::new()
        .route("/v1/facts", get(facts))
        .route("/v1/results", get(results))
        .route("/v1/results/{id}", get(result))
        .route("/v1/run", post(run))
        .route("/v1/probe", post(probe))
        .route("/v1/fleet", put(set_fleet))
        .route("/v1/fleet/part", put(set_fleet_part));
    let (keyed, open) = if metrics_open {
        (keyed, Router::new().route("/metrics", get(metrics)))
    } else {
        (keyed.route("/metrics", get(metrics)), Router::new())
    };
    let keyed = keyed.route_layer(axum::middleware::from_fn_with_state(
        st.clone(),
        require_key,
    ));
    Router::new()
        .route("/healthz", get(healthz))
        .merge(open)
        .merge(keyed)
        .with_state(st)
        .layer(
            ServiceBuilder::new()
                .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    limits.request_timeout,
                ))
                .layer(DefaultBodyLimit::max(limits.max_body))
                .layer(axum::middleware::from_fn(read_body))
                .layer(axum::error_handling::HandleErrorLayer::new(overload))
                .load_shed()
                .concurrency_limit(limits.max_in_flight),
        )
        .layer(axum::middleware::from_fn(crate::protocol::stamp))
}
