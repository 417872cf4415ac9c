//! The paths of a `k8s run` side by side: per workload, each path's
//! medians (throughput or transactions/s, latency, CPU per Gbit/s or per
//! transaction on each side, and with `--breakdown` where the round trip
//! is spent) and each later path's gap to the first (the host network,
//! when it ran); with `--policy-load`, each pod path under each load
//! against the same path under the first ([`compare_policy`]).

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

/// The workloads of `runs`, in the order they first ran.
fn workloads_of<'a>(runs: impl Iterator<Item = &'a PathRun>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        for t in &r.results.tests {
            if !out.contains(&t.workload) {
                out.push(t.workload.clone());
            }
        }
    }
    out
}

/// `r`'s figures for workload `w`, named by [`PathRun::label`].
fn figures_of(r: &PathRun, w: &str) -> ModeFigures {
    let ok: Vec<&LinkTest> = r
        .results
        .tests
        .iter()
        .filter(|t| t.workload == w && t.error.is_none())
        .collect();
    mode_figures(&r.label(), &ok)
}

/// The comparison of every workload across `runs`: the paths under the
/// first policy load (the only one without `--policy-load`).
pub fn compare(runs: &[PathRun]) -> Vec<Comparison> {
    let first = runs.iter().map(|r| r.policy_load).min().flatten();
    let base: Vec<&PathRun> = runs.iter().filter(|r| r.policy_load <= first).collect();
    workloads_of(base.iter().copied())
        .into_iter()
        .map(|w| Comparison {
            modes: base.iter().map(|r| figures_of(r, &w)).collect(),
            workload: w,
        })
        .collect()
}

/// What `--policy-load` cost: per workload and pod path measured under
/// several loads, a comparison whose modes are that path under each load,
/// in run order (gaps against the first load). Empty without the flag.
pub fn compare_policy(runs: &[PathRun]) -> Vec<Comparison> {
    let mut paths: Vec<crate::PathKind> = Vec::new();
    for r in runs.iter().filter(|r| r.policy_load.is_some()) {
        let loads = runs.iter().filter(|x| x.path == r.path).count();
        if loads > 1 && !paths.contains(&r.path) {
            paths.push(r.path);
        }
    }
    let mut out = Vec::new();
    for w in workloads_of(runs.iter()) {
        for p in &paths {
            let modes: Vec<ModeFigures> = runs
                .iter()
                .filter(|r| r.path == *p)
                .map(|r| figures_of(r, &w))
                .filter(|m| m.tests > 0)
                .collect();
            if modes.len() > 1 {
                out.push(Comparison {
                    workload: w.clone(),
                    modes,
                });
            }
        }
    }
    out
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

/// The widest line [`render_comparison`] writes: a terminal's width.
pub const WIDTH: usize = 100;

/// A figure with `d` decimals, or "-".
fn num(v: Option<f64>, d: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.d$}"))
}

/// "a / b" of two figures, or "-" when neither is known.
fn pair(a: Option<f64>, b: Option<f64>, d: usize) -> String {
    if a.is_none() && b.is_none() {
        return "-".into();
    }
    format!("{} / {}", num(a, d), num(b, d))
}

/// One row per path: its tests, its figure in the workload's unit, the gap
/// to the first path, latency (rr) and CPU per unit of work on each side.
fn paths_table(c: &Comparison, w: usize) -> String {
    let base = &c.modes[0];
    let rr = c.modes.iter().any(|m| m.transactions_per_s.is_some());
    let (unit, cpu) = if rr {
        ("trans/s", "CPU us/trans cli/srv")
    } else {
        ("Gbit/s", "CPU %/Gbit/s cli/srv")
    };
    // The first path's name when it fits the column ("vs host").
    let vs = match format!("vs {}", base.path) {
        v if v.len() <= 9 => v,
        _ => "vs first".into(),
    };
    let mut s = format!(
        "  {:<w$} {:>5} {:>10} {:>9}",
        "path",
        "tests",
        unit,
        fit(&vs, 9)
    );
    if rr {
        s += &format!(" {:>9} {:>9}", "p50 us", "p99 us");
    }
    s += &format!(" {cpu:>21}\n");
    let figure = |m: &ModeFigures| {
        if rr {
            m.transactions_per_s
        } else {
            Some(m.throughput_bps / 1e9)
        }
    };
    for m in &c.modes {
        let g = match (figure(m), figure(base)) {
            (Some(x), Some(b)) if !std::ptr::eq(m, base) => gap(x, b),
            _ => "-".into(),
        };
        let v = figure(m).map(|x| {
            if rr {
                format!("{x:.0}")
            } else {
                format!("{x:.2}")
            }
        });
        s += &format!(
            "  {:<w$} {:>5} {:>10} {g:>9}",
            m.path,
            m.tests,
            v.unwrap_or_else(|| "-".into())
        );
        if rr {
            s += &format!(" {:>9} {:>9}", num(m.p50_us, 1), num(m.p99_us, 1));
        }
        let (a, b) = if rr {
            (m.client_cpu_us_per_trans, m.server_cpu_us_per_trans)
        } else {
            (m.client_cpu_per_gbit, m.server_cpu_per_gbit)
        };
        s += &format!(" {:>21}\n", pair(a, b, 1));
    }
    s
}

