//! The figures of the report pages, built from series: throughput (and
//! latency) over time, latency percentiles, flows with TCP_INFO, CPU per
//! side, the size-sweep curves, and a headline bar per compared result.
//! Each figure has a caption with the number a reader would quote.

use crate::chart::{
    Axis, Bar, Line, LineChart, abbr, bps_ticks, color, count_ticks, esc, grouped_chart,
    hbar_chart, legend, pct_ticks, secs_ticks, series_legend,
};
use crate::source::{
    Series, SeriesPoint, describe, headline, interval_latency, is_probe_latency, latency_of,
    main_flows, shape_short, what,
};
use crate::units::{
    human_bps, human_count, human_pct, human_size, human_us, plural, tick_us, trim_num,
};
use crate::{Metric, units};
use std::fmt::Write;
use wirespeed_types::result::{IntervalSample, TestResult, finite};
use wirespeed_types::spec::FlowKind;

/// A figure: a caption with the figure's quotable number, a legend, one or
/// more SVG panels (sharing their x axis), a note and an optional table.
#[derive(Debug, Clone, Default)]
pub struct Figure {
    /// What it shows, with its unit.
    pub title: String,
    /// The number a reader would quote.
    pub quote: String,
    /// HTML legend.
    pub legend: String,
    /// SVG panels, top to bottom.
    pub panels: Vec<String>,
    /// How to read it.
    pub note: String,
    /// An HTML table with the figure's numbers.
    pub table: String,
}

impl Figure {
    /// The figure as HTML.
    pub fn html(&self) -> String {
        let mut o = String::from("<figure>\n<figcaption>");
        let _ = write!(o, "<span class=\"ft\">{}</span>", esc(&self.title));
        if !self.quote.is_empty() {
            let _ = write!(o, " <span class=\"fq\">{}</span>", esc(&self.quote));
        }
        o.push_str("</figcaption>\n");
        o.push_str(&self.legend);
        for p in &self.panels {
            o.push_str(p);
        }
        if !self.note.is_empty() {
            let _ = writeln!(o, "<p class=\"fn\">{}</p>", esc(&self.note));
        }
        o.push_str(&self.table);
        o.push_str("</figure>\n");
        o
    }
}

/// A table of text cells: rendered as HTML or Markdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Header cells.
    pub head: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
    /// Columns from this one on are right-aligned numbers.
    pub numeric_from: usize,
}

impl Table {
    /// Removes the columns whose every cell is `-`.
    pub fn drop_empty_columns(&mut self) {
        let keep: Vec<bool> = (0..self.head.len())
            .map(|c| self.rows.iter().any(|r| r.get(c).is_some_and(|v| v != "-")))
            .collect();
        let pick = |v: &[String]| -> Vec<String> {
            v.iter()
                .zip(&keep)
                .filter(|x| *x.1)
                .map(|x| x.0.clone())
                .collect()
        };
        self.numeric_from -= keep[..self.numeric_from.min(keep.len())]
            .iter()
            .filter(|k| !**k)
            .count();
        self.head = pick(&self.head);
        self.rows = self.rows.iter().map(|r| pick(r)).collect();
    }

    /// A table with this header.
    pub fn new(head: &[&str], numeric_from: usize) -> Table {
        Table {
            head: head.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            numeric_from,
        }
    }

    /// As HTML (cells escaped; long text cells shortened, full on hover).
    pub fn html(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let mut o = String::from("<div class=\"tw\"><table><thead><tr>");
        for (i, h) in self.head.iter().enumerate() {
            let cls = if i >= self.numeric_from {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(o, "<th{cls}>{}</th>", esc(h));
        }
        o.push_str("</tr></thead><tbody>\n");
        for r in &self.rows {
            o.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                if i >= self.numeric_from {
                    let _ = write!(o, "<td class=\"num\">{}</td>", esc(c));
                } else {
                    let _ = write!(o, "<td>{}</td>", abbr(c, 48));
                }
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</tbody></table></div>\n");
        o
    }

    /// As a Markdown table (cells made safe).
    pub fn md(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let cell = crate::md_cell;
        let mut o = String::from("|");
        for h in &self.head {
            let _ = write!(o, " {} |", cell(h));
        }
        o.push_str("\n|");
        for i in 0..self.head.len() {
            o.push_str(if i >= self.numeric_from {
                "--:|"
            } else {
                "---|"
            });
        }
        o.push('\n');
        for r in &self.rows {
            o.push('|');
            for c in r {
                let _ = write!(o, " {} |", cell(c));
            }
            o.push('\n');
        }
        o
    }
}

/// An HTML table: header cells and rows; columns from `numeric_from` on
/// are right-aligned numbers. Cells are escaped here.
pub fn table(head: &[&str], rows: &[Vec<String>], numeric_from: usize) -> String {
    Table {
        rows: rows.to_vec(),
        ..Table::new(head, numeric_from)
    }
    .html()
}

/// The unit a test's rate is measured in over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// Bits per second (stream).
    Bps,
    /// Transactions per second (rr, crr).
    Tps,
}

impl Rate {
    /// The rate of a test's workload.
    pub fn of(r: &TestResult) -> Rate {
        match Metric::of(r) {
            Metric::ThroughputBps => Rate::Bps,
            Metric::TransactionsPerS => Rate::Tps,
        }
    }

    fn human(self, v: f64) -> String {
        match self {
            Rate::Bps => human_bps(v),
            Rate::Tps => crate::human_tps(v),
        }
    }

    fn total(self, s: &IntervalSample) -> f64 {
        match self {
            Rate::Bps => s.bps,
            Rate::Tps => s.tps,
        }
    }

    fn flow(self, s: &IntervalSample, id: usize) -> Option<f64> {
        match self {
            Rate::Bps => s.flow_bps.get(id).copied(),
            Rate::Tps => s.flow_tps.get(id).copied().or_else(|| {
                // No transaction in the interval: a flow's rate was zero.
                (!s.flow_bps.is_empty()).then_some(0.0)
            }),
        }
    }
}

/// The middle of an interval, seconds into the window.
/// One point per interval: the summed rate of the given flows, at the
/// interval's middle (a path's or a direction's line).
fn summed<'a>(
    r: &TestResult,
    rate: Rate,
    flows: impl Iterator<Item = &'a &'a wirespeed_types::result::FlowResult> + Clone,
) -> Vec<(f64, f64)> {
    r.intervals
        .iter()
        .map(|x| {
            let v: f64 = flows
                .clone()
                .filter_map(|f| rate.flow(x, f.id as usize))
                .sum();
            (mid(x), finite(v))
        })
        .collect()
}

