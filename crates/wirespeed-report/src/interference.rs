//! An interference run ([`InterferenceReport`], `bench --interference`) for
//! people: per block size, one row per K with the victim's transactions/s
//! and percentiles, the server's CPU and the loaders' goodput, then the
//! knee in words; and as experiment results ([`as_experiment`]), which
//! `wirespeed report` draws: the victim's rate and p50/p99 against K, a
//! line per block size.

use crate::table::new_table;
use crate::units::{human_count, human_size, human_us};
use std::fmt::Write;
use wirespeed_types::experiment::ExperimentResults;
use wirespeed_types::interference::{InterferenceReport, Point};

/// The victim's p99 as a multiple of the curve's first point's.
fn growth(p: &Point, base: f64) -> String {
    if base > 0.0 {
        format!("{:.2}x", p.p99_us / base)
    } else {
        "-".into()
    }
}

/// The loaders' goodput in Gbit/s: their sum and each one's mean.
fn loaders(p: &Point) -> String {
    if p.loader_bps.is_empty() {
        return "-".into();
    }
    let n = p.loader_bps.len() as f64;
    format!(
        "{:.2} ({} x {:.2})",
        p.loaders_bps() / 1e9,
        p.loader_bps.len(),
        p.loaders_bps() / n / 1e9
    )
}

/// The run as terminal tables, one per block size, each ending with its
/// knee.
pub fn render_interference(r: &InterferenceReport) -> String {
    let mut out = String::new();
    for c in &r.curves {
        let _ = writeln!(
            out,
            "victim {} {} each way, beside K loaders running {}",
            r.victim_workload,
            human_size(u64::from(c.size)),
            r.loader_workload
        );
        let mut t = new_table(
            &[
                "K",
                "trans/s",
                "p50",
                "p99",
                "p99.9",
                "p99/first",
                "server CPU",
                "loaders, Gbit/s",
            ],
            0,
        );
        let base = c.points.first().map_or(0.0, |p| p.p99_us);
        for p in &c.points {
            t.add_row(vec![
                p.k.to_string(),
                human_count(p.victim_tps),
                human_us(p.p50_us),
                human_us(p.p99_us),
                human_us(p.p999_us),
                growth(p, base),
                format!("{:.0}%", p.server_cpu_pct),
                loaders(p),
            ]);
        }
        let _ = writeln!(out, "{t}");
        let _ = writeln!(out, "knee: {}", c.knee_text());
        if let Some(g) = c.segment_growth() {
            let _ = writeln!(out, "grew most at p99 (--breakdown): {g}");
        }
        out.push('\n');
    }
    out
}

/// The run as experiment results: a cell per block size (named `victim
/// rr 4 KiB`, its knee in words as its change) sweeping `--loaders`, a
/// point per K holding the victim's result. `wirespeed report` then draws
/// the victim's transactions/s and p50/p99 latency against K, one line per
/// block size, as it draws the interference scenario's experiment.
pub fn as_experiment(r: &InterferenceReport) -> ExperimentResults {
    use wirespeed_types::experiment as x;
    let cells: Vec<x::CellResult> = r
        .curves
        .iter()
        .map(|c| x::CellResult {
            name: format!(
                "victim {} {}",
                r.victim_workload,
                human_size(u64::from(c.size))
            ),
            change: format!("beside K {} loaders; {}", r.loader_workload, c.knee_text()),
            sweep_arg: Some("--loaders".into()),
            points: c
                .points
                .iter()
                .map(|p| x::Point {
                    x: Some(p.k.to_string()),
                    x_value: Some(f64::from(p.k)),
                    runs: vec![p.victim.clone()],
                    ..x::Point::default()
                })
                .collect(),
            ..x::CellResult::default()
        })
        .collect();
    ExperimentResults {
        schema_version: x::EXPERIMENT_SCHEMA_VERSION,
        name: format!(
            "interference: a {} victim beside K {} loaders",
            r.victim_workload, r.loader_workload
        ),
        baseline: cells.first().map(|c| c.name.clone()).unwrap_or_default(),
        repeats: 1,
        cells,
        ..ExperimentResults::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_types::interference::Curve;

    #[test]
    fn each_size_gets_its_table_and_its_knee() {
        let mut c = Curve {
            size: 4096,
            points: vec![
                Point {
                    k: 0,
                    victim_tps: 20000.0,
                    p99_us: 40.0,
                    ..Point::default()
                },
                Point {
                    k: 2,
                    victim_tps: 9000.0,
                    p99_us: 120.0,
                    loader_bps: vec![5e9, 7e9],
                    ..Point::default()
                },
            ],
            knee: None,
        };
        c.find_knee();
        let r = InterferenceReport {
            victim_workload: "rr".into(),
            loader_workload: "stream".into(),
            curves: vec![c],
            ..InterferenceReport::default()
        };
        let text = render_interference(&r);
        assert!(
            text.contains("victim rr 4 KiB each way, beside K loaders running stream"),
            "{text}"
        );
        assert!(text.contains("3.00x"), "{text}");
        assert!(text.contains("12.00 (2 x 6.00)"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        assert!(text.contains("knee: p99 doubles at K=2"), "{text}");
        let e = as_experiment(&r);
        assert_eq!(e.cells[0].name, "victim rr 4 KiB");
        assert!(
            e.cells[0].change.contains("p99 doubles at K=2"),
            "{:?}",
            e.cells[0]
        );
        let ks: Vec<Option<f64>> = e.cells[0].points.iter().map(|p| p.x_value).collect();
        assert_eq!(ks, [Some(0.0), Some(2.0)]);
        assert_eq!(e.cells[0].sweep_arg.as_deref(), Some("--loaders"));
    }
}
