//! The `wirespeed` binary: parse the command line (`wirespeed_cli::Cli`),
//! call the libraries, render. What it owns besides dispatch: terminal
//! output (progress lines, tables, the serve loop's lines), exit codes,
//! and writing the completions and man pages generated from the clap
//! definitions. It changes no host itself (wirespeed-host's session does).

#![forbid(unsafe_code)]

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
mod stop;
mod watch_cmd;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches};
use std::io::Write;
use wirespeed_cli::*;
use wirespeed_engine::{Server, ServerConfig};

/// `--version`'s long form: the version and the git commit built from.
fn long_version() -> String {
    format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        wirespeed_image::GIT_COMMIT
    )
}

/// The command line, with `--version` naming the commit.
/// The command line; installed as `kubectl-wirespeed` the binary is a
/// kubectl plugin, whose commands are `wirespeed k8s`'s.
fn parse_cli() -> Cli {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    if wirespeed_cli::k8s::is_kubectl_plugin(&argv0) {
        let c = wirespeed_cli::k8s::KubectlPlugin::command().long_version(long_version());
        let p = wirespeed_cli::k8s::KubectlPlugin::from_arg_matches(&c.get_matches())
            .unwrap_or_else(|e| e.exit());
        return Cli {
            cmd: Cmd::K8s(p.k8s),
        };
    }
    let m = Cli::command().long_version(long_version()).get_matches();
    Cli::from_arg_matches(&m).unwrap_or_else(|e| e.exit())
}

/// Refuses a command that changes the host without root, with `why`.
pub(crate) fn need_root(why: &str) -> Result<()> {
    if !wirespeed_host::is_root() {
        anyhow::bail!("{why}");
    }
    Ok(())
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
    let stop = stop::on_stop_signals()?;
    server.serve(stop)?;
    eprintln!("wirespeed server: stopped by a signal");
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
