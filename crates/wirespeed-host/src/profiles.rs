//! Named tuning profiles (TOML, embedded from tune-profiles/; a file path
//! works too): sysctls for the host and settings for each NIC given.

use crate::HostError;
use crate::doctor::used_links;
use crate::snapshot::Snapshot;
use crate::tune::{Action, Setting};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The built-in profiles: (name, TOML).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "throughput",
        include_str!("../tune-profiles/throughput.toml"),
    ),
    ("latency", include_str!("../tune-profiles/latency.toml")),
    (
        "tpu-multinic",
        include_str!("../tune-profiles/tpu-multinic.toml"),
    ),
    (
        "bulk-multinic",
        include_str!("../tune-profiles/bulk-multinic.toml"),
    ),
];

/// A tuning profile.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// One line.
    #[serde(default)]
    pub description: String,
    /// Sysctls by dotted name.
    #[serde(default)]
    pub sysctl: BTreeMap<String, String>,
    /// Settings for each NIC.
    #[serde(default)]
    pub link: LinkProfile,
}

/// Per-NIC settings of a profile.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkProfile {
    /// MTU.
    pub mtu: Option<u32>,
    /// gso_max_size.
    pub gso_max_size: Option<u32>,
    /// gro_max_size.
    pub gro_max_size: Option<u32>,
    /// gso_ipv4_max_size.
    pub gso_ipv4_max_size: Option<u32>,
    /// gro_ipv4_max_size.
    pub gro_ipv4_max_size: Option<u32>,
    /// ethtool features (kernel names) on/off.
    #[serde(default)]
    pub features: BTreeMap<String, String>,
    /// Driver private flags on/off.
    #[serde(default)]
    pub private_flags: BTreeMap<String, String>,
    /// RX ring size.
    pub rx_ring: Option<u32>,
    /// Per-NIC source routing for every IPv4 address of the NIC.
    #[serde(default)]
    pub source_routing: bool,
}

/// Parses a profile; errors name the line.
pub fn parse(name: &str, text: &str) -> Result<Profile, HostError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        HostError::State(format!(
            "profile {name}{}: {}",
            line.map(|l| format!(" line {l}")).unwrap_or_default(),
            e.message()
        ))
    })
}

/// A built-in profile by name, or a profile file by path.
pub fn load(name_or_path: &str) -> Result<Profile, HostError> {
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return parse(name_or_path, text);
    }
    if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
        let text =
            std::fs::read_to_string(name_or_path).map_err(|e| HostError::file(name_or_path, e))?;
        return parse(name_or_path, &text);
    }
    Err(HostError::UnknownProfile(name_or_path.into()))
}

/// Buffer limits a profile sets are floors: a host that already allows
/// more keeps its larger values (element by element for tcp_rmem/wmem).
fn never_lower(key: &str, want: &str, snap: &Snapshot) -> String {
    let limits = ["mem_max", "mem_default", "tcp_rmem", "tcp_wmem"];
    if !limits.iter().any(|l| key.ends_with(l)) {
        return want.to_string();
    }
    let (Some(cur), Ok(w)) = (
        snap.sysctl_ints(key),
        want.split_whitespace()
            .map(str::parse::<u64>)
            .collect::<Result<Vec<_>, _>>(),
    ) else {
        return want.to_string();
    };
    if cur.len() != w.len() {
        return want.to_string();
    }
    cur.iter()
        .zip(&w)
        .map(|(c, w)| (*c).max(*w).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The actions of a profile for NICs `devs` (all used NICs when empty).
pub fn actions(p: &Profile, devs: &[String], snap: &Snapshot) -> Result<Vec<Action>, HostError> {
    let mut out: Vec<Action> = p
        .sysctl
        .iter()
        .map(|(k, v)| Action::sysctl(k, never_lower(k, v, snap)))
        .collect();
    let devs: Vec<String> = if devs.is_empty() {
        used_links(snap).iter().map(|l| l.name.clone()).collect()
    } else {
        devs.to_vec()
    };
    for dev in &devs {
        let link = snap
            .link(dev)
            .ok_or_else(|| HostError::NoSuchLink(dev.clone()))?;
        let d = || dev.clone();
        let l = &p.link;
        let mut push = |setting: Setting, v: Option<u32>| {
            if let Some(v) = v {
                out.push(Action {
                    setting,
                    value: v.to_string(),
                });
            }
        };
        push(Setting::Mtu { dev: d() }, l.mtu);
        push(Setting::GsoMaxSize { dev: d() }, l.gso_max_size);
        push(Setting::GroMaxSize { dev: d() }, l.gro_max_size);
        push(Setting::GsoIpv4MaxSize { dev: d() }, l.gso_ipv4_max_size);
        push(Setting::GroIpv4MaxSize { dev: d() }, l.gro_ipv4_max_size);
        push(Setting::RxRing { dev: d() }, l.rx_ring);
        for (name, v) in &l.features {
            out.push(Action {
                setting: Setting::Feature {
                    dev: d(),
                    name: name.clone(),
                },
                value: v.clone(),
            });
        }
        for (flag, v) in &l.private_flags {
            out.push(Action {
                setting: Setting::PrivateFlag {
                    dev: d(),
                    flag: flag.clone(),
                },
                value: v.clone(),
            });
        }
        if l.source_routing {
            for a in link.addresses.iter().filter(|a| !a.contains(':')) {
                out.push(Action {
                    setting: Setting::SourceRoute {
                        dev: d(),
                        addr: a.clone(),
                        table: 100 + link.index,
                        priority: 1000 + link.index,
                    },
                    value: "present".into(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_parses() {
        for (name, _) in BUILTIN {
            let p = load(name).unwrap();
            assert!(!p.description.is_empty(), "{name}");
        }
        let tpu = load("tpu-multinic").unwrap();
        assert_eq!(
            tpu.sysctl.get("net.ipv4.tcp_rmem").map(String::as_str),
            Some("4096 41943040 314572800")
        );
        assert_eq!(tpu.link.mtu, Some(8896));
    }

    #[test]
    fn bad_profiles_name_the_line() {
        let e = parse("x", "description = \"d\"\n[link]\nmtu = \"big\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3"), "{e}");
        assert!(matches!(load("nope"), Err(HostError::UnknownProfile(_))));
        let e = parse("x", "colour = 1\n").unwrap_err().to_string();
        assert!(e.contains("colour"), "{e}");
    }
}
