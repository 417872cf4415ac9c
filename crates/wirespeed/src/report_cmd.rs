//! `wirespeed report RESULTS.json`: an experiment's results (or a plain
//! `bench --json` report) as one self-contained HTML page with SVG charts,
//! Markdown or CSV.

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use wirespeed_engine::Report;
use wirespeed_report::experiment::{ExperimentResults, finalize, from_report};
use wirespeed_report::{render_csv, render_html, render_md};

/// Options of `wirespeed report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Results of `wirespeed experiment`, or the output of `wirespeed bench --json`.
    pub results: PathBuf,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// html, md or csv (default: from the output's extension, else html).
    #[arg(short, long, value_parser = ["html", "md", "csv"])]
    pub format: Option<String>,
}

/// Reads either kind of results file.
pub fn read_results(path: &std::path::Path) -> Result<ExperimentResults> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if v.get("cells").is_some() {
        let mut res: ExperimentResults = serde_json::from_value(v)
            .with_context(|| format!("{} is not valid experiment results", path.display()))?;
        finalize(&mut res);
        Ok(res)
    } else if v.get("results").is_some() {
        let report: Report = serde_json::from_value(v)
            .with_context(|| format!("{} is not a valid bench report", path.display()))?;
        if report.results.is_empty() {
            bail!("{} holds no results", path.display());
        }
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("bench")
            .to_string();
        Ok(from_report(&report, &name))
    } else {
        bail!(
            "{} is neither experiment results (`cells`) nor a bench report (`results`)",
            path.display()
        )
    }
}

/// Runs `wirespeed report`.
pub fn run(a: ReportArgs) -> Result<()> {
    let res = read_results(&a.results)?;
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
        "md" => render_md(&res),
        "csv" => render_csv(&res),
        _ => render_html(&res),
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
