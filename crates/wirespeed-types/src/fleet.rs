//! What `wirespeed fleet run --json` prints: every link of a fleet
//! measured per workload, the matrix per link, NIC and host, the outliers
//! with the evidence that explains them, and the pass/fail verdict.
//! Plain serde data; wirespeed-fleet fills it, wirespeed-report renders it.

use crate::TestResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the fleet JSON document; raised on incompatible changes.
pub const FLEET_SCHEMA_VERSION: u32 = 1;

/// A whole fleet run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetResults {
    /// See [`FLEET_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// wirespeed version that produced it.
    pub tool_version: String,
    /// The pattern run: pairs, ring, all-to-all, one-to-many, many-to-one.
    pub pattern: String,
    /// Tests a host took part in at once (1 = never two at once).
    pub concurrent: u32,
    /// Rounds in the plan.
    pub rounds: u32,
    /// Repeats of each test (the noise band comes from them).
    pub repeats: u32,
    /// Unix time the run started.
    pub started_unix: f64,
    /// Wall time of the whole run, seconds.
    pub elapsed_s: f64,
    /// Every agent: up or down, and its settings.
    pub agents: Vec<AgentStatus>,
    /// Every test run (or skipped), in run order.
    pub tests: Vec<LinkTest>,
    /// One matrix per workload.
    pub matrices: Vec<Matrix>,
    /// Links, NICs and hosts below the fleet median by more than the noise band.
    pub outliers: Vec<Outlier>,
    /// The `--min` / `--baseline` judgement, when one was asked for.
    pub verdict: Option<Verdict>,
    /// Remarks: skipped agents, defaults taken.
    pub notes: Vec<String>,
    /// True in a file written while the run went on (`--out` is rewritten
    /// as each test lands): the run was stopped before its end, and only
    /// `tests` is filled (`fleet run --resume FILE` measures the rest).
    #[serde(default)]
    pub partial: bool,
}

/// One agent as the run saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentStatus {
    /// Its name in the fleet.
    pub name: String,
    /// False when it stopped answering (or never answered).
    pub up: bool,
    /// Why it is down.
    pub error: Option<String>,
    /// Its settings as read by the agent itself (`/v1/facts`).
    pub facts: Option<HostFacts>,
}

/// The settings that make links differ, flattened for comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Host name as the agent reads it.
    pub hostname: String,
    /// Kernel release.
    pub kernel: String,
    /// Host-wide settings (sysctl name -> value), e.g. net.ipv4.tcp_congestion_control.
    pub settings: BTreeMap<String, String>,
    /// Per NIC of the fleet file, in its order.
    pub nics: Vec<NicFacts>,
}

/// A host's CPU counters, summed over its cores (/proc/stat), in ticks:
/// two readings say how idle it was between them. The agent adds them to
/// its facts (`cpu_ticks`), read anew on each request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    /// Ticks not idle (not idle nor iowait).
    pub busy: u64,
    /// All ticks.
    pub total: u64,
}

impl CpuTicks {
    /// Idle % of all CPUs from `earlier` to `self` (None when no tick
    /// passed or the counters went back: a reboot).
    pub fn idle_pct_since(&self, earlier: &CpuTicks) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|t| *t > 0)?;
        let busy = self.busy.checked_sub(earlier.busy)?;
        Some((100.0 * (1.0 - busy as f64 / total as f64)).clamp(0.0, 100.0))
    }
}

/// One NIC's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NicFacts {
    /// The NIC's name in the fleet file.
    pub name: String,
    /// The interface that holds its address on the host (None: not found).
    pub device: Option<String>,
    /// Setting -> value: mtu, gso_max_size, gro_max_size, tso, gso, gro,
    /// bond_xmit_hash_policy, ...
    pub settings: BTreeMap<String, String>,
}

