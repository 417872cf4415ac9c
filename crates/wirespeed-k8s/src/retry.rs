//! Requests to the API server retried within a bounded time: an API
//! server that restarts (an upgrade, a crash) refuses connections or
//! answers 503 for seconds to a minute, and a run or a watcher should ride
//! that out, not fail on its first refusal nor hang for minutes.
//!
//! kube's own retry (on by default) retries 429, 503 and 504 up to 15
//! times with a backoff that grows to 1000 s, and never a refused
//! connection. [`ApiRetry`] replaces it: every request whose connection
//! was refused or could not be made (it never reached the server, so any
//! method is safe to send again), reads and idempotent writes that failed
//! on the way, and the API server's own 429, 503 and 504, again and again
//! with a backoff from 100 ms to 4 s, until [`API_RETRY`] has passed since
//! the first failure; then the last error, saying how long it was tried.
//! The pod proxy's own failures (a 503 because the pod is unreachable, a
//! signed request that may have reached its agent) are not retried here:
//! the fleet runner judges those (a signed request sent twice is refused
//! by the agent as a replay).

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use std::time::{Duration, Instant};
use tower::BoxError;
use tower::retry::Policy;

/// How long a request to the API server is retried after its first
/// failure.
pub const API_RETRY: Duration = Duration::from_secs(60);

/// The first pause between tries; it doubles up to [`MOST`].
const FIRST: Duration = Duration::from_millis(100);
/// The longest pause between tries.
const MOST: Duration = Duration::from_secs(4);

/// The retry policy of every client [`crate::cluster::client`] makes.
#[derive(Debug, Clone)]
pub struct ApiRetry {
    budget: Duration,
    first_failure: Option<Instant>,
    pause: Duration,
    tries: u32,
}

impl ApiRetry {
    /// Retries for at most `budget` after a request's first failure.
    pub fn new(budget: Duration) -> ApiRetry {
        ApiRetry {
            budget,
            first_failure: None,
            pause: FIRST,
            tries: 0,
        }
    }
}

/// The error a request ends with when its retries ran out.
#[derive(Debug)]
struct GaveUp {
    tries: u32,
    secs: u64,
    last: BoxError,
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the API server did not answer within {} s ({} tries): {}",
            self.secs,
            self.tries + 1,
            chain(self.last.as_ref())
        )
    }
}

impl std::error::Error for GaveUp {}

type Cause<'a> = &'a (dyn std::error::Error + 'static);

/// `e` and its causes, outermost first.
fn causes(e: Cause<'_>) -> impl Iterator<Item = Cause<'_>> {
    std::iter::successors(Some(e), |c| c.source())
}

/// Whether `e` (or a cause of it) is a request that ran out of retries:
/// the API server stayed unreachable for the whole bound.
pub fn gave_up(e: Cause<'_>) -> bool {
    causes(e).any(|c| c.is::<GaveUp>())
}

/// An error with its causes, `a: b: c` (a cause its outer error already
/// quotes is left out).
fn chain(e: Cause<'_>) -> String {
    let mut s = e.to_string();
    for t in causes(e).skip(1).map(|c| c.to_string()) {
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
    }
    s
}

/// Whether the request never reached the server: no connection was made.
fn never_sent(e: Cause<'_>) -> bool {
    causes(e).any(|c| {
        c.downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(|h| h.is_connect())
            || c.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionRefused
                        | std::io::ErrorKind::HostUnreachable
                        | std::io::ErrorKind::NetworkUnreachable
                )
            })
    })
}

/// A request to an agent through the pod proxy (`.../pods/NAME:PORT/proxy/...`).
fn proxied(req: &Request<Body>) -> bool {
    req.uri().path().contains("/proxy")
}

/// Why `result` should be tried again, if it should.
fn worth_retrying<B>(req: &Request<Body>, result: &Result<Response<B>, BoxError>) -> bool {
    match result {
        Ok(r) => {
            !proxied(req)
                && matches!(
                    r.status(),
                    StatusCode::TOO_MANY_REQUESTS
                        | StatusCode::SERVICE_UNAVAILABLE
                        | StatusCode::GATEWAY_TIMEOUT
                )
        }
        Err(e) => {
            never_sent(e.as_ref())
                || (!proxied(req)
                    && matches!(
                        *req.method(),
                        Method::GET | Method::HEAD | Method::PUT | Method::DELETE
                    ))
        }
    }
}

/// The server's `Retry-After` in seconds, when it gave one.
fn retry_after<B>(result: &Result<Response<B>, BoxError>) -> Option<Duration> {
    let r = result.as_ref().ok()?;
    let s = r.headers().get(http::header::RETRY_AFTER)?.to_str().ok()?;
    s.trim().parse::<u64>().ok().map(Duration::from_secs)
}

