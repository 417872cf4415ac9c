//! The flags that say what the Kubernetes objects are made of, shared by
//! `k8s manifests`, `k8s run` and `k8s watch apply`, and their
//! translation into wirespeed-k8s's [`Options`].

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;
use wirespeed_experiment::cell::named;
use wirespeed_k8s::manifests::{self, Network, NicSelector, Options};

/// What the objects are made of.
#[derive(clap::Args, Debug)]
pub struct ObjectArgs {
    /// Network modes, comma-separated: host (hostNetwork), pod (the pod
    /// network), dra (NICs claimed from DraNet); one DaemonSet each.
    #[arg(long, default_value = "pod", value_delimiter = ',',
          value_parser = named(&Network::ALL, Network::as_str))]
    pub network: Vec<Network>,
    /// Agent image, as printed by `wirespeed k8s image build --push
    /// REGISTRY/wirespeed:TAG` (REF@sha256:...). Required by `run`.
    #[arg(long)]
    pub image: Option<String>,
    /// The agents' HTTP API port.
    #[arg(long, default_value_t = manifests::DEFAULT_HTTP_PORT)]
    pub http_port: u16,
    /// Tune profile (built-in name or file): its sysctls go into the
    /// pod-network agents' securityContext.sysctls (those every node's
    /// kernel and kubelet accept; never the node's own), its NIC settings
    /// into DraNet's config (MTU, GSO/GRO sizes, ethtool features and
    /// private flags), e.g. tpu-multinic. For dra a field DraNet cannot
    /// carry (rx_ring, source_routing) or a private flag the claimed NICs
    /// lack is refused before anything is applied.
    #[arg(long)]
    pub profile: Option<String>,
    /// dra: claim NICs whose GCE network name starts with this (report 1)
    /// [default: NICs DraNet does not call virtual].
    #[arg(long, conflicts_with_all = ["ifname_prefix", "nic_cel"])]
    pub network_prefix: Option<String>,
    /// dra: claim NICs whose interface name (dra.net/ifName) starts with
    /// this.
    #[arg(long, conflicts_with = "nic_cel")]
    pub ifname_prefix: Option<String>,
    /// dra: claim NICs matching this CEL expression over `device`, e.g.
    /// 'device.attributes["dra.net"].rdma'.
    #[arg(long, visible_alias = "dra-selector", value_name = "CEL")]
    pub nic_cel: Option<String>,
    /// dra: the claims' DeviceClass, yours (it must exist; none is made)
    /// [default: wirespeed-dranet, shared by every run, created when
    /// missing and never deleted].
    #[arg(long, value_name = "NAME")]
    pub device_class: Option<String>,
    /// dra: NICs per agent.
    #[arg(long, default_value_t = 1)]
    pub nics: u32,
    /// dra: leave the NICs' eBPF programs attached (DraNet detaches them
    /// by default here, as report 1 did).
    #[arg(long)]
    pub keep_ebpf: bool,
    /// Run agents only on nodes with this label (KEY=VALUE, repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// Let agents run on nodes with this taint (KEY[=VALUE][:EFFECT],
    /// repeatable), e.g. google.com/tpu=present:NoSchedule.
    #[arg(long, value_name = "KEY[=VALUE][:EFFECT]")]
    pub toleration: Vec<String>,
    /// Let agents run on nodes whatever their taints (a GPU or TPU pool);
    /// without it a tainted node is left out, by name.
    #[arg(long)]
    pub tolerate_all: bool,
    /// The agent container's resource requests (KEY=QUANTITY,
    /// comma-separated), e.g. cpu=1,memory=256Mi.
    #[arg(long, value_name = "KEY=QTY,..")]
    pub requests: Option<String>,
    /// The agent container's resource limits (KEY=QUANTITY, comma-separated).
    #[arg(long, value_name = "KEY=QTY,..")]
    pub limits: Option<String>,
    /// The agents' PriorityClass.
    #[arg(long, value_name = "NAME")]
    pub priority_class: Option<String>,
    /// The agents' data ports (LO-HI): a firewall or NetworkPolicy can
    /// admit them, and each agent's Service (service paths) forwards them.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_port_range), long, value_name = "LO-HI", default_value = "5301-5316")]
    pub data_ports: String,
    /// Allow host-network agents (--network host): their namespace is
    /// labelled Pod Security `privileged` (one wirespeed makes; an
    /// existing namespace must already be). Without it host mode is refused.
    #[arg(long)]
    pub privileged_namespace: bool,
    /// Make no NetworkPolicy (by default one admits the agents' ports
    /// only from the run's own pods and the API server).
    #[arg(long)]
    pub no_network_policy: bool,
    /// Where the API server's pod-proxy connections come from (CIDR,
    /// repeatable), admitted to the agents' HTTP port; `k8s run` adds the
    /// API server's own addresses when none is given.
    #[arg(long, value_name = "CIDR")]
    pub api_source: Vec<String>,
}

impl ObjectArgs {
    /// The library's options for `namespace`, the engine `port` and the
    /// key from `key_file` (a fresh one when none).
    /// Whether `--image` was left out.
    pub fn image_missing(&self) -> bool {
        self.image.is_none()
    }

    /// The --network modes, each once.
    pub fn networks(&self) -> Result<Vec<Network>> {
        for (i, n) in self.network.iter().enumerate() {
            if self.network[..i].contains(n) {
                bail!("--network: {n} given twice");
            }
        }
        Ok(self.network.clone())
    }

    /// wirespeed-k8s's options for `namespace`, the engine `port` and the
    /// key from `key_file` (a fresh one when none).
    pub fn options(&self, namespace: &str, port: u16, key_file: Option<&Path>) -> Result<Options> {
        let networks = self.networks()?;
        let key = match key_file {
            Some(p) => crate::read_key(p)?,
            None => manifests::generate_key()?,
        };
        let mut o = Options::new(networks, namespace, &key);
        if let Some(i) = &self.image {
            o.image = i.clone();
        }
        o.port = port;
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
        o.device_class = self.device_class.clone();
        let mut sel = BTreeMap::new();
        for kv in &self.node_selector {
            let Some((k, v)) = kv.split_once('=') else {
                bail!("--node-selector {kv:?}: use KEY=VALUE");
            };
            sel.insert(k.to_string(), v.to_string());
        }
        o.node_selector = sel;
        o.tolerations = self
            .toleration
            .iter()
            .map(|t| manifests::parse_toleration(t))
            .collect::<Result<_, _>>()?;
        o.tolerate_all = self.tolerate_all;
        o.requests = key_values("requests", self.requests.as_deref())?;
        o.limits = key_values("limits", self.limits.as_deref())?;
        o.priority_class = self.priority_class.clone();
        o.data_ports =
            wirespeed_types::units::parse_port_range(&self.data_ports).context("--data-ports")?;
        o.privileged_namespace = self.privileged_namespace;
        o.network_policy = !self.no_network_policy;
        o.api_sources = self.api_source.clone();
        o.validate_fields()?;
        Ok(o)
    }
}

/// Keys and their values, e.g. a container's resource requests.
pub type KeyValues = BTreeMap<String, String>;

/// `KEY=VALUE,...` of flag `--flag` as a map (empty when absent).
pub fn key_values(flag: &str, s: Option<&str>) -> Result<KeyValues> {
    let mut out = BTreeMap::new();
    for kv in s.unwrap_or("").split(',').filter(|p| !p.trim().is_empty()) {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("--{flag} {kv:?}: use KEY=VALUE, e.g. cpu=500m,memory=256Mi");
        };
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}
