//! The Kubernetes objects that run wirespeed agents, built as typed
//! k8s-openapi values (never YAML text): a namespace, service accounts and
//! the narrowest RBAC, a Secret holding the fleet key, one DaemonSet of
//! agents per network mode, and for `dra` the DeviceClass and
//! ResourceClaimTemplate that hand a pod DraNet-managed NICs, tuned from a
//! wirespeed tune profile.

use crate::K8sError;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction,
    KeyToPath, Namespace, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    ObjectFieldSelector, PodResourceClaim, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceClaim as ContainerClaim, ResourceRequirements, SeccompProfile, Secret,
    SecretVolumeSource, SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec, Sysctl,
    Toleration, Volume, VolumeMount,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaimTemplate};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use wirespeed_host::profiles::Profile;

use crate::dranet::SHARED_DEVICE_CLASS;
pub use crate::dranet::{
    CLAIM_NAME, CLAIM_TEMPLATE, DRANET_DRIVER, DranetConfig, DranetEthtool, DranetInterface,
    NicSelector,
};
use k8s_openapi::api::resource::v1::{
    CELDeviceSelector, DeviceClaim, DeviceClaimConfiguration, DeviceClassSpec, DeviceRequest,
    DeviceSelector, ExactDeviceRequest, OpaqueDeviceConfiguration, ResourceClaimSpec,
    ResourceClaimTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
/// Label every object carries: who manages it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wirespeed");
/// Label of agent pods (and the DaemonSet selector's key).
pub const APP_LABEL: &str = "app.kubernetes.io/name";
/// Value of [`APP_LABEL`] on agent pods.
pub const APP_AGENT: &str = "wirespeed-agent";
/// Label naming an agent's network mode (host, pod, dra).
pub const NETWORK_LABEL: &str = "wirespeed.dev/network";
/// Label naming the run that made an object (`k8s run`), so its objects can
/// be listed and deleted together.
pub const RUN_LABEL: &str = "wirespeed.dev/run";
/// The service account agents run as (no API rights, no token mounted).
pub const AGENT_SA: &str = "wirespeed-agent";
/// The service account for discovery from inside the cluster.
pub const RUNNER_SA: &str = "wirespeed-runner";
/// The Role (and RoleBinding) granting [`RUNNER_SA`] what discovery reads.
pub const DISCOVER_ROLE: &str = "wirespeed-discover";
/// The Secret holding the fleet key.
pub const KEY_SECRET: &str = "wirespeed-key";
/// The key's entry in [`KEY_SECRET`].
pub const KEY_ENTRY: &str = "key";
/// Where the key file is mounted in agent containers.
pub const KEY_DIR: &str = "/etc/wirespeed";

/// How agent pods reach each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// hostNetwork: the nodes' own addresses and NICs.
    Host,
    /// The cluster's pod network (its CNI: overlay or direct routing).
    Pod,
    /// NICs claimed through DRA from DraNet, moved into the pod.
    Dra,
    /// The pod network, a second agent on each node: the server of the
    /// same-node paths (made only when one is asked for).
    PodPeer,
}

