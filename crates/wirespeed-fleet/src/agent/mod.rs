//! The agent: wirespeed's engine server plus a small HTTP API on its own
//! port (axum on tokio).
//!
//! | method, path | key | what |
//! |---|---|---|
//! | `GET /healthz` | no | `ok NAME BOOT fleet=2 control=1 release=R`: the agent's name and boot id ([`crate::auth`]) and its protocol versions ([`crate::protocol`]); 503 `stopping ...` once it is stopping |
//! | `GET /metrics` | read (none with `--metrics-open`) | Prometheus text: last result per peer, path, workload, direction; counters; host facts |
//! | `GET /v1/facts` | read | the host's [`Snapshot`](wirespeed_host::Snapshot) as JSON |
//! | `GET /v1/results` | read | the tests this agent ran, newest last (summaries) |
//! | `GET /v1/results/{id}` | read | one test: state, and its full result |
//! | `POST /v1/run` | signed | start a test towards a fleet peer ([`RunRequest`]); 202 with its id |
//! | `PUT /v1/fleet` | signed | set the agent's fleet (refused with 409 when pinned by `--fleet`) |
//!
//! "read" takes a signature or the fleet's bearer token, "signed" only a
//! signature for this agent ([`crate::auth`]); without them the answer
//! is 401 (403 when signed for another agent) and says nothing of the
//! host. A run's spec is checked before it is accepted (400 with the
//! reason); the peer must be in the agent's fleet and every path must end
//! at one of the peer's addresses (403 otherwise). The HTTP side is
//! bounded against slow and greedy clients: a deadline on request
//! headers, on each request as a whole and on each connection's life; a
//! body size limit; at most so many connections (and per source address),
//! where a new connection displaces the oldest idle or slow one (of the
//! source holding the most) rather than being turned away; requests in
//! flight and tests at once, refused rather than queued. A request counts
//! as in flight only once its body has arrived, so slow bodies take no
//! place from others.
//!
//! By concern: `config`, `api` (the bodies), `state` (what handlers
//! share), `metrics` and `openmetrics`, `router`, `handlers`, `run`
//! (`POST /v1/run`), `conn` (connections and their limits). This file
//! holds the agent's lifecycle: start, wait, stop.

use crate::error::{FleetError, Result};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wirespeed_engine::Server;

pub(crate) mod api;
mod config;
mod conn;
mod handlers;
mod metrics;
mod openmetrics;
mod probe;
mod router;
mod run;
mod state;

pub use api::{ErrorBody, ProbeAnswer, ProbeRequest, RunRecord, RunRequest, RunStarted, RunState};
pub use config::{AgentConfig, DEFAULT_HTTP_PORT, HttpLimits, MAX_RESULTS};
pub(crate) use conn::{ConnGauges, accept_loop};
pub use openmetrics::openmetrics_to_prometheus;
pub use probe::MAX_PROBE_WAIT;

use router::router;
use state::Shared;

/// A running agent: its engine server and HTTP API.
pub struct Agent {
    http_addr: SocketAddr,
    control_addr: SocketAddr,
    stop: Arc<AtomicBool>,
    http_stop: Arc<tokio::sync::Notify>,
    runtime: Option<tokio::runtime::Runtime>,
    http_task: Option<tokio::task::JoinHandle<()>>,
    server: Option<std::thread::JoinHandle<()>>,
}

