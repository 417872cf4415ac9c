//! The agent's Prometheus metrics: last results per peer and path, test
//! and refusal counters, the host's facts as info series.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use wirespeed_types::TestResult;

/// A series' labels, (name, value).
type Labels = Vec<(String, String)>;
/// A gauge of floating-point values.
type FGauge = Gauge<f64, AtomicU64>;

/// The agent's metric families, registered in `registry`.
pub(super) struct Metrics {
    pub(super) registry: Registry,
    throughput: Family<Labels, FGauge>,
    p50: Family<Labels, FGauge>,
    p99: Family<Labels, FGauge>,
    pub(super) tests: Family<Labels, Counter>,
    refusals: Family<Labels, Counter>,
    pub(super) errors: Family<Labels, Counter>,
    nic_mtu: Family<Labels, Gauge>,
    nic_gso: Family<Labels, Gauge>,
    nic_gro: Family<Labels, Gauge>,
    nic_info: Family<Labels, Gauge>,
    host_info: Family<Labels, Gauge>,
    pub(super) http_connections: Gauge,
    pub(super) http_evictions: Counter,
}

/// `wirespeed_build_info{release, fleet_protocol, control_protocol} 1`:
/// during a rolling upgrade, `count by (release)` shows how far it got.
fn build_info() -> Family<Labels, Gauge> {
    use crate::protocol::{FLEET_PROTOCOL, MIN_FLEET_PROTOCOL};
    use wirespeed_engine::proto::{MIN_PROTOCOL_VERSION, PROTOCOL_VERSION};
    use wirespeed_types::protocol::{RELEASE, range_text};
    let f = Family::<Labels, Gauge>::default();
    f.get_or_create(&vec![
        ("release".into(), RELEASE.into()),
        (
            "fleet_protocol".into(),
            range_text(MIN_FLEET_PROTOCOL, FLEET_PROTOCOL),
        ),
        (
            "control_protocol".into(),
            range_text(MIN_PROTOCOL_VERSION, PROTOCOL_VERSION),
        ),
    ])
    .set(1);
    f
}

impl Metrics {
    pub(super) fn new() -> Metrics {
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
        registry.register(
            "build_info",
            "This agent's release and the protocol versions it speaks, as labels (value 1)",
            build_info(),
        );
        Metrics { registry, ..m }
    }

    pub(super) fn refuse(&self, reason: &str) {
        self.refusals
            .get_or_create(&vec![("reason".into(), reason.into())])
            .inc();
    }

    pub(super) fn set_facts(&self, s: &wirespeed_host::Snapshot) {
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

    pub(super) fn record(&self, peer: &str, label: &str, r: &TestResult) {
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
