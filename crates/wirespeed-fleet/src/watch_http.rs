//! The watcher's Prometheus series and its HTTP face: `/metrics`,
//! `/v1/watch` (the state as JSON), `/` (the live page, rendered by the
//! caller) and `/healthz`. Read-only; served with the agent's connection
//! limits, so one slow client cannot starve another.
//!
//! Label cardinality: the link series carry client, server, both NICs and
//! the workload. The schedule probes at most n x peers / 2 pairs (16 peers
//! by default), so at 1,000 agents with two NICs each and three workloads
//! a family holds at most 8,000 pairs x 2 directions x 2 NIC pairs x 3 =
//! 96,000 series, and the drift families one per host or pair that moved.

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
use wirespeed_types::fleet::{DriftEvent, LinkTest, WatchState};

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
    "wirespeed_watch_drift_events_total",
    "wirespeed_watch_drift_last_timestamp_seconds",
    "wirespeed_watch_drift_ratio",
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
    events: Family<Labels, Counter>,
    last_event: Family<Labels, FGauge>,
    event_ratio: Family<Labels, FGauge>,
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
            events: Family::default(),
            last_event: Family::default(),
            event_ratio: Family::default(),
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
        r.register(
            "drift_events",
            "Drift events raised, by scope (host or pair), subject and metric",
            m.events.clone(),
        );
        r.register(
            "drift_last_timestamp_seconds",
            "When the newest drift event of a subject was raised (Unix seconds)",
            m.last_event.clone(),
        );
        r.register(
            "drift_ratio",
            "The newest drift event's figure after over before, per subject and metric",
            m.event_ratio.clone(),
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

    /// A drift event.
    pub fn event(&self, e: &DriftEvent) {
        let who = vec![
            ("scope".to_string(), e.scope.clone()),
            ("subject".to_string(), e.subject.clone()),
        ];
        let mut l = who.clone();
        l.push(("metric".into(), e.metric.clone()));
        self.events.get_or_create(&l).inc();
        self.last_event.get_or_create(&who).set(e.at_unix);
        if e.before > 0.0 {
            self.event_ratio.get_or_create(&l).set(e.after / e.before);
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
