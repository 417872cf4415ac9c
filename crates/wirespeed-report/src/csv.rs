//! The CSV report, quoted per RFC 4180, for spreadsheets and scripts: for
//! an experiment one row per measured point (a cell, or one sweep value of
//! a cell); for bench results one row per test (per size in a sweep), per
//! interval (total, each path, each flow), per flow and per side's CPU.

use crate::experiment::ExperimentResults;
use std::fmt::Write;
use wirespeed_types::TestResult;
use wirespeed_types::result::{IntervalSample, finite};

/// Quotes a CSV field when it holds a comma, quote or line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(x: f64) -> String {
    let x = finite(x);
    if x == x.trunc() && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{:.2}", finite(v))).unwrap_or_default()
}

/// The header of [`render_csv`]'s output.
pub const CSV_HEADER: &str = "experiment,mode,cell,baseline,change,sweep_arg,x,metric,runs,median,min,max,stddev_pct,spread_pct,vs_baseline_pct,vs_previous_pct,p50_us,p90_us,p99_us";

/// Renders the experiment as CSV with a header row.
pub fn render_csv(res: &ExperimentResults) -> String {
    let mut o = String::from(CSV_HEADER);
    o.push('\n');
    for c in &res.cells {
        for (i, p) in c.points.iter().enumerate() {
            let last = i + 1 == c.points.len();
            let fields = [
                csv_field(&res.name),
                res.mode.as_str().to_string(),
                csv_field(&c.name),
                (c.name == res.baseline).to_string(),
                csv_field(&c.change),
                csv_field(c.sweep_arg.as_deref().unwrap_or("")),
                csv_field(p.x.as_deref().unwrap_or("")),
                match c.metric {
                    crate::Metric::ThroughputBps => "throughput_bps".into(),
                    crate::Metric::TransactionsPerS => "transactions_per_s".into(),
                },
                p.stats.n.to_string(),
                num(p.stats.median),
                num(p.stats.min),
                num(p.stats.max),
                format!("{:.2}", finite(p.stats.stddev_pct)),
                format!("{:.2}", finite(p.stats.spread_pct)),
                opt(p.vs_baseline_pct),
                opt(if last { c.vs_previous_pct } else { None }),
                opt(p.latency.as_ref().map(|l| l.p50_us)),
                opt(p.latency.as_ref().map(|l| l.p90_us)),
                opt(p.latency.as_ref().map(|l| l.p99_us)),
            ];
            let _ = writeln!(o, "{}", fields.join(","));
        }
    }
    o
}

/// The header of [`render_page_csv`]'s output: one table for every kind
/// of row, columns left empty where a row has no such figure.
pub const PAGE_CSV_HEADER: &str = "result,test,row,series,x,x_unit,throughput_bps,transactions_per_s,latency_count,latency_min_us,latency_p50_us,latency_p90_us,latency_p99_us,latency_p999_us,latency_max_us,retransmits,rtt_us,cwnd,delivery_rate_bps,cpu_pct,busiest_core_pct";

/// One row of the page CSV; None leaves a column empty.
#[derive(Default)]
struct PageRow {
    row: &'static str,
    series: String,
    x: Option<f64>,
    x_unit: &'static str,
    bps: Option<f64>,
    tps: Option<f64>,
    lat: [Option<f64>; 7],
    tcp: [Option<f64>; 4],
    cpu: [Option<f64>; 2],
}

fn cell(x: Option<f64>) -> String {
    x.map(num).unwrap_or_default()
}

/// Renders these sources as CSV, one row per test (per size in a sweep),
/// per interval (total, each path, each flow), per flow and per side's
/// CPU, every row naming its result and test. A single experiment keeps
/// its own per-point layout ([`render_csv`]).
pub fn render_page_csv(sources: &[crate::Source]) -> String {
    use crate::source::{Content, all_series, describe};
    if let [one] = sources
        && let Content::Experiment(e) = &one.content
    {
        return render_csv(e);
    }
    let mut o = String::from(PAGE_CSV_HEADER);
    o.push('\n');
    for s in all_series(sources) {
        for p in &s.points {
            let r = p.run;
            let size = matches!(s.x_title.as_str(), "request size");
            let mut rows: Vec<PageRow> = vec![test_row(r, p.x.as_ref(), size)];
            for x in &r.intervals {
                interval_rows(r, x, &mut rows);
            }
            flow_and_cpu_rows(r, &mut rows);
            let test = describe(r);
            for row in rows {
                let mut f = vec![
                    csv_field(&s.label),
                    csv_field(&test),
                    row.row.to_string(),
                    csv_field(&row.series),
                    cell(row.x),
                    row.x_unit.to_string(),
                    cell(row.bps),
                    cell(row.tps),
                ];
                f.extend(row.lat.iter().map(|v| cell(*v)));
                f.extend(row.tcp.iter().map(|v| cell(*v)));
                f.extend(row.cpu.iter().map(|v| cell(*v)));
                let _ = writeln!(o, "{}", f.join(","));
            }
        }
    }
    o
}