impl<B> Policy<Request<Body>, Response<B>, BoxError> for ApiRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        if !worth_retrying(req, result) {
            return None;
        }
        let first = *self.first_failure.get_or_insert_with(Instant::now);
        let left = self.budget.saturating_sub(first.elapsed());
        if left.is_zero() {
            if let Err(e) = result {
                let last = std::mem::replace(e, "".into());
                *e = Box::new(GaveUp {
                    tries: self.tries,
                    secs: self.budget.as_secs(),
                    last,
                });
            }
            return None;
        }
        let pause = retry_after(result).unwrap_or(self.pause).min(left);
        self.pause = (self.pause * 2).min(MOST);
        self.tries += 1;
        Some(tokio::time::sleep(pause))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        let body = req.body().try_clone()?;
        let mut r = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone())
            .version(req.version())
            .body(body)
            .ok()?;
        *r.headers_mut() = req.headers().clone();
        *r.extensions_mut() = req.extensions().clone();
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A client of `http://addr` with [`ApiRetry`] over `budget`.
    async fn client(addr: std::net::SocketAddr, budget: Duration) -> kube::Client {
        let cfg = kube::Config::new(format!("http://{addr}").parse().unwrap());
        crate::cluster::client_from(cfg, budget).unwrap()
    }

    /// Answers each connection's request with `answers` in turn (the last
    /// one for every further connection); counts the requests.
    fn serve(
        l: tokio::net::TcpListener,
        answers: Vec<String>,
    ) -> (
        tokio::task::JoinHandle<()>,
        std::sync::Arc<std::sync::atomic::AtomicU32>,
    ) {
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let seen = n.clone();
        let h = tokio::spawn(async move {
            while let Ok((mut c, _)) = l.accept().await {
                let i = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) as usize;
                let a = answers[i.min(answers.len() - 1)].clone();
                let mut buf = [0u8; 4096];
                let _ = c.read(&mut buf).await;
                let _ = c.write_all(a.as_bytes()).await;
                let _ = c.shutdown().await;
            }
        });
        (h, n)
    }

    /// An HTTP answer with `status` and a JSON `body`.
    fn answer(status: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    fn unavailable() -> String {
        answer("503 Service Unavailable", "{}")
    }

    fn version() -> String {
        answer(
            "200 OK",
            r#"{"major":"1","minor":"37","gitVersion":"v1.37.2","gitCommit":"x","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.26","compiler":"gc","platform":"linux/amd64"}"#,
        )
    }

    /// A loopback address where nothing listens (a port just let go).
    fn closed_port() -> std::net::SocketAddr {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    }

    /// An API server that refuses connections for a while, then comes
    /// back: the request waits and succeeds.
    #[tokio::test]
    async fn a_refused_connection_is_retried_until_the_server_is_back() {
        let addr = closed_port();
        let c = client(addr, Duration::from_secs(20)).await;
        let back = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let l = tokio::net::TcpListener::bind(addr).await.unwrap();
            serve(l, vec![version()])
        });
        let t = Instant::now();
        let v = c.apiserver_version().await;
        let (h, n) = back.await.unwrap();
        h.abort();
        let v = v.expect("answered once the server is back");
        assert_eq!(v.minor, "37");
        assert!(
            t.elapsed() >= Duration::from_millis(600),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// 503 twice, then an answer: three requests, one result.
    #[tokio::test]
    async fn a_503_is_retried() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (h, n) = serve(l, vec![unavailable(), unavailable(), version()]);
        let c = client(addr, Duration::from_secs(20)).await;
        let v = c.apiserver_version().await;
        h.abort();
        assert!(v.is_ok(), "{v:?}");
        assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    /// A server that never comes back: the request fails at the bound,
    /// saying how long it was tried.
    #[tokio::test]
    async fn the_retries_end_at_the_bound() {
        let addr = closed_port();
        let c = client(addr, Duration::from_millis(900)).await;
        let t = Instant::now();
        let e = c.apiserver_version().await.expect_err("nobody answers");
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(800), "{took:?}");
        assert!(took < Duration::from_secs(6), "{took:?}");
        let msg = e.to_string();
        assert!(msg.contains("did not answer within"), "{msg}");
        assert!(gave_up(&e), "{e:?}");
        assert!(crate::K8sError::api("get", e).api_unreachable());
    }

    /// A proxied request's 503 (the pod unreachable) is the runner's to
    /// judge: one request, no retry.
    #[tokio::test]
    async fn a_pod_proxy_503_is_not_retried() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (h, n) = serve(l, vec![unavailable(), version()]);
        let c = client(addr, Duration::from_secs(20)).await;
        let req = http::Request::get("/api/v1/namespaces/ns/pods/p:5380/proxy/healthz")
            .body(Vec::new())
            .unwrap();
        let r = c.request_text(req).await;
        h.abort();
        assert!(r.is_err(), "{r:?}");
        assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
