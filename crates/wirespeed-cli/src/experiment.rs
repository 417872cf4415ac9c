//! The flags of `wirespeed experiment`.

use std::path::PathBuf;

/// Options of `wirespeed experiment`.
#[derive(clap::Args, Debug)]
pub struct ExperimentArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// Where results are saved (default: FILE's name with .results.json, in the current directory).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Repeats per cell (overrides the file).
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Measured time per run, e.g. 2s (overrides the file).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), short, long)]
    pub duration: Option<String>,
    /// Warm-up per run (overrides the file).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long)]
    pub warmup: Option<String>,
    /// Resume from OUT when it holds results of this experiment (the default).
    #[arg(long, conflicts_with = "fresh")]
    pub resume: bool,
    /// Ignore earlier results in OUT and run every cell.
    #[arg(long)]
    pub fresh: bool,
    /// Print the results JSON on stdout at the end instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Check the file and print what each cell would run; build nothing.
    #[arg(long)]
    pub dry_run: bool,
}
