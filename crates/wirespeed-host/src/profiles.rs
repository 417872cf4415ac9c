//! Named tuning profiles (TOML, embedded from tune-profiles/; a file path
//! works too): sysctls for the host and settings for each NIC given.

use crate::HostError;
use crate::doctor::used_links;
use crate::snapshot::Snapshot;
use crate::tune::{Action, Setting, valid_sysctl_name};
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

/// The 1-based line of byte offset `at` in `text`.
fn line_at(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The first line that assigns `key` (bare or quoted), for error messages.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let pats = [format!("\"{key}\""), format!("'{key}'"), key.to_string()];
    text.lines().enumerate().find_map(|(i, l)| {
        pats.iter().find_map(|p| {
            let pos = l.find(p.as_str())?;
            let before = l[..pos].chars().last();
            let after = l[pos + p.len()..].trim_start();
            (before.is_none_or(|c| c.is_whitespace() || c == '{' || c == ',')
                && after.starts_with('='))
            .then_some(i + 1)
        })
    })
}

/// Sysctls whose value is a list of numbers in order: (name suffix, count,
/// what the numbers are).
const ORDERED_SYSCTLS: &[(&str, usize, &str)] = &[
    ("tcp_rmem", 3, "min default max"),
    ("tcp_wmem", 3, "min default max"),
    ("tcp_mem", 3, "low pressure high (pages)"),
    ("udp_mem", 3, "low pressure high (pages)"),
    ("ip_local_port_range", 2, "first last"),
];

/// Checks what TOML cannot: sysctl names and value shapes, on/off
/// switches, link sizes in range.
fn check(p: &Profile) -> Result<(), (String, String)> {
    for (k, v) in &p.sysctl {
        if !valid_sysctl_name(k) {
            return Err((k.clone(), format!("{k:?} is not a sysctl name")));
        }
        if v.trim().is_empty() || v.chars().any(|c| c.is_control() && c != '\t') {
            return Err((k.clone(), format!("{k}: bad value {v:?}")));
        }
        let last = k.rsplit(['.', '/']).next().unwrap_or("");
        if let Some((_, n, what)) = ORDERED_SYSCTLS.iter().find(|(s, _, _)| *s == last) {
            let nums: Vec<u64> = v
                .split_whitespace()
                .map(str::parse::<u64>)
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    (
                        k.clone(),
                        format!("{k} = {v:?}: want {n} whole numbers ({what})"),
                    )
                })?;
            if nums.len() != *n {
                return Err((
                    k.clone(),
                    format!("{k} = {v:?}: want {n} numbers ({what}), not {}", nums.len()),
                ));
            }
            if nums.windows(2).any(|w| w[0] > w[1]) {
                return Err((
                    k.clone(),
                    format!("{k} = {v:?}: the numbers ({what}) must not decrease"),
                ));
            }
        }
    }
    let l = &p.link;
    for (map, kind) in [(&l.features, "feature"), (&l.private_flags, "private flag")] {
        for (k, v) in map {
            if v != "on" && v != "off" {
                return Err((
                    k.clone(),
                    format!("{kind} {k} = {v:?}: use \"on\" or \"off\""),
                ));
            }
        }
    }
    if let Some(m) = l.mtu
        && !(68..=65535).contains(&m)
    {
        return Err(("mtu".into(), format!("mtu = {m}: use 68 to 65535")));
    }
    for (k, v) in [
        ("gso_max_size", l.gso_max_size),
        ("gro_max_size", l.gro_max_size),
        ("gso_ipv4_max_size", l.gso_ipv4_max_size),
        ("gro_ipv4_max_size", l.gro_ipv4_max_size),
    ] {
        if let Some(v) = v
            && !(1..=524_288).contains(&v)
        {
            return Err((
                k.into(),
                format!("{k} = {v}: use 1 to 524288 (the kernel's limit)"),
            ));
        }
    }
    if l.rx_ring == Some(0) {
        return Err(("rx_ring".into(), "rx_ring = 0: a ring needs entries".into()));
    }
    Ok(())
}

/// Parses a profile; errors name the line.
pub fn parse(name: &str, text: &str) -> Result<Profile, HostError> {
    let at_line = |line: Option<usize>, msg: &str| {
        HostError::State(format!(
            "profile {name}{}: {msg}",
            line.map(|l| format!(" line {l}")).unwrap_or_default(),
        ))
    };
    let p: Profile = toml::from_str(text)
        .map_err(|e| at_line(e.span().map(|s| line_at(text, s.start)), e.message()))?;
    check(&p).map_err(|(key, msg)| at_line(line_of_key(text, &key), &msg))?;
    Ok(p)
}

/// A built-in profile by name, or a profile file by path.
pub fn load(name_or_path: &str) -> Result<Profile, HostError> {
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return parse(name_or_path, text);
    }
    if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
        let text = crate::fsroot::read_text_file(name_or_path)
            .map_err(|e| HostError::file(name_or_path, e))?;
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

    #[test]
    fn an_error_at_the_start_of_a_line_names_that_line() {
        // The span of an unknown key starts the line: not the line above.
        let e = parse("x", "description = \"d\"\ncolour = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("colour"), "{e}");
        let e = parse(
            "x",
            "description = \"d\"\n[link]\nmtu = 1500\nmtuu = 9000\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 4") && e.contains("mtuu"), "{e}");
    }

    #[test]
    fn bad_values_are_refused_at_load_with_their_line() {
        for (text, line, needle) in [
            (
                "description = \"d\"\n[sysctl]\n\"net.ipv4.tcp_rmem\" = \"9000000 131072 4096\"\n",
                3,
                "must not decrease",
            ),
            (
                "[sysctl]\n\"net.ipv4.tcp_slow_start_after_idle\" = \"0\"\n\"net.ipv4.tcp_wmem\" = \"4096 16384\"\n",
                3,
                "want 3 numbers",
            ),
            (
                "[sysctl]\n\"net.ipv4.tcp_rmem\" = \"4096 lots 8388608\"\n",
                2,
                "whole numbers",
            ),
            (
                "[link]\nmtu = 9000\n[link.features]\n\"rx-gro\" = \"maybe\"\n",
                4,
                "\"on\" or \"off\"",
            ),
            (
                "[link.private_flags]\nfoo = \"yes\"\n",
                2,
                "\"on\" or \"off\"",
            ),
            ("[sysctl]\n\"net..x\" = \"1\"\n", 2, "not a sysctl name"),
            ("[link]\nmtu = 10\n", 2, "68 to 65535"),
        ] {
            let e = parse("x", text).unwrap_err().to_string();
            assert!(
                e.contains(&format!("line {line}:")) && e.contains(needle),
                "{text}: {e}"
            );
        }
        // Good shapes still load.
        parse(
            "x",
            "[sysctl]\n\"net.ipv4.tcp_rmem\" = \"4096 131072 131072\"\n\"net.ipv4.ip_local_port_range\" = \"1024 65000\"\n[link.features]\n\"rx-gro\" = \"off\"\n",
        )
        .unwrap();
    }
}
