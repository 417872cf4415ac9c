//! The CSV report: one row per measured point (a cell, or one sweep value
//! of a cell), quoted per RFC 4180, for spreadsheets and scripts.

use crate::experiment::ExperimentResults;
use std::fmt::Write;
use wirespeed_engine::result::finite;

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
