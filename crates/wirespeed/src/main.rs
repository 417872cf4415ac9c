//! The `wirespeed` binary: parse the command line, call the libraries,
//! render. What it owns besides wiring: the clap definitions, the serve
//! loop's terminal output, the k8s and fleet commands' assembly of their
//! options and outputs, and the generated completions and man pages. It
//! changes no host itself (wirespeed-host's tune session does).

mod bench;
mod demo;
mod docs_cmd;
mod experiment;
mod fleet_cmd;
mod host_cmd;
mod k8s_cmd;
mod k8s_watch_cmd;
mod lab;
mod model_cmd;
mod optimize;
mod report_cmd;
mod watch_cmd;

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wirespeed_engine::spec::{parse_duration, parse_size};
use wirespeed_engine::{Limits, Server, ServerConfig};

/// Measure, explain and raise the bandwidth between Linux hosts.
#[derive(Parser, Debug)]
#[command(name = "wirespeed", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a test against a `wirespeed serve` on HOST.
    Bench(Box<bench::BenchCmd>),
    /// Serve tests to wirespeed clients.
    Serve(ServeArgs),
    /// Emulated hosts in network namespaces (root).
    #[command(subcommand)]
    Lab(lab::LabCmd),
    /// The demo (same as `lab demo`): report 2's lab, doctor, tune, the ladder, report.html; loopback without root.
    Demo(demo::DemoArgs),
    /// Read every knob that limits bandwidth on this host.
    Inspect(host_cmd::InspectArgs),
    /// Find what limits bandwidth or latency here, with evidence and fixes.
    Doctor(Box<host_cmd::DoctorArgs>),
    /// Change the host reversibly: plan, apply, confirm, rollback.
    #[command(subcommand)]
    Tune(host_cmd::TuneCmd),
    /// A cloud profile's ceilings per flow, NIC and VM, and price per Gbit/s.
    Model(model_cmd::ModelArgs),
    /// Set bench results (JSON) against a profile and name the bottleneck.
    Explain(model_cmd::ExplainArgs),
    /// Run an experiment file: cells against a baseline, repeated, in a lab (root).
    Experiment(experiment::ExperimentArgs),
    /// Search the bench and host settings that raise throughput or cut latency.
    Optimize(Box<optimize::OptimizeCmd>),
    /// The fleet agent: the server plus a keyed HTTP API and Prometheus metrics.
    Agent(Box<fleet_cmd::AgentArgs>),
    /// Test every link of a fleet of agents; plan the rounds.
    #[command(subcommand)]
    Fleet(fleet_cmd::FleetCmd),
    /// Render experiment or bench results as HTML (SVG charts), Markdown or CSV; several files are compared.
    Report(report_cmd::ReportArgs),
    /// Agents on Kubernetes: host network, pod network or DRA-claimed NICs.
    #[command(subcommand)]
    K8s(k8s_cmd::K8sCmd),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(docs_cmd::CompletionsArgs),
    /// Write a man page per command (wirespeed.1, wirespeed-bench.1, ...).
    Man(docs_cmd::ManArgs),
}

/// `--version`'s long form: the version and the git commit built from.
fn long_version() -> String {
    format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        wirespeed_image::GIT_COMMIT
    )
}

/// The command line, with `--version` naming the commit.
fn parse_cli() -> Cli {
    let m = Cli::command().long_version(long_version()).get_matches();
    Cli::from_arg_matches(&m).unwrap_or_else(|e| e.exit())
}

/// Options of `wirespeed serve`. Every deadline and cap, and what a client
/// sees when it strikes, is in docs/protocol.md.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// Address to listen on (`::` takes IPv4 and IPv6).
    #[arg(long, default_value = "::")]
    bind: IpAddr,
    /// Control port.
    #[arg(short, long, default_value_t = wirespeed_engine::DEFAULT_PORT)]
    port: u16,
    /// Tests that may run at once; more get a "busy" answer.
    #[arg(long, default_value_t = 4)]
    max_tests: u32,
    /// Only clients proving this key (HMAC challenge) may run tests.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Longest warm-up plus duration a client may ask for.
    #[arg(long, default_value = "1h")]
    max_duration: String,
    /// Most connections in one test [default: from the open-file limit,
    /// leaving headroom; at most 20000].
    #[arg(long)]
    max_flows: Option<u32>,
    /// Most worker threads in one test.
    #[arg(long, default_value_t = 256)]
    max_threads: u32,
    /// Largest message, request or response size.
    #[arg(long, default_value = "64m")]
    max_msg_size: String,
    /// Authenticated control connections at once.
    #[arg(long, default_value_t = 32)]
    max_connections: usize,
    /// Connections still in the handshake at once (the oldest makes room).
    #[arg(long, default_value_t = 64)]
    max_unauthenticated: usize,
    /// Control connections from one address (IPv6: one /64) at once.
    #[arg(long, default_value_t = 8)]
    max_per_source: usize,
    /// Time from a client's connect to the end of its handshake.
    #[arg(long, default_value = "5s")]
    handshake_timeout: String,
    /// Time a client has for each whole message after the handshake.
    #[arg(long, default_value = "10s")]
    idle_timeout: String,
    /// Time a data connection has to send its preamble.
    #[arg(long, default_value = "2s")]
    preamble_timeout: String,
    /// Time after a test's end the server waits for the client's stop.
    #[arg(long, default_value = "3s")]
    stop_grace: String,
    /// Ports for the tests' data connections (LO-HI), so a firewall,
    /// NetworkPolicy or Service can admit them [default: any free port].
    #[arg(long, value_name = "LO-HI")]
    data_ports: Option<String>,
}

