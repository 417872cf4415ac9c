//! Pass or fail: a path run's tests grouped into cases (path x workload x
//! node pair, every repeat together) and judged by the gates a pipeline
//! sets: a floor per path (`--min`, `--min-tps`), a previous run
//! (`--baseline FILE --tolerance PCT`), and the largest gap a pod path may
//! have under the host network (`--max-gap PCT`).
//!
//! Repeats make a gate steady: with two or more, a case is judged by the
//! 95% confidence interval of its mean (Student's t over the repeats), and
//! breaks a floor only when the whole interval lies below it, so one noisy
//! repeat does not flap a pipeline; with one repeat the value itself is
//! judged.

use crate::paths::PathKind;
use std::collections::BTreeMap;
use wirespeed_types::error::Invalid;
use wirespeed_types::fleet::LinkTest;
use wirespeed_types::paths::{PATHS_SCHEMA_VERSION, PathCase, PathsReport, mean_ci95};

/// A floor: for every path, or for one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor {
    /// The path it holds for (None: every path).
    pub path: Option<PathKind>,
    /// The least figure: bit/s for bulk workloads, transactions/s for
    /// request/response ones.
    pub value: f64,
}

/// The gates of a run.
#[derive(Debug, Clone, Default)]
pub struct Gates {
    /// Floors on bulk throughput, bit/s.
    pub min_bps: Vec<Floor>,
    /// Floors on request/response transactions/s.
    pub min_tps: Vec<Floor>,
    /// A previous run's cases, and where they came from.
    pub baseline: Option<(String, PathsReport)>,
    /// How far below its baseline a case may fall (and its p99 rise), %.
    pub tolerance_pct: f64,
    /// How far below the host network, on the same node pair, a pod
    /// path may fall, %.
    pub max_gap_pct: Option<f64>,
}

impl Floor {
    /// Parses `[PATH=]VALUE` with `value` parsing VALUE.
    pub fn parse(
        s: &str,
        value: impl Fn(&str) -> Result<f64, Invalid>,
    ) -> Result<Floor, crate::K8sError> {
        let (path, v) = match s.split_once('=') {
            Some((p, v)) => {
                let ps = PathKind::parse_list(p)?;
                let [p] = ps[..] else {
                    return Err(crate::K8sError::Invalid(format!(
                        "{s:?}: name one path before '=' (e.g. cross-node=5g)"
                    )));
                };
                (Some(p), v)
            }
            None => (None, s),
        };
        let value = value(v).map_err(|error| crate::K8sError::Value {
            what: format!("{s:?}"),
            error,
        })?;
        Ok(Floor { path, value })
    }

    fn holds_for(&self, path: &str) -> bool {
        self.path.is_none_or(|p| p.as_str() == path)
    }
}

/// (path, tests, entry name -> node) of one path's run.
pub type PathTests<'a> = (PathKind, &'a [LinkTest], &'a BTreeMap<String, String>);

