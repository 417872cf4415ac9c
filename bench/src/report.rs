//! What a group's runs come to: the detail lines, the summary row with
//! its targets, the JSON, and the two tables.

use crate::contender::{Group, Kind, Table};
use crate::samples::{Samples, gbps, median, p50, p99, tps};
use crate::tools::Figures;
use crate::{CAP_BPS, GOODPUT_RATIO, MSG};
use std::fmt::Write as _;

/// One row of a summary table.
pub(crate) struct Row {
    table: Table,
    group: &'static str,
    settings: String,
    wirespeed: String,
    peer: String,
    ratio: Option<f64>,
    /// wirespeed over the row's bare C floor, where it has one.
    floor: Option<f64>,
    target: Option<(String, bool)>,
}

/// Appends `g`'s detail, a line per contender, to `report`.
pub(crate) fn write_detail(g: &Group, samples: &[Samples], report: &mut String) {
    let _ = writeln!(report, "\n== {} ({})", g.name, g.settings);
    for (ct, s) in g.contenders.iter().zip(samples) {
        match g.kind {
            Kind::Rr => {
                let (lo, hi) = s.spread(tps);
                let _ = writeln!(
                    report,
                    "  {:<52} {:>9.0} trans/s ({lo:.0}-{hi:.0})  p50 {:>8.1} us  p99 {:>8.1} us  client user {:>4.1}% of its cpu  cpu {:.1}%/ktps  client {:.0} KiB/flow",
                    ct.label,
                    s.med(tps),
                    s.med(p50),
                    s.med(p99),
                    median(s.client_user_pct.clone()),
                    median(s.cpu_per_ktps.clone()),
                    per_flow(s, g.flows),
                );
            }
            Kind::Stream => {
                let (lo, hi) = s.spread(gbps);
                let _ = writeln!(
                    report,
                    "  {:<52} {:>7.2} Gbit/s ({lo:.2}-{hi:.2})  client cpu {:>5.1}%/Gbit/s (user {:>4.1}%)  server {:>5.1}%/Gbit/s  client {:.0} KiB/flow",
                    ct.label,
                    s.med(gbps),
                    median(s.cpu_per_gbps.clone()),
                    median(s.client_user_pct.clone()),
                    median(s.server_cpu_per_gbps.clone()),
                    per_flow(s, g.flows),
                );
                if let Some(p) = &s.profile {
                    let _ = writeln!(
                        report,
                        "    perf, 1 s mid-run, % of all CPU samples:{}",
                        p.render()
                    );
                }
            }
        }
    }
}

/// The client's median peak memory per flow, KiB.
fn per_flow(s: &Samples, flows: u32) -> f64 {
    median(s.rss_kb.clone()) / f64::from(flows.max(1))
}

/// A contender's figures for a summary row: the rate, and for a cost
/// curve what it cost (CPU of both sides, client memory per flow).
fn figure(g: &Group, s: &Samples) -> String {
    let curve = g.table == Table::Curve;
    match g.kind {
        Kind::Rr if curve => format!(
            "{:.0} trans/s, {:.1}% cpu per 1k trans/s, {:.0} KiB/flow",
            s.med(tps),
            median(s.cpu_per_ktps.clone()),
            per_flow(s, g.flows)
        ),
        Kind::Rr => format!("{:.0} trans/s, p99 {:.1} us", s.med(tps), s.med(p99)),
        Kind::Stream if curve => format!(
            "{:.2} Gbit/s, cpu {:.1}+{:.1}%/Gbit/s, {:.0} KiB/flow",
            s.med(gbps),
            median(s.cpu_per_gbps.clone()),
            median(s.server_cpu_per_gbps.clone()),
            per_flow(s, g.flows)
        ),
        Kind::Stream => format!("{:.2} Gbit/s", s.med(gbps)),
    }
}

