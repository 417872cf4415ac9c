//! What `wirespeed report` reads (bench reports and experiment results,
//! each under a label) and the series its pages draw: a single test, or a
//! sweep (one test per size or per sweep value), in one colour.

use crate::units::{human_size, plural};
use wirespeed_types::experiment::{ExperimentResults, Point};
use wirespeed_types::result::{IntervalLatency, IntervalSample, LatencySummary, finite};
use wirespeed_types::spec::FlowKind;
use wirespeed_types::{Direction, Report, TestResult, Workload};

/// The content of one results file.
#[derive(Debug, Clone)]
pub enum Content {
    /// The output of `wirespeed bench --json`.
    Bench(Report),
    /// The results of `wirespeed experiment`.
    Experiment(ExperimentResults),
}

/// One results file under the label the page names it by.
#[derive(Debug, Clone)]
pub struct Source {
    /// The label: the user's, or the test's own description.
    pub label: String,
    /// Where it came from (a file name), for the page's header.
    pub origin: String,
    /// The results.
    pub content: Content,
}

impl Source {
    /// A source labelled by `label`, or by its own description when None.
    pub fn new(origin: &str, content: Content, label: Option<String>) -> Source {
        let label = label.unwrap_or_else(|| match &content {
            Content::Bench(r) => bench_description(r),
            Content::Experiment(e) => e.name.clone(),
        });
        Source {
            label,
            origin: origin.to_string(),
            content,
        }
    }
}

/// Gives sources that would share a label their origin as a prefix, so
/// every series of a comparison reads apart.
pub fn distinct_labels(sources: &mut [Source]) {
    let labels: Vec<String> = sources.iter().map(|s| s.label.clone()).collect();
    for (i, s) in sources.iter_mut().enumerate() {
        if labels.iter().filter(|l| **l == labels[i]).count() > 1 {
            s.label = format!("{}: {}", s.origin, s.label);
        }
    }
}

/// Whether several results form an rr/crr size sweep.
pub fn is_size_sweep(rs: &[TestResult]) -> bool {
    rs.len() > 1 && rs.iter().all(|r| !r.spec.workload.is_bulk())
}

/// What a bench report holds, in a few words.
pub fn bench_description(r: &Report) -> String {
    match r.results.as_slice() {
        [] => "no results".into(),
        [one] => describe(one),
        rs if is_size_sweep(rs) => format!(
            "{} size sweep, {} to {}, {}",
            workload_word(rs[0].spec.workload),
            human_size(rs[0].spec.request_size as u64),
            human_size(rs[rs.len() - 1].spec.request_size as u64),
            plural(rs[0].spec.flows as u64, "flow", "flows")
        ),
        rs => plural(rs.len() as u64, "test", "tests"),
    }
}

/// The workload's name: `stream`, `rr`, `crr`.
pub fn workload_word(w: Workload) -> &'static str {
    w.name()
}

/// The workload and its shape: `stream forward`, `rr 1 KiB / 1 KiB`.
pub fn what(r: &TestResult) -> String {
    let s = &r.spec;
    match s.workload {
        Workload::Stream => {
            let d = match s.direction {
                Direction::Forward => "forward",
                Direction::Reverse => "reverse",
                Direction::Bidir => "both ways",
            };
            let probe = if s.has_probe() {
                " with latency probe"
            } else {
                ""
            };
            format!("stream {d}{probe}")
        }
        w => format!(
            "{} {} / {}",
            workload_word(w),
            human_size(s.request_size as u64),
            human_size(s.response_size as u64)
        ),
    }
}

/// The flow count in words: `1 flow`, `4 flows`, `2 flows each way`.
pub fn flows_text(r: &TestResult) -> String {
    let s = &r.spec;
    if s.workload.is_bulk() && s.direction == Direction::Bidir {
        plural(s.flows as u64, "flow each way", "flows each way")
    } else {
        plural(s.flows as u64, "flow", "flows")
    }
}

/// Flows, threads and paths with their plurals: `4 flows, 1 thread, 1 path`.
pub fn shape(r: &TestResult) -> String {
    let s = &r.spec;
    format!(
        "{}, {}, {}",
        flows_text(r),
        plural(s.threads.min(s.flows).max(1) as u64, "thread", "threads"),
        plural(r.paths.len().max(1) as u64, "path", "paths")
    )
}

