//! Link health as a state, judged per series against its own baseline.
//!
//! A series is a link (two host/NIC ends, sorted, so a probe counts
//! whichever end led it), a workload and a figure: the latency floor
//! (`min_us`, the fastest transaction) and the segments both ends
//! retransmitted (`retransmits`) of each probe, the goodput
//! (`throughput_bps`) of each bandwidth test. Each keeps the figures of
//! its healthy tests as its baseline, frozen while it is not healthy, so
//! a fault never slides into what it is judged against; and it moves
//! Learning -> Healthy -> Suspect -> Degraded -> Healthy:
//!
//! - a test is *past* its threshold when it is worse than the baseline's
//!   median by a factor, beyond the baseline's high by a margin, and, for
//!   latency, by an absolute amount under which no change is judged (the
//!   floors of a quiet lab move 2.3x with nothing changed; see
//!   docs/fleet.md, "Link health", for the recordings the rules come
//!   from);
//! - [`Rules::confirm`] tests past it in a row make the series degraded
//!   (the first one makes it suspect), and [`Rules::clear`] tests back
//!   under half the threshold's excess end it (hysteresis);
//! - a test that ran while an end's CPUs had next to no idle time is not
//!   judged at all ([`BusyHosts`]): a busy host moves latency floors with
//!   no network change.
//!
//! Pure: the watcher ([`crate::watch`]) feeds rows in; where a link stands
//! is read back for localization ([`crate::localize`]), the metrics and
//! the live page.

use std::collections::{BTreeSet, HashMap, VecDeque};
use wirespeed_types::fleet::{Health, HistoryRow, LinkHealth};

/// When a figure counts as past its threshold, and for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// A latency floor is past its threshold at this many times its
    /// baseline median...
    pub ratio: f64,
    /// ...and this many times the baseline's high (its 90th percentile)...
    pub margin: f64,
    /// ...and at least this much above the median, microseconds.
    pub min_change_us: f64,
    /// Retransmitted segments in one test that count as loss (and at
    /// least twice the baseline's high, plus one).
    pub loss_segments: f64,
    /// Goodput is past its threshold under this share of its baseline
    /// median (and under its low by the margin).
    pub goodput_share: f64,
    /// The probe whose latency floor anchors the others: the fastest of
    /// its many transactions barely moves on a busy host (the lab's rr
    /// floor, of 100 transactions, stayed under 0.15 of its threshold
    /// under two builds and a 1,000-agent test on its two cores, while
    /// crr's, of 20 connections, rose 20-60x for single probes and
    /// rr-64k's, of 8 transactions, 5x; docs/fleet.md, "Link health").
    pub anchor: String,
    /// The anchor's floor past its threshold counts alone when it is this
    /// much above its median (microseconds); under it, only with another
    /// floor of the link past its own in the same job.
    pub anchor_alone_us: f64,
    /// Any other floor past its threshold counts alone this much above
    /// its median (a cap or an MTU moves only rr-64k's: 13 and 9.5 ms in
    /// the lab), while the lab's busy CPUs moved it 2.4 ms at most; under
    /// it, only with the anchor past its own in the same job.
    pub alone_us: f64,
    /// Probes whose floor never counts alone: crr's, the fastest of 20
    /// connections, rose 140x for single probes on the busy lab.
    pub weak: Vec<String>,
    /// Probes whose median transaction is judged too: a shaper with a
    /// burst of 64 KiB (the lab's htb caps, a policer) lets the first of
    /// rr-64k's transactions through at line rate, so a 50 Mbit/s cap
    /// moved its floor 1.5 ms and its median 21 ms.
    pub medians: Vec<String>,
    /// Tests past the threshold that make a series degraded, among this
    /// many and one more (2: two of three, so a loss that shows in most
    /// probes, not all, is confirmed as fast as a step).
    pub confirm: usize,
    /// Clear tests in a row that end it (one for goodput: a bandwidth
    /// test is seconds long).
    pub clear: usize,
    /// Healthy tests kept as the baseline.
    pub baseline: usize,
    /// Fewest healthy tests to judge probes against.
    pub min_baseline: usize,
    /// Fewest healthy bandwidth tests to judge goodput against.
    pub min_baseline_goodput: usize,
    /// An end whose CPUs were idle at most this (% of all of them, mean
    /// over its newest tests) is busy: its tests are not judged.
    pub busy_idle_pct: f64,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            ratio: 3.0,
            margin: 1.5,
            min_change_us: 500.0,
            loss_segments: 2.0,
            goodput_share: 0.5,
            anchor: "rr".into(),
            anchor_alone_us: 2_000.0,
            alone_us: 5_000.0,
            weak: vec!["crr".into()],
            medians: vec!["rr-64k".into()],
            confirm: 2,
            clear: 2,
            baseline: 30,
            min_baseline: 5,
            min_baseline_goodput: 2,
            busy_idle_pct: 10.0,
        }
    }
}

