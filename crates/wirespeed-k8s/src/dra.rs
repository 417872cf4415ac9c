//! `--network dra`: the NICs a pod claims through Dynamic Resource
//! Allocation from DraNet (driver `dra.net`), checked against a cluster.
//! What a claim asks for is [`crate::dranet`]'s; the DeviceClass and claim
//! template are built with the other objects in [`crate::manifests`].
//!
//! - The DeviceClass is one shared object, [`SHARED_DEVICE_CLASS`],
//!   created when missing and never deleted by a run (or the user's own,
//!   `--device-class`, then nothing is created); [`prepare`] does that
//!   after [`check_devices`] has checked the profile's private flags
//!   against the ResourceSlices of the chosen nodes: a refused run
//!   applies nothing.
//!
//! What it does not do: evaluate a free CEL selector (a `--nic-cel` or a
//! `--device-class`'s own selectors): the checks then cover every
//! `dra.net` device of the chosen nodes, and say so.

use crate::K8sError;
use crate::cluster;
pub use crate::dranet::{
    CLAIM_NAME, CLAIM_TEMPLATE, DRANET_DRIVER, DranetConfig, NicSelector, SHARED_DEVICE_CLASS,
    SliceDevice, slice_devices,
};
use crate::manifests::device_class;
use crate::manifests::{Network, Object, Options};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceSlice};
use kube::Client;
use kube::api::{Api, ListParams};

/// A NIC family whose driver has private flags, how DraNet's PCI
/// attributes name it, and its flags.
struct FlagFamily {
    /// The family and its kernel driver, for messages.
    name: &'static str,
    /// Substrings of `dra.net/pciVendor` or `dra.net/pciDevice` (the PCI
    /// database's names) that identify it.
    marks: &'static [&'static str],
    /// Its driver's private flags (`ethtool --show-priv-flags`).
    flags: &'static [&'static str],
}

/// The NIC families wirespeed knows private flags of.
const FLAG_FAMILIES: &[FlagFamily] = &[
    FlagFamily {
        name: "Google gVNIC (gve)",
        marks: &["gVNIC", "Google"],
        flags: &[
            "report-stats",
            "enable-header-split",
            "enable-strict-header-split",
            "enable-max-rx-buffer-size",
        ],
    },
    FlagFamily {
        name: "NVIDIA/Mellanox ConnectX (mlx5)",
        marks: &["Mellanox", "ConnectX"],
        flags: &[
            "rx_cqe_moder",
            "tx_cqe_moder",
            "rx_cqe_compress",
            "rx_striding_rq",
            "rx_no_csum_complete",
            "xdp_tx_mpwqe",
            "skb_tx_mpwqe",
            "tx_port_ts",
            "dropless_rq",
            "per_channel_stats",
            "tx_xdp_hw_checksum",
        ],
    },
];

/// Why a device lacks a private flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoFlag {
    /// A virtual NIC has no driver private flags.
    #[error(
        "it is virtual (dra.net/virtual=true, type {0}): a virtual NIC has no driver private flags"
    )]
    Virtual(String),
    /// No NIC family wirespeed knows has the flag.
    #[error("wirespeed knows no NIC with a private flag {0:?} (known: {known})", known = known_flags())]
    Unknown(String),
    /// The flag's family is known, the device's PCI attributes are absent.
    #[error(
        "it is a private flag of {0}, and the device's attributes name no PCI vendor or device"
    )]
    Unnamed(&'static str),
    /// The device is of another family.
    #[error("it is a private flag of {family}, and the device is {device}")]
    OtherNic {
        /// The family whose flag it is.
        family: &'static str,
        /// The device's PCI vendor / device.
        device: String,
    },
}

