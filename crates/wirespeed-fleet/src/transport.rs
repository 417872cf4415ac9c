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

/// A cause kept as it came: reqwest's, hyper's or a relay client's error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why no answer came from an agent (the caller adds which agent and what
/// was asked). A caller tells the cases apart by variant: the agent down
/// ([`Connect`](TransportError::Connect)), too slow
/// ([`TimedOut`](TransportError::TimedOut)), or the relay between out or
/// refusing (the `Relay*` variants).
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The request cannot be made as given (a method or header that is not HTTP).
    #[error("cannot build the request: {0}")]
    Request(BoxError),
    /// Nothing accepted the connection (refused, unreachable, no route):
    /// the agent is down or not there.
    #[error("cannot connect")]
    Connect(#[source] BoxError),
    /// No answer within the bound.
    #[error("timed out after {after:?}")]
    TimedOut {
        /// The bound.
        after: Duration,
    },
    /// Connected, but the exchange failed (the answer broke off or was
    /// not HTTP); the text is the innermost cause's.
    #[error("{}", innermost(.0.as_ref()))]
    Broken(BoxError),
    /// The relay (e.g. "the API server") did not answer.
    #[error("no answer from {relay}: {error}")]
    RelayDown {
        /// The relay, as a sentence names it.
        relay: String,
        /// Its client's error.
        error: BoxError,
    },
    /// The relay's answer broke off.
    #[error("{relay}'s answer broke off: {error}")]
    RelayBroken {
        /// The relay, as a sentence names it.
        relay: String,
        /// Its client's error.
        error: BoxError,
    },
    /// The relay refused the request itself (not the agent's answer).
    #[error("{relay} answered {status}: {said}{hint}")]
    RelayRefused {
        /// The relay, as a sentence names it (e.g. "the API server's pod proxy").
        relay: String,
        /// Its HTTP status.
        status: u16,
        /// What it said.
        said: String,
        /// What to do, starting with `; `, or empty.
        hint: String,
    },
    /// The relay stayed out past the transport's bound
    /// ([`AgentTransport::wait_relay`]).
    #[error(
        "{relay} did not answer for {} s{}; the agents cannot be reached through it",
        .waited.as_secs(),
        .error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
    )]
    RelayOut {
        /// The relay, as a sentence names it.
        relay: String,
        /// How long it was waited for.
        waited: Duration,
        /// Its client's last error, when it gave one.
        error: Option<BoxError>,
    },
}

impl TransportError {
    /// Whether the relay, not the agent, failed.
    pub fn is_relay(&self) -> bool {
        matches!(
            self,
            TransportError::RelayDown { .. }
                | TransportError::RelayBroken { .. }
                | TransportError::RelayRefused { .. }
                | TransportError::RelayOut { .. }
        )
    }
}

/// The innermost cause of `e`: it says the most in the fewest words.
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e;
    while let Some(src) = s.source() {
        s = src;
    }
    s.to_string()
}

/// Carries requests to one agent. `send`'s error is why no answer came
/// from the agent (cannot connect, a relay's refusal); the caller adds
/// which agent and what was asked.
pub trait AgentTransport: Send + Sync {
    /// Sends `req` and returns the agent's answer, whatever its status.
    fn send(&self, req: AgentRequest) -> BoxFuture<'_, Result<AgentResponse, TransportError>>;
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
    /// back and returns how long that took; Err
    /// ([`TransportError::RelayOut`]) when it stayed out past the
    /// transport's own bound. A relay's outage must not count against the
    /// agent. [`Direct`] has no relay: zero at once.
    fn wait_relay(&self) -> BoxFuture<'_, Result<Duration, TransportError>> {
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
    timeout: Duration,
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
            .map_err(|error| FleetError::HttpClient {
                agent: agent.name.clone(),
                error,
            })?;
        Ok(Direct {
            http,
            base: format!("http://{}", agent.http),
            timeout,
        })
    }

    async fn send_now(&self, req: AgentRequest) -> Result<AgentResponse, TransportError> {
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|e| TransportError::Request(Box::new(e)))?;
        let mut rb = self
            .http
            .request(method, format!("{}{}", self.base, req.path));
        for (k, v) in &req.headers {
            rb = rb.header(k, v);
        }
        if !req.body.is_empty() {
            rb = rb.body(req.body);
        }
        let r = rb.send().await.map_err(|e| self.why(e))?;
        let status = r.status().as_u16();
        let body = r.bytes().await.map_err(|e| self.why(e))?.to_vec();
        Ok(AgentResponse { status, body })
    }

    /// reqwest's error as a [`TransportError`].
    fn why(&self, e: reqwest::Error) -> TransportError {
        if e.is_timeout() {
            TransportError::TimedOut {
                after: self.timeout,
            }
        } else if e.is_connect() {
            TransportError::Connect(Box::new(e))
        } else if e.is_builder() {
            TransportError::Request(Box::new(e))
        } else {
            TransportError::Broken(Box::new(e))
        }
    }
}

impl AgentTransport for Direct {
    fn send(&self, req: AgentRequest) -> BoxFuture<'_, Result<AgentResponse, TransportError>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(http: String) -> AgentSpec {
        AgentSpec {
            name: "a".into(),
            control: "127.0.0.1:5201".into(),
            http,
            ..AgentSpec::default()
        }
    }

    fn get() -> AgentRequest {
        AgentRequest {
            method: "GET".into(),
            path: "/healthz".into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_port_nobody_listens_on_is_a_refused_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let d = Direct::new(&agent(addr.to_string()), Duration::from_secs(5)).unwrap();
        let e = d.send(get()).await.unwrap_err();
        assert!(matches!(e, TransportError::Connect(_)), "{e:?}");
        assert_eq!(e.to_string(), "cannot connect");
        let cause = std::error::Error::source(&e).expect("the cause is kept");
        assert!(!cause.to_string().is_empty());
    }

    #[tokio::test]
    async fn a_silent_agent_times_out_at_the_bound() {
        let addr = wirespeed_testkit::silent_listener();
        let d = Direct::new(&agent(addr.to_string()), Duration::from_millis(300)).unwrap();
        let e = d.send(get()).await.unwrap_err();
        assert!(matches!(e, TransportError::TimedOut { .. }), "{e:?}");
    }

    #[tokio::test]
    async fn a_method_that_is_not_http_cannot_be_sent() {
        let d = Direct::new(&agent("127.0.0.1:9".into()), Duration::from_secs(1)).unwrap();
        let req = AgentRequest {
            method: "NOT A METHOD".into(),
            ..get()
        };
        let e = d.send(req).await.unwrap_err();
        assert!(matches!(e, TransportError::Request(_)), "{e:?}");
    }
}