/// Groups every path's tests into cases: one per path, workload, node
/// pair and NIC pair, with each repeat's figure.
pub fn cases(runs: &[PathTests<'_>], repeats: u32) -> Vec<PathCase> {
    let mut out: Vec<PathCase> = Vec::new();
    let mut p99s: Vec<Vec<f64>> = Vec::new();
    for (path, tests, nodes) in runs {
        for t in *tests {
            let node = |e: &str| nodes.get(e).cloned().unwrap_or_else(|| e.to_string());
            // Only claimed NICs are a dimension; a pod or node has one.
            let nic = |n: &str| {
                if *path == PathKind::Dra {
                    n.to_string()
                } else {
                    String::new()
                }
            };
            let mut c = PathCase {
                path: path.as_str().into(),
                workload: t.workload.clone(),
                client_node: node(&t.client),
                server_node: node(&t.server),
                client_nic: nic(&t.client_nic),
                server_nic: nic(&t.server_nic),
                repeats,
                ..PathCase::default()
            };
            let i = match out.iter().position(|x| x.key() == c.key()) {
                Some(i) => i,
                None => {
                    c.unit = unit(t).into();
                    out.push(c);
                    p99s.push(Vec::new());
                    out.len() - 1
                }
            };
            let c = &mut out[i];
            match &t.error {
                Some(e) => {
                    c.error.get_or_insert_with(|| e.clone());
                }
                None => {
                    c.values.push(if c.unit == "trans/s" {
                        t.transactions_per_s
                    } else {
                        t.throughput_bps
                    });
                    p99s[i].extend(t.p99_us);
                    if let Some(why) = t.contended() {
                        c.contended.get_or_insert_with(|| why.to_string());
                    }
                }
            }
        }
    }
    for (c, p) in out.iter_mut().zip(p99s) {
        c.median = median(&c.values);
        c.mean =
            (!c.values.is_empty()).then(|| c.values.iter().sum::<f64>() / c.values.len() as f64);
        // A rate is never negative: the interval stops at zero.
        c.ci95 = mean_ci95(&c.values).map(|(_, [lo, hi])| [lo.max(0.0), hi]);
        c.p99_us = median(&p);
    }
    out
}

fn unit(t: &LinkTest) -> &'static str {
    if t.transactions_per_s > 0.0 || t.result.as_ref().is_some_and(|r| r.latency.is_some()) {
        "trans/s"
    } else {
        "bit/s"
    }
}

use wirespeed_types::stats::median;

/// The figure a case is judged by against a floor: the top of its
/// interval with repeats, else its median.
fn optimistic(c: &PathCase) -> Option<f64> {
    c.ci95.map(|[_, hi]| hi).or(c.median)
}

/// The figure [`optimistic`] judges, shown with where it comes from.
fn judged(c: &PathCase, v: f64) -> String {
    let from = if c.ci95.is_some() {
        " (top of its 95% interval)"
    } else {
        ""
    };
    format!("{}{from}", show(v, &c.unit))
}

/// "12.3 Gbit/s" or "9,870 trans/s".
fn show(v: f64, unit: &str) -> String {
    if unit == "bit/s" {
        format!("{:.2} Gbit/s", v / 1e9)
    } else {
        format!("{v:.0} trans/s")
    }
}

/// Applies `g` to `r`'s cases: fills each case's breaches and `r.gates`.
pub fn judge(r: &mut PathsReport, g: &Gates) {
    r.schema_version = PATHS_SCHEMA_VERSION;
    for (floors, unit) in [(&g.min_bps, "bit/s"), (&g.min_tps, "trans/s")] {
        for f in floors {
            let on = f.path.map_or("every path".to_string(), |p| p.to_string());
            r.gates
                .push(format!("{on}: at least {}", show(f.value, unit)));
            for c in r
                .cases
                .iter_mut()
                .filter(|c| c.unit == unit && f.holds_for(&c.path))
            {
                if let Some(v) = optimistic(c).filter(|v| *v < f.value) {
                    let why = format!(
                        "{} is below the floor {}",
                        judged(c, v),
                        show(f.value, unit)
                    );
                    c.breaches.push(why);
                }
            }
        }
    }
    if let Some((from, base)) = &g.baseline {
        baseline(r, from, base, g.tolerance_pct);
    }
    if let Some(gap) = g.max_gap_pct {
        host_gap(r, gap);
    }
}

