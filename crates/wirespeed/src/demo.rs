//! `wirespeed lab demo` (also `wirespeed demo`): the README's first
//! command. As root it builds report 2's lab (two hosts, two 1 Gbit/s
//! NICs in one subnet, untuned buffers), measures one flow, runs doctor,
//! applies its tuning, measures again with doctor's bench flags, rolls the
//! tuning back, runs the multinic ladder experiment, prints its table and
//! writes report.html; everything is torn down at the end, also on error.
//! Without root it says why and runs a short loopback bench.

use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use wirespeed_engine::{
    ClientConfig, Report, SCHEMA_VERSION, Server, ServerConfig, TestSpec, run_test,
};
use wirespeed_lab::{Lab, LabSpec};
use wirespeed_report::{Format, RenderOpts, human_bps, render};

/// Options of `wirespeed demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Seconds each test measures.
    #[arg(long, default_value_t = 2.0)]
    pub duration: f64,
    /// Use loopback even as root.
    #[arg(long)]
    pub loopback: bool,
    /// Where the HTML report goes.
    #[arg(long, default_value = "report.html")]
    pub out: std::path::PathBuf,
}

/// A `wirespeed serve` child process, killed on drop.
pub struct ServerProc(Child);

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `wirespeed serve` through `cmd` and waits for its listening line.
pub fn spawn_server(mut cmd: Command) -> Result<ServerProc> {
    // The server dies with us, however we die (SIGKILL included).
    crate::sys::die_with_parent(&mut cmd);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start wirespeed serve")?;
    let out = child.stdout.take().context("server stdout")?;
    let mut reader = BufReader::new(out);
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .context("read the server's first line")?;
    if !line.contains("listening on") {
        let _ = child.kill();
        let _ = child.wait();
        bail!("the server did not start: {line:?}");
    }
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    Ok(ServerProc(child))
}

/// Runs the demo.
pub fn run(a: DemoArgs) -> Result<()> {
    if wirespeed_lab::is_root() && !a.loopback {
        lab_demo(a.duration, &a.out)
    } else {
        if !a.loopback {
            println!(
                "not root: the lab demo needs network namespaces (run it with sudo); running a loopback bench instead"
            );
        }
        loopback_demo(a.duration)
    }
}

