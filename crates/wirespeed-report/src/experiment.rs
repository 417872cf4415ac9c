//! Experiment results: every run of every cell of an experiment, and the
//! statistics drawn from them (median, spread, change against the
//! baseline). Plain serde structs with a schema version; the statistics are
//! pure functions of the runs, recomputed by [`finalize`].

use serde::{Deserialize, Serialize};
use wirespeed_types::result::finite;
use wirespeed_types::{Report, TestResult};

/// Version of the experiment results schema.
pub const EXPERIMENT_SCHEMA_VERSION: u32 = 1;

/// How the cells of an experiment relate to the baseline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every cell is the baseline plus its own change.
    #[default]
    OneAtATime,
    /// Every step adds its change to the previous step.
    Ladder,
}

impl Mode {
    /// The name used in files: `one-at-a-time` or `ladder`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::OneAtATime => "one-at-a-time",
            Mode::Ladder => "ladder",
        }
    }
}

/// The figure a cell is judged by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Goodput in bits per second (stream).
    #[default]
    ThroughputBps,
    /// Transactions per second (rr, crr).
    TransactionsPerS,
}

impl Metric {
    /// The metric of a test result's workload.
    pub fn of(r: &TestResult) -> Metric {
        if r.spec.workload.info().transactional {
            Metric::TransactionsPerS
        } else {
            Metric::ThroughputBps
        }
    }

    /// The metric's value in a test result (as recorded; [`stats`] skips
    /// values that are not finite).
    pub fn value(self, r: &TestResult) -> f64 {
        match self {
            Metric::ThroughputBps => r.throughput_bps,
            Metric::TransactionsPerS => r.transactions_per_s,
        }
    }

    /// A short human name: `throughput` or `transactions/s`.
    pub fn label(self) -> &'static str {
        match self {
            Metric::ThroughputBps => "throughput",
            Metric::TransactionsPerS => "transactions/s",
        }
    }

    /// A value of this metric for people: `18.21 Gbit/s` or `25,310 tps`.
    pub fn human(self, v: f64) -> String {
        match self {
            Metric::ThroughputBps => crate::human_bps(v),
            Metric::TransactionsPerS => format!("{} tps", crate::human_count(v)),
        }
    }
}

/// Median, extremes and spread of a set of repeated measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of values.
    pub n: u32,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation as % of the mean.
    pub stddev_pct: f64,
    /// (max - min) as % of the median.
    pub spread_pct: f64,
}

/// Median latency percentiles over repeats, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyMedians {
    /// Median of the runs' p50.
    pub p50_us: f64,
    /// Median of the runs' p90.
    pub p90_us: f64,
    /// Median of the runs' p99.
    pub p99_us: f64,
}

/// Median goodput of one path (NIC pair) over repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathMedian {
    /// `LOCAL=REMOTE` label of the path.
    pub label: String,
    /// Median goodput, bits per second.
    pub median_bps: f64,
}

/// One measured configuration: a cell, or one x value of a cell's sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The sweep value as written (e.g. `64k`, `4`); None without a sweep.
    pub x: Option<String>,
    /// The sweep value as a number (sizes in bytes), for chart axes.
    pub x_value: Option<f64>,
    /// Every repeat's full result.
    pub runs: Vec<TestResult>,
    /// Statistics of the cell's metric over the runs.
    pub stats: Stats,
    /// Median latency percentiles (rr, crr, or a stream's probe).
    pub latency: Option<LatencyMedians>,
    /// Median goodput per path.
    pub paths: Vec<PathMedian>,
    /// Change of the median against the baseline's point with the same x, %.
    pub vs_baseline_pct: Option<f64>,
}

/// One cell (or ladder step) of an experiment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// The cell's name.
    pub name: String,
    /// What the cell changes, in words.
    pub change: String,
    /// The `wirespeed bench` arguments it ran (placeholders resolved).
    pub bench_args: Vec<String>,
    /// Lab changes in force while it ran, as commands or settings.
    pub lab_changes: Vec<String>,
    /// The flag its sweep varies (e.g. `--size`), if any.
    pub sweep_arg: Option<String>,
    /// The figure it is judged by.
    pub metric: Metric,
    /// One point, or one per sweep value.
    pub points: Vec<Point>,
    /// Headline statistics: those of the last point.
    pub stats: Stats,
    /// Headline change against the baseline, %.
    pub vs_baseline_pct: Option<f64>,
    /// Headline change against the previous step (ladder), %.
    pub vs_previous_pct: Option<f64>,
}

