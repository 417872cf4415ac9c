//! The live page of `wirespeed fleet watch` ([`WatchState`]): the drift
//! events, per workload a heatmap of each host pair's newest figure, and
//! each pair's recent history as a small line chart.

use crate::chart::esc;
use crate::units::{human_bps, human_us, utc_time};
use std::collections::BTreeMap;
use std::fmt::Write;
use wirespeed_types::fleet::{Cell, HistoryRow, Matrix, WatchState};

/// A workload's newest figures as a host matrix (cells: one per link).
fn matrix(st: &WatchState, workload: &str) -> Matrix {
    let rows: Vec<&HistoryRow> = st
        .latest
        .iter()
        .filter(|r| r.workload == workload && r.error.is_none())
        .collect();
    let links: Vec<Cell> = rows
        .iter()
        .map(|r| Cell {
            name: format!(
                "{}/{} -> {}/{}",
                r.client, r.client_nic, r.server, r.server_nic
            ),
            host: r.client.clone(),
            peer: Some(r.server.clone()),
            nic: Some(r.client_nic.clone()),
            throughput_bps: r.throughput_bps,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            samples: vec![r.throughput_bps],
            transactions_per_s: Some(r.transactions_per_s).filter(|x| *x > 0.0),
        })
        .collect();
    let bps: Vec<f64> = links.iter().map(|c| c.throughput_bps).collect();
    let p99: Vec<f64> = links.iter().filter_map(|c| c.p99_us).collect();
    Matrix {
        workload: workload.to_string(),
        latency: !p99.is_empty(),
        hosts: st.agents.clone(),
        median_bps: wirespeed_types::stats::median(&bps).unwrap_or(0.0),
        median_p99_us: wirespeed_types::stats::median(&p99),
        links,
        ..Matrix::default()
    }
}

/// One series as a small line chart: a mark per test, time across.
fn sparkline(rows: &[&HistoryRow], latency: bool) -> String {
    let (w, h, pad) = (240.0, 44.0, 4.0);
    let v = |r: &HistoryRow| {
        if latency {
            r.p50_us.unwrap_or(0.0)
        } else {
            r.throughput_bps
        }
    };
    let (t0, t1) = (
        rows[0].at_unix,
        rows[rows.len() - 1].at_unix.max(rows[0].at_unix + 1.0),
    );
    let top = rows.iter().map(|r| v(r)).fold(0.0, f64::max).max(1e-9);
    let mut marks = String::new();
    let mut path = String::new();
    for (i, r) in rows.iter().enumerate() {
        let x = pad + (r.at_unix - t0) / (t1 - t0) * (w - 2.0 * pad);
        let y = h - pad - v(r) / top * (h - 2.0 * pad);
        let _ = write!(path, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
        let label = if latency {
            human_us(v(r))
        } else {
            human_bps(v(r))
        };
        let _ = write!(
            marks,
            "<circle class=\"mark\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2\"><title>{}: {}</title></circle>",
            esc(&utc_time(r.at_unix)),
            esc(&label)
        );
    }
    format!(
        "<svg class=\"chart\" data-chart=\"history\" data-points=\"{}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"history\"><rect class=\"plot\" x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\"/><path d=\"{path}\" fill=\"none\" stroke=\"#3465a4\" stroke-width=\"2\"/>{marks}</svg>",
        rows.len()
    )
}

fn events(o: &mut String, st: &WatchState) {
    let _ = writeln!(o, "<h2 id=\"drift\">Drift events</h2>");
    if st.events.is_empty() {
        let _ = writeln!(o, "<p>None: no link moved against its own history.</p>");
        return;
    }
    let _ = writeln!(o, "<ul class=\"notes drift-events\">");
    for e in st.events.iter().rev() {
        let _ = writeln!(
            o,
            "<li class=\"drift-event\" data-scope=\"{}\" data-subject=\"{}\"><b>{}</b> {}</li>",
            esc(&e.scope),
            esc(&e.subject),
            esc(&utc_time(e.at_unix)),
            esc(&e.message)
        );
    }
    let _ = writeln!(o, "</ul>");
}

fn histories(o: &mut String, st: &WatchState, workloads: &[String]) {
    let _ = writeln!(
        o,
        "<h2>Each pair over time</h2><div class=\"tw\"><table><tr><th>pair</th><th>workload</th><th class=\"num\">newest</th><th>recent tests</th></tr>"
    );
    for w in workloads {
        let mut by_pair: BTreeMap<(String, String), Vec<&HistoryRow>> = BTreeMap::new();
        for r in st
            .recent
            .iter()
            .filter(|r| &r.workload == w && r.error.is_none())
        {
            let k = if r.client <= r.server {
                (r.client.clone(), r.server.clone())
            } else {
                (r.server.clone(), r.client.clone())
            };
            by_pair.entry(k).or_default().push(r);
        }
        for ((a, b), rows) in by_pair {
            let latency = rows.iter().any(|r| r.p50_us.is_some());
            let last = rows[rows.len() - 1];
            let newest = if latency {
                human_us(last.p50_us.unwrap_or(0.0))
            } else {
                human_bps(last.throughput_bps)
            };
            let _ = writeln!(
                o,
                "<tr><td>{} - {}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&a),
                esc(&b),
                esc(w),
                esc(&newest),
                sparkline(&rows, latency)
            );
        }
    }
    let _ = writeln!(o, "</table></div>");
}

/// The watcher's live page: drift events first, then per workload the
/// heatmap of the newest test of each host pair, then each pair's recent
/// history. It reloads itself every 15 s.
pub fn render_watch_html(st: &WatchState) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<meta http-equiv=\"refresh\" content=\"15\"><h1>Fleet watch: {} agents</h1>",
        st.agents.len()
    );
    let _ = writeln!(
        o,
        "<p class=\"sub\">probes every {:.0} s, a bandwidth test of each pair every {}; {} tests stored since {}; updated {}</p>",
        st.probe_period_s,
        esc(&wirespeed_types::text::human_duration(st.bandwidth_every_s)),
        st.tests_stored,
        esc(&utc_time(st.started_unix)),
        esc(&utc_time(st.now_unix))
    );
    events(&mut o, st);
    let mut workloads: Vec<String> = st.latest.iter().map(|r| r.workload.clone()).collect();
    workloads.sort();
    workloads.dedup();
    for w in &workloads {
        let m = matrix(st, w);
        if m.links.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "<h2>{}</h2><figure><figcaption><span class=\"ft\">Newest test of each host pair</span>, coloured by its share of the fleet median</figcaption>{}</figure>",
            esc(w),
            crate::fleet::heatmap(&m)
        );
    }
    histories(&mut o, st, &workloads);
    crate::html::page("fleet watch", &o)
}