/// Flows, and threads and paths when there are several: `4 flows, 2 threads`.
pub fn shape_short(r: &TestResult) -> String {
    let s = &r.spec;
    let mut t = flows_text(r);
    let threads = s.threads.min(s.flows).max(1);
    if threads > 1 {
        t.push_str(&format!(", {threads} threads"));
    }
    if r.paths.len() > 1 {
        t.push_str(&format!(", {} paths", r.paths.len()));
    }
    t
}

/// A short description: `stream forward, 4 flows`.
pub fn describe(r: &TestResult) -> String {
    format!("{}, {}", what(r), flows_text(r))
}

/// One measured point of a series: a test and where it sits on the sweep.
#[derive(Debug, Clone)]
pub struct SeriesPoint<'a> {
    /// Sweep value as read (`64 KiB`) and as a number; None without a sweep.
    pub x: Option<(String, f64)>,
    /// The test (for repeats: the run nearest the median).
    pub run: &'a TestResult,
    /// Repeats behind the point.
    pub repeats: usize,
}

/// A single test, or a sweep of tests, drawn in one colour.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    /// Legend name.
    pub label: String,
    /// What the sweep varies (`request size`), if it is one.
    pub x_title: String,
    /// The points, in sweep order.
    pub points: Vec<SeriesPoint<'a>>,
}

impl<'a> Series<'a> {
    /// One test as a series named by its description.
    pub fn single(r: &'a TestResult) -> Series<'a> {
        Series {
            label: describe(r),
            x_title: String::new(),
            points: vec![SeriesPoint {
                x: None,
                run: r,
                repeats: 1,
            }],
        }
    }

    /// Whether it is a sweep (several points with sweep values).
    pub fn is_sweep(&self) -> bool {
        self.points.len() > 1 && self.points.iter().all(|p| p.x.is_some())
    }

    /// The test of a single-test series (the first point otherwise).
    pub fn run(&self) -> &'a TestResult {
        self.points[0].run
    }
}

/// The run of a point nearest its median (the first when none is finite).
pub fn representative(p: &Point) -> Option<&TestResult> {
    let m = p.stats.median;
    p.runs.iter().min_by(|a, b| {
        let d = |r: &TestResult| {
            let v = crate::Metric::of(r).value(r);
            if v.is_finite() {
                (v - m).abs()
            } else {
                f64::INFINITY
            }
        };
        d(a).total_cmp(&d(b))
    })
}

/// The series of a bench report: a size sweep is one series; otherwise
/// one per result.
pub fn bench_series<'a>(label: &str, r: &'a Report) -> Vec<Series<'a>> {
    let rs = &r.results;
    if is_size_sweep(rs) {
        return vec![Series {
            label: label.to_string(),
            x_title: "request size".into(),
            points: rs
                .iter()
                .map(|r| SeriesPoint {
                    x: Some((
                        human_size(r.spec.request_size as u64),
                        r.spec.request_size as f64,
                    )),
                    run: r,
                    repeats: 1,
                })
                .collect(),
        }];
    }
    rs.iter()
        .enumerate()
        .map(|(i, r)| Series {
            label: if rs.len() == 1 {
                label.to_string()
            } else {
                format!("{label} #{}", i + 1)
            },
            x_title: String::new(),
            points: vec![SeriesPoint {
                x: None,
                run: r,
                repeats: 1,
            }],
        })
        .collect()
}