impl Network {
    /// All modes, in comparison order (host is the baseline).
    pub const ALL: [Network; 3] = [Network::Host, Network::Pod, Network::Dra];

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Host => "host",
            Network::Pod => "pod",
            Network::Dra => "dra",
            Network::PodPeer => "pod-peer",
        }
    }

    /// Whether its agents use the host's network namespace.
    pub fn host_network(self) -> bool {
        self == Network::Host
    }

    /// The DaemonSet of this mode's agents.
    pub fn daemonset_name(self) -> String {
        format!("wirespeed-agent-{}", self.as_str())
    }

    /// Parses "host,pod,dra" (each at most once).
    pub fn parse_list(s: &str) -> Result<Vec<Network>, K8sError> {
        let mut out: Vec<Network> = Vec::new();
        for part in s.split(',').map(str::trim) {
            let n: Network = part.parse()?;
            if out.contains(&n) {
                return Err(K8sError::Invalid(format!(
                    "network {part} given twice in {s:?}"
                )));
            }
            out.push(n);
        }
        Ok(out)
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Network {
    type Err = K8sError;
    fn from_str(s: &str) -> Result<Network, K8sError> {
        match s {
            "host" => Ok(Network::Host),
            "pod" => Ok(Network::Pod),
            "dra" => Ok(Network::Dra),
            _ => Err(K8sError::Invalid(format!(
                "network {s:?}: use host, pod or dra (comma-separated for several)"
            ))),
        }
    }
}

/// Everything the objects depend on.
#[derive(Debug, Clone)]
pub struct Options {
    /// Network modes; one DaemonSet each.
    pub networks: Vec<Network>,
    /// Namespace of every namespaced object.
    pub namespace: String,
    /// Agent container image.
    pub image: String,
    /// The agent's engine server port (tests connect here).
    pub port: u16,
    /// The agent's HTTP API port (health, metrics, starting tests).
    pub http_port: u16,
    /// The fleet key (the agent's `--key-file` content), stored in the Secret.
    pub key: Vec<u8>,
    /// Tune profile for the pods' sysctl init step and DraNet's NIC config:
    /// (name, profile).
    pub profile: Option<(String, Profile)>,
    /// The NICs a dra claim selects.
    pub nic_selector: NicSelector,
    /// NICs per dra claim.
    pub nics: u32,
    /// Let DraNet detach eBPF programs from claimed NICs (report 1 did).
    pub disable_ebpf: bool,
    /// The user's DeviceClass for dra claims (`--device-class`); None:
    /// the shared [`crate::dranet::SHARED_DEVICE_CLASS`].
    pub device_class: Option<String>,
    /// Restrict agents to nodes with these labels.
    pub node_selector: BTreeMap<String, String>,
    /// Taints the agents tolerate (`--toleration`), beyond those the
    /// DaemonSet controller adds.
    pub tolerations: Vec<Toleration>,
    /// Run id label value (`k8s run`), none for printed manifests.
    pub run_id: Option<String>,
    /// Pin the agents to exactly these nodes (node affinity on
    /// `metadata.name`); None = every node the selector and taints allow.
    pub node_names: Option<Vec<String>>,
    /// Tolerate every taint (`--tolerate-all`).
    pub tolerate_all: bool,
    /// The agent container's requests and limits (`cpu`, `memory`, ...).
    pub requests: BTreeMap<String, String>,
    /// See [`Options::requests`].
    pub limits: BTreeMap<String, String>,
    /// The agents' PriorityClass.
    pub priority_class: Option<String>,
    /// The agents' data ports (the engine's `--data-ports`), which the
    /// Services of the service paths and the NetworkPolicy admit.
    pub data_ports: (u16, u16),
    /// A namespace of Pod Security level `privileged`, which host-network
    /// agents and unsafe sysctls need (`--privileged-namespace`);
    /// otherwise `restricted`.
    pub privileged_namespace: bool,
    /// Sysctls set in every pod-network agent's `securityContext.sysctls`
    /// (see [`crate::sysctls`] for which a node accepts).
    pub pod_sysctls: BTreeMap<String, String>,
    /// Where the API server's pod-proxy connections come from (CIDRs),
    /// admitted to the agents' HTTP port by the NetworkPolicy.
    pub api_sources: Vec<String>,
    /// Make the NetworkPolicy (`--no-network-policy` turns it off).
    pub network_policy: bool,
}

impl Options {
    /// Defaults for `networks` in `namespace` with `key`.
    pub fn new(networks: Vec<Network>, namespace: &str, key: &[u8]) -> Options {
        Options {
            networks,
            namespace: namespace.to_string(),
            image: default_image(),
            port: DEFAULT_PORT,
            http_port: DEFAULT_HTTP_PORT,
            key: key.to_vec(),
            profile: None,
            nic_selector: NicSelector::default(),
            nics: 1,
            disable_ebpf: true,
            device_class: None,
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            run_id: None,
            node_names: None,
            tolerate_all: false,
            requests: BTreeMap::new(),
            limits: BTreeMap::new(),
            priority_class: None,
            data_ports: DEFAULT_DATA_PORTS,
            privileged_namespace: false,
            pod_sysctls: BTreeMap::new(),
            api_sources: Vec::new(),
            network_policy: true,
        }
    }

    /// The DeviceClass dra claims name: `--device-class`, else the shared
    /// one.
    pub fn device_class_name(&self) -> String {
        self.device_class
            .clone()
            .unwrap_or_else(|| crate::dranet::SHARED_DEVICE_CLASS.into())
    }

    pub(crate) fn labels(&self) -> BTreeMap<String, String> {
        let mut l = BTreeMap::from([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())]);
        if let Some(r) = &self.run_id {
            l.insert(RUN_LABEL.into(), r.clone());
        }
        l
    }

    pub(crate) fn meta(&self, name: &str, namespaced: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: namespaced.then(|| self.namespace.clone()),
            labels: Some(self.labels()),
            ..ObjectMeta::default()
        }
    }

    /// Checks names and numbers Kubernetes or the agent would refuse, and
    /// that host-network agents go into a namespace labelled `privileged`.
    pub fn validate(&self) -> Result<(), K8sError> {
        if self.networks.contains(&Network::Host) && !self.privileged_namespace {
            return Err(K8sError::Invalid(format!(
                "the host network needs a privileged namespace: host-network agents (hostNetwork: true) are outside Pod Security `baseline` and `restricted`, so namespace {} would have to enforce `privileged`. Pass --privileged-namespace to have it labelled so, or measure the pod network only (--network pod)",
                self.namespace
            )));
        }
        self.validate_fields()
    }

    /// [`Options::validate`] without the namespace rule, which `k8s run`
    /// decides against the cluster (an existing namespace already
    /// `privileged` needs no flag; one that is not cannot be fixed by it).
    pub fn validate_fields(&self) -> Result<(), K8sError> {
        if self.networks.is_empty() {
            return Err(K8sError::Invalid("no network mode given".into()));
        }
        for k in self.pod_sysctls.keys() {
            if !wirespeed_host::tune::valid_sysctl_name(k) {
                return Err(K8sError::Invalid(format!(
                    "sysctl {k:?}: not a sysctl name"
                )));
            }
        }
        for c in &self.api_sources {
            if !is_cidr(c) {
                return Err(K8sError::Invalid(format!(
                    "API server source {c:?}: use a CIDR such as 10.0.0.1/32"
                )));
            }
        }
        if !is_dns_label(&self.namespace) {
            return Err(K8sError::Invalid(format!(
                "namespace {:?}: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit",
                self.namespace
            )));
        }
        if self.image.trim().is_empty() || self.image.chars().any(char::is_whitespace) {
            return Err(K8sError::Invalid(format!("image {:?}", self.image)));
        }
        if self.port == 0 || self.http_port == 0 || self.port == self.http_port {
            return Err(K8sError::Invalid(format!(
                "ports {} and {}: use two different ports, 1 to 65535",
                self.port, self.http_port
            )));
        }
        if self.key.trim_ascii().len() < 16 {
            return Err(K8sError::Invalid(
                "key: at least 16 bytes (generated keys are 64 hex digits)".into(),
            ));
        }
        if !(1..=16).contains(&self.nics) {
            return Err(K8sError::Invalid(format!(
                "--nics {}: use 1 to 16 NICs per claim",
                self.nics
            )));
        }
        for (k, v) in &self.node_selector {
            if k.is_empty() || k.len() > 253 || v.len() > 63 {
                return Err(K8sError::Invalid(format!("node selector {k}={v}")));
            }
        }
        if self.networks.contains(&Network::Dra) {
            self.nic_selector.cel()?;
            if let Some(c) = &self.device_class
                && (c.is_empty() || c.len() > 253)
            {
                return Err(K8sError::Invalid(format!("--device-class {c:?}")));
            }
            DranetConfig::from_profile(self.profile.as_ref().map(|(_, p)| p), self.disable_ebpf)?;
        }
        let (lo, hi) = self.data_ports;
        if lo == 0
            || lo > hi
            || (lo..=hi).contains(&self.port)
            || (lo..=hi).contains(&self.http_port)
        {
            return Err(K8sError::Invalid(format!(
                "data ports {lo}-{hi}: a range of ports apart from the engine port {} and the HTTP port {}",
                self.port, self.http_port
            )));
        }
        if hi - lo >= 64 {
            return Err(K8sError::Invalid(format!(
                "data ports {lo}-{hi}: at most 64 (each is a port of every agent's Service)"
            )));
        }
        for (k, v) in self.requests.iter().chain(&self.limits) {
            if k.is_empty() || !is_quantity(v) {
                return Err(K8sError::Invalid(format!(
                    "resource {k}={v}: use a Kubernetes quantity, e.g. cpu=500m, memory=256Mi"
                )));
            }
        }
        Ok(())
    }
}

