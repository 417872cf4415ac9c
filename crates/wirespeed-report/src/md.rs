//! The Markdown report, for pasting into issues and docs: the same
//! series as the HTML page, as tables. One test: what ran, its key
//! figures, one row per interval, latency percentiles, flows with
//! TCP_INFO, CPU. A sweep: one row per size. Several results: one row per
//! result and per interval. An experiment: its summary, sweeps and
//! latency, then each cell.

use crate::experiment::{ExperimentResults, Mode, pct_text};
use crate::figures::{self, Table};
use crate::source::{Content, Series, Source, all_series, experiment_series, shape, what};
use crate::units::{human_pct, plural, trim_num};
use crate::{Metric, human_us};
use std::fmt::Write;
use wirespeed_types::TestResult;
use wirespeed_types::result::finite;

/// Makes text safe inside a Markdown table cell.
pub fn md_cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// Renders the experiment as Markdown.
pub fn render_md(res: &ExperimentResults) -> String {
    let mut o = String::new();
    let ladder = res.mode == Mode::Ladder;
    let _ = writeln!(o, "# {}\n", md_cell(&res.name));
    let _ = writeln!(
        o,
        "Mode {}, baseline {}, {} repeat(s) per configuration.\n",
        res.mode.as_str(),
        md_cell(&res.baseline),
        res.repeats
    );
    o.push_str("| configuration | change | median | min - max | spread | vs baseline |");
    o.push_str(if ladder { " vs previous |\n" } else { "\n" });
    o.push_str("|---|---|--:|--:|--:|--:|");
    o.push_str(if ladder { "--:|\n" } else { "\n" });
    for c in &res.cells {
        let m = c.metric;
        let _ = write!(
            o,
            "| {} | {} | {} | {} - {} | {:.1}% | {} |",
            md_cell(&c.name),
            md_cell(&c.change),
            m.human(c.stats.median),
            m.human(c.stats.min),
            m.human(c.stats.max),
            finite(c.stats.spread_pct),
            pct_text(c.vs_baseline_pct)
        );
        if ladder {
            let _ = write!(o, " {} |", pct_text(c.vs_previous_pct));
        }
        o.push('\n');
    }
    for c in res.cells.iter().filter(|c| c.points.len() > 1) {
        let _ = writeln!(
            o,
            "\n## {} over {}\n",
            md_cell(&c.name),
            md_cell(c.sweep_arg.as_deref().unwrap_or("sweep"))
        );
        o.push_str("| value | median | min - max | vs baseline |\n|--:|--:|--:|--:|\n");
        for p in &c.points {
            let _ = writeln!(
                o,
                "| {} | {} | {} - {} | {} |",
                md_cell(p.x.as_deref().unwrap_or("-")),
                c.metric.human(p.stats.median),
                c.metric.human(p.stats.min),
                c.metric.human(p.stats.max),
                pct_text(p.vs_baseline_pct)
            );
        }
    }
    let lat: Vec<_> = res
        .cells
        .iter()
        .flat_map(|c| c.points.iter().map(move |p| (c, p)))
        .filter_map(|(c, p)| p.latency.as_ref().map(|l| (c, p, l)))
        .collect();
    if !lat.is_empty() {
        o.push_str("\n## Latency (medians over repeats)\n\n| configuration | p50 | p90 | p99 |\n|---|--:|--:|--:|\n");
        for (c, p, l) in lat {
            let name = match &p.x {
                Some(x) => format!("{} @ {x}", c.name),
                None => c.name.clone(),
            };
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                md_cell(&name),
                human_us(l.p50_us),
                human_us(l.p90_us),
                human_us(l.p99_us)
            );
        }
    }
    for (c, s) in res.cells.iter().zip(experiment_series(None, res)) {
        let _ = writeln!(o, "\n## {}\n", md_cell(&c.name));
        if s.is_sweep() {
            sweep_md(&mut o, &s);
        } else {
            test_md(&mut o, s.run());
        }
    }
    o
}

fn section(o: &mut String, title: &str, t: &Table) {
    if !t.rows.is_empty() {
        let _ = writeln!(o, "\n### {title}\n\n{}", t.md());
    }
}