fn mid(s: &IntervalSample) -> f64 {
    s.t_s - s.len_s / 2.0
}

/// The time span of every interval of these single-test series.
pub fn time_range(series: &[Series]) -> Option<(f64, f64)> {
    let all: Vec<&IntervalSample> = series
        .iter()
        .filter(|s| !s.is_sweep())
        .flat_map(|s| &s.run().intervals)
        .collect();
    if all.is_empty() {
        return None;
    }
    let lo = all
        .iter()
        .map(|s| s.t_s - s.len_s)
        .fold(f64::INFINITY, f64::min);
    let hi = all.iter().map(|s| s.t_s).fold(f64::NEG_INFINITY, f64::max);
    Some((finite(lo.min(0.0)), finite(hi.max(lo + 0.1))))
}

fn time_axis(range: (f64, f64)) -> Axis {
    Axis::linear_exact(range.0, range.1, &secs_ticks).titled("seconds into the measured window")
}

const TOTAL_W: f64 = 3.0;
const FLOW_W: f64 = 1.4;

/// Throughput (or transactions) over time, with latency over the same
/// time axis beneath it when the tests measured latency: flent's RRUL
/// picture. One test: its total, each path and each flow; several: one
/// total per test, in the series' colours (`colors[i]` for `series[i]`).
pub fn over_time(series: &[Series], rate: Rate, colors: &[usize]) -> Option<Figure> {
    let picked: Vec<(usize, &Series)> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            !s.is_sweep() && !s.run().intervals.is_empty() && Rate::of(s.run()) == rate
        })
        .collect();
    if picked.is_empty() {
        return None;
    }
    let range = time_range(&picked.iter().map(|x| x.1.clone()).collect::<Vec<_>>())?;
    let single = picked.len() == 1 && series.len() == 1;
    let (lines, ymax) = rate_lines(&picked, rate, colors, single);
    let fmt_y: Box<dyn Fn(f64) -> String> = match rate {
        Rate::Bps => Box::new(bps_ticks(ymax)),
        Rate::Tps => Box::new(count_ticks),
    };
    let hover = |x: f64, y: f64| format!("{} at {} s", rate.human(y), trim_num(x, 2));
    let warm = picked.iter().any(|(_, s)| s.run().spec.warmup_s > 0.0);
    let top = LineChart {
        kind: "over-time",
        title: match rate {
            Rate::Bps => "throughput over time".into(),
            Rate::Tps => "transactions per second over time".into(),
        },
        x: time_axis(range),
        y: Axis::from_zero(ymax, &*fmt_y).titled(match rate {
            Rate::Bps => "goodput",
            Rate::Tps => "transactions/s",
        }),
        lines,
        shade_before: warm.then(|| (0.0, "warm-up".to_string())),
        height: 270.0,
        hover: &hover,
    };
    let mut panels = vec![format!("{}{}", top.legend(), top.svg())];
    let lat = latency_over_time(&picked, range, colors, single);
    if let Some((svg, leg)) = &lat {
        panels.push(format!("{leg}{svg}"));
    }
    let what = match rate {
        Rate::Bps => "Throughput",
        Rate::Tps => "Transactions per second",
    };
    let title = if lat.is_some() {
        format!("{what} and latency over time")
    } else {
        format!("{what} over time")
    };
    Some(Figure {
        title,
        quote: over_time_quote(&picked, rate, single),
        legend: String::new(),
        panels,
        note: over_time_note(&picked, warm, lat.is_some()),
        table: String::new(),
    })
}

/// The rate lines of [`over_time`]: each test's total, and for a single
/// test its paths, directions and flows; with the highest rate drawn.
fn rate_lines(
    picked: &[(usize, &Series)],
    rate: Rate,
    colors: &[usize],
    single: bool,
) -> (Vec<Line>, f64) {
    let mut lines = Vec::new();
    let max_rate = |ss: &[IntervalSample]| ss.iter().map(|s| rate.total(s)).fold(0.0, f64::max);
    let mut ymax: f64 = 0.0;
    for (i, s) in picked {
        let r = s.run();
        ymax = ymax.max(max_rate(&r.intervals));
        let total: Vec<(f64, f64)> = r
            .intervals
            .iter()
            .map(|x| (mid(x), finite(rate.total(x))))
            .collect();
        let name = if single {
            "total".to_string()
        } else {
            s.label.clone()
        };
        lines.push(Line::new(name, color(colors[*i]), total).width(TOTAL_W));
        if single {
            detail_lines(r, rate, &mut lines);
        }
    }
    (lines, ymax)
}

/// A single test's dashed lines per path and per direction, and a line
/// per flow (pale and out of the legend past 8 flows).
fn detail_lines(r: &TestResult, rate: Rate, lines: &mut Vec<Line>) {
    let flows: Vec<&wirespeed_types::result::FlowResult> = main_flows(r).collect();
    let has_flow_data = r.intervals.iter().any(|x| !x.flow_bps.is_empty());
    if r.paths.len() > 1 && has_flow_data {
        for p in &r.paths {
            let pts = summed(r, rate, flows.iter().filter(|f| f.path == p.index));
            lines.push(
                Line::new(
                    format!("path {} ({})", p.index, p.label),
                    color(1 + p.index as usize),
                    pts,
                )
                .dashed()
                .width(2.0),
            );
        }
    }
    let both_ways = [FlowKind::Forward, FlowKind::Reverse]
        .iter()
        .all(|k| flows.iter().any(|f| f.kind == Some(*k)));
    if both_ways && has_flow_data {
        for (k, name, c) in [
            (FlowKind::Forward, "client → server", "#1b5e20"),
            (FlowKind::Reverse, "server → client", "#8e2a8c"),
        ] {
            let pts = summed(r, rate, flows.iter().filter(|f| f.kind == Some(k)));
            lines.push(Line::new(name, c, pts).dashed().width(2.0));
        }
    }
    if flows.len() > 1 && has_flow_data {
        let many = flows.len() > 8;
        for (k, f) in flows.iter().enumerate() {
            let pts: Vec<(f64, f64)> = r
                .intervals
                .iter()
                .filter_map(|x| Some((mid(x), finite(rate.flow(x, f.id as usize)?))))
                .collect();
            let c = if many {
                "#8fb0dc"
            } else {
                color(1 + r.paths.len().max(1) * usize::from(r.paths.len() > 1) + k)
            };
            let mut l = Line::new(flow_name(f), c, pts).width(FLOW_W);
            l.legend = !many;
            lines.push(l);
        }
        if many {
            lines.push(Line {
                legend: true,
                points: vec![],
                ..Line::new(
                    format!("each of the {} flows", flows.len()),
                    "#8fb0dc",
                    vec![],
                )
            });
        }
    }
}

