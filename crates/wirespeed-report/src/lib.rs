//! Renderings of wirespeed results: a terminal table, JSON (the versioned
//! schema of docs/json-schema.md), neper-style key=value lines, and the
//! report (`wirespeed report`) as HTML with SVG charts, Markdown and CSV:
//! of one test, one size sweep, several results compared, or an
//! experiment (repeated cells against a baseline); and the tables of an
//! interference run ([`interference`]), fleet runs, k8s path runs and the
//! watcher. Long terminal lines fold at [`TERM_WIDTH`] columns ([`fold`],
//! with textwrap).
//!
//! This crate only formats: it takes finished result types and returns
//! text. It never measures or touches the host, and it depends on
//! wirespeed-types (every schema it reads, re-exported at the old paths
//! `experiment`, `optimize`), wirespeed-model (explanations, optimize's
//! summary) and the formatting crates only.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod chart;
mod csv;
pub mod experiment;
mod figures;
pub mod fixtures;
pub mod fleet;
pub mod host;
mod html;
pub mod interference;
pub mod iperf3;
mod kv;
mod latency;
mod md;
pub mod model;
pub mod optimize;
pub mod paths;
/// Fleet and k8s run files (`--out`, maybe partial) as HTML, Markdown and CSV.
pub mod runs;
pub mod source;
mod table;
mod units;
pub mod watch;

pub use chart::esc;
pub use csv::{CSV_HEADER, PAGE_CSV_HEADER, csv_field, render_csv, render_page_csv};
pub use experiment::{ExperimentResults, Metric, Mode};
pub use fleet::{render_fleet, render_fleet_brief};
pub use html::{render_html, render_page};
pub use md::{md_cell, render_md, render_page_md};
pub use source::{Content, Source};

pub use kv::render_kv;
pub use table::{heading, new_table, render_one, render_sweep};
pub use units::{
    TERM_WIDTH, fold, http_date, human_bps, human_count, human_rate, human_size, human_tps,
    human_us, plural, utc_time,
};

use wirespeed_types::result::IntervalSample;
use wirespeed_types::{Report, Workload};

/// An output format of `bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Human-readable tables.
    Table,
    /// The versioned JSON document.
    Json,
    /// neper-style key=value lines.
    Kv,
    /// The document `iperf3 -J` writes ([`iperf3`]).
    Iperf3Json,
}

impl Format {
    /// Every format, in `--format`'s order.
    pub const ALL: [Format; 4] = [Format::Table, Format::Json, Format::Kv, Format::Iperf3Json];
    /// Every format's name, as `--format` takes it, in [`Format::ALL`]'s order.
    pub const NAMES: [&'static str; 4] = ["table", "json", "kv", "iperf3-json"];
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match Format::NAMES.iter().position(|n| *n == s) {
            Some(i) => Ok(Format::ALL[i]),
            None => Err(format!(
                "unknown format {s:?}: use {}",
                Format::NAMES.join(", ")
            )),
        }
    }
}

/// Rendering options.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderOpts {
    /// Show every flow in the table.
    pub per_flow: bool,
    /// Colour (reserved; output is plain today).
    pub color: bool,
}

/// Renders a report in the chosen format.
pub fn render(report: &Report, format: Format, opts: &RenderOpts) -> String {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(report)
                .unwrap_or_else(|e| format!("{{\"error\": \"encode: {e}\"}}"));
            s.push('\n');
            s
        }
        Format::Iperf3Json => report
            .results
            .iter()
            .map(|r| {
                let doc = iperf3::document(r, &iperf3::Iperf3Host::of(r));
                serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
            })
            .collect(),
        Format::Kv => report
            .results
            .iter()
            .map(render_kv)
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Table => {
            let rs = &report.results;
            if source::is_size_sweep(rs) {
                render_sweep(rs)
            } else {
                rs.iter()
                    .map(|r| render_one(r, opts.per_flow))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
    }
}

/// One progress line: time into the window and the interval's rate.
pub fn interval_line(s: &IntervalSample, workload: Workload) -> String {
    let rate = if workload.is_bulk() {
        human_bps(s.bps)
    } else {
        human_tps(s.tps)
    };
    let phase = if s.t_s < 0.0 { " (warm-up)" } else { "" };
    format!("[{:>6.1} s]  {rate:>14}{phase}", s.t_s.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use wirespeed_types::result::{LatencySummary, PathResult, TestResult};
    use wirespeed_types::{SCHEMA_VERSION, TestSpec};

    fn sample(workload: Workload, req: u32) -> TestResult {
        TestResult {
            schema_version: SCHEMA_VERSION,
            spec: TestSpec {
                workload,
                request_size: req,
                response_size: req,
                ..TestSpec::default()
            },
            server: "10.0.0.2:5300".into(),
            window_s: 1.0,
            throughput_bps: 18.2e9,
            local_bps: 18.3e9,
            remote_bps: 18.2e9,
            transactions_per_s: 25000.0,
            latency: Some(LatencySummary {
                count: 10,
                min_us: 10.0,
                p50_us: 20.0,
                ..LatencySummary::default()
            }),
            paths: vec![PathResult {
                label: "a=b".into(),
                throughput_bps: 18.2e9,
                share: 1.0,
                ..PathResult::default()
            }],
            ..TestResult::default()
        }
    }

    #[test]
    fn kv_has_neper_keys() {
        let r = sample(Workload::Stream, 1);
        let text = render_kv(&r);
        assert!(text.contains("throughput=18200.00\n"), "{text}");
        assert!(text.contains("throughput_units=Mbit/s\n"));
        assert!(text.contains("local_throughput=18300000000\n"));
        assert!(text.contains("remote_throughput=18200000000\n"));
        assert!(text.contains("latency_p50=0.000020000\n"));
    }

    #[test]
    fn sweeps_render_one_row_per_size() {
        let report = Report {
            schema_version: SCHEMA_VERSION,
            results: vec![sample(Workload::Rr, 1024), sample(Workload::Rr, 65536)],
        };
        let t = render(&report, Format::Table, &RenderOpts::default());
        assert!(t.contains("1 KiB") && t.contains("64 KiB"), "{t}");
        assert!("xml".parse::<Format>().is_err());
    }

    proptest! {
        #[test]
        fn every_rendering_survives_odd_numbers(
            x in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), 0.0f64..1e15]
        ) {
            let mut r = sample(Workload::Stream, 1);
            r.throughput_bps = x;
            r.fairness = x;
            let report = Report { schema_version: SCHEMA_VERSION, results: vec![r] };
            for f in [Format::Table, Format::Kv] {
                let _ = render(&report, f, &RenderOpts { per_flow: true, color: false });
            }
        }
    }
}
