//! DraNet's vocabulary for `--network dra`: which devices a claim asks
//! for ([`NicSelector`], by DraNet's `dra.net/*` attributes or any CEL; by
//! default the physical ones, never a cloud's attribute) and DraNet's
//! opaque claim parameters ([`DranetConfig`]), mapped from a tune profile
//! field by field; a field DraNet's config cannot carry is refused by name
//! ([`DranetConfig::from_profile`]), never dropped. Plain data: the objects
//! are built in [`crate::manifests`], checked against a cluster in
//! [`crate::dra`].

use crate::K8sError;
use k8s_openapi::api::resource::v1::{DeviceAttribute, ResourceSlice};
use serde::Serialize;
use std::collections::BTreeMap;
use wirespeed_host::profiles::{LinkProfile, Profile};

/// The DRA driver name of DraNet.
pub const DRANET_DRIVER: &str = "dra.net";
/// The DeviceClass every run shares (cluster-scoped): created when
/// missing, never deleted by a run.
pub const SHARED_DEVICE_CLASS: &str = "wirespeed-dranet";
/// The ResourceClaimTemplate name (dra).
pub const CLAIM_TEMPLATE: &str = "wirespeed-nic";
/// The pod's name for its claim, and the request's name in the template.
pub const CLAIM_NAME: &str = "nic";

/// Which NICs a `dra` claim asks DraNet for.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum NicSelector {
    /// NICs DraNet does not call virtual (`dra.net/virtual` false): the
    /// physical NICs DraNet is for. The default.
    #[default]
    Physical,
    /// GCE network name prefix (report 1): `gce.dra.net/networkName`.
    NetworkPrefix(String),
    /// Interface name prefix: `dra.net/ifName`.
    IfNamePrefix(String),
    /// A CEL expression over `device`, passed through (the API server
    /// compiles and type-checks it).
    Cel(String),
}

impl NicSelector {
    /// The CEL expression. Prefixes are checked to be plain names, so they
    /// need no quoting inside the CEL string literal.
    pub fn cel(&self) -> Result<String, K8sError> {
        let plain = |p: &str, what: &str| {
            if p.is_empty()
                || p.len() > 63
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return Err(K8sError::Invalid(format!(
                    "{what} {p:?}: use 1 to 63 letters, digits, '-', '_' or '.' (or --nic-cel for any CEL)"
                )));
            }
            Ok(())
        };
        match self {
            NicSelector::Physical => Ok(format!(
                "\"virtual\" in device.attributes[\"{DRANET_DRIVER}\"] && \
                 !device.attributes[\"{DRANET_DRIVER}\"].virtual"
            )),
            NicSelector::NetworkPrefix(p) => {
                plain(p, "network name prefix")?;
                Ok(format!(
                    "\"networkName\" in device.attributes[\"gce.dra.net\"] && \
                     device.attributes[\"gce.dra.net\"].networkName.startsWith(\"{p}\")"
                ))
            }
            NicSelector::IfNamePrefix(p) => {
                plain(p, "interface name prefix")?;
                Ok(format!(
                    "\"ifName\" in device.attributes[\"{DRANET_DRIVER}\"] && \
                     device.attributes[\"{DRANET_DRIVER}\"].ifName.startsWith(\"{p}\")"
                ))
            }
            NicSelector::Cel(e) => {
                if e.trim().is_empty() {
                    return Err(K8sError::Invalid("--nic-cel: empty CEL expression".into()));
                }
                Ok(e.clone())
            }
        }
    }

    /// The selector as the flag that chose it, for messages.
    pub fn describe(&self) -> String {
        match self {
            NicSelector::Physical => {
                "the default selector (physical NICs: dra.net/virtual=false)".into()
            }
            NicSelector::NetworkPrefix(p) => format!("--network-prefix {p}"),
            NicSelector::IfNamePrefix(p) => format!("--ifname-prefix {p}"),
            NicSelector::Cel(e) => format!("--nic-cel {e}"),
        }
    }

    /// Whether `d` matches, or None for a CEL expression wirespeed does
    /// not evaluate.
    pub fn matches(&self, d: &SliceDevice) -> Option<bool> {
        let prefix = |key: &str, p: &str| d.string(key).is_some_and(|v| v.starts_with(p));
        match self {
            NicSelector::Physical => Some(d.bool("dra.net/virtual") == Some(false)),
            NicSelector::NetworkPrefix(p) => Some(prefix("gce.dra.net/networkName", p)),
            NicSelector::IfNamePrefix(p) => Some(prefix("dra.net/ifName", p)),
            NicSelector::Cel(_) => None,
        }
    }
}