/// The quote of [`over_time`]: a single test's rate and latency, or the
/// highest of several.
fn over_time_quote(picked: &[(usize, &Series)], rate: Rate, single: bool) -> String {
    if single {
        let r = picked[0].1.run();
        let mut q = format!(
            "{} over the {} s window",
            rate.human(headline(r)),
            trim_num(r.window_s, 1)
        );
        if let Some(l) = latency_of(r) {
            let _ = write!(
                q,
                "; {} p50 {}, p99 {}",
                if is_probe_latency(r) {
                    "latency under load"
                } else {
                    "latency"
                },
                human_us(l.p50_us),
                human_us(l.p99_us)
            );
        }
        q
    } else {
        let best = picked
            .iter()
            .max_by(|a, b| headline(a.1.run()).total_cmp(&headline(b.1.run())))
            .map(|x| x.1);
        best.map_or(String::new(), |b| {
            format!("highest: {} {}", b.label, rate.human(headline(b.run())))
        })
    }
}

/// The note under [`over_time`]: what a point is, the warm-up's shade
/// (`warm`) and, with a latency panel (`lat`), what it shows.
fn over_time_note(picked: &[(usize, &Series)], warm: bool, lat: bool) -> String {
    let r0 = picked[0].1.run();
    let len = if r0.spec.interval_s > 0.0 {
        r0.spec.interval_s
    } else {
        r0.intervals.first().map_or(0.0, |x| x.len_s)
    };
    let mut note = format!(
        "Each point is one {} s interval as the client counted it (sent plus received), drawn at the interval's middle",
        trim_num(len, 2)
    );
    if warm {
        note.push_str("; the grey part is the warm-up, not counted in the results");
    }
    if lat {
        let probe = picked.iter().any(|(_, s)| is_probe_latency(s.run()));
        note.push_str(if probe {
            ". Below: latency of the probe (1-byte request/response on its own flow) in each interval, p50 solid, p99 dashed"
        } else {
            ". Below: latency of each interval's transactions, p50 solid, p99 dashed"
        });
    }
    note.push('.');
    note
}

fn flow_name(f: &wirespeed_types::result::FlowResult) -> String {
    match f.kind {
        Some(FlowKind::Reverse) => format!("flow {} (reverse)", f.id),
        _ => format!("flow {}", f.id),
    }
}

/// The latency panel under a time series: p50 and p99 per interval.
fn latency_over_time(
    picked: &[(usize, &Series)],
    range: (f64, f64),
    colors: &[usize],
    single: bool,
) -> Option<(String, String)> {
    let mut lines = Vec::new();
    let mut ymax: f64 = 0.0;
    let mut ymin = f64::INFINITY;
    for (i, s) in picked {
        let iv: Vec<(f64, f64, f64)> = s
            .run()
            .intervals
            .iter()
            .filter_map(|x| interval_latency(x).map(|l| (mid(x), l.p50_us, l.p99_us)))
            .collect();
        if iv.is_empty() {
            continue;
        }
        ymax = iv.iter().map(|x| x.2).fold(ymax, f64::max);
        ymin = iv
            .iter()
            .map(|x| x.1)
            .filter(|v| *v > 0.0)
            .fold(ymin, f64::min);
        let (c50, c99) = if single {
            (color(0), color(3))
        } else {
            (color(colors[*i]), color(colors[*i]))
        };
        let name = |p: &str| {
            if single {
                p.to_string()
            } else {
                format!("{} {p}", s.label)
            }
        };
        lines.push(Line::new(
            name("p50"),
            c50,
            iv.iter().map(|x| (x.0, x.1)).collect(),
        ));
        lines.push(Line::new(name("p99"), c99, iv.iter().map(|x| (x.0, x.2)).collect()).dashed());
    }
    if lines.is_empty() {
        return None;
    }
    let hover = |x: f64, y: f64| format!("{} at {} s", human_us(y), trim_num(x, 2));
    // A tail far above the median would flatten the median on a linear axis.
    let log = ymin.is_finite() && ymax / ymin > 20.0;
    let c = LineChart {
        kind: "latency-over-time",
        title: "latency over time".into(),
        x: time_axis(range),
        y: if log {
            Axis::log10(ymin, ymax, &tick_us).titled("latency (log scale)")
        } else {
            Axis::from_zero(ymax, &tick_us).titled("latency")
        },
        lines,
        shade_before: Some((0.0, String::new())),
        height: 200.0,
        hover: &hover,
    };
    Some((c.svg(), c.legend()))
}

const PCT_NAMES: [&str; 6] = ["min", "p50", "p90", "p99", "p99.9", "max"];

fn pct_values(l: &wirespeed_types::result::LatencySummary) -> [f64; 6] {
    [l.min_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us]
}

/// Latency percentiles on a log axis, one line per test (per size in a
/// sweep), with the percentile table.
pub fn percentiles(series: &[Series], colors: &[usize]) -> Option<Figure> {
    let rows = latency_lines(series, colors);
    let one_sweep = series.len() == 1 && series[0].is_sweep();
    if rows.is_empty() {
        return None;
    }
    percentile_figure(&rows, one_sweep)
}