/// Everything an experiment produced; the results file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResults {
    /// See [`EXPERIMENT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The experiment's name.
    pub name: String,
    /// How cells relate to the baseline.
    pub mode: Mode,
    /// Hash of the experiment's definition: a resumed run must match it.
    pub fingerprint: String,
    /// Name of the baseline cell (always the first cell).
    pub baseline: String,
    /// Repeats per cell (per sweep point).
    pub repeats: u32,
    /// wirespeed version that produced it.
    pub tool_version: String,
    /// Finished cells, in run order.
    pub cells: Vec<CellResult>,
}

/// Median, extremes and spread of `values` (non-finite values are ignored;
/// all zeros for none).
pub fn stats(values: &[f64]) -> Stats {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Stats::default();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let mean = v.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    let pct = |num: f64, den: f64| {
        if den > 0.0 {
            finite(num / den * 100.0)
        } else {
            0.0
        }
    };
    Stats {
        n: n as u32,
        median,
        min: v[0],
        max: v[n - 1],
        mean,
        stddev_pct: pct(var.sqrt(), mean),
        spread_pct: pct(v[n - 1] - v[0], median),
    }
}

/// `value` against `baseline` in %: +10 means 10% more. None when the
/// baseline is not positive.
pub fn change_pct(value: f64, baseline: f64) -> Option<f64> {
    (baseline > 0.0 && value.is_finite()).then(|| finite((value / baseline - 1.0) * 100.0))
}

fn median_of(values: impl Iterator<Item = f64>) -> f64 {
    stats(&values.collect::<Vec<_>>()).median
}

/// Recomputes a point's statistics, latency and per-path medians from its runs.
pub fn summarize_point(p: &mut Point, metric: Metric) {
    p.stats = stats(&p.runs.iter().map(|r| metric.value(r)).collect::<Vec<_>>());
    let lats: Vec<_> = p
        .runs
        .iter()
        .filter_map(|r| r.latency.as_ref().or(r.probe_latency.as_ref()))
        .collect();
    p.latency = (!lats.is_empty()).then(|| LatencyMedians {
        p50_us: median_of(lats.iter().map(|l| l.p50_us)),
        p90_us: median_of(lats.iter().map(|l| l.p90_us)),
        p99_us: median_of(lats.iter().map(|l| l.p99_us)),
    });
    let npaths = p.runs.iter().map(|r| r.paths.len()).max().unwrap_or(0);
    p.paths = (0..npaths)
        .map(|i| PathMedian {
            label: p
                .runs
                .iter()
                .find_map(|r| r.paths.get(i).map(|x| x.label.clone()))
                .unwrap_or_default(),
            median_bps: median_of(
                p.runs
                    .iter()
                    .filter_map(|r| r.paths.get(i).map(|x| finite(x.throughput_bps))),
            ),
        })
        .collect();
}

/// Recomputes every statistic of an experiment from its runs: per point,
/// per cell (headline = last point), against the baseline (first cell; a
/// point is compared with the baseline's point of the same x, else with the
/// baseline's headline) and, in a ladder, against the previous step.
pub fn finalize(res: &mut ExperimentResults) {
    for c in &mut res.cells {
        if let Some(r) = c.points.iter().flat_map(|p| &p.runs).next() {
            c.metric = Metric::of(r);
        }
        let metric = c.metric;
        for p in &mut c.points {
            summarize_point(p, metric);
        }
        c.stats = c.points.last().map(|p| p.stats.clone()).unwrap_or_default();
    }
    let base = res.cells.first().cloned();
    let mut prev: Option<(Metric, f64)> = None;
    for c in &mut res.cells {
        let same = base.as_ref().filter(|b| b.metric == c.metric);
        for p in &mut c.points {
            p.vs_baseline_pct = same.and_then(|b| {
                let bp = b.points.iter().find(|q| q.x == p.x);
                let bv = bp.map_or(b.stats.median, |q| q.stats.median);
                change_pct(p.stats.median, bv)
            });
        }
        c.vs_baseline_pct = same.and_then(|b| change_pct(c.stats.median, b.stats.median));
        c.vs_previous_pct = match (res.mode, prev) {
            (Mode::Ladder, Some((m, v))) if m == c.metric => change_pct(c.stats.median, v),
            _ => None,
        };
        prev = Some((c.metric, c.stats.median));
    }
    if let Some(b) = res.cells.first() {
        res.baseline = b.name.clone();
    }
}

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
    format!("{t}\n")
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
}
