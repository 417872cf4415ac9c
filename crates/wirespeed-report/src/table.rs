//! The terminal rendering: a summary block per stream test, one row per
//! size for rr/crr sweeps, paths and (on request) flows as tables.

use crate::units::{human_bps, human_count, human_size, human_us, plural};
use comfy_table::{CellAlignment, Table, presets};
use std::fmt::Write;
use wirespeed_types::TestResult;
use wirespeed_types::result::{CpuUsage, LatencySummary, UdpStats};
use wirespeed_types::spec::FlowKind;

/// A new table in wirespeed's style, right-aligning numeric columns.
pub fn new_table(header: &[&str], numeric_from: usize) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    t.remove_style(comfy_table::TableComponent::HorizontalLines);
    t.remove_style(comfy_table::TableComponent::MiddleIntersections);
    t.remove_style(comfy_table::TableComponent::LeftBorderIntersections);
    t.remove_style(comfy_table::TableComponent::RightBorderIntersections);
    t.set_header(header.to_vec());
    for i in numeric_from..header.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The one-line heading of a test.
pub fn heading(r: &TestResult) -> String {
    let s = &r.spec;
    let mut h = s.workload.name().to_string();
    if s.workload.is_bulk() {
        let _ = write!(h, " {}", format!("{:?}", s.direction).to_lowercase());
    } else {
        let _ = write!(
            h,
            " {} / {}",
            human_size(s.request_size as u64),
            human_size(s.response_size as u64)
        );
    }
    let _ = write!(
        h,
        " to {}: {}, {}, {}, {:.1} s",
        r.server,
        plural(s.flows as u64, "flow", "flows"),
        plural(s.threads as u64, "thread", "threads"),
        plural(r.paths.len() as u64, "path", "paths"),
        r.window_s
    );
    if !r.congestion_control.is_empty() {
        let _ = write!(h, ", cc {}", r.congestion_control);
    }
    h
}

fn cpu_text(c: &CpuUsage) -> String {
    format!("{:.0}% (busiest core {:.0}%)", c.total_pct, c.max_core_pct)
}

fn latency_text(l: &LatencySummary) -> String {
    format!(
        "min {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        human_us(l.min_us),
        human_us(l.p50_us),
        human_us(l.p90_us),
        human_us(l.p99_us),
        human_us(l.p999_us),
        human_us(l.max_us)
    )
}

/// A UDP result's datagram figures in one line.
fn udp_text(u: &UdpStats, bulk: bool) -> String {
    if bulk {
        format!(
            "sent {}, received {}, lost {} ({:.3}%), out of order {}, duplicates {}, jitter {}",
            u.datagrams_sent,
            u.datagrams_received,
            u.lost,
            u.loss_pct,
            u.out_of_order,
            u.duplicates,
            human_us(u.jitter_us)
        )
    } else {
        format!(
            "requests {}, answered {}, lost {} ({:.3}%), late answers {}",
            u.datagrams_sent, u.datagrams_received, u.lost, u.loss_pct, u.out_of_order
        )
    }
}