/// The tests with latency figures, each with its name and colour index:
/// one per test (per size in a sweep).
pub fn latency_lines<'a>(
    series: &[Series<'a>],
    colors: &[usize],
) -> Vec<(String, usize, &'a TestResult)> {
    let mut rows: Vec<(String, usize, &TestResult)> = Vec::new();
    let one_sweep = series.len() == 1 && series[0].is_sweep();
    for (i, s) in series.iter().enumerate() {
        if s.is_sweep() && !one_sweep {
            // Compared with others, a sweep's latency is in its own chart.
            continue;
        }
        for (k, p) in s.points.iter().enumerate() {
            if latency_of(p.run).is_none() {
                continue;
            }
            let name = match (&p.x, one_sweep, series.len()) {
                (Some(x), true, _) => x.0.clone(),
                (Some(x), false, _) => format!("{} @ {}", s.label, x.0),
                (None, _, 1) => describe(p.run),
                (None, _, _) => s.label.clone(),
            };
            let c = if one_sweep {
                k
            } else {
                colors.get(i).copied().unwrap_or(i)
            };
            rows.push((name, c, p.run));
        }
    }
    rows
}

/// The percentile table of these tests.
pub fn percentile_table(rows: &[(String, usize, &TestResult)]) -> Table {
    let mut t = Table::new(
        &[
            "test",
            "transactions",
            "mean",
            "min",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
        ],
        1,
    );
    t.rows = rows
        .iter()
        .filter_map(|(name, _, r)| {
            let l = latency_of(r)?;
            let mut row = vec![name.clone(), human_count(l.count as f64)];
            row.push(human_us(l.mean_us));
            row.extend(pct_values(l).iter().map(|v| human_us(*v)));
            Some(row)
        })
        .collect();
    t
}

fn percentile_figure(rows: &[(String, usize, &TestResult)], one_sweep: bool) -> Option<Figure> {
    let mut lo = f64::INFINITY;
    let mut hi: f64 = 0.0;
    let mut lines = Vec::new();
    for (name, c, r) in rows {
        let l = latency_of(r)?;
        let pts: Vec<(f64, f64)> = pct_values(l)
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0.0 && v.is_finite())
            .map(|(k, v)| (*v, k as f64))
            .collect();
        for p in &pts {
            lo = lo.min(p.0);
            hi = hi.max(p.0);
        }
        lines.push(Line::new(name.clone(), color(*c), pts));
    }
    let ticks: Vec<(f64, String)> = PCT_NAMES
        .iter()
        .enumerate()
        .map(|(k, n)| (k as f64, n.to_string()))
        .collect();
    let hover = |x: f64, y: f64| {
        format!(
            "{} {}",
            PCT_NAMES.get(y as usize).copied().unwrap_or(""),
            human_us(x)
        )
    };
    let chart = LineChart {
        kind: "percentiles",
        title: "latency percentiles".into(),
        x: Axis::log10(lo, hi, &tick_us).titled("latency (log scale)"),
        y: Axis::explicit(ticks, false),
        lines,
        shade_before: None,
        height: 250.0,
        hover: &hover,
    };
    let quote = match rows {
        [(_, _, r)] => {
            let l = latency_of(r)?;
            format!(
                "p50 {}, p99 {}, max {}",
                human_us(l.p50_us),
                human_us(l.p99_us),
                human_us(l.max_us)
            )
        }
        _ if one_sweep => {
            let (a, b) = (rows.first()?, rows.last()?);
            format!(
                "p99 {} at {} to {} at {}",
                human_us(latency_of(a.2)?.p99_us),
                a.0,
                human_us(latency_of(b.2)?.p99_us),
                b.0
            )
        }
        _ => {
            let best = rows.iter().min_by(|a, b| {
                let p = |r: &TestResult| latency_of(r).map_or(f64::INFINITY, |l| l.p99_us);
                p(a.2).total_cmp(&p(b.2))
            })?;
            format!(
                "lowest p99: {} {}",
                best.0,
                human_us(latency_of(best.2)?.p99_us)
            )
        }
    };
    let probe = rows.iter().all(|r| is_probe_latency(r.2));
    Some(Figure {
        title: if probe {
            "Latency under load: percentiles".into()
        } else {
            "Latency percentiles".into()
        },
        quote,
        legend: if rows.len() > 1 {
            chart.legend()
        } else {
            String::new()
        },
        panels: vec![chart.svg()],
        note: "Each line runs from the fastest transaction (min) through the median and the tail percentiles to the slowest (max); latency on a log scale, so a line further right is slower.".into(),
        table: percentile_table(rows).html(),
    })
}

/// Goodput (or transactions/s) per flow with TCP_INFO, and fairness.
pub fn flows(r: &TestResult) -> Option<Figure> {
    let main: Vec<&wirespeed_types::result::FlowResult> = main_flows(r).collect();
    if main.is_empty() {
        return None;
    }
    let rate = Rate::of(r);
    let value = |f: &wirespeed_types::result::FlowResult| match rate {
        Rate::Bps => finite(f.throughput_bps),
        Rate::Tps => finite(f.transactions as f64 / r.window_s),
    };
    let bars: Vec<Bar> = main
        .iter()
        .map(|f| Bar {
            label: if r.paths.len() > 1 {
                format!("{} · path {}", flow_name(f), f.path)
            } else {
                flow_name(f)
            },
            value: value(f),
            note: f.tcp_info.as_ref().map_or(String::new(), |i| {
                format!(
                    "retr {} · rtt {} · cwnd {}",
                    i.retransmits,
                    human_us(i.rtt_us as f64),
                    i.cwnd
                )
            }),
            color: color(0).into(),
            ..Bar::default()
        })
        .collect();
    let max = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let tick: Box<dyn Fn(f64) -> String> = match rate {
        Rate::Bps => Box::new(bps_ticks(max)),
        Rate::Tps => Box::new(count_ticks),
    };
    let fmt = move |v: f64| rate.human(v);
    let svg = hbar_chart("flows", "per flow", &bars, &fmt, &*tick);
    let quote = if main.len() > 1 {
        format!(
            "fairness {:.3} over {} (Jain's index, 1 = equal shares)",
            finite(r.fairness),
            plural(main.len() as u64, "flow", "flows")
        )
    } else {
        format!("one flow: {}", rate.human(value(main[0])))
    };
    Some(Figure {
        title: match rate {
            Rate::Bps => "Goodput per flow, with TCP_INFO".into(),
            Rate::Tps => "Transactions per second per flow, with TCP_INFO".into(),
        },
        quote,
        legend: String::new(),
        panels: vec![svg],
        note: "TCP_INFO is read at the sender at the end of the window: retransmits over the flow's life, smoothed RTT, congestion window in segments.".into(),
        table: flow_table(r).html(),
    })
}

