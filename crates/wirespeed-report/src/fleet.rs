//! A fleet run ([`FleetResults`]) for the terminal: per workload the
//! host matrix (client rows, server columns; each cell the median over the
//! NIC pairs of that host pair), the NICs and hosts, then the outliers
//! with their evidence, agents down, and the verdict.

use crate::table::new_table;
use crate::units::{human_bps, human_us};
use std::collections::BTreeMap;
use std::fmt::Write;
use wirespeed_types::fleet::{Cell, FleetResults, Matrix, Outlier};

/// A host pair's figure: the median over its links (NIC pairs).
pub fn host_pair(m: &Matrix, client: &str, server: &str) -> Option<(f64, Option<f64>)> {
    let cs = pair_cells(m, client, server);
    (!cs.is_empty()).then(|| medians(&cs))
}

/// The median goodput and median p99 of the links `cs` (not empty).
fn medians(cs: &[&Cell]) -> (f64, Option<f64>) {
    let mut bps: Vec<f64> = cs.iter().map(|c| c.throughput_bps).collect();
    bps.sort_by(f64::total_cmp);
    let mut p99: Vec<f64> = cs.iter().filter_map(|c| c.p99_us).collect();
    p99.sort_by(f64::total_cmp);
    (bps[bps.len() / 2], p99.get(p99.len() / 2).copied())
}

/// The links (NIC pairs) from `client` to `server`.
fn pair_cells<'a>(m: &'a Matrix, client: &str, server: &str) -> Vec<&'a Cell> {
    m.links
        .iter()
        .filter(|c| c.host == client && c.peer.as_deref() == Some(server))
        .collect()
}

/// A host pair's figure in its workload's unit (the median link's
/// transactions/s for request/response, else goodput), with its p99.
fn pair_text(m: &Matrix, client: &str, server: &str) -> Option<String> {
    let mut cs = pair_cells(m, client, server);
    if cs.is_empty() {
        return None;
    }
    let (_, p99) = medians(&cs);
    let f = |c: &&Cell| c.transactions_per_s.unwrap_or(c.throughput_bps);
    cs.sort_by(|a, b| f(a).total_cmp(&f(b)));
    let fig = headline(cs[cs.len() / 2]);
    Some(match p99 {
        Some(p) if m.latency => format!("{fig} p99 {}", human_us(p)),
        _ => fig,
    })
}

/// The run as terminal tables.
pub fn render_fleet(r: &FleetResults) -> String {
    render(r, true)
}

/// The run without its matrix tables: the run line, each workload's
/// medians and noise band, outliers, agents down, failures, contended
/// tests and the verdict (`k8s run` shows its pairs in its cases table).
pub fn render_fleet_brief(r: &FleetResults) -> String {
    render(r, false)
}