/// DraNet's per-claim interface settings (its opaque config `interface`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DranetInterface {
    /// MTU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// gso_max_size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso_max_size: Option<u32>,
    /// gro_max_size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro_max_size: Option<u32>,
    /// gso_ipv4_max_size.
    #[serde(rename = "gsoIPv4MaxSize", skip_serializing_if = "Option::is_none")]
    pub gso_ipv4_max_size: Option<u32>,
    /// gro_ipv4_max_size.
    #[serde(rename = "groIPv4MaxSize", skip_serializing_if = "Option::is_none")]
    pub gro_ipv4_max_size: Option<u32>,
    /// Detach eBPF programs from the NIC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_ebpf_programs: Option<bool>,
}

/// DraNet's ethtool settings.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DranetEthtool {
    /// Offload features by kernel name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, bool>,
    /// Driver private flags.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub private_flags: BTreeMap<String, bool>,
}

/// DraNet's opaque claim parameters.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DranetConfig {
    /// Interface settings.
    pub interface: DranetInterface,
    /// ethtool settings, when the profile has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ethtool: Option<DranetEthtool>,
}

/// A profile's switch that is not exactly on, off, true or false.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value:?}: use on, off, true or false (exactly)")]
pub struct BadSwitch {
    /// The profile's field, e.g. `link.features.rx-gro`.
    pub field: String,
    /// The value it has.
    pub value: String,
}

/// An on/off switch of a profile, read exactly: `on`, `off`, `true` or
/// `false`; anything else is an error naming `field`.
pub fn parse_switch(field: &str, v: &str) -> Result<bool, BadSwitch> {
    match v {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(BadSwitch {
            field: field.to_string(),
            value: v.to_string(),
        }),
    }
}

impl DranetConfig {
    /// DraNet's config from a tune profile. Every field of the profile is
    /// either mapped or refused: `[sysctl]` goes to the pods'
    /// `securityContext.sysctls` (not DraNet's), `description` is text,
    /// the `[link]` sizes, features
    /// and private flags map to DraNet's `interface` and `ethtool`;
    /// `link.rx_ring` and `link.source_routing` have no place in DraNet's
    /// config and are refused, each by name, as is a switch that is not
    /// exactly on/off/true/false. `disable_ebpf` sets
    /// `disableEbpfPrograms`.
    pub fn from_profile(p: Option<&Profile>, disable_ebpf: bool) -> Result<DranetConfig, K8sError> {
        let mut c = DranetConfig {
            interface: DranetInterface {
                disable_ebpf_programs: disable_ebpf.then_some(true),
                ..DranetInterface::default()
            },
            ethtool: None,
        };
        let Some(p) = p else { return Ok(c) };
        // Destructured in full: a new profile field does not compile
        // until it is mapped here or refused.
        let Profile {
            description: _,
            sysctl: _,
            link:
                LinkProfile {
                    mtu,
                    gso_max_size,
                    gro_max_size,
                    gso_ipv4_max_size,
                    gro_ipv4_max_size,
                    features,
                    private_flags,
                    rx_ring,
                    source_routing,
                },
        } = p;
        let mut refused = Vec::new();
        c.interface.mtu = *mtu;
        c.interface.gso_max_size = *gso_max_size;
        c.interface.gro_max_size = *gro_max_size;
        c.interface.gso_ipv4_max_size = *gso_ipv4_max_size;
        c.interface.gro_ipv4_max_size = *gro_ipv4_max_size;
        if let Some(r) = rx_ring {
            refused.push(format!(
                "link.rx_ring = {r}: DraNet's claim config has no ring sizes (set them on the node with `wirespeed tune`)"
            ));
        }
        if *source_routing {
            refused.push(
                "link.source_routing = true: DraNet's config takes routes per claim, not per-NIC source routing from the NIC's own addresses (known only after allocation)"
                    .to_string(),
            );
        }
        let mut switches = |m: &BTreeMap<String, String>, what: &str| {
            let mut out = BTreeMap::new();
            for (k, v) in m {
                match parse_switch(&format!("link.{what}.{k}"), v) {
                    Ok(b) => {
                        out.insert(k.clone(), b);
                    }
                    Err(e) => refused.push(e.to_string()),
                }
            }
            out
        };
        let e = DranetEthtool {
            features: switches(features, "features"),
            private_flags: switches(private_flags, "private_flags"),
        };
        if !refused.is_empty() {
            return Err(K8sError::Invalid(format!(
                "--profile for --network dra: {}",
                refused.join("; ")
            )));
        }
        if !e.features.is_empty() || !e.private_flags.is_empty() {
            c.ethtool = Some(e);
        }
        Ok(c)
    }
}

