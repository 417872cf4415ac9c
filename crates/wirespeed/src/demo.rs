//! `wirespeed demo`: the README's first command. As root it builds a
//! 2-host lab with two 1 Gbit/s NICs and shows one flow on one NIC against
//! four flows over both; otherwise it runs a short loopback test.

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
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// Use loopback even as root.
    #[arg(long)]
    pub loopback: bool,
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
        lab_demo(a.duration)
    } else {
        if !a.loopback {
            println!("not root: no namespaces can be made, so this demo runs on loopback");
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

fn lab_demo(duration: f64) -> Result<()> {
    let spec = LabSpec::two_hosts(&Lab::unique("demo"), 2, Some("1gbit"));
    let lab = Lab::up(&spec)?;
    crate::lab::describe(&lab, &spec);
    let exe = std::env::current_exe().context("find the wirespeed binary")?;
    let mut cmd = lab.command("b", exe.to_str().context("binary path is not UTF-8")?);
    cmd.args(["serve", "--port", "5300"]);
    let _server = spawn_server(cmd)?;
    let (a0, a1) = (
        lab.addr4("a", 0).context("address")?,
        lab.addr4("a", 1).context("address")?,
    );
    let (b0, b1) = (
        lab.addr4("b", 0).context("address")?,
        lab.addr4("b", 1).context("address")?,
    );
    let d = format!("{duration}s");
    let one = format!("{a0}={b0}");
    let two = format!("{a0}={b0},{a1}={b1}");
    let runs: [(&str, Vec<&str>); 2] = [
        ("one flow on one NIC", vec!["--paths", &one]),
        (
            "4 flows over both NICs",
            vec!["--paths", &two, "-F", "4", "-T", "2"],
        ),
    ];
    println!("\nTwo hosts joined by two veth NICs, each capped at 1 Gbit/s by tbf.\n");
    let mut figures = Vec::new();
    for (title, extra) in runs {
        let out = lab
            .command("a", exe.to_str().unwrap_or("wirespeed"))
            .args([
                "bench",
                &b0.to_string(),
                "-d",
                &d,
                "--warmup",
                "0.5s",
                "--json",
            ])
            .args(&extra)
            .output()
            .context("run the client in the lab")?;
        if !out.status.success() {
            bail!("bench failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let report: Report = serde_json::from_slice(&out.stdout).context("parse bench JSON")?;
        println!("== {title}");
        print!("{}", render(&report, Format::Table, &RenderOpts::default()));
        figures.push(
            report
                .results
                .first()
                .map(|r| r.throughput_bps)
                .unwrap_or(0.0),
        );
    }
    println!(
        "\nOne flow on one NIC: {}; all NICs at once in one test: {} ({:.0}% of the 2 Gbit/s of caps).",
        human_bps(figures[0]),
        human_bps(figures[1]),
        figures[1] / 2e9 * 100.0
    );
    drop(_server);
    lab.down()?;
    Ok(())
}
