//! The agent: wirespeed's engine server plus a small HTTP API on its own
//! port (axum on tokio).
//!
//! | method, path | key | what |
//! |---|---|---|
//! | `GET /healthz` | no | `ok NAME BOOT`: the agent's name and boot id ([`crate::auth`]) |
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

use crate::auth::{Refusal, Target, Verifier};
use crate::error::{FleetError, Result};
use crate::fleet::Fleet;
use crate::fleet_parts::{Assembly, FleetPart, Progress};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use wirespeed_engine::{ClientConfig, Server, ServerConfig, TestResult, TestSpec};

/// Default port of the agent's HTTP API.
pub const DEFAULT_HTTP_PORT: u16 = 5380;
/// Results an agent keeps (the oldest go first).
pub const MAX_RESULTS: usize = 1000;

/// Bounds on the HTTP side.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Connections at once; a new one beyond displaces the oldest idle or
    /// slow one of the source holding the most, or is closed at once when
    /// every one is handling a request.
    pub max_connections: usize,
    /// Connections from one address (an IPv6 /64) at once; a new one
    /// beyond displaces that address's oldest idle or slow one.
    pub max_per_source: usize,
    /// Time for a request's headers to arrive (trickling cannot extend it).
    pub header_timeout: Duration,
    /// Time for a whole request, body and answer included.
    pub request_timeout: Duration,
    /// Longest life of one connection, however busy.
    pub connection_lifetime: Duration,
    /// Largest request body, bytes.
    pub max_body: usize,
    /// Requests handled at once; more are answered 503.
    pub max_in_flight: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 256,
            max_per_source: 16,
            header_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            connection_lifetime: Duration::from_secs(60),
            max_body: 64 * 1024,
            max_in_flight: 64,
        }
    }
}

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Its name (as in the fleet file).
    pub name: String,
    /// The engine server (its `key` is set from `key` below).
    pub server: ServerConfig,
    /// Where the HTTP API listens.
    pub http: SocketAddr,
    /// The fleet key: signs requests that start traffic, and is the
    /// engine server's key.
    pub key: Vec<u8>,
    /// The fleet from `--fleet FILE`: pinned, the controller cannot change it.
    pub fleet: Option<Fleet>,
    /// Tests this agent runs as a client at once; more are answered 429.
    pub max_tests: usize,
    /// Bound on connecting and each control answer of a test it runs.
    pub test_timeout: Duration,
    /// HTTP bounds.
    pub limits: HttpLimits,
    /// Serve `/metrics` without the key (`--metrics-open`).
    pub metrics_open: bool,
}

impl AgentConfig {
    /// An agent named `name` with the key, on the default ports.
    pub fn new(name: &str, key: Vec<u8>) -> AgentConfig {
        AgentConfig {
            name: name.to_string(),
            server: ServerConfig::default(),
            http: SocketAddr::from(([0u16; 8], DEFAULT_HTTP_PORT)),
            key,
            fleet: None,
            max_tests: 4,
            test_timeout: Duration::from_secs(10),
            limits: HttpLimits::default(),
            metrics_open: false,
        }
    }
}

/// What `POST /v1/run` takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The peer (an agent of the fleet) whose server answers.
    pub peer: String,
    /// What to run; each path's remote must be one of the peer's addresses.
    pub spec: TestSpec,
    /// The workload's label for metrics and results (e.g. `rr-64k`).
    #[serde(default)]
    pub label: Option<String>,
}

/// What `POST /v1/run` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    /// The test's id on this agent.
    pub id: u64,
}

/// A test's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Still running.
    Running,
    /// Finished with a result.
    Done,
    /// Ended with an error.
    Failed,
}

/// One test an agent ran (`GET /v1/results/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Its id.
    pub id: u64,
    /// The peer.
    pub peer: String,
    /// The workload's label.
    pub label: String,
    /// Its state.
    pub state: RunState,
    /// Tests this agent ran at once with it (besides itself), at its start.
    pub concurrent_with: u32,
    /// Why it failed.
    pub error: Option<String>,
    /// The result (done only; left out of `GET /v1/results`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TestResult>,
    /// Goodput, bits per second (done only).
    pub throughput_bps: Option<f64>,
}

