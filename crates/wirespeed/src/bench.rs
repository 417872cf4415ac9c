//! `wirespeed bench`: the flags (wirespeed-experiment's [`BenchArgs`]) to
//! a TestSpec, one test or a size sweep, progress on a terminal, then the
//! chosen rendering.

use anyhow::{Context, Result};
use std::io::{IsTerminal, Write};
use wirespeed_engine::{Report, SCHEMA_VERSION, run_test};
use wirespeed_experiment::{BenchArgs, spec_from};
use wirespeed_report::{Format, RenderOpts, interval_line, render};

/// Options of `wirespeed bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchCmd {
    /// Server to test against: HOST, HOST:PORT or [IPV6]:PORT.
    pub host: String,
    /// Bench's flags.
    #[command(flatten)]
    pub args: BenchArgs,
    /// Explain the result against a cloud profile (--profile P, --vcpus, --nics, ...).
    #[command(flatten)]
    pub model: crate::model_cmd::ExplainOpts,
}

/// Runs `wirespeed bench`.
pub fn run(cmd: BenchCmd) -> Result<()> {
    let a = &cmd.args;
    let format: Format = if a.json {
        Format::Json
    } else {
        a.format.parse().map_err(anyhow::Error::msg)?
    };
    let (spec, sizes) = spec_from(a).map_err(anyhow::Error::msg)?;
    crate::model_cmd::check_bench_opts(&cmd.model)?;
    let (cfg, warning) = a.client(&cmd.host).map_err(anyhow::Error::msg)?;
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    let tty = std::io::stderr().is_terminal();
    let user_interval = spec.interval_s > 0.0;
    let mut results = Vec::new();
    for &(req, resp) in &sizes {
        let mut s = spec.clone();
        s.request_size = req;
        s.response_size = resp;
        if !user_interval && tty {
            s.interval_s = 0.5;
        }
        let total = s.warmup_s + s.duration_s;
        let workload = s.workload;
        let mut on_interval = |smp: &wirespeed_engine::result::IntervalSample| {
            let line = interval_line(smp, workload);
            if user_interval && format == Format::Table {
                println!("{line}");
            } else if tty {
                let t = (smp.t_s + s.warmup_s).max(0.0);
                eprint!("\r{line}  [{:>3.0}%]  ", (t / total * 100.0).min(100.0));
                let _ = std::io::stderr().flush();
            }
        };
        let r = run_test(&cfg, &s, &mut on_interval);
        if tty && !user_interval {
            eprint!("\r\x1b[2K");
        }
        let mut r = r.with_context(|| format!("test against {} failed", cmd.host))?;
        if !user_interval {
            r.intervals.clear();
            r.spec.interval_s = 0.0;
        }
        results.push(r);
    }
    let report = Report {
        schema_version: SCHEMA_VERSION,
        results,
    };
    let opts = RenderOpts {
        per_flow: a.per_flow,
        color: false,
    };
    print!("{}", render(&report, format, &opts));
    for r in &report.results {
        crate::model_cmd::explain_after_bench(r, &cmd.model, format == Format::Json)?;
    }
    Ok(())
}