fn loopback_demo(duration: f64) -> Result<()> {
    let server = Server::bind(ServerConfig {
        bind: "127.0.0.1".parse()?,
        port: 0,
        ..ServerConfig::default()
    })?;
    let addr = server.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let h = std::thread::spawn(move || server.serve(s2));
    let cfg = ClientConfig::new(&addr.to_string());
    let mut results = Vec::new();
    for spec in [
        TestSpec {
            duration_s: duration,
            warmup_s: 0.5,
            ..TestSpec::default()
        },
        TestSpec {
            duration_s: duration,
            warmup_s: 0.5,
            flows: 4,
            threads: 2,
            ..TestSpec::default()
        },
        TestSpec {
            workload: wirespeed_engine::Workload::Rr,
            duration_s: duration,
            warmup_s: 0.5,
            nodelay: true,
            ..TestSpec::default()
        },
    ] {
        results.push(run_test(&cfg, &spec, &mut |_| {})?);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = h.join();
    let report = Report {
        schema_version: SCHEMA_VERSION,
        results,
    };
    print!("{}", render(&report, Format::Table, &RenderOpts::default()));
    Ok(())
}

/// The multinic-ladder scenario, embedded so the demo runs anywhere.
const LADDER_LAB: &str = include_str!("../../../scenarios/multinic-ladder/lab.toml");
/// Its experiment.
const LADDER_EXPERIMENT: &str = include_str!("../../../scenarios/multinic-ladder/experiment.toml");

/// Runs this binary with `args` and returns its stdout, or an error with its stderr.
fn me(args: &[&str]) -> Result<String> {
    let exe = std::env::current_exe().context("find the wirespeed binary")?;
    let out = Command::new(exe)
        .args(args)
        .output()
        .with_context(|| format!("run wirespeed {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "wirespeed {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a bench in host a of the lab and returns its first result.
fn lab_bench(
    lab: &Lab,
    server: &str,
    duration: f64,
    extra: &[String],
) -> Result<wirespeed_engine::TestResult> {
    let exe = std::env::current_exe().context("find the wirespeed binary")?;
    let d = format!("{duration}s");
    let mut cmd = lab.command("a", exe.to_str().context("binary path is not UTF-8")?);
    crate::sys::die_with_parent(&mut cmd);
    let out = cmd
        .args([
            "bench", server, "--port", "5300", "-d", &d, "--warmup", "0.5s", "--cc", "cubic",
            "--json",
        ])
        .args(extra)
        .output()
        .context("run the client in the lab")?;
    if !out.status.success() {
        bail!("bench failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let report: Report = serde_json::from_slice(&out.stdout).context("parse bench JSON")?;
    report
        .results
        .into_iter()
        .next()
        .context("the bench returned no result")
}

fn lab_demo(duration: f64, out: &std::path::Path) -> Result<()> {
    let started = std::time::Instant::now();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let mut spec = LabSpec::from_toml_str(LADDER_LAB).context("the embedded lab")?;
    spec.name = Lab::unique("demo");
    let lab = Lab::up(&spec)?;
    println!(
        "Report 2 in a lab: two hosts, two NICs in one subnet, each capped at 1 Gbit/s, untuned buffers."
    );
    crate::lab::describe(&lab, &spec);
    let exe = std::env::current_exe().context("find the wirespeed binary")?;
    let mut cmd = lab.command("b", exe.to_str().context("binary path is not UTF-8")?);
    cmd.args(["serve", "--port", "5300"]);
    let server = spawn_server(cmd)?;
    let addr = |h: &str, i| {
        lab.addr4(h, i)
            .map(|a| a.to_string())
            .context("lab address")
    };
    let (b0, b1) = (addr("b", 0)?, addr("b", 1)?);

    println!("\n== 1. one flow on one NIC");
    let base = lab_bench(
        &lab,
        &b0,
        duration,
        &["--paths".into(), format!("{}={b0}", addr("a", 0)?)],
    )?;
    println!("{}", human_bps(base.throughput_bps));

    println!("\n== 2. wirespeed doctor --peer {b0},{b1} (on host a)");
    let (ns_a, ns_b) = (lab.ns("a"), lab.ns("b"));
    let peers = format!("{b0},{b1}");
    let doc: serde_json::Value = serde_json::from_str(&me(&[
        "doctor",
        "--netns",
        &ns_a,
        "--peer",
        &peers,
        "--port",
        "5300",
        "--test-duration",
        "1s",
        "--json",
    ])?)
    .context("parse doctor JSON")?;
    let findings = doc["findings"].as_array().cloned().unwrap_or_default();
    for f in &findings {
        println!(
            "  [{}] {}",
            f["severity"].as_str().unwrap_or("?"),
            f["title"].as_str().unwrap_or("?")
        );
    }

    println!("\n== 3. wirespeed tune apply (doctor's fixes, on both hosts)");
    let tmp = std::env::temp_dir().join(format!("wirespeed-demo-{}", std::process::id()));
    let mut tuned =
        crate::experiment::Tuned::new(exe.to_str().context("binary path is not UTF-8")?);
    for (h, ns) in [("a", &ns_a), ("b", &ns_b)] {
        let text = tuned.apply_in(ns, tmp.join(h), &[])?;
        let changed = text.lines().filter(|l| l.contains(" -> ")).count();
        println!("  host {h}: {changed} change(s), e.g.");
        for l in text.lines().filter(|l| l.contains(" -> ")).take(3) {
            println!("   {}", l.trim());
        }
    }
    let flags = findings
        .iter()
        .find_map(|f| {
            let id = f["id"].as_str()?;
            id.starts_with("peer-")
                .then(|| f["bench_flags"].as_str())
                .flatten()
        })
        .filter(|f| f.starts_with("--paths "))
        .map(|f| {
            f.split_whitespace()
                .take(2)
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .unwrap_or_else(|| {
            vec![
                "--paths".into(),
                format!(
                    "{}={b0},{}={b1}",
                    addr("a", 0).unwrap_or_default(),
                    addr("a", 1).unwrap_or_default()
                ),
            ]
        });
    let mut extra = flags.clone();
    extra.extend(["-F".into(), "8".into(), "-T".into(), "2".into()]);
    println!(
        "\n== 4. after tuning, with doctor's advice: {} -F 8",
        flags.join(" ")
    );
    let after = lab_bench(&lab, &b0, duration, &extra)?;
    let per: Vec<String> = after
        .paths
        .iter()
        .map(|p| human_bps(p.throughput_bps))
        .collect();
    println!(
        "{} ({}), {:.0}% of the 2 Gbit/s of caps, {:.1}x the one-flow baseline",
        human_bps(after.throughput_bps),
        per.join(" + "),
        after.throughput_bps / 2e9 * 100.0,
        after.throughput_bps / base.throughput_bps.max(1.0)
    );
    drop(tuned);
    drop(server);
    lab.down()?;

    println!("\n== 5. the ladder of report 2, one change at a time (wirespeed experiment)");
    std::fs::create_dir_all(&tmp).context("temp dir")?;
    std::fs::write(tmp.join("lab.toml"), LADDER_LAB).context("write the lab file")?;
    let exp_file = tmp.join("experiment.toml");
    std::fs::write(&exp_file, LADDER_EXPERIMENT).context("write the experiment file")?;
    let results = out.with_extension("results.json");
    let run = crate::experiment::run(crate::experiment::ExperimentArgs {
        file: exp_file,
        out: Some(results.clone()),
        repeats: Some(1),
        duration: Some(format!("{duration}s")),
        warmup: Some("0.5s".into()),
        resume: false,
        fresh: true,
        json: false,
        dry_run: false,
    });
    let report = run.and_then(|_| {
        crate::report_cmd::run(crate::report_cmd::ReportArgs {
            results: vec![results.clone()],
            labels: Vec::new(),
            output: Some(out.to_path_buf()),
            format: Some("html".into()),
        })
    });
    let _ = std::fs::remove_dir_all(&tmp);
    report?;
    println!(
        "\ndemo done in {:.0} s; open {} for the charts",
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}
