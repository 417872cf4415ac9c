//! The paths of a `k8s run` side by side: per workload, each path's
//! medians (throughput or transactions/s, latency, CPU per Gbit/s or per
//! transaction on each side, and with `--breakdown` where the round trip
//! is spent) and each later path's gap to the first (the host network,
//! when it ran).

use crate::run::PathRun;
use serde::Serialize;
use wirespeed_types::breakdown::SEGMENTS;
use wirespeed_types::fleet::LinkTest;
use wirespeed_types::stats::median;

/// One mode's figures, medians over its successful tests of a workload.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ModeFigures {
    /// The path.
    pub path: String,
    /// Tests that succeeded.
    pub tests: usize,
    /// Median throughput, bit/s.
    pub throughput_bps: f64,
    /// Median of the tests' p50 latency, µs (rr/crr).
    pub p50_us: Option<f64>,
    /// Median of the tests' p99 latency, µs (rr/crr).
    pub p99_us: Option<f64>,
    /// Client CPU, % of one core per Gbit/s (bulk workloads).
    pub client_cpu_per_gbit: Option<f64>,
    /// Server CPU, % of one core per Gbit/s (bulk workloads).
    pub server_cpu_per_gbit: Option<f64>,
    /// Median transactions per second (rr, crr, udp-rr).
    pub transactions_per_s: Option<f64>,
    /// Client CPU per transaction, µs (rr, crr, udp-rr).
    pub client_cpu_us_per_trans: Option<f64>,
    /// Server CPU per transaction, µs (rr, crr, udp-rr).
    pub server_cpu_us_per_trans: Option<f64>,
    /// Where the round trip is spent (`--breakdown`), per segment in
    /// [`SEGMENTS`] order: empty without a breakdown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<SegmentFigures>,
}

/// One segment of the round trip on one path: medians over the tests of
/// its mean in the transactions at the round trip's p50 and p99 (the
/// parts of a percentile add up to its round trip).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SegmentFigures {
    /// The segment's key in [`SEGMENTS`].
    pub segment: String,
    /// At the round trip's median, µs.
    pub p50_us: f64,
    /// At the round trip's 99th percentile, µs.
    pub p99_us: f64,
}

/// Each segment's figures over the tests' breakdowns `ok`.
fn segment_figures(ok: &[&LinkTest]) -> Vec<SegmentFigures> {
    let bs: Vec<_> = ok
        .iter()
        .filter_map(|t| t.result.as_ref()?.breakdown.as_ref())
        .collect();
    SEGMENTS
        .iter()
        .filter_map(|(key, _)| {
            let at = |pct| {
                median(
                    &bs.iter()
                        .filter_map(|b| b.part_at(pct, key))
                        .collect::<Vec<_>>(),
                )
            };
            Some(SegmentFigures {
                segment: key.to_string(),
                p50_us: at(50.0)?,
                p99_us: at(99.0)?,
            })
        })
        .collect()
}

/// Paths side by side for one workload; gaps are against the first path
/// (the host network, when it ran).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Comparison {
    /// The workload label.
    pub workload: String,
    /// One entry per path, in run order.
    pub modes: Vec<ModeFigures>,
}

/// The comparison of every workload across `runs`.
pub fn compare(runs: &[PathRun]) -> Vec<Comparison> {
    let mut workloads: Vec<String> = Vec::new();
    for r in runs {
        for t in &r.results.tests {
            if !workloads.contains(&t.workload) {
                workloads.push(t.workload.clone());
            }
        }
    }
    workloads
        .into_iter()
        .map(|w| Comparison {
            modes: runs
                .iter()
                .map(|r| {
                    let ok: Vec<&LinkTest> = r
                        .results
                        .tests
                        .iter()
                        .filter(|t| t.workload == w && t.error.is_none())
                        .collect();
                    mode_figures(r.path.as_str(), &ok)
                })
                .collect(),
            workload: w,
        })
        .collect()
}