fn test_md(o: &mut String, r: &TestResult) {
    let _ = writeln!(
        o,
        "{}; {}; {} s measured; {}{}.\n",
        what(r),
        shape(r),
        trim_num(r.window_s, 2),
        if r.client.is_empty() {
            format!("server {}", r.server)
        } else {
            format!("client {} to server {}", r.client, r.server)
        },
        if r.congestion_control.is_empty() {
            String::new()
        } else {
            format!(", cc {}", r.congestion_control)
        }
    );
    let mut k = Table::new(&["figure", "value"], 1);
    k.rows.push(vec![
        Metric::of(r).label().to_string(),
        Metric::of(r).human(crate::source::headline(r)),
    ]);
    if let Some(l) = crate::source::latency_of(r) {
        let w = if crate::source::is_probe_latency(r) {
            "latency under load"
        } else {
            "latency"
        };
        k.rows.push(vec![format!("{w} p50"), human_us(l.p50_us)]);
        k.rows.push(vec![format!("{w} p99"), human_us(l.p99_us)]);
    }
    k.rows.push(vec![
        "client CPU (of one core)".into(),
        human_pct(r.local_cpu.total_pct),
    ]);
    k.rows.push(vec![
        "server CPU (of one core)".into(),
        human_pct(r.remote_cpu.total_pct),
    ]);
    if crate::source::main_flows(r).count() > 1 {
        k.rows.push(vec![
            "fairness (Jain)".into(),
            format!("{:.3}", finite(r.fairness)),
        ]);
    }
    o.push_str(&k.md());
    let series = [Series::single(r)];
    if let Some(t) = figures::interval_table(&series) {
        section(o, "Over time, one row per interval", &t);
    }
    section(
        o,
        "Latency percentiles",
        &figures::percentile_table(&figures::latency_lines(&series, &[0])),
    );
    section(o, "Flows, with TCP_INFO", &figures::flow_table(r));
    section(
        o,
        "CPU per side",
        &figures::cpu_table(&series.iter().collect::<Vec<_>>(), true),
    );
    if let Some(w) = &r.contended {
        let _ = writeln!(o, "\n**Contended**: {}", crate::md_cell(w));
    }
    for n in &r.notes {
        let _ = writeln!(o, "\nNote: {}", crate::md_cell(n));
    }
}

fn sweep_md(o: &mut String, s: &Series) {
    let r = s.run();
    let _ = writeln!(
        o,
        "{} sweep over {}; {}; {} s measured per test.",
        what(r),
        s.x_title,
        shape(r),
        trim_num(r.window_s, 2)
    );
    let one = std::slice::from_ref(s);
    let title = format!("One row per {}", figures::row_word(&s.x_title));
    section(o, &title, &figures::sweep_table(one));
}

/// Renders these sources as Markdown: a test, a sweep, an experiment, or a
/// comparison (one row per result, and per interval).
pub fn render_page_md(sources: &[Source]) -> String {
    if let [one] = sources
        && let Content::Experiment(e) = &one.content
    {
        return render_md(e);
    }
    let series = all_series(sources);
    let mut o = String::new();
    if let ([src], [s]) = (sources, series.as_slice()) {
        let _ = writeln!(o, "# {}\n", crate::md_cell(&src.label));
        if s.is_sweep() {
            sweep_md(&mut o, s);
        } else {
            test_md(&mut o, s.run());
        }
        return o;
    }
    let _ = writeln!(
        o,
        "# Comparison of {}\n",
        plural(series.len() as u64, "result", "results")
    );
    let t = figures::compare_table(&series);
    o.push_str(&t.md());
    if let Some(t) = figures::interval_table(&series) {
        section(&mut o, "Over time, one row per interval", &t);
    }
    section(&mut o, "One row per size", &figures::sweep_table(&series));
    let colors: Vec<usize> = (0..series.len()).collect();
    section(
        &mut o,
        "Latency percentiles",
        &figures::percentile_table(&figures::latency_lines(&series, &colors)),
    );
    let singles: Vec<&Series> = series.iter().filter(|s| !s.is_sweep()).collect();
    section(&mut o, "CPU per side", &figures::cpu_table(&singles, false));
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::finalize;
    use crate::fixtures::{cell, stream};

    #[test]
    fn pipes_are_escaped_and_rows_are_complete() {
        let mut res = ExperimentResults {
            name: "a|b".into(),
            mode: Mode::Ladder,
            cells: vec![
                cell("base|line", vec![stream(1e9, 1)]),
                cell("two", vec![stream(f64::NAN, 1), stream(2e9, 2)]),
            ],
            ..ExperimentResults::default()
        };
        finalize(&mut res);
        let md = render_md(&res);
        assert!(md.contains("# a\\|b"), "{md}");
        assert!(md.contains("| base\\|line |"), "{md}");
        assert!(md.contains("+100.0%"), "{md}");
        assert!(!md.contains("NaN"));
        let summary = md.split("\n## ").next().unwrap();
        let rows: Vec<&str> = summary.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 3);
        for r in rows {
            assert_eq!(r.matches(" | ").count() + 2, 8, "{r}");
        }
    }
}
