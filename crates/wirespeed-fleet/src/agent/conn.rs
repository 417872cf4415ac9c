//! HTTP connections: the accept loop with its caps per source and in all
//! (idle or slow ones displaced to make room), and the middleware that
//! reads a request's body before it counts as handled.

use super::config::HttpLimits;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The whole body of a request, read before it is handled.
#[derive(Clone)]
pub(super) struct RawBody(pub(super) Bytes);

/// The connection a request came on (put there by the accept loop).
#[derive(Clone)]
struct ConnMark(Arc<ConnState>);

/// A request being handled on a connection; dropping it ends that.
struct Handling(Arc<ConnState>);

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.handling.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads the whole body (bounded by the body limit and the request
/// deadline) and only then counts the request as handled: a client that
/// trickles its body holds no place in flight, and its connection stays
/// one the accept loop may displace.
pub(super) async fn read_body(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = match Bytes::from_request(Request::from_parts(parts.clone(), body), &()).await {
        Ok(b) => b,
        Err(rejection) => return rejection.into_response(),
    };
    let _handling = parts.extensions.get::<ConnMark>().map(|m| {
        m.0.handling.fetch_add(1, Ordering::SeqCst);
        Handling(m.0.clone())
    });
    let mut req = Request::from_parts(parts, axum::body::Body::from(bytes.clone()));
    req.extensions_mut().insert(RawBody(bytes));
    next.run(req).await
}

/// What the accept loop knows of one live connection.
#[derive(Default)]
struct ConnState {
    /// Requests on it being handled (body read, answer not yet made).
    handling: AtomicUsize,
    /// Closes the connection when notified (displaced).
    kick: tokio::sync::Notify,
}

/// A live connection: its source and its state.
struct Conn {
    source: IpAddr,
    state: Arc<ConnState>,
}

/// The HTTP connections by age and source: the caps of [`HttpLimits`]
/// are checked here, under one lock, as the engine server's are.
#[derive(Default)]
struct ConnTable {
    next: u64,
    /// Oldest first (ids only grow).
    conns: BTreeMap<u64, Conn>,
    per_source: HashMap<IpAddr, usize>,
}

impl ConnTable {
    /// Admits a connection from `source` (an address or IPv6 /64): at the
    /// per-source cap it displaces that source's oldest connection not
    /// handling a request; at the total cap, the oldest such connection
    /// of the source holding the most. Connections waiting for their
    /// headers or body, or idle between requests, can be displaced; one
    /// handling a request cannot. None (turn the new one away) when no
    /// connection can go. Also the number displaced.
    fn admit(&mut self, source: IpAddr, limits: &HttpLimits) -> Option<(u64, Arc<ConnState>, u64)> {
        let mut displaced = 0;
        let idle = |c: &Conn| c.state.handling.load(Ordering::SeqCst) == 0;
        if self.per_source.get(&source).copied().unwrap_or(0) >= limits.max_per_source.max(1) {
            let victim = self
                .conns
                .iter()
                .find(|(_, c)| c.source == source && idle(c))
                .map(|(id, _)| *id)?;
            self.displace(victim);
            displaced += 1;
        }
        if self.conns.len() >= limits.max_connections.max(1) {
            let mut victim: Option<(usize, u64)> = None;
            for (id, c) in self.conns.iter().filter(|(_, c)| idle(c)) {
                let n = self.per_source.get(&c.source).copied().unwrap_or(0);
                if victim.is_none_or(|(most, _)| n > most) {
                    victim = Some((n, *id));
                }
            }
            self.displace(victim?.1);
            displaced += 1;
        }
        let id = self.next;
        self.next += 1;
        let state = Arc::new(ConnState::default());
        self.conns.insert(
            id,
            Conn {
                source,
                state: state.clone(),
            },
        );
        *self.per_source.entry(source).or_default() += 1;
        Some((id, state, displaced))
    }

    /// Closes connection `id` to make room.
    fn displace(&mut self, id: u64) {
        if let Some(c) = self.leave(id) {
            c.state.kick.notify_one();
        }
    }

    /// Forgets connection `id` (it ended or was displaced).
    fn leave(&mut self, id: u64) -> Option<Conn> {
        let c = self.conns.remove(&id)?;
        if let Some(n) = self.per_source.get_mut(&c.source) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&c.source);
            }
        }
        Some(c)
    }
}

/// The gauges an HTTP accept loop keeps: connections open and evictions.
#[derive(Clone, Default)]
pub(crate) struct ConnGauges {
    pub(crate) open: Gauge,
    pub(crate) evictions: Counter,
}

/// Serves `app` on `listener` until `stop`: each source's connections
/// bounded and the idle or slow ones of the source holding the most
/// evicted first ([`HttpLimits`]), so one client cannot deny another.
pub(crate) async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    gauges: ConnGauges,
    limits: HttpLimits,
    stop: Arc<tokio::sync::Notify>,
) {
    let table: Arc<Mutex<ConnTable>> = Arc::default();
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.notified() => return,
            a = listener.accept() => match a {
                Ok(x) => x,
                // Out of descriptors and the like: wait a little, go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let admitted = {
            let mut t = table.lock().unwrap_or_else(|p| p.into_inner());
            let a = t.admit(wirespeed_engine::source_of(peer.ip()), &limits);
            gauges.open.set(t.conns.len() as i64);
            a
        };
        let Some((id, state, displaced)) = admitted else {
            continue; // dropped: closed at once
        };
        gauges.evictions.inc_by(displaced);
        let mark = ConnMark(state.clone());
        // A body larger than the limit is refused (413) before it is read.
        let svc = hyper_util::service::TowerToHyperService::new(
            tower::ServiceBuilder::new()
                .map_request(move |mut r: hyper::Request<hyper::body::Incoming>| {
                    r.extensions_mut().insert(mark.clone());
                    r
                })
                .layer(tower_http::limit::RequestBodyLimitLayer::new(
                    limits.max_body,
                ))
                .service(app.clone()),
        );
        let (header_timeout, lifetime) = (limits.header_timeout, limits.connection_lifetime);
        let (table, gauges) = (table.clone(), gauges.clone());
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
            tokio::select! {
                _ = tokio::time::timeout(lifetime, conn) => {}
                _ = state.kick.notified() => {}
            }
            let mut t = table.lock().unwrap_or_else(|p| p.into_inner());
            t.leave(id);
            gauges.open.set(t.conns.len() as i64);
        });
    }
}
