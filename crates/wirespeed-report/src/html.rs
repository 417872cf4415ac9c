//! The HTML report: one self-contained file (inline CSS, inline SVG drawn
//! here, one tiny inline self-check script; nothing fetched from a network).
//! Charts: a bar per configuration with the baseline marked, throughput or
//! transactions vs the sweep variable, latency percentiles per
//! configuration, per-NIC (per-path) bars, and the tuning ladder.
//!
//! Every chart is `<svg class="chart" data-chart=KIND data-points=N>` and
//! draws N elements of class `mark`; the self-check script counts them and
//! writes the result into `#selfcheck`, so a headless browser can prove
//! that every chart has data.

use crate::experiment::{CellResult, ExperimentResults, Metric, Mode, pct_text};
use crate::{human_bps, human_count, human_us};
use std::fmt::Write;
use wirespeed_engine::result::finite;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

const W: f64 = 760.0;
const LABEL_W: f64 = 230.0;
const PALETTE: [&str; 8] = [
    "#3b6fb6", "#e08a2c", "#4a9d5b", "#c0504d", "#8064a2", "#2aa4b5", "#a5762f", "#7f7f7f",
];

/// Rounds up to 1, 2 or 5 times a power of ten (1 for nothing positive).
fn nice_max(v: f64) -> f64 {
    let v = finite(v);
    if v <= 0.0 {
        return 1.0;
    }
    let e = 10f64.powf(v.log10().floor());
    let f = v / e;
    let n = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * e
}

/// A number for SVG attributes: finite, two decimals.
fn n(x: f64) -> String {
    format!("{:.2}", finite(x))
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{t}…")
    }
}

fn open_svg(kind: &str, title: &str, h: f64, points: usize) -> String {
    format!(
        "<figure><figcaption>{}</figcaption>\n<svg class=\"chart\" data-chart=\"{kind}\" data-points=\"{points}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{t}\">\n",
        esc(title),
        w = n(W),
        h = n(h),
        t = esc(title)
    )
}

const CLOSE_SVG: &str = "</svg></figure>\n";

/// Vertical grid lines and tick labels of a horizontal value axis.
fn x_axis(
    o: &mut String,
    x0: f64,
    x1: f64,
    top: f64,
    bottom: f64,
    max: f64,
    fmt: &dyn Fn(f64) -> String,
) {
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let x = x0 + (x1 - x0) * i as f64 / 4.0;
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\"/><text class=\"tick\" x=\"{x}\" y=\"{ty}\" text-anchor=\"middle\">{}</text>",
            esc(&fmt(v)),
            x = n(x),
            top = n(top),
            bottom = n(bottom),
            ty = n(bottom + 14.0)
        );
    }
}

/// One horizontal bar row: a label, a bar and (optionally) a min-max whisker.
struct Row {
    label: String,
    value: f64,
    range: Option<(f64, f64)>,
    note: String,
    baseline: bool,
}

