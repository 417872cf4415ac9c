//! Drift: a change point on a link against its own history, a host named
//! when most of its links moved, and the facts that changed with it.
//!
//! Pure functions over history rows; the watcher ([`crate::watch`]) feeds
//! them and stores the events.
//!
//! - A link (two host/NIC ends and a workload, either direction) has
//!   moved when its last `confirm` tests all lie beyond `ratio` times the
//!   median of the `baseline` tests before them, and beyond the
//!   baseline's whole range (its noise band): latency up or goodput down.
//!   (A link that got better is not drift; its new level becomes the
//!   baseline.)
//! - A host is named when at least two of its pairs, and at least half
//!   of the pairs it is probed in, moved the same way. A moved pair whose
//!   hosts are not named becomes a pair event once it has stayed moved
//!   for a while after it was found (the caller's `settled_before`: time
//!   for its hosts' other pairs to show, and more tests that agree).

use std::collections::BTreeMap;
use wirespeed_types::fleet::{HistoryRow, HostFacts};

/// When a link counts as moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// How far from the baseline's median (a factor, either way).
    pub ratio: f64,
    /// Tests in a row past the change that must agree.
    pub confirm: usize,
    /// Most tests before them that make the baseline.
    pub baseline: usize,
    /// Fewest baseline tests to judge at all.
    pub min_baseline: usize,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            ratio: 1.5,
            confirm: 2,
            baseline: 10,
            min_baseline: 5,
        }
    }
}

/// A link whose figure moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The link: `a/eth0 - b/eth0` with the ends sorted.
    pub link: String,
    /// Its hosts, sorted.
    pub pair: (String, String),
    /// The workload.
    pub workload: String,
    /// `min_us` or `throughput_bps`.
    pub metric: &'static str,
    /// The baseline's median.
    pub before: f64,
    /// The confirming tests' median.
    pub after: f64,
    /// The first confirming test, Unix seconds.
    pub since_unix: f64,
    /// The last baseline test, Unix seconds (facts then are "before").
    pub baseline_end_unix: f64,
    /// Per host of the pair, how idle its CPUs were (% of all of them):
    /// the baseline's median and the confirming tests' median, where both
    /// are known.
    pub idle: BTreeMap<String, (f64, f64)>,
}

impl Change {
    /// +1 when the link got worse (slower or later), -1 when better.
    pub fn sign(&self) -> i8 {
        let worse = if self.metric == "throughput_bps" {
            self.after < self.before
        } else {
            self.after > self.before
        };
        if worse { 1 } else { -1 }
    }
}

/// The series a row belongs to: its link (ends sorted) and workload.
pub fn series_key(r: &HistoryRow) -> (String, String) {
    let end = |h: &str, n: &str| {
        if n.is_empty() {
            h.to_string()
        } else {
            format!("{h}/{n}")
        }
    };
    let (a, b) = (end(&r.client, &r.client_nic), end(&r.server, &r.server_nic));
    let link = if a <= b {
        format!("{a} - {b}")
    } else {
        format!("{b} - {a}")
    };
    (link, r.workload.clone())
}

/// The median of `v` (0 when empty).
pub(crate) fn median(v: &[f64]) -> f64 {
    wirespeed_types::stats::median(v).unwrap_or(0.0)
}

/// The figure a row is judged by: the latency floor (the fastest
/// transaction) where it has one, goodput otherwise. The floor, not the
/// median: a busy CPU on a shared host delays some transactions, rarely
/// the fastest, while a change of the path (MTU, a cap, a route, an
/// offload) moves them all.
fn figure(r: &HistoryRow) -> Option<(&'static str, f64)> {
    match r.min_us {
        Some(p) if p > 0.0 => Some(("min_us", p)),
        _ if r.throughput_bps > 0.0 => Some(("throughput_bps", r.throughput_bps)),
        _ => None,
    }
}