fn render(r: &FleetResults, tables: bool) -> String {
    let mut out = String::new();
    let up = r.agents.iter().filter(|a| a.up).count();
    let _ = writeln!(
        out,
        "fleet: {} agents ({up} up), {}, {} per host at once, {} rounds, {} tests, {} repeat(s), {:.1} s",
        r.agents.len(),
        r.pattern,
        r.concurrent,
        r.rounds,
        r.tests.len(),
        r.repeats,
        r.elapsed_s
    );
    for m in &r.matrices {
        matrix_text(m, tables, &mut out);
    }
    if r.outliers.is_empty() && r.matrices.is_empty() {
        // A partial file: the matrices and outliers come at the run's end.
    } else if r.outliers.is_empty() {
        let _ = writeln!(
            out,
            "\nno outlier: every link, NIC and host is within the noise band of the fleet median"
        );
    } else {
        let _ = writeln!(out, "\noutliers:");
        for o in &r.outliers {
            let mut text = String::new();
            outlier_text(o, &mut text);
            out.push_str(&crate::fold(&text));
        }
    }
    for a in r.agents.iter().filter(|a| !a.up) {
        let why = a.error.as_deref().unwrap_or("no answer");
        let _ = writeln!(
            out,
            "\n{}",
            crate::fold(&format!("agent {} is DOWN: {why}", a.name))
        );
    }
    let failed = r.tests.iter().filter(|t| t.error.is_some()).count();
    if failed > 0 {
        let _ = writeln!(
            out,
            "{failed} of {} tests failed or were skipped",
            r.tests.len()
        );
    }
    contended_text(r, &mut out);
    if let Some(v) = &r.verdict {
        if v.passed() {
            let _ = writeln!(out, "\nPASS");
        } else if v.failures.is_empty() {
            let _ = writeln!(out, "\nNOT JUDGED: contended tests (above)");
        } else {
            let _ = writeln!(out, "\nFAIL:");
            for f in &v.failures {
                let _ = writeln!(out, "- {f}");
            }
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The tests whose ends' CPUs were taken by other work, each with why:
/// their figures measured the contention as much as the network.
fn contended_text(r: &FleetResults, out: &mut String) {
    let c: Vec<_> = r.tests.iter().filter(|t| t.contended().is_some()).collect();
    if c.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{} of {} tests CONTENDED (their figures are not judged):",
        c.len(),
        r.tests.len()
    );
    for t in c {
        let why = t.contended().unwrap_or_default();
        let line = format!("  {} {} -> {}: {why}", t.workload, t.client, t.server);
        let _ = writeln!(out, "{}", crate::fold(&line));
    }
}

/// A cell's headline in its workload's unit: transactions/s for
/// request/response, else goodput.
fn headline(c: &Cell) -> String {
    crate::human_rate(c.throughput_bps, c.transactions_per_s)
}

/// A workload's matrix as text: its medians, then with `tables` the host
/// matrix and the host and NIC figures.
fn matrix_text(m: &Matrix, tables: bool, out: &mut String) {
    let median = crate::human_rate(m.median_bps, m.median_tps);
    let head = format!(
        "{}: median {}{}, noise band {:.1}% ({})",
        m.workload,
        median,
        m.median_p99_us
            .map(|p| format!(", p99 {}", human_us(p)))
            .unwrap_or_default(),
        m.noise_band * 100.0,
        m.noise_source
    );
    let _ = writeln!(out, "\n{}", crate::fold(&head));
    if !tables {
        return;
    }
    let mut header = vec!["client \\ server".to_string()];
    header.extend(m.hosts.iter().cloned());
    let hdr: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = new_table(&hdr, 1);
    for c in &m.hosts {
        let mut row = vec![c.clone()];
        for s in &m.hosts {
            row.push(pair_text(m, c, s).unwrap_or_default());
        }
        t.add_row(row);
    }
    let _ = writeln!(out, "{t}");
    let mut t = new_table(&["host / NIC", "median", "p50", "p99", "links"], 1);
    for c in m.per_host.iter().chain(&m.nics) {
        t.add_row(vec![
            c.name.clone(),
            headline(c),
            c.p50_us.map(human_us).unwrap_or_default(),
            c.p99_us.map(human_us).unwrap_or_default(),
            c.samples.len().to_string(),
        ]);
    }
    let _ = writeln!(out, "{t}");
}

/// An outlier as text, with its drift, the doctor's findings per host and
/// the model's bottlenecks.
fn outlier_text(o: &Outlier, out: &mut String) {
    let _ = writeln!(
        out,
        "- [{}] {} {}: {} vs median {} ({:.1}% below)",
        o.workload,
        o.scope.name(),
        o.name,
        human_bps(o.throughput_bps),
        human_bps(o.median_bps),
        o.below_pct
    );
    for d in &o.drift {
        let at = match &d.nic {
            Some(n) => format!("{}/{n}", d.host),
            None => d.host.clone(),
        };
        let _ = writeln!(
            out,
            "    drift: {at} {} = {} (fleet: {} on {} of {})",
            d.setting, d.value, d.majority, d.majority_count, d.of
        );
    }
    let mut by_host: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in &o.findings {
        let ids = by_host.entry(&f.host).or_default();
        if !ids.contains(&f.id.as_str()) {
            ids.push(&f.id);
        }
    }
    for (h, ids) in by_host {
        let _ = writeln!(out, "    doctor on {h}: {}", ids.join(", "));
    }
    for b in &o.bottlenecks {
        let _ = writeln!(out, "    model: {}: {}", b.kind, b.message);
    }
}

/// A cell's fill: red at half the median or less, yellow at 75%, green
/// at the median or above.
pub(crate) fn heat(ratio: f64) -> String {
    let t = ((ratio - 0.5) / 0.5).clamp(0.0, 1.0);
    let (r, g) = if t < 0.5 {
        (215.0, 60.0 + t * 2.0 * 150.0)
    } else {
        (
            215.0 - (t - 0.5) * 2.0 * 165.0,
            210.0 - (t - 0.5) * 2.0 * 30.0,
        )
    };
    format!("rgb({},{},{})", r as u8, g as u8, 70)
}

/// One matrix as an SVG heatmap: client rows, server columns; each cell
/// coloured by its share of the fleet median.
pub(crate) fn heatmap(m: &Matrix) -> String {
    heatmap_painted(m, &|_, _, bps| {
        let ratio = if m.median_bps > 0.0 {
            bps / m.median_bps
        } else {
            1.0
        };
        (heat(ratio), format!("{:.0}% of the median", ratio * 100.0))
    })
}

/// How a heatmap cell is painted: (client, server, its goodput) to its
/// fill and the words after its figure in its title.
pub(crate) type Paint<'a> = dyn Fn(&str, &str, f64) -> (String, String) + 'a;

/// [`heatmap`] with each cell painted by `paint`.
pub(crate) fn heatmap_painted(m: &Matrix, paint: &Paint) -> String {
    use crate::chart::esc;
    let n = m.hosts.len();
    let (cw, ch, left, top) = (92usize, 34usize, 120usize, 46usize);
    let (w, h) = (left + n * cw + 10, top + n * ch + 10);
    let mut cells = String::new();
    let mut marks = 0;
    for (i, c) in m.hosts.iter().enumerate() {
        for (j, s) in m.hosts.iter().enumerate() {
            let (x, y) = (left + j * cw, top + i * ch);
            match host_pair(m, c, s) {
                Some((bps, p99)) => {
                    marks += 1;
                    let (fill, note) = paint(c, s, bps);
                    let label = match p99 {
                        Some(p) if m.latency => format!("p99 {}", human_us(p)),
                        _ => human_bps(bps),
                    };
                    let _ = write!(
                        cells,
                        "<rect class=\"mark\" x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} -> {}: {} ({})</title></rect><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                        cw - 2,
                        ch - 2,
                        fill,
                        esc(c),
                        esc(s),
                        esc(&human_bps(bps)),
                        esc(&note),
                        x + cw / 2,
                        y + ch / 2 + 4,
                        esc(&label)
                    );
                }
                None => {
                    let _ = write!(
                        cells,
                        "<rect x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>",
                        cw - 2,
                        ch - 2
                    );
                }
            }
        }
    }
    let mut labels = String::new();
    for (i, hn) in m.hosts.iter().enumerate() {
        let _ = write!(
            labels,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            left - 8,
            top + i * ch + ch / 2 + 4,
            esc(hn),
            left + i * cw + cw / 2,
            top - 10,
            esc(hn)
        );
    }
    format!(
        "<svg class=\"chart\" data-chart=\"heatmap\" data-points=\"{marks}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{} matrix\"><rect class=\"plot\" x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\"/><text class=\"axis-title\" x=\"{left}\" y=\"14\">server →</text><text class=\"axis-title\" x=\"4\" y=\"{}\">client ↓</text>{labels}{cells}</svg>",
        esc(&m.workload),
        n * cw,
        n * ch,
        top - 10,
    )
}

/// The run as one HTML page: per workload a heatmap of the host matrix
/// and the NIC and host figures; the outliers with their evidence; agents
/// down; the verdict.
pub fn render_fleet_html(r: &FleetResults) -> String {
    use crate::chart::esc;
    let mut o = String::new();
    let up = r.agents.iter().filter(|a| a.up).count();
    let _ = writeln!(
        o,
        "<h1>Fleet: {} agents, {}</h1>",
        r.agents.len(),
        esc(&r.pattern)
    );
    let _ = writeln!(
        o,
        "<p class=\"sub\">{up} up; {} per host at once; {} rounds; {} tests; {} repeat(s); {:.1} s</p>",
        r.concurrent,
        r.rounds,
        r.tests.len(),
        r.repeats,
        r.elapsed_s
    );
    if let Some(v) = &r.verdict {
        if !v.contended.is_empty() {
            let _ = writeln!(o, "<ul class=\"notes\">");
            for c in &v.contended {
                let _ = writeln!(o, "<li>contended: {}</li>", esc(c));
            }
            let _ = writeln!(o, "</ul>");
        }
        if v.passed() {
            let _ = writeln!(o, "<p><b>PASS</b></p>");
        } else if v.failures.is_empty() {
            let _ = writeln!(o, "<p><b>NOT JUDGED</b>: contended tests</p>");
        } else {
            let _ = writeln!(o, "<p><b>FAIL</b></p><ul class=\"notes\">");
            for f in &v.failures {
                let _ = writeln!(o, "<li>{}</li>", esc(f));
            }
            let _ = writeln!(o, "</ul>");
        }
    }
    let _ = writeln!(o, "<h2 id=\"outliers\">Outliers</h2>");
    if r.outliers.is_empty() {
        let _ = writeln!(
            o,
            "<p>None: every link, NIC and host is within the noise band of the fleet median.</p>"
        );
    }
    for x in &r.outliers {
        outlier_html(x, &mut o);
    }
    for m in &r.matrices {
        matrix_html(m, &mut o);
    }
    let down: Vec<_> = r.agents.iter().filter(|a| !a.up).collect();
    if !down.is_empty() {
        let _ = writeln!(o, "<h2>Agents down</h2><ul class=\"notes\">");
        for a in down {
            let _ = writeln!(
                o,
                "<li>{}: {}</li>",
                esc(&a.name),
                esc(a.error.as_deref().unwrap_or("no answer"))
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    crate::html::page(&format!("fleet {}", r.pattern), &o)
}

/// An outlier on the page: its summary, drift table, the doctor's
/// findings and the model's bottlenecks.
fn outlier_html(x: &Outlier, o: &mut String) {
    use crate::chart::esc;
    let _ = writeln!(
        o,
        "<h3 class=\"outlier\">{} {} ({}): {} vs median {}, {:.1}% below</h3><p>{}</p>",
        x.scope.name(),
        esc(&x.name),
        esc(&x.workload),
        esc(&human_bps(x.throughput_bps)),
        esc(&human_bps(x.median_bps)),
        x.below_pct,
        esc(&x.summary)
    );
    if !x.drift.is_empty() {
        let _ = writeln!(
            o,
            "<div class=\"tw\"><table class=\"drift\"><tr><th>host</th><th>NIC</th><th>setting</th><th>value</th><th>fleet majority</th></tr>"
        );
        for d in &x.drift {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{} ({} of {})</td></tr>",
                esc(&d.host),
                esc(d.nic.as_deref().unwrap_or("")),
                esc(&d.setting),
                esc(&d.value),
                esc(&d.majority),
                d.majority_count,
                d.of
            );
        }
        let _ = writeln!(o, "</table></div>");
    }
    if !x.findings.is_empty() {
        let _ = writeln!(o, "<p class=\"fn\">doctor: ");
        let fs: Vec<String> = x
            .findings
            .iter()
            .map(|f| format!("{} on {}: {}", esc(&f.id), esc(&f.host), esc(&f.title)))
            .collect();
        let _ = writeln!(o, "{}</p>", fs.join("; "));
    }
    for b in &x.bottlenecks {
        let _ = writeln!(
            o,
            "<p class=\"fn\">model: {}: {}</p>",
            esc(&b.kind),
            esc(&b.message)
        );
    }
}

/// A workload's section of the page: its medians, the heatmap and the
/// host and NIC table.
fn matrix_html(m: &Matrix, o: &mut String) {
    use crate::chart::esc;
    let _ = writeln!(o, "<h2>{}</h2>", esc(&m.workload));
    let _ = writeln!(
        o,
        "<p class=\"sub\">median {}{}; noise band {:.1}% ({})</p>",
        esc(&human_bps(m.median_bps)),
        m.median_p99_us
            .map(|p| format!(", p99 {}", esc(&human_us(p))))
            .unwrap_or_default(),
        m.noise_band * 100.0,
        esc(&m.noise_source)
    );
    let _ = writeln!(
        o,
        "<figure><figcaption><span class=\"ft\">Host matrix</span>: each cell the median over the NIC pairs, coloured by its share of the fleet median (red at half or less, green at the median)</figcaption>{}</figure>",
        heatmap(m)
    );
    let _ = writeln!(
        o,
        "<div class=\"tw\"><table><tr><th>host / NIC</th><th class=\"num\">median</th><th class=\"num\">p50</th><th class=\"num\">p99</th><th class=\"num\">links</th></tr>"
    );
    for c in m.per_host.iter().chain(&m.nics) {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&c.name),
            esc(&human_bps(c.throughput_bps)),
            c.p50_us.map(|p| esc(&human_us(p))).unwrap_or_default(),
            c.p99_us.map(|p| esc(&human_us(p))).unwrap_or_default(),
            c.samples.len()
        );
    }
    let _ = writeln!(o, "</table></div>");
}

/// The fleet's history (`wirespeed fleet history`): one line per stored
/// test, oldest first: when (UTC), workload, client/NIC to server/NIC,
/// goodput, transactions, p50/p99, and the error of a failed one.
pub fn render_history(rows: &[wirespeed_types::fleet::HistoryRow]) -> String {
    if rows.is_empty() {
        return "no stored test matches\n".into();
    }
    let mut t = new_table(
        &[
            "at (UTC)", "workload", "client", "server", "goodput", "trans/s", "p50", "p99", "error",
        ],
        4,
    );
    if let Some(c) = t.column_mut(8) {
        c.set_cell_alignment(comfy_table::CellAlignment::Left);
    }
    let us = |v: Option<f64>| v.map(human_us).unwrap_or_default();
    for r in rows {
        t.add_row(vec![
            crate::units::utc_time(r.at_unix),
            r.workload.clone(),
            format!("{}/{}", r.client, r.client_nic),
            format!("{}/{}", r.server, r.server_nic),
            human_bps(r.throughput_bps),
            if r.transactions_per_s > 0.0 {
                format!("{:.0}", r.transactions_per_s)
            } else {
                String::new()
            },
            us(r.p50_us),
            us(r.p99_us),
            r.error.clone().unwrap_or_default(),
        ]);
    }
    format!("{t}\n")
}