/// Whether `s` is an address and prefix length (`10.0.0.1/32`, `fd00::/64`).
pub fn is_cidr(s: &str) -> bool {
    match wirespeed_host::inspect::parse_cidr(s) {
        Some((std::net::IpAddr::V4(_), l)) => l <= 32,
        Some((std::net::IpAddr::V6(_), l)) => l <= 128,
        None => false,
    }
}

/// Whether `v` reads as a Kubernetes quantity: a decimal number and an
/// optional suffix (m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei).
pub fn is_quantity(v: &str) -> bool {
    let num_end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, suffix) = v.split_at(num_end);
    num.parse::<f64>().is_ok()
        && [
            "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ]
        .contains(&suffix)
}

/// A toleration from `KEY[=VALUE][:EFFECT]`: without a value it
/// tolerates the key whatever its value (`Exists`), without an effect
/// every effect.
pub fn parse_toleration(s: &str) -> Result<Toleration, K8sError> {
    let (kv, effect) = match s.rsplit_once(':') {
        Some((kv, e)) => (kv, Some(e)),
        None => (s, None),
    };
    let (key, value) = match kv.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (kv, None),
    };
    let bad = |why: &str| {
        K8sError::Invalid(format!(
            "--toleration {s:?}: {why}; use KEY[=VALUE][:EFFECT], e.g. google.com/tpu=present:NoSchedule"
        ))
    };
    if key.is_empty() || key.len() > 253 || key.chars().any(char::is_whitespace) {
        return Err(bad("the key is empty or not a label key"));
    }
    if let Some(e) = effect
        && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&e)
    {
        return Err(bad(
            "the effect must be NoSchedule, PreferNoSchedule or NoExecute",
        ));
    }
    Ok(Toleration {
        key: Some(key.to_string()),
        operator: Some(if value.is_some() { "Equal" } else { "Exists" }.to_string()),
        value: value.map(str::to_string),
        effect: effect.map(str::to_string),
        toleration_seconds: None,
    })
}

/// The agent's default engine port (wirespeed-engine's).
pub const DEFAULT_PORT: u16 = 5300;
/// The agent's default HTTP API port (wirespeed-fleet's).
pub const DEFAULT_HTTP_PORT: u16 = 5380;
/// The agents' default data ports: 16 tests at once per agent.
pub const DEFAULT_DATA_PORTS: (u16, u16) = (5301, 5316);

/// The image objects name when none is given: a placeholder no registry
/// serves, to be replaced by what `wirespeed k8s image build --push
/// REGISTRY/wirespeed:TAG` prints (`k8s run` refuses to run without one).
pub fn default_image() -> String {
    format!("REPLACE-ME/wirespeed:{}", env!("CARGO_PKG_VERSION"))
}

/// A DNS-1123 label: lower-case alphanumerics and '-', 1-63 long.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A fresh fleet key: 32 random bytes written as 64 hex digits (the
/// key is those digits, as the agent reads its key file).
pub fn generate_key() -> Result<Vec<u8>, K8sError> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(K8sError::Random)?;
    Ok(b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<String>()
        .into_bytes())
}

/// One object of the set, typed.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Object {
    /// The namespace.
    Namespace(Namespace),
    /// A service account.
    ServiceAccount(ServiceAccount),
    /// A namespaced role.
    Role(Role),
    /// A role binding.
    RoleBinding(RoleBinding),
    /// The key.
    Secret(Secret),
    /// DraNet's device class (cluster-scoped).
    DeviceClass(DeviceClass),
    /// The claim template for dra pods (boxed: large).
    ResourceClaimTemplate(Box<ResourceClaimTemplate>),
    /// Agents of one network mode (boxed: by far the largest).
    DaemonSet(Box<DaemonSet>),
    /// A ClusterIP Service in front of one agent (service paths).
    Service(Box<Service>),
    /// The endpoint of such a Service: the agent's pod address.
    EndpointSlice(Box<EndpointSlice>),
    /// Who may reach the pod-network agents.
    NetworkPolicy(Box<NetworkPolicy>),
    /// The watcher of `k8s watch`.
    Deployment(Box<k8s_openapi::api::apps::v1::Deployment>),
}