/// The figures a series can judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// The latency floor, microseconds (worse when higher).
    MinUs,
    /// The median transaction, microseconds (worse when higher).
    MedianUs,
    /// Segments retransmitted by both ends (worse when higher).
    Retransmits,
    /// Goodput, bits per second (worse when lower).
    Goodput,
}

impl Metric {
    /// The name stored in events and labels.
    pub fn name(self) -> &'static str {
        match self {
            Metric::MinUs => "min_us",
            Metric::MedianUs => "p50_us",
            Metric::Retransmits => "retransmits",
            Metric::Goodput => "throughput_bps",
        }
    }
}

/// One end of a link: a host and its NIC (empty without NICs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct End {
    /// The agent's name.
    pub host: String,
    /// The NIC's name in the fleet file.
    pub nic: String,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&wirespeed_types::fleet::end_name(&self.host, &self.nic))
    }
}

/// A link: two ends, the lower first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link(pub End, pub End);

impl Link {
    /// The link a row ran over.
    pub fn of(r: &HistoryRow) -> Link {
        let c = End {
            host: r.client.clone(),
            nic: r.client_nic.clone(),
        };
        let s = End {
            host: r.server.clone(),
            nic: r.server_nic.clone(),
        };
        if c <= s { Link(c, s) } else { Link(s, c) }
    }

    /// Whether `host` is one of its ends.
    pub fn touches(&self, host: &str) -> bool {
        self.0.host == host || self.1.host == host
    }
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} - {}", self.0, self.1)
    }
}

/// A series: a link, a workload, a figure.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// The link.
    pub link: Link,
    /// The workload's label.
    pub workload: String,
    /// The figure.
    pub metric: Metric,
}

/// A series' memory.
#[derive(Debug, Clone, Default)]
struct Series {
    /// Figures of its healthy tests, oldest first.
    base: VecDeque<f64>,
    health: Health,
    /// Tests past the threshold since it became suspect, or clear ones
    /// in a row (degraded).
    run: usize,
    /// Tests judged since it became suspect.
    seen: usize,
    since: Option<f64>,
    worst: f64,
    newest: f64,
    contended: bool,
}

/// A series' health changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The series.
    pub key: Key,
    /// Before.
    pub from: Health,
    /// Now.
    pub to: Health,
    /// The test that moved it, Unix seconds.
    pub at_unix: f64,
}

/// The baseline's median and its high (90th percentile), or its low
/// (10th) for goodput.
fn stats(base: &VecDeque<f64>, m: Metric) -> (f64, f64) {
    let mut v: Vec<f64> = base.iter().copied().collect();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    let edge = if m == Metric::Goodput { q(0.1) } else { q(0.9) };
    (q(0.5), edge)
}

impl Series {
    fn judged(&self, rules: &Rules, m: Metric) -> bool {
        let need = if m == Metric::Goodput {
            rules.min_baseline_goodput
        } else {
            rules.min_baseline
        };
        self.base.len() >= need.max(1)
    }

    /// How far past its threshold `v` is: above 1 past it, under 0.5
    /// clear (the hysteresis band between).
    fn excess(&self, rules: &Rules, m: Metric, v: f64) -> f64 {
        let (med, edge) = stats(&self.base, m);
        match m {
            Metric::MinUs | Metric::MedianUs => {
                let need = rules
                    .min_change_us
                    .max((rules.ratio - 1.0) * med)
                    .max(rules.margin * edge - med);
                (v - med) / need.max(1e-9)
            }
            Metric::Retransmits => {
                let need = rules.loss_segments.max(2.0 * edge + 1.0);
                v / need
            }
            Metric::Goodput => {
                let bar = (rules.goodput_share * med).min(edge / rules.margin);
                // 1 at the bar, 0 at the median, above 1 under the bar.
                let span = (med - bar).max(1e-9);
                (med - v) / span
            }
        }
    }