fn hbar_chart(kind: &str, title: &str, rows: &[Row], fmt: &dyn Fn(f64) -> String) -> String {
    let row_h = 26.0;
    let top = 10.0;
    let h = top + row_h * rows.len() as f64 + 30.0;
    let (x0, x1) = (LABEL_W + 10.0, W - 150.0);
    let max = nice_max(
        rows.iter()
            .map(|r| r.range.map_or(r.value, |(_, hi)| hi.max(r.value)))
            .fold(0.0, f64::max),
    );
    let sx = |v: f64| x0 + (x1 - x0) * (finite(v).max(0.0) / max).min(1.0);
    let bottom = top + row_h * rows.len() as f64;
    let mut o = open_svg(kind, title, h, rows.len());
    x_axis(&mut o, x0, x1, top, bottom, max, fmt);
    if let Some(b) = rows.iter().find(|r| r.baseline) {
        let _ = writeln!(
            o,
            "<line class=\"baseline-line\" x1=\"{x}\" y1=\"{t}\" x2=\"{x}\" y2=\"{b}\"/>",
            x = n(sx(b.value)),
            t = n(top),
            b = n(bottom)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64 + 4.0;
        let cls = if r.baseline { "mark baseline" } else { "mark" };
        let label = if r.baseline {
            format!("{} (baseline)", r.label)
        } else {
            r.label.clone()
        };
        let _ = writeln!(
            o,
            "<text class=\"label\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{}<title>{}</title></text>",
            esc(&short(&label, 34)),
            esc(&label),
            lx = n(LABEL_W),
            ty = n(y + 13.0)
        );
        let _ = writeln!(
            o,
            "<rect class=\"{cls}\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"18\" data-value=\"{v}\"><title>{t}: {val}</title></rect>",
            x = n(x0),
            y = n(y),
            w = n((sx(r.value) - x0).max(1.0)),
            v = n(r.value),
            t = esc(&label),
            val = esc(&fmt(r.value))
        );
        if let Some((lo, hi)) = r.range {
            let ym = y + 9.0;
            let _ = writeln!(
                o,
                "<path class=\"whisker\" d=\"M{a} {ym}H{b}M{a} {y1}V{y2}M{b} {y1}V{y2}\"/>",
                a = n(sx(lo)),
                b = n(sx(hi)),
                ym = n(ym),
                y1 = n(ym - 5.0),
                y2 = n(ym + 5.0)
            );
        }
        let _ = writeln!(
            o,
            "<text class=\"value\" x=\"{x}\" y=\"{y}\">{} {}</text>",
            esc(&fmt(r.value)),
            esc(&r.note),
            x = n(x1 + 6.0),
            y = n(y + 13.0)
        );
    }
    o.push_str(CLOSE_SVG);
    o
}

/// Grouped horizontal bars: per group (configuration), one bar per series.
fn grouped_chart(
    kind: &str,
    title: &str,
    series: &[String],
    groups: &[(String, Vec<Option<f64>>)],
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let bar_h = 12.0;
    let gap = 12.0;
    let top = 30.0;
    let group_h = |g: &(String, Vec<Option<f64>>)| g.1.len() as f64 * (bar_h + 2.0) + gap;
    let total: f64 = groups.iter().map(group_h).sum();
    let h = top + total + 30.0;
    let (x0, x1) = (LABEL_W + 10.0, W - 110.0);
    let max = nice_max(
        groups
            .iter()
            .flat_map(|g| g.1.iter().flatten())
            .copied()
            .fold(0.0, f64::max),
    );
    let sx = |v: f64| x0 + (x1 - x0) * (finite(v).max(0.0) / max).min(1.0);
    let points: usize = groups.iter().map(|g| g.1.iter().flatten().count()).sum();
    let mut o = open_svg(kind, title, h, points);
    for (k, s) in series.iter().enumerate() {
        let x = x0 + k as f64 * 110.0;
        let _ = writeln!(
            o,
            "<rect x=\"{x}\" y=\"6\" width=\"12\" height=\"12\" fill=\"{c}\"/><text class=\"tick\" x=\"{tx}\" y=\"16\">{}</text>",
            esc(&short(s, 14)),
            x = n(x),
            tx = n(x + 16.0),
            c = PALETTE[k % PALETTE.len()]
        );
    }
    x_axis(&mut o, x0, x1, top, top + total, max, fmt);
    let mut y = top + gap / 2.0;
    for g in groups {
        let _ = writeln!(
            o,
            "<text class=\"label\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{}<title>{}</title></text>",
            esc(&short(&g.0, 34)),
            esc(&g.0),
            lx = n(LABEL_W),
            ty = n(y + 10.0)
        );
        for (k, v) in g.1.iter().enumerate() {
            if let Some(v) = v {
                let name = series.get(k).map(String::as_str).unwrap_or("");
                let _ = writeln!(
                    o,
                    "<rect class=\"mark\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{bh}\" style=\"fill:{c}\" data-value=\"{dv}\"><title>{g} {s}: {val}</title></rect><text class=\"value\" x=\"{vx}\" y=\"{vy}\">{val}</text>",
                    x = n(x0),
                    y = n(y),
                    w = n((sx(*v) - x0).max(1.0)),
                    bh = n(bar_h),
                    c = PALETTE[k % PALETTE.len()],
                    dv = n(*v),
                    g = esc(&g.0),
                    s = esc(name),
                    val = esc(&fmt(*v)),
                    vx = n(sx(*v) + 4.0),
                    vy = n(y + 10.0)
                );
            }
            y += bar_h + 2.0;
        }
        y += gap;
    }
    o.push_str(CLOSE_SVG);
    o
}

/// One line per sweeping cell: the metric against the sweep value.
fn sweep_chart(cells: &[&CellResult], metric: Metric) -> String {
    let h = 340.0;
    let (x0, x1, top, bottom) = (80.0, W - 170.0, 20.0, h - 50.0);
    let xs: Vec<f64> = cells
        .iter()
        .flat_map(|c| c.points.iter().filter_map(|p| p.x_value))
        .filter(|x| x.is_finite())
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let log = lo > 0.0 && hi / lo >= 8.0;
    let tx = |x: f64| if log { x.log2() } else { x };
    let (tlo, thi) = if xs.is_empty() {
        (0.0, 1.0)
    } else if tx(hi) > tx(lo) {
        (tx(lo), tx(hi))
    } else {
        (tx(lo) - 1.0, tx(hi) + 1.0)
    };
    let sx = |x: f64| x0 + (x1 - x0) * finite((tx(x) - tlo) / (thi - tlo));
    let max = nice_max(
        cells
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.stats.max.max(p.stats.median)))
            .fold(0.0, f64::max),
    );
    let sy = |v: f64| bottom - (bottom - top) * (finite(v).max(0.0) / max).min(1.0);
    let points: usize = cells
        .iter()
        .map(|c| c.points.iter().filter(|p| p.x_value.is_some()).count())
        .sum();
    let sweep_name = cells
        .iter()
        .find_map(|c| c.sweep_arg.clone())
        .unwrap_or_else(|| "sweep".into());
    let title = format!("{} vs {sweep_name}", metric.label());
    let mut o = open_svg("sweep", &title, h, points);
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{x0}\" y1=\"{y}\" x2=\"{x1}\" y2=\"{y}\"/><text class=\"tick\" x=\"{tx}\" y=\"{ty}\" text-anchor=\"end\">{}</text>",
            esc(&axis_fmt(metric)(v)),
            x0 = n(x0),
            x1 = n(x1),
            y = n(sy(v)),
            tx = n(x0 - 6.0),
            ty = n(sy(v) + 4.0)
        );
    }
    let mut labelled: Vec<f64> = Vec::new();
    for c in cells {
        for p in &c.points {
            if let (Some(x), Some(l)) = (p.x_value, &p.x)
                && !labelled.contains(&x)
            {
                labelled.push(x);
                let _ = writeln!(
                    o,
                    "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    n(sx(x)),
                    n(bottom + 16.0),
                    esc(l)
                );
            }
        }
    }
    let _ = writeln!(
        o,
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>",
        n((x0 + x1) / 2.0),
        n(bottom + 36.0),
        esc(&sweep_name),
        if log { " (log scale)" } else { "" }
    );
    for (k, c) in cells.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let pts: Vec<(f64, f64, &str)> = c
            .points
            .iter()
            .filter_map(|p| {
                p.x_value
                    .map(|x| (sx(x), sy(p.stats.median), p.x.as_deref().unwrap_or("")))
            })
            .collect();
        let d: Vec<String> = pts
            .iter()
            .enumerate()
            .map(|(i, (x, y, _))| format!("{}{} {}", if i == 0 { "M" } else { "L" }, n(*x), n(*y)))
            .collect();
        let _ = writeln!(
            o,
            "<path class=\"series\" d=\"{}\" stroke=\"{color}\"/>",
            d.join("")
        );
        for ((x, y, xl), p) in pts
            .iter()
            .zip(c.points.iter().filter(|p| p.x_value.is_some()))
        {
            let _ = writeln!(
                o,
                "<circle class=\"mark\" cx=\"{}\" cy=\"{}\" r=\"4\" style=\"fill:{color}\" data-value=\"{}\"><title>{} at {}: {}</title></circle>",
                n(*x),
                n(*y),
                n(p.stats.median),
                esc(&c.name),
                esc(xl),
                esc(&metric.human(p.stats.median))
            );
        }
        let ly = top + 16.0 * k as f64;
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text class=\"tick\" x=\"{}\" y=\"{}\">{}</text>",
            n(x1 + 14.0),
            n(ly),
            n(x1 + 30.0),
            n(ly + 10.0),
            esc(&short(&c.name, 20))
        );
    }
    o.push_str(CLOSE_SVG);
    o
}

