//! Experiment results as the report shows them: the summary table, a
//! bench report turned into experiment results ([`from_report`]). The
//! schema and its statistics are wirespeed-types' `experiment` (re-exported
//! here at their old paths).

use wirespeed_types::Report;
pub use wirespeed_types::experiment::*;
use wirespeed_types::result::finite;
use wirespeed_types::stats::median;

/// Turns a plain `wirespeed bench --json` report into experiment results:
/// an rr/crr size sweep becomes one cell with a point per size, anything
/// else one cell per result (the first one the baseline).
pub fn from_report(report: &Report, name: &str) -> ExperimentResults {
    let rs = &report.results;
    let sweep = crate::source::is_size_sweep(rs);
    let cells = if sweep {
        vec![CellResult {
            name: crate::source::bench_description(report),
            change: "size sweep".into(),
            sweep_arg: Some("--size".into()),
            points: rs
                .iter()
                .map(|r| Point {
                    x: Some(crate::human_size(r.spec.request_size as u64)),
                    x_value: Some(r.spec.request_size as f64),
                    runs: vec![r.clone()],
                    ..Point::default()
                })
                .collect(),
            ..CellResult::default()
        }]
    } else {
        rs.iter()
            .enumerate()
            .map(|(i, r)| CellResult {
                name: format!("#{} {}", i + 1, crate::source::describe(r)),
                change: crate::source::describe(r),
                points: vec![Point {
                    runs: vec![r.clone()],
                    ..Point::default()
                }],
                ..CellResult::default()
            })
            .collect()
    };
    let mut out = ExperimentResults {
        schema_version: EXPERIMENT_SCHEMA_VERSION,
        name: name.to_string(),
        repeats: 1,
        tool_version: rs
            .first()
            .map(|r| r.tool_version.clone())
            .unwrap_or_default(),
        cells,
        ..ExperimentResults::default()
    };
    finalize(&mut out);
    out
}

/// A signed percentage for people: `+12.3%`, `-4.0%`, or `-` for none.
pub fn pct_text(p: Option<f64>) -> String {
    match p {
        Some(v) => format!("{:+.1}%", finite(v)),
        None => "-".into(),
    }
}