/// Every flow (the probe too) with its TCP_INFO.
pub fn flow_table(r: &TestResult) -> Table {
    let mut t = Table::new(
        &[
            "flow",
            "kind",
            "path",
            "thread",
            "goodput",
            "transactions",
            "retransmits",
            "rtt",
            "min rtt",
            "cwnd",
            "mss",
            "delivery rate",
            "rwnd-limited",
            "sndbuf-limited",
        ],
        2,
    );
    t.rows = r
        .flows
        .iter()
        .map(|f| {
            let i = f.tcp_info.clone().unwrap_or_default();
            let has = f.tcp_info.is_some();
            let tc = |v: String| if has { v } else { "-".into() };
            vec![
                flow_name(f),
                f.kind.map_or("-", FlowKind::name).into(),
                f.path.to_string(),
                f.thread.to_string(),
                human_bps(f.throughput_bps),
                human_count(f.transactions as f64),
                tc(i.retransmits.to_string()),
                tc(human_us(i.rtt_us as f64)),
                tc(human_us(i.min_rtt_us as f64)),
                tc(i.cwnd.to_string()),
                tc(i.mss.to_string()),
                tc(human_bps(i.delivery_rate_bps as f64)),
                tc(human_us(i.rwnd_limited_us as f64)),
                tc(human_us(i.sndbuf_limited_us as f64)),
            ]
        })
        .collect();
    // Leave out columns that say nothing here: one path, one thread, no
    // transactions.
    for (col, keep) in [
        (2, r.paths.len() > 1),
        (3, r.flows.iter().any(|f| f.thread != 0)),
        (5, r.flows.iter().any(|f| f.transactions > 0)),
    ] {
        if !keep {
            for row in &mut t.rows {
                row[col] = "-".into();
            }
        }
    }
    t.drop_empty_columns();
    t
}

/// Goodput per path (NIC pair), when a test used several.
pub fn paths(r: &TestResult) -> Option<Figure> {
    if r.paths.len() < 2 {
        return None;
    }
    let bars: Vec<Bar> = r
        .paths
        .iter()
        .map(|p| Bar {
            label: format!("path {} ({})", p.index, p.label),
            value: finite(p.throughput_bps),
            note: format!(
                "{} · {}",
                human_pct(p.share * 100.0),
                plural(p.flows as u64, "flow", "flows")
            ),
            color: color(1 + p.index as usize).into(),
            ..Bar::default()
        })
        .collect();
    let max = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let tick = bps_ticks(max);
    Some(Figure {
        title: "Goodput per path".into(),
        quote: format!(
            "balance {:.2} (weakest path over strongest, 1 = even)",
            finite(r.path_balance)
        ),
        panels: vec![hbar_chart("paths", "per path", &bars, &human_bps, &tick)],
        ..Figure::default()
    })
}

/// CPU per side: the process (% of one core) and the busiest core, with
/// every core and thread in the table (one test) .
pub fn cpu(series: &[Series], single: bool) -> Option<Figure> {
    let picked: Vec<&Series> = series.iter().filter(|s| !s.is_sweep()).collect();
    if picked.is_empty() {
        return None;
    }
    let mut groups = Vec::new();
    for s in &picked {
        let r = s.run();
        for (side, c) in [("client", &r.local_cpu), ("server", &r.remote_cpu)] {
            let name = if single {
                side.to_string()
            } else {
                format!("{} {side}", s.label)
            };
            groups.push((
                name,
                vec![Some(finite(c.total_pct)), Some(finite(c.max_core_pct))],
            ));
        }
    }
    if groups
        .iter()
        .all(|g| g.1.iter().all(|v| v.unwrap_or(0.0) <= 0.0))
    {
        return None;
    }
    let series_names = vec![
        "wirespeed process (% of one core)".to_string(),
        "busiest core (% busy)".to_string(),
    ];
    let svg = grouped_chart(
        "cpu",
        "CPU per side",
        &series_names,
        &groups,
        &|v| human_pct(v),
        &pct_ticks,
    );
    let quote = if single {
        let r = picked[0].run();
        format!(
            "client {} of one core (busiest core {}), server {} (busiest core {})",
            human_pct(r.local_cpu.total_pct),
            human_pct(r.local_cpu.max_core_pct),
            human_pct(r.remote_cpu.total_pct),
            human_pct(r.remote_cpu.max_core_pct)
        )
    } else {
        let by = |a: &&&Series, b: &&&Series| {
            a.run()
                .local_cpu
                .total_pct
                .total_cmp(&b.run().local_cpu.total_pct)
        };
        let lo = picked.iter().min_by(by)?;
        let hi = picked.iter().max_by(by)?;
        format!(
            "client CPU from {} ({}) to {} ({}) of one core",
            human_pct(lo.run().local_cpu.total_pct),
            lo.label,
            human_pct(hi.run().local_cpu.total_pct),
            hi.label
        )
    };
    Some(Figure {
        title: "CPU per side".into(),
        quote,
        legend: series_legend(&series_names),
        panels: vec![svg],
        note: "The process figure is user plus system time of wirespeed as % of one core (200% = two cores busy); the busiest core is the machine's most loaded core over the window (every process, from /proc/stat).".into(),
        table: cpu_table(&picked, single).html(),
    })
}

