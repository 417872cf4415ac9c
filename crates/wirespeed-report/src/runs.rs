//! Run files, written while a run goes on and partial when it was stopped:
//! `wirespeed fleet run --out` ([`FleetResults`](wirespeed_types::fleet::FleetResults)) and `wirespeed k8s run
//! --out` ([`K8sRun`](crate::runs::K8sRun)). `wirespeed report` renders them by the fleet and
//! paths renderers as HTML, Markdown or CSV, each saying first and plainly
//! when the file is partial ([`RunFile::partial_line`](crate::runs::RunFile::partial_line)).

use crate::chart::esc;
use crate::fleet::{render_fleet, render_fleet_html};
use crate::paths::{render_paths, render_paths_csv, render_paths_html};
use crate::plural;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write;
use wirespeed_types::fleet::{FleetResults, LinkTest};
use wirespeed_types::paths::PathsReport;

/// One path's run in a `k8s run --out` document.
#[derive(Debug, Clone, Deserialize)]
pub struct K8sPathRun {
    /// The path: `host`, `cross-node`, ...
    pub path: String,
    /// The fleet runner's results on that path.
    pub results: FleetResults,
}

/// What `wirespeed k8s run --out` writes, as far as the report reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct K8sRun {
    /// True while the run goes on, or when it was stopped before its end.
    #[serde(default)]
    pub partial: bool,
    /// Each path's run, in the order asked.
    pub runs: Vec<K8sPathRun>,
    /// The cases judged by the gates.
    pub paths: PathsReport,
}

/// A run file: a fleet run or a k8s run.
#[derive(Debug, Clone)]
pub enum RunFile {
    /// `wirespeed fleet run --out`.
    Fleet(FleetResults),
    /// `wirespeed k8s run --out`.
    K8s(K8sRun),
}

/// The run-file kinds and the keys that tell them, for error messages.
pub const RUN_KINDS: &str = "a fleet run (`fleet run --out`: `matrices`) or a k8s run (`k8s run --out`: `runs` and `paths`)";

impl RunFile {
    /// Reads a JSON document as a run file; Ok(None) when its keys are
    /// not a run file's.
    pub fn from_value(v: Value) -> Result<Option<RunFile>, serde_json::Error> {
        if v.get("matrices").is_some() {
            Ok(Some(RunFile::Fleet(serde_json::from_value(v)?)))
        } else if v.get("runs").is_some() && v.get("paths").is_some() {
            Ok(Some(RunFile::K8s(serde_json::from_value(v)?)))
        } else {
            Ok(None)
        }
    }

    /// The kind's name: `fleet run` or `k8s run`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunFile::Fleet(_) => "fleet run",
            RunFile::K8s(_) => "k8s run",
        }
    }

    /// Whether the run was stopped before its end.
    pub fn partial(&self) -> bool {
        match self {
            RunFile::Fleet(r) => r.partial,
            RunFile::K8s(k) => k.partial,
        }
    }

    /// Every test the file holds, over all paths of a k8s run.
    pub fn tests(&self) -> Vec<&LinkTest> {
        match self {
            RunFile::Fleet(r) => r.tests.iter().collect(),
            RunFile::K8s(k) => k.runs.iter().flat_map(|r| &r.results.tests).collect(),
        }
    }

    /// For a partial file (`file` as the user named it): what it holds
    /// and how to measure the rest, in one line; None when complete.
    pub fn partial_line(&self, file: &str) -> Option<String> {
        if !self.partial() {
            return None;
        }
        let tests = self.tests();
        let failed = tests.iter().filter(|t| t.error.is_some()).count();
        Some(format!(
            "partial: this run was stopped before its end; {} finished ({failed} failed or skipped); `wirespeed {} --resume {file}` measures the rest",
            plural(tests.len() as u64, "test", "tests"),
            self.kind()
        ))
    }
}

/// The run's HTML page (the fleet or paths page), a banner first when it
/// is partial.
pub fn render_run_html(r: &RunFile, file: &str) -> String {
    let page = match r {
        RunFile::Fleet(f) => render_fleet_html(f),
        RunFile::K8s(k) => render_paths_html(&k.paths),
    };
    let Some(line) = r.partial_line(file) else {
        return page;
    };
    let banner = format!(
        "<p class=\"partial\" role=\"alert\" style=\"border:1px solid #d9a400;background:#fff6d6;padding:8px 12px;border-radius:6px\">{}</p>\n",
        code_spans(&esc(&line))
    );
    match page.split_once("<body>\n") {
        Some((head, body)) => format!("{head}<body>\n{banner}{body}"),
        None => format!("{banner}{page}"),
    }
}