impl Object {
    /// Kind as Kubernetes spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Namespace(_) => "Namespace",
            Object::ServiceAccount(_) => "ServiceAccount",
            Object::Role(_) => "Role",
            Object::RoleBinding(_) => "RoleBinding",
            Object::Secret(_) => "Secret",
            Object::DeviceClass(_) => "DeviceClass",
            Object::ResourceClaimTemplate(_) => "ResourceClaimTemplate",
            Object::DaemonSet(_) => "DaemonSet",
            Object::Service(_) => "Service",
            Object::EndpointSlice(_) => "EndpointSlice",
            Object::NetworkPolicy(_) => "NetworkPolicy",
            Object::Deployment(_) => "Deployment",
        }
    }

    /// The object's metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Namespace(o) => &o.metadata,
            Object::ServiceAccount(o) => &o.metadata,
            Object::Role(o) => &o.metadata,
            Object::RoleBinding(o) => &o.metadata,
            Object::Secret(o) => &o.metadata,
            Object::DeviceClass(o) => &o.metadata,
            Object::ResourceClaimTemplate(o) => &o.metadata,
            Object::DaemonSet(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::NetworkPolicy(o) => &o.metadata,
            Object::Deployment(o) => &o.metadata,
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or("")
    }

    /// "Kind ns/name" or "Kind name", for messages.
    pub fn describe(&self) -> String {
        match &self.meta().namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind(), self.name()),
            None => format!("{} {}", self.kind(), self.name()),
        }
    }
}

/// The image's wirespeed binary (`wirespeed k8s image build`, Containerfile).
pub const IMAGE_BINARY: &str = "/usr/local/bin/wirespeed";

/// Builds every object, in apply order (namespace first, DaemonSets last).
pub fn build(o: &Options) -> Result<Vec<Object>, K8sError> {
    o.validate()?;
    let mut out = Vec::new();
    // hostNetwork and unsafe sysctls need the "privileged" Pod Security
    // level, asked for explicitly (validate refuses host mode otherwise);
    // without it every agent meets "restricted".
    let level = if o.privileged_namespace {
        "privileged"
    } else {
        "restricted"
    };
    let mut ns_meta = o.meta(&o.namespace, false);
    let labels = ns_meta.labels.get_or_insert_with(BTreeMap::new);
    for mode in ["enforce", "warn", "audit"] {
        labels.insert(format!("pod-security.kubernetes.io/{mode}"), level.into());
    }
    out.push(Object::Namespace(Namespace {
        metadata: ns_meta,
        ..Namespace::default()
    }));
    // Agents need no API access: no Role, no token in their pods.
    out.push(Object::ServiceAccount(ServiceAccount {
        metadata: o.meta(AGENT_SA, true),
        automount_service_account_token: Some(false),
        ..ServiceAccount::default()
    }));
    // Discovery from inside the cluster reads pods, their DaemonSets and
    // their claims in this namespace, and nothing else.
    out.push(Object::ServiceAccount(ServiceAccount {
        metadata: o.meta(RUNNER_SA, true),
        ..ServiceAccount::default()
    }));
    let rule = |group: &str, resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(vec![group.to_string()]),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    };
    let read = ["get", "list", "watch"];
    let mut rules = vec![
        rule("", &["pods"], &read),
        rule("", &["events"], &["list"]),
        rule("apps", &["daemonsets"], &read),
    ];
    if o.networks.contains(&Network::Dra) {
        rules.push(rule("resource.k8s.io", &["resourceclaims"], &read));
    }
    out.push(Object::Role(Role {
        metadata: o.meta(DISCOVER_ROLE, true),
        rules: Some(rules),
    }));
    out.push(Object::RoleBinding(RoleBinding {
        metadata: o.meta(DISCOVER_ROLE, true),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: DISCOVER_ROLE.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: RUNNER_SA.into(),
            namespace: Some(o.namespace.clone()),
            ..Subject::default()
        }]),
    }));
    out.push(Object::Secret(Secret {
        metadata: o.meta(KEY_SECRET, true),
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            KEY_ENTRY.to_string(),
            ByteString(o.key.clone()),
        )])),
        ..Secret::default()
    }));
    if o.networks.contains(&Network::Dra) {
        if o.device_class.is_none() {
            out.push(Object::DeviceClass(device_class(o)));
        }
        out.push(Object::ResourceClaimTemplate(Box::new(claim_template(o)?)));
    }
    if o.network_policy && o.networks.iter().any(|n| !n.host_network()) {
        out.push(Object::NetworkPolicy(Box::new(network_policy(o))));
    }
    for &n in &o.networks {
        out.push(Object::DaemonSet(Box::new(daemonset(o, n))));
    }
    Ok(out)
}

/// Every network mode's agent pods, as a NetworkPolicy selects them.
pub(crate) fn agent_pods() -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([(
            APP_LABEL.to_string(),
            APP_AGENT.to_string(),
        )])),
        ..LabelSelector::default()
    }
}

/// A NetworkPolicy port: `p` (to `end` when given) over `protocol`.
pub(crate) fn policy_port(protocol: &str, p: u16, end: Option<u16>) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(IntOrString::Int(i32::from(p))),
        end_port: end.map(i32::from),
        protocol: Some(protocol.into()),
    }
}

/// The NetworkPolicy name.
pub const NETWORK_POLICY: &str = "wirespeed-agents";

