//! The watcher's Prometheus series and its HTTP face: `/metrics`,
//! `/v1/watch` (the state as JSON), `/` (the live page, rendered by the
//! caller) and `/healthz`. Read-only; served with the agent's connection
//! limits, so one slow client cannot starve another.
//!
//! Label cardinality: the link series carry client, server, both NICs and
//! the workload. The schedule probes at most n x peers / 2 pairs (16 peers
//! by default), so at 1,000 agents with two NICs each and three workloads
//! a family holds at most 8,000 pairs x 2 directions x 2 NIC pairs x 3 =
//! 96,000 series; the health families exist only for series that were
//! once not healthy, the incident families one per incident's subject.

use crate::agent::{ConnGauges, HttpLimits, accept_loop, openmetrics_to_prometheus};
use crate::error::{FleetError, Result};
use crate::schedule::Schedule;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use wirespeed_types::fleet::{Health, Incident, LinkHealth, LinkTest, WatchState};

type Labels = Vec<(String, String)>;
type FGauge = Gauge<f64, AtomicU64>;

/// Every series the watcher exports, by full name (the Grafana dashboard
/// and the alert rules may use only these and the agent's).
pub const EXPORTED: &[&str] = &[
    "wirespeed_watch_latency_min_seconds",
    "wirespeed_watch_latency_p50_seconds",
    "wirespeed_watch_latency_p99_seconds",
    "wirespeed_watch_goodput_bits_per_second",
    "wirespeed_watch_cpu_cores_per_gbps",
    "wirespeed_watch_loss_ratio",
    "wirespeed_watch_test_timestamp_seconds",
    "wirespeed_watch_link_up",
    "wirespeed_watch_tests_total",
    "wirespeed_watch_link_degraded",
    "wirespeed_watch_link_degraded_ratio",
    "wirespeed_watch_incident_open",
    "wirespeed_watch_incident_ratio",
    "wirespeed_watch_incident_since_timestamp_seconds",
    "wirespeed_watch_incidents_total",
    "wirespeed_watch_host_busy",
    "wirespeed_watch_probe_period_seconds",
    "wirespeed_watch_bandwidth_every_seconds",
    "wirespeed_watch_pairs",
    "wirespeed_watch_http_connections",
    "wirespeed_watch_http_evictions_total",
];

/// The watcher's shared state: what the live page and `/metrics` serve.
#[derive(Default)]
pub struct Live {
    /// The state, as `/v1/watch` serves it.
    pub state: std::sync::Mutex<WatchState>,
    /// The Prometheus series.
    pub metrics: WatchMetrics,
}

/// The watcher's Prometheus series.
pub struct WatchMetrics {
    registry: Registry,
    min: Family<Labels, FGauge>,
    p50: Family<Labels, FGauge>,
    p99: Family<Labels, FGauge>,
    goodput: Family<Labels, FGauge>,
    cpu: Family<Labels, FGauge>,
    loss: Family<Labels, FGauge>,
    when: Family<Labels, FGauge>,
    up: Family<Labels, Gauge>,
    /// Every link (directed) and workload with a `link_up` series.
    links: std::sync::Mutex<std::collections::BTreeSet<LinkKey>>,
    tests: Family<Labels, Counter>,
    degraded: Family<Labels, Gauge>,
    degraded_ratio: Family<Labels, FGauge>,
    incident_open: Family<Labels, Gauge>,
    incident_ratio: Family<Labels, FGauge>,
    incident_since: Family<Labels, FGauge>,
    incidents: Family<Labels, Counter>,
    busy: Family<Labels, Gauge>,
    period: FGauge,
    bandwidth_every: FGauge,
    pairs: Gauge,
    http: ConnGauges,
}