/// Whether one series (rows of one link and workload, oldest first;
/// failed tests are skipped) has moved at its end.
pub fn change(rows: &[HistoryRow], rules: &Rules) -> Option<Change> {
    let ok: Vec<Judged> = rows
        .iter()
        .filter(|r| r.error.is_none())
        .filter_map(|r| figure(r).map(|(m, v)| (r, m, v)))
        .collect();
    if ok.len() < rules.confirm + rules.min_baseline || rules.confirm == 0 {
        return None;
    }
    let (base, recent) = ok.split_at(ok.len() - rules.confirm);
    let base = &base[base.len().saturating_sub(rules.baseline)..];
    let metric = recent[0].1;
    if base.iter().chain(recent).any(|x| x.1 != metric) {
        return None;
    }
    let bv: Vec<f64> = base.iter().map(|x| x.2).collect();
    let rv: Vec<f64> = recent.iter().map(|x| x.2).collect();
    let (m, lo, hi) = (
        median(&bv),
        bv.iter().cloned().fold(f64::INFINITY, f64::min),
        bv.iter().cloned().fold(0.0, f64::max),
    );
    let up = rv.iter().all(|&v| v > m * rules.ratio && v > hi);
    let down = rv.iter().all(|&v| v * rules.ratio < m && v < lo);
    let worse = if metric == "throughput_bps" { down } else { up };
    if !worse {
        return None;
    }
    let idle = idle_medians(base, recent);
    let (link, workload) = series_key(recent[0].0);
    let r0 = recent[0].0;
    let pair = if r0.client <= r0.server {
        (r0.client.clone(), r0.server.clone())
    } else {
        (r0.server.clone(), r0.client.clone())
    };
    Some(Change {
        link,
        pair,
        workload,
        metric,
        before: m,
        after: median(&rv),
        since_unix: r0.at_unix,
        baseline_end_unix: base.last().map(|x| x.0.at_unix).unwrap_or(r0.at_unix),
        idle,
    })
}

/// A judged test: the row, its metric and its figure.
type Judged<'a> = (&'a HistoryRow, &'static str, f64);

/// Per host of the series, the median of its CPUs' idle % over the
/// baseline and over the confirming tests, where both have any.
fn idle_medians(base: &[Judged], recent: &[Judged]) -> BTreeMap<String, (f64, f64)> {
    let of = |rows: &[Judged], h: &str| -> Vec<f64> {
        rows.iter()
            .filter_map(|(r, _, _)| {
                if r.client == h {
                    r.client_idle_pct
                } else if r.server == h {
                    r.server_idle_pct
                } else {
                    None
                }
            })
            .collect()
    };
    let r0 = recent[0].0;
    let mut out = BTreeMap::new();
    for h in [&r0.client, &r0.server] {
        let (b, a) = (of(base, h), of(recent, h));
        if !b.is_empty() && !a.is_empty() {
            out.insert(h.clone(), (median(&b), median(&a)));
        }
    }
    out
}

/// Idle % the confirming tests must fall to, and by how much, for an
/// event to name a host's CPUs.
const IDLE_LOW: f64 = 10.0;
const IDLE_DROP: f64 = 20.0;

/// `f CPUs idle: 62% -> 2% (medians over the tests)` when `host`'s CPUs
/// had next to no idle time during the moved tests and had some during
/// their baseline: a latency floor doubles when the two ends of a
/// transaction must wait for a CPU, with no setting changed.
pub fn idle_lost(host: &str, cs: &[&Change]) -> Option<String> {
    let (b, a): (Vec<f64>, Vec<f64>) = cs.iter().filter_map(|c| c.idle.get(host)).copied().unzip();
    if a.is_empty() {
        return None;
    }
    let (b, a) = (median(&b), median(&a));
    (a <= IDLE_LOW && b - a >= IDLE_DROP)
        .then(|| format!("{host} CPUs idle: {b:.0}% -> {a:.0}% (medians over the tests)"))
}

/// Who an event is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    /// Most of a host's pairs moved.
    Host(String),
    /// One pair moved, neither host did.
    Pair(String, String),
}

impl Subject {
    /// `host`/`pair` and `c` or `a,b`.
    pub fn scope_and_name(&self) -> (&'static str, String) {
        match self {
            Subject::Host(h) => ("host", h.clone()),
            Subject::Pair(a, b) => ("pair", format!("{a},{b}")),
        }
    }
}