/// Admits traffic to the pod-network agents only from the namespace's
/// own pods (the agents and the in-cluster runner): the engine port and
/// the data ports (the range every agent uses, `endPort`); the HTTP port
/// from the namespace's pods that are not agents (the runner, the
/// watcher) and from [`Options::api_sources`] (the API server's pod
/// proxy). Agents never call each other's HTTP API, and that the policy
/// refuses it is how `k8s run --policy-load` sees policies take effect
/// ([`crate::policy_load`]). Host-network agents are outside any
/// NetworkPolicy (Kubernetes applies none to hostNetwork pods).
fn network_policy(o: &Options) -> NetworkPolicy {
    let port = |p: u16, end: Option<u16>| policy_port("TCP", p, end);
    let own_pods = NetworkPolicyPeer {
        pod_selector: Some(LabelSelector::default()),
        ..NetworkPolicyPeer::default()
    };
    let not_agents = NetworkPolicyPeer {
        pod_selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: APP_LABEL.into(),
                operator: "NotIn".into(),
                values: Some(vec![APP_AGENT.into()]),
            }]),
            ..LabelSelector::default()
        }),
        ..NetworkPolicyPeer::default()
    };
    let api = o.api_sources.iter().map(|c| NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: c.clone(),
            except: None,
        }),
        ..NetworkPolicyPeer::default()
    });
    let ingress = vec![
        NetworkPolicyIngressRule {
            from: Some(vec![own_pods]),
            ports: Some(vec![
                port(o.port, None),
                port(o.data_ports.0, Some(o.data_ports.1)),
            ]),
        },
        NetworkPolicyIngressRule {
            from: Some(std::iter::once(not_agents).chain(api).collect()),
            ports: Some(vec![port(o.http_port, None)]),
        },
    ];
    NetworkPolicy {
        metadata: o.meta(NETWORK_POLICY, true),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(agent_pods()),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(ingress),
            egress: None,
        }),
    }
}

fn env_field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

/// The agent's command line in the image (`$(WIRESPEED_POD)` is expanded
/// by the kubelet from the container's environment).
pub fn agent_args(port: u16, http_port: u16, data_ports: (u16, u16)) -> Vec<String> {
    vec![
        "agent".into(),
        "--name".into(),
        "$(WIRESPEED_POD)".into(),
        "--bind".into(),
        "::".into(),
        "--port".into(),
        port.to_string(),
        "--http".into(),
        format!("[::]:{http_port}"),
        "--key-file".into(),
        format!("{KEY_DIR}/{KEY_ENTRY}"),
        "--data-ports".into(),
        format!("{}-{}", data_ports.0, data_ports.1),
    ]
}

fn daemonset(o: &Options, n: Network) -> DaemonSet {
    let name = n.daemonset_name();
    let mut pod_labels = o.labels();
    pod_labels.insert(APP_LABEL.into(), APP_AGENT.into());
    pod_labels.insert(NETWORK_LABEL.into(), n.as_str().into());
    let selector = BTreeMap::from([
        (APP_LABEL.to_string(), APP_AGENT.to_string()),
        (NETWORK_LABEL.to_string(), n.as_str().to_string()),
    ]);
    let mut meta = o.meta(&name, true);
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(NETWORK_LABEL.into(), n.as_str().into());
    let probe = |path: &str| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::Int(i32::from(o.http_port)),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(5),
        ..Probe::default()
    };
    let agent = Container {
        name: "agent".into(),
        image: Some(o.image.clone()),
        args: Some(agent_args(o.port, o.http_port, o.data_ports)),
        ports: Some(vec![
            ContainerPort {
                name: Some("engine".into()),
                container_port: i32::from(o.port),
                protocol: Some("TCP".into()),
                ..ContainerPort::default()
            },
            ContainerPort {
                name: Some("http".into()),
                container_port: i32::from(o.http_port),
                protocol: Some("TCP".into()),
                ..ContainerPort::default()
            },
        ]),
        env: Some(vec![
            env_field("WIRESPEED_NODE", "spec.nodeName"),
            env_field("WIRESPEED_POD", "metadata.name"),
        ]),
        volume_mounts: Some(vec![VolumeMount {
            name: "key".into(),
            mount_path: KEY_DIR.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]),
        readiness_probe: Some(probe("/healthz")),
        resources: resources(o, n),
        security_context: Some(restricted_security()),
        ..Container::default()
    };
    let sysctls = (!n.host_network() && !o.pod_sysctls.is_empty()).then(|| {
        o.pod_sysctls
            .iter()
            .map(|(k, v)| Sysctl {
                name: k.clone(),
                value: v.clone(),
            })
            .collect()
    });
    let spec = PodSpec {
        service_account_name: Some(AGENT_SA.into()),
        automount_service_account_token: Some(false),
        host_network: n.host_network().then_some(true),
        dns_policy: n.host_network().then(|| "ClusterFirstWithHostNet".into()),
        node_selector: (!o.node_selector.is_empty()).then(|| o.node_selector.clone()),
        affinity: o.node_names.as_ref().map(|names| pinned_to(names)),
        tolerations: tolerations(o),
        priority_class_name: o.priority_class.clone(),
        security_context: Some(PodSecurityContext {
            sysctls,
            ..image_user()
        }),
        containers: vec![agent],
        resource_claims: (n == Network::Dra).then(|| {
            vec![PodResourceClaim {
                name: CLAIM_NAME.into(),
                resource_claim_template_name: Some(CLAIM_TEMPLATE.into()),
                ..PodResourceClaim::default()
            }]
        }),
        volumes: Some(vec![key_volume()]),
        ..PodSpec::default()
    };
    DaemonSet {
        metadata: meta,
        spec: Some(DaemonSetSpec {
            selector: LabelSelector {
                match_labels: Some(selector),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(spec),
            },
            ..DaemonSetSpec::default()
        }),
        ..DaemonSet::default()
    }
}

/// The pod security context of every wirespeed pod: the image's user
/// and group (65532), which also owns its volumes, and RuntimeDefault
/// seccomp.
pub(crate) fn image_user() -> PodSecurityContext {
    PodSecurityContext {
        run_as_user: Some(65532),
        run_as_group: Some(65532),
        fs_group: Some(65532),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..SeccompProfile::default()
        }),
        ..PodSecurityContext::default()
    }
}