    fn push(&mut self, v: f64, keep: usize) {
        self.base.push_back(v);
        while self.base.len() > keep.max(1) {
            self.base.pop_front();
        }
    }

    /// One test's figure `v` at `at`, with its excess over the threshold
    /// (`x`, None while the baseline is too short) and whether a test
    /// past it counts (`counts`: corroborated by another series of the
    /// link, or far past it alone); the health it moved from, if any. A
    /// test past its threshold that does not count changes nothing and
    /// stays out of the baseline.
    fn observe(
        &mut self,
        rules: &Rules,
        m: Metric,
        v: f64,
        at: f64,
        x: Option<f64>,
        counts: bool,
    ) -> Option<Health> {
        self.newest = v;
        self.contended = false;
        let was = self.health;
        let Some(x) = x else {
            self.push(v, rules.baseline);
            if self.judged(rules, m) {
                self.health = Health::Healthy;
            }
            return None;
        };
        if x >= 1.0 && !counts {
            if self.health == Health::Degraded {
                self.run = 0;
            }
            return None;
        }
        let worse = |a: f64, b: f64| match m {
            Metric::Goodput => a.min(b),
            _ => a.max(b),
        };
        match self.health {
            Health::Learning | Health::Healthy if x >= 1.0 => {
                (self.health, self.run, self.seen) = (Health::Suspect, 1, 1);
                (self.since, self.worst) = (Some(at), v);
            }
            Health::Learning | Health::Healthy => {
                self.health = Health::Healthy;
                self.push(v, rules.baseline);
            }
            Health::Suspect if x >= 1.0 => {
                (self.run, self.seen) = (self.run + 1, self.seen + 1);
                self.worst = worse(self.worst, v);
                if self.run >= rules.confirm {
                    (self.health, self.run) = (Health::Degraded, 0);
                }
            }
            Health::Suspect => {
                self.seen += 1;
                self.push(v, rules.baseline);
                if self.seen > rules.confirm {
                    (self.health, self.run, self.since) = (Health::Healthy, 0, None);
                }
            }
            Health::Degraded if x >= 1.0 => {
                self.run = 0;
                self.worst = worse(self.worst, v);
            }
            Health::Degraded if x < 0.5 => {
                self.run += 1;
                // A bandwidth test is seconds long: one clear one ends it.
                let need = if m == Metric::Goodput { 1 } else { rules.clear };
                if self.run >= need {
                    (self.health, self.run, self.since) = (Health::Healthy, 0, None);
                    self.push(v, rules.baseline);
                }
            }
            Health::Degraded => self.run = 0,
        }
        (self.health != was).then_some(was)
    }
}

/// The figures of one link's rows of a job, with the series' workload
/// and the row they stand for: each probe's latency floor (and the
/// median of those in [`Rules::medians`]), each
/// bandwidth test's goodput, and the segments all its probes
/// retransmitted together (workload [`PROBES`]: 1% loss each way made
/// rr retransmit 1-2 segments a test and rr-64k, at 45 wire packets a
/// message, about 7; together they clear the threshold that a single
/// spurious retransmission on a busy host does not). Failed tests have
/// none.
pub fn link_figures<'a>(
    rows: &[&'a HistoryRow],
    rules: &Rules,
) -> Vec<(String, Metric, f64, &'a HistoryRow)> {
    let mut out = Vec::new();
    let mut retx: Option<(f64, &HistoryRow)> = None;
    for r in rows.iter().copied().filter(|r| r.error.is_none()) {
        match r.min_us {
            Some(v) if v > 0.0 => {
                out.push((r.workload.clone(), Metric::MinUs, v, r));
                if let Some(p) = r.p50_us.filter(|_| rules.medians.contains(&r.workload)) {
                    out.push((r.workload.clone(), Metric::MedianUs, p, r));
                }
                // A probe without TCP_INFO (crr: its connections are too
                // short-lived to read) whose slowest transactions waited
                // a retransmission timeout counts as one loss.
                let n = r
                    .retransmits
                    .map(|n| n as f64)
                    .or_else(|| r.p99_us.map(|p| if p >= RTO_SIGN_US { 1.0 } else { 0.0 }));
                if let Some(n) = n {
                    let sum = retx.map_or(0.0, |x| x.0) + n;
                    retx = Some((sum, retx.map_or(r, |x| x.1)));
                }
            }
            _ if r.throughput_bps > 0.0 => {
                out.push((r.workload.clone(), Metric::Goodput, r.throughput_bps, r));
            }
            _ => {}
        }
    }
    if let Some((n, r)) = retx {
        out.push((PROBES.to_string(), Metric::Retransmits, n, r));
    }
    out
}

