//! `wirespeed bench`: the flags (wirespeed-experiment's [`BenchArgs`](wirespeed_experiment::BenchArgs)) to
//! a TestSpec, one test or a size sweep, progress on a terminal, then the
//! chosen rendering: once at the end, or as JSON lines while it runs
//! (--json-stream), to stdout or --logfile.

use anyhow::{Context, Result};
use std::io::{IsTerminal, Write};
use wirespeed_cli::bench::*;
use wirespeed_engine::{ClientConfig, Reach, run_test_via};
use wirespeed_experiment::spec_from;
use wirespeed_report::iperf3::{self, Iperf3Host};
use wirespeed_report::{Format, RenderOpts, interval_line, render, utc_time};
use wirespeed_types::result::IntervalSample;
use wirespeed_types::{Report, SCHEMA_VERSION, TestResult, TestSpec};

/// Where bench's output goes: stdout or the log file, each text line
/// stamped with the time under --timestamps.
struct Out {
    w: Box<dyn Write>,
    stamp: Option<Stamp>,
}

/// How text lines are stamped.
enum Stamp {
    /// `YYYY-MM-DD HH:MM:SS UTC ` (the default).
    Utc,
    /// The local time in a strftime format (iperf3's `--timestamps=F`).
    Local(String),
}

impl Stamp {
    /// The stamp for now, or why the format cannot be used.
    fn now(&self) -> Result<String> {
        match self {
            Stamp::Utc => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0);
                Ok(format!("{} ", utc_time(now)))
            }
            Stamp::Local(f) => jiff::fmt::strtime::format(f.as_bytes(), &jiff::Zoned::now())
                .map_err(|e| anyhow::anyhow!("--timestamps={f:?}: {e}")),
        }
    }
}

impl Out {
    fn open(cmd: &BenchCmd) -> Result<Out> {
        let w: Box<dyn Write> = match &cmd.logfile {
            Some(p) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("open --logfile {}", p.display()))?,
            ),
            None => Box::new(std::io::stdout()),
        };
        let stamp = match &cmd.timestamps {
            None => None,
            Some(None) => Some(Stamp::Utc),
            Some(Some(f)) => Some(Stamp::Local(f.clone())),
        };
        if let Some(s) = &stamp {
            s.now()?;
        }
        Ok(Out { w, stamp })
    }

    /// Writes text, each line stamped under --timestamps.
    fn text(&mut self, s: &str) -> Result<()> {
        let Some(stamp) = &self.stamp else {
            return self.raw(s);
        };
        let t = stamp.now()?;
        for l in s.lines() {
            writeln!(self.w, "{t}{l}").context("write output")?;
        }
        self.w.flush().context("write output")
    }

    /// Writes JSON (or anything else never stamped) as it is.
    fn raw(&mut self, s: &str) -> Result<()> {
        self.w.write_all(s.as_bytes()).context("write output")?;
        self.w.flush().context("write output")
    }
}

/// The host line iperf3 puts in `start.system_info` (uname -a's fields).
fn system_info() -> String {
    let k = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "{} {} {} {} {}",
        k("ostype"),
        k("hostname"),
        k("osrelease"),
        k("version"),
        std::env::consts::ARCH
    )
}

/// Renders what --json-stream writes, one line per event.
struct Stream {
    iperf3: Option<Iperf3Host>,
    started: bool,
}

impl Stream {
    /// The start event (once) and an interval event.
    fn interval(&mut self, spec: &TestSpec, host: &str, s: &IntervalSample) -> String {
        let mut out = String::new();
        if !self.started {
            self.started = true;
            out += &self.start(spec, host);
        }
        let data = match &self.iperf3 {
            Some(_) => iperf3::interval(spec, s, None),
            None => serde_json::to_value(s).unwrap_or_default(),
        };
        out + &iperf3::stream_event("interval", data) + "\n"
    }

    fn start(&self, spec: &TestSpec, host: &str) -> String {
        let data = match &self.iperf3 {
            Some(h) => {
                let r = TestResult {
                    spec: spec.clone(),
                    tool_version: env!("CARGO_PKG_VERSION").into(),
                    started_unix: now_unix(),
                    ..TestResult::default()
                };
                iperf3::start(&r, h)
            }
            None => serde_json::json!({"server": host, "spec": spec}),
        };
        iperf3::stream_event("start", data) + "\n"
    }