impl Agent {
    /// Binds the engine server and the HTTP API and starts serving both;
    /// returns once both listen. Sockets are made on the calling thread
    /// (so in its network namespace), and so are the tests' sockets.
    pub fn start(cfg: AgentConfig) -> Result<Agent> {
        if cfg.key.len() < 16 {
            return Err(FleetError::Fleet(
                "the agent needs a key of at least 16 bytes (--key-file): starting traffic is never possible without it".into(),
            ));
        }
        if let Some(f) = &cfg.fleet {
            f.validate()?;
        }
        let mut scfg = cfg.server.clone();
        scfg.key = Some(cfg.key.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        scfg.events = Some(tx);
        let server = Server::bind(scfg)?;
        let control_addr = server.local_addr()?;
        let std_listener = std::net::TcpListener::bind(cfg.http)
            .map_err(|e| FleetError::io(format!("listen for HTTP on {}", cfg.http), e))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| FleetError::io("set the HTTP listener non-blocking", e))?;
        let http_addr = std_listener
            .local_addr()
            .map_err(|e| FleetError::io("read the HTTP listener's address", e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("wirespeed-agent")
            .build()
            .map_err(|e| FleetError::io("start the agent's runtime", e))?;
        let shared = Arc::new(Shared::new(&cfg));
        count_server_events(shared.clone(), rx)?;
        let stop = shared.stopping.clone();
        let s2 = stop.clone();
        let server = std::thread::Builder::new()
            .name("wirespeed-agent-server".into())
            .spawn(move || {
                // Errors after the start end this server only; tests
                // against it then fail with the reason on their side.
                let _ = server.serve(s2);
            })
            .map_err(|e| FleetError::io("start the agent's server thread", e))?;
        let app = router(shared.clone(), &cfg.limits, cfg.metrics_open);
        let http_stop = Arc::new(tokio::sync::Notify::new());
        let listener = {
            let _g = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener)
                .map_err(|e| FleetError::io("hand the HTTP listener to the runtime", e))?
        };
        let gauges = ConnGauges {
            open: shared.metrics.http_connections.clone(),
            evictions: shared.metrics.http_evictions.clone(),
        };
        let http_task = runtime.spawn(accept_loop(
            listener,
            app,
            gauges,
            cfg.limits.clone(),
            http_stop.clone(),
        ));
        Ok(Agent {
            http_addr,
            control_addr,
            stop,
            http_stop,
            runtime: Some(runtime),
            http_task: Some(http_task),
            server: Some(server),
        })
    }

    /// Where the HTTP API listens.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// Where the engine server listens.
    pub fn control_addr(&self) -> SocketAddr {
        self.control_addr
    }

    /// Serves until the process ends.
    pub fn wait(mut self) -> Result<()> {
        if let (Some(rt), Some(t)) = (&self.runtime, self.http_task.take()) {
            let _ = rt.block_on(t);
        }
        Ok(())
    }

    /// Serves until `stop` is set (a stop signal), then stops both
    /// servers: no new test or request is taken, the engine's tests in
    /// flight are ended, and the HTTP side gets two seconds to finish.
    pub fn wait_until(mut self, stop: &AtomicBool) -> Result<()> {
        if let (Some(rt), Some(mut t)) = (&self.runtime, self.http_task.take()) {
            rt.block_on(async {
                while !stop.load(Ordering::Relaxed) {
                    if tokio::time::timeout(Duration::from_millis(50), &mut t)
                        .await
                        .is_ok()
                    {
                        return;
                    }
                }
            });
        }
        Ok(())
    }

    /// Stops both servers and waits for them.
    pub fn stop(self) {
        drop(self)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.http_stop.notify_one();
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        if let Some(t) = self.server.take() {
            let _ = t.join();
        }
    }
}

/// Runs an agent until the process ends: `wirespeed agent`.
pub fn serve(cfg: AgentConfig) -> Result<()> {
    Agent::start(cfg)?.wait()
}

/// Counts the engine server's log events (`rx`) as tests and errors in
/// the metrics, on a thread of their own.
fn count_server_events(
    st: Arc<Shared>,
    rx: std::sync::mpsc::Receiver<wirespeed_engine::ServerEvent>,
) -> Result<()> {
    std::thread::Builder::new()
        .name("wirespeed-agent-events".into())
        .spawn(move || {
            for ev in rx {
                let (role, outcome) = match ev {
                    wirespeed_engine::ServerEvent::Started { .. } => continue,
                    wirespeed_engine::ServerEvent::Finished { .. } => ("server", "ok"),
                    wirespeed_engine::ServerEvent::Failed { .. } => ("server", "error"),
                };
                st.metrics
                    .tests
                    .get_or_create(&vec![
                        ("role".into(), role.into()),
                        ("outcome".into(), outcome.into()),
                    ])
                    .inc();
                if outcome == "error" {
                    st.metrics
                        .errors
                        .get_or_create(&vec![("role".into(), role.into())])
                        .inc();
                }
            }
        })
        .map_err(|e| FleetError::io("start the agent's event thread", e))?;
    Ok(())
}