/// What error answers carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What is wrong and what to do.
    pub error: String,
}

type Labels = Vec<(String, String)>;
type FGauge = Gauge<f64, AtomicU64>;

struct Metrics {
    registry: Registry,
    throughput: Family<Labels, FGauge>,
    p50: Family<Labels, FGauge>,
    p99: Family<Labels, FGauge>,
    tests: Family<Labels, Counter>,
    refusals: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    nic_mtu: Family<Labels, Gauge>,
    nic_gso: Family<Labels, Gauge>,
    nic_gro: Family<Labels, Gauge>,
    nic_info: Family<Labels, Gauge>,
    host_info: Family<Labels, Gauge>,
    http_connections: Gauge,
    http_evictions: Counter,
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("wirespeed");
        let m = Metrics {
            throughput: Family::default(),
            p50: Family::default(),
            p99: Family::default(),
            tests: Family::default(),
            refusals: Family::default(),
            errors: Family::default(),
            nic_mtu: Family::default(),
            nic_gso: Family::default(),
            nic_gro: Family::default(),
            nic_info: Family::default(),
            host_info: Family::default(),
            http_connections: Gauge::default(),
            http_evictions: Counter::default(),
            registry: Registry::default(),
        };
        registry.register(
            "link_throughput_bytes_per_second",
            "Goodput of the last test towards a peer, per path, workload and direction",
            m.throughput.clone(),
        );
        registry.register(
            "link_latency_p50_seconds",
            "Median latency of the last rr/crr test towards a peer",
            m.p50.clone(),
        );
        registry.register(
            "link_latency_p99_seconds",
            "99th percentile latency of the last rr/crr test towards a peer",
            m.p99.clone(),
        );
        registry.register(
            "tests",
            "Tests run, by role (client: started through /v1/run; server: served) and outcome",
            m.tests.clone(),
        );
        registry.register(
            "refusals",
            "Requests to start traffic that were refused, by reason",
            m.refusals.clone(),
        );
        registry.register("errors", "Tests that failed, by role", m.errors.clone());
        registry.register("nic_mtu_bytes", "MTU of each interface", m.nic_mtu.clone());
        registry.register(
            "nic_gso_max_size_bytes",
            "gso_max_size of each interface",
            m.nic_gso.clone(),
        );
        registry.register(
            "nic_gro_max_size_bytes",
            "gro_max_size of each interface",
            m.nic_gro.clone(),
        );
        registry.register(
            "nic_info",
            "Each interface's offloads, driver and bond hash policy as labels (value 1)",
            m.nic_info.clone(),
        );
        registry.register(
            "host_info",
            "The host's kernel and TCP settings as labels (value 1)",
            m.host_info.clone(),
        );
        registry.register(
            "http_connections",
            "HTTP connections open",
            m.http_connections.clone(),
        );
        registry.register(
            "http_evictions",
            "HTTP connections closed to make room for a new one (idle or slow ones, of the source holding the most)",
            m.http_evictions.clone(),
        );
        Metrics { registry, ..m }
    }

    fn refuse(&self, reason: &str) {
        self.refusals
            .get_or_create(&vec![("reason".into(), reason.into())])
            .inc();
    }

    fn set_facts(&self, s: &wirespeed_host::Snapshot) {
        for f in [
            &self.nic_mtu,
            &self.nic_gso,
            &self.nic_gro,
            &self.nic_info,
            &self.host_info,
        ] {
            f.clear();
        }
        let flag = |b: Option<bool>| match b {
            Some(true) => "on",
            Some(false) => "off",
            None => "unknown",
        };
        for l in s.links.iter().filter(|l| l.name != "lo") {
            let nic = vec![("nic".to_string(), l.name.clone())];
            self.nic_mtu.get_or_create(&nic).set(l.mtu as i64);
            if let Some(v) = l.gso_max_size {
                self.nic_gso.get_or_create(&nic).set(v as i64);
            }
            if let Some(v) = l.gro_max_size {
                self.nic_gro.get_or_create(&nic).set(v as i64);
            }
            let mut info = nic.clone();
            info.push(("tso".into(), flag(l.offloads.tso).into()));
            info.push(("gso".into(), flag(l.offloads.gso).into()));
            info.push(("gro".into(), flag(l.offloads.gro).into()));
            info.push(("driver".into(), l.driver.get().cloned().unwrap_or_default()));
            info.push((
                "bond_xmit_hash_policy".into(),
                l.bond
                    .as_ref()
                    .map(|b| b.xmit_hash_policy.clone())
                    .unwrap_or_default(),
            ));
            self.nic_info.get_or_create(&info).set(1);
        }
        let sysctl = |k: &str| {
            s.sysctls
                .get(k)
                .and_then(|v| v.get().cloned())
                .unwrap_or_default()
        };
        let host = vec![
            ("hostname".to_string(), s.hostname.clone()),
            ("kernel".into(), s.kernel.clone()),
            (
                "congestion_control".into(),
                sysctl("net.ipv4.tcp_congestion_control"),
            ),
            ("tcp_rmem".into(), sysctl("net.ipv4.tcp_rmem")),
            ("tcp_wmem".into(), sysctl("net.ipv4.tcp_wmem")),
        ];
        self.host_info.get_or_create(&host).set(1);
    }

    fn record(&self, peer: &str, label: &str, r: &TestResult) {
        let direction = format!("{:?}", r.spec.direction).to_lowercase();
        for p in &r.paths {
            let labels = vec![
                ("peer".to_string(), peer.to_string()),
                ("path".into(), p.label.clone()),
                ("workload".into(), label.to_string()),
                ("direction".into(), direction.clone()),
            ];
            self.throughput
                .get_or_create(&labels)
                .set(p.throughput_bps / 8.0);
            if let Some(l) = &r.latency {
                self.p50.get_or_create(&labels).set(l.p50_us / 1e6);
                self.p99.get_or_create(&labels).set(l.p99_us / 1e6);
            }
        }
    }
}