/// A p99 at least this long (microseconds) is a retransmission timeout
/// (Linux waits 200 ms at least; a SYN 1 s): the lab's crr p99 reached
/// 87 ms under two builds and a 1,000-agent test, and 0.2-1 s with 1%
/// loss.
pub const RTO_SIGN_US: f64 = 150_000.0;

/// The workload name of a link's retransmission series: every probe of
/// a job together.
pub const PROBES: &str = "probes";

/// The rows of `rows` (oldest first) grouped as the jobs that made them
/// were: rows of one host pair less than [`JOB_GAP_S`] after the
/// group's previous one (a restart judges the history again this way).
pub fn jobs(rows: &[HistoryRow]) -> Vec<Vec<HistoryRow>> {
    let mut out: Vec<Vec<HistoryRow>> = Vec::new();
    let mut open: HashMap<(String, String), usize> = HashMap::new();
    for r in rows {
        let pair = if r.client <= r.server {
            (r.client.clone(), r.server.clone())
        } else {
            (r.server.clone(), r.client.clone())
        };
        match open.get(&pair) {
            Some(&i)
                if out[i]
                    .last()
                    .is_some_and(|x| r.at_unix - x.at_unix < JOB_GAP_S) =>
            {
                out[i].push(r.clone());
            }
            _ => {
                open.insert(pair, out.len());
                out.push(vec![r.clone()]);
            }
        }
    }
    out
}

/// Rows of one pair closer than this are one job's (a job's tests run
/// one after another; the next probe of a pair is half a period later
/// at least).
pub const JOB_GAP_S: f64 = 2.0;

/// How idle each host's CPUs were: over the last facts round (two
/// readings of its CPU counters a probe period apart), else over its
/// newest tests.
#[derive(Debug, Clone, Default)]
pub struct BusyHosts {
    idle: HashMap<String, VecDeque<f64>>,
    /// Idle % of each host between its two newest facts readings.
    host: HashMap<String, f64>,
}

/// Idle readings kept per host: a probe's window is milliseconds long,
/// so one reading is 0 or 100% as often as not (/proc/stat counts
/// ticks); their mean over this many says how busy the host was.
const IDLE_READINGS: usize = 12;

impl BusyHosts {
    /// Notes both ends' idle time of `r`.
    pub fn note(&mut self, r: &HistoryRow) {
        for (h, v) in [
            (&r.client, r.client_idle_pct),
            (&r.server, r.server_idle_pct),
        ] {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                let q = self.idle.entry(h.clone()).or_default();
                q.push_back(v);
                if q.len() > IDLE_READINGS {
                    q.pop_front();
                }
            }
        }
    }

    /// Notes `host`'s idle % over the last facts round.
    pub fn set_host(&mut self, host: &str, idle_pct: f64) {
        if idle_pct.is_finite() {
            self.host.insert(host.to_string(), idle_pct);
        }
    }

    /// How idle `host` was: over the last facts round where known (a
    /// probe's window is milliseconds long and its reading says little:
    /// under a busy loop per CPU the lab's crr and rr-64k probes read
    /// 50-65% idle), else the mean over its newest tests (None before 4).
    pub fn idle(&self, host: &str) -> Option<f64> {
        if let Some(v) = self.host.get(host) {
            return Some(*v);
        }
        let q = self.idle.get(host).filter(|q| q.len() >= 4)?;
        Some(q.iter().sum::<f64>() / q.len() as f64)
    }

    /// Whether `host` is busy under `rules`.
    pub fn busy(&self, host: &str, rules: &Rules) -> bool {
        self.idle(host).is_some_and(|i| i <= rules.busy_idle_pct)
    }

    /// The busy hosts, sorted.
    pub fn all_busy(&self, rules: &Rules) -> Vec<String> {
        let mut v: Vec<String> = self
            .idle
            .keys()
            .chain(self.host.keys().filter(|h| !self.idle.contains_key(*h)))
            .filter(|h| self.busy(h, rules))
            .cloned()
            .collect();
        v.sort();
        v
    }
}