/// One device of a ResourceSlice: its node, name and attributes (keys
/// fully qualified: an unqualified `ifName` of driver dra.net reads
/// `dra.net/ifName`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SliceDevice {
    /// The slice's node (empty for a slice of several nodes).
    pub node: String,
    /// The device name.
    pub name: String,
    /// Attributes by qualified name.
    pub attrs: BTreeMap<String, DeviceAttribute>,
}

impl SliceDevice {
    /// A string attribute.
    pub fn string(&self, key: &str) -> Option<&str> {
        self.attrs.get(key)?.string.as_deref()
    }

    /// A bool attribute.
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.attrs.get(key)?.bool
    }

    /// [`SliceDevice::describe`] with what selectors read: "device dra0
    /// on node n1 (ifName dra0, virtual, type veth)".
    pub fn facts(&self) -> String {
        let mut f = Vec::new();
        if let Some(i) = self.string("dra.net/ifName") {
            f.push(format!("ifName {i}"));
        }
        match self.bool("dra.net/virtual") {
            Some(true) => f.push("virtual".into()),
            Some(false) => f.push("physical".into()),
            None => {}
        }
        if let Some(t) = self.string("dra.net/type") {
            f.push(format!("type {t}"));
        }
        if let Some(n) = self.string("gce.dra.net/networkName") {
            f.push(format!("network {n}"));
        }
        format!("{} ({})", self.describe(), f.join(", "))
    }

    /// `NAME on node NODE` (and the interface when it differs), for
    /// messages.
    pub fn describe(&self) -> String {
        let node = if self.node.is_empty() {
            "every node".to_string()
        } else {
            format!("node {}", self.node)
        };
        match self.string("dra.net/ifName") {
            Some(i) if i != self.name => format!("device {} ({i}) on {node}", self.name),
            _ => format!("device {} on {node}", self.name),
        }
    }
}

/// The devices of driver `dra.net` in `slices`.
pub fn slice_devices(slices: &[ResourceSlice]) -> Vec<SliceDevice> {
    let mut out = Vec::new();
    for s in slices.iter().filter(|s| s.spec.driver == DRANET_DRIVER) {
        let node = s.spec.node_name.clone().unwrap_or_default();
        for d in s.spec.devices.iter().flatten() {
            let attrs = d
                .attributes
                .iter()
                .flatten()
                .map(|(k, v)| {
                    let k = if k.contains('/') {
                        k.clone()
                    } else {
                        format!("{DRANET_DRIVER}/{k}")
                    };
                    (k, v.clone())
                })
                .collect();
            out.push(SliceDevice {
                node: node.clone(),
                name: d.name.clone(),
                attrs,
            });
        }
    }
    out
}
