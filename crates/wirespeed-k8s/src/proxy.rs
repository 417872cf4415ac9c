//! Reaching the agents through the API server: each agent's HTTP API is
//! asked through its pod's proxy subresource,
//! `/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy{path}`, on the same
//! kube client (and so the same credentials: tokens, client certificates,
//! exec plugins) as every other call of the run. A runner that reaches
//! only the API server (a laptop, a CI job outside the cluster network)
//! can then run the matrix; the API server dials the pod's address
//! (`status.podIP`, the node's address for hostNetwork pods).
//!
//! Only orchestration goes this way: the agents test each other on their
//! pod, node or NIC addresses. The agent sees the path after `/proxy`, so
//! the fleet key's signature covers that path; the API server forwards
//! the `x-wirespeed-*` headers unchanged (measured with kube-apiserver
//! v1.34, docs/k8s.md), so nothing else changes for the agent. It takes
//! `Authorization` for itself, so the agent's bearer token cannot pass:
//! reads are signed too. The API server reaches exactly the named pod,
//! so requests are signed for the name that pod's agent tells in
//! `/healthz` ([`AgentTransport::vouches_for_agent`]).
//!
//! RBAC: `get` on `pods/proxy` for reads, `create` for `POST /v1/run`,
//! `update` for `PUT /v1/fleet`.

use crate::K8sError;
use crate::retry::API_RETRY;
use kube::Client;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use wirespeed_fleet::transport::{BoxFuture, TransportFactory};
use wirespeed_fleet::{
    AgentRequest, AgentResponse, AgentSpec, AgentTransport, FleetError, TransportError,
};

/// The relay, as messages name it.
const API_SERVER: &str = "the API server";

/// How `k8s run` reaches the agents' HTTP APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    /// Through the API server's pod proxy (works from anywhere that
    /// reaches the API server).
    #[default]
    Api,
    /// Straight to the pod or node addresses (the runner must be inside
    /// the cluster network: on a node, in a pod, over a VPN).
    Direct,
}

impl Reach {
    /// Every reach, in declaration order.
    pub const ALL: [Reach; 2] = [Reach::Api, Reach::Direct];
    /// The names `--reach` takes, in [`Reach::ALL`]'s order.
    pub const NAMES: [&'static str; 2] = ["api", "direct"];
}

impl std::str::FromStr for Reach {
    type Err = K8sError;

    fn from_str(s: &str) -> Result<Reach, K8sError> {
        let i = Self::NAMES.iter().position(|n| *n == s).ok_or_else(|| {
            K8sError::Invalid(format!(
                "--reach {s:?}: use api (through the API server's pod proxy) or direct (to the pod addresses)"
            ))
        })?;
        Ok(Self::ALL[i])
    }
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Self::NAMES[*self as usize])
    }
}

/// One agent pod's HTTP API through the API server's pod proxy.
#[derive(Clone)]
pub struct PodProxy {
    client: Client,
    ns: String,
    pod: String,
    port: u16,
    timeout: Duration,
    patience: Duration,
}

impl PodProxy {
    /// The agent in pod `ns/pod` listening on `port`; each request,
    /// answer included, bounded by `timeout` (as the direct transport's
    /// are), so an API server or agent that trickles cannot hold a run.
    pub fn new(client: Client, ns: &str, pod: &str, port: u16, timeout: Duration) -> PodProxy {
        PodProxy {
            client,
            ns: ns.to_string(),
            pod: pod.to_string(),
            port,
            timeout,
            patience: API_RETRY,
        }
    }

    /// How long the API server may be out before requests through it are
    /// given up: the client's retry bound ([`crate::cluster::client_with`]).
    pub fn with_patience(mut self, patience: Duration) -> PodProxy {
        self.patience = patience;
        self
    }

