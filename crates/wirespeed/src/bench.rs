//! `wirespeed bench`: flags to a TestSpec, one test or a size sweep,
//! progress on a terminal, then the chosen rendering.

use anyhow::{Context, Result, bail};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_engine::spec::{
    parse_cpus, parse_duration, parse_paths, parse_rate, parse_size, parse_sizes,
};
use wirespeed_engine::{
    ClientConfig, Direction, Report, SCHEMA_VERSION, TestSpec, Workload, run_test,
};
use wirespeed_report::{Format, RenderOpts, interval_line, render};

/// Options of `wirespeed bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Server to test against: HOST, HOST:PORT or [IPV6]:PORT.
    pub host: String,
    /// Control port when HOST names none.
    #[arg(short, long, default_value_t = wirespeed_engine::DEFAULT_PORT)]
    pub port: u16,
    /// Workload: stream (bulk TCP), rr (request/response), crr (connect/rr/close).
    #[arg(short, long, default_value = "stream", value_parser = ["stream", "rr", "crr"])]
    pub workload: String,
    /// Stream direction: forward (client sends), reverse, bidir.
    #[arg(long, default_value = "forward", value_parser = ["forward", "reverse", "bidir"])]
    pub direction: String,
    /// Short for --direction reverse.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Short for --direction bidir.
    #[arg(long)]
    pub bidir: bool,
    /// Measured time, e.g. 10s.
    #[arg(short, long, default_value = "10s")]
    pub duration: String,
    /// Traffic before measuring, excluded from figures.
    #[arg(long, default_value = "1s")]
    pub warmup: String,
    /// Worker threads per side (each one event loop).
    #[arg(short = 'T', long, default_value_t = 1)]
    pub threads: u32,
    /// Flows per direction (stream) or concurrent transactions (rr, crr).
    #[arg(
        short = 'F',
        long,
        visible_alias = "parallel",
        short_alias = 'P',
        default_value_t = 1
    )]
    pub flows: u32,
    /// A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs.
    #[arg(long = "path")]
    pub path: Vec<String>,
    /// Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2.
    #[arg(long)]
    pub paths: Option<String>,
    /// Bytes per send/recv call in stream tests.
    #[arg(short = 'l', long, default_value = "512k")]
    pub msg_size: String,
    /// rr/crr request and response size; a comma list runs a sweep.
    #[arg(short, long)]
    pub size: Option<String>,
    /// rr/crr request size.
    #[arg(long)]
    pub request: Option<String>,
    /// rr/crr response size.
    #[arg(long)]
    pub response: Option<String>,
    /// SO_SNDBUF and SO_RCVBUF both.
    #[arg(long)]
    pub socket_buffer: Option<String>,
    /// SO_SNDBUF.
    #[arg(long)]
    pub sndbuf: Option<String>,
    /// SO_RCVBUF.
    #[arg(long)]
    pub rcvbuf: Option<String>,
    /// Congestion control, e.g. cubic or bbr.
    #[arg(long, visible_alias = "cc")]
    pub congestion: Option<String>,
    /// Force TCP_NODELAY on (default: on for rr/crr, off for stream).
    #[arg(long, conflicts_with = "no_nodelay")]
    pub nodelay: bool,
    /// Force TCP_NODELAY off.
    #[arg(long)]
    pub no_nodelay: bool,
    /// Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth).
    #[arg(long)]
    pub zerocopy: bool,
    /// Receive with MSG_TRUNC: the kernel discards data instead of copying it.
    #[arg(long)]
    pub skip_rx_copy: bool,
    /// Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit.
    #[arg(long)]
    pub pacing: Option<String>,
    /// Pin client worker threads to these CPUs, e.g. 0,1 or 0-3.
    #[arg(long)]
    pub pin: Option<String>,
    /// Pin server worker threads to these CPUs.
    #[arg(long)]
    pub remote_pin: Option<String>,
    /// Interval reports, e.g. 1s.
    #[arg(short, long)]
    pub interval: Option<String>,
    /// Measure 1-byte request/response latency beside a stream test.
    #[arg(long)]
    pub probe_rr: bool,
    /// Output: table, json or kv (neper-style key=value).
    #[arg(long, default_value = "table")]
    pub format: String,
    /// Short for --format json.
    #[arg(long)]
    pub json: bool,
    /// Show every flow in the table.
    #[arg(long)]
    pub per_flow: bool,
    /// Key file for a server started with --key-file.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Timeout for connecting and for each control answer as a whole.
    #[arg(long, default_value = "10s")]
    pub timeout: String,
    /// Explain the result against a cloud profile (--profile P, --vcpus, --nics, ...).
    #[command(flatten)]
    pub model: crate::model_cmd::ExplainOpts,
}

