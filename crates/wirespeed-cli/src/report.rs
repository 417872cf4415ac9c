//! The flags of `wirespeed report`.

use std::path::PathBuf;

/// Options of `wirespeed report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Results of `wirespeed experiment`, or outputs of `wirespeed bench --json`;
    /// several are compared on shared axes, one series per file. Or one
    /// `fleet run --out` or `k8s run --out` file (partial or whole).
    #[arg(required = true, value_name = "RESULTS.json")]
    pub results: Vec<PathBuf>,
    /// A name for each file, in order (repeat the flag: `--label cubic --label bbr`);
    /// unnamed files are labelled by their test's own description.
    #[arg(short, long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// html, md or csv (default: from the output's extension, else html).
    #[arg(short, long)]
    pub format: Option<ReportFormat>,
}

/// What `wirespeed report` writes.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// A page with SVG charts.
    Html,
    /// Markdown tables.
    Md,
    /// One CSV row per result.
    Csv,
}

impl ReportFormat {
    /// Its name, as `--format` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportFormat::Html => "html",
            ReportFormat::Md => "md",
            ReportFormat::Csv => "csv",
        }
    }
}