/// One mode's medians over its successful tests `ok` of one workload.
/// Request/response workloads (transactions counted) get transactions/s
/// and CPU per transaction; bulk ones throughput and CPU per Gbit/s.
fn mode_figures(path: &str, ok: &[&LinkTest]) -> ModeFigures {
    type Cpu = fn(&wirespeed_types::TestResult) -> f64;
    let local: Cpu = |x| x.local_cpu.total_pct;
    let remote: Cpu = |x| x.remote_cpu.total_pct;
    let rr = ok.iter().any(|t| t.transactions_per_s > 0.0);
    // % of one core divided by a rate: per Gbit/s, or (x 1e4) µs per
    // transaction.
    let per = |cpu: Cpu, rate: fn(&LinkTest) -> f64, scale: f64| {
        median(
            &ok.iter()
                .filter(|t| rate(t) > 0.0)
                .filter_map(|t| t.result.as_ref().map(|x| cpu(x) * scale / rate(t)))
                .collect::<Vec<_>>(),
        )
    };
    let gbit: fn(&LinkTest) -> f64 = |t| t.throughput_bps / 1e9;
    let tps: fn(&LinkTest) -> f64 = |t| t.transactions_per_s;
    ModeFigures {
        path: path.to_string(),
        tests: ok.len(),
        throughput_bps: median(&ok.iter().map(|t| t.throughput_bps).collect::<Vec<_>>())
            .unwrap_or(0.0),
        p50_us: median(&ok.iter().filter_map(|t| t.p50_us).collect::<Vec<_>>()),
        p99_us: median(&ok.iter().filter_map(|t| t.p99_us).collect::<Vec<_>>()),
        client_cpu_per_gbit: (!rr).then(|| per(local, gbit, 1.0)).flatten(),
        server_cpu_per_gbit: (!rr).then(|| per(remote, gbit, 1.0)).flatten(),
        transactions_per_s: rr
            .then(|| median(&ok.iter().map(|t| t.transactions_per_s).collect::<Vec<_>>()))
            .flatten(),
        client_cpu_us_per_trans: rr.then(|| per(local, tps, 1e4)).flatten(),
        server_cpu_us_per_trans: rr.then(|| per(remote, tps, 1e4)).flatten(),
        segments: segment_figures(ok),
    }
}

fn gap(v: f64, base: f64) -> String {
    if base.abs() < f64::EPSILON {
        return "-".into();
    }
    format!("{:+.1}%", (v / base - 1.0) * 100.0)
}

/// One row of the table: a value per mode, then each later mode's gap
/// to the first; nothing when no mode has a value.
fn row(name: &str, v: &[Option<f64>]) -> String {
    if v.iter().all(Option::is_none) {
        return String::new();
    }
    let mut s = format!("  {name:<26}");
    for x in v {
        s += &format!("{:>19}", x.map_or("-".into(), |x| format!("{x:.3}")));
    }
    for x in v.iter().skip(1) {
        let g = match (x, v[0]) {
            (Some(x), Some(b)) => gap(*x, b),
            _ => "-".into(),
        };
        s += &format!("{g:>26}");
    }
    s + "\n"
}

