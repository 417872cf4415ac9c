//! The HTML report: one self-contained file (inline CSS, inline SVG drawn
//! by [`crate::chart`], one small inline self-check script; nothing is
//! fetched from a network and no font is needed beyond the browser's own).
//!
//! Pages, by what was given:
//! - one test: what ran, the key figures, throughput over time per flow,
//!   per path and in total with latency under it on the same time axis
//!   (the RRUL picture), latency percentiles, flows with TCP_INFO and
//!   fairness, paths, CPU per side;
//! - one size sweep: transactions/s, goodput and p50/p99 latency against
//!   size, one table row per size, percentiles per size;
//! - several results: the same chart kinds with one series per result;
//! - an experiment: its summary and charts, then each cell as a test or sweep.
//!
//! The self-check script writes into the hidden `#selfcheck` element how
//! many charts drew the marks they announce (`data-points`), where each
//! chart's plot area is on the page, and any script error, so a headless
//! browser can prove every chart has data and a screenshot can be checked.

use crate::chart::{
    Axis, Bar, CLOSE_SVG, Line, LineChart, W, abbr, bps_ticks, color, count_ticks, esc,
    grouped_chart, hbar_chart, nice_max, open_svg, plot_rect, series_legend, short, svg_num,
};
use crate::experiment::{CellResult, ExperimentResults, Metric, Mode, pct_text};
use crate::figures::{self, Figure, Rate, table};
use crate::source::{
    Content, Series, Source, all_series, experiment_series, is_probe_latency, latency_of,
    main_flows, shape, what,
};
use crate::units::{
    human_bps, human_pct, human_size, human_us, plural, tick_us, trim_num, utc_time,
};
use std::fmt::Write;
use wirespeed_types::TestResult;
use wirespeed_types::result::finite;