/// Every series' state, and every link's (the worst of its series).
#[derive(Debug, Clone, Default)]
pub struct Detector {
    rules: Rules,
    series: HashMap<Key, Series>,
    /// The series of each link.
    by_link: HashMap<Link, Vec<Key>>,
    /// Each link's worst health over its series.
    links: HashMap<Link, Health>,
    /// Series suspect or degraded.
    unhealthy: BTreeSet<Key>,
    /// Series whose newest test was not judged (a busy end).
    contended: BTreeSet<Key>,
    /// How busy each host has been.
    pub busy: BusyHosts,
}

impl Detector {
    /// A detector under `rules`.
    pub fn new(rules: Rules) -> Detector {
        Detector {
            rules,
            ..Detector::default()
        }
    }

    /// The rules in force.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Judges one stored row on its own (see [`Detector::observe_job`]).
    pub fn observe(&mut self, r: &HistoryRow) -> Vec<Change> {
        self.observe_job(std::slice::from_ref(r))
    }

    /// Judges the rows of one job (a pair's probes, or one bandwidth
    /// test), link by link: a test past its threshold counts as the
    /// link's rules say ([`Rules::anchor`], [`Rules::alone_us`]: a delay moves every probe's
    /// floor, the anchor's among them; a busy host moves the floors of
    /// few transactions alone). The series whose health changed.
    pub fn observe_job(&mut self, rows: &[HistoryRow]) -> Vec<Change> {
        for r in rows {
            self.busy.note(r);
        }
        let mut links: Vec<(Link, Vec<&HistoryRow>)> = Vec::new();
        for r in rows {
            let l = Link::of(r);
            match links.iter_mut().find(|(x, _)| *x == l) {
                Some((_, v)) => v.push(r),
                None => links.push((l, vec![r])),
            }
        }
        let mut out = Vec::new();
        for (link, rows) in links {
            self.judge_link(&link, &rows, &mut out);
            self.refresh_link(&link);
        }
        out
    }

    /// Which of a link's judged tests in one job count when past their
    /// thresholds: retransmits and goodput always (their healthy noise
    /// is small); a latency floor past its own by an amount that it alone
    /// counts at ([`Rules::alone_us`], [`Rules::anchor_alone_us`]; never
    /// a [`Rules::weak`] one), or any floor past its own while the
    /// anchor's is too (or, with no anchor among the probes, while
    /// another floor is).
    fn counting(&self, items: &[(Key, f64, f64, bool, Option<f64>)]) -> BTreeSet<Key> {
        let r = &self.rules;
        let floors: Vec<(&Key, f64)> = items
            .iter()
            .filter(|i| !i.3 && matches!(i.0.metric, Metric::MinUs | Metric::MedianUs))
            .filter_map(|i| i.4.map(|x| (&i.0, x)))
            .collect();
        let anchor = floors.iter().find(|(k, _)| k.workload == r.anchor);
        let corroborated = match anchor {
            Some((_, x)) => *x >= 1.0 && floors.iter().filter(|f| f.1 >= 1.0).count() >= 2,
            None => floors.iter().filter(|f| f.1 >= 1.0).count() >= 2,
        };
        let mut out = BTreeSet::new();
        for (key, v, _, contended, x) in items {
            let (Some(x), false) = (x, contended) else {
                continue;
            };
            let above = self
                .series
                .get(key)
                .filter(|s| !s.base.is_empty())
                .map_or(0.0, |s| v - stats(&s.base, key.metric).0);
            let alone = if key.workload == r.anchor {
                r.anchor_alone_us
            } else if r.weak.contains(&key.workload) {
                f64::INFINITY
            } else {
                r.alone_us
            };
            let ok = match key.metric {
                Metric::Retransmits | Metric::Goodput => true,
                Metric::MinUs | Metric::MedianUs => *x >= 1.0 && (above >= alone || corroborated),
            };
            if ok {
                out.insert(key.clone());
            }
        }
        out
    }