struct Facts {
    at: Option<Instant>,
    json: Option<Result<Arc<serde_json::Value>, String>>,
}

/// Shared by the handlers.
struct Shared {
    name: String,
    boot: String,
    verifier: Mutex<Verifier>,
    key: Vec<u8>,
    fleet: RwLock<Option<Fleet>>,
    pending: Mutex<Assembly>,
    pinned: bool,
    results: Mutex<BTreeMap<u64, RunRecord>>,
    next_id: AtomicU64,
    running: AtomicU64,
    max_tests: usize,
    test_timeout: Duration,
    metrics: Metrics,
    facts: tokio::sync::Mutex<Facts>,
}

/// How long read facts are served before they are read again.
const FACTS_TTL: Duration = Duration::from_secs(5);

fn json_error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, axum::Json(ErrorBody { error: msg.into() })).into_response()
}

async fn healthz(State(st): State<Arc<Shared>>) -> Response {
    format!("ok {} {}\n", st.name, st.boot).into_response()
}

/// Reads the host (at most every [`FACTS_TTL`]) and refreshes the info metrics.
async fn facts_json(st: &Arc<Shared>) -> Result<Arc<serde_json::Value>, String> {
    let mut f = st.facts.lock().await;
    if let (Some(at), Some(j)) = (f.at, &f.json)
        && at.elapsed() < FACTS_TTL
    {
        return j.clone();
    }
    let st2 = st.clone();
    let read = tokio::task::spawn_blocking(move || {
        let s =
            wirespeed_host::inspect(&wirespeed_host::Fs::default()).map_err(|e| e.to_string())?;
        st2.metrics.set_facts(&s);
        serde_json::to_value(&s).map_err(|e| e.to_string())
    })
    .await
    .map_err(|_| "reading the host's facts failed".to_string())
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

async fn facts(State(st): State<Arc<Shared>>) -> Response {
    match facts_json(&st).await {
        Ok(j) => axum::Json(j.as_ref().clone()).into_response(),
        Err(e) => json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read this host: {e}"),
        ),
    }
}