/// A positive duration flag (at least 100 ms).
fn duration_flag(flag: &str, v: &str) -> Result<Duration> {
    let s = parse_duration(v).with_context(|| format!("--{flag}"))?;
    Ok(Duration::from_secs_f64(s.max(0.1)))
}

/// Reads a `--key-file`, printing its warning (world-readable) on stderr.
/// Refuses a command that changes the host without root, with `why`.
pub(crate) fn need_root(why: &str) -> Result<()> {
    if !wirespeed_host::is_root() {
        anyhow::bail!("{why}");
    }
    Ok(())
}

pub(crate) fn read_key(path: &std::path::Path) -> Result<Vec<u8>> {
    let k = wirespeed_engine::server::read_key_file(path)?;
    if let Some(w) = &k.warning {
        eprintln!("warning: {w}");
    }
    Ok(k.key)
}

/// The engine server's settings from `serve`'s flags (shared with
/// `agent`): the config, the key, and the flow limit when it was derived
/// from the open-file limit (to say so).
pub(crate) fn server_config(a: &ServeArgs) -> Result<(ServerConfig, Option<(u32, u64)>)> {
    let key = match &a.key_file {
        Some(p) => Some(read_key(p)?),
        None => None,
    };
    let max_msg = parse_size(&a.max_msg_size)?;
    let nofile = wirespeed_engine::sys::raise_fd_limit();
    let max_flows = a
        .max_flows
        .unwrap_or_else(|| wirespeed_engine::server::flow_limit_for(nofile));
    let cfg = ServerConfig {
        bind: a.bind,
        port: a.port,
        limits: Limits {
            max_duration_s: parse_duration(&a.max_duration).context("--max-duration")?,
            max_flows,
            max_threads: a.max_threads,
            max_msg_size: u32::try_from(max_msg).context("--max-msg-size must be below 4 GiB")?,
        },
        max_tests: a.max_tests.max(1),
        max_connections: a.max_connections.max(1),
        max_unauthenticated: a.max_unauthenticated.max(1),
        max_per_source: a.max_per_source.max(1),
        key,
        handshake_timeout: duration_flag("handshake-timeout", &a.handshake_timeout)?,
        idle_timeout: duration_flag("idle-timeout", &a.idle_timeout)?,
        preamble_timeout: duration_flag("preamble-timeout", &a.preamble_timeout)?,
        stop_grace: duration_flag("stop-grace", &a.stop_grace)?,
        events: None,
        data_ports: a
            .data_ports
            .as_deref()
            .map(wirespeed_engine::units::parse_port_range)
            .transpose()
            .context("--data-ports")?,
    };
    Ok((cfg, a.max_flows.is_none().then_some((max_flows, nofile))))
}

fn serve(a: ServeArgs) -> Result<()> {
    let (cfg, derived) = server_config(&a)?;
    let key = cfg.key.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let server = Server::bind(ServerConfig {
        events: Some(tx),
        ..cfg
    })?;
    let addr = server.local_addr()?;
    // The banner is the readiness signal scripts wait for; a closed stdout
    // must not stop the server.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "wirespeed server listening on {addr} (protocol {})",
        wirespeed_engine::proto::PROTOCOL_VERSION
    );
    if let Some((max_flows, nofile)) = derived {
        let _ = writeln!(
            out,
            "at most {max_flows} flows per test (open-file limit {nofile}; --max-flows to change)"
        );
    }
    if key.is_none() {
        let _ = writeln!(
            out,
            "warning: no --key-file: anyone who reaches port {} can run tests on this host",
            addr.port()
        );
    }
    let _ = out.flush();
    drop(out);
    // One line per test started, finished or refused: the server's log.
    // Wire-borne text in the events is escaped already.
    std::thread::spawn(move || {
        for ev in rx {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{ev}");
            let _ = out.flush();
        }
    });
    server.serve(Arc::new(AtomicBool::new(false)))?;
    Ok(())
}

fn main() {
    let cli = parse_cli();
    // The experiment library's progress and warnings are terminal output.
    wirespeed_experiment::progress::set_sink(|line| eprintln!("{line}"));
    let r = match cli.cmd {
        Cmd::Bench(a) => bench::run(*a),
        Cmd::Serve(a) => serve(a),
        Cmd::Lab(c) => lab::run(c),
        Cmd::Demo(a) => demo::run(a),
        Cmd::Inspect(a) => host_cmd::run_inspect(a),
        Cmd::Doctor(a) => host_cmd::run_doctor(*a),
        Cmd::Tune(c) => host_cmd::run_tune(c),
        Cmd::Model(a) => model_cmd::run_model(&a),
        Cmd::Explain(a) => model_cmd::run_explain(&a),
        Cmd::Experiment(a) => experiment::run(a),
        Cmd::Report(a) => report_cmd::run(a),
        Cmd::Optimize(a) => optimize::run(*a),
        Cmd::Agent(a) => fleet_cmd::run_agent(*a),
        Cmd::Fleet(c) => fleet_cmd::run(c),
        Cmd::K8s(c) => k8s_cmd::run(c),
        Cmd::Completions(a) => docs_cmd::completions(&a, Cli::command()),
        Cmd::Man(a) => docs_cmd::man(&a, Cli::command()),
    };
    if let Err(e) = r {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
