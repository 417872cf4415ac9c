//! The flags of `wirespeed k8s watch` (apply, manifests, status, delete and
//! the in-cluster watcher).

use crate::k8s_objects::ObjectArgs;
use crate::watch::WatchArgs;
use anyhow::{Context, Result, bail};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_k8s::manifests::{self, Network};
use wirespeed_k8s::watch::{DEFAULT_NAMESPACE, Watcher};
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
    /// What the agents are made of.
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// The namespace (made by apply, deleted by delete).
    #[arg(long, short = 'n', default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// The agents' engine port.
    #[arg(long, default_value_t = manifests::DEFAULT_PORT)]
    pub port: u16,
    /// The fleet key file [default: the namespace's key when it has one,
    /// else a fresh one].
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Keep the history on this PersistentVolumeClaim (yours, in the
    /// namespace) [default: an emptyDir, lost when the pod goes].
    #[arg(long, value_name = "CLAIM")]
    pub history_claim: Option<String>,
    /// How often the watcher lists its agents again.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "60s")]
    pub rediscover: String,
    /// Longest wait for the agents and then the watcher.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "5m")]
    pub ready_timeout: String,
    /// The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// manifests: yaml (multi-document) or json (a v1 List).
    #[arg(long, default_value = "yaml",
          value_parser = crate::choice::<manifests::Output>(&manifests::Output::NAMES, &[]))]
    pub output: manifests::Output,
    /// `fleet watch` flags for the watcher (after `--`).
    #[arg(last = true)]
    pub watch_args: Vec<String>,
}

/// Options of `k8s watch status` and `k8s watch delete`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The namespace.
    #[arg(long, short = 'n', default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// status: also print the state as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// The networks a watch watches (a DRA claim is per pod, not per node).
const WATCHED: [Network; 2] = [Network::Host, Network::Pod];

/// Options of `k8s watch in-cluster`.
#[derive(clap::Args, Debug)]
pub struct InClusterArgs {
    /// The agents' namespace (the pod's own).
    #[arg(long)]
    pub namespace: String,
    /// The agents' network mode: host or pod.
    #[arg(long, value_parser = wirespeed_experiment::cell::named(&WATCHED, Network::as_str))]
    pub network: Network,
    /// The agents' engine port.
    #[arg(long)]
    pub port: u16,
    /// The agents' HTTP port.
    #[arg(long)]
    pub http_port: u16,
    /// How often the agents are listed again.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "60s")]
    pub rediscover: String,
    /// Longest wait for the agents to be Ready.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "10m")]
    pub ready_timeout: String,
    /// The watcher's own flags.
    #[command(flatten)]
    pub watch: WatchArgs,
}

/// The watcher's forwarded flags, parsed as `fleet watch` would.
#[derive(Parser, Debug)]
#[command(name = "fleet watch", no_binary_name = true)]
pub struct Forwarded {
    /// The watcher's own flags.
    #[command(flatten)]
    pub watch: WatchArgs,
}

impl ApplyArgs {
    /// The agents' options and the watcher from the flags.
    pub fn watcher(&self) -> Result<(wirespeed_k8s::Options, Watcher)> {
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

/// Refuses forwarded flags that are not `fleet watch`'s, or that the
/// Deployment sets itself.
pub fn check_forwarded(args: &[String]) -> Result<()> {
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

/// A duration flag (e.g. 30s, 5m), named `flag` in its error.
pub fn secs(flag: &str, s: &str) -> Result<Duration> {
    Ok(Duration::from_secs_f64(
        parse_duration(s).with_context(|| flag.to_string())?,
    ))
}

/// Flags the Deployment sets itself (and `--agents`, `--synthetic`,
/// `--dry-run`: the watcher finds its agents).
pub const SET_BY_APPLY: [&str; 6] = [
    "--agents",
    "--synthetic",
    "--dry-run",
    "--key-file",
    "--history",
    "--listen",
];
