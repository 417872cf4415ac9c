//! `wirespeed k8s watch apply|manifests|status|delete`: `fleet watch` as
//! a Deployment beside its agents (wirespeed-k8s's watch module), and
//! `in-cluster`, what that Deployment's pod runs.

use crate::k8s_cmd::ObjectArgs;
use crate::watch_cmd::{self, WatchArgs};
use anyhow::{Context, Result, bail};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_k8s::manifests::{self, Network};
use wirespeed_k8s::watch::{self as kwatch, DEFAULT_NAMESPACE, InCluster, Watcher};
use wirespeed_types::units::parse_duration;

/// `k8s watch` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum WatchCmd {
    /// Apply the agents (a DaemonSet) and the watcher (a Deployment and
    /// its Service) in a namespace of their own, or change them when
    /// applied again; wait until the watcher watches every agent. Flags
    /// after `--` go to `fleet watch` (e.g. -- --probe-period 10s).
    Apply(Box<ApplyArgs>),
    /// Print what `apply` would apply (YAML, or JSON with --output json).
    Manifests(Box<ApplyArgs>),
    /// The watcher's state through the API server: its agents, the newest
    /// test of each link, its drift events.
    Status(StatusArgs),
    /// Delete the namespace `apply` made: agents, watcher and history
    /// (unless it is on --history-claim's volume).
    Delete(StatusArgs),
    /// What the watcher's pod runs: find the agents through the API
    /// server and watch them, again whenever they change.
    #[command(hide = true)]
    InCluster(Box<InClusterArgs>),
}