    /// The end event of a finished test (the start first if no interval
    /// came).
    fn end(&mut self, r: &TestResult, host: &str) -> String {
        let mut out = String::new();
        if !self.started {
            out += &self.start(&r.spec, host);
        }
        self.started = false;
        let data = match &self.iperf3 {
            Some(_) => iperf3::end(r),
            None => serde_json::to_value(r).unwrap_or_default(),
        };
        out + &iperf3::stream_event("end", data) + "\n"
    }

    /// The events that end the stream of a failed test: an error event
    /// with the reason, then, in iperf3's format, the empty end event
    /// iperf3 writes after it.
    fn error(&mut self, why: &str) -> String {
        self.started = false;
        let mut out = iperf3::stream_event("error", serde_json::json!(why)) + "\n";
        if self.iperf3.is_some() {
            out += &(iperf3::stream_event("end", serde_json::json!({})) + "\n");
        }
        out
    }
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// iperf3's view of the server as typed.
fn iperf3_host(cmd: &BenchCmd) -> Iperf3Host {
    let (host, port) = wirespeed_engine::split_host_port(&cmd.host, cmd.args.port)
        .unwrap_or((cmd.host.clone(), cmd.args.port));
    Iperf3Host {
        system_info: system_info(),
        host,
        port,
    }
}

/// One bench invocation's output state: where lines go and how.
struct Session<'a> {
    cmd: &'a BenchCmd,
    format: Format,
    out: Out,
    stream: Option<Stream>,
    /// Progress on the terminal (stderr is one and there is no log file).
    tty: bool,
    /// The user asked for interval reports.
    user_interval: bool,
    /// Intervals stay in the result (asked for, or iperf3's JSON has them).
    keep: bool,
}

impl Session<'_> {
    /// The interval a test samples at: the user's; else 1 s where the
    /// output keeps intervals (iperf3 reports every second), 0.5 s for a
    /// terminal's progress line, none otherwise.
    fn interval_s(&self, asked: f64) -> f64 {
        match (self.user_interval, self.keep, self.tty) {
            (true, _, _) => asked,
            (_, true, _) => 1.0,
            (_, _, true) => 0.5,
            _ => 0.0,
        }
    }

    /// Shows one interval sample: a JSON line, a table line or progress.
    fn on_interval(&mut self, s: &TestSpec, smp: &IntervalSample) -> Result<()> {
        if let Some(st) = self.stream.as_mut() {
            return self.out.raw(&st.interval(s, &self.cmd.host, smp));
        }
        let line = interval_line(smp, s.workload);
        if self.user_interval && self.format == Format::Table {
            return self.out.text(&format!("{line}\n"));
        }
        if self.tty {
            let t = (smp.t_s + s.warmup_s).max(0.0);
            let total = s.warmup_s + s.duration_s;
            eprint!("\r{line}  [{:>3.0}%]  ", (t / total * 100.0).min(100.0));
            let _ = std::io::stderr().flush();
        }
        Ok(())
    }

    /// Says in the output that a test failed where the format has a way
    /// to: --json-stream's error event, iperf3-json's error document (as
    /// `iperf3 -J` writes one). Returns the error, for stderr and the
    /// exit status.
    fn failed(&mut self, e: anyhow::Error) -> anyhow::Error {
        let why = format!("{e:#}");
        let text = match (self.stream.as_mut(), self.format) {
            (Some(st), _) => st.error(&why),
            (None, Format::Iperf3Json) => {
                let host = iperf3_host(self.cmd);
                let doc = iperf3::error_document(&host, env!("CARGO_PKG_VERSION"), &why);
                serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
            }
            (None, _) => return e,
        };
        if let Err(w) = self.out.raw(&text) {
            eprintln!("warning: the error could not be written to the output: {w:#}");
        }
        e
    }

    /// Runs one test of the sweep, showing its intervals as they come.
    fn run_one(&mut self, cfg: &ClientConfig, reach: &Reach, s: &TestSpec) -> Result<TestResult> {
        let mut shown = Ok(());
        let r = run_test_via(cfg, reach, s, &mut |smp| {
            if shown.is_ok() {
                shown = self.on_interval(s, smp);
            }
        });
        if self.tty && !self.user_interval {
            eprint!("\r\x1b[2K");
        }
        shown?;
        let r = r.with_context(|| format!("test against {} failed", self.cmd.host));
        let mut r = r.map_err(|e| self.failed(e))?;
        if let Some(b) = r.breakdown.as_mut() {
            wirespeed_host::ethtool::add_device_clock(b, &r.server);
        }
        if let Some(st) = self.stream.as_mut() {
            self.out.raw(&st.end(&r, &self.cmd.host))?;
        }
        if !self.keep {
            r.intervals.clear();
            r.spec.interval_s = 0.0;
        }
        Ok(r)
    }
}