/// The end-of-run table: one row per cell.
pub fn summary_table(res: &ExperimentResults) -> String {
    let ladder = res.mode == Mode::Ladder;
    let rr = res
        .cells
        .iter()
        .any(|c| c.points.iter().any(|p| p.latency.is_some()));
    let mut head = vec!["cell", "median", "min - max", "spread", "vs baseline"];
    if ladder {
        head.push("vs previous");
    }
    if rr {
        head.push("p50 latency");
    }
    let mut t = crate::table::new_table(&head, 1);
    for c in &res.cells {
        let m = c.metric;
        let mut row = vec![
            c.name.clone(),
            m.human(c.stats.median),
            format!("{} - {}", m.human(c.stats.min), m.human(c.stats.max)),
            format!("{:.1}%", c.stats.spread_pct),
            if c.name == res.baseline {
                "baseline".into()
            } else {
                pct_text(c.vs_baseline_pct)
            },
        ];
        if ladder {
            row.push(pct_text(c.vs_previous_pct));
        }
        if rr {
            row.push(
                c.points
                    .last()
                    .and_then(|p| p.latency.as_ref())
                    .map(|l| crate::units::human_us(l.p50_us))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        t.add_row(row);
    }
    let mut out = format!("{t}\n");
    for line in contended_lines(res) {
        out += &crate::fold(&line);
        out.push('\n');
    }
    if let Some(b) = breakdown_table(res) {
        out += &b;
    }
    out
}

/// A line per cell with contended runs
/// ([`wirespeed_types::TestResult::contended`]): how
/// many of its runs, and the first one's reason.
fn contended_lines(res: &ExperimentResults) -> Vec<String> {
    res.cells
        .iter()
        .filter_map(|c| {
            let runs: Vec<_> = c.points.iter().flat_map(|p| &p.runs).collect();
            let hit: Vec<&str> = runs.iter().filter_map(|r| r.contended.as_deref()).collect();
            Some(format!(
                "CONTENDED {}: {} of {} runs, e.g. {}",
                c.name,
                hit.len(),
                runs.len(),
                hit.first()?
            ))
        })
        .collect()
}

/// Where the round trip is spent in each cell (`--breakdown`): each
/// segment's mean in the transactions at the round trip's median, the
/// median over the runs of the cell's last point, µs; None when no run
/// has a breakdown.
pub fn breakdown_table(res: &ExperimentResults) -> Option<String> {
    use wirespeed_types::breakdown::SEGMENTS;
    let rows: Vec<(&str, Vec<Option<f64>>)> = res
        .cells
        .iter()
        .map(|c| {
            let bs: Vec<_> = c
                .points
                .last()
                .map(|p| p.runs.iter().filter_map(|r| r.breakdown.as_ref()).collect())
                .unwrap_or_default();
            let v = SEGMENTS
                .iter()
                .map(|(k, _)| {
                    median(
                        &bs.iter()
                            .filter_map(|b| b.part_at(50.0, k))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
            (c.name.as_str(), v)
        })
        .collect();
    let used: Vec<usize> = (0..SEGMENTS.len())
        .filter(|&i| rows.iter().any(|(_, v)| v[i].is_some()))
        .collect();
    if used.is_empty() {
        return None;
    }
    let mut head = vec!["where p50 is spent, us"];
    head.extend(used.iter().map(|&i| SEGMENTS[i].0));
    let mut t = crate::table::new_table(&head, 1);
    for (name, v) in rows {
        let mut row = vec![name.to_string()];
        row.extend(
            used.iter()
                .map(|&i| v[i].map_or("-".into(), |x| format!("{x:.2}"))),
        );
        t.add_row(row);
    }
    Some(format!("{t}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{cell, rr, stream};
    use wirespeed_types::SCHEMA_VERSION;

    #[test]
    fn median_spread_and_stddev() {
        let s = stats(&[3.0, 1.0, 2.0]);
        assert_eq!((s.n, s.median, s.min, s.max), (3, 2.0, 1.0, 3.0));
        assert!((s.spread_pct - 100.0).abs() < 1e-9);
        assert!((s.stddev_pct - 50.0).abs() < 1e-9);
        assert_eq!(stats(&[1.0, 2.0, 3.0, 10.0]).median, 2.5);
        assert_eq!(stats(&[]), Stats::default());
        let s = stats(&[f64::NAN, 4.0]);
        assert_eq!((s.n, s.median, s.stddev_pct), (1, 4.0, 0.0));
        assert_eq!(stats(&[0.0, 0.0]).spread_pct, 0.0);
    }

    #[test]
    fn change_against_a_baseline() {
        assert_eq!(change_pct(150.0, 100.0), Some(50.0));
        assert_eq!(change_pct(75.0, 100.0), Some(-25.0));
        assert_eq!(change_pct(1.0, 0.0), None);
        assert_eq!(change_pct(f64::NAN, 1.0), None);
        assert_eq!(pct_text(Some(12.34)), "+12.3%");
        assert_eq!(pct_text(None), "-");
    }

    #[test]
    fn finalize_compares_cells_with_the_baseline_and_steps_with_the_previous() {
        let mut res = ExperimentResults {
            mode: Mode::Ladder,
            cells: vec![
                cell(
                    "base",
                    vec![stream(1e9, 1), stream(0.9e9, 1), stream(1.1e9, 1)],
                ),
                cell("two", vec![stream(2e9, 2), stream(1.8e9, 2)]),
                cell("three", vec![stream(2.1e9, 2)]),
            ],
            ..ExperimentResults::default()
        };
        finalize(&mut res);
        assert_eq!(res.baseline, "base");
        let c = &res.cells;
        assert_eq!(c[0].stats.median, 1e9);
        assert_eq!(c[0].vs_baseline_pct, Some(0.0));
        assert_eq!(c[0].vs_previous_pct, None);
        assert!((c[1].vs_baseline_pct.unwrap() - 90.0).abs() < 1e-9);
        assert!((c[2].vs_previous_pct.unwrap() - (2.1 / 1.9 - 1.0) * 100.0).abs() < 1e-9);
        assert_eq!(c[1].points[0].paths.len(), 2);
        assert_eq!(c[1].points[0].paths[1].median_bps, 0.95e9);
        res.mode = Mode::OneAtATime;
        finalize(&mut res);
        assert_eq!(res.cells[2].vs_previous_pct, None);
    }

    #[test]
    fn sweeps_compare_point_by_point_and_metrics_do_not_mix() {
        let sweep = |name: &str, f: f64| CellResult {
            name: name.into(),
            sweep_arg: Some("--size".into()),
            points: [(1024u32, "1k"), (65536, "64k")]
                .iter()
                .map(|&(s, x)| Point {
                    x: Some(x.into()),
                    x_value: Some(s as f64),
                    runs: vec![rr(10000.0 * f / s as f64 * 1024.0, 30.0, s)],
                    ..Point::default()
                })
                .collect(),
            ..CellResult::default()
        };
        let mut res = ExperimentResults {
            cells: vec![
                sweep("host", 1.0),
                sweep("vxlan", 0.8),
                cell("bulk", vec![stream(1e9, 1)]),
            ],
            ..ExperimentResults::default()
        };
        finalize(&mut res);
        let v = &res.cells[1];
        assert_eq!(v.metric, Metric::TransactionsPerS);
        for p in &v.points {
            assert!((p.vs_baseline_pct.unwrap() + 20.0).abs() < 1e-9);
        }
        assert_eq!(v.points[0].latency.as_ref().unwrap().p99_us, 60.0);
        assert_eq!(res.cells[2].vs_baseline_pct, None);
    }

    #[test]
    fn a_bench_size_sweep_becomes_one_cell() {
        let report = Report {
            schema_version: SCHEMA_VERSION,
            results: vec![rr(9000.0, 30.0, 1024), rr(5000.0, 60.0, 65536)],
        };
        let res = from_report(&report, "sweep");
        assert_eq!(res.cells.len(), 1);
        assert_eq!(res.cells[0].points.len(), 2);
        assert_eq!(res.cells[0].points[1].x.as_deref(), Some("64 KiB"));
        let report = Report {
            schema_version: SCHEMA_VERSION,
            results: vec![stream(1e9, 1), stream(2e9, 2)],
        };
        let res = from_report(&report, "two");
        assert_eq!(res.cells.len(), 2);
        assert_eq!(res.cells[1].vs_baseline_pct, Some(100.0));
    }

    #[test]
    fn a_breakdown_table_per_cell_only_with_breakdowns() {
        use wirespeed_types::breakdown::{Breakdown, PercentileSlice, SegmentStats};
        let bd = Breakdown {
            segments: ["client_send_stack", "server_rx_stack"]
                .iter()
                .map(|n| SegmentStats {
                    name: n.to_string(),
                    ..SegmentStats::default()
                })
                .collect(),
            at_percentiles: vec![PercentileSlice {
                percentile: 50.0,
                parts_us: vec![1.5, 7.25],
                ..PercentileSlice::default()
            }],
            ..Breakdown::default()
        };
        let run = wirespeed_types::TestResult {
            breakdown: Some(bd),
            ..Default::default()
        };
        let mut res = ExperimentResults {
            cells: vec![CellResult {
                name: "vxlan".into(),
                points: vec![Point {
                    runs: vec![run],
                    ..Point::default()
                }],
                ..CellResult::default()
            }],
            ..ExperimentResults::default()
        };
        let t = breakdown_table(&res).expect("a table");
        assert!(t.contains("server_rx_stack") && t.contains("7.25"), "{t}");
        assert!(!t.contains("client_connect"), "{t}");
        res.cells[0].points[0].runs[0].breakdown = None;
        assert!(breakdown_table(&res).is_none());
    }
}