/// Every known family with its flags, for [`NoFlag::Unknown`].
fn known_flags() -> String {
    FLAG_FAMILIES
        .iter()
        .map(|f| format!("{}: {}", f.name, f.flags.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether device `d` has private flag `flag`, by its attributes: a
/// virtual NIC has none, a known flag needs its family's NIC, an unknown
/// flag is refused (wirespeed cannot tell which NICs have it). Err says
/// why not.
pub fn private_flag_support(flag: &str, d: &SliceDevice) -> Result<(), NoFlag> {
    let family = FLAG_FAMILIES.iter().find(|f| f.flags.contains(&flag));
    if d.bool("dra.net/virtual") == Some(true) {
        let kind = d.string("dra.net/type").unwrap_or("unknown");
        return Err(NoFlag::Virtual(kind.to_string()));
    }
    let Some(f) = family else {
        return Err(NoFlag::Unknown(flag.to_string()));
    };
    let ids: Vec<&str> = ["dra.net/pciVendor", "dra.net/pciDevice"]
        .iter()
        .filter_map(|k| d.string(k))
        .collect();
    if ids.iter().any(|v| f.marks.iter().any(|m| v.contains(m))) {
        return Ok(());
    }
    Err(if ids.is_empty() {
        NoFlag::Unnamed(f.name)
    } else {
        NoFlag::OtherNic {
            family: f.name,
            device: ids.join(" / "),
        }
    })
}

/// What [`check_devices`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// The devices the claims may get (`device on node`).
    pub candidates: Vec<String>,
    /// Whether the selectors were evaluated (false: a CEL wirespeed does
    /// not evaluate, so every dra.net device of the nodes counted).
    pub evaluated: bool,
}

impl Checked {
    /// One line for the run's log.
    pub fn summary(&self) -> String {
        let how = if self.evaluated {
            "match the selector"
        } else {
            "of driver dra.net (the selector is CEL wirespeed does not evaluate)"
        };
        match self.candidates.len() {
            0 => format!(
                "dra: no device on the chosen nodes {how} yet: the claims wait until a driver publishes one"
            ),
            n => format!("dra: {n} device(s) {how}: {}", self.candidates.join(", ")),
        }
    }
}

/// Checks `cfg` against the devices a claim may get: those of `devices`
/// on `nodes` (or of every node) that the selector and the DeviceClass
/// admit (`own_class`: the user's class, whose selectors are not
/// evaluated). A private flag must be supported by every candidate
/// ([`private_flag_support`]); with private flags and no candidate the
/// run is refused too (nothing to check them against). Errors name every
/// flag and device.
pub fn check_devices(
    cfg: &DranetConfig,
    sel: &NicSelector,
    own_class: bool,
    devices: &[SliceDevice],
    nodes: &[String],
) -> Result<Checked, K8sError> {
    let evaluated = !own_class && !matches!(sel, NicSelector::Cel(_));
    let candidates: Vec<&SliceDevice> = devices
        .iter()
        .filter(|d| d.node.is_empty() || nodes.contains(&d.node))
        .filter(|d| !evaluated || sel.matches(d) == Some(true))
        .collect();
    let flags: Vec<&String> = cfg
        .ethtool
        .iter()
        .flat_map(|e| e.private_flags.keys())
        .collect();
    let scope = if evaluated {
        String::new()
    } else {
        " (wirespeed does not evaluate a --nic-cel or a --device-class's selectors, so every dra.net device of the chosen nodes was checked)".into()
    };
    if !flags.is_empty() && candidates.is_empty() {
        return Err(K8sError::Invalid(format!(
            "--profile: cannot check private flag(s) {} for --network dra: no dra.net device on nodes {} matches the selector in the cluster's ResourceSlices{scope}",
            join(&flags),
            nodes.join(", ")
        )));
    }
    if evaluated && candidates.is_empty() {
        return Err(no_candidate(sel, devices, nodes));
    }
    let mut refused = Vec::new();
    for f in &flags {
        for d in &candidates {
            if let Err(why) = private_flag_support(f, d) {
                refused.push(format!("private flag {f} on {}: {why}", d.describe()));
            }
        }
    }
    if !refused.is_empty() {
        return Err(K8sError::Invalid(format!(
            "--profile for --network dra: the NIC driver does not support {}{scope}; DraNet would fail the pod sandbox. Nothing was applied: choose NICs that have the flag (--ifname-prefix, --nic-cel) or a profile without it",
            refused.join("; ")
        )));
    }
    Ok(Checked {
        candidates: candidates.iter().map(|d| d.describe()).collect(),
        evaluated,
    })
}

/// The refusal when the selector admits no device the chosen `nodes`
/// publish: what they do publish, and the flag that selects it.
fn no_candidate(sel: &NicSelector, devices: &[SliceDevice], nodes: &[String]) -> K8sError {
    let theirs: Vec<&SliceDevice> = devices
        .iter()
        .filter(|d| d.node.is_empty() || nodes.contains(&d.node))
        .collect();
    let head = format!(
        "--network dra: no dra.net device on nodes {} matches {}",
        nodes.join(", "),
        sel.describe()
    );
    if theirs.is_empty() {
        return K8sError::Invalid(format!(
            "{head}: their ResourceSlices hold no dra.net device at all. Is the DRA driver (DraNet) running on them? Nothing was applied"
        ));
    }
    let listed: Vec<String> = theirs.iter().map(|d| d.facts()).collect();
    let names: Vec<&str> = theirs
        .iter()
        .filter_map(|d| d.string("dra.net/ifName"))
        .collect();
    let prefix = common_prefix(&names);
    let fix = if names.len() == theirs.len() && !prefix.is_empty() {
        format!("select them with --ifname-prefix {prefix} (or any CEL with --nic-cel)")
    } else {
        "select some with --ifname-prefix or --nic-cel".to_string()
    };
    K8sError::Invalid(format!(
        "{head}; they publish {}: {fix}. Nothing was applied",
        listed.join(", ")
    ))
}

/// The longest prefix every name in `v` shares ("" for none).
fn common_prefix<'a>(v: &[&'a str]) -> &'a str {
    let Some(first) = v.first() else {
        return "";
    };
    let n = v.iter().fold(first.len(), |n, s| {
        first
            .bytes()
            .zip(s.bytes())
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    });
    &first[..n]
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