/// CPU of both sides of each single test: process, user, system, busiest
/// core, every core and every worker thread.
pub fn cpu_table(picked: &[&Series], single: bool) -> Table {
    let list = |v: &[f64]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.iter()
                .map(|x| trim_num(*x, 0))
                .collect::<Vec<_>>()
                .join(" · ")
        }
    };
    let rows: Vec<Vec<String>> = picked
        .iter()
        .flat_map(|s| {
            let r = s.run();
            [("client", &r.local_cpu), ("server", &r.remote_cpu)]
                .into_iter()
                .map(|(side, c)| {
                    vec![
                        if single {
                            side.to_string()
                        } else {
                            format!("{} {side}", s.label)
                        },
                        human_pct(c.total_pct),
                        human_pct(c.user_pct),
                        human_pct(c.system_pct),
                        human_pct(c.max_core_pct),
                        list(&c.per_core_pct),
                        list(&c.per_thread_pct),
                    ]
                })
                .collect::<Vec<_>>()
        })
        .collect();
    Table {
        rows,
        ..Table::new(
            &[
                "side",
                "process",
                "user",
                "system",
                "busiest core",
                "each core, % busy",
                "each worker thread, % of a core",
            ],
            1,
        )
    }
}

/// The x axis of sweep charts: a tick at every swept value (log scale
/// when they span a factor of 8 or more).
fn sweep_axis(sweeps: &[&Series]) -> Axis {
    let mut ticks: Vec<(f64, String)> = Vec::new();
    for s in sweeps {
        for p in &s.points {
            if let Some((l, v)) = &p.x
                && v.is_finite()
                && !ticks.iter().any(|t| t.0 == *v)
            {
                ticks.push((*v, l.clone()));
            }
        }
    }
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let lo = ticks.first().map_or(1.0, |t| t.0);
    let hi = ticks.last().map_or(1.0, |t| t.0);
    let log = lo > 0.0 && hi / lo >= 8.0;
    let title = sweeps.first().map_or("", |s| s.x_title.as_str());
    let title = if log {
        format!("{title} (log scale)")
    } else {
        title.to_string()
    };
    Axis::explicit(ticks, log).titled(&title)
}

fn sweep_points<'a>(s: &'a Series) -> impl Iterator<Item = (f64, &'a SeriesPoint<'a>)> {
    s.points
        .iter()
        .filter_map(|p| p.x.as_ref().filter(|x| x.1.is_finite()).map(|x| (x.1, p)))
}

/// Whether a sweep's x axis is a size (request size, message size), not
/// a count such as loaders or flows.
pub fn is_size(x_title: &str) -> bool {
    x_title.contains("size")
}

/// What one row of a sweep's table is: `size`, or `value of loaders`.
pub fn row_word(x_title: &str) -> String {
    if is_size(x_title) || x_title.is_empty() {
        "size".into()
    } else {
        format!("value of {x_title}")
    }
}

/// The figures of size sweeps: the rate curve (transactions/s vs size, the
/// IOPS-like curve), goodput vs size, and p50/p99 latency vs size.
pub fn sweep(series: &[Series], colors: &[usize]) -> Vec<Figure> {
    let sweeps: Vec<(usize, &Series)> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_sweep())
        .collect();
    if sweeps.is_empty() {
        return Vec::new();
    }
    // A sweep's own page: one colour, quotes of its end points.
    let single = series.len() == 1;
    let metric = Metric::of(sweeps[0].1.run());
    let figures: Vec<(&str, Metric)> = match metric {
        Metric::TransactionsPerS => vec![
            ("rate", Metric::TransactionsPerS),
            ("goodput", Metric::ThroughputBps),
        ],
        Metric::ThroughputBps => vec![("goodput", Metric::ThroughputBps)],
    };
    let mut out: Vec<Figure> = figures
        .into_iter()
        .map(|(kind, m)| sweep_metric(&sweeps, colors, single, kind, m))
        .collect();
    out.extend(sweep_latency(&sweeps, colors, single));
    out
}

/// One sweep figure: metric `m` against the swept value, a line per
/// sweep; `kind` is `rate` or `goodput`.
fn sweep_metric(
    sweeps: &[(usize, &Series)],
    colors: &[usize],
    single: bool,
    kind: &str,
    m: Metric,
) -> Figure {
    let only: Vec<&Series> = sweeps.iter().map(|x| x.1).collect();
    let mut lines = Vec::new();
    let mut ymax: f64 = 0.0;
    for (i, s) in sweeps {
        let pts: Vec<(f64, f64)> = sweep_points(s)
            .map(|(x, p)| (x, finite(m.value(p.run))))
            .collect();
        ymax = pts.iter().map(|p| p.1).fold(ymax, f64::max);
        let c = if single { 0 } else { colors[*i] };
        lines.push(Line::new(s.label.clone(), color(c), pts).width(2.5));
    }
    let fmt: Box<dyn Fn(f64) -> String> = match m {
        Metric::ThroughputBps => Box::new(bps_ticks(ymax)),
        Metric::TransactionsPerS => Box::new(count_ticks),
    };
    let label_of = |x: f64| {
        sweeps
            .iter()
            .flat_map(|s| &s.1.points)
            .find_map(|p| p.x.as_ref().filter(|v| v.1 == x).map(|v| v.0.clone()))
            .unwrap_or_default()
    };
    let hover = |x: f64, y: f64| format!("{} at {}", m.human(y), label_of(x));
    let chart = LineChart {
        kind: if kind == "rate" {
            "sweep-rate"
        } else {
            "sweep-goodput"
        },
        title: format!("{} vs {}", m.label(), only[0].x_title),
        x: sweep_axis(&only),
        y: Axis::from_zero(ymax, &*fmt).titled(match m {
            Metric::ThroughputBps => "goodput",
            Metric::TransactionsPerS => "transactions/s",
        }),
        lines,
        shade_before: None,
        height: 270.0,
        hover: &hover,
    };
    let quote = if single {
        let pts: Vec<(f64, &SeriesPoint)> = sweep_points(only[0]).collect();
        end_points_quote(&pts, "", |p| m.human(m.value(p.run)))
    } else {
        String::new()
    };
    let title = match (kind, m) {
        ("rate", _) => format!("Transactions per second vs {}", only[0].x_title),
        _ => format!("Goodput vs {}", only[0].x_title),
    };
    Figure {
        title,
        quote,
        legend: if single {
            String::new()
        } else {
            chart.legend()
        },
        panels: vec![chart.svg()],
        note: if kind == "rate" && is_size(&only[0].x_title) {
            "One point per size: the IOPS-like curve. Each transaction is a request of that size and a response of its size.".into()
        } else if kind == "rate" {
            format!("One point per value of {}.", only[0].x_title)
        } else {
            "Goodput counts both directions' payload (request plus response bytes).".into()
        },
        table: String::new(),
    }
}