/// OpenMetrics text as the Prometheus text format (0.0.4): a counter's
/// HELP and TYPE lines name its `_total` sample, and there is no `# EOF`.
/// prometheus-client writes only OpenMetrics; promtool and plain `curl`
/// users read the older format.
pub fn openmetrics_to_prometheus(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    let mut help: Option<&str> = None;
    for line in om.lines() {
        if line == "# EOF" {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some(name) = rest.strip_suffix(" counter")
            && !name.ends_with("_total")
        {
            if let Some(h) = help.take() {
                let text = h.strip_prefix(&format!("# HELP {name} ")).unwrap_or("");
                out.push_str(&format!("# HELP {name}_total {text}\n"));
            }
            out.push_str(&format!("# TYPE {name}_total counter\n"));
            continue;
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(h) = help {
        out.push_str(h);
        out.push('\n');
    }
    out
}

/// `/metrics`: OpenMetrics when the scraper asks for it (Prometheus
/// does), else the Prometheus text format.
async fn metrics(State(st): State<Arc<Shared>>, headers: HeaderMap) -> Response {
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

async fn results(State(st): State<Arc<Shared>>) -> Response {
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

async fn result(State(st): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
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

/// The whole body of a request, read before it is handled.
#[derive(Clone)]
struct RawBody(Bytes);

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
async fn read_body(req: Request, next: Next) -> Response {
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
        .verify(req.method().as_str(), req.uri().path(), get, &body);
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

/// Checks a run's spec before it is accepted: the engine's sanity bounds
/// (the peer's own limits are checked when the test connects). A test
/// ended by bytes has no duration of its own to bound.
fn check_spec(spec: &TestSpec) -> std::result::Result<(), String> {
    let mut limits = wirespeed_engine::Limits::default();
    if spec.bytes.is_some() {
        limits.max_duration_s = f64::INFINITY;
    }
    spec.validate(&limits).map_err(|e| e.to_string())
}

async fn set_fleet(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    if let Some(r) = fleet_pinned(&st) {
        return r;
    }
    match serde_json::from_slice::<Fleet>(&body) {
        Ok(f) => install_fleet(&st, f),
        Err(e) => json_error(StatusCode::BAD_REQUEST, format!("not a fleet: {e}")),
    }
}

/// `PUT /v1/fleet/part`: one part of a fleet too large for one body
/// ([`crate::fleet_parts`]); 202 until the last part, then as `PUT /v1/fleet`.
async fn set_fleet_part(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
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
        Err(e) => json_error(StatusCode::BAD_REQUEST, e),
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

async fn run(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let req: RunRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            st.metrics.refuse("bad_request");
            return json_error(StatusCode::BAD_REQUEST, format!("not a run request: {e}"));
        }
    };
    if let Err(e) = check_spec(&req.spec) {
        st.metrics.refuse("bad_request");
        return json_error(StatusCode::BAD_REQUEST, format!("invalid spec: {e}"));
    }
    let peer = {
        let fleet = st.fleet.read().unwrap_or_else(|p| p.into_inner());
        let Some(fleet) = fleet.as_ref() else {
            st.metrics.refuse("no_fleet");
            return json_error(
                StatusCode::FORBIDDEN,
                "this agent has no fleet yet (start it with --fleet FILE, or PUT /v1/fleet): it tests only peers of its fleet",
            );
        };
        match fleet.agent(&req.peer) {
            Some(p) => p.clone(),
            None => {
                st.metrics.refuse("not_in_fleet");
                return json_error(
                    StatusCode::FORBIDDEN,
                    format!(
                        "peer {:?} is not in this agent's fleet ({} agents): it tests only peers of its fleet",
                        wirespeed_engine::proto::printable(&req.peer, 80),
                        fleet.agents.len()
                    ),
                );
            }
        }
    };
    if let Some(p) = req.spec.paths.iter().find(|p| !peer.owns(&p.remote)) {
        st.metrics.refuse("not_in_fleet");
        return json_error(
            StatusCode::FORBIDDEN,
            format!(
                "path remote {:?} is not an address of peer {:?} in the fleet",
                wirespeed_engine::proto::printable(&p.remote, 80),
                peer.name
            ),
        );
    }
    // Count ourselves in before the check so two requests cannot both pass.
    let before = st.running.fetch_add(1, Ordering::SeqCst);
    if before as usize >= st.max_tests {
        st.running.fetch_sub(1, Ordering::SeqCst);
        st.metrics.refuse("busy");
        return json_error(
            StatusCode::TOO_MANY_REQUESTS,
            format!("this agent runs {} tests already (its limit)", st.max_tests),
        );
    }
    let id = st.next_id.fetch_add(1, Ordering::SeqCst) + 1;
    let label = req
        .label
        .clone()
        .unwrap_or_else(|| format!("{:?}", req.spec.workload).to_lowercase());
    {
        let mut rs = st.results.lock().unwrap_or_else(|p| p.into_inner());
        while rs.len() >= MAX_RESULTS {
            let first = *rs.keys().next().expect("not empty");
            rs.remove(&first);
        }
        rs.insert(
            id,
            RunRecord {
                id,
                peer: peer.name.clone(),
                label: label.clone(),
                state: RunState::Running,
                concurrent_with: before as u32,
                error: None,
                result: None,
                throughput_bps: None,
            },
        );
    }
    let cfg = ClientConfig {
        server: peer.control.clone(),
        port: wirespeed_engine::DEFAULT_PORT,
        key: Some(st.key.clone()),
        timeout: st.test_timeout,
    };
    let st2 = st.clone();
    tokio::task::spawn_blocking(move || {
        let out = wirespeed_engine::run_test(&cfg, &req.spec, &mut |_| {});
        let outcome = if out.is_ok() { "ok" } else { "error" };
        st2.metrics
            .tests
            .get_or_create(&vec![
                ("role".into(), "client".into()),
                ("outcome".into(), outcome.into()),
            ])
            .inc();
        if let Ok(r) = &out {
            st2.metrics.record(&peer.name, &label, r);
        } else {
            st2.metrics
                .errors
                .get_or_create(&vec![("role".into(), "client".into())])
                .inc();
        }
        if let Some(rec) = st2
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
        st2.running.fetch_sub(1, Ordering::SeqCst);
    });
    (StatusCode::ACCEPTED, axum::Json(RunStarted { id })).into_response()
}

fn router(st: Arc<Shared>, limits: &HttpLimits, metrics_open: bool) -> Router {
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
}

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
        let boot = crate::auth::new_boot_id();
        let shared = Arc::new(Shared {
            name: cfg.name.clone(),
            boot: boot.clone(),
            verifier: Mutex::new(Verifier::new(
                cfg.key.clone(),
                Target {
                    name: cfg.name.clone(),
                    boot,
                },
            )),
            key: cfg.key.clone(),
            pinned: cfg.fleet.is_some(),
            fleet: RwLock::new(cfg.fleet.clone()),
            pending: Mutex::new(Assembly::default()),
            results: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
            running: AtomicU64::new(0),
            max_tests: cfg.max_tests.max(1),
            test_timeout: cfg.test_timeout,
            metrics: Metrics::new(),
            facts: tokio::sync::Mutex::new(Facts {
                at: None,
                json: None,
            }),
        });
        // The server's log lines become counters.
        let st = shared.clone();
        std::thread::Builder::new()
            .name("wirespeed-agent-events".into())
            .spawn(move || {
                for ev in rx {
                    let (role, outcome) = match ev {
                        wirespeed_engine::server::ServerEvent::Started { .. } => continue,
                        wirespeed_engine::server::ServerEvent::Finished { .. } => ("server", "ok"),
                        wirespeed_engine::server::ServerEvent::Failed { .. } => ("server", "error"),
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
        let stop = Arc::new(AtomicBool::new(false));
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

/// What the accept loop knows of one live connection.
#[derive(Default)]
struct ConnState {
    /// Requests on it being handled (body read, answer not yet made).
    handling: AtomicUsize,
    /// Closes the connection when notified (displaced).
    kick: tokio::sync::Notify,
}

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

/// Accepts connections within the limits (displacing idle or slow ones
/// to make room, [`ConnTable::admit`]) and serves each with hyper's
/// HTTP/1 under a header deadline and a lifetime.
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
            let a = t.admit(wirespeed_engine::server::source_of(peer.ip()), &limits);
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