/// `g`'s summary row: wirespeed against the best peer, and the ratio
/// between them.
pub(crate) fn summary_row(g: &Group, samples: &[Samples], errors: &[String]) -> (Row, Option<f64>) {
    let list = &g.contenders;
    let ws = &samples[0];
    let pick: fn(&Figures) -> f64 = if g.kind == Kind::Rr { tps } else { gbps };
    let best = list
        .iter()
        .zip(samples)
        .filter(|(c, _)| !c.is_wirespeed() && !c.is_floor())
        .max_by(|a, b| a.1.med(pick).total_cmp(&b.1.med(pick)));
    let floor = list
        .iter()
        .zip(samples)
        .find(|(c, _)| c.is_floor())
        .map(|(_, s)| ws.med(pick) / s.med(pick));
    let fmt = |s: &Samples| figure(g, s);
    let ratio = best.map(|(_, s)| ws.med(pick) / s.med(pick));
    // Rounds where wirespeed beat the best peer's figure of the same round.
    let ahead = best.and_then(|(_, s)| {
        let (a, b) = (&ws.figures, &s.figures);
        (a.len() == b.len()).then(|| {
            let k = a.iter().zip(b).filter(|(x, y)| pick(x) > pick(y)).count();
            format!(", ahead in {k} of {} rounds", a.len())
        })
    });
    let ahead = ahead.unwrap_or_default();
    let target = match (g.table, g.kind, best, ratio) {
        _ if !errors.is_empty() => Some((format!("{} run(s) failed", errors.len()), false)),
        (Table::Equal | Table::Defaults, Kind::Stream, Some(_), Some(r)) => {
            Some((format!("{r:.2}x >= 1.0x the best peer{ahead}"), r >= 1.0))
        }
        (Table::Equal, Kind::Rr, Some((_, s)), Some(r)) => {
            let (wp, sp) = (ws.med(p99), s.med(p99));
            Some((
                format!("{r:.2}x >= 1.0x trans/s, p99 {wp:.1} <= {sp:.1} us{ahead}"),
                r >= 1.0 && wp <= sp,
            ))
        }
        _ => None,
    };
    let row = Row {
        table: g.table,
        group: g.name,
        settings: g.settings.clone(),
        wirespeed: format!("{}: {}", list[0].label, fmt(ws)),
        peer: best
            .map(|(c, s)| format!("{}: {}", c.label, fmt(s)))
            .unwrap_or_else(|| "none here".into()),
        ratio,
        floor,
        target,
    };
    (row, ratio)
}

/// `g`'s JSON: every contender's figures run by run.
pub(crate) fn group_json(
    g: &Group,
    samples: &[Samples],
    ratio: Option<f64>,
    errors: &[String],
) -> serde_json::Value {
    let json: serde_json::Map<String, serde_json::Value> = g
        .contenders
        .iter()
        .zip(samples)
        .map(|(ct, s)| {
            (
                ct.label.clone(),
                serde_json::json!({
                    "argv": ct.procs.iter().map(|p| &p.0).collect::<Vec<_>>(),
                    "gbps": s.figures.iter().map(gbps).collect::<Vec<_>>(),
                    "tps": s.figures.iter().map(tps).collect::<Vec<_>>(),
                    "p50_us": s.figures.iter().map(p50).collect::<Vec<_>>(),
                    "p99_us": s.figures.iter().map(p99).collect::<Vec<_>>(),
                    "client_cpu_pct_per_gbps": s.cpu_per_gbps,
                    "server_cpu_pct_per_gbps": s.server_cpu_per_gbps,
                    "client_user_pct": s.client_user_pct,
                    "client_maxrss_kb": s.rss_kb,
                    "cpu_pct_per_ktps": s.cpu_per_ktps,
                    "perf_pct": s.profile.as_ref().map(|p| p.json()),
                }),
            )
        })
        .collect();
    serde_json::json!({
        "table": match g.table {
            Table::Defaults => "defaults",
            Table::Equal => "equal",
            Table::Pinned => "pinned",
            Table::Curve => "curve",
        },
        "flows": g.flows,
        "settings": g.settings,
        "ratio_vs_best_peer": ratio,
        "errors": errors,
        "contenders": json,
    })
}