/// "`prefix`A at x1 to B at x2": `value` at a sweep's first and last
/// points; empty without points.
fn end_points_quote(
    pts: &[(f64, &SeriesPoint)],
    prefix: &str,
    value: impl Fn(&SeriesPoint) -> String,
) -> String {
    match (pts.first(), pts.last()) {
        (Some(a), Some(b)) => format!(
            "{prefix}{} at {} to {} at {}",
            value(a.1),
            a.1.x.as_ref().map_or("", |x| x.0.as_str()),
            value(b.1),
            b.1.x.as_ref().map_or("", |x| x.0.as_str())
        ),
        _ => String::new(),
    }
}

/// Latency vs size, p50 and p99, log scale; None when no sweep measured
/// latency.
fn sweep_latency(sweeps: &[(usize, &Series)], colors: &[usize], single: bool) -> Option<Figure> {
    let only: Vec<&Series> = sweeps.iter().map(|x| x.1).collect();
    let (lines, lo, hi) = sweep_latency_lines(sweeps, colors, single);
    if !lines.iter().any(|l| !l.points.is_empty()) {
        return None;
    }
    let hover = |x: f64, y: f64| format!("{} at {}", human_us(y), units::human_size(x as u64));
    let chart = LineChart {
        kind: "sweep-latency",
        title: "latency vs size".into(),
        x: sweep_axis(&only),
        y: Axis::log10(lo, hi, &tick_us).titled("latency (log scale)"),
        lines,
        shade_before: None,
        height: 270.0,
        hover: &hover,
    };
    let quote = if single {
        let pts: Vec<(f64, &SeriesPoint)> = sweep_points(only[0])
            .filter(|p| latency_of(p.1.run).is_some())
            .collect();
        end_points_quote(&pts, "p99 ", |p| {
            human_us(latency_of(p.run).map_or(0.0, |l| l.p99_us))
        })
    } else {
        String::new()
    };
    Some(Figure {
        title: format!("Latency vs {}: p50 and p99", only[0].x_title),
        quote,
        legend: chart.legend(),
        panels: vec![chart.svg()],
        note: "p50 solid, p99 dashed; latency on a log scale.".into(),
        table: String::new(),
    })
}

/// A p50 and a p99 line per sweep, and the lowest and highest latency
/// drawn.
fn sweep_latency_lines(
    sweeps: &[(usize, &Series)],
    colors: &[usize],
    single: bool,
) -> (Vec<Line>, f64, f64) {
    let mut lines = Vec::new();
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for (i, s) in sweeps {
        let c = if single { 0 } else { colors[*i] };
        for (name, pick, dash) in [
            (
                "p50",
                (|l: &wirespeed_types::result::LatencySummary| l.p50_us) as fn(&_) -> f64,
                false,
            ),
            ("p99", |l| l.p99_us, true),
        ] {
            let pts: Vec<(f64, f64)> = sweep_points(s)
                .filter_map(|(x, p)| latency_of(p.run).map(|l| (x, pick(l))))
                .filter(|p| p.1 > 0.0 && p.1.is_finite())
                .collect();
            for p in &pts {
                lo = lo.min(p.1);
                hi = hi.max(p.1);
            }
            let label = if single {
                name.to_string()
            } else {
                format!("{} {name}", s.label)
            };
            let cc = if single && dash { color(3) } else { color(c) };
            let mut l = Line::new(label, cc, pts).width(2.5);
            l.dash = dash;
            lines.push(l);
        }
    }
    (lines, lo, hi)
}

/// The table of sweeps: one row per size (per result and size when
/// several are compared), each with its own figures.
pub fn sweep_table(series: &[Series]) -> Table {
    let sweeps: Vec<&Series> = series.iter().filter(|s| s.is_sweep()).collect();
    let many = sweeps.len() > 1;
    let mut rows = Vec::new();
    for s in &sweeps {
        for p in &s.points {
            let r = p.run;
            let l = latency_of(r).cloned().unwrap_or_default();
            let mut row = Vec::new();
            if many {
                row.push(s.label.clone());
            }
            row.push(p.x.as_ref().map_or("-".into(), |x| x.0.clone()));
            row.push(human_size(r.spec.response_size as u64));
            row.push(human_count(r.transactions_per_s));
            row.push(human_bps(r.throughput_bps));
            for v in pct_values(&l) {
                row.push(human_us(v));
            }
            rows.push(row);
        }
    }
    let x_title = sweeps.first().map_or("size", |s| s.x_title.as_str());
    let mut head = Vec::new();
    if many {
        head.push("result");
    }
    let first = if x_title == "request size" {
        "request"
    } else {
        x_title
    };
    head.extend([
        first, "response", "trans/s", "goodput", "min", "p50", "p90", "p99", "p99.9", "max",
    ]);
    Table {
        rows,
        ..Table::new(&head, if many { 2 } else { 1 })
    }
}