    /// The API server's path that reaches `path` on the agent.
    pub fn url(&self, path: &str) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{}:{}/proxy{path}",
            self.ns, self.pod, self.port
        )
    }

    async fn send_now(&self, req: AgentRequest) -> Result<AgentResponse, TransportError> {
        let mut b = http::Request::builder()
            .method(req.method.as_str())
            .uri(self.url(&req.path));
        for (k, v) in &req.headers {
            b = b.header(k, v);
        }
        let r = b
            .body(kube::client::Body::from(req.body))
            .map_err(|e| TransportError::Request(Box::new(e)))?;
        let resp = self
            .client
            .send(r)
            .await
            .map_err(|e| TransportError::RelayDown {
                relay: API_SERVER.into(),
                error: Box::new(e),
            })?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect_bytes()
            .await
            .map_err(|e| TransportError::RelayBroken {
                relay: API_SERVER.into(),
                error: Box::new(e),
            })?
            .to_vec();
        if let Some(why) = self.refusal(status, &body) {
            return Err(why);
        }
        Ok(AgentResponse { status, body })
    }

    /// The API server's own refusal (a `v1 Status` body: RBAC, pod gone,
    /// pod unreachable), with what to do; None for the agent's answer
    /// (the agent never answers with a `Status`).
    fn refusal(&self, status: u16, body: &[u8]) -> Option<TransportError> {
        if status < 400 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        if v["kind"] != "Status" {
            return None;
        }
        let msg = v["message"].as_str().unwrap_or("").to_string();
        let hint = match status {
            401 | 403 => format!(
                "; the kubeconfig's user needs get, create and update on pods/proxy in namespace {} (`wirespeed k8s manifests --runner` prints that ClusterRole), or use --reach direct from inside the cluster network",
                self.ns
            ),
            404 => format!("; pod {} is gone", self.pod),
            _ => format!(
                "; the API server could not reach port {} of pod {} (a firewall between the control plane and the nodes, such as a private cluster's, must allow it), or use --reach direct from inside the cluster network",
                self.port, self.pod
            ),
        };
        Some(TransportError::RelayRefused {
            relay: "the API server's pod proxy".into(),
            status,
            said: msg,
            hint,
        })
    }
}

impl AgentTransport for PodProxy {
    fn send(&self, req: AgentRequest) -> BoxFuture<'_, Result<AgentResponse, TransportError>> {
        Box::pin(async move {
            tokio::time::timeout(self.timeout, self.send_now(req))
                .await
                .unwrap_or(Err(TransportError::TimedOut {
                    after: self.timeout,
                }))
        })
    }

    fn describe(&self) -> String {
        format!(
            "pod {}/{}:{} through the API server",
            self.ns, self.pod, self.port
        )
    }

    /// The API server reaches exactly the pod it is asked for: requests
    /// are signed for the name that pod's agent tells.
    fn vouches_for_agent(&self) -> bool {
        true
    }

    /// Asks the API server its version (retried as every request is, for
    /// at most the client's bound, which `patience` is): an answer within
    /// a second means it was not out; a later one, how long it was out;
    /// none, that it stayed out.
    fn wait_relay(&self) -> BoxFuture<'_, Result<Duration, TransportError>> {
        Box::pin(async move {
            let t = std::time::Instant::now();
            let bound = self.patience + Duration::from_secs(5);
            let r = tokio::time::timeout(bound, self.client.apiserver_version()).await;
            match r {
                Ok(Ok(_)) if t.elapsed() < Duration::from_secs(1) => Ok(Duration::ZERO),
                Ok(Ok(_)) => Ok(t.elapsed()),
                Ok(Err(e)) => Err(TransportError::RelayOut {
                    relay: API_SERVER.into(),
                    waited: t.elapsed(),
                    error: Some(Box::new(e)),
                }),
                Err(_) => Err(TransportError::RelayOut {
                    relay: API_SERVER.into(),
                    waited: bound,
                    error: None,
                }),
            }
        })
    }
}

/// The factory for [`wirespeed_fleet::RunOptions::transport`]: each agent
/// (its pod from its `pod` label, else its name; HTTP port from its `http` address) through its
/// pod's proxy in `ns`, each request bounded by `timeout`, the API server
/// waited for at most `patience` when it is out.
pub fn factory(
    client: Client,
    ns: &str,
    timeout: Duration,
    patience: Duration,
) -> TransportFactory {
    let ns = ns.to_string();
    Arc::new(move |a: &AgentSpec| {
        let port = a
            .http
            .parse::<SocketAddr>()
            .map(|s| s.port())
            .map_err(|_| FleetError::Agent {
                agent: a.name.clone(),
                message: format!("http address {:?} is not IP:PORT", a.http),
            })?;
        Ok(Arc::new(
            PodProxy::new(
                client.clone(),
                &ns,
                a.labels.get("pod").unwrap_or(&a.name),
                port,
                timeout,
            )
            .with_patience(patience),
        ) as Arc<dyn AgentTransport>)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API server that accepts and then says nothing (a trickle that
    /// never starts): the proxied request fails at the bound, not at
    /// kube's five-minute read timeout.
    #[tokio::test]
    async fn a_silent_api_server_fails_the_request_at_its_bound() {
        let addr = wirespeed_testkit::silent_listener();
        let url = format!("http://{addr}").parse().unwrap();
        let client = Client::try_from(kube::Config::new(url)).unwrap();
        let p = PodProxy::new(client, "ns", "pod", 5380, Duration::from_millis(300));
        let t = std::time::Instant::now();
        let r = p
            .send(AgentRequest {
                method: "GET".into(),
                path: "/healthz".into(),
                headers: vec![],
                body: vec![],
            })
            .await;
        let e = r.expect_err("a silent API server gives no answer");
        assert!(matches!(e, TransportError::TimedOut { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }
}
