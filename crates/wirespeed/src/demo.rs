//! `wirespeed lab demo` (also `wirespeed demo`): the flags, then
//! wirespeed-experiment's demo scenario; the report page at the end.

use anyhow::{Context, Result};
use wirespeed_cli::demo::*;
use wirespeed_report::{Format, RenderOpts, render};

/// Runs the demo.
pub fn run(a: DemoArgs) -> Result<()> {
    if !wirespeed_lab::is_root() || a.loopback {
        if !a.loopback {
            println!(
                "not root: the lab demo needs network namespaces (run it with sudo); running a loopback bench instead"
            );
        }
        let report = wirespeed_experiment::demo::loopback(a.duration)?;
        print!("{}", render(&report, Format::Table, &RenderOpts::default()));
        return Ok(());
    }
    let started = std::time::Instant::now();
    let out = &a.out;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let results = out.with_extension("results.json");
    wirespeed_experiment::demo::lab_demo(a.duration, &results, &mut std::io::stdout())?;
    crate::report_cmd::run(wirespeed_cli::report::ReportArgs {
        results: vec![results],
        labels: Vec::new(),
        output: Some(out.to_path_buf()),
        format: Some(wirespeed_cli::report::ReportFormat::Html),
    })?;
    println!(
        "\ndemo done in {:.0} s; open {} for the charts",
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}