/// Each case against the same case of `base`: its figure may fall, and
/// its p99 rise, by at most `tol` %.
fn baseline(r: &mut PathsReport, from: &str, base: &PathsReport, tol: f64) {
    let old: BTreeMap<_, &PathCase> = base.cases.iter().map(|c| (c.key(), c)).collect();
    let mut compared = 0;
    for c in r.cases.iter_mut() {
        let Some(b) = old.get(&c.key()) else { continue };
        compared += 1;
        if let (Some(v), Some(bm)) = (optimistic(c), b.median) {
            let floor = bm * (1.0 - tol / 100.0);
            if v < floor {
                c.breaches.push(format!(
                    "{} is {:.1}% below the baseline's {} (tolerance {tol}%)",
                    judged(c, v),
                    (1.0 - v / bm) * 100.0,
                    show(bm, &c.unit)
                ));
            }
        }
        if let (Some(p), Some(bp)) = (c.p99_us, b.p99_us)
            && p > bp * (1.0 + tol / 100.0)
        {
            c.breaches.push(format!(
                "p99 {p:.0} us is {:.1}% above the baseline's {bp:.0} us (tolerance {tol}%)",
                (p / bp - 1.0) * 100.0
            ));
        }
    }
    r.gates.push(format!(
        "baseline {from}: within {tol}% ({compared} of {} cases have a baseline case)",
        r.cases.len()
    ));
}

/// Each pod path across nodes against the host network on the same node
/// pair and workload: at most `gap` % below it.
fn host_gap(r: &mut PathsReport, gap: f64) {
    let host: BTreeMap<(String, String, String), f64> = r
        .cases
        .iter()
        .filter(|c| c.path == PathKind::Host.as_str())
        .filter_map(|c| {
            Some((
                (
                    c.workload.clone(),
                    c.client_node.clone(),
                    c.server_node.clone(),
                ),
                c.median?,
            ))
        })
        .collect();
    // Pod paths under a policy load (`--policy-load`) are compared with
    // themselves unloaded, not with the host network.
    for c in r
        .cases
        .iter_mut()
        .filter(|c| c.path != PathKind::Host.as_str() && c.policy_load.unwrap_or(0) == 0)
    {
        let k = (
            c.workload.clone(),
            c.client_node.clone(),
            c.server_node.clone(),
        );
        let (Some(h), Some(v)) = (host.get(&k), optimistic(c)) else {
            continue;
        };
        if v < h * (1.0 - gap / 100.0) {
            c.breaches.push(format!(
                "{} is {:.1}% below the host network's {} (max gap {gap}%)",
                judged(c, v),
                (1.0 - v / h) * 100.0,
                show(*h, &c.unit)
            ));
        }
    }
    r.gates.push(format!(
        "pod paths at most {gap}% below the host network on the same nodes"
    ));
}