/// The ladder: one vertical bar per step, each labelled with its gain over
/// the previous step.
fn ladder_chart(cells: &[CellResult], metric: Metric) -> String {
    let h = 340.0;
    let (x0, x1, top, bottom) = (80.0, W - 20.0, 30.0, h - 60.0);
    let max = nice_max(
        cells
            .iter()
            .map(|c| c.stats.max.max(c.stats.median))
            .fold(0.0, f64::max),
    );
    let sy = |v: f64| bottom - (bottom - top) * (finite(v).max(0.0) / max).min(1.0);
    let slot = (x1 - x0) / cells.len().max(1) as f64;
    let bw = (slot * 0.6).min(90.0);
    let mut o = open_svg(
        "ladder",
        "the tuning ladder: each step adds to the previous",
        h,
        cells.len(),
    );
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            n(x0),
            n(x1),
            n(x0 - 6.0),
            n(sy(v) + 4.0),
            esc(&axis_fmt(metric)(v)),
            y = n(sy(v))
        );
    }
    for (i, c) in cells.iter().enumerate() {
        let cx = x0 + slot * (i as f64 + 0.5);
        let v = c.stats.median;
        let cls = if i == 0 { "mark baseline" } else { "mark" };
        let _ = writeln!(
            o,
            "<rect class=\"{cls}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" data-value=\"{}\"><title>{}: {}</title></rect>",
            n(cx - bw / 2.0),
            n(sy(v)),
            n(bw),
            n((bottom - sy(v)).max(1.0)),
            n(v),
            esc(&c.name),
            esc(&metric.human(v))
        );
        let delta = if i == 0 {
            "baseline".to_string()
        } else {
            pct_text(c.vs_previous_pct)
        };
        let _ = writeln!(
            o,
            "<text class=\"value\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text class=\"value\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            n(cx),
            n(sy(v) - 18.0),
            esc(&metric.human(v)),
            n(cx),
            n(sy(v) - 5.0),
            esc(&delta)
        );
        let _ = writeln!(
            o,
            "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}. {}<title>{}</title></text>",
            n(cx),
            n(bottom + 16.0 + 13.0 * (i % 2) as f64),
            i,
            esc(&short(&c.name, 22)),
            esc(&c.name)
        );
    }
    o.push_str(CLOSE_SVG);
    o
}