    /// One link's tests of a job.
    fn judge_link(&mut self, link: &Link, rows: &[&HistoryRow], out: &mut Vec<Change>) {
        let busy = |d: &Detector, r: &HistoryRow| {
            d.busy.busy(&r.client, &d.rules) || d.busy.busy(&r.server, &d.rules)
        };
        let mut items: Vec<(Key, f64, f64, bool, Option<f64>)> = Vec::new();
        for (workload, metric, v, r) in link_figures(rows, &self.rules) {
            let contended = busy(self, r);
            let key = Key {
                link: link.clone(),
                workload,
                metric,
            };
            if !self.series.contains_key(&key) {
                self.by_link
                    .entry(link.clone())
                    .or_default()
                    .push(key.clone());
                self.links.entry(link.clone()).or_default();
            }
            let s = self.series.entry(key.clone()).or_default();
            let x = s
                .judged(&self.rules, metric)
                .then(|| s.excess(&self.rules, metric, v));
            items.push((key, v, r.at_unix, contended, x));
        }
        let counts = self.counting(&items);
        for (key, v, at, contended, x) in items {
            let s = self.series.get_mut(&key).expect("made above");
            if contended {
                s.newest = v;
                s.contended = true;
                self.contended.insert(key);
                continue;
            }
            self.contended.remove(&key);
            let counted = counts.contains(&key);
            if let Some(from) = s.observe(&self.rules, key.metric, v, at, x, counted) {
                let to = s.health;
                if matches!(to, Health::Suspect | Health::Degraded) {
                    self.unhealthy.insert(key.clone());
                } else {
                    self.unhealthy.remove(&key);
                }
                out.push(Change {
                    key,
                    from,
                    to,
                    at_unix: at,
                });
            }
        }
    }

    fn refresh_link(&mut self, link: &Link) {
        let worst = self
            .by_link
            .get(link)
            .into_iter()
            .flatten()
            .filter_map(|k| self.series.get(k))
            .map(|s| s.health)
            .max()
            .unwrap_or_default();
        self.links.insert(link.clone(), worst);
    }

    /// Each link's worst health over its series.
    pub fn links(&self) -> &HashMap<Link, Health> {
        &self.links
    }

    /// The links with a series suspect or degraded.
    pub fn bad_links(&self) -> BTreeSet<&Link> {
        self.unhealthy.iter().map(|k| &k.link).collect()
    }

    /// The series that are suspect or degraded.
    pub fn unhealthy(&self) -> impl Iterator<Item = (&Key, Health)> {
        self.unhealthy
            .iter()
            .filter_map(|k| self.series.get(k).map(|s| (k, s.health)))
    }

    /// Where one series stands.
    pub fn health(&self, key: &Key) -> Option<Health> {
        self.series.get(key).map(|s| s.health)
    }

    /// The series of `link`, as the watch state shows them.
    pub fn states_of(&self, link: &Link) -> Vec<LinkHealth> {
        let mut v: Vec<LinkHealth> = self
            .by_link
            .get(link)
            .into_iter()
            .flatten()
            .filter_map(|k| self.series.get(k).map(|s| self.state(k, s)))
            .collect();
        v.sort_by(|a, b| (&a.workload, &a.metric).cmp(&(&b.workload, &b.metric)));
        v
    }

    /// Every series that is suspect or degraded, or whose newest test
    /// was contended.
    pub fn not_healthy(&self) -> Vec<LinkHealth> {
        let keys: BTreeSet<&Key> = self.unhealthy.iter().chain(&self.contended).collect();
        keys.into_iter()
            .filter_map(|k| self.series.get(k).map(|s| self.state(k, s)))
            .collect()
    }

