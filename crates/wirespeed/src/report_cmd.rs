//! `wirespeed report FILE...`: experiment results, `bench --json` reports
//! or interference runs (`bench --interference --json`, drawn as an
//! experiment sweeping K) as one self-contained HTML page with SVG
//! charts, Markdown or CSV. One file renders as what it holds (a test, a size sweep, an
//! experiment); several are compared on shared axes, one series per file.
//! A run file (`fleet run --out`, `k8s run --out`), given alone, renders
//! by the fleet or paths renderers and says first when it is partial.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use wirespeed_cli::report::*;
use wirespeed_report::experiment::{ExperimentResults, finalize};
use wirespeed_report::runs::{RUN_KINDS, RunFile, render_run_csv, render_run_html, render_run_md};
use wirespeed_report::source::distinct_labels;
use wirespeed_report::{Content, Source, plural, render_page, render_page_csv, render_page_md};
use wirespeed_types::Report;

/// Reads a file as JSON.
fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

/// Reads a run file; None when the file is JSON of another kind.
pub fn read_run(path: &Path) -> Result<Option<RunFile>> {
    RunFile::from_value(read_json(path)?)
        .with_context(|| format!("{} is not a valid run file", path.display()))
}

/// Reads either kind of results file; a run file is refused (it is
/// rendered only alone).
pub fn read_content(path: &Path) -> Result<Content> {
    let v = read_json(path)?;
    if v.get("cells").is_some() {
        let mut res: ExperimentResults = serde_json::from_value(v)
            .with_context(|| format!("{} is not valid experiment results", path.display()))?;
        finalize(&mut res);
        Ok(Content::Experiment(res))
    } else if v.get("curves").is_some() && v.get("victim_workload").is_some() {
        let r: wirespeed_types::interference::InterferenceReport = serde_json::from_value(v)
            .with_context(|| format!("{} is not a valid interference run", path.display()))?;
        let mut res = wirespeed_report::interference::as_experiment(&r);
        finalize(&mut res);
        Ok(Content::Experiment(res))
    } else if v.get("results").is_some() {
        let report: Report = serde_json::from_value(v)
            .with_context(|| format!("{} is not a valid bench report", path.display()))?;
        if report.results.is_empty() {
            bail!("{} holds no results", path.display());
        }
        Ok(Content::Bench(report))
    } else if let Ok(Some(r)) = RunFile::from_value(v) {
        bail!("{} is a {}: give it alone", path.display(), r.kind())
    } else {
        bail!(
            "{} is none of the kinds `report` reads: experiment results (`cells`), a bench report (`results`), an interference run (`bench --interference --json`: `curves`), {RUN_KINDS}",
            path.display()
        )
    }
}

/// Reads every file under its label.
pub fn read_sources(paths: &[PathBuf], labels: &[String]) -> Result<Vec<Source>> {
    if labels.len() > paths.len() {
        bail!(
            "{} for {}: give at most one --label per file",
            plural(labels.len() as u64, "label", "labels"),
            plural(paths.len() as u64, "results file", "results files")
        );
    }
    let mut sources = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let origin = p
                .file_name()
                .and_then(|s| s.to_str())
                .unwrap_or("results")
                .to_string();
            Ok(Source::new(
                &origin,
                read_content(p)?,
                labels.get(i).cloned(),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    distinct_labels(&mut sources);
    Ok(sources)
}

/// The output format: --format, else the output file's extension, else html.
fn format_of(a: &ReportArgs) -> &str {
    let ext = a
        .output
        .as_ref()
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str());
    a.format.map(ReportFormat::as_str).unwrap_or(match ext {
        Some("md") => "md",
        Some("csv") => "csv",
        _ => "html",
    })
}

/// Renders a run file, saying on stderr when it is partial.
fn render_run(r: &RunFile, path: &Path, format: &str) -> String {
    let file = path.display().to_string();
    if let Some(line) = r.partial_line(&file) {
        eprintln!("{line}");
    }
    match format {
        "md" => render_run_md(r, &file),
        "csv" => render_run_csv(r),
        _ => render_run_html(r, &file),
    }
}

/// Runs `wirespeed report`.
pub fn run(a: ReportArgs) -> Result<()> {
    let format = format_of(&a);
    let run_file = match a.results.as_slice() {
        [one] => read_run(one)?.map(|r| (r, one)),
        _ => None,
    };
    let text = match run_file {
        Some((r, path)) => render_run(&r, path, format),
        None => {
            let sources = read_sources(&a.results, &a.labels)?;
            match format {
                "md" => render_page_md(&sources),
                "csv" => render_page_csv(&sources),
                _ => render_page(&sources),
            }
        }
    };
    match &a.output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("write {}", p.display()))?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}