/// The series of an experiment: one per cell, each point its
/// representative run; `prefix` goes before cell names.
pub fn experiment_series<'a>(prefix: Option<&str>, e: &'a ExperimentResults) -> Vec<Series<'a>> {
    e.cells
        .iter()
        .filter_map(|c| {
            let points: Vec<SeriesPoint> = c
                .points
                .iter()
                .filter_map(|p| {
                    Some(SeriesPoint {
                        x: p.x.clone().map(|x| (x, p.x_value.unwrap_or(f64::NAN))),
                        run: representative(p)?,
                        repeats: p.runs.len(),
                    })
                })
                .collect();
            (!points.is_empty()).then(|| Series {
                label: match prefix {
                    Some(p) => format!("{p}: {}", c.name),
                    None => c.name.clone(),
                },
                x_title: c
                    .sweep_arg
                    .as_deref()
                    .map(|a| match a {
                        "--size" => "request size".to_string(),
                        other => other.trim_start_matches('-').to_string(),
                    })
                    .unwrap_or_else(|| "sweep value".into()),
                points,
            })
        })
        .collect()
}

/// Every series of these sources, in order.
pub fn all_series(sources: &[Source]) -> Vec<Series<'_>> {
    let many = sources.len() > 1;
    sources
        .iter()
        .flat_map(|s| match &s.content {
            Content::Bench(r) => bench_series(&s.label, r),
            Content::Experiment(e) => experiment_series(many.then_some(s.label.as_str()), e),
        })
        .collect()
}

/// The latency a test is judged by: rr/crr transactions, or a stream's probe.
pub fn latency_of(r: &TestResult) -> Option<&LatencySummary> {
    r.latency.as_ref().or(r.probe_latency.as_ref())
}

/// Whether the latency of `r` is a probe's (latency under load).
pub fn is_probe_latency(r: &TestResult) -> bool {
    r.latency.is_none() && r.probe_latency.is_some()
}

/// An interval's latency (rr/crr, else probe).
pub fn interval_latency(s: &IntervalSample) -> Option<&IntervalLatency> {
    s.latency.as_ref().or(s.probe_latency.as_ref())
}

/// The flows that carry the test (not the probe).
pub fn main_flows(r: &TestResult) -> impl Iterator<Item = &wirespeed_types::result::FlowResult> {
    r.flows.iter().filter(|f| f.kind != Some(FlowKind::Probe))
}

/// The figure a test is judged by, in its own unit: goodput for stream,
/// transactions/s for rr and crr.
pub fn headline(r: &TestResult) -> f64 {
    finite(crate::Metric::of(r).value(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{rr, stream};
    use wirespeed_types::SCHEMA_VERSION;

    #[test]
    fn descriptions_use_plurals() {
        let mut r = stream(1e9, 1);
        r.spec.flows = 1;
        assert_eq!(describe(&r), "stream forward, 1 flow");
        assert_eq!(shape(&r), "1 flow, 1 thread, 1 path");
        r.spec.flows = 4;
        r.spec.threads = 2;
        r.spec.probe_rr = true;
        assert_eq!(describe(&r), "stream forward with latency probe, 4 flows");
        assert_eq!(shape(&r), "4 flows, 2 threads, 1 path");
        assert_eq!(what(&rr(1.0, 1.0, 1024)), "rr 1 KiB / 1 KiB");
        r.spec.direction = Direction::Bidir;
        r.spec.probe_rr = false;
        r.spec.flows = 1;
        assert_eq!(describe(&r), "stream both ways, 1 flow each way");
        let sweep = Report {
            schema_version: SCHEMA_VERSION,
            results: vec![rr(9.0, 1.0, 1024), rr(5.0, 2.0, 1 << 20)],
        };
        assert_eq!(
            bench_description(&sweep),
            "rr size sweep, 1 KiB to 1 MiB, 1 flow"
        );
        let s = bench_series("x", &sweep);
        assert_eq!(s.len(), 1);
        assert!(s[0].is_sweep());
        assert_eq!(s[0].points[1].x.as_ref().unwrap().0, "1 MiB");
    }

    #[test]
    fn shared_labels_get_their_origin() {
        let one = Report {
            schema_version: SCHEMA_VERSION,
            results: vec![stream(1e9, 1)],
        };
        let mut s = vec![
            Source::new("a.json", Content::Bench(one.clone()), None),
            Source::new("b.json", Content::Bench(one.clone()), None),
            Source::new("c.json", Content::Bench(one), Some("mine".into())),
        ];
        distinct_labels(&mut s);
        assert_eq!(s[0].label, "a.json: stream forward, 1 flow");
        assert_eq!(s[2].label, "mine");
    }
}