    /// How many series there are.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// Whether no series exists yet.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    fn state(&self, k: &Key, s: &Series) -> LinkHealth {
        let baseline = if s.base.is_empty() {
            0.0
        } else {
            stats(&s.base, k.metric).0
        };
        LinkHealth {
            a: k.link.0.host.clone(),
            a_nic: k.link.0.nic.clone(),
            b: k.link.1.host.clone(),
            b_nic: k.link.1.nic.clone(),
            workload: k.workload.clone(),
            metric: k.metric.name().to_string(),
            health: s.health,
            since_unix: s.since,
            baseline,
            newest: s.newest,
            worst: s.worst,
            contended: s.contended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(at: f64, c: &str, s: &str, min_us: f64) -> HistoryRow {
        HistoryRow {
            at_unix: at,
            workload: "rr".into(),
            client: c.into(),
            server: s.into(),
            client_nic: "eth0".into(),
            server_nic: "eth0".into(),
            min_us: Some(min_us),
            retransmits: Some(0),
            client_idle_pct: Some(80.0),
            server_idle_pct: Some(80.0),
            ..HistoryRow::default()
        }
    }

    /// Feeds `values` alternating directions; the health after each.
    fn run(d: &mut Detector, values: &[f64]) -> Vec<Health> {
        let key = Key {
            link: Link::of(&row(0.0, "a", "b", 1.0)),
            workload: "rr".into(),
            metric: Metric::MinUs,
        };
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let (c, s) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
                d.observe(&row(i as f64 * 5.0, c, s, v));
                d.health(&key).unwrap()
            })
            .collect()
    }

    use Health::{Degraded as D, Healthy as H, Learning as L, Suspect as S};

    /// The lab's quiet rr floors: 18-42 us.
    const QUIET: [f64; 6] = [20.0, 40.0, 18.0, 42.0, 25.0, 30.0];

    #[test]
    fn noise_under_the_absolute_floor_is_never_judged() {
        // Spikes of 9x and 12x in a row, under 500 us of change: noise.
        let mut d = Detector::new(Rules::default());
        let got = run(&mut d, &[&QUIET[..], &[360.0, 380.0, 22.0]].concat());
        assert_eq!(got, [L, L, L, L, H, H, H, H, H]);
    }

    #[test]
    fn a_step_is_degraded_on_its_second_test_and_clears_after_two_good_ones() {
        let mut d = Detector::new(Rules::default());
        // A 2 ms delay each way: 4 ms on the floor; the baseline stays
        // frozen (the quiet level) however long the fault lasts.
        let fault = [4020.0; 12];
        let got = run(
            &mut d,
            &[&QUIET[..], &fault, &[25.0, 4100.0, 24.0, 26.0, 30.0]].concat(),
        );
        let mut want = vec![L, L, L, L, H, H, S];
        want.extend([D; 11]);
        // One good test, the fault again (still degraded), two good ones.
        want.extend([D, D, D, H, H]);
        assert_eq!(got, want);
        let key = Key {
            link: Link::of(&row(0.0, "a", "b", 1.0)),
            workload: "rr".into(),
            metric: Metric::MinUs,
        };
        let states = d.states_of(&key.link);
        let st = states.iter().find(|s| s.workload == "rr").unwrap();
        assert!((st.baseline - 25.0).abs() < 6.0, "frozen baseline: {st:?}");
        // One test past the threshold then two good ones: back to
        // healthy, the spike kept out of the baseline; past, good, past:
        // two of three.
        let fresh = || Detector::new(Rules::default());
        let got = run(&mut fresh(), &[&QUIET[..], &[4000.0, 20.0, 21.0]].concat());
        assert_eq!(&got[6..], [S, S, H]);
        let got = run(
            &mut fresh(),
            &[&QUIET[..], &[4000.0, 20.0, 4000.0]].concat(),
        );
        assert_eq!(&got[6..], [S, S, D]);
    }

    #[test]
    fn a_busy_end_is_not_judged() {
        let mut d = Detector::new(Rules::default());
        run(&mut d, &QUIET);
        // The busy host's idle readings (0 or 25% as ticks fall) replace
        // its quiet ones first: judged until then.
        for i in 0..12 {
            let mut r = row(100.0 + i as f64, "a", "b", 20.0);
            r.client_idle_pct = Some(if i % 4 == 0 { 25.0 } else { 0.0 });
            r.server_idle_pct = Some(0.0);
            d.observe(&r);
        }
        assert!(d.busy.busy("a", d.rules()), "{:?}", d.busy.idle("a"));
        for i in 0..4 {
            let mut r = row(200.0 + i as f64, "a", "b", 5000.0);
            r.client_idle_pct = Some(0.0);
            r.server_idle_pct = Some(0.0);
            d.observe(&r);
        }
        assert_eq!(d.busy.all_busy(d.rules()), ["a", "b"]);
        assert!(d.unhealthy().next().is_none(), "not judged while busy");
        assert!(d.not_healthy().iter().all(|s| s.contended));
    }

    #[test]
    fn loss_and_goodput_are_judged_too() {
        let mut d = Detector::new(Rules::default());
        for i in 0..12 {
            let mut r = row(i as f64, "a", "b", 30.0);
            r.retransmits = Some(if i < 8 { 0 } else { 6 });
            d.observe(&r);
        }
        let loss = d.states_of(&Link::of(&row(0.0, "a", "b", 1.0)));
        let retx = loss.iter().find(|s| s.metric == "retransmits").unwrap();
        assert_eq!((retx.health, retx.worst), (D, 6.0), "{retx:?}");
        let mut d = Detector::new(Rules::default());
        let bw = |at: f64, bps: f64| HistoryRow {
            workload: "stream".into(),
            throughput_bps: bps,
            ..row(at, "a", "b", 0.0)
        };
        for (i, v) in [9e9, 9.4e9, 4e9, 3.9e9].iter().enumerate() {
            d.observe(&HistoryRow {
                min_us: None,
                ..bw(i as f64, *v)
            });
        }
        let st = d.states_of(&Link::of(&row(0.0, "a", "b", 1.0)));
        assert_eq!((st[0].metric.as_str(), st[0].health), ("throughput_bps", D));
    }

    /// One job of a pair: rr, crr and rr-64k floors.
    fn job(at: f64, rr: f64, crr: f64, rr64: f64) -> Vec<HistoryRow> {
        let r = row(at, "a", "b", rr);
        vec![
            r.clone(),
            HistoryRow {
                workload: "crr".into(),
                min_us: Some(crr),
                retransmits: None,
                ..r.clone()
            },
            HistoryRow {
                workload: "rr-64k".into(),
                min_us: Some(rr64),
                ..r
            },
        ]
    }

    /// Health of each of the link's floors after each job.
    fn jobs_run(d: &mut Detector, jobs: &[(f64, f64, f64)]) -> Vec<Vec<Health>> {
        jobs.iter()
            .enumerate()
            .map(|(i, (a, b, c))| {
                d.observe_job(&job(i as f64 * 5.0, *a, *b, *c));
                d.states_of(&Link::of(&row(0.0, "a", "b", 1.0)))
                    .iter()
                    .filter(|s| s.metric == "min_us")
                    .map(|s| s.health)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_floor_of_few_transactions_counts_only_with_the_anchor_or_far_past() {
        let quiet = [(10.0, 60.0, 30.0); 6];
        // crr 3 ms and rr-64k 2 ms twice (a busy host), rr steady: nothing.
        let mut d = Detector::new(Rules::default());
        let got = jobs_run(&mut d, &[&quiet[..], &[(11.0, 3000.0, 2000.0); 3]].concat());
        assert!(got.iter().flatten().all(|h| *h == H || *h == L), "{got:?}");
        // A 2 ms delay: every floor moves, the anchor's among them.
        let mut d = Detector::new(Rules::default());
        let got = jobs_run(
            &mut d,
            &[&quiet[..], &[(2010.0, 8060.0, 2030.0); 2]].concat(),
        );
        assert_eq!(got[7], [D, D, D], "crr, rr, rr-64k: {got:?}");
        // An MTU of 1500 in a fleet at 9000 behind 100 Mbit/s caps (the
        // quiet fleet test): rr-64k's floor alone, 2 -> 11.5 ms.
        let capped = [(60.0, 200.0, 1953.0); 6];
        let mut d = Detector::new(Rules::default());
        let got = jobs_run(
            &mut d,
            &[&capped[..], &[(61.0, 210.0, 11463.0); 2]].concat(),
        );
        assert_eq!(got[7], [H, H, D], "{got:?}");
        // A cap: rr-64k's floor alone, 40x past its threshold.
        let mut d = Detector::new(Rules::default());
        let got = jobs_run(&mut d, &[&quiet[..], &[(12.0, 61.0, 21000.0); 2]].concat());
        assert_eq!(got[7], [H, H, D], "{got:?}");
    }
}
