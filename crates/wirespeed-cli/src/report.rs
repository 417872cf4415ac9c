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
    #[arg(short, long, value_parser = ["html", "md", "csv"])]
    pub format: Option<String>,
}