/// One test between two agents over one NIC pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkTest {
    /// The workload's label (e.g. `stream`, `rr-64k`).
    pub workload: String,
    /// Round it ran in (0-based).
    pub round: u32,
    /// Repeat number (0-based).
    pub repeat: u32,
    /// The agent that ran the client.
    pub client: String,
    /// The agent whose server answered.
    pub server: String,
    /// The client's NIC name.
    pub client_nic: String,
    /// The server's NIC name.
    pub server_nic: String,
    /// Goodput, bits per second (0 when it failed).
    pub throughput_bps: f64,
    /// Transactions per second (rr, crr).
    pub transactions_per_s: f64,
    /// Median latency, microseconds (rr, crr).
    pub p50_us: Option<f64>,
    /// 99th percentile latency, microseconds (rr, crr).
    pub p99_us: Option<f64>,
    /// Tests other than this one the client agent ran at once (0 = alone).
    pub concurrent_with: u32,
    /// Why it failed or was skipped.
    pub error: Option<String>,
    /// The engine's full result.
    pub result: Option<TestResult>,
}

impl LinkTest {
    /// Why its figures cannot be trusted (an end's CPUs were taken by
    /// other work), when they cannot.
    pub fn contended(&self) -> Option<&str> {
        self.result.as_ref()?.contended.as_deref()
    }
}

/// Where a figure belongs: one link, one NIC, or one host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// A client NIC to a server NIC.
    #[default]
    Link,
    /// One NIC of one host, over every link it took part in.
    Nic,
    /// One host, over every link it took part in.
    Host,
}

impl Scope {
    /// Its name as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Link => "link",
            Scope::Nic => "nic",
            Scope::Host => "host",
        }
    }
}

/// A figure of one link, NIC or host: the median over its tests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// `client/nic -> server/nic` for links, `host/nic` for NICs, `host` for hosts.
    pub name: String,
    /// The client host (links) or the host.
    pub host: String,
    /// The server host (links only).
    pub peer: Option<String>,
    /// The NIC (links: the client's).
    pub nic: Option<String>,
    /// Median goodput, bits per second.
    pub throughput_bps: f64,
    /// Median p50 latency, microseconds (rr, crr).
    pub p50_us: Option<f64>,
    /// Median p99 latency, microseconds (rr, crr).
    pub p99_us: Option<f64>,
    /// Goodput of each repeat (links) or each link (NICs, hosts).
    pub samples: Vec<f64>,
    /// Median transactions per second (rr, crr, udp-rr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_s: Option<f64>,
}

/// The matrix of one workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// The workload's label.
    pub workload: String,
    /// Whether latency (rr, crr) rather than goodput is the figure of merit.
    pub latency: bool,
    /// Host names, rows (clients) and columns (servers).
    pub hosts: Vec<String>,
    /// Every measured link.
    pub links: Vec<Cell>,
    /// Per NIC of each host.
    pub nics: Vec<Cell>,
    /// Per host.
    pub per_host: Vec<Cell>,
    /// Median goodput over the links, bits per second.
    pub median_bps: f64,
    /// Median p99 over the links, microseconds (rr, crr).
    pub median_p99_us: Option<f64>,
    /// Median of the links' transactions per second (rr, crr, udp-rr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_tps: Option<f64>,
    /// The noise band: the relative spread of repeats (0.05 = 5%).
    pub noise_band: f64,
    /// How the band was found (measured from repeats, or the default).
    pub noise_source: String,
}

/// A link, NIC or host below the fleet median by more than the noise band.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// The workload's label.
    pub workload: String,
    /// Link, NIC or host.
    pub scope: Scope,
    /// The cell's name.
    pub name: String,
    /// The hosts it concerns (one, or a link's two).
    pub hosts: Vec<String>,
    /// Its median goodput, bits per second.
    pub throughput_bps: f64,
    /// The fleet median it is compared with.
    pub median_bps: f64,
    /// How far below the median, percent.
    pub below_pct: f64,
    /// Settings of its hosts that differ from the fleet majority.
    pub drift: Vec<Drift>,
    /// Doctor's findings on its hosts.
    pub findings: Vec<FindingNote>,
    /// The model's bottleneck of its slowest test.
    pub bottlenecks: Vec<BottleneckNote>,
    /// One line: what explains it.
    pub summary: String,
}