/// The subjects of the current changes (each with when it was first
/// found): hosts most of whose probed pairs moved the same way
/// (`pairs_of(h)`: pairs host h is probed in), then the moved pairs of no
/// named host found before `settled_before` (Unix seconds). Each with its
/// changes.
pub fn attribute(
    changes: &[(Change, f64)],
    pairs_of: impl Fn(&str) -> usize,
    settled_before: f64,
) -> Vec<(Subject, Vec<&Change>)> {
    let mut by_host: BTreeMap<(&str, i8, &str), Vec<&Change>> = BTreeMap::new();
    for (c, _) in changes {
        for h in [c.pair.0.as_str(), c.pair.1.as_str()] {
            by_host
                .entry((h, c.sign(), &c.workload))
                .or_default()
                .push(c);
        }
    }
    let mut out = Vec::new();
    let mut named: Vec<&str> = Vec::new();
    for ((h, _, _), cs) in &by_host {
        let mut pairs: Vec<&(String, String)> = cs.iter().map(|c| &c.pair).collect();
        pairs.sort();
        pairs.dedup();
        let need = pairs_of(h).div_ceil(2).max(2);
        if pairs.len() >= need {
            named.push(h);
            out.push((Subject::Host(h.to_string()), cs.clone()));
        }
    }
    let mut by_pair: BTreeMap<&(String, String), Vec<&Change>> = BTreeMap::new();
    for (c, found) in changes {
        let free = !named.contains(&c.pair.0.as_str()) && !named.contains(&c.pair.1.as_str());
        if free && *found < settled_before {
            by_pair.entry(&c.pair).or_default().push(c);
        }
    }
    for (p, cs) in by_pair {
        out.push((Subject::Pair(p.0.clone(), p.1.clone()), cs));
    }
    out
}

/// The facts of `host` that differ between `before` and `after`, one
/// line each: `c kernel: 6.1 -> 6.12`, `c net.core.rmem_max: ...`,
/// `c/eth0 mtu: 9000 -> 1500`.
pub fn facts_changed(host: &str, before: &HostFacts, after: &HostFacts) -> Vec<String> {
    let mut out = Vec::new();
    if before.kernel != after.kernel {
        out.push(format!(
            "{host} kernel: {} -> {}",
            before.kernel, after.kernel
        ));
    }
    diff_map(host, &before.settings, &after.settings, &mut out);
    for n in &after.nics {
        let empty = BTreeMap::new();
        let old = before
            .nics
            .iter()
            .find(|o| o.name == n.name)
            .map(|o| &o.settings)
            .unwrap_or(&empty);
        diff_map(&format!("{host}/{}", n.name), old, &n.settings, &mut out);
    }
    out
}