/// Text with its `backquoted` parts as `<code>`.
fn code_spans(s: &str) -> String {
    s.split('`')
        .enumerate()
        .map(|(i, p)| {
            if i % 2 == 1 {
                format!("<code>{p}</code>")
            } else {
                p.to_string()
            }
        })
        .collect()
}

/// The run as Markdown: a heading, the partial line, then the terminal
/// rendering (the fleet tables, or the k8s cases) in a fenced block.
pub fn render_run_md(r: &RunFile, file: &str) -> String {
    let mut o = format!("# {}: {}\n\n", r.kind(), crate::md_cell(file));
    if let Some(line) = r.partial_line(file) {
        let _ = writeln!(o, "{line}\n");
    }
    let text = match r {
        RunFile::Fleet(f) => render_fleet(f),
        RunFile::K8s(k) => render_paths(&k.paths),
    };
    let _ = write!(o, "```text\n{}\n```\n", text.trim_end());
    o
}

/// The header of a fleet run's CSV ([`render_run_csv`]).
pub const FLEET_CSV_HEADER: &str = "client,server,client_nic,server_nic,workload,repeat,throughput_bps,transactions_per_s,p50_us,p99_us,error";

/// The run as CSV: a k8s run's cases, or one row per fleet test.
pub fn render_run_csv(r: &RunFile) -> String {
    match r {
        RunFile::Fleet(f) => fleet_csv(&f.tests),
        RunFile::K8s(k) => render_paths_csv(&k.paths),
    }
}

/// One row per test after [`FLEET_CSV_HEADER`].
fn fleet_csv(tests: &[LinkTest]) -> String {
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let mut out = format!("{FLEET_CSV_HEADER}\n");
    for t in tests {
        let fields = [
            t.client.clone(),
            t.server.clone(),
            t.client_nic.clone(),
            t.server_nic.clone(),
            t.workload.clone(),
            t.repeat.to_string(),
            t.throughput_bps.to_string(),
            t.transactions_per_s.to_string(),
            opt(t.p50_us),
            opt(t.p99_us),
            t.error.clone().unwrap_or_default(),
        ];
        let row: Vec<String> = fields.iter().map(|f| crate::csv_field(f)).collect();
        let _ = writeln!(out, "{}", row.join(","));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(error: Option<&str>) -> LinkTest {
        LinkTest {
            workload: "stream".into(),
            client: "a".into(),
            server: "b".into(),
            client_nic: "eth0".into(),
            server_nic: "eth0".into(),
            throughput_bps: 9.5e9,
            error: error.map(String::from),
            ..LinkTest::default()
        }
    }

    #[test]
    fn partial_files_say_so_and_complete_ones_do_not() {
        let mut f = FleetResults {
            tests: vec![test(None), test(Some("refused, at once"))],
            partial: true,
            ..FleetResults::default()
        };
        let r = RunFile::Fleet(f.clone());
        let line = r.partial_line("run.json").unwrap();
        assert!(
            line.contains("2 tests finished (1 failed or skipped)"),
            "{line}"
        );
        assert!(line.contains("`wirespeed fleet run --resume run.json`"));
        let html = render_run_html(&r, "run.json");
        assert!(html.contains("<body>\n<p class=\"partial\""), "{html}");
        assert!(html.contains("<code>wirespeed fleet run --resume run.json</code>"));
        assert!(render_run_md(&r, "run.json").contains(&line));
        let csv = render_run_csv(&r);
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.ends_with(",\"refused, at once\"\n"), "{csv}");
        f.partial = false;
        let r = RunFile::Fleet(f);
        assert!(r.partial_line("run.json").is_none());
        assert!(!render_run_html(&r, "run.json").contains("partial:"));
        assert!(!render_run_md(&r, "run.json").contains("partial:"));
    }

    #[test]
    fn kinds_are_told_by_their_keys() {
        let fleet = serde_json::to_value(FleetResults::default()).unwrap();
        assert!(matches!(
            RunFile::from_value(fleet),
            Ok(Some(RunFile::Fleet(_)))
        ));
        let k8s = serde_json::json!({
            "partial": true,
            "runs": [{"path": "host", "results": FleetResults::default()}],
            "paths": PathsReport::default(),
        });
        let r = RunFile::from_value(k8s).unwrap().unwrap();
        assert_eq!(r.kind(), "k8s run");
        assert!(r.partial());
        let other = serde_json::json!({"cells": []});
        assert!(RunFile::from_value(other).unwrap().is_none());
    }
}