/// One setting of a host that differs from the fleet's majority.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// The host.
    pub host: String,
    /// The NIC, for NIC settings.
    pub nic: Option<String>,
    /// The setting, e.g. `mtu` or `net.ipv4.tcp_congestion_control`.
    pub setting: String,
    /// The host's value.
    pub value: String,
    /// The value most of the fleet has.
    pub majority: String,
    /// Hosts that share the majority value, of those that report it.
    pub majority_count: u32,
    /// Hosts that report the setting.
    pub of: u32,
}

/// A doctor finding on an outlier's host, in short.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FindingNote {
    /// The host.
    pub host: String,
    /// The finding's id (jumbo-frames, socket-buffers, ...).
    pub id: String,
    /// Its severity.
    pub severity: String,
    /// Its title.
    pub title: String,
}

/// The model's bottleneck for an outlier's test, in short.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BottleneckNote {
    /// Its kind, e.g. `sender_cpu`.
    pub kind: String,
    /// What it means.
    pub message: String,
}

/// The pass/fail judgement of `--min` and `--baseline`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `--min`, bits per second.
    pub min_bps: Option<f64>,
    /// The baseline file compared with.
    pub baseline: Option<String>,
    /// Allowed drop against the baseline, percent.
    pub tolerance_pct: Option<f64>,
    /// What failed, one line each (empty: passed).
    pub failures: Vec<String>,
    /// Tests whose ends' CPUs were taken by other work, one line each
    /// with the reason: their links are neither passed nor failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contended: Vec<String>,
}

impl Verdict {
    /// Whether every link passed (none failed, none contended).
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.contended.is_empty()
    }
}

/// One test as the fleet's history keeps it (`wirespeed fleet history`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryRow {
    /// When its measured window started (before schema 2: when its run
    /// started), Unix seconds.
    pub at_unix: f64,
    /// The workload's label.
    pub workload: String,
    /// Client agent.
    pub client: String,
    /// Server agent.
    pub server: String,
    /// Client NIC.
    pub client_nic: String,
    /// Server NIC.
    pub server_nic: String,
    /// Goodput, bits per second.
    pub throughput_bps: f64,
    /// Transactions per second (rr, crr).
    pub transactions_per_s: f64,
    /// Median latency, microseconds.
    pub p50_us: Option<f64>,
    /// 99th percentile latency, microseconds.
    pub p99_us: Option<f64>,
    /// Why it failed.
    pub error: Option<String>,
    /// Fastest transaction, microseconds (rr, crr): the latency floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_us: Option<f64>,
    /// CPU of both sides together, cores per Gbit/s of goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_gbps: Option<f64>,
    /// Segments retransmitted over segments sent (TCP), 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_ratio: Option<f64>,
    /// The client host's CPUs idle during the window, % of all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_idle_pct: Option<f64>,
    /// The same for the server host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_idle_pct: Option<f64>,
    /// TCP segments both ends retransmitted (rr; from TCP_INFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
}

/// An incident's transition, as the watcher raises it (stdout, the
/// history's `events` table, `/v1/watch`): opened when links degraded
/// against their own baselines and the smallest explanation was found,
/// closed when they recovered (or a wider incident took them in). Files
/// of earlier versions hold change points with no transition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DriftEvent {
    /// When it was raised, Unix seconds.
    pub at_unix: f64,
    /// When the change started: the first test past it, Unix seconds.
    pub since_unix: f64,
    /// What it names: `link`, `pair`, `nic`, `host`, `zone` or `fabric`
    /// (see [`Incident::scope`]).
    pub scope: String,
    /// The link, pair (`a,b`), NIC (`c/eth1`), host, zone or zones.
    pub subject: String,
    /// The workload whose figure moved most.
    pub workload: String,
    /// The figure: `min_us` (the latency floor), `retransmits` or
    /// `throughput_bps`.
    pub metric: String,
    /// The figure's baseline median.
    pub before: f64,
    /// The figure at its worst so far.
    pub after: f64,
    /// The pairs of the degraded links, `a,b` each.
    pub pairs: Vec<String>,
    /// Facts of the subject's hosts that changed between the baseline and
    /// now, e.g. `c/eth0 mtu: 9000 -> 1500`.
    pub changed: Vec<String>,
    /// One line for people.
    pub message: String,
    /// `opened` or `closed` (empty in files of earlier versions).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub transition: String,
    /// The incident it belongs to ([`Incident::id`]; 0 in earlier files).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub incident: u64,
    /// What supports the conclusion, e.g. `c/eth1: 2 of 2 links over eth1
    /// not healthy, 0 of 5 over eth0`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub evidence: String,
    /// Why it closed: `recovered`, or the incident that took it in (`host
    /// c`); empty when it opened.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outcome: String,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// How a link's series stands against its own baseline.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Too few tests yet to judge it.
    #[default]
    Learning,
    /// Within its baseline.
    Healthy,
    /// One test past its threshold; the next one decides.
    Suspect,
    /// Past its threshold for the confirming tests in a row, and not yet
    /// back for as many.
    Degraded,
}

