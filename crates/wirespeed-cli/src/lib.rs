//! wirespeed's command line as data: every subcommand's clap definitions
//! (flags, defaults, help text) and the few conversions of a flag into
//! the libraries' typed requests that need nothing but the flags. The
//! binary parses with [`Cli`], dispatches, and renders; completions and
//! man pages are generated from [`Cli`] too. This crate does no I/O
//! beyond reading files a flag names (and printing the warning a key
//! file raises).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod bench;
pub mod demo;
pub mod docs;
pub mod experiment;
pub mod fleet;
pub mod host;
pub mod k8s;
mod k8s_objects;
pub mod k8s_watch;
pub mod lab;
pub mod model;
pub mod optimize;
pub mod report;
pub mod watch;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_engine::ServerConfig;
use wirespeed_types::Limits;
use wirespeed_types::spec::{parse_duration, parse_size};

/// Measure, explain and raise the bandwidth between Linux hosts.
#[derive(Parser, Debug)]
#[command(
    name = "wirespeed",
    version,
    about = "Measure, explain and raise the bandwidth between Linux hosts",
    long_about = None
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Every subcommand of `wirespeed`.
#[derive(Subcommand, Debug)]
pub enum Cmd {
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
    Inspect(host::InspectArgs),
    /// Find what limits bandwidth or latency here, with evidence and fixes.
    Doctor(Box<host::DoctorArgs>),
    /// Change the host reversibly: plan, apply, confirm, rollback.
    #[command(subcommand)]
    Tune(host::TuneCmd),
    /// A cloud profile's ceilings per flow, NIC and VM, and price per Gbit/s.
    Model(model::ModelArgs),
    /// Set bench results (JSON) against a profile and name the bottleneck.
    Explain(model::ExplainArgs),
    /// Run an experiment file: cells against a baseline, repeated, in a lab (root).
    Experiment(experiment::ExperimentArgs),
    /// Search the bench and host settings that raise throughput or cut latency.
    Optimize(Box<optimize::OptimizeCmd>),
    /// The fleet agent: the server plus a keyed HTTP API and Prometheus metrics.
    Agent(Box<fleet::AgentArgs>),
    /// Test every link of a fleet of agents; plan the rounds.
    #[command(subcommand)]
    Fleet(fleet::FleetCmd),
    /// Render experiment or bench results as HTML (SVG charts), Markdown or CSV; several files are compared. Also one `fleet run` or `k8s run` --out file, saying when it is partial.
    Report(report::ReportArgs),
    /// Agents on Kubernetes: host network, pod network or DRA-claimed NICs.
    K8s(k8s::K8sArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(docs::CompletionsArgs),
    /// Write a man page per command (wirespeed.1, wirespeed-bench.1, ...).
    Man(docs::ManArgs),
}

/// Options of `wirespeed serve`. Every deadline and cap, and what a client
/// sees when it strikes, is in docs/protocol.md.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (`::` takes IPv4 and IPv6).
    #[arg(long, default_value = "::")]
    pub bind: IpAddr,
    /// Control port.
    #[arg(short, long, default_value_t = wirespeed_engine::DEFAULT_PORT)]
    pub port: u16,
    /// Tests that may run at once; more get a "busy" answer.
    #[arg(long, default_value_t = 4)]
    pub max_tests: u32,
    /// Only clients proving this key (HMAC challenge) may run tests.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Longest warm-up plus duration a client may ask for.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "1h")]
    pub max_duration: String,
    /// Most connections in one test [default: from the open-file limit,
    /// leaving headroom; at most 20000].
    #[arg(long)]
    pub max_flows: Option<u32>,
    /// Most worker threads in one test.
    #[arg(long, default_value_t = 256)]
    pub max_threads: u32,
    /// Largest message, request or response size.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_size), long, default_value = "64m")]
    pub max_msg_size: String,
    /// Authenticated control connections at once.
    #[arg(long, default_value_t = 32)]
    pub max_connections: usize,
    /// Connections still in the handshake at once (the oldest makes room).
    #[arg(long, default_value_t = 64)]
    pub max_unauthenticated: usize,
    /// Control connections from one address (IPv6: one /64) at once.
    #[arg(long, default_value_t = 8)]
    pub max_per_source: usize,
    /// Time from a client's connect to the end of its handshake.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "5s")]
    pub handshake_timeout: String,
    /// Time a client has for each whole message after the handshake.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "10s")]
    pub idle_timeout: String,
    /// Time a data connection has to send its preamble.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "2s")]
    pub preamble_timeout: String,
    /// Time after a test's end the server waits for the client's stop.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "3s")]
    pub stop_grace: String,
    /// Ports for the tests' data connections (LO-HI), so a firewall,
    /// NetworkPolicy or Service can admit them [default: any free port].
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_port_range), long, value_name = "LO-HI")]
    pub data_ports: Option<String>,
}

