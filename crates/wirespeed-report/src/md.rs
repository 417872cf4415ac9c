//! The Markdown report: the summary table, then per-sweep and latency
//! tables, for pasting into issues and docs.

use crate::experiment::{ExperimentResults, Mode, pct_text};
use crate::human_us;
use std::fmt::Write;
use wirespeed_engine::result::finite;

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
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 3);
        for r in rows {
            assert_eq!(r.matches(" | ").count() + 2, 8, "{r}");
        }
    }
}