impl Health {
    /// The name used in labels and tables.
    pub fn name(self) -> &'static str {
        match self {
            Health::Learning => "learning",
            Health::Healthy => "healthy",
            Health::Suspect => "suspect",
            Health::Degraded => "degraded",
        }
    }
}

/// One series of the watch (a link: two host/NIC ends, sorted; a
/// workload) as it stands: its health, baseline and newest figure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkHealth {
    /// The lower end's host.
    pub a: String,
    /// Its NIC (empty without NICs in the fleet file).
    pub a_nic: String,
    /// The higher end's host.
    pub b: String,
    /// Its NIC.
    pub b_nic: String,
    /// The workload.
    pub workload: String,
    /// The figure judged: `min_us`, `p50_us`, `retransmits` or
    /// `throughput_bps`.
    pub metric: String,
    /// Where it stands.
    pub health: Health,
    /// Since when (the first test past the threshold), when not healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_unix: Option<f64>,
    /// The baseline's median (frozen while suspect or degraded).
    pub baseline: f64,
    /// The newest test's figure.
    pub newest: f64,
    /// The worst figure since it left health.
    pub worst: f64,
    /// The newest test ran while an end's CPUs had next to no idle time:
    /// it was not judged.
    #[serde(default)]
    pub contended: bool,
}

/// How many times worse `worst` is than `baseline` for `metric`
/// (`throughput_bps` is worse lower; `retransmits` counts from one so a
/// clean baseline of 0 gives a finite figure; 0 when undefined).
pub fn times_worse(metric: &str, baseline: f64, worst: f64) -> f64 {
    let r = match metric {
        "throughput_bps" => baseline / worst.max(1e-9),
        "retransmits" => (worst + 1.0) / (baseline + 1.0),
        _ => worst / baseline.max(1e-9),
    };
    if r.is_finite() { r } else { 0.0 }
}

/// A figure's move in words: `the latency floor (fastest transaction)
/// of rr rose 181.0x (22 us -> 3990 us)`, `rr-64k retransmitted 9
/// segments a test (baseline 0)`, `goodput of stream fell 9.8x (940.0 ->
/// 96.0 Mbit/s)`.
pub fn figure_text(workload: &str, metric: &str, before: f64, worst: f64) -> String {
    let x = times_worse(metric, before, worst);
    match metric {
        "throughput_bps" => format!(
            "goodput of {workload} fell {x:.1}x ({:.1} -> {:.1} Mbit/s)",
            before / 1e6,
            worst / 1e6
        ),
        "retransmits" => {
            format!("{workload} retransmitted {worst:.0} segments a test (baseline {before:.0})")
        }
        "p50_us" => format!(
            "the median transaction of {workload} rose {x:.1}x ({before:.0} us -> {worst:.0} us)"
        ),
        _ => format!(
            "the latency floor (fastest transaction) of {workload} rose {x:.1}x ({before:.0} us -> {worst:.0} us)"
        ),
    }
}

impl LinkHealth {
    /// How many times worse its worst figure is than its baseline.
    pub fn ratio(&self) -> f64 {
        times_worse(&self.metric, self.baseline, self.worst)
    }