/// The run's cases, judged by `g`.
pub fn report(out: &crate::RunOutcome, g: &Gates, repeats: u32) -> PathsReport {
    // A path's run under each policy load gives cases of their own.
    let mut all = Vec::new();
    for r in &out.runs {
        let mut cs = cases(&[(r.path, &r.results.tests[..], &r.nodes)], repeats);
        for c in &mut cs {
            c.policy_load = r.policy_load;
        }
        all.extend(cs);
    }
    let mut report = PathsReport {
        cases: all,
        unplanned: out.unplanned.clone(),
        left_out: out
            .selection
            .left_out
            .iter()
            .map(|(n, why)| format!("node {n}: {why}"))
            .chain(out.left_out.iter().cloned())
            .collect(),
        ..PathsReport::default()
    };
    judge(&mut report, g);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(w: &str, c: &str, s: &str, bps: f64) -> LinkTest {
        LinkTest {
            workload: w.into(),
            client: c.into(),
            server: s.into(),
            throughput_bps: bps,
            ..LinkTest::default()
        }
    }

    fn report(runs: &[(PathKind, Vec<LinkTest>)], repeats: u32) -> PathsReport {
        let names: BTreeMap<String, String> = [("a", "n0"), ("b", "n1"), ("b_svc", "n1")]
            .map(|(e, n)| (e.into(), n.into()))
            .into();
        let rs: Vec<PathTests<'_>> = runs.iter().map(|(p, ts)| (*p, &ts[..], &names)).collect();
        PathsReport {
            cases: cases(&rs, repeats),
            ..PathsReport::default()
        }
    }

    #[test]
    fn repeats_group_into_one_case_per_pair_and_path() {
        let r = report(
            &[
                (
                    PathKind::CrossNode,
                    vec![t("stream", "a", "b", 9e9), t("stream", "a", "b", 11e9)],
                ),
                (
                    PathKind::ServiceCrossNode,
                    vec![
                        t("stream", "a", "b_svc", 8e9),
                        t("stream", "a", "b_svc", 8e9),
                    ],
                ),
            ],
            2,
        );
        assert_eq!(r.cases.len(), 2);
        assert_eq!(r.cases[0].values, vec![9e9, 11e9]);
        assert_eq!(r.cases[1].server_node, "n1");
        assert_eq!(r.cases[0].median, Some(10e9));
        assert!(r.cases[0].ci95.is_some());
        assert!(r.passed());
    }

    #[test]
    fn a_floor_breaks_only_when_the_whole_interval_is_below_it() {
        let noisy = vec![t("stream", "a", "b", 4e9), t("stream", "a", "b", 8e9)];
        let low = vec![t("stream", "a", "b", 4.0e9), t("stream", "a", "b", 4.1e9)];
        let g = Gates {
            min_bps: vec![Floor {
                path: Some(PathKind::CrossNode),
                value: 5e9,
            }],
            ..Gates::default()
        };
        let mut r = report(&[(PathKind::CrossNode, noisy)], 2);
        judge(&mut r, &g);
        assert!(r.passed(), "{:?}", r.cases[0]);
        let mut r = report(&[(PathKind::CrossNode, low)], 2);
        judge(&mut r, &g);
        assert!(!r.passed());
        // The case names its pair; its breach says only what broke.
        assert!(r.cases[0].label().contains("n0 -> n1"));
        assert!(
            !r.cases[0].breaches[0].contains("n0 -> n1"),
            "{:?}",
            r.cases[0].breaches
        );
    }

    #[test]
    fn baseline_and_host_gap_name_the_pair() {
        let base = report(
            &[(PathKind::CrossNode, vec![t("stream", "a", "b", 10e9)])],
            1,
        );
        let g = Gates {
            baseline: Some(("old.json".into(), base)),
            tolerance_pct: 10.0,
            max_gap_pct: Some(20.0),
            ..Gates::default()
        };
        let mut r = report(
            &[
                (PathKind::Host, vec![t("stream", "a", "b", 20e9)]),
                (PathKind::CrossNode, vec![t("stream", "a", "b", 8e9)]),
            ],
            1,
        );
        judge(&mut r, &g);
        let b = &r.cases[1].breaches;
        assert_eq!(b.len(), 2, "{b:?}");
        assert!(b[0].contains("20.0% below the baseline"), "{b:?}");
        assert!(b[1].contains("60.0% below the host"), "{b:?}");
        assert!(r.cases[0].breaches.is_empty());
    }

    #[test]
    fn an_unmeasured_repeat_fails_the_case() {
        let mut bad = t("stream", "a", "b", 0.0);
        bad.error = Some("agent b is down".into());
        let r = report(
            &[(PathKind::CrossNode, vec![t("stream", "a", "b", 9e9), bad])],
            2,
        );
        assert!(!r.passed());
        assert_eq!(r.cases[0].error.as_deref(), Some("agent b is down"));
    }

    #[test]
    fn floors_parse_with_an_optional_path() {
        let rate = |s: &str| s.parse::<f64>().map_err(|e| Invalid(e.to_string()));
        assert_eq!(Floor::parse("5", rate).unwrap().path, None);
        assert_eq!(
            Floor::parse("host=5", rate).unwrap().path,
            Some(PathKind::Host)
        );
        assert!(Floor::parse("service=5", rate).is_err());
        assert!(Floor::parse("host=x", rate).is_err());
    }
}