/// The volume `key`: the key's Secret, readable by the pod's group only.
pub(crate) fn key_volume() -> Volume {
    Volume {
        name: "key".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(KEY_SECRET.into()),
            default_mode: Some(0o440),
            items: Some(vec![KeyToPath {
                key: KEY_ENTRY.into(),
                path: KEY_ENTRY.into(),
                ..KeyToPath::default()
            }]),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// A ClusterIP Service named `name` whose one endpoint is the agent at
/// `target` (no selector: the run writes the EndpointSlice, so the
/// Service reaches exactly that pod), forwarding the engine port and the
/// data ports (TCP). Traffic to its ClusterIP goes through kube-proxy's
/// (or the CNI's) service rules like any Service's.
pub fn service(o: &Options, name: &str, target: std::net::IpAddr) -> Vec<Object> {
    let ports: Vec<(String, u16)> = std::iter::once(("engine".to_string(), o.port))
        .chain((o.data_ports.0..=o.data_ports.1).map(|p| (format!("data-{p}"), p)))
        .collect();
    let svc = Service {
        metadata: o.meta(name, true),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            ports: Some(
                ports
                    .iter()
                    .map(|(n, p)| ServicePort {
                        name: Some(n.clone()),
                        port: i32::from(*p),
                        target_port: Some(IntOrString::Int(i32::from(*p))),
                        protocol: Some("TCP".into()),
                        ..ServicePort::default()
                    })
                    .collect(),
            ),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    let mut meta = o.meta(name, true);
    let labels = meta.labels.get_or_insert_with(BTreeMap::new);
    labels.insert("kubernetes.io/service-name".into(), name.into());
    labels.insert(
        "endpointslice.kubernetes.io/managed-by".into(),
        "wirespeed.dev".into(),
    );
    let slice = EndpointSlice {
        metadata: meta,
        address_type: if target.is_ipv4() { "IPv4" } else { "IPv6" }.into(),
        endpoints: vec![Endpoint {
            addresses: vec![target.to_string()],
            conditions: Some(EndpointConditions {
                ready: Some(true),
                ..EndpointConditions::default()
            }),
            ..Endpoint::default()
        }],
        ports: Some(
            ports
                .iter()
                .map(|(n, p)| EndpointPort {
                    name: Some(n.clone()),
                    port: Some(i32::from(*p)),
                    protocol: Some("TCP".into()),
                    ..EndpointPort::default()
                })
                .collect(),
        ),
    };
    vec![
        Object::Service(Box::new(svc)),
        Object::EndpointSlice(Box::new(slice)),
    ]
}

/// The agent container's requests, limits and (dra) claim.
fn resources(o: &Options, n: Network) -> Option<ResourceRequirements> {
    let q = |m: &BTreeMap<String, String>| {
        (!m.is_empty()).then(|| {
            m.iter()
                .map(|(k, v)| (k.clone(), Quantity(v.clone())))
                .collect()
        })
    };
    let r = ResourceRequirements {
        claims: (n == Network::Dra).then(|| {
            vec![ContainerClaim {
                name: CLAIM_NAME.into(),
                ..ContainerClaim::default()
            }]
        }),
        requests: q(&o.requests),
        limits: q(&o.limits),
    };
    (r != ResourceRequirements::default()).then_some(r)
}

/// Every toleration given, or one that tolerates every taint.
fn tolerations(o: &Options) -> Option<Vec<Toleration>> {
    if o.tolerate_all {
        return Some(vec![Toleration {
            operator: Some("Exists".into()),
            ..Toleration::default()
        }]);
    }
    (!o.tolerations.is_empty()).then(|| o.tolerations.clone())
}

/// Node affinity that admits exactly the nodes `names`: one term per
/// node (terms are ORed; the API server takes one value per `metadata.name`
/// field selector), as the DaemonSet controller itself pins its pods.
fn pinned_to(names: &[String]) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: names
                    .iter()
                    .map(|n| NodeSelectorTerm {
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".into(),
                            operator: "In".into(),
                            values: Some(vec![n.clone()]),
                        }]),
                        ..NodeSelectorTerm::default()
                    })
                    .collect(),
            }),
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    }
}

/// A container security context that meets the `restricted` Pod
/// Security level: no privilege escalation, read-only root, non-root, no
/// capabilities.
pub(crate) fn restricted_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Capabilities::default()
        }),
        ..SecurityContext::default()
    }
}

/// `objs` as `output` names them: yaml (multi-document) or json (a v1
/// List, ending in a newline).
pub fn render<T: serde::Serialize>(objs: &[T], output: Output) -> Result<String, K8sError> {
    match output {
        Output::Yaml => to_yaml(objs),
        Output::Json => Ok(to_json(objs)? + "\n"),
    }
}

/// How objects are printed: `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// A multi-document YAML stream.
    #[default]
    Yaml,
    /// A v1 List, JSON.
    Json,
}

impl Output {
    /// Every output, in declaration order.
    pub const ALL: [Output; 2] = [Output::Yaml, Output::Json];
    /// The names `--output` takes, in [`Output::ALL`]'s order.
    pub const NAMES: [&'static str; 2] = ["yaml", "json"];
}

impl std::str::FromStr for Output {
    type Err = K8sError;

    fn from_str(s: &str) -> Result<Output, K8sError> {
        let i = Self::NAMES
            .iter()
            .position(|n| *n == s)
            .ok_or_else(|| K8sError::Invalid(format!("--output {s:?}: use yaml or json")))?;
        Ok(Self::ALL[i])
    }
}

/// The objects (these or the in-cluster runner's) as a multi-document
/// YAML stream.
pub fn to_yaml<T: serde::Serialize>(objs: &[T]) -> Result<String, K8sError> {
    serde_saphyr::to_string_multiple(objs).map_err(|e| K8sError::Render(e.into()))
}

/// The objects as a JSON `v1 List` (what `kubectl apply -f` also takes).
pub fn to_json<T: serde::Serialize>(objs: &[T]) -> Result<String, K8sError> {
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objs});
    serde_json::to_string_pretty(&list).map_err(|e| K8sError::Render(e.into()))
}

