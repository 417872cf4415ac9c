//! The flags of `wirespeed bench`.

use anyhow::{Result, bail};
use std::path::PathBuf;
use wirespeed_engine::TestSpec;
use wirespeed_experiment::BenchArgs;
use wirespeed_report::Format;

/// Options of `wirespeed bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchCmd {
    /// Server to test against: HOST, HOST:PORT or [IPV6]:PORT.
    pub host: String,
    /// Bench's flags.
    #[command(flatten)]
    pub args: BenchArgs,
    /// One JSON line per interval and one at the end (NDJSON, iperf3's
    /// --json-stream); with --format iperf3-json, iperf3's own events.
    #[arg(long)]
    pub json_stream: bool,
    /// Write the output to this file (appended) instead of stdout.
    #[arg(long)]
    pub logfile: Option<PathBuf>,
    /// Begin each line of text output with the time: UTC
    /// (`2026-11-26 01:02:03 UTC `) without a FORMAT, else the local time
    /// in strftime FORMAT as iperf3 does (`--timestamps='%c '`).
    #[arg(long, num_args = 0..=1, require_equals = true, value_name = "FORMAT")]
    pub timestamps: Option<Option<String>>,
    /// Explain the result against a cloud profile (--profile P, --vcpus, --nics, ...).
    #[command(flatten)]
    pub model: crate::model::ExplainOpts,
}

/// The output format, with the combinations that make no sense refused.
pub fn format_of(cmd: &BenchCmd, spec: &TestSpec) -> Result<Format> {
    let a = &cmd.args;
    let format: Format = if a.json {
        Format::Json
    } else {
        a.format.parse().map_err(anyhow::Error::msg)?
    };
    if format == Format::Iperf3Json && !spec.workload.is_bulk() {
        bail!(
            "--format iperf3-json describes stream and udp-stream tests (iperf3 has no {}); use --format json",
            spec.workload.name()
        );
    }
    if cmd.json_stream && format == Format::Kv {
        bail!("--json-stream writes JSON lines: drop --format kv");
    }
    Ok(format)
}