/// Before a dra run applies anything: checks the profile's private
/// flags against the ResourceSlices of `nodes` ([`check_devices`]), then
/// makes sure the DeviceClass exists (the user's `--device-class` must;
/// the shared one is created when missing). Returns `objs` without the
/// DeviceClass: no run deletes it. Objects without dra pass through.
pub async fn prepare(
    client: &Client,
    o: &Options,
    nodes: &[String],
    mut objs: Vec<Object>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Object>, K8sError> {
    if !o.networks.contains(&Network::Dra) {
        return Ok(objs);
    }
    let cfg = DranetConfig::from_profile(o.profile.as_ref().map(|(_, p)| p), o.disable_ebpf)?;
    let api: Api<ResourceSlice> = Api::all(client.clone());
    let slices = api
        .list(&ListParams::default())
        .await
        .map_err(|e| K8sError::api("list ResourceSlices (the NICs DRA drivers publish)", e))?;
    let checked = check_devices(
        &cfg,
        &o.nic_selector,
        o.device_class.is_some(),
        &slice_devices(&slices.items),
        nodes,
    )?;
    log(&checked.summary());
    let classes: Api<DeviceClass> = Api::all(client.clone());
    let name = o.device_class_name();
    let have = classes
        .get_opt(&name)
        .await
        .map_err(|e| K8sError::api(format!("get DeviceClass {name}"), e))?
        .is_some();
    match (&o.device_class, have) {
        (Some(own), false) => {
            return Err(K8sError::Invalid(format!(
                "--device-class {own}: no such DeviceClass in the cluster (leave the flag out and wirespeed uses its shared class {SHARED_DEVICE_CLASS})"
            )));
        }
        (Some(own), true) => log(&format!("dra: claims use your DeviceClass {own}")),
        (None, true) => log(&format!(
            "dra: using the existing shared DeviceClass {name} (never deleted by a run)"
        )),
        (None, false) => {
            let class = Object::DeviceClass(device_class(o));
            cluster::apply(client, &class).await?;
            log(&format!(
                "dra: created the shared DeviceClass {name} (device.driver == \"{DRANET_DRIVER}\"); runs keep it"
            ));
        }
    }
    objs.retain(|x| !matches!(x, Object::DeviceClass(_)));
    Ok(objs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dranet::parse_switch;
    use k8s_openapi::api::resource::v1::DeviceAttribute;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::collections::BTreeMap;
    use wirespeed_host::profiles::Profile;

    fn dev(node: &str, name: &str, attrs: &[(&str, DeviceAttribute)]) -> SliceDevice {
        SliceDevice {
            node: node.into(),
            name: name.into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }
    fn s(v: &str) -> DeviceAttribute {
        DeviceAttribute {
            string: Some(v.into()),
            ..DeviceAttribute::default()
        }
    }
    fn b(v: bool) -> DeviceAttribute {
        DeviceAttribute {
            bool: Some(v),
            ..DeviceAttribute::default()
        }
    }
    fn veth(node: &str, name: &str) -> SliceDevice {
        dev(
            node,
            name,
            &[
                ("dra.net/ifName", s(name)),
                ("dra.net/virtual", b(true)),
                ("dra.net/type", s("veth")),
            ],
        )
    }
    fn gvnic(node: &str, name: &str) -> SliceDevice {
        dev(
            node,
            name,
            &[
                ("dra.net/ifName", s(name)),
                ("dra.net/virtual", b(false)),
                ("dra.net/pciVendor", s("Google, Inc.")),
                (
                    "dra.net/pciDevice",
                    s("Compute Engine Virtual Ethernet [gVNIC]"),
                ),
            ],
        )
    }
    fn tpu() -> Profile {
        wirespeed_host::profiles::load("tpu-multinic").unwrap()
    }
    fn nodes() -> Vec<String> {
        vec!["n1".into(), "n2".into()]
    }

    #[test]
    fn every_builtin_profile_field_is_mapped_or_refused_by_name() {
        for (name, _) in wirespeed_host::profiles::BUILTIN {
            let p = wirespeed_host::profiles::load(name).unwrap();
            let r = DranetConfig::from_profile(Some(&p), false);
            if p.link.source_routing || p.link.rx_ring.is_some() {
                let e = r.unwrap_err().to_string();
                assert!(e.contains("link.source_routing"), "{name}: {e}");
            } else {
                let c = r.unwrap();
                assert_eq!(c.interface.mtu, p.link.mtu, "{name}");
                let flags = c.ethtool.map(|e| e.private_flags.len()).unwrap_or(0);
                assert_eq!(flags, p.link.private_flags.len(), "{name}");
            }
        }
        let c = DranetConfig::from_profile(Some(&tpu()), true).unwrap();
        assert_eq!(c.interface.mtu, Some(8896));
        assert_eq!(c.interface.gro_ipv4_max_size, Some(65536));
        assert_eq!(c.interface.disable_ebpf_programs, Some(true));
        assert!(c.ethtool.unwrap().private_flags["enable-max-rx-buffer-size"]);
    }

    #[test]
    fn rx_ring_and_source_routing_are_refused_not_dropped() {
        let mut p = Profile::default();
        p.link.rx_ring = Some(4096);
        p.link.source_routing = true;
        let e = DranetConfig::from_profile(Some(&p), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("link.rx_ring = 4096") && e.contains("link.source_routing"),
            "{e}"
        );
    }

    #[test]
    fn switches_are_read_exactly() {
        for (v, want) in [
            ("on", true),
            ("true", true),
            ("off", false),
            ("false", false),
        ] {
            assert_eq!(parse_switch("f", v), Ok(want), "{v}");
        }
        for v in ["On", "yes", "1", "", " on", "enabled"] {
            assert!(parse_switch("f", v).is_err(), "{v:?}");
        }
        let mut p = Profile::default();
        p.link.features.insert("rx-gro".into(), "yes".into());
        p.link.private_flags.insert("x".into(), "true".into());
        let e = DranetConfig::from_profile(Some(&p), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("link.features.rx-gro = \"yes\""), "{e}");
        p.link.features.insert("rx-gro".into(), "off".into());
        let c = DranetConfig::from_profile(Some(&p), false).unwrap();
        let e = c.ethtool.unwrap();
        assert!(!e.features["rx-gro"]);
        assert!(e.private_flags["x"]);
    }

    #[test]
    fn a_gvnic_flag_is_refused_on_a_veth_and_accepted_on_a_gvnic() {
        let cfg = DranetConfig::from_profile(Some(&tpu()), true).unwrap();
        let sel = NicSelector::IfNamePrefix("dra".into());
        let e = check_devices(
            &cfg,
            &sel,
            false,
            &[veth("n1", "dra0"), veth("n2", "dra0")],
            &nodes(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("private flag enable-max-rx-buffer-size on device dra0 on node n1"),
            "{e}"
        );
        assert!(e.contains("dra.net/virtual=true, type veth"), "{e}");
        assert!(e.contains("Nothing was applied"), "{e}");
        let ok = check_devices(
            &cfg,
            &NicSelector::Physical,
            false,
            &[gvnic("n1", "eth1"), gvnic("n2", "eth1"), veth("n1", "dra0")],
            &nodes(),
        )
        .unwrap();
        assert_eq!(
            ok.candidates,
            ["device eth1 on node n1", "device eth1 on node n2"]
        );
        // A Mellanox NIC has no gVNIC flag.
        let mlx = dev(
            "n1",
            "eth2",
            &[
                ("dra.net/virtual", b(false)),
                ("dra.net/pciVendor", s("Mellanox Technologies")),
            ],
        );
        let e = check_devices(&cfg, &NicSelector::Physical, false, &[mlx], &nodes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("private flag of Google gVNIC (gve), and the device is Mellanox"),
            "{e}"
        );
    }

    #[test]
    fn unknown_flags_no_devices_and_unevaluated_cel_are_said() {
        let mut p = Profile::default();
        p.link.private_flags.insert("turbo".into(), "on".into());
        let cfg = DranetConfig::from_profile(Some(&p), false).unwrap();
        let e = check_devices(
            &cfg,
            &NicSelector::Physical,
            false,
            &[gvnic("n1", "eth1")],
            &nodes(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("knows no NIC with a private flag \"turbo\""),
            "{e}"
        );
        let e = check_devices(&cfg, &NicSelector::Physical, false, &[], &nodes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot check private flag(s) turbo"), "{e}");
        // A CEL selector is not evaluated: every device of the nodes counts
        // (a device on another node does not).
        let cel = NicSelector::Cel("device.attributes[\"dra.net\"].ifName == \"eth1\"".into());
        let e = check_devices(
            &cfg,
            &cel,
            false,
            &[veth("n1", "dra0"), gvnic("n9", "eth1")],
            &nodes(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("does not evaluate a --nic-cel"), "{e}");
        assert!(!e.contains("n9"), "{e}");
        // No private flags, no device the default selector admits: refused
        // at once, naming what the nodes publish and the flag that selects it.
        let plain = DranetConfig::default();
        let e = check_devices(
            &plain,
            &NicSelector::Physical,
            false,
            &[veth("n1", "dra0"), veth("n2", "dra1"), gvnic("n9", "eth1")],
            &nodes(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("matches the default selector"), "{e}");
        assert!(
            e.contains("device dra0 on node n1 (ifName dra0, virtual, type veth)"),
            "{e}"
        );
        assert!(e.contains("--ifname-prefix dra "), "{e}");
        assert!(!e.contains("n9"), "{e}");
        let e = check_devices(&plain, &NicSelector::Physical, false, &[], &nodes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no dra.net device at all"), "{e}");
        // With a CEL selector it cannot evaluate, wirespeed lets the
        // scheduler decide.
        let c = check_devices(&plain, &cel, false, &[veth("n1", "dra0")], &nodes()).unwrap();
        assert!(!c.evaluated && c.candidates.len() == 1, "{c:?}");
    }

    #[test]
    fn selectors_are_cel_over_dranet_attributes_and_match_alike() {
        let phys = NicSelector::default();
        assert_eq!(phys, NicSelector::Physical);
        let cel = phys.cel().unwrap();
        assert!(
            cel.contains("!device.attributes[\"dra.net\"].virtual"),
            "{cel}"
        );
        assert!(!cel.contains("gce"), "no cloud default: {cel}");
        assert_eq!(phys.matches(&gvnic("n1", "eth1")), Some(true));
        assert_eq!(phys.matches(&veth("n1", "dra0")), Some(false));
        let p = NicSelector::IfNamePrefix("dra".into());
        assert!(p.cel().unwrap().contains("ifName.startsWith(\"dra\")"));
        assert_eq!(p.matches(&veth("n1", "dra0")), Some(true));
        assert_eq!(p.matches(&gvnic("n1", "eth1")), Some(false));
        assert!(
            NicSelector::IfNamePrefix("a\" || true".into())
                .cel()
                .is_err()
        );
        assert!(NicSelector::Cel(" ".into()).cel().is_err());
        assert_eq!(
            NicSelector::Cel("true".into()).matches(&veth("n", "d")),
            None
        );
    }

    #[test]
    fn slice_attributes_are_read_qualified() {
        use k8s_openapi::api::resource::v1::{Device, ResourcePool, ResourceSliceSpec};
        let slice = ResourceSlice {
            metadata: ObjectMeta::default(),
            spec: ResourceSliceSpec {
                driver: DRANET_DRIVER.into(),
                node_name: Some("n1".into()),
                pool: ResourcePool {
                    name: "n1".into(),
                    generation: 1,
                    resource_slice_count: 1,
                },
                devices: Some(vec![Device {
                    name: "dra0".into(),
                    attributes: Some(BTreeMap::from([
                        ("ifName".to_string(), s("dra0")),
                        ("dra.net/virtual".to_string(), b(true)),
                    ])),
                    ..Device::default()
                }]),
                ..ResourceSliceSpec::default()
            },
        };
        let other = ResourceSlice {
            spec: ResourceSliceSpec {
                driver: "gpu.example.com".into(),
                ..slice.spec.clone()
            },
            ..slice.clone()
        };
        let d = slice_devices(&[slice, other]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].string("dra.net/ifName"), Some("dra0"));
        assert_eq!(d[0].bool("dra.net/virtual"), Some(true));
        assert_eq!(d[0].describe(), "device dra0 on node n1");
    }
}