fn axis_fmt(metric: Metric) -> Box<dyn Fn(f64) -> String> {
    match metric {
        Metric::ThroughputBps => Box::new(human_bps),
        Metric::TransactionsPerS => Box::new(human_count),
    }
}

/// The metric most cells use (throughput when tied or empty).
fn main_metric(res: &ExperimentResults) -> Metric {
    let tps = res
        .cells
        .iter()
        .filter(|c| c.metric == Metric::TransactionsPerS)
        .count();
    if tps * 2 > res.cells.len() {
        Metric::TransactionsPerS
    } else {
        Metric::ThroughputBps
    }
}

/// The charts this result has data for, in page order.
pub fn charts(res: &ExperimentResults) -> Vec<String> {
    let metric = main_metric(res);
    let mut out = Vec::new();
    let cells: Vec<&CellResult> = res.cells.iter().filter(|c| c.metric == metric).collect();
    if !cells.is_empty() {
        let rows: Vec<Row> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| Row {
                label: c.name.clone(),
                value: c.stats.median,
                range: (c.stats.n > 1).then_some((c.stats.min, c.stats.max)),
                note: if i == 0 && c.name == res.baseline {
                    String::new()
                } else {
                    pct_text(c.vs_baseline_pct)
                },
                baseline: c.name == res.baseline,
            })
            .collect();
        out.push(hbar_chart(
            "configurations",
            &format!(
                "median {} per configuration (whiskers: min-max)",
                metric.label()
            ),
            &rows,
            &*axis_fmt(metric),
        ));
    }
    let sweeping: Vec<&CellResult> = cells
        .iter()
        .copied()
        .filter(|c| c.points.iter().any(|p| p.x_value.is_some()))
        .collect();
    if !sweeping.is_empty() {
        out.push(sweep_chart(&sweeping, metric));
    }
    let mut lat_groups = Vec::new();
    for c in &res.cells {
        for p in &c.points {
            if let Some(l) = &p.latency {
                let name = match &p.x {
                    Some(x) => format!("{} @ {x}", c.name),
                    None => c.name.clone(),
                };
                lat_groups.push((name, vec![Some(l.p50_us), Some(l.p90_us), Some(l.p99_us)]));
            }
        }
    }
    if !lat_groups.is_empty() {
        out.push(grouped_chart(
            "latency",
            "latency percentiles per configuration (medians over repeats)",
            &["p50".into(), "p90".into(), "p99".into()],
            &lat_groups,
            &human_us,
        ));
    }
    let npaths = res
        .cells
        .iter()
        .filter_map(|c| c.points.last())
        .map(|p| p.paths.len())
        .max()
        .unwrap_or(0);
    if npaths > 0 {
        let groups: Vec<(String, Vec<Option<f64>>)> = res
            .cells
            .iter()
            .filter(|c| c.metric == Metric::ThroughputBps)
            .filter_map(|c| {
                let p = c.points.last()?;
                (!p.paths.is_empty()).then(|| {
                    (
                        c.name.clone(),
                        p.paths.iter().map(|x| Some(x.median_bps)).collect(),
                    )
                })
            })
            .collect();
        if !groups.is_empty() {
            let series: Vec<String> = (0..npaths).map(|i| format!("path {i}")).collect();
            out.push(grouped_chart(
                "paths",
                "goodput per NIC (path) per configuration",
                &series,
                &groups,
                &human_bps,
            ));
        }
    }
    if res.mode == Mode::Ladder && cells.len() > 1 {
        let steps: Vec<CellResult> = cells.iter().map(|c| (*c).clone()).collect();
        out.push(ladder_chart(&steps, metric));
    }
    out
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:960px}
h1{font-size:22px}table{border-collapse:collapse;margin:12px 0}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}figure{margin:18px 0}figcaption{font-weight:600;margin-bottom:4px}
svg.chart text{font:11px system-ui,sans-serif;fill:#333}svg.chart .grid{stroke:#e4e4e4}svg.chart rect.mark{fill:#3b6fb6}
svg.chart rect.mark.baseline{fill:#9a9a9a}svg.chart .baseline-line{stroke:#555;stroke-dasharray:4 3}
svg.chart .whisker{stroke:#222;fill:none}svg.chart .series{fill:none;stroke-width:2}code{background:#f3f3f3;padding:0 3px}
#selfcheck{color:#888;font-size:12px}";

const CHECK_SCRIPT: &str = "<script>
window.addEventListener('error',function(){var p=document.getElementById('selfcheck');p.setAttribute('data-errors',(+p.getAttribute('data-errors')||0)+1);});
(function(){var cs=document.querySelectorAll('svg.chart'),ok=0;
for(var i=0;i<cs.length;i++){var want=+cs[i].getAttribute('data-points');var got=cs[i].querySelectorAll('.mark').length;if(want>0&&got===want){ok++;}}
var p=document.getElementById('selfcheck');p.setAttribute('data-charts',cs.length);p.setAttribute('data-charts-with-data',ok);
p.textContent=ok+' of '+cs.length+' charts have data';})();
</script>";

/// Renders the whole report page.
pub fn render_html(res: &ExperimentResults) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>wirespeed: {}</title><style>{STYLE}</style></head><body>\n",
        esc(&res.name)
    );
    let _ = writeln!(
        o,
        "<h1>{}</h1>\n<p>mode <b>{}</b>, baseline <b>{}</b>, {} repeat(s) per configuration, {} configuration(s); wirespeed {}</p>",
        esc(&res.name),
        res.mode.as_str(),
        esc(&res.baseline),
        res.repeats,
        res.cells.len(),
        esc(&res.tool_version)
    );
    o.push_str("<table><tr><th>configuration</th><th>change</th><th class=\"num\">median</th><th class=\"num\">min - max</th><th class=\"num\">spread</th><th class=\"num\">vs baseline</th>");
    if res.mode == Mode::Ladder {
        o.push_str("<th class=\"num\">vs previous</th>");
    }
    o.push_str("</tr>\n");
    for c in &res.cells {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} - {}</td><td class=\"num\">{:.1}%</td><td class=\"num\">{}</td>",
            esc(&c.name),
            esc(&c.change),
            esc(&c.metric.human(c.stats.median)),
            esc(&c.metric.human(c.stats.min)),
            esc(&c.metric.human(c.stats.max)),
            finite(c.stats.spread_pct),
            esc(&pct_text(c.vs_baseline_pct))
        );
        if res.mode == Mode::Ladder {
            let _ = write!(
                o,
                "<td class=\"num\">{}</td>",
                esc(&pct_text(c.vs_previous_pct))
            );
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
    for chart in charts(res) {
        o.push_str(&chart);
    }
    o.push_str("<h2>What each configuration ran</h2>\n<table><tr><th>configuration</th><th>bench arguments</th><th>lab changes</th></tr>\n");
    for c in &res.cells {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            esc(&c.name),
            esc(&c.bench_args.join(" ")),
            esc(&c.lab_changes.join("; "))
        );
    }
    o.push_str("</table>\n<p id=\"selfcheck\"></p>\n");
    o.push_str(CHECK_SCRIPT);
    o.push_str("\n</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Point, finalize};
    use crate::fixtures::{cell, rr, stream};

    fn ladder() -> ExperimentResults {
        let mut res = ExperimentResults {
            name: "multi<nic> & \"ladder\"".into(),
            mode: Mode::Ladder,
            repeats: 2,
            cells: vec![
                cell("one <flow>", vec![stream(0.9e9, 1), stream(0.95e9, 1)]),
                cell("two NICs", vec![stream(1.8e9, 2), stream(1.9e9, 2)]),
                cell("4 flows", vec![stream(1.9e9, 2)]),
            ],
            ..ExperimentResults::default()
        };
        finalize(&mut res);
        res
    }

    fn marks(html: &str) -> Vec<(String, usize, usize)> {
        html.split("<svg class=\"chart\"")
            .skip(1)
            .map(|s| {
                let body = &s[..s.find("</svg>").unwrap()];
                let kind = body.split('"').nth(1).unwrap().to_string();
                let want: usize = body
                    .split("data-points=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                (kind, want, body.matches("class=\"mark").count())
            })
            .collect()
    }

    #[test]
    fn text_is_escaped_and_numbers_are_finite() {
        let mut res = ladder();
        res.cells[1].points[0].runs[0].throughput_bps = f64::NAN;
        res.cells[2].stats.median = f64::INFINITY;
        let html = render_html(&res);
        assert!(!html.contains("one <flow>") && html.contains("one &lt;flow&gt;"));
        assert!(html.contains("multi&lt;nic&gt; &amp; &quot;ladder&quot;"));
        assert!(
            !html.contains("NaN") && !html.contains(">inf") && !html.contains("\"inf"),
            "{html}"
        );
        assert!(!html.contains("http://") && !html.contains("https://"));
        assert_eq!(esc("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
    }

    #[test]
    fn every_chart_draws_as_many_marks_as_it_announces() {
        let html = render_html(&ladder());
        let m = marks(&html);
        let kinds: Vec<&str> = m.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(kinds, ["configurations", "paths", "ladder"]);
        for (k, want, got) in &m {
            assert!(*want > 0 && want == got, "{k}: {want} vs {got}");
        }
        let mut sweep = ExperimentResults {
            cells: vec![CellResult {
                name: "host".into(),
                sweep_arg: Some("--size".into()),
                points: [(1024u32, "1k"), (1 << 20, "1m")]
                    .iter()
                    .map(|&(s, x)| Point {
                        x: Some(x.into()),
                        x_value: Some(s as f64),
                        runs: vec![rr(9000.0, 30.0, s)],
                        ..Point::default()
                    })
                    .collect(),
                ..CellResult::default()
            }],
            ..ExperimentResults::default()
        };
        finalize(&mut sweep);
        let m = marks(&render_html(&sweep));
        let kinds: Vec<&str> = m.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(kinds, ["configurations", "sweep", "latency"]);
        for (k, want, got) in &m {
            assert!(*want > 0 && want == got, "{k}: {want} vs {got}");
        }
    }

    #[test]
    fn nice_axis_maxima() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(1.7e9), 2e9);
        assert_eq!(nice_max(3.1), 5.0);
        assert_eq!(nice_max(7.0), 10.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
    }
}
