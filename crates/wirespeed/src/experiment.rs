//! `wirespeed experiment FILE`: the flags, then wirespeed-experiment's
//! planner and runner; the table or JSON at the end.

use anyhow::Result;
use std::path::PathBuf;
use wirespeed_experiment::experiment::{Overrides, load};
use wirespeed_experiment::runner::{RunOptions, run as run_plan};
use wirespeed_report::experiment::summary_table;

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
    #[arg(short, long)]
    pub duration: Option<String>,
    /// Warm-up per run (overrides the file).
    #[arg(long)]
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

/// Runs `wirespeed experiment`.
pub fn run(a: ExperimentArgs) -> Result<()> {
    let plan = load(
        &a.file,
        &Overrides {
            repeats: a.repeats,
            duration: a.duration.clone(),
            warmup: a.warmup.clone(),
        },
    )?;
    if a.dry_run {
        print!("{}", plan.describe());
        return Ok(());
    }
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("experiment");
        PathBuf::from(format!("{stem}.results.json"))
    });
    let res = run_plan(
        &plan,
        &RunOptions {
            out: out.clone(),
            fresh: a.fresh,
        },
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&res)?);
    } else {
        print!("{}", summary_table(&res));
        println!("results saved in {}", out.display());
    }
    Ok(())
}
