//! The live page of `wirespeed fleet watch` ([`WatchState`]): the
//! incidents, open first; per workload a heatmap of each host pair's
//! newest figure, each cell coloured by its own link's health against
//! its own baseline; the incidents' transitions; and each pair's recent
//! history as a small line chart.

use crate::chart::esc;
use crate::units::{human_bps, human_us, utc_time};
use std::collections::BTreeMap;
use std::fmt::Write;
use wirespeed_types::fleet::{Cell, Health, HistoryRow, Matrix, WatchState};

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
    let _ = writeln!(o, "<h2 id=\"drift\">Transitions</h2>");
    if st.events.is_empty() {
        let _ = writeln!(o, "<p>None: no link left its own baseline.</p>");
        return;
    }
    let _ = writeln!(o, "<ul class=\"notes drift-events\">");
    for e in st.events.iter().rev().take(50) {
        let _ = writeln!(
            o,
            "<li class=\"drift-event\" data-scope=\"{}\" data-subject=\"{}\" data-transition=\"{}\"><b>{}</b> {} {}</li>",
            esc(&e.scope),
            esc(&e.subject),
            esc(&e.transition),
            esc(&utc_time(e.at_unix)),
            esc(&e.transition),
            esc(&e.message)
        );
    }
    let _ = writeln!(o, "</ul>");
}

/// The incidents, open first: start, end, worst figure, evidence.
fn incidents(o: &mut String, st: &WatchState) {
    let open = st
        .incidents
        .iter()
        .filter(|i| i.closed_unix.is_none())
        .count();
    let _ = writeln!(
        o,
        "<h2 id=\"incidents\">Incidents: {open} open, {} closed in the last day</h2>",
        st.incidents.len() - open
    );
    if st.incidents.is_empty() {
        let _ = writeln!(o, "<p>None: every link is within its own baseline.</p>");
        return;
    }
    let _ = writeln!(
        o,
        "<div class=\"tw\"><table class=\"incidents\"><tr><th>#</th><th>state</th><th>what</th><th>since</th><th>ended</th><th>worst</th><th>evidence</th></tr>"
    );
    for i in &st.incidents {
        let (state, ended) = match (i.closed_unix, &i.outcome) {
            (Some(t), Some(why)) => (format!("closed: {why}"), utc_time(t)),
            (Some(t), None) => ("closed".to_string(), utc_time(t)),
            _ => ("OPEN".to_string(), String::new()),
        };
        let _ = writeln!(
            o,
            "<tr class=\"incident {}\" data-scope=\"{}\" data-subject=\"{}\"><td>{}</td><td>{}</td><td>{} <b>{}</b></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if i.closed_unix.is_none() {
                "open"
            } else {
                "closed"
            },
            esc(&i.scope),
            esc(&i.subject),
            i.id,
            esc(&state),
            esc(&i.scope),
            esc(&i.subject),
            esc(&utc_time(i.since_unix)),
            esc(&ended),
            esc(&i.figure()),
            esc(&i.evidence)
        );
    }
    let _ = writeln!(o, "</table></div>");
}

/// The worst health of `workload`'s series between hosts `a` and `b`
/// (either order, any NIC pair), the series' ratio, and whether its
/// newest test was contended.
fn cell_health(st: &WatchState, workload: &str, a: &str, b: &str) -> (Health, f64, bool) {
    let mut out = (Health::Healthy, 1.0, false);
    for h in st
        .health
        .iter()
        .filter(|h| h.workload == workload && ((h.a == a && h.b == b) || (h.a == b && h.b == a)))
    {
        out.2 |= h.contended;
        let r = h.ratio();
        if h.health > out.0 || (h.health == out.0 && r > out.1) {
            (out.0, out.1) = (h.health, r);
        }
    }
    out
}

/// A cell's fill and words for its link's own health.
fn paint(st: &WatchState, workload: &str, a: &str, b: &str) -> (String, String) {
    let busy = |h: &str| st.busy_hosts.iter().any(|x| x == h);
    match cell_health(st, workload, a, b) {
        (Health::Degraded, r, _) => (
            "rgb(215,60,70)".into(),
            format!("degraded: {r:.1}x its baseline"),
        ),
        (Health::Suspect, r, _) => (
            "rgb(235,170,60)".into(),
            format!("suspect: {r:.1}x its baseline"),
        ),
        (_, _, true) => (
            "rgb(170,180,200)".into(),
            "not judged: an end's CPUs were busy".into(),
        ),
        _ if busy(a) || busy(b) => (
            "rgb(170,180,200)".into(),
            "not judged: an end's CPUs are busy".into(),
        ),
        _ => ("rgb(60,180,80)".into(), "within its own baseline".into()),
    }
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

/// The watcher's live page: incidents first (open, then closed), then
/// per workload the heatmap of the newest test of each host pair painted
/// by its link's own health, then the transitions and each pair's recent
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
    incidents(&mut o, st);
    if !st.busy_hosts.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"busy\">CPUs busy (next to no idle time; their links are not judged meanwhile): {}</p>",
            esc(&st.busy_hosts.join(", "))
        );
    }
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
            "<h2>{}</h2><figure><figcaption><span class=\"ft\">Newest test of each host pair</span>, coloured by its own link's health against its own baseline: green within it, amber suspect, red degraded, grey not judged (busy CPUs)</figcaption>{}</figure>",
            esc(w),
            crate::fleet::heatmap_painted(&m, &|c, s, _| paint(st, w, c, s))
        );
    }
    events(&mut o, st);
    histories(&mut o, st, &workloads);
    crate::html::page("fleet watch", &o)
}

/// The incidents as text, open first, each folded to 100 columns: what,
/// since when, its worst figure and its evidence.
pub fn render_incidents(incidents: &[wirespeed_types::fleet::Incident]) -> String {
    let open = incidents.iter().filter(|i| i.closed_unix.is_none()).count();
    let mut o = String::new();
    if incidents.is_empty() {
        o.push_str("no incidents: every link is within its own baseline\n");
        return o;
    }
    let _ = writeln!(
        o,
        "{open} open incident(s), {} closed:",
        incidents.len() - open
    );
    for i in incidents {
        let state = match (i.closed_unix, &i.outcome) {
            (None, _) => "OPEN".to_string(),
            (Some(t), why) => format!(
                "closed {} ({})",
                utc_time(t),
                why.as_deref().unwrap_or("recovered")
            ),
        };
        let line = format!(
            "#{} {state}: {} {} since {}: {}; {}",
            i.id,
            i.scope,
            i.subject,
            utc_time(i.since_unix),
            i.figure(),
            i.evidence
        );
        let _ = writeln!(o, "{}", crate::units::fold(&format!("  {line}")));
    }
    o
}