/// The comparison as a text table: each figure per mode, then the gap of
/// each later mode against the first (host, when it ran, is the baseline).
pub fn render_comparison(cs: &[Comparison]) -> String {
    let mut s = String::new();
    for c in cs {
        let Some(base) = c.modes.first() else {
            continue;
        };
        s += &format!("workload {}\n", c.workload);
        s += &format!("  {:<26}", "");
        for m in &c.modes {
            s += &format!("{:>19}", m.path);
        }
        for m in c.modes.iter().skip(1) {
            s += &format!("{:>26}", format!("{} vs {}", m.path, base.path));
        }
        s += "\n";
        type Pick = fn(&ModeFigures) -> Option<f64>;
        let rows: [(&str, Pick, f64); 8] = [
            (
                "throughput (Gbit/s)",
                |m| m.transactions_per_s.is_none().then_some(m.throughput_bps),
                1e-9,
            ),
            ("transactions/s", |m| m.transactions_per_s, 1.0),
            ("latency p50 (us)", |m| m.p50_us, 1.0),
            ("latency p99 (us)", |m| m.p99_us, 1.0),
            ("client CPU %/Gbit/s", |m| m.client_cpu_per_gbit, 1.0),
            ("server CPU %/Gbit/s", |m| m.server_cpu_per_gbit, 1.0),
            ("client CPU us/trans", |m| m.client_cpu_us_per_trans, 1.0),
            ("server CPU us/trans", |m| m.server_cpu_us_per_trans, 1.0),
        ];
        for (name, pick, scale) in rows {
            let v: Vec<Option<f64>> = c.modes.iter().map(|m| pick(m).map(|x| x * scale)).collect();
            s += &row(name, &v);
        }
        for (key, _) in SEGMENTS {
            let seg = |m: &ModeFigures| m.segments.iter().find(|g| g.segment == key).cloned();
            type SegPick = fn(SegmentFigures) -> f64;
            let picks: [(&str, SegPick); 2] = [("p50", |g| g.p50_us), ("p99", |g| g.p99_us)];
            for (pct, pick) in picks {
                let v: Vec<Option<f64>> = c.modes.iter().map(|m| seg(m).map(pick)).collect();
                s += &row(&format!("{pct} {key} (us)"), &v);
            }
        }
        s += &format!("  {:<26}", "tests");
        for m in &c.modes {
            s += &format!("{:>19}", m.tests);
        }
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::PathKind;
    use std::collections::BTreeMap;
    use wirespeed_fleet::FleetResults;

    fn run(n: PathKind, bps: &[f64]) -> PathRun {
        PathRun {
            path: n,
            network: n.network(),
            nodes: BTreeMap::new(),
            agents: vec![],
            results: FleetResults {
                tests: bps
                    .iter()
                    .map(|b| LinkTest {
                        workload: "stream".into(),
                        throughput_bps: *b,
                        ..LinkTest::default()
                    })
                    .collect(),
                ..FleetResults::default()
            },
        }
    }

    #[test]
    fn comparison_takes_medians_and_gaps_against_the_first_mode() {
        let cs = compare(&[
            run(PathKind::Host, &[10e9, 9e9, 11e9]),
            run(PathKind::CrossNode, &[7e9, 8e9, 6e9]),
        ]);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].modes[0].throughput_bps, 10e9);
        assert_eq!(cs[0].modes[1].throughput_bps, 7e9);
        let t = render_comparison(&cs);
        assert!(t.contains("-30.0%"), "{t}");
        assert!(!t.contains("p50"), "no latency rows without rr: {t}");
    }

    #[test]
    fn request_response_rows_are_transactions_and_cpu_per_transaction() {
        let rr = |n: PathKind, tps: f64, cpu: f64| {
            let mut result = wirespeed_types::TestResult::default();
            result.local_cpu.total_pct = cpu;
            result.remote_cpu.total_pct = cpu;
            PathRun {
                path: n,
                network: n.network(),
                nodes: BTreeMap::new(),
                agents: vec![],
                results: FleetResults {
                    tests: vec![LinkTest {
                        workload: "rr".into(),
                        transactions_per_s: tps,
                        throughput_bps: 1e5,
                        p50_us: Some(50.0),
                        p99_us: Some(90.0),
                        result: Some(result),
                        ..LinkTest::default()
                    }],
                    ..FleetResults::default()
                },
            }
        };
        // 20,000 transactions/s at 40% of a core: 20 µs of CPU each.
        let cs = compare(&[
            rr(PathKind::Host, 20_000.0, 40.0),
            rr(PathKind::CrossNode, 10_000.0, 40.0),
        ]);
        assert_eq!(cs[0].modes[0].client_cpu_us_per_trans, Some(20.0));
        assert_eq!(cs[0].modes[1].server_cpu_us_per_trans, Some(40.0));
        assert_eq!(cs[0].modes[0].client_cpu_per_gbit, None);
        let t = render_comparison(&cs);
        assert!(t.contains("transactions/s"), "{t}");
        assert!(t.contains("client CPU us/trans"), "{t}");
        assert!(!t.contains("throughput"), "no bulk rows for rr: {t}");
        assert!(t.contains("+100.0%"), "{t}");
    }

    #[test]
    fn breakdown_rows_show_which_segment_a_path_grows() {
        use wirespeed_types::breakdown::{Breakdown, PercentileSlice, SegmentStats};
        let bd = |rx: f64| {
            let names = ["client_send_stack", "wire", "server_rx_stack"];
            let parts = [2.0, 10.0, rx];
            Breakdown {
                segments: names
                    .iter()
                    .map(|n| SegmentStats {
                        name: n.to_string(),
                        ..SegmentStats::default()
                    })
                    .collect(),
                at_percentiles: [50.0, 99.0]
                    .iter()
                    .map(|p| PercentileSlice {
                        percentile: *p,
                        parts_us: parts.iter().map(|x| x * p / 50.0).collect(),
                        ..PercentileSlice::default()
                    })
                    .collect(),
                ..Breakdown::default()
            }
        };
        let rr = |n: PathKind, rx: f64| {
            let mut r = run(n, &[1.0]);
            let t = &mut r.results.tests[0];
            t.workload = "rr".into();
            t.transactions_per_s = 1000.0;
            t.result = Some(wirespeed_types::TestResult {
                breakdown: Some(bd(rx)),
                ..Default::default()
            });
            r
        };
        let cs = compare(&[rr(PathKind::Host, 5.0), rr(PathKind::CrossNode, 10.0)]);
        let segs = &cs[0].modes[1].segments;
        assert_eq!(segs.len(), 3, "{segs:?}");
        assert_eq!(segs[2].segment, "server_rx_stack");
        assert_eq!((segs[2].p50_us, segs[2].p99_us), (10.0, 19.8));
        let t = render_comparison(&cs);
        let line = t
            .lines()
            .find(|l| l.contains("p50 server_rx_stack"))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(line.contains("+100.0%"), "{line}");
        assert!(
            !t.contains("client_connect"),
            "only the segments measured: {t}"
        );
    }
}