/// The shared DeviceClass (all devices of driver dra.net), labelled as
/// wirespeed's but with no run label: no run owns it.
pub fn device_class(o: &Options) -> DeviceClass {
    let mut meta = o.meta(SHARED_DEVICE_CLASS, false);
    if let Some(l) = meta.labels.as_mut() {
        l.remove(crate::manifests::RUN_LABEL);
    }
    DeviceClass {
        metadata: meta,
        spec: DeviceClassSpec {
            selectors: Some(vec![DeviceSelector {
                cel: Some(CELDeviceSelector {
                    expression: format!("device.driver == \"{DRANET_DRIVER}\""),
                }),
            }]),
            ..DeviceClassSpec::default()
        },
    }
}

/// The claim template: `o.nics` devices of the class that match the
/// selector, with DraNet's config from the profile.
pub fn claim_template(o: &Options) -> Result<ResourceClaimTemplate, K8sError> {
    let cfg = DranetConfig::from_profile(o.profile.as_ref().map(|(_, p)| p), o.disable_ebpf)?;
    let params = serde_json::to_value(&cfg).map_err(|e| K8sError::Render(e.into()))?;
    Ok(ResourceClaimTemplate {
        metadata: o.meta(CLAIM_TEMPLATE, true),
        spec: ResourceClaimTemplateSpec {
            // Copied into each claim: lets a run find and delete its claims.
            metadata: Some(ObjectMeta {
                labels: Some(o.labels()),
                ..ObjectMeta::default()
            }),
            spec: ResourceClaimSpec {
                devices: Some(DeviceClaim {
                    requests: Some(vec![DeviceRequest {
                        name: CLAIM_NAME.into(),
                        exactly: Some(ExactDeviceRequest {
                            device_class_name: o.device_class_name(),
                            allocation_mode: Some("ExactCount".into()),
                            count: Some(i64::from(o.nics)),
                            selectors: Some(vec![DeviceSelector {
                                cel: Some(CELDeviceSelector {
                                    expression: o.nic_selector.cel()?,
                                }),
                            }]),
                            ..ExactDeviceRequest::default()
                        }),
                        ..DeviceRequest::default()
                    }]),
                    config: Some(vec![DeviceClaimConfiguration {
                        requests: Some(vec![CLAIM_NAME.into()]),
                        opaque: Some(OpaqueDeviceConfiguration {
                            driver: DRANET_DRIVER.into(),
                            parameters: RawExtension(params),
                        }),
                    }]),
                    ..DeviceClaim::default()
                }),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(n: &[Network]) -> Options {
        let mut o = Options::new(n.to_vec(), "wirespeed", "ab".repeat(32).as_bytes());
        o.privileged_namespace = n.contains(&Network::Host);
        o
    }

    #[test]
    fn network_list_parses_and_refuses_repeats_and_unknowns() {
        assert_eq!(
            Network::parse_list("host,pod,dra").unwrap(),
            Network::ALL.to_vec()
        );
        assert!(Network::parse_list("host,host").is_err());
        assert!(Network::parse_list("overlay").is_err());
        assert!(Network::parse_list("").is_err());
    }

    fn daemonsets(objs: &[Object]) -> Vec<&DaemonSet> {
        objs.iter()
            .filter_map(|o| match o {
                Object::DaemonSet(d) => Some(&**d),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn host_daemonset_uses_host_network_and_pod_does_not() {
        let objs = build(&opts(&[Network::Host, Network::Pod])).unwrap();
        let ds = daemonsets(&objs);
        assert_eq!(ds.len(), 2);
        let spec = |d: &DaemonSet| d.spec.clone().unwrap().template.spec.unwrap();
        assert_eq!(spec(ds[0]).host_network, Some(true));
        assert_eq!(spec(ds[1]).host_network, None);
        assert!(!objs.iter().any(|o| matches!(o, Object::DeviceClass(_))));
    }

    #[test]
    fn dra_config_and_sysctls_come_from_the_profile() {
        let mut o = opts(&[Network::Dra]);
        let p = wirespeed_host::profiles::load("tpu-multinic").unwrap();
        o.profile = Some(("tpu-multinic".into(), p.clone()));
        let objs = build(&o).unwrap();
        let json = to_json(&objs).unwrap();
        for want in [
            "\"mtu\": 8896",
            "\"gsoMaxSize\": 65536",
            "\"groIPv4MaxSize\": 65536",
            "\"disableEbpfPrograms\": true",
            "\"enable-max-rx-buffer-size\": true",
            "!device.attributes[\\\"dra.net\\\"].virtual",
        ] {
            assert!(json.contains(want), "{want} missing from {json}");
        }
        let yaml = to_yaml(&objs).unwrap();
        assert_eq!(yaml.matches("\n---\n").count(), objs.len() - 1, "{yaml}");
    }

    #[test]
    fn pod_sysctls_go_into_the_pod_security_context_and_nothing_is_privileged() {
        let mut o = opts(&[Network::Pod, Network::Host]);
        o.pod_sysctls =
            BTreeMap::from([("net.ipv4.tcp_rmem".into(), "4096 131072 8388608".into())]);
        let objs = build(&o).unwrap();
        let json = to_json(&objs).unwrap();
        assert!(
            !json.contains("initContainers") && !json.contains("\"privileged\": true"),
            "{json}"
        );
        let ds = daemonsets(&objs);
        let sysctls = |d: &DaemonSet| {
            let spec = d.spec.clone().unwrap().template.spec.unwrap();
            spec.security_context.unwrap().sysctls
        };
        assert_eq!(sysctls(ds[0]).unwrap()[0].name, "net.ipv4.tcp_rmem");
        assert_eq!(sysctls(ds[1]), None, "a host-network pod takes no sysctls");
    }

    #[test]
    fn host_network_needs_the_privileged_flag_and_pod_network_is_restricted() {
        let mut o = opts(&[Network::Host]);
        o.privileged_namespace = false;
        let e = build(&o).unwrap_err().to_string();
        assert!(
            e.contains("--privileged-namespace") && e.contains("Pod Security"),
            "{e}"
        );
        let level = |objs: &[Object]| match &objs[0] {
            Object::Namespace(n) => {
                n.metadata.labels.clone().unwrap()["pod-security.kubernetes.io/enforce"].clone()
            }
            _ => panic!("namespace first"),
        };
        assert_eq!(level(&build(&opts(&[Network::Pod])).unwrap()), "restricted");
        assert_eq!(
            level(&build(&opts(&[Network::Host])).unwrap()),
            "privileged"
        );
    }

    #[test]
    fn the_network_policy_admits_the_ports_from_own_pods_and_the_api_server() {
        // Engine and data ports from every pod of the namespace; the HTTP
        // port from those that are not agents and from the API server.
        let mut o = opts(&[Network::Pod]);
        o.api_sources = vec!["10.9.0.1/32".into()];
        let objs = build(&o).unwrap();
        let np = objs
            .iter()
            .find_map(|o| match o {
                Object::NetworkPolicy(p) => Some(p.spec.clone().unwrap()),
                _ => None,
            })
            .unwrap();
        let rules = np.ingress.unwrap();
        let ports = rules[0].ports.clone().unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[1].port, Some(IntOrString::Int(5301)));
        assert_eq!(ports[1].end_port, Some(5316));
        let http = rules[1].ports.clone().unwrap();
        assert_eq!(http.len(), 1);
        assert_eq!(http[0].port, Some(IntOrString::Int(i32::from(o.http_port))));
        let from = rules[1].from.clone().unwrap();
        let not_agents = from[0]
            .pod_selector
            .clone()
            .unwrap()
            .match_expressions
            .unwrap();
        assert_eq!(
            (
                not_agents[0].operator.as_str(),
                not_agents[0].values.clone()
            ),
            ("NotIn", Some(vec![APP_AGENT.to_string()]))
        );
        assert_eq!(from[1].ip_block.clone().unwrap().cidr, "10.9.0.1/32");
        assert!(
            build(&opts(&[Network::Host]))
                .unwrap()
                .iter()
                .all(|o| o.kind() != "NetworkPolicy")
        );
        o.api_sources = vec!["10.9.0.1".into()];
        assert!(build(&o).is_err());
    }

    #[test]
    fn bad_options_are_refused() {
        let mut o = opts(&[Network::Dra]);
        o.namespace = "Bad_NS".into();
        assert!(build(&o).is_err());
        let mut o = opts(&[Network::Dra]);
        o.nic_selector = NicSelector::NetworkPrefix("a\") || true || (\"".into());
        assert!(build(&o).is_err());
        let mut o = opts(&[Network::Pod]);
        o.key = b"short".to_vec();
        assert!(build(&o).is_err());
        let mut o = opts(&[Network::Pod]);
        o.data_ports = (5290, 5310);
        assert!(build(&o).is_err(), "the range holds the engine port");
        let mut o = opts(&[Network::Pod]);
        o.requests.insert("cpu".into(), "lots".into());
        assert!(build(&o).is_err());
    }

    fn pod_spec(o: &Options) -> PodSpec {
        let objs = build(o).unwrap();
        let Some(Object::DaemonSet(ds)) = objs.iter().find(|x| x.kind() == "DaemonSet") else {
            panic!("no DaemonSet");
        };
        ds.spec.clone().unwrap().template.spec.unwrap()
    }

    #[test]
    fn agents_land_only_where_asked_with_their_resources() {
        let mut o = opts(&[Network::Pod]);
        o.node_names = Some(vec!["a".into(), "b".into()]);
        o.tolerate_all = true;
        o.requests.insert("cpu".into(), "500m".into());
        o.limits.insert("memory".into(), "256Mi".into());
        o.priority_class = Some("wirespeed-high".into());
        let spec = pod_spec(&o);
        let json = serde_json::to_value(&spec).unwrap();
        let terms = &json["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"];
        assert_eq!(terms[0]["matchFields"][0]["key"], "metadata.name");
        assert_eq!(
            terms[0]["matchFields"][0]["values"],
            serde_json::json!(["a"])
        );
        assert_eq!(
            terms[1]["matchFields"][0]["values"],
            serde_json::json!(["b"])
        );
        assert_eq!(
            json["tolerations"],
            serde_json::json!([{"operator": "Exists"}])
        );
        assert_eq!(json["priorityClassName"], "wirespeed-high");
        let res = &json["containers"][0]["resources"];
        assert_eq!(res["requests"]["cpu"], "500m");
        assert_eq!(res["limits"]["memory"], "256Mi");
        let args = spec.containers[0].args.clone().unwrap();
        assert!(
            args.windows(2).any(|w| w == ["--data-ports", "5301-5316"]),
            "{args:?}"
        );
    }

    #[test]
    fn a_service_forwards_the_engine_and_data_ports_to_one_agent() {
        let o = opts(&[Network::Pod]);
        let objs = service(&o, "wirespeed-pod-0", "10.1.2.3".parse().unwrap());
        let [Object::Service(svc), Object::EndpointSlice(slice)] = &objs[..] else {
            panic!("a Service and its EndpointSlice: {objs:?}");
        };
        let ports = svc.spec.as_ref().unwrap().ports.as_ref().unwrap();
        assert_eq!(ports.len(), 17);
        assert!(
            svc.spec.as_ref().unwrap().selector.is_none(),
            "the run writes the endpoints"
        );
        let labels = slice.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["kubernetes.io/service-name"], "wirespeed-pod-0");
        assert_eq!(slice.endpoints[0].addresses, vec!["10.1.2.3".to_string()]);
        let names: Vec<_> = slice
            .ports
            .iter()
            .flatten()
            .map(|p| p.name.clone())
            .collect();
        let svc_names: Vec<_> = ports.iter().map(|p| p.name.clone()).collect();
        assert_eq!(names, svc_names, "kube-proxy matches ports by name");
    }
}
