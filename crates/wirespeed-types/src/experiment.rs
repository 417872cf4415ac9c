//! Experiment results: every run of every cell of an experiment, and the
//! statistics drawn from them (median, spread, change against the
//! baseline). Plain serde structs with a schema version; the statistics are
//! pure functions of the runs, recomputed by [`finalize`]. The report
//! renders them; the experiment runner and optimize write them.

use crate::TestResult;
use crate::result::finite;
use crate::stats::{median_of_sorted, sorted_finite};
use crate::text::{human_bps, human_count};
use serde::{Deserialize, Serialize};

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
            Metric::ThroughputBps => human_bps(v),
            Metric::TransactionsPerS => format!("{} tps", human_count(v)),
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
    let v = sorted_finite(values);
    let Some(median) = median_of_sorted(&v) else {
        return Stats::default();
    };
    let n = v.len();
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