/// The longest path name of `c`.
fn longest_path(c: &Comparison) -> usize {
    c.modes.iter().map(|m| m.path.len()).max().unwrap_or(0)
}

/// `t` cut to `n` characters.
fn fit(t: &str, n: usize) -> String {
    t.chars().take(n).collect()
}

/// Where the round trip is spent: a row per segment, a column per path
/// (the segment's part of the p99, µs, and for later paths the gap to the
/// first), folded into blocks of paths that fit [`WIDTH`]; the p50 parts
/// are in `--out`.
fn segments_table(c: &Comparison) -> String {
    let keys: Vec<&str> = SEGMENTS
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| {
            c.modes
                .iter()
                .any(|m| m.segments.iter().any(|g| g.segment == *k))
        })
        .collect();
    if keys.is_empty() {
        return String::new();
    }
    let lw = keys.iter().map(|k| k.len()).max().unwrap_or(0).max(10);
    let cw = longest_path(c).max(14) + 2;
    let per = ((WIDTH - 2 - lw) / cw).max(1);
    let p99 =
        |m: &ModeFigures, k: &str| m.segments.iter().find(|g| g.segment == k).map(|g| g.p99_us);
    let base = &c.modes[0];
    let mut s = format!(
        "  where the p99 round trip is spent (us; gap to {}):\n",
        base.path
    );
    for block in c.modes.chunks(per) {
        s += &format!("  {:<lw$}", "segment");
        for m in block {
            s += &format!("{:>cw$}", m.path);
        }
        s += "\n";
        for k in &keys {
            s += &format!("  {k:<lw$}");
            for m in block {
                let v = match (p99(m, k), p99(base, k)) {
                    (Some(v), Some(b)) if !std::ptr::eq(m, base) => {
                        format!("{v:.1} {}", gap(v, b))
                    }
                    (v, _) => num(v, 1),
                };
                s += &format!("{v:>cw$}");
            }
            s += "\n";
        }
    }
    s
}

/// The comparison as text that fits [`WIDTH`] columns: per workload a row
/// per path with its gap to the first (host, when it ran, is the
/// baseline), then with `--breakdown` where each path's round trip goes.
pub fn render_comparison(cs: &[Comparison]) -> String {
    let mut s = String::new();
    for c in cs.iter().filter(|c| !c.modes.is_empty()) {
        let w = longest_path(c).max(4);
        s += &format!("workload {}\n", c.workload);
        s += &paths_table(c, w);
        s += &segments_table(c);
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
            policy_load: None,
        }
    }

    #[test]
    fn policy_load_compares_each_pod_path_with_itself_under_the_first_load() {
        let at = |n, p, bps: &[f64]| PathRun {
            policy_load: Some(n),
            ..run(p, bps)
        };
        let runs = [
            at(0, PathKind::Host, &[10e9]),
            at(0, PathKind::CrossNode, &[8e9]),
            at(100, PathKind::CrossNode, &[6e9]),
        ];
        let base = compare(&runs);
        let names: Vec<&str> = base[0].modes.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(names, ["host, 0 policies", "cross-node, 0 policies"]);
        let cost = compare_policy(&runs);
        assert_eq!(cost.len(), 1);
        let names: Vec<&str> = cost[0].modes.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(
            names,
            ["cross-node, 0 policies", "cross-node, 100 policies"]
        );
        let text = render_comparison(&cost);
        assert!(text.contains("-25.0%"), "{text}");
        assert!(compare_policy(&[run(PathKind::CrossNode, &[1e9])]).is_empty());
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
        assert!(!t.contains("p50"), "no latency columns without rr: {t}");
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
                policy_load: None,
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
        assert!(t.contains("trans/s") && t.contains("CPU us/trans"), "{t}");
        assert!(!t.contains("Gbit/s"), "no bulk columns for rr: {t}");
        let cross = t.lines().find(|l| l.contains("cross-node")).unwrap();
        assert!(
            cross.contains("-50.0%") && cross.contains("40.0 / 40.0"),
            "{t}"
        );
    }

    #[test]
    fn every_path_with_a_breakdown_fits_a_terminal() {
        let mut runs = Vec::new();
        for p in PathKind::ALL {
            let mut r = run(p, &[1.0]);
            let t = &mut r.results.tests[0];
            t.workload = "rr".into();
            t.transactions_per_s = 123_456.0;
            t.p50_us = Some(12_345.6);
            t.p99_us = Some(123_456.7);
            let mut result = wirespeed_types::TestResult::default();
            result.local_cpu.total_pct = 9_999.0;
            t.result = Some(result);
            runs.push(r);
        }
        let t = render_comparison(&compare(&runs));
        for l in t.lines() {
            assert!(l.chars().count() <= WIDTH, "{} columns: {l}\n{t}", l.len());
        }
        assert_eq!(
            t.lines()
                .filter(|l| l.contains("service-cross-node"))
                .count(),
            1,
            "{t}"
        );
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
            .find(|l| l.contains("server_rx_stack"))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(
            line.contains("9.9") && line.contains("19.8 +100.0%"),
            "{line}"
        );
        assert!(
            !t.contains("client_connect"),
            "only the segments measured: {t}"
        );
    }
}
