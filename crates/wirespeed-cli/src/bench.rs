//! The flags of `wirespeed bench`.

use anyhow::{Result, bail};
use std::path::PathBuf;
use wirespeed_experiment::BenchArgs;
use wirespeed_report::Format;
use wirespeed_types::TestSpec;

/// Options of `wirespeed bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchCmd {
    /// Server to test against: HOST, HOST:PORT or [IPV6]:PORT.
    // The text is --help's, where `[IPV6]` is read as typed, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
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
    /// Interference: measure the -w rr/crr/udp-rr test (the victim) alone
    /// and beside K loaders on the same server, for each K listed (e.g.
    /// 0,1,2,4,8), at each --size (default 4k,64k,1m); prints the victim's
    /// trans/s and p50/p99/p99.9 per K and names the K where p99 doubles.
    /// The loaders are one test of K flows on K threads (the server needs
    /// --max-tests 2 or more).
    #[arg(long, value_name = "K,K,...", value_delimiter = ',', num_args = 1..)]
    pub interference: Option<Vec<u32>>,
    /// What each --interference loader runs: stream (bulk, the defaults)
    /// or the victim's own workload at its size.
    #[arg(long, value_enum, default_value_t = LoaderKind::Stream, requires = "interference")]
    pub loader: LoaderKind,
}

/// What the loaders of `--interference` run.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoaderKind {
    /// Bulk TCP at bench's defaults.
    Stream,
    /// The victim's own workload and block size.
    Same,
}

/// The block sizes `--interference` measures when --size is not given:
/// report 3's small, medium and large blocks.
pub const INTERFERENCE_SIZES: [u32; 3] = [4096, 65536, 1 << 20];

/// The interference plan of the flags, or None without --interference.
pub fn interference_plan(
    cmd: &BenchCmd,
    spec: &TestSpec,
    sizes: &[(u32, u32)],
) -> Result<Option<wirespeed_engine::interference::Plan>> {
    if cmd.args.loaders_from.is_some() {
        bail!(
            "--loaders-from names lab hosts: it is for experiment files; bench's loaders run here"
        );
    }
    let ks = match (&cmd.interference, cmd.args.loaders) {
        (None, 0) => return Ok(None),
        (Some(_), k) if k > 0 => {
            bail!("--loaders {k} and --interference: list every K in --interference")
        }
        (Some(ks), _) => ks.clone(),
        (None, k) => vec![k],
    };
    if spec.workload.is_bulk() {
        bail!(
            "--interference measures a request/response victim: add -w rr (or crr, udp-rr), not {}",
            spec.workload.name()
        );
    }
    if ks.is_empty() || ks.windows(2).any(|w| w[0] >= w[1]) {
        bail!("--interference {ks:?}: list K in ascending order, e.g. 0,1,2,4,8");
    }
    let max = wirespeed_engine::interference::MAX_LOADERS;
    if let Some(k) = ks.iter().find(|k| **k > max) {
        bail!("--interference: K={k} loaders is more than {max} threads");
    }
    if sizes.iter().any(|(q, r)| q != r) {
        bail!("--interference takes one size per block (--size 4k,64k), not REQ/RESP pairs");
    }
    // --loaders K alone measures the victim as its flags say.
    let sizes = if cmd.args.size.is_some() || cmd.interference.is_none() {
        sizes.iter().map(|(q, _)| *q).collect()
    } else {
        INTERFERENCE_SIZES.to_vec()
    };
    let loader = match cmd.loader {
        LoaderKind::Stream => wirespeed_types::Workload::Stream,
        LoaderKind::Same => spec.workload,
    };
    Ok(Some(wirespeed_engine::interference::Plan {
        victim: spec.clone(),
        loader,
        ks,
        sizes,
    }))
}

/// The output format, with the combinations that make no sense refused.
pub fn format_of(cmd: &BenchCmd, spec: &TestSpec) -> Result<Format> {
    let a = &cmd.args;
    let format: Format = if a.json { Format::Json } else { a.format };
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