/// The headline figure of each compared single test, as bars.
pub fn headline_bars(series: &[Series], colors: &[usize], metric: Metric) -> Option<Figure> {
    let picked: Vec<(usize, &Series)> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.is_sweep() && Metric::of(s.run()) == metric)
        .collect();
    if picked.len() < 2 {
        return None;
    }
    let bars: Vec<Bar> = picked
        .iter()
        .map(|(i, s)| Bar {
            label: s.label.clone(),
            value: headline(s.run()),
            note: latency_of(s.run())
                .map_or(String::new(), |l| format!("p99 {}", human_us(l.p99_us))),
            color: color(colors[*i]).into(),
            ..Bar::default()
        })
        .collect();
    let max = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let min = bars.iter().map(|b| b.value).fold(f64::INFINITY, f64::min);
    let best = bars.iter().max_by(|a, b| a.value.total_cmp(&b.value))?;
    let tick: Box<dyn Fn(f64) -> String> = match metric {
        Metric::ThroughputBps => Box::new(bps_ticks(max)),
        Metric::TransactionsPerS => Box::new(count_ticks),
    };
    let fmt = move |v: f64| metric.human(v);
    let gain = if min > 0.0 {
        format!(" ({:+.0}% over the lowest)", (max / min - 1.0) * 100.0)
    } else {
        String::new()
    };
    Some(Figure {
        title: match metric {
            Metric::ThroughputBps => "Goodput per result".into(),
            Metric::TransactionsPerS => "Transactions per second per result".into(),
        },
        quote: format!("highest: {} {}{gain}", best.label, metric.human(best.value)),
        legend: legend(&[]),
        panels: vec![hbar_chart("headline", "per result", &bars, &fmt, &*tick)],
        note: String::new(),
        table: String::new(),
    })
}

/// The interval samples of these single tests, one row per interval:
/// one test gives its total, paths, flows (up to 8) and latency; several
/// give each one's total side by side (rows by interval number).
pub fn interval_table(series: &[Series]) -> Option<Table> {
    let picked: Vec<&Series> = series
        .iter()
        .filter(|s| !s.is_sweep() && !s.run().intervals.is_empty())
        .collect();
    let first = picked.first()?;
    if picked.len() == 1 {
        let r = first.run();
        let rate = Rate::of(r);
        let flows: Vec<&wirespeed_types::result::FlowResult> = main_flows(r).collect();
        let has_flow = r.intervals.iter().any(|x| !x.flow_bps.is_empty());
        let show_flows = has_flow && flows.len() > 1 && flows.len() <= 8;
        let show_paths = has_flow && r.paths.len() > 1;
        let has_lat = r.intervals.iter().any(|x| interval_latency(x).is_some());
        let mut head = vec!["t (s)".to_string(), "total".to_string()];
        if show_paths {
            head.extend(r.paths.iter().map(|p| format!("path {}", p.index)));
        }
        if show_flows {
            head.extend(flows.iter().map(|f| flow_name(f)));
        }
        if has_lat {
            head.extend(["p50".to_string(), "p99".to_string()]);
        }
        let rows = r
            .intervals
            .iter()
            .map(|x| {
                let mut row = vec![
                    format!("{} - {}", trim_num(x.t_s - x.len_s, 2), trim_num(x.t_s, 2)),
                    rate.human(rate.total(x)),
                ];
                if show_paths {
                    for p in &r.paths {
                        let v: f64 = flows
                            .iter()
                            .filter(|f| f.path == p.index)
                            .filter_map(|f| rate.flow(x, f.id as usize))
                            .sum();
                        row.push(rate.human(v));
                    }
                }
                if show_flows {
                    for f in &flows {
                        row.push(
                            rate.flow(x, f.id as usize)
                                .map_or("-".into(), |v| rate.human(v)),
                        );
                    }
                }
                if has_lat {
                    let l = interval_latency(x);
                    row.push(l.map_or("-".into(), |l| human_us(l.p50_us)));
                    row.push(l.map_or("-".into(), |l| human_us(l.p99_us)));
                }
                row
            })
            .collect();
        return Some(Table {
            head,
            rows,
            numeric_from: 1,
        });
    }
    let n = picked.iter().map(|s| s.run().intervals.len()).max()?;
    let mut head = vec!["interval".to_string()];
    head.extend(picked.iter().map(|s| s.label.clone()));
    let rows = (0..n)
        .map(|i| {
            let mut row = vec![(i + 1).to_string()];
            for s in &picked {
                let r = s.run();
                row.push(
                    r.intervals
                        .get(i)
                        .map_or("-".into(), |x| Rate::of(r).human(Rate::of(r).total(x))),
                );
            }
            row
        })
        .collect();
    Some(Table {
        head,
        rows,
        numeric_from: 1,
    })
}

/// One row per compared result: what ran and its key figures.
pub fn compare_table(series: &[Series]) -> Table {
    let metrics: Vec<Metric> = series.iter().map(|s| Metric::of(s.run())).collect();
    let figure = if metrics.iter().all(|m| *m == Metric::ThroughputBps) {
        "goodput"
    } else if metrics.iter().all(|m| *m == Metric::TransactionsPerS) {
        "trans/s"
    } else {
        "goodput or trans/s"
    };
    let mut t = Table::new(
        &[
            "result",
            "test",
            figure,
            "p50",
            "p99",
            "client CPU",
            "server CPU",
            "retransmits",
            "fairness",
        ],
        2,
    );
    for s in series {
        let r = s.run();
        let l = latency_of(r).filter(|_| !s.is_sweep());
        let infos: Vec<_> = main_flows(r).filter_map(|f| f.tcp_info.as_ref()).collect();
        t.rows.push(vec![
            s.label.clone(),
            if s.is_sweep() {
                let x = |p: Option<&SeriesPoint>| p.and_then(|p| p.x.clone()).map(|x| x.0);
                format!(
                    "{} sweep over {} {}s ({} to {}), {}",
                    crate::source::workload_word(r.spec.workload),
                    s.points.len(),
                    s.x_title,
                    x(s.points.first()).unwrap_or_default(),
                    x(s.points.last()).unwrap_or_default(),
                    shape_short(r)
                )
            } else {
                format!("{}, {}", what(r), shape_short(r))
            },
            if s.is_sweep() {
                "-".into()
            } else {
                Metric::of(r).human(headline(r))
            },
            l.map_or("-".into(), |l| human_us(l.p50_us)),
            l.map_or("-".into(), |l| human_us(l.p99_us)),
            human_pct(r.local_cpu.total_pct),
            human_pct(r.remote_cpu.total_pct),
            if infos.is_empty() {
                "-".into()
            } else {
                infos.iter().map(|i| i.retransmits).sum::<u64>().to_string()
            },
            if main_flows(r).count() > 1 {
                format!("{:.3}", finite(r.fairness))
            } else {
                "-".into()
            },
        ]);
    }
    t.drop_empty_columns();
    t
}