/// A test's row: its rates, latency and mean TCP state, at its sweep
/// value `x` (in bytes when the sweep is of `size`).
fn test_row(r: &TestResult, x: Option<&(String, f64)>, size: bool) -> PageRow {
    use crate::source::{latency_of, main_flows};
    let l = latency_of(r);
    let infos: Vec<_> = main_flows(r).filter_map(|f| f.tcp_info.as_ref()).collect();
    PageRow {
        row: "test",
        series: "total".into(),
        x: x.map(|x| x.1),
        x_unit: if x.is_some() && size { "bytes" } else { "" },
        bps: Some(r.throughput_bps),
        tps: Some(r.transactions_per_s),
        lat: l.map_or([None; 7], |l| {
            [
                Some(l.count as f64),
                Some(l.min_us),
                Some(l.p50_us),
                Some(l.p90_us),
                Some(l.p99_us),
                Some(l.p999_us),
                Some(l.max_us),
            ]
        }),
        tcp: if infos.is_empty() {
            [None; 4]
        } else {
            let k = infos.len() as f64;
            [
                Some(infos.iter().map(|i| i.retransmits as f64).sum()),
                Some(infos.iter().map(|i| i.rtt_us as f64).sum::<f64>() / k),
                Some(infos.iter().map(|i| i.cwnd as f64).sum::<f64>() / k),
                Some(infos.iter().map(|i| i.delivery_rate_bps as f64).sum()),
            ]
        },
        ..PageRow::default()
    }
}

/// Interval `x`'s rows: the total, each path (when several) and each flow.
fn interval_rows(r: &TestResult, x: &IntervalSample, rows: &mut Vec<PageRow>) {
    use crate::source::{interval_latency, main_flows};
    let il = interval_latency(x);
    rows.push(PageRow {
        row: "interval",
        series: "total".into(),
        x: Some(x.t_s),
        x_unit: "s",
        bps: Some(x.bps),
        tps: Some(x.tps),
        lat: il.map_or([None; 7], |l| {
            [
                Some(l.count as f64),
                None,
                Some(l.p50_us),
                Some(l.p90_us),
                Some(l.p99_us),
                None,
                Some(l.max_us),
            ]
        }),
        ..PageRow::default()
    });
    if r.paths.len() > 1 && !x.flow_bps.is_empty() {
        for path in &r.paths {
            let ids = main_flows(r).filter(|f| f.path == path.index);
            let (b, t) = ids.fold((0.0, 0.0), |(b, t), f| {
                let i = f.id as usize;
                (
                    b + x.flow_bps.get(i).copied().unwrap_or(0.0),
                    t + x.flow_tps.get(i).copied().unwrap_or(0.0),
                )
            });
            rows.push(PageRow {
                row: "interval",
                series: format!("path {}", path.index),
                x: Some(x.t_s),
                x_unit: "s",
                bps: Some(b),
                tps: Some(t),
                ..PageRow::default()
            });
        }
    }
    for f in r.flows.iter() {
        let i = f.id as usize;
        let Some(b) = x.flow_bps.get(i) else { continue };
        rows.push(PageRow {
            row: "interval",
            series: format!("flow {}", f.id),
            x: Some(x.t_s),
            x_unit: "s",
            bps: Some(*b),
            tps: Some(x.flow_tps.get(i).copied().unwrap_or(0.0)),
            ..PageRow::default()
        });
    }
}

/// A row per flow over the window, and one per side's CPU.
fn flow_and_cpu_rows(r: &TestResult, rows: &mut Vec<PageRow>) {
    for f in &r.flows {
        let i = f.tcp_info.as_ref();
        rows.push(PageRow {
            row: "flow",
            series: format!("flow {}", f.id),
            bps: Some(f.throughput_bps),
            tps: Some(finite(f.transactions as f64 / r.window_s)),
            tcp: i.map_or([None; 4], |i| {
                [
                    Some(i.retransmits as f64),
                    Some(i.rtt_us as f64),
                    Some(i.cwnd as f64),
                    Some(i.delivery_rate_bps as f64),
                ]
            }),
            ..PageRow::default()
        });
    }
    for (side, c) in [("client", &r.local_cpu), ("server", &r.remote_cpu)] {
        rows.push(PageRow {
            row: "cpu",
            series: side.into(),
            cpu: [Some(c.total_pct), Some(c.max_core_pct)],
            ..PageRow::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::finalize;
    use crate::fixtures::{cell, rr};

    #[test]
    fn fields_are_quoted_and_rows_have_every_column() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        let mut res = ExperimentResults {
            name: "x".into(),
            cells: vec![
                cell("base", vec![rr(1000.0, 20.0, 1)]),
                cell(
                    "with, comma",
                    vec![rr(f64::NAN, 30.0, 1), rr(1500.0, 30.0, 1)],
                ),
            ],
            ..ExperimentResults::default()
        };
        finalize(&mut res);
        let text = render_csv(&res);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let cols = CSV_HEADER.split(',').count();
        assert!(lines[2].starts_with("x,one-at-a-time,\"with, comma\",false,"));
        let unquoted = lines[2].replace("\"change of with, comma\"", "c");
        assert_eq!(
            unquoted.replace("\"with, comma\"", "c").split(',').count(),
            cols
        );
        assert!(lines[2].contains(",50.00,"), "{}", lines[2]);
        assert!(!text.contains("NaN"));
    }
}