impl Default for WatchMetrics {
    fn default() -> WatchMetrics {
        let mut r = Registry::with_prefix("wirespeed_watch");
        let m = WatchMetrics {
            registry: Registry::default(),
            min: Family::default(),
            p50: Family::default(),
            p99: Family::default(),
            goodput: Family::default(),
            cpu: Family::default(),
            loss: Family::default(),
            when: Family::default(),
            up: Family::default(),
            links: Default::default(),
            tests: Family::default(),
            degraded: Family::default(),
            degraded_ratio: Family::default(),
            incident_open: Family::default(),
            incident_ratio: Family::default(),
            incident_since: Family::default(),
            incidents: Family::default(),
            busy: Family::default(),
            period: FGauge::default(),
            bandwidth_every: FGauge::default(),
            pairs: Gauge::default(),
            http: ConnGauges::default(),
        };
        let link = "per client, server, their NICs and the workload";
        r.register("latency_min_seconds", format!("Fastest transaction of the newest probe (the latency floor drift is judged by), {link}"), m.min.clone());
        r.register(
            "latency_p50_seconds",
            format!("Median request/response latency of the newest probe, {link}"),
            m.p50.clone(),
        );
        r.register(
            "latency_p99_seconds",
            format!("99th percentile latency of the newest probe, {link}"),
            m.p99.clone(),
        );
        r.register(
            "goodput_bits_per_second",
            format!("Goodput of the newest test, {link}"),
            m.goodput.clone(),
        );
        r.register(
            "cpu_cores_per_gbps",
            format!("CPU of both sides (cores) per Gbit/s of goodput of the newest test, {link}"),
            m.cpu.clone(),
        );
        r.register(
            "loss_ratio",
            format!("TCP segments retransmitted over segments sent in the newest test, {link}"),
            m.loss.clone(),
        );
        r.register(
            "test_timestamp_seconds",
            format!("When the newest test ran (Unix seconds), {link}"),
            m.when.clone(),
        );
        r.register(
            "link_up",
            format!("1 when the newest test measured, 0 when it failed or an end left the watched set, {link}"),
            m.up.clone(),
        );
        r.register(
            "tests",
            "Tests run by the watcher, by workload and outcome",
            m.tests.clone(),
        );
        let series = "per link (its two ends sorted: client is the lower, server the higher, with their NICs) and workload";
        r.register(
            "link_degraded",
            format!("1 while a series of the link is degraded against its own baseline, else 0 (present once it was not healthy), {series}"),
            m.degraded.clone(),
        );
        r.register(
            "link_degraded_ratio",
            format!("How many times worse than its baseline the worst figure of a degraded series is (1 when healthy), {series}"),
            m.degraded_ratio.clone(),
        );
        r.register(
            "incident_open",
            "1 while an incident is open, 0 once closed, by scope (link, pair, nic, host, zone, fabric) and subject",
            m.incident_open.clone(),
        );
        r.register(
            "incident_ratio",
            "How many times worse than its baseline an incident's worst figure is, by scope and subject",
            m.incident_ratio.clone(),
        );
        r.register(
            "incident_since_timestamp_seconds",
            "When an open incident's first test past its threshold ran (Unix seconds), by scope and subject",
            m.incident_since.clone(),
        );
        r.register(
            "incidents",
            "Incidents opened, by scope",
            m.incidents.clone(),
        );
        r.register(
            "host_busy",
            "1 while a host's CPUs had next to no idle time over its newest tests (its links are not judged meanwhile), else 0",
            m.busy.clone(),
        );
        r.register(
            "probe_period_seconds",
            "The probe period in force",
            m.period.clone(),
        );
        r.register(
            "bandwidth_every_seconds",
            "How often each pair gets a bandwidth test",
            m.bandwidth_every.clone(),
        );
        r.register("pairs", "Pairs the schedule probes", m.pairs.clone());
        r.register(
            "http_connections",
            "HTTP connections open to the watcher",
            m.http.open.clone(),
        );
        r.register(
            "http_evictions",
            "HTTP connections closed to make room for another source's",
            m.http.evictions.clone(),
        );
        WatchMetrics { registry: r, ..m }
    }
}

impl WatchMetrics {
    /// The schedule's figures.
    pub fn schedule(&self, s: &Schedule) {
        self.period.set(s.probe_period_s());
        self.bandwidth_every.set(s.bandwidth_every_s());
        self.pairs.set(s.pairs().len() as i64);
    }

    /// A job's tests.
    pub fn tests(&self, tests: &[LinkTest]) {
        for t in tests {
            let outcome = if t.error.is_none() { "ok" } else { "error" };
            self.tests
                .get_or_create(&vec![
                    ("workload".into(), t.workload.clone()),
                    ("outcome".into(), outcome.into()),
                ])
                .inc();
            let l = link_labels(t);
            self.up.get_or_create(&l).set(i64::from(t.error.is_none()));
            self.links
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(link_key(t));
            let Some(r) = t.result.as_ref().filter(|_| t.error.is_none()) else {
                continue;
            };
            if let Some(lat) = &r.latency {
                self.min.get_or_create(&l).set(lat.min_us / 1e6);
                self.p50.get_or_create(&l).set(lat.p50_us / 1e6);
                self.p99.get_or_create(&l).set(lat.p99_us / 1e6);
            }
            self.goodput.get_or_create(&l).set(r.throughput_bps);
            let (cpu, loss) = crate::history::costs(r);
            if let Some(c) = cpu {
                self.cpu.get_or_create(&l).set(c);
            }
            if let Some(x) = loss {
                self.loss.get_or_create(&l).set(x);
            }
            self.when.get_or_create(&l).set(r.started_unix);
        }
    }

    /// The links (directed) and workloads with series.
    pub fn links(&self) -> Vec<LinkKey> {
        let known = self.links.lock().unwrap_or_else(|p| p.into_inner());
        known.iter().cloned().collect()
    }

    /// Links one of whose ends left the watched set: down, and their
    /// figures withdrawn (a stale figure would read as a live link).
    pub fn gone(&self, links: &[LinkTest]) {
        for t in links {
            let l = link_labels(t);
            self.up.get_or_create(&l).set(0);
            for f in [
                &self.min,
                &self.p50,
                &self.p99,
                &self.goodput,
                &self.cpu,
                &self.loss,
            ] {
                f.remove(&l);
            }
        }
    }

