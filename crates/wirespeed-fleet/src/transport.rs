//! How the controller reaches an agent's HTTP API.
//!
//! [`AgentClient`](crate::run::AgentClient) builds each request as the
//! agent sees it (method, path and query, headers, body; signed over that
//! whole target, [`crate::auth::signed_target`]) and
//! hands it to an [`AgentTransport`]. [`Direct`] sends it over HTTP to the
//! agent's `http` address, which the controller must reach; another
//! transport may relay it (wirespeed-k8s sends it through the Kubernetes
//! API server's pod proxy, so a laptop that reaches only the API server can
//! run the matrix). The data plane never goes through a transport: agents
//! test each other on their own addresses.

use crate::error::{FleetError, Result};
use crate::fleet::AgentSpec;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed, sendable future (no async-trait dependency).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One request to an agent's HTTP API, as the agent sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRequest {
    /// `GET`, `PUT` or `POST`.
    pub method: String,
    /// The request target on the agent: the path, and `?query` when there
    /// is one, e.g. `/v1/run` (all of it is what a signature covers, so a
    /// transport sends it as it is).
    pub path: String,
    /// Header names and values (the signature's among them).
    pub headers: Vec<(String, String)>,
    /// The body (empty for reads).
    pub body: Vec<u8>,
}

/// The agent's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentResponse {
    /// HTTP status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

/// Carries requests to one agent. `send`'s error is why no answer came
/// from the agent (cannot connect, a relay's refusal), in words for a
/// person; the caller adds which agent and what was asked.
pub trait AgentTransport: Send + Sync {
    /// Sends `req` and returns the agent's answer, whatever its status.
    fn send(&self, req: AgentRequest) -> BoxFuture<'_, Result<AgentResponse, String>>;
    /// Where requests go, for messages (`http://10.0.0.1:5380`).
    fn describe(&self) -> String;
    /// Whether the transport itself makes sure which agent answers (the
    /// API server's pod proxy reaches exactly the pod it names): the
    /// client then signs for the name that agent tells in `/healthz`
    /// rather than for the fleet entry's [`AgentSpec::signs_for`].
    fn vouches_for_agent(&self) -> bool {
        false
    }
    /// Called after a request failed: when the way to the agent (a relay
    /// such as the API server, not the agent) is out, waits until it is
    /// back and returns how long that took; Err when it stayed out past
    /// the transport's own bound, saying so. A relay's outage must not
    /// count against the agent. [`Direct`] has no relay: zero at once.
    fn wait_relay(&self) -> BoxFuture<'_, Result<Duration, String>> {
        Box::pin(async { Ok(Duration::ZERO) })
    }
}

/// Makes the transport for each agent of a run.
pub type TransportFactory =
    Arc<dyn Fn(&AgentSpec) -> Result<Arc<dyn AgentTransport>> + Send + Sync>;

/// HTTP straight to the agent's `http` address (proxies ignored).
#[derive(Debug, Clone)]
pub struct Direct {
    http: reqwest::Client,
    base: String,
}

impl Direct {
    /// A transport to `agent.http`, each request bounded by `timeout`.
    pub fn new(agent: &AgentSpec, timeout: Duration) -> Result<Direct> {
        // A new connection for each request: one kept from before an
        // agent restarted, or closed at the agent's connection lifetime,
        // would fail the request that meets it.
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .pool_max_idle_per_host(0)
            .no_proxy()
            .build()
            .map_err(|e| FleetError::Agent {
                agent: agent.name.clone(),
                message: format!("cannot make an HTTP client: {e}"),
            })?;
        Ok(Direct {
            http,
            base: format!("http://{}", agent.http),
        })
    }

    async fn send_now(&self, req: AgentRequest) -> Result<AgentResponse, String> {
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| format!("{:?} is not an HTTP method", req.method))?;
        let mut rb = self
            .http
            .request(method, format!("{}{}", self.base, req.path));
        for (k, v) in &req.headers {
            rb = rb.header(k, v);
        }
        if !req.body.is_empty() {
            rb = rb.body(req.body);
        }
        let r = rb.send().await.map_err(why)?;
        let status = r.status().as_u16();
        let body = r.bytes().await.map_err(why)?.to_vec();
        Ok(AgentResponse { status, body })
    }
}

/// reqwest's error in a few words: the innermost cause says the most.
fn why(e: reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    if e.is_connect() {
        return "cannot connect".into();
    }
    let mut s: &dyn std::error::Error = &e;
    while let Some(src) = s.source() {
        s = src;
    }
    s.to_string()
}

impl AgentTransport for Direct {
    fn send(&self, req: AgentRequest) -> BoxFuture<'_, Result<AgentResponse, String>> {
        Box::pin(self.send_now(req))
    }

    fn describe(&self) -> String {
        self.base.clone()
    }
}

/// The default factory: [`Direct`] with `timeout`.
pub fn direct(timeout: Duration) -> TransportFactory {
    Arc::new(move |a: &AgentSpec| {
        Direct::new(a, timeout).map(|d| Arc::new(d) as Arc<dyn AgentTransport>)
    })
}