/// Options of `k8s watch apply` and `k8s watch manifests`.
#[derive(clap::Args, Debug)]
pub struct ApplyArgs {
    #[command(flatten)]
    objects: ObjectArgs,
    /// The namespace (made by apply, deleted by delete).
    #[arg(long, default_value = DEFAULT_NAMESPACE)]
    namespace: String,
    /// The agents' engine port.
    #[arg(long, default_value_t = manifests::DEFAULT_PORT)]
    port: u16,
    /// The fleet key file [default: the namespace's key when it has one,
    /// else a fresh one].
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Keep the history on this PersistentVolumeClaim (yours, in the
    /// namespace) [default: an emptyDir, lost when the pod goes].
    #[arg(long, value_name = "CLAIM")]
    history_claim: Option<String>,
    /// How often the watcher lists its agents again.
    #[arg(long, default_value = "60s")]
    rediscover: String,
    /// Longest wait for the agents and then the watcher.
    #[arg(long, default_value = "5m")]
    ready_timeout: String,
    /// The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// manifests: yaml (multi-document) or json (a v1 List).
    #[arg(long, default_value = "yaml")]
    output: String,
    /// `fleet watch` flags for the watcher (after `--`).
    #[arg(last = true)]
    watch_args: Vec<String>,
}

/// Options of `k8s watch status` and `k8s watch delete`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The namespace.
    #[arg(long, default_value = DEFAULT_NAMESPACE)]
    namespace: String,
    /// The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// status: also print the state as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Options of `k8s watch in-cluster`.
#[derive(clap::Args, Debug)]
pub struct InClusterArgs {
    /// The agents' namespace (the pod's own).
    #[arg(long)]
    namespace: String,
    /// The agents' network mode: host or pod.
    #[arg(long)]
    network: String,
    /// The agents' engine port.
    #[arg(long)]
    port: u16,
    /// The agents' HTTP port.
    #[arg(long)]
    http_port: u16,
    /// How often the agents are listed again.
    #[arg(long, default_value = "60s")]
    rediscover: String,
    /// Longest wait for the agents to be Ready.
    #[arg(long, default_value = "10m")]
    ready_timeout: String,
    #[command(flatten)]
    watch: WatchArgs,
}

/// The watcher's forwarded flags, parsed as `fleet watch` would.
#[derive(Parser, Debug)]
#[command(name = "fleet watch", no_binary_name = true)]
struct Forwarded {
    #[command(flatten)]
    watch: WatchArgs,
}

/// Flags the Deployment sets itself (and `--agents`, `--synthetic`,
/// `--dry-run`: the watcher finds its agents).
const SET_BY_APPLY: [&str; 6] = [
    "--agents",
    "--synthetic",
    "--dry-run",
    "--key-file",
    "--history",
    "--listen",
];

/// Refuses forwarded flags that are not `fleet watch`'s, or that the
/// Deployment sets itself.
fn check_forwarded(args: &[String]) -> Result<()> {
    for a in args {
        let flag = a.split('=').next().unwrap_or("");
        if SET_BY_APPLY.contains(&flag) {
            bail!(
                "{flag} after --: k8s watch sets it itself (--key-file and --history-claim are apply's own flags)"
            );
        }
    }
    Forwarded::try_parse_from(args)
        .map_err(|e| anyhow::anyhow!("the fleet watch flags after --: {}", e.render()))?;
    Ok(())
}

fn secs(flag: &str, s: &str) -> Result<Duration> {
    Ok(Duration::from_secs_f64(
        parse_duration(s).with_context(|| flag.to_string())?,
    ))
}

impl ApplyArgs {
    fn watcher(&self) -> Result<(wirespeed_k8s::Options, Watcher)> {
        check_forwarded(&self.watch_args)?;
        let o = self
            .objects
            .options(&self.namespace, self.port, self.key_file.as_deref())?;
        let network = match o.networks.as_slice() {
            [n @ (Network::Host | Network::Pod)] => *n,
            _ => bail!("--network: k8s watch watches one network, host or pod"),
        };
        let w = Watcher {
            network,
            args: self.watch_args.clone(),
            history_claim: self.history_claim.clone(),
            rediscover: secs("--rediscover", &self.rediscover)?,
        };
        Ok((o, w))
    }
}

/// Runs a `k8s watch` subcommand.
pub fn run(c: WatchCmd) -> Result<()> {
    match c {
        WatchCmd::Apply(a) => apply(*a),
        WatchCmd::Manifests(a) => {
            if a.objects.image_missing() {
                eprintln!(
                    "k8s watch manifests: no --image: the pods name the placeholder {}",
                    manifests::default_image()
                );
            }
            let (o, w) = a.watcher()?;
            crate::k8s_cmd::print_objects(&kwatch::objects(&o, &w)?, &a.output)
        }
        WatchCmd::Status(a) => status(a),
        WatchCmd::Delete(a) => {
            let log = |l: &str| eprintln!("k8s watch: {l}");
            let gone = kwatch::delete_blocking(
                a.kubeconfig.as_deref(),
                &a.namespace,
                Duration::from_secs(120),
                &log,
            )?;
            match gone {
                true => println!("deleted namespace {} and all in it", a.namespace),
                false => println!(
                    "namespace {} does not exist: nothing to delete",
                    a.namespace
                ),
            }
            Ok(())
        }
        WatchCmd::InCluster(a) => in_cluster(*a),
    }
}

fn apply(a: ApplyArgs) -> Result<()> {
    if a.objects.image_missing() {
        bail!(
            "k8s watch apply needs --image: {}",
            crate::k8s_cmd::IMAGE_HINT
        );
    }
    let (o, w) = a.watcher()?;
    let ns = o.namespace.clone();
    let log = |l: &str| eprintln!("k8s watch: {l}");
    let st = kwatch::apply_blocking(
        a.kubeconfig.as_deref(),
        o,
        &w,
        a.key_file.is_some(),
        secs("--ready-timeout", &a.ready_timeout)?,
        &log,
    )?;
    println!(
        "the watcher in namespace {ns} watches {} agents ({}); probes every {:.0} s",
        st.agents.len(),
        st.agents.join(", "),
        st.probe_period_s
    );
    println!("{}", kwatch::how_to_reach(&ns));
    Ok(())
}

fn status(a: StatusArgs) -> Result<()> {
    let st = kwatch::status_blocking(a.kubeconfig.as_deref(), &a.namespace)
        .with_context(|| format!("the watcher in namespace {}", a.namespace))?;
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_vec_pretty(&st)?)
            .with_context(|| format!("write {}", p.display()))?;
    }
    println!(
        "watching {} agents ({}) since {}: {} tests stored; probes every {:.0} s, each pair's bandwidth every {}",
        st.agents.len(),
        st.agents.join(", "),
        wirespeed_types::text::utc_time(st.started_unix),
        st.tests_stored,
        st.probe_period_s,
        wirespeed_types::text::human_duration(st.bandwidth_every_s)
    );
    print!("{}", wirespeed_report::fleet::render_history(&st.latest));
    match st.events.len() {
        0 => println!("no drift events"),
        n => {
            println!("{n} drift event(s):");
            for e in &st.events {
                println!("  {}", e.message);
            }
        }
    }
    Ok(())
}

fn in_cluster(a: InClusterArgs) -> Result<()> {
    if watch_cmd::names_a_fleet(&a.watch) {
        bail!("k8s watch in-cluster finds its agents: no --agents, --synthetic or --dry-run");
    }
    let network = Network::parse_list(&a.network)?;
    let [network @ (Network::Host | Network::Pod)] = network.as_slice() else {
        bail!("--network: host or pod");
    };
    let c = InCluster {
        namespace: a.namespace.clone(),
        network: *network,
        port: a.port,
        http_port: a.http_port,
        rediscover: secs("--rediscover", &a.rediscover)?,
        ready_timeout: secs("--ready-timeout", &a.ready_timeout)?,
    };
    let (opts, http) = watch_cmd::prepare(&a.watch)?;
    let log = |l: &str| eprintln!("k8s watch: {l}");
    let st = kwatch::run_in_cluster(&c, &opts, http, &log)?;
    println!("{}", watch_cmd::summary(&st, &opts.history));
    Ok(())
}