fn diff_map(
    who: &str,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
    out: &mut Vec<String>,
) {
    let none = String::from("(none)");
    for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
        let (x, y) = (a.get(k).unwrap_or(&none), b.get(k).unwrap_or(&none));
        if x != y {
            out.push(format!("{who} {k}: {x} -> {y}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_types::fleet::NicFacts;

    fn row(at: f64, c: &str, s: &str, p50: f64) -> HistoryRow {
        HistoryRow {
            at_unix: at,
            workload: "rr-64k".into(),
            client: c.into(),
            server: s.into(),
            client_nic: "eth0".into(),
            server_nic: "eth0".into(),
            min_us: Some(p50),
            ..HistoryRow::default()
        }
    }

    fn series(a: &str, b: &str, values: &[f64]) -> Vec<HistoryRow> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let (c, s) = if i % 2 == 0 { (a, b) } else { (b, a) };
                row(100.0 + 10.0 * i as f64, c, s, v)
            })
            .collect()
    }

    #[test]
    fn a_series_moves_only_when_the_confirming_tests_agree_past_the_noise() {
        let r = Rules::default();
        let steady = series("a", "c", &[100.0, 110.0, 95.0, 105.0, 101.0, 102.0, 108.0]);
        assert_eq!(change(&steady, &r), None);
        let one = series("a", "c", &[100.0, 110.0, 95.0, 105.0, 101.0, 102.0, 190.0]);
        assert_eq!(change(&one, &r), None, "one test is not a change");
        let moved = series("a", "c", &[100.0, 110.0, 95.0, 105.0, 101.0, 180.0, 190.0]);
        let c = change(&moved, &r).expect("moved");
        assert_eq!(
            (c.metric, c.sign(), c.before, c.after),
            ("min_us", 1, 101.0, 185.0)
        );
        assert_eq!((c.link.as_str(), c.since_unix), ("a/eth0 - c/eth0", 150.0));
        let better = series("a", "c", &[100.0, 110.0, 95.0, 105.0, 101.0, 50.0, 40.0]);
        assert_eq!(change(&better, &r), None, "better is not drift");
        let noisy = series("a", "c", &[100.0, 300.0, 95.0, 105.0, 101.0, 180.0, 190.0]);
        assert_eq!(change(&noisy, &r), None, "inside the baseline's range");
        let short = series("a", "c", &[100.0, 95.0, 105.0, 180.0, 190.0]);
        assert_eq!(change(&short, &r), None, "too little baseline");
    }

    #[test]
    fn a_host_is_named_when_most_of_its_pairs_moved_and_its_peers_are_not() {
        let r = Rules::default();
        let mut changes = Vec::new();
        for peer in ["a", "b", "d", "e"] {
            let s = series(peer, "c", &[100.0, 105.0, 98.0, 102.0, 101.0, 190.0, 200.0]);
            changes.push((change(&s, &r).unwrap(), 200.0));
        }
        let got = attribute(&changes, |_| 5, 0.0);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, Subject::Host("c".into()));
        assert_eq!(got[0].1.len(), 4);
        // One pair alone: a pair event, once settled.
        let one = &changes[..1];
        assert!(attribute(one, |_| 5, 200.0).is_empty(), "not settled yet");
        let later = attribute(one, |_| 5, 210.0);
        assert_eq!(later[0].0, Subject::Pair("a".into(), "c".into()));
    }

    #[test]
    fn a_host_whose_cpus_had_no_idle_time_is_named_so() {
        let r = Rules::default();
        // f's CPUs mostly idle over the baseline, never during the two
        // slow tests; a's the same throughout.
        let values = [16.0, 17.0, 16.0, 16.5, 16.0, 35.0, 36.0];
        let mut rows = series("a", "f", &values);
        let n = rows.len();
        for (i, x) in rows.iter_mut().enumerate() {
            let f_idle = if i + 2 >= n { 2.0 } else { 62.0 };
            let (c, s) = if x.client == "f" {
                (f_idle, 70.0)
            } else {
                (70.0, f_idle)
            };
            x.client_idle_pct = Some(c);
            x.server_idle_pct = Some(s);
        }
        let c = change(&rows, &r).expect("moved");
        assert_eq!((c.idle["f"], c.idle["a"]), ((62.0, 2.0), (70.0, 70.0)));
        assert_eq!(
            idle_lost("f", &[&c]).as_deref(),
            Some("f CPUs idle: 62% -> 2% (medians over the tests)")
        );
        assert_eq!(idle_lost("a", &[&c]), None, "a kept its idle time");
        // Never idle to begin with (the test itself fills them), or some
        // idle time left: not named.
        let mut full = c.clone();
        full.idle.insert("f".into(), (8.0, 2.0));
        assert_eq!(idle_lost("f", &[&full]), None);
        let mut some = c.clone();
        some.idle.insert("f".into(), (62.0, 30.0));
        assert_eq!(idle_lost("f", &[&some]), None);
        // Rows without the figure (older files): nothing to say.
        let bare = change(&series("a", "f", &values), &r).unwrap();
        assert!(bare.idle.is_empty());
        assert_eq!(idle_lost("f", &[&bare]), None);
    }

    #[test]
    fn the_facts_that_changed_are_named() {
        let nic = |mtu: &str| NicFacts {
            name: "eth0".into(),
            device: Some("veth1".into()),
            settings: [("mtu".to_string(), mtu.to_string())].into(),
        };
        let before = HostFacts {
            kernel: "6.12".into(),
            nics: vec![nic("9000")],
            ..HostFacts::default()
        };
        let mut after = before.clone();
        after.nics = vec![nic("1500")];
        after
            .settings
            .insert("net.core.rmem_max".into(), "212992".into());
        assert_eq!(
            facts_changed("c", &before, &after),
            vec![
                "c net.core.rmem_max: (none) -> 212992".to_string(),
                "c/eth0 mtu: 9000 -> 1500".to_string()
            ]
        );
        assert!(facts_changed("c", &before, &before).is_empty());
    }
}