    /// `a/eth0 - b/eth0` (or `a - b` without NICs).
    pub fn link(&self) -> String {
        format!(
            "{} - {}",
            end_name(&self.a, &self.a_nic),
            end_name(&self.b, &self.b_nic)
        )
    }
}

/// A link's end as people write it: `a/eth0`, or `a` without a NIC.
pub fn end_name(host: &str, nic: &str) -> String {
    if nic.is_empty() {
        host.to_string()
    } else {
        format!("{host}/{nic}")
    }
}

/// A fault the watcher holds open: links degraded against their own
/// baselines, explained by the smallest thing they share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    /// Its number, unique within a history file.
    pub id: u64,
    /// `link` (one NIC pair of a pair with several), `pair`, `nic` (one
    /// NIC of a host: its links over other NICs are healthy), `host`,
    /// `zone` (the links leaving one zone) or `fabric` (the links between
    /// zones).
    pub scope: String,
    /// The link, `a,b`, `c/eth1`, `c`, the zone, or the zones joined by `,`.
    pub subject: String,
    /// The first test past its threshold among its links, Unix seconds.
    pub since_unix: f64,
    /// When it was opened.
    pub opened_unix: f64,
    /// When it was closed; None while open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_unix: Option<f64>,
    /// Why it closed: `recovered`, or the incident that took it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The workload whose figure moved most.
    pub workload: String,
    /// Its figure (`min_us`, `retransmits`, `throughput_bps`).
    pub metric: String,
    /// Its baseline median.
    pub before: f64,
    /// Its worst figure while open.
    pub worst: f64,
    /// Degraded or suspect links in its scope, and all links of its scope
    /// with figures.
    pub degraded: usize,
    /// See `degraded`.
    pub links: usize,
    /// What supports it, in words.
    pub evidence: String,
    /// The degraded links, `a/eth0 - b/eth0` each.
    pub supporting: Vec<String>,
    /// Facts of its hosts that changed since the baseline.
    pub changed: Vec<String>,
    /// One line for people.
    pub message: String,
}

impl Incident {
    /// How many times worse its worst figure is than its baseline.
    pub fn ratio(&self) -> f64 {
        times_worse(&self.metric, self.before, self.worst)
    }

    /// Its worst figure in words ([`figure_text`]); empty without one.
    pub fn figure(&self) -> String {
        if self.metric.is_empty() {
            return String::new();
        }
        figure_text(&self.workload, &self.metric, self.before, self.worst)
    }
}

/// What `wirespeed fleet watch` knows now: its schedule, each link's
/// latest figures, recent history per pair, and the drift events (the
/// live page and `/v1/watch` serve it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchState {
    /// See [`FLEET_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// When this watcher started, Unix seconds.
    pub started_unix: f64,
    /// Now, Unix seconds.
    pub now_unix: f64,
    /// The agents, in fleet order.
    pub agents: Vec<String>,
    /// The probe period in force, seconds.
    pub probe_period_s: f64,
    /// How often each pair gets a bandwidth test, seconds.
    pub bandwidth_every_s: f64,
    /// Tests stored since start.
    pub tests_stored: u64,
    /// Agents that took the fleet from this watcher (at start, or later
    /// when they missed it or restarted since).
    pub agents_with_fleet: u64,
    /// Bandwidth tests started out of turn (a pair's probes looked
    /// suspect) since start.
    #[serde(default)]
    pub extra_bandwidth_tests: u64,
    /// The newest test of each link and workload.
    pub latest: Vec<HistoryRow>,
    /// Recent tests, oldest first (bounded), for the per-pair charts.
    pub recent: Vec<HistoryRow>,
    /// Incident transitions, newest last.
    pub events: Vec<DriftEvent>,
    /// Open incidents, then those closed in the last day, newest first.
    #[serde(default)]
    pub incidents: Vec<Incident>,
    /// Every series that is not healthy (suspect, degraded, or learning
    /// while contended): the live page colours its cells by them.
    #[serde(default)]
    pub health: Vec<LinkHealth>,
    /// Hosts whose CPUs had next to no idle time over their newest tests:
    /// their links' figures are not judged while so.
    #[serde(default)]
    pub busy_hosts: Vec<String>,
}
