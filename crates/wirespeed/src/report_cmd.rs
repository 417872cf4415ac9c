//! `wirespeed report FILE...`: experiment results or `bench --json`
//! reports as one self-contained HTML page with SVG charts, Markdown or
//! CSV. One file renders as what it holds (a test, a size sweep, an
//! experiment); several are compared on shared axes, one series per file.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use wirespeed_cli::report::*;
use wirespeed_engine::Report;
use wirespeed_report::experiment::{ExperimentResults, finalize};
use wirespeed_report::source::distinct_labels;
use wirespeed_report::{Content, Source, plural, render_page, render_page_csv, render_page_md};

/// Reads either kind of results file.
pub fn read_content(path: &Path) -> Result<Content> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if v.get("cells").is_some() {
        let mut res: ExperimentResults = serde_json::from_value(v)
            .with_context(|| format!("{} is not valid experiment results", path.display()))?;
        finalize(&mut res);
        Ok(Content::Experiment(res))
    } else if v.get("results").is_some() {
        let report: Report = serde_json::from_value(v)
            .with_context(|| format!("{} is not a valid bench report", path.display()))?;
        if report.results.is_empty() {
            bail!("{} holds no results", path.display());
        }
        Ok(Content::Bench(report))
    } else {
        bail!(
            "{} is neither experiment results (`cells`) nor a bench report (`results`)",
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

/// Runs `wirespeed report`.
pub fn run(a: ReportArgs) -> Result<()> {
    let sources = read_sources(&a.results, &a.labels)?;
    let ext = a
        .output
        .as_ref()
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str());
    let format = a.format.as_deref().or(match ext {
        Some("md") => Some("md"),
        Some("csv") => Some("csv"),
        _ => None,
    });
    let text = match format.unwrap_or("html") {
        "md" => render_page_md(&sources),
        "csv" => render_page_csv(&sources),
        _ => render_page(&sources),
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