/// Runs `wirespeed bench`.
pub fn run(cmd: BenchCmd) -> Result<()> {
    let a = &cmd.args;
    let (spec, sizes) = spec_from(a)?;
    let format = format_of(&cmd, &spec)?;
    crate::model_cmd::check_bench_opts(&cmd.model)?;
    let (cfg, warning) = a.client(&cmd.host)?;
    let reach = a.reach()?;
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    if let Some(plan) = wirespeed_cli::bench::interference_plan(&cmd, &spec, &sizes)? {
        return run_interference(&cmd, &plan, format, &cfg, &reach);
    }
    let host = iperf3_host(&cmd);
    let stream = cmd.json_stream.then(|| Stream {
        iperf3: (format == Format::Iperf3Json).then(|| host.clone()),
        started: false,
    });
    let user_interval = spec.interval_s > 0.0;
    let mut ses = Session {
        cmd: &cmd,
        format,
        out: Out::open(&cmd)?,
        keep: user_interval || format == Format::Iperf3Json || stream.is_some(),
        stream,
        tty: std::io::stderr().is_terminal() && cmd.logfile.is_none(),
        user_interval,
    };
    let mut results = Vec::new();
    for &(req, resp) in &sizes {
        let mut s = spec.clone();
        s.request_size = req;
        s.response_size = resp;
        s.interval_s = ses.interval_s(spec.interval_s);
        results.push(ses.run_one(&cfg, &reach, &s)?);
    }
    if ses.stream.is_some() {
        return Ok(());
    }
    let report = Report {
        schema_version: SCHEMA_VERSION,
        results,
    };
    render_to(&mut ses.out, &report, format, &cmd, &host)?;
    for r in &report.results {
        crate::model_cmd::explain_after_bench(r, &cmd.model, format != Format::Table)?;
    }
    Ok(())
}

/// `bench --interference`: the victim per K and size, a progress line per
/// point on stderr, then the tables (or the JSON document).
fn run_interference(
    cmd: &BenchCmd,
    plan: &wirespeed_engine::interference::Plan,
    format: Format,
    cfg: &wirespeed_engine::ClientConfig,
    reach: &wirespeed_engine::Reach,
) -> Result<()> {
    if matches!(format, Format::Kv | Format::Iperf3Json) || cmd.json_stream {
        anyhow::bail!(
            "--interference writes a table or --json: drop --format kv, iperf3-json and --json-stream"
        );
    }
    let mut out = Out::open(cmd)?;
    let report = wirespeed_engine::interference::run(cfg, reach, plan, &mut |size, p| {
        let loaders = match p.k {
            0 => "alone".to_string(),
            k => format!(
                "beside {k} loaders ({})",
                wirespeed_report::human_bps(p.loaders_bps())
            ),
        };
        eprintln!(
            "interference {} K={}: {} trans/s, p99 {}, {loaders}",
            wirespeed_report::human_size(u64::from(size)),
            p.k,
            wirespeed_report::human_count(p.victim_tps),
            wirespeed_report::human_us(p.p99_us),
        );
    })?;
    match format {
        Format::Json => out.raw(&(serde_json::to_string_pretty(&report)? + "\n")),
        _ => out.text(&wirespeed_report::interference::render_interference(
            &report,
        )),
    }
}

/// Writes the finished report in `format`.
fn render_to(
    out: &mut Out,
    report: &Report,
    format: Format,
    cmd: &BenchCmd,
    host: &Iperf3Host,
) -> Result<()> {
    match format {
        Format::Iperf3Json => {
            for r in &report.results {
                let doc = iperf3::document(r, host);
                out.raw(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
            }
            Ok(())
        }
        Format::Json => out.raw(&render(report, format, &RenderOpts::default())),
        _ => {
            let opts = RenderOpts {
                per_flow: cmd.args.per_flow,
                color: false,
            };
            out.text(&render(report, format, &opts))
        }
    }
}
