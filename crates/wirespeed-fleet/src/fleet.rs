//! A fleet: the agents a run may test, with their addresses and NICs.
//! Read from a TOML file ([`Fleet::load`]) or built in code (the
//! Kubernetes runner builds one from the pods it finds).
//!
//! ```toml
//! [[agent]]
//! name = "a"                      # 1-63 of a-z A-Z 0-9 . _ -
//! agent_name = "host-a"           # optional: the agent's --name, when not `name`
//! control = "10.0.0.1:5300"       # the agent's engine server (tests connect here)
//! http = "10.0.0.1:5380"          # the agent's HTTP API
//! labels = { zone = "z1" }        # optional
//! [[agent.nic]]
//! name = "eth0"
//! address = "10.71.0.1"
//! ```

use crate::error::{FleetError, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

/// Most agents one fleet may hold.
pub const MAX_AGENTS: usize = 10_000;
/// Most NICs one agent may list.
pub const MAX_NICS: usize = 64;
/// Largest fleet file read, bytes.
pub const MAX_FILE: u64 = 8 << 20;

/// The agents of a fleet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fleet {
    /// The agents, in file order (the planner's order).
    #[serde(default, rename = "agent")]
    pub agents: Vec<AgentSpec>,
}

/// One agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Its name, unique in the fleet.
    pub name: String,
    /// The name the agent runs as (its `--name`) when the fleet calls it
    /// otherwise; requests are signed for it ([`AgentSpec::signs_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// Its engine server's control address, `HOST:PORT`.
    pub control: String,
    /// Its HTTP API's address, `HOST:PORT`.
    pub http: String,
    /// The NICs to test, in order; the n-th NIC of one agent is tested
    /// against the n-th NIC of another.
    #[serde(default, rename = "nic")]
    pub nics: Vec<NicSpec>,
    /// Free-form labels (zone, rack, node pool, network mode).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// One NIC of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicSpec {
    /// Its name (the interface name on the host, or a role such as `data0`).
    pub name: String,
    /// The address tests use on it.
    pub address: IpAddr,
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Why an endpoint is not `HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// No `:PORT`.
    #[error("{0:?} is not HOST:PORT")]
    NoPort(String),
    /// The port is not 1-65535.
    #[error("{0:?} has no valid port (1-65535)")]
    Port(String),
    /// The host is not a name or address.
    #[error("{endpoint:?}: {host:?} is not a host name or address")]
    Host {
        /// The endpoint.
        endpoint: String,
        /// Its host part.
        host: String,
    },
}

/// Checks `HOST:PORT` (a name or an address, IPv6 in brackets).
fn check_endpoint(s: &str) -> std::result::Result<(), EndpointError> {
    if s.parse::<SocketAddr>().is_ok() {
        return Ok(());
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(EndpointError::NoPort(s.to_string()));
    };
    if port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(EndpointError::Port(s.to_string()));
    }
    if host.is_empty()
        || host.len() > 253
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
    {
        return Err(EndpointError::Host {
            endpoint: s.to_string(),
            host: host.to_string(),
        });
    }
    Ok(())
}

impl Fleet {
    /// Parses and checks a fleet file's text.
    pub fn parse_str(text: &str) -> Result<Fleet> {
        let fleet: Fleet = toml::from_str(text).map_err(|error| FleetError::FleetFile {
            file: None,
            error: Box::new(error),
        })?;
        fleet.validate()?;
        Ok(fleet)
    }

    /// Reads, parses and checks a fleet file.
    pub fn load(path: &Path) -> Result<Fleet> {
        use std::io::Read;
        let p = path.display();
        let f = std::fs::File::open(path)
            .map_err(|e| FleetError::io(format!("open fleet file {p}"), e))?;
        let mut text = String::new();
        f.take(MAX_FILE + 1)
            .read_to_string(&mut text)
            .map_err(|e| FleetError::io(format!("read fleet file {p}"), e))?;
        if text.len() as u64 > MAX_FILE {
            return Err(FleetError::Fleet(format!(
                "{p} is larger than {MAX_FILE} bytes"
            )));
        }
        Fleet::parse_str(&text).map_err(|e| match e {
            FleetError::Fleet(m) => FleetError::Fleet(format!("{p}: {m}")),
            FleetError::FleetFile { file: None, error } => FleetError::FleetFile {
                file: Some(p.to_string()),
                error,
            },
            e => e,
        })
    }

    /// Checks names (unique, well-formed), addresses and sizes.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(FleetError::Fleet(m));
        if self.agents.is_empty() {
            return bad("no [[agent]]".into());
        }
        if self.agents.len() > MAX_AGENTS {
            return bad(format!(
                "{} agents; at most {MAX_AGENTS}",
                self.agents.len()
            ));
        }
        let mut names = BTreeSet::new();
        for (i, a) in self.agents.iter().enumerate() {
            let at = format!("[[agent]] #{} ({:?})", i + 1, a.name);
            if !valid_name(&a.name) {
                return bad(format!("{at}: name must be 1-63 of a-z A-Z 0-9 . _ -"));
            }
            if !names.insert(a.name.as_str()) {
                return bad(format!("{at}: the name is used twice"));
            }
            if let Some(n) = &a.agent_name
                && (n.is_empty()
                    || n.len() > 253
                    || !n
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)))
            {
                return bad(format!(
                    "{at} field `agent_name`: must be 1-253 of a-z A-Z 0-9 . _ -"
                ));
            }
            for (field, v) in [("control", &a.control), ("http", &a.http)] {
                if let Err(m) = check_endpoint(v) {
                    return bad(format!("{at} field `{field}`: {m}"));
                }
            }
            if a.nics.len() > MAX_NICS {
                return bad(format!("{at}: {} NICs; at most {MAX_NICS}", a.nics.len()));
            }
            let mut nics = BTreeSet::new();
            for n in &a.nics {
                if !valid_name(&n.name) {
                    return bad(format!(
                        "{at}: NIC name {:?} must be 1-63 of a-z A-Z 0-9 . _ -",
                        n.name
                    ));
                }
                if !nics.insert(n.name.as_str()) {
                    return bad(format!("{at}: NIC {:?} is listed twice", n.name));
                }
            }
            for (k, v) in &a.labels {
                if k.len() > 63 || v.len() > 253 {
                    return bad(format!("{at}: label {k:?} is too long"));
                }
            }
        }
        Ok(())
    }

    /// The agent named `name`.
    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// A fleet of `n` made-up agents (for planning figures; nothing answers).
    pub fn synthetic(n: usize) -> Fleet {
        Fleet {
            agents: (0..n)
                .map(|i| {
                    let ip = IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
                    AgentSpec {
                        name: format!("node{i:05}"),
                        agent_name: None,
                        control: format!("{ip}:5300"),
                        http: format!("{ip}:5380"),
                        nics: vec![NicSpec {
                            name: "eth0".into(),
                            address: ip,
                        }],
                        labels: BTreeMap::new(),
                    }
                })
                .collect(),
        }
    }
}

impl AgentSpec {
    /// The name requests to this agent are signed for: `agent_name`, else
    /// `name` (which is then the agent's `--name`).
    pub fn signs_for(&self) -> &str {
        self.agent_name.as_deref().unwrap_or(&self.name)
    }

    /// The NIC pairs a test from `self` to `server` runs over: the n-th
    /// NIC of each, as far as both have one; when either lists none, one
    /// pair of no NIC (the control address's host carries the test).
    pub fn nic_pairs<'a>(
        &'a self,
        server: &'a AgentSpec,
    ) -> Vec<(Option<&'a NicSpec>, Option<&'a NicSpec>)> {
        if self.nics.is_empty() || server.nics.is_empty() {
            return vec![(None, None)];
        }
        self.nics
            .iter()
            .zip(&server.nics)
            .map(|(a, b)| (Some(a), Some(b)))
            .collect()
    }

    /// Whether `addr` is one of this agent's addresses (a NIC's, or the
    /// control or HTTP address's host).
    pub fn owns(&self, addr: &str) -> bool {
        let host = |ep: &str| -> String {
            ep.parse::<SocketAddr>()
                .map(|s| s.ip().to_string())
                .unwrap_or_else(|_| ep.rsplit_once(':').map_or(ep, |(h, _)| h).to_string())
        };
        let want = addr.trim_start_matches('[').trim_end_matches(']');
        let parsed = want.parse::<IpAddr>().ok();
        self.nics.iter().any(|n| Some(n.address) == parsed)
            || host(&self.control) == want
            || host(&self.http) == want
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[agent]]
name = "a"
control = "10.0.0.1:5300"
http = "10.0.0.1:5380"
labels = { zone = "z1" }
[[agent.nic]]
name = "eth0"
address = "10.71.0.1"
[[agent.nic]]
name = "eth1"
address = "fd00::1"

[[agent]]
name = "b"
control = "node-b.example:5300"
http = "[fd00::2]:5380"
"#;

    #[test]
    fn a_fleet_file_parses_with_nics_and_labels() {
        let f = Fleet::parse_str(GOOD).unwrap();
        assert_eq!(f.agents.len(), 2);
        assert_eq!(
            f.agents[0].nics[1].address,
            "fd00::1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(f.agents[0].labels["zone"], "z1");
        assert!(f.agents[0].owns("10.71.0.1"));
        assert!(f.agents[0].owns("[fd00::1]"));
        assert!(!f.agents[0].owns("10.71.0.2"));
        assert!(f.agents[1].owns("node-b.example"));
        assert_eq!(f.agents[0].nic_pairs(&f.agents[1]).len(), 1);
    }

    #[test]
    fn bad_fleet_files_say_what_is_wrong() {
        for (text, want) in [
            ("", "no [[agent]]"),
            (
                "[[agent]]\nname = \"a\"\ncontrol = \"x\"\nhttp = \"1.2.3.4:1\"\n",
                "not HOST:PORT",
            ),
            (
                "[[agent]]\nname = \"a b\"\ncontrol = \"h:1\"\nhttp = \"h:2\"\n",
                "name must be",
            ),
            (
                "[[agent]]\nname = \"a\"\ncontrol = \"h:0\"\nhttp = \"h:2\"\n",
                "no valid port",
            ),
            (
                "[[agent]]\nname = \"a\"\ncontrol = \"h:1\"\nhttp = \"h:2\"\n[[agent]]\nname = \"a\"\ncontrol = \"h:1\"\nhttp = \"h:2\"\n",
                "used twice",
            ),
            (
                "[[agent]]\nname = \"a\"\ncontrol = \"h:1\"\nhttp = \"h:2\"\ncolour = 1\n",
                "unknown field",
            ),
            (
                "[[agent]]\nname = \"a\"\ncontrol = \"h:1\"\nhttp = \"h:2\"\n[[agent.nic]]\nname = \"e\"\naddress = \"10.0.0.300\"\n",
                "address",
            ),
        ] {
            let e = Fleet::parse_str(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