/// The value parser of a flag over a closed set that the domain names:
/// `--help` lists `names`, clap refuses anything else naming the flag
/// and its choices, and the value arrives parsed into the domain's type.
/// `hidden` are accepted too without being listed (old spellings).
pub fn choice<T>(
    names: &'static [&'static str],
    hidden: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = names
        .iter()
        .map(|n| PossibleValue::new(*n))
        .chain(hidden.iter().map(|n| PossibleValue::new(*n).hide(true)));
    PossibleValuesParser::new(values).try_map(|s: String| s.parse::<T>())
}

/// A value checked at parse time but kept as the text given
/// ([`wirespeed_experiment::cell::checked`], which bench's flags use too).
pub use wirespeed_experiment::cell::checked;

/// A fleet key file's bytes; a warning about the file (its mode) goes
/// to stderr.
pub fn read_key(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let k = wirespeed_engine::read_key_file(path)?;
    if let Some(w) = &k.warning {
        eprintln!("warning: {w}");
    }
    Ok(k.key)
}

/// A positive duration flag (at least 100 ms).
pub fn duration_flag(flag: &str, v: &str) -> Result<Duration> {
    let s = parse_duration(v).with_context(|| format!("--{flag}"))?;
    Ok(Duration::from_secs_f64(s.max(0.1)))
}

/// The engine server's settings from `serve`'s flags (shared with
/// `agent`): the config, the key, and the flow limit when it was derived
/// from the open-file limit (to say so).
pub fn server_config(a: &ServeArgs) -> Result<(ServerConfig, Option<(u32, u64)>)> {
    let key = match &a.key_file {
        Some(p) => Some(read_key(p)?),
        None => None,
    };
    let max_msg = parse_size(&a.max_msg_size)?;
    let nofile = wirespeed_engine::raise_fd_limit();
    let max_flows = a
        .max_flows
        .unwrap_or_else(|| wirespeed_engine::flow_limit_for(nofile));
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
            .map(wirespeed_types::units::parse_port_range)
            .transpose()
            .context("--data-ports")?,
    };
    Ok((cfg, a.max_flows.is_none().then_some((max_flows, nofile))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::reentry::Reentry;

    /// wirespeed-host re-runs this binary with subcommands it spells
    /// itself (the watchdog, the backup timer's rollback): each must
    /// parse as the tune command it names.
    #[test]
    fn the_host_crates_re_runs_parse_as_tune_commands() {
        let runs = [
            Reentry::Watchdog {
                state_dir: "/run/ws".into(),
                root: Some("/tmp/root".into()),
            },
            Reentry::RollbackIfOverdue {
                state_dir: "/run/ws".into(),
                netns: Some("ns1".into()),
            },
        ];
        for r in runs {
            let mut argv = r.argv().unwrap();
            argv[0] = "wirespeed".into();
            let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            assert!(matches!(cli.cmd, Cmd::Tune(_)), "{argv:?}");
        }
    }
}

#[cfg(test)]
mod shorts_tests {
    use clap::CommandFactory;

    /// Each short flag means one thing in each subcommand, flattened
    /// groups included (`k8s run -n` was both --namespace and bench's
    /// --bytes: clap checks it only in debug builds, and a release build
    /// read `-n 1G` as a namespace). Also every other debug assertion of
    /// clap, which `debug_assert` runs in this test build.
    #[test]
    fn every_short_flag_has_one_meaning_in_each_command() {
        fn walk(c: &clap::Command, path: &str, bad: &mut Vec<String>) {
            let mut seen: std::collections::BTreeMap<char, String> = Default::default();
            for a in c.get_arguments() {
                let shorts = a
                    .get_short()
                    .into_iter()
                    .chain(a.get_all_short_aliases().into_iter().flatten());
                for s in shorts {
                    let id = a.get_id().to_string();
                    if let Some(other) = seen.insert(s, id.clone()) {
                        bad.push(format!("{path}: -{s} is both --{other} and --{id}"));
                    }
                }
            }
            for sc in c.get_subcommands() {
                walk(sc, &format!("{path} {}", sc.get_name()), bad);
            }
        }
        let mut cmd = crate::Cli::command();
        cmd.build();
        let mut bad = Vec::new();
        walk(&cmd, "wirespeed", &mut bad);
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

#[cfg(test)]
mod loaders_tests {
    use wirespeed_experiment::BenchArgs;

    /// A fleet or cluster run refuses --loaders instead of ignoring it.
    #[test]
    fn fleet_and_cluster_runs_refuse_loaders() {
        let mut b = BenchArgs::defaults();
        b.workload = wirespeed_types::Workload::Rr;
        b.loaders = 2;
        let e = crate::fleet::workloads(&b).unwrap_err().to_string();
        assert!(e.contains("--loaders"), "{e}");
        b.loaders = 0;
        b.loaders_from = Some("c2".into());
        assert!(crate::fleet::workloads(&b).is_err());
        b.loaders_from = None;
        assert!(crate::fleet::workloads(&b).is_ok());
    }
}