    /// The series of one link and workload (`states`: the link's series,
    /// any workload): degraded or not, and how far.
    pub fn series_health(&self, states: &[LinkHealth], workload: &str) {
        let mine: Vec<&LinkHealth> = states.iter().filter(|s| s.workload == workload).collect();
        let Some(first) = mine.first() else { return };
        let l = vec![
            ("client".to_string(), first.a.clone()),
            ("server".to_string(), first.b.clone()),
            ("client_nic".to_string(), first.a_nic.clone()),
            ("server_nic".to_string(), first.b_nic.clone()),
            ("workload".to_string(), workload.to_string()),
        ];
        let degraded: Vec<&&LinkHealth> = mine
            .iter()
            .filter(|s| s.health == Health::Degraded)
            .collect();
        let known = self.degraded.get(&l).is_some();
        if degraded.is_empty() && !known && mine.iter().all(|s| s.health != Health::Suspect) {
            return;
        }
        self.degraded
            .get_or_create(&l)
            .set(i64::from(!degraded.is_empty()));
        let ratio = degraded.iter().map(|s| s.ratio()).fold(1.0, f64::max);
        self.degraded_ratio.get_or_create(&l).set(ratio);
    }

    /// An incident's record: open (1) or closed (0), how far, since when.
    pub fn incident(&self, i: &Incident) {
        let l = vec![
            ("scope".to_string(), i.scope.clone()),
            ("subject".to_string(), i.subject.clone()),
        ];
        let open = i.closed_unix.is_none();
        if open && self.incident_open.get(&l).is_none_or(|g| g.get() == 0) {
            self.incidents
                .get_or_create(&vec![("scope".to_string(), i.scope.clone())])
                .inc();
        }
        self.incident_open.get_or_create(&l).set(i64::from(open));
        self.incident_ratio.get_or_create(&l).set(i.ratio());
        if open {
            self.incident_since.get_or_create(&l).set(i.since_unix);
        } else {
            self.incident_since.remove(&l);
        }
    }

    /// Which hosts are busy now (`busy`), among `all`.
    pub fn busy_hosts(&self, busy: &[String], all: &[String]) {
        for h in all {
            let l = vec![("host".to_string(), h.clone())];
            let b = busy.contains(h);
            if b || self.busy.get(&l).is_some() {
                self.busy.get_or_create(&l).set(i64::from(b));
            }
        }
    }

    /// The exposition in the Prometheus text format.
    pub fn encode(&self) -> Result<String> {
        let mut out = String::new();
        encode(&mut out, &self.registry)
            .map_err(|e| FleetError::Fleet(format!("encode the metrics: {e}")))?;
        Ok(openmetrics_to_prometheus(&out))
    }
}

/// A directed link and its workload: client, server, their NICs and the
/// workload.
pub type LinkKey = [String; 5];

fn link_key(t: &LinkTest) -> LinkKey {
    [
        t.client.clone(),
        t.server.clone(),
        t.client_nic.clone(),
        t.server_nic.clone(),
        t.workload.clone(),
    ]
}

/// The labels of a link's series.
fn link_labels(t: &LinkTest) -> Labels {
    vec![
        ("client".into(), t.client.clone()),
        ("server".into(), t.server.clone()),
        ("client_nic".into(), t.client_nic.clone()),
        ("server_nic".into(), t.server_nic.clone()),
        ("workload".into(), t.workload.clone()),
    ]
}

/// Renders the live page from the state.
pub type PageFn = Arc<dyn Fn(&WatchState) -> String + Send + Sync>;

#[derive(Clone)]
struct Web {
    live: Arc<Live>,
    page: PageFn,
}

async fn page(State(w): State<Web>) -> Response {
    let st = w
        .live
        .state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let html = (w.page)(&st);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

async fn state(State(w): State<Web>) -> Response {
    let st = w
        .live
        .state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    axum::Json(st).into_response()
}

async fn metrics(State(w): State<Web>) -> Response {
    match w.live.metrics.encode() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Serves the watcher's HTTP face on `listener` (already bound, so the
/// caller knows the address) until `stop` is notified.
pub async fn serve(
    listener: std::net::TcpListener,
    live: Arc<Live>,
    page_fn: PageFn,
    stop: Arc<tokio::sync::Notify>,
) -> Result<()> {
    listener
        .set_nonblocking(true)
        .map_err(|e| FleetError::io("set the watcher's listener non-blocking", e))?;
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| FleetError::io("hand the watcher's listener to the runtime", e))?;
    let limits = HttpLimits::default();
    let gauges = live.metrics.http.clone();
    let app = Router::new()
        .route("/", get(page))
        .route("/v1/watch", get(state))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state(Web {
            live,
            page: page_fn,
        })
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
        .layer(axum::middleware::from_fn(crate::protocol::stamp_watcher));
    accept_loop(listener, app, gauges, limits, stop).await;
    Ok(())
}