/// A stream (or single rr/crr) result as a summary block and tables.
pub fn render_one(r: &TestResult, per_flow: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", heading(r));
    let mut kv: Vec<(&str, String)> = Vec::new();
    rate_rows(r, &mut kv);
    udp_rows(r, &mut kv);
    kv.push(("cpu client", cpu_text(&r.local_cpu)));
    kv.push(("cpu server", cpu_text(&r.remote_cpu)));
    spread_rows(r, &mut kv);
    let w = kv.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in kv {
        let _ = writeln!(out, "  {k:<w$}  {v}");
    }
    if r.paths.len() > 1 {
        let _ = writeln!(out, "{}", paths_table(r));
    }
    if per_flow {
        let _ = writeln!(out, "{}", flows_table(r));
    }
    if let Some(why) = &r.contended {
        let _ = writeln!(
            out,
            "  CONTENDED: {why}: these figures measured the contention too"
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}

/// The summary's name for a direction's row.
fn direction_row(direction: &str) -> &'static str {
    if direction == "forward" {
        "  client->server"
    } else {
        "  server->client"
    }
}

/// The summary's rate rows: throughput (each direction's, latency under
/// load) for bulk tests, else transactions and latency.
fn rate_rows(r: &TestResult, kv: &mut Vec<(&str, String)>) {
    if r.spec.workload.is_bulk() {
        kv.push((
            "throughput",
            format!(
                "{}   (client {}, server {})",
                human_bps(r.throughput_bps),
                human_bps(r.local_bps),
                human_bps(r.remote_bps)
            ),
        ));
        for d in &r.directions {
            kv.push((
                direction_row(&d.direction),
                format!(
                    "{}   ({})",
                    human_bps(d.received_bps),
                    plural(d.flows as u64, "flow", "flows")
                ),
            ));
        }
        if let Some(l) = &r.probe_latency {
            kv.push(("latency under load", latency_text(l)));
        }
    } else {
        kv.push((
            "transactions",
            format!(
                "{}/s   ({} goodput)",
                human_count(r.transactions_per_s),
                human_bps(r.throughput_bps)
            ),
        ));
        if let Some(l) = &r.latency {
            kv.push(("latency", latency_text(l)));
        }
    }
}

/// The summary's UDP rows: datagrams (per direction when both ways) and
/// the offloads each side had.
fn udp_rows(r: &TestResult, kv: &mut Vec<(&str, String)>) {
    if let Some(u) = &r.udp {
        kv.push(("datagrams", udp_text(u, r.spec.workload.is_bulk())));
        for d in r.directions.iter().filter(|_| r.directions.len() > 1) {
            if let Some(u) = &d.udp {
                kv.push((direction_row(&d.direction), udp_text(u, true)));
            }
        }
    }
    if let Some(o) = &r.udp_offload {
        let yn = |b: bool| if b { "yes" } else { "no" };
        kv.push((
            "udp offload",
            format!(
                "GSO client {} server {}, GRO client {} server {} (asked: GSO {}, GRO {})",
                yn(o.client_gso),
                yn(o.server_gso),
                yn(o.client_gro),
                yn(o.server_gro),
                if r.spec.udp_gso { "on" } else { "off" },
                if r.spec.udp_gro { "on" } else { "off" },
            ),
        ));
    }
}

/// The summary's rows on how the test spread: TCP's mean state,
/// fairness over flows, balance over paths, a shared server.
fn spread_rows(r: &TestResult, kv: &mut Vec<(&str, String)>) {
    let infos: Vec<_> = r.flows.iter().filter_map(|f| f.tcp_info.as_ref()).collect();
    if !infos.is_empty() {
        let n = infos.len() as u64;
        let retrans: u64 = infos.iter().map(|i| i.retransmits).sum();
        let rtt = infos.iter().map(|i| i.rtt_us).sum::<u64>() / n;
        let cwnd = infos.iter().map(|i| i.cwnd).sum::<u64>() / n;
        let mss = infos.iter().map(|i| i.mss).max().unwrap_or(0);
        kv.push((
            "tcp",
            format!("retransmits {retrans}, mean rtt {rtt} us, mean cwnd {cwnd}, mss {mss}"),
        ));
    }
    if r.flows.len() > 1 {
        kv.push((
            "fairness",
            format!("{:.3} (Jain's index over flows)", r.fairness),
        ));
    }
    if r.paths.len() > 1 {
        kv.push((
            "path balance",
            format!("{:.3} (weakest path / strongest)", r.path_balance),
        ));
    }
    if r.server_concurrent_tests > 1 {
        kv.push((
            "shared server",
            format!(
                "{} tests ran on the server at once: figures are shared",
                r.server_concurrent_tests
            ),
        ));
    }
}

/// A row per path.
fn paths_table(r: &TestResult) -> Table {
    let mut t = new_table(
        &[
            "path",
            "local=remote",
            "flows",
            "throughput",
            "forward",
            "reverse",
            "share",
            "loss",
        ],
        2,
    );
    for p in &r.paths {
        t.add_row(vec![
            p.index.to_string(),
            p.label.clone(),
            p.flows.to_string(),
            human_bps(p.throughput_bps),
            human_bps(p.forward_bps),
            human_bps(p.reverse_bps),
            format!("{:.1}%", p.share * 100.0),
            p.udp
                .as_ref()
                .map_or("-".into(), |u| format!("{:.2}%", u.loss_pct)),
        ]);
    }
    t
}

/// A row per flow (`--per-flow`).
fn flows_table(r: &TestResult) -> Table {
    let mut t = new_table(
        &[
            "flow",
            "kind",
            "path",
            "thread",
            "throughput",
            "trans",
            "retrans",
            "rtt us",
            "cwnd",
            "loss",
            "jitter",
        ],
        2,
    );
    for f in &r.flows {
        let i = f.tcp_info.clone().unwrap_or_default();
        let kind = f.kind.map_or("?", FlowKind::name);
        t.add_row(vec![
            f.id.to_string(),
            kind.to_string(),
            f.path.to_string(),
            f.thread.to_string(),
            human_bps(f.throughput_bps),
            f.transactions.to_string(),
            i.retransmits.to_string(),
            i.rtt_us.to_string(),
            i.cwnd.to_string(),
            f.udp
                .as_ref()
                .map_or("-".into(), |u| format!("{:.2}%", u.loss_pct)),
            f.udp.as_ref().map_or("-".into(), |u| human_us(u.jitter_us)),
        ]);
    }
    t
}

/// Several rr/crr results (a size sweep) as one row per size.
pub fn render_sweep(rs: &[TestResult]) -> String {
    let mut out = String::new();
    if let Some(r) = rs.first() {
        let s = &r.spec;
        let _ = writeln!(
            out,
            "{} size sweep to {}: {}, {}, {:.1} s each",
            s.workload.name(),
            r.server,
            plural(s.flows as u64, "flow", "flows"),
            plural(s.threads as u64, "thread", "threads"),
            r.window_s
        );
    }
    let mut t = new_table(
        &[
            "request", "response", "trans/s", "goodput", "min", "p50", "p90", "p99", "p99.9", "max",
        ],
        0,
    );
    for r in rs {
        let l = r.latency.clone().unwrap_or_default();
        t.add_row(vec![
            human_size(r.spec.request_size as u64),
            human_size(r.spec.response_size as u64),
            human_count(r.transactions_per_s),
            human_bps(r.throughput_bps),
            human_us(l.min_us),
            human_us(l.p50_us),
            human_us(l.p90_us),
            human_us(l.p99_us),
            human_us(l.p999_us),
            human_us(l.max_us),
        ]);
    }
    let _ = writeln!(out, "{t}");
    let mut notes: Vec<&String> = Vec::new();
    let contended: Vec<String> = rs
        .iter()
        .filter_map(|r| {
            let why = r.contended.as_ref()?;
            let size = human_size(r.spec.request_size as u64);
            Some(format!("CONTENDED at {size} requests: {why}"))
        })
        .collect();
    for n in contended.iter().chain(rs.iter().flat_map(|r| &r.notes)) {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    for n in notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}