const STYLE: &str = r#"body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;padding:20px 24px 40px;max-width:1040px;color:#1d1d1d;background:#fff}
h1{font-size:24px;margin:6px 0 2px}h2{font-size:19px;margin:34px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:16px;margin:22px 0 6px}
.sub{color:#555;margin:0 0 10px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:12px 0;font-size:14px}dl.facts dt{color:#666}dl.facts dd{margin:0}
.kpis{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}.kpi{border:1px solid #e2e2e2;border-radius:6px;padding:6px 11px;min-width:108px}
.kpi b{display:block;font-size:20px;font-variant-numeric:tabular-nums}.kpi span{color:#666;font-size:12.5px}
figure{margin:28px 0;break-inside:avoid;page-break-inside:avoid}figcaption{margin-bottom:6px}
figcaption .ft{font-weight:600}figcaption .fq{color:#1f4f8f;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:2px 16px;font-size:12.5px;margin:4px 0}
.legend i.sw{display:inline-block;width:20px;border-top:3px solid;vertical-align:middle;margin-right:6px}.legend i.dash{border-top-style:dashed}
svg.chart{display:block;width:100%;max-width:760px;height:auto;margin:2px 0}svg.chart.natural{width:auto;max-width:none}
svg.chart text{font-family:inherit;font-size:11px;fill:#333}svg.chart .tick{fill:#555}svg.chart .axis-title{fill:#777;font-size:11px}
svg.chart .grid{stroke:#e9e9e9}svg.chart .axis{stroke:#9a9a9a}svg.chart rect.plot{fill:none}
svg.chart .shade{fill:#f1f1f1}svg.chart .shade-label{fill:#888;font-size:10px}
svg.chart path.line{fill:none;stroke-linejoin:round;stroke-linecap:round}svg.chart .pt{opacity:.85}
svg.chart .baseline-line{stroke:#555;stroke-dasharray:4 3}svg.chart .whisker{stroke:#222;fill:none}
table{border-collapse:collapse;margin:8px 0;font-size:13.5px}td,th{padding:3px 8px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top;white-space:nowrap}
th{font-weight:600;background:#f7f7f7;white-space:normal;vertical-align:bottom}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.tw{overflow-x:auto;max-width:100%}.fn{color:#555;font-size:13px;margin:6px 0;max-width:760px}
ul.notes li{color:#7a4b00}code{background:#f3f3f3;padding:0 3px;border-radius:3px}.hint{color:#555}
footer{margin-top:36px;color:#888;font-size:12px}
@media print{body{max-width:none;padding:0;font-size:12px}h2,h3{break-after:avoid}.tw{overflow:visible}table{font-size:10.5px}td,th{white-space:normal;padding:2px 4px}figure,table,dl,.kpis{break-inside:avoid}svg.chart{max-width:100%}}
@media (max-width:640px){body{padding:12px}dl.facts{grid-template-columns:1fr}dl.facts dt{margin-top:4px}}"#;

const CHECK_SCRIPT: &str = "<script>
(function(){var p=document.getElementById('selfcheck');
window.addEventListener('error',function(){p.setAttribute('data-errors',(+p.getAttribute('data-errors')||0)+1);});
var cs=document.querySelectorAll('svg.chart'),ok=0,regions=[],minf=1e9;
for(var i=0;i<cs.length;i++){var c=cs[i],want=+c.getAttribute('data-points'),got=c.querySelectorAll('.mark').length;if(want>0&&got===want){ok++;}
var vb=c.viewBox&&c.viewBox.baseVal,sc=vb&&vb.width?c.getBoundingClientRect().width/vb.width:1,ts=c.querySelectorAll('text');
for(var k=0;k<ts.length;k++){var f=parseFloat(getComputedStyle(ts[k]).fontSize)*sc;if(f<minf){minf=f;}}
var pl=c.querySelector('rect.plot'),b=(pl||c).getBoundingClientRect();
regions.push(c.getAttribute('data-chart')+':'+Math.round(b.left+window.scrollX)+','+Math.round(b.top+window.scrollY)+','+Math.round(b.width)+','+Math.round(b.height));}
p.setAttribute('data-charts',cs.length);p.setAttribute('data-charts-with-data',ok);p.setAttribute('data-regions',regions.join(' '));
p.setAttribute('data-height',Math.ceil(document.documentElement.scrollHeight));
if(minf<1e9){p.setAttribute('data-min-font',minf.toFixed(1));}})();
</script>";

pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>wirespeed: {}</title><style>{STYLE}</style></head><body>\n{body}<footer>wirespeed report</footer>\n<p id=\"selfcheck\" hidden></p>\n{CHECK_SCRIPT}\n</body></html>\n",
        esc(title)
    )
}

/// Renders these sources as one page: a test, a sweep, an experiment, or
/// (several sources) a comparison on shared axes.
pub fn render_page(sources: &[Source]) -> String {
    if let [one] = sources {
        match &one.content {
            Content::Experiment(e) => return render_html(e),
            Content::Bench(r) => {
                let series = all_series(sources);
                if let [s] = series.as_slice() {
                    let mut o = String::new();
                    let title = one.label.clone();
                    let _ = writeln!(o, "<h1>{}</h1>", esc(&title));
                    if s.is_sweep() {
                        sweep_section(&mut o, s, &one.origin);
                    } else {
                        test_section(&mut o, s.run(), &one.origin);
                    }
                    return page(&title, &o);
                }
                if r.results.is_empty() {
                    return page(&one.label, "<h1>No results</h1>\n");
                }
            }
        }
    }
    compare_page(sources)
}

fn facts(rows: &[(&str, String)]) -> String {
    let mut o = String::from("<dl class=\"facts\">");
    for (k, v) in rows.iter().filter(|r| !r.1.is_empty()) {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    o.push_str("</dl>\n");
    o
}

fn kpis(items: &[(String, String)]) -> String {
    let mut o = String::from("<div class=\"kpis\">");
    for (v, k) in items {
        let _ = write!(
            o,
            "<div class=\"kpi\"><b>{}</b><span>{}</span></div>",
            esc(v),
            esc(k)
        );
    }
    o.push_str("</div>\n");
    o
}

/// The options of a test that differ from the defaults, in words.
fn options(r: &TestResult) -> String {
    let s = &r.spec;
    let mut o = Vec::new();
    if s.workload.is_bulk() {
        o.push(format!("{} messages", human_size(s.msg_size as u64)));
    }
    match (s.sndbuf, s.rcvbuf) {
        (Some(a), Some(b)) if a == b => o.push(format!("socket buffers {}", human_size(a as u64))),
        (a, b) => {
            if let Some(a) = a {
                o.push(format!("send buffer {}", human_size(a as u64)));
            }
            if let Some(b) = b {
                o.push(format!("receive buffer {}", human_size(b as u64)));
            }
        }
    }
    if s.nodelay {
        o.push("TCP_NODELAY".into());
    }
    if s.zerocopy {
        o.push("zero-copy send".into());
    }
    if s.skip_rx_copy {
        o.push("receive without copy".into());
    }
    if let Some(p) = s.pacing_bps {
        o.push(format!("pacing {} per flow", human_bps(p as f64)));
    }
    if !s.client_cpus.is_empty() {
        o.push(format!("client pinned to CPUs {:?}", s.client_cpus));
    }
    if !s.server_cpus.is_empty() {
        o.push(format!("server pinned to CPUs {:?}", s.server_cpus));
    }
    o.join(", ")
}

fn hosts(r: &TestResult) -> String {
    if r.client.is_empty() {
        format!("server {}", r.server)
    } else {
        format!("client {} → server {}", r.client, r.server)
    }
}

fn window_text(r: &TestResult, each: bool) -> String {
    let s = &r.spec;
    let mut t = format!(
        "{} s measured{}",
        trim_num(r.window_s, 2),
        if each { " per test" } else { "" }
    );
    if s.warmup_s > 0.0 {
        let _ = write!(t, " after {} s of warm-up", trim_num(s.warmup_s, 2));
    }
    if s.interval_s > 0.0 && !r.intervals.is_empty() {
        let _ = write!(t, ", sampled every {} s", trim_num(s.interval_s, 2));
    }
    t
}

fn path_list(r: &TestResult) -> String {
    if r.paths.len() < 2 {
        return String::new();
    }
    r.paths
        .iter()
        .map(|p| format!("{}: {}", p.index, p.label))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Where a result came from: `stream.json (wirespeed 0.1.0)`.
fn provenance(origin: &str, r: &TestResult) -> String {
    match (origin.is_empty(), r.tool_version.is_empty()) {
        (false, false) => format!("{origin} (wirespeed {})", r.tool_version),
        (false, true) => origin.to_string(),
        (true, false) => format!("wirespeed {}", r.tool_version),
        (true, true) => String::new(),
    }
}

fn notes(o: &mut String, notes: &[&String]) {
    if notes.is_empty() {
        return;
    }
    o.push_str("<h3>Notes</h3><ul class=\"notes\">");
    for n in notes {
        let _ = write!(o, "<li>{}</li>", esc(n));
    }
    o.push_str("</ul>\n");
}

/// The key figures of one test.
fn test_kpis(r: &TestResult) -> Vec<(String, String)> {
    let mut k = Vec::new();
    if r.spec.workload.is_bulk() {
        k.push((human_bps(r.throughput_bps), "goodput".into()));
        for d in r.directions.iter().filter(|_| r.directions.len() > 1) {
            k.push((
                human_bps(d.received_bps),
                if d.direction == "forward" {
                    "client → server".into()
                } else {
                    "server → client".into()
                },
            ));
        }
    } else {
        k.push((
            crate::human_count(r.transactions_per_s),
            "transactions/s".into(),
        ));
        k.push((human_bps(r.throughput_bps), "goodput".into()));
    }
    if let Some(l) = latency_of(r) {
        let what = if is_probe_latency(r) {
            "under load"
        } else {
            "latency"
        };
        k.push((human_us(l.p50_us), format!("p50 {what}")));
        k.push((human_us(l.p99_us), format!("p99 {what}")));
    }
    k.push((
        human_pct(r.local_cpu.total_pct),
        "client CPU (of one core)".into(),
    ));
    k.push((
        human_pct(r.remote_cpu.total_pct),
        "server CPU (of one core)".into(),
    ));
    let infos: Vec<_> = main_flows(r).filter_map(|f| f.tcp_info.as_ref()).collect();
    if !infos.is_empty() {
        let retr: u64 = infos.iter().map(|i| i.retransmits).sum();
        k.push((retr.to_string(), "retransmits".into()));
        let rtt = infos.iter().map(|i| i.rtt_us as f64).sum::<f64>() / infos.len() as f64;
        k.push((human_us(rtt), "mean smoothed RTT".into()));
    }
    if main_flows(r).count() > 1 {
        k.push((
            format!("{:.3}", finite(r.fairness)),
            "fairness (Jain)".into(),
        ));
    }
    k
}

/// One test, as what it is.
fn test_section(o: &mut String, r: &TestResult, origin: &str) {
    let mut rows = vec![
        ("test", what(r)),
        ("flows", shape(r)),
        ("window", window_text(r, false)),
        ("hosts", hosts(r)),
        ("paths", path_list(r)),
        ("congestion control", r.congestion_control.clone()),
        ("options", options(r)),
        ("started", utc_time(r.started_unix)),
    ];
    rows.push(("results", provenance(origin, r)));
    if r.server_concurrent_tests > 1 {
        rows.push((
            "shared server",
            format!(
                "{} tests ran on the server at once: its figures are shared",
                r.server_concurrent_tests
            ),
        ));
    }
    o.push_str(&facts(&rows));
    o.push_str(&kpis(&test_kpis(r)));
    let series = [Series::single(r)];
    let mut figs = Vec::new();
    match figures::over_time(&series, Rate::of(r), &[0]) {
        Some(mut f) => {
            if let Some(t) = figures::interval_table(&series) {
                f.table = format!(
                    "<details><summary>Every interval</summary>{}</details>\n",
                    t.html()
                );
            }
            figs.push(f)
        }
        None => o.push_str(
            "<p class=\"hint\">This result has no interval samples: run <code>wirespeed bench</code> with <code>-i 0.5s</code> to see throughput and latency over time.</p>\n",
        ),
    }
    figs.extend(figures::percentiles(&series, &[0]));
    figs.extend(crate::latency::figures(r));
    figs.extend(figures::flows(r));
    figs.extend(figures::paths(r));
    figs.extend(figures::cpu(&series, true));
    for f in figs {
        o.push_str(&f.html());
    }
    let contended = r.contended.as_ref().map(|w| format!("CONTENDED: {w}"));
    notes(o, &contended.iter().chain(&r.notes).collect::<Vec<_>>());
}

/// A size sweep: the curve, the table, the percentiles.
fn sweep_section(o: &mut String, s: &Series, origin: &str) {
    let r = s.run();
    let sizes: Vec<String> = s
        .points
        .iter()
        .filter_map(|p| p.x.as_ref().map(|x| x.0.clone()))
        .collect();
    let rows = vec![
        (
            "test",
            format!("{} sweep over {}", r.spec.workload.name(), s.x_title),
        ),
        (
            if figures::is_size(&s.x_title) {
                "sizes"
            } else {
                "values"
            },
            sizes.join(", "),
        ),
        ("flows", shape(r)),
        ("window", window_text(r, true)),
        ("hosts", hosts(r)),
        ("congestion control", r.congestion_control.clone()),
        ("started", utc_time(r.started_unix)),
        ("results", provenance(origin, r)),
    ];
    o.push_str(&facts(&rows));
    let series = std::slice::from_ref(s);
    let figs = figures::sweep(series, &[0]);
    let mut it = figs.into_iter();
    if let Some(f) = it.next() {
        o.push_str(&f.html());
    }
    let _ = writeln!(
        o,
        "<h3>One row per {}</h3>\n{}",
        figures::row_word(&s.x_title),
        figures::sweep_table(series).html()
    );
    for f in it {
        o.push_str(&f.html());
    }
    if let Some(mut f) = figures::percentiles(series, &[0]) {
        // The table above has every size's percentiles already.
        f.table = String::new();
        o.push_str(&f.html());
    }
    let mut ns: Vec<&String> = Vec::new();
    for n in s.points.iter().flat_map(|p| &p.run.notes) {
        if !ns.contains(&n) {
            ns.push(n);
        }
    }
    notes(o, &ns);
}

/// Several results on shared axes, one series per result.
fn compare_page(sources: &[Source]) -> String {
    let series = all_series(sources);
    let colors: Vec<usize> = (0..series.len()).collect();
    let mut o = String::new();
    let title = format!(
        "Comparison of {}",
        plural(series.len() as u64, "result", "results")
    );
    let _ = writeln!(o, "<h1>{}</h1>", esc(&title));
    let _ = writeln!(
        o,
        "<p class=\"sub\">{}</p>",
        esc(&sources
            .iter()
            .map(|s| if s.origin.is_empty() || s.origin == s.label {
                s.label.clone()
            } else {
                format!("{} ({})", s.label, s.origin)
            })
            .collect::<Vec<_>>()
            .join(" · "))
    );
    o.push_str(&figures::compare_table(&series).html());
    let mut figs: Vec<Figure> = Vec::new();
    for m in [Metric::ThroughputBps, Metric::TransactionsPerS] {
        figs.extend(figures::headline_bars(&series, &colors, m));
    }
    for rate in [Rate::Bps, Rate::Tps] {
        if let Some(mut f) = figures::over_time(&series, rate, &colors) {
            let same: Vec<Series> = series
                .iter()
                .filter(|s| !s.is_sweep() && Rate::of(s.run()) == rate)
                .cloned()
                .collect();
            if let Some(t) = figures::interval_table(&same) {
                f.table = format!(
                    "<details><summary>Every interval</summary>{}</details>\n",
                    t.html()
                );
            }
            figs.push(f);
        }
    }
    let sweeps = figures::sweep(&series, &colors);
    let has_sweeps = !sweeps.is_empty();
    figs.extend(sweeps);
    figs.extend(figures::percentiles(&series, &colors));
    figs.extend(figures::cpu(&series, false));
    for f in figs {
        o.push_str(&f.html());
    }
    if has_sweeps {
        let word = series
            .first()
            .map_or("size".into(), |s| figures::row_word(&s.x_title));
        let _ = writeln!(
            o,
            "<h3>One row per {word}</h3>\n{}",
            figures::sweep_table(&series).html()
        );
    }
    page(&title, &o)
}

fn tick_fmt(metric: Metric, max: f64) -> Box<dyn Fn(f64) -> String> {
    match metric {
        Metric::ThroughputBps => Box::new(bps_ticks(max)),
        Metric::TransactionsPerS => Box::new(count_ticks),
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

/// One line per sweeping cell: the median metric against the sweep value.
fn sweep_figure(cells: &[&CellResult], metric: Metric) -> Figure {
    let mut ticks: Vec<(f64, String)> = Vec::new();
    for p in cells.iter().flat_map(|c| &c.points) {
        if let (Some(v), Some(l)) = (p.x_value, &p.x)
            && v.is_finite()
            && !ticks.iter().any(|t| t.0 == v)
        {
            ticks.push((v, l.clone()));
        }
    }
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let lo = ticks.first().map_or(1.0, |t| t.0);
    let hi = ticks.last().map_or(1.0, |t| t.0);
    let log = lo > 0.0 && hi / lo >= 8.0;
    let name = cells
        .iter()
        .find_map(|c| c.sweep_arg.clone())
        .unwrap_or_else(|| "sweep value".into());
    let name = if name == "--size" {
        "request size".to_string()
    } else {
        name.trim_start_matches('-').to_string()
    };
    let mut ymax: f64 = 0.0;
    let lines: Vec<Line> = cells
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let pts: Vec<(f64, f64)> = c
                .points
                .iter()
                .filter_map(|p| {
                    Some((p.x_value.filter(|v| v.is_finite())?, finite(p.stats.median)))
                })
                .collect();
            ymax = pts.iter().map(|p| p.1).fold(ymax, f64::max);
            Line::new(c.name.clone(), color(k), pts).width(2.5)
        })
        .collect();
    let tick = tick_fmt(metric, ymax);
    let label_of = |x: f64| {
        ticks
            .iter()
            .find(|t| t.0 == x)
            .map_or(String::new(), |t| t.1.clone())
    };
    let hover = |x: f64, y: f64| format!("{} at {}", metric.human(y), label_of(x));
    let chart = LineChart {
        kind: "sweep",
        title: format!("median {} vs {name}", metric.label()),
        x: Axis::explicit(ticks.clone(), log).titled(&if log {
            format!("{name} (log scale)")
        } else {
            name.clone()
        }),
        y: Axis::from_zero(ymax, &*tick),
        lines,
        shade_before: None,
        height: 300.0,
        hover: &hover,
    };
    Figure {
        title: format!("Median {} vs {name}", metric.label()),
        quote: String::new(),
        legend: chart.legend(),
        panels: vec![chart.svg()],
        note: String::new(),
        table: String::new(),
    }
}

/// The ladder: one vertical bar per step, each labelled with its gain over
/// the previous step.
fn ladder_chart(cells: &[&CellResult], metric: Metric) -> String {
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
    plot_rect(&mut o, x0, x1, top, bottom);
    let tick = tick_fmt(metric, max);
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            svg_num(x0),
            svg_num(x1),
            svg_num(x0 - 6.0),
            svg_num(sy(v) + 4.0),
            esc(&tick(v)),
            y = svg_num(sy(v))
        );
    }
    for (i, c) in cells.iter().enumerate() {
        let cx = x0 + slot * (i as f64 + 0.5);
        let v = c.stats.median;
        let (cls, fill) = if i == 0 {
            ("mark baseline", "#9a9a9a")
        } else {
            ("mark", color(0))
        };
        let _ = writeln!(
            o,
            "<rect class=\"{cls}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" style=\"fill:{fill}\" data-value=\"{}\"><title>{}: {}</title></rect>",
            svg_num(cx - bw / 2.0),
            svg_num(sy(v)),
            svg_num(bw),
            svg_num((bottom - sy(v)).max(1.0)),
            svg_num(v),
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
            svg_num(cx),
            svg_num(sy(v) - 18.0),
            esc(&metric.human(v)),
            svg_num(cx),
            svg_num(sy(v) - 5.0),
            esc(&delta)
        );
        let _ = writeln!(
            o,
            "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}. {}<title>{}</title></text>",
            svg_num(cx),
            svg_num(bottom + 16.0 + 13.0 * ((i % 2) * usize::from(cells.len() > 5)) as f64),
            i,
            esc(&short(&c.name, 22)),
            esc(&c.name)
        );
    }
    o.push_str(CLOSE_SVG);
    o
}

/// The experiment's summary figures, in page order.
pub fn charts(res: &ExperimentResults) -> Vec<Figure> {
    let metric = main_metric(res);
    let mut out = Vec::new();
    let cells: Vec<&CellResult> = res.cells.iter().filter(|c| c.metric == metric).collect();
    let repeated = cells.iter().any(|c| c.stats.n > 1);
    if !cells.is_empty() {
        out.push(medians_figure(res, &cells, metric, repeated));
    }
    let sweeping: Vec<&CellResult> = cells
        .iter()
        .copied()
        .filter(|c| c.points.iter().any(|p| p.x_value.is_some()))
        .collect();
    if !sweeping.is_empty() {
        out.push(sweep_figure(&sweeping, metric));
    }
    out.extend(latency_figure(res, repeated));
    out.extend(paths_figure(res));
    if res.mode == Mode::Ladder && cells.len() > 1 {
        let last = cells[cells.len() - 1];
        out.push(Figure {
            title: "The tuning ladder: each step adds to the previous".into(),
            quote: format!(
                "{} at the top step, {} over the baseline",
                metric.human(last.stats.median),
                pct_text(last.vs_baseline_pct)
            ),
            panels: vec![ladder_chart(&cells, metric)],
            ..Figure::default()
        });
    }
    out
}

/// A bar per configuration (`cells`, all in `metric`): its median, with
/// whiskers when `repeated`.
fn medians_figure(
    res: &ExperimentResults,
    cells: &[&CellResult],
    metric: Metric,
    repeated: bool,
) -> Figure {
    let rows: Vec<Bar> = cells
        .iter()
        .map(|c| {
            let base = c.name == res.baseline;
            Bar {
                label: c.name.clone(),
                value: c.stats.median,
                range: (c.stats.n > 1).then_some((c.stats.min, c.stats.max)),
                note: if base {
                    "baseline".into()
                } else {
                    pct_text(c.vs_baseline_pct)
                },
                baseline: base,
                ..Bar::default()
            }
        })
        .collect();
    let max = rows.iter().map(|r| r.value).fold(0.0, f64::max);
    let best = cells
        .iter()
        .max_by(|a, b| a.stats.median.total_cmp(&b.stats.median));
    Figure {
        title: format!("Median {} per configuration", metric.label()),
        quote: best.map_or(String::new(), |b| {
            let vs = if b.name == res.baseline {
                String::new()
            } else {
                format!(" ({} vs baseline)", pct_text(b.vs_baseline_pct))
            };
            format!("best: {} {}{vs}", b.name, metric.human(b.stats.median))
        }),
        panels: vec![hbar_chart(
            "configurations",
            "per configuration",
            &rows,
            &|v| metric.human(v),
            &*tick_fmt(metric, max),
        )],
        note: if repeated {
            "Whiskers: min to max over the repeats; the dashed line marks the baseline.".into()
        } else {
            String::new()
        },
        ..Figure::default()
    }
}

/// p50, p90 and p99 of every point that measured latency; None when none did.
fn latency_figure(res: &ExperimentResults, repeated: bool) -> Option<Figure> {
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
    if lat_groups.is_empty() {
        return None;
    }
    let names = vec!["p50".to_string(), "p90".into(), "p99".into()];
    Some(Figure {
        title: "Latency percentiles per configuration".into(),
        quote: if repeated {
            "medians over the repeats".into()
        } else {
            String::new()
        },
        legend: series_legend(&names),
        panels: vec![grouped_chart(
            "latency",
            "latency percentiles",
            &names,
            &lat_groups,
            &human_us,
            &tick_us,
        )],
        ..Figure::default()
    })
}

/// Goodput per path per throughput configuration, when a test had more
/// than one path.
fn paths_figure(res: &ExperimentResults) -> Option<Figure> {
    let npaths = res
        .cells
        .iter()
        .filter_map(|c| c.points.last())
        .map(|p| p.paths.len())
        .max()
        .unwrap_or(0);
    if npaths <= 1 {
        return None;
    }
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
    if groups.is_empty() {
        return None;
    }
    let names: Vec<String> = (0..npaths).map(|i| format!("path {i}")).collect();
    Some(Figure {
        title: "Goodput per NIC (path) per configuration".into(),
        legend: series_legend(&names),
        panels: vec![grouped_chart(
            "paths",
            "goodput per path",
            &names,
            &groups,
            &human_bps,
            &bps_ticks(
                groups
                    .iter()
                    .flat_map(|g| g.1.iter().flatten())
                    .fold(0.0, |a: f64, b| a.max(*b)),
            ),
        )],
        ..Figure::default()
    })
}

/// Renders an experiment's page: its summary, charts, and each cell.
pub fn render_html(res: &ExperimentResults) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "<h1>{}</h1>", esc(&res.name));
    let repeats = plural(res.repeats as u64, "repeat", "repeats");
    let _ = writeln!(
        o,
        "<p class=\"sub\">{}, {} per configuration, {}; baseline <b>{}</b>{}</p>",
        match res.mode {
            Mode::Ladder => "Tuning ladder",
            Mode::OneAtATime => "One change at a time",
        },
        repeats,
        plural(res.cells.len() as u64, "configuration", "configurations"),
        esc(&res.baseline),
        if res.tool_version.is_empty() {
            String::new()
        } else {
            format!("; wirespeed {}", esc(&res.tool_version))
        }
    );
    let repeated = res.cells.iter().any(|c| c.stats.n > 1);
    o.push_str("<div class=\"tw\"><table><thead><tr><th>configuration</th><th>change</th><th class=\"num\">median</th>");
    if repeated {
        o.push_str("<th class=\"num\">min - max</th><th class=\"num\">spread</th>");
    }
    o.push_str("<th class=\"num\">vs baseline</th>");
    if res.mode == Mode::Ladder {
        o.push_str("<th class=\"num\">vs previous</th>");
    }
    o.push_str("</tr></thead><tbody>\n");
    for c in &res.cells {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td>",
            abbr(&c.name, 40),
            abbr(&c.change, 60),
            esc(&c.metric.human(c.stats.median)),
        );
        if repeated {
            if c.stats.n > 1 {
                let _ = write!(
                    o,
                    "<td class=\"num\">{} - {}</td><td class=\"num\">{:.1}%</td>",
                    esc(&c.metric.human(c.stats.min)),
                    esc(&c.metric.human(c.stats.max)),
                    finite(c.stats.spread_pct)
                );
            } else {
                o.push_str("<td class=\"num\">-</td><td class=\"num\">-</td>");
            }
        }
        let vs = if c.name == res.baseline {
            "baseline".to_string()
        } else {
            pct_text(c.vs_baseline_pct)
        };
        let _ = write!(o, "<td class=\"num\">{}</td>", esc(&vs));
        if res.mode == Mode::Ladder {
            let _ = write!(
                o,
                "<td class=\"num\">{}</td>",
                esc(&pct_text(c.vs_previous_pct))
            );
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
    for f in charts(res) {
        o.push_str(&f.html());
    }
    if res
        .cells
        .iter()
        .any(|c| !c.bench_args.is_empty() || !c.lab_changes.is_empty())
    {
        let rows: Vec<Vec<String>> = res
            .cells
            .iter()
            .map(|c| {
                let dash = |s: String| if s.is_empty() { "-".into() } else { s };
                vec![
                    c.name.clone(),
                    dash(c.bench_args.join(" ")),
                    dash(c.lab_changes.join("; ")),
                ]
            })
            .collect();
        o.push_str("<h2>What each configuration ran</h2>\n");
        o.push_str(&table(
            &["configuration", "wirespeed bench arguments", "lab changes"],
            &rows,
            3,
        ));
    }
    for (c, s) in res.cells.iter().zip(experiment_series(None, res)) {
        let _ = writeln!(o, "<h2>{}</h2>", esc(&c.name));
        if !c.change.is_empty() {
            let _ = writeln!(o, "<p class=\"sub\">{}</p>", esc(&c.change));
        }
        if s.is_sweep() {
            sweep_section(&mut o, &s, "");
        } else {
            let p = &s.points[0];
            if p.repeats > 1 {
                let _ = writeln!(
                    o,
                    "<p class=\"hint\">The run nearest the median of {}.</p>",
                    plural(p.repeats as u64, "repeat", "repeats")
                );
            }
            test_section(&mut o, p.run, "");
        }
    }
    page(&res.name, &o)
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

    /// (kind, announced marks, drawn marks) of every chart.
    pub(crate) fn marks(html: &str) -> Vec<(String, usize, usize)> {
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
        assert_eq!(kinds[..3], ["configurations", "paths", "ladder"]);
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
        assert_eq!(kinds[..3], ["configurations", "sweep", "latency"]);
        for (k, want, got) in &m {
            assert!(*want > 0 && want == got, "{k}: {want} vs {got}");
        }
    }

    #[test]
    fn a_mixed_comparison_draws_every_series_it_announces() {
        let mut st = stream(2e9, 2);
        st.spec.flows = 2;
        st.flows = (0..2)
            .map(|i| wirespeed_types::result::FlowResult {
                id: i,
                path: i,
                kind: Some(wirespeed_types::spec::FlowKind::Forward),
                throughput_bps: 1e9,
                ..Default::default()
            })
            .collect();
        st.intervals = (1..=3)
            .map(|i| wirespeed_types::result::IntervalSample {
                t_s: i as f64,
                len_s: 1.0,
                bps: 2e9,
                flow_bps: vec![1e9, 1e9],
                ..Default::default()
            })
            .collect();
        let bench = |results| {
            Content::Bench(wirespeed_types::Report {
                schema_version: 1,
                results,
            })
        };
        let sources = [
            Source::new("s.json", bench(vec![st.clone()]), None),
            Source::new(
                "r.json",
                bench(vec![rr(9000.0, 30.0, 1024)]),
                Some("rr".into()),
            ),
            Source::new(
                "w.json",
                bench(vec![rr(9000.0, 30.0, 1024), rr(500.0, 900.0, 1 << 20)]),
                None,
            ),
        ];
        let html = render_page(&sources);
        let m = marks(&html);
        for (k, want, got) in &m {
            assert!(*want > 0 && want == got, "{k}: {want} vs {got}");
        }
        let kinds: Vec<&str> = m.iter().map(|x| x.0.as_str()).collect();
        for k in ["over-time", "sweep-rate", "sweep-latency", "percentiles"] {
            assert!(kinds.contains(&k), "no {k} in {kinds:?}");
        }
        assert!(html.contains("Comparison of 3 results"));
        // The single stream test alone is drawn per path and per flow.
        let one = render_page(&sources[..1]);
        let ot = marks(&one)
            .into_iter()
            .find(|x| x.0 == "over-time")
            .unwrap();
        assert_eq!(ot.1, 1 + 2 + 2);
    }

    #[test]
    fn a_single_result_reads_as_a_test_without_experiment_words() {
        let mut r = stream(9.41e9, 1);
        r.spec.flows = 1;
        let src = Source::new(
            "one.json",
            Content::Bench(wirespeed_types::Report {
                schema_version: 1,
                results: vec![r],
            }),
            None,
        );
        let html = render_page(&[src]);
        assert!(html.contains("<h1>stream forward, 1 flow</h1>"), "{html}");
        assert!(html.contains("1 flow, 1 thread, 1 path"), "{html}");
        for bad in [
            "1 flows",
            "1 threads",
            "1 paths",
            "spread",
            "vs baseline",
            "charts have data",
        ] {
            assert!(!html.contains(bad), "{bad} in {html}");
        }
        assert!(html.contains("-i 0.5s"), "no hint for missing intervals");
    }
}
