//! `wirespeed k8s manifests|run`: agents on Kubernetes (wirespeed-k8s).

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::PathBuf;
use wirespeed_k8s::manifests::{self, Network, NicSelector, Options};

/// Kubernetes subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum K8sCmd {
    /// Print the objects that run agents (YAML, or JSON with --output json).
    Manifests(ManifestArgs),
}

/// What the objects are made of.
#[derive(clap::Args, Debug)]
pub struct ObjectArgs {
    /// Network modes, comma-separated: host (hostNetwork), pod (the pod
    /// network), dra (NICs claimed from DraNet); one DaemonSet each.
    #[arg(long, default_value = "pod")]
    network: String,
    /// Agent image (build it from the repo's Containerfile).
    #[arg(long, default_value_t = manifests::default_image())]
    image: String,
    /// The agents' engine port.
    #[arg(long, default_value_t = manifests::DEFAULT_PORT)]
    port: u16,
    /// The agents' HTTP API port.
    #[arg(long, default_value_t = manifests::DEFAULT_HTTP_PORT)]
    http_port: u16,
    /// Tune profile (built-in name or file) for the pods' sysctl init step
    /// (pod and dra only: never the node's) and DraNet's NIC settings
    /// (MTU, GSO/GRO sizes, ethtool flags), e.g. tpu-multinic.
    #[arg(long)]
    profile: Option<String>,
    /// dra: claim NICs whose GCE network name starts with this (report 1).
    #[arg(long, conflicts_with_all = ["ifname_prefix", "nic_cel"])]
    network_prefix: Option<String>,
    /// dra: claim NICs whose interface name starts with this.
    #[arg(long, conflicts_with = "nic_cel")]
    ifname_prefix: Option<String>,
    /// dra: claim NICs matching this CEL expression over `device`.
    #[arg(long)]
    nic_cel: Option<String>,
    /// dra: NICs per agent.
    #[arg(long, default_value_t = 1)]
    nics: u32,
    /// dra: leave the NICs' eBPF programs attached (DraNet detaches them
    /// by default here, as report 1 did).
    #[arg(long)]
    keep_ebpf: bool,
    /// Run agents only on nodes with this label (KEY=VALUE, repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    node_selector: Vec<String>,
    /// The fleet key file (as `wirespeed serve --key-file`); a fresh key
    /// is made when absent.
    #[arg(long)]
    key_file: Option<PathBuf>,
}

/// Options of `k8s manifests`.
#[derive(clap::Args, Debug)]
pub struct ManifestArgs {
    #[command(flatten)]
    objects: ObjectArgs,
    /// Namespace of the objects.
    #[arg(long, default_value = "wirespeed")]
    namespace: String,
    /// yaml (multi-document) or json (a v1 List).
    #[arg(long, default_value = "yaml")]
    output: String,
}

impl ObjectArgs {
    /// The library's options for `namespace`.
    fn options(&self, namespace: &str) -> Result<Options> {
        let networks = Network::parse_list(&self.network)?;
        let key = match &self.key_file {
            Some(p) => crate::read_key(p)?,
            None => manifests::generate_key()?,
        };
        let mut o = Options::new(networks, namespace, &key);
        o.image = self.image.clone();
        o.port = self.port;
        o.http_port = self.http_port;
        if let Some(p) = &self.profile {
            let prof =
                wirespeed_host::profiles::load(p).with_context(|| format!("--profile {p}"))?;
            o.profile = Some((p.clone(), prof));
        }
        if let Some(p) = &self.network_prefix {
            o.nic_selector = NicSelector::NetworkPrefix(p.clone());
        } else if let Some(p) = &self.ifname_prefix {
            o.nic_selector = NicSelector::IfNamePrefix(p.clone());
        } else if let Some(e) = &self.nic_cel {
            o.nic_selector = NicSelector::Cel(e.clone());
        }
        o.nics = self.nics;
        o.disable_ebpf = !self.keep_ebpf;
        let mut sel = BTreeMap::new();
        for kv in &self.node_selector {
            let Some((k, v)) = kv.split_once('=') else {
                bail!("--node-selector {kv:?}: use KEY=VALUE");
            };
            sel.insert(k.to_string(), v.to_string());
        }
        o.node_selector = sel;
        o.validate()?;
        Ok(o)
    }
}

/// Runs a `k8s` subcommand.
pub fn run(c: K8sCmd) -> Result<()> {
    match c {
        K8sCmd::Manifests(a) => {
            let o = a.objects.options(&a.namespace)?;
            let objs = manifests::build(&o)?;
            let text = match a.output.as_str() {
                "yaml" => manifests::to_yaml(&objs)?,
                "json" => manifests::to_json(&objs)? + "\n",
                other => bail!("--output {other:?}: use yaml or json"),
            };
            print!("{text}");
            Ok(())
        }
    }
}
