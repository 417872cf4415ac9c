//! `wirespeed experiment FILE`: the flags, then wirespeed-experiment's
//! planner and runner; the table or JSON at the end.

use anyhow::Result;
use std::path::PathBuf;
use wirespeed_cli::experiment::*;
use wirespeed_experiment::experiment::{Overrides, load};
use wirespeed_experiment::runner::{RunOptions, run as run_plan};
use wirespeed_report::experiment::summary_table;

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