fn opt_size(s: &Option<String>) -> Result<Option<u32>> {
    s.as_deref().map(size32).transpose()
}

fn size32(s: &str) -> Result<u32> {
    u32::try_from(parse_size(s)?).with_context(|| format!("size {s} must be below 4 GiB"))
}

/// Builds the spec (and the sweep's sizes) from the flags.
pub fn spec_from(a: &BenchArgs) -> Result<(TestSpec, Vec<(u32, u32)>)> {
    let workload = match a.workload.as_str() {
        "rr" => Workload::Rr,
        "crr" => Workload::Crr,
        _ => Workload::Stream,
    };
    let direction = match (a.reverse, a.bidir, a.direction.as_str()) {
        (true, _, _) | (_, _, "reverse") => Direction::Reverse,
        (_, true, _) | (_, _, "bidir") => Direction::Bidir,
        _ => Direction::Forward,
    };
    let mut paths = Vec::new();
    for p in &a.path {
        paths.extend(parse_paths(p)?);
    }
    if let Some(p) = &a.paths {
        paths.extend(parse_paths(p)?);
    }
    let buf = opt_size(&a.socket_buffer)?;
    let mut spec = TestSpec {
        workload,
        direction,
        duration_s: parse_duration(&a.duration)?,
        warmup_s: parse_duration(&a.warmup)?,
        threads: a.threads,
        flows: a.flows,
        paths,
        msg_size: size32(&a.msg_size)?,
        sndbuf: opt_size(&a.sndbuf)?.or(buf),
        rcvbuf: opt_size(&a.rcvbuf)?.or(buf),
        congestion: a.congestion.clone(),
        nodelay: if a.nodelay {
            true
        } else if a.no_nodelay {
            false
        } else {
            workload != Workload::Stream
        },
        zerocopy: a.zerocopy,
        skip_rx_copy: a.skip_rx_copy,
        pacing_bps: a
            .pacing
            .as_deref()
            .map(parse_rate)
            .transpose()
            .context("--pacing")?,
        client_cpus: a
            .pin
            .as_deref()
            .map(parse_cpus)
            .transpose()?
            .unwrap_or_default(),
        server_cpus: a
            .remote_pin
            .as_deref()
            .map(parse_cpus)
            .transpose()?
            .unwrap_or_default(),
        interval_s: a
            .interval
            .as_deref()
            .map(parse_duration)
            .transpose()?
            .unwrap_or(0.0),
        probe_rr: a.probe_rr,
        ..TestSpec::default()
    };
    if a.probe_rr && workload != Workload::Stream {
        bail!(
            "--probe-rr measures latency beside a stream test; rr and crr measure latency already"
        );
    }
    let mut sizes = Vec::new();
    if let Some(s) = &a.size {
        if workload == Workload::Stream {
            bail!("--size applies to rr and crr; use --msg-size for stream");
        }
        for v in parse_sizes(s)? {
            let v = u32::try_from(v).context("size must be below 4 GiB")?;
            sizes.push((v, v));
        }
    }
    let req = opt_size(&a.request)?;
    let resp = opt_size(&a.response)?;
    if sizes.is_empty() {
        sizes.push((req.unwrap_or(1), resp.unwrap_or(1)));
    } else if req.is_some() || resp.is_some() {
        bail!("use either --size or --request/--response");
    }
    spec.request_size = sizes[0].0;
    spec.response_size = sizes[0].1;
    spec.validate(&wirespeed_engine::Limits::default())?;
    Ok((spec, sizes))
}

/// Runs `wirespeed bench`.
pub fn run(a: BenchArgs) -> Result<()> {
    let format: Format = if a.json {
        Format::Json
    } else {
        a.format.parse().map_err(anyhow::Error::msg)?
    };
    let (spec, sizes) = spec_from(&a)?;
    crate::model_cmd::check_bench_opts(&a.model)?;
    let mut cfg = ClientConfig::new(&a.host);
    cfg.port = a.port;
    cfg.timeout = Duration::from_secs_f64(parse_duration(&a.timeout)?.max(0.1));
    if let Some(p) = &a.key_file {
        cfg.key = Some(crate::read_key(p)?);
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
        let mut r = r.with_context(|| format!("test against {} failed", a.host))?;
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
        crate::model_cmd::explain_after_bench(r, &a.model, format == Format::Json)?;
    }
    Ok(())
}
