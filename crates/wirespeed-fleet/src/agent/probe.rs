//! `POST /v1/probe`: whether this agent reaches a fleet peer's HTTP port.
//! It is how a controller sees a network policy take effect: the
//! namespace's own policy does not admit agent-to-agent HTTP, so an
//! enforcing network refuses the connection until a policy that admits
//! it is in force (`wirespeed k8s run --policy-load`). One connection per
//! request, only to a peer of the agent's fleet, bounded in time.

use super::api::{ProbeAnswer, ProbeRequest, json_error};
use super::run::{Refused, peer_named};
use super::state::Shared;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;

/// The longest a probe waits for its connection.
pub const MAX_PROBE_WAIT: Duration = Duration::from_secs(5);

/// Probes one agent answers at once; more get 429.
pub const MAX_PROBES: u64 = 4;

/// A probe's place among [`MAX_PROBES`], given back when dropped.
struct Place<'a>(&'a std::sync::atomic::AtomicU64);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `POST /v1/probe`: connects to the peer's HTTP address and says whether
/// it could (the connection is closed at once, nothing is sent).
pub(super) async fn probe(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let req: ProbeRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            st.metrics.refuse("bad_request");
            return json_error(
                StatusCode::BAD_REQUEST,
                format!("not a probe request: {e}: send {{\"peer\": NAME, \"wait_ms\": N}}"),
            );
        }
    };
    let wait = Duration::from_millis(req.wait_ms.unwrap_or(1000));
    if wait.is_zero() || wait > MAX_PROBE_WAIT {
        st.metrics.refuse("bad_request");
        return json_error(
            StatusCode::BAD_REQUEST,
            format!(
                "wait_ms {}: give 1 to {}",
                wait.as_millis(),
                MAX_PROBE_WAIT.as_millis()
            ),
        );
    }
    let peer = match peer_named(&st, &req.peer) {
        Ok(p) => p,
        Err(Refused {
            reason,
            status,
            message,
        }) => {
            st.metrics.refuse(reason);
            return json_error(status, message);
        }
    };
    if st.probes.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= MAX_PROBES {
        st.probes.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        st.metrics.refuse("busy");
        return json_error(
            StatusCode::TOO_MANY_REQUESTS,
            format!("{MAX_PROBES} probes are running on this agent: retry"),
        );
    }
    let _place = Place(&st.probes);
    let answer = match tokio::time::timeout(wait, tokio::net::TcpStream::connect(&peer.http)).await
    {
        Ok(Ok(_)) => ProbeAnswer {
            reached: true,
            detail: format!("connected to {}", peer.http),
        },
        Ok(Err(e)) => ProbeAnswer {
            reached: false,
            detail: format!("{}: {e}", peer.http),
        },
        Err(_) => ProbeAnswer {
            reached: false,
            detail: format!("{}: no answer within {} ms", peer.http, wait.as_millis()),
        },
    };
    axum::Json(answer).into_response()
}