/// The median of contender `label`'s figure `key` in a group's JSON `j`.
fn json_median(j: &serde_json::Value, label: &str, key: &str) -> f64 {
    j["contenders"][label][key]
        .as_array()
        .map(|v| median(v.iter().filter_map(|x| x.as_f64()).collect()))
        .unwrap_or(0.0)
}

/// The target beyond the tables that group `name` (`g`, JSON `j`) is
/// measured for, if any.
pub(crate) fn extra_target(name: &str, g: &Group, j: &serde_json::Value) -> Option<(String, bool)> {
    match name {
        "s1-bbr" => {
            // Sender CPU per Gbit/s below iperf3's, at equal settings.
            let c = |k: &str| json_median(j, k, "client_cpu_pct_per_gbps");
            let (wc, ic) = (
                c(&g.contenders[0].label),
                c(&format!("iperf3 -l {MSG} -C bbr")),
            );
            Some((
                format!("sender cpu: wirespeed {wc:.1} <= iperf3 {ic:.1} %/Gbit/s (s1-bbr)"),
                wc <= ic,
            ))
        }
        "caps" => {
            let ceiling = 2.0 * CAP_BPS * GOODPUT_RATIO / 1e9;
            let w = json_median(j, &g.contenders[0].label, "gbps");
            let pct = w / ceiling * 100.0;
            Some((
                format!(
                    "caps: wirespeed {pct:.1}% >= 98% of the goodput ceiling {ceiling:.3} Gbit/s"
                ),
                pct >= 98.0,
            ))
        }
        _ => None,
    }
}

/// The shipped binary's size target: the wirespeed under test (the
/// dist profile's, which bench/compare builds) at most 20 MB.
pub(crate) fn size_target(ws: &str) -> (String, bool) {
    const MOST: u64 = 20_000_000;
    match std::fs::metadata(ws) {
        Ok(m) => (
            format!(
                "size: {ws} {:.2} MB <= {:.0} MB",
                m.len() as f64 / 1e6,
                MOST as f64 / 1e6
            ),
            m.len() <= MOST,
        ),
        Err(e) => (format!("size: {ws}: {e}"), false),
    }
}

/// Prints the two summary tables; true when a row's runs failed.
pub(crate) fn print_tables(rows: &[Row]) -> bool {
    let mut failed = false;
    for (table, title) in [
        (
            Table::Defaults,
            "defaults against defaults (what a user sees; not a speed claim)",
        ),
        (
            Table::Equal,
            "equal settings, unpinned (same message size, cc, flows; threads where the peer has them)",
        ),
        (
            Table::Pinned,
            "equal settings, pinned (explains the rows above; claims nothing)",
        ),
        (
            Table::Curve,
            "cost curves (rate, CPU of client+server per Gbit/s or per 1k trans/s, client memory per flow)",
        ),
    ] {
        if !rows.iter().any(|r| r.table == table) {
            continue;
        }
        println!("\n## {title}\n");
        println!("| group | settings | wirespeed | best peer | ratio | vs C floor | target |");
        println!("|---|---|---|---|---|---|---|");
        for r in rows.iter().filter(|r| r.table == table) {
            let t = match &r.target {
                Some((t, ok)) => {
                    failed |= !ok && t.contains("failed");
                    format!("[{}] {t}", if *ok { "met" } else { "MISS" })
                }
                None => String::new(),
            };
            let x = |v: Option<f64>| v.map(|x| format!("{x:.2}x")).unwrap_or_default();
            println!(
                "| {} | {} | {} | {} | {} | {} | {t} |",
                r.group,
                r.settings,
                r.wirespeed,
                r.peer,
                x(r.ratio),
                x(r.floor)
            );
        }
    }
    failed
}
