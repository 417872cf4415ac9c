//! The paths a run measures, each a labelled dimension of every result:
//! pod to pod on one node and across nodes or zones, pod to a ClusterIP
//! Service (through kube-proxy) whose endpoint is on the same or another
//! node, a pod to its own Service (hairpin), the host network, and
//! DraNet's claimed NICs. [`plan`] turns the chosen nodes and the node
//! pairs (from a pattern or a pairs file) into the tests of each path.

use crate::K8sError;
use crate::manifests::Network;
use crate::nodes::NodeInfo;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One path through a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathKind {
    /// hostNetwork agents on two nodes: the baseline.
    Host,
    /// Two pods on one node (the node's bridge or veth, no wire).
    SameNode,
    /// Pods on two nodes of one zone (or nodes without zone labels).
    CrossNode,
    /// Pods on nodes in different zones.
    CrossZone,
    /// A pod to a ClusterIP Service whose endpoint is a pod on its node.
    ServiceSameNode,
    /// A pod to a ClusterIP Service whose endpoint is on another node.
    ServiceCrossNode,
    /// A pod to its own Service (the CNI must hairpin).
    Hairpin,
    /// Pods on two nodes over the NICs DraNet claimed for them.
    Dra,
}

impl PathKind {
    /// Every path, in report order (host first: the baseline).
    pub const ALL: [PathKind; 8] = [
        PathKind::Host,
        PathKind::SameNode,
        PathKind::CrossNode,
        PathKind::CrossZone,
        PathKind::ServiceSameNode,
        PathKind::ServiceCrossNode,
        PathKind::Hairpin,
        PathKind::Dra,
    ];

    /// Its name on the command line and in results.
    pub fn as_str(self) -> &'static str {
        match self {
            PathKind::Host => "host",
            PathKind::SameNode => "same-node",
            PathKind::CrossNode => "cross-node",
            PathKind::CrossZone => "cross-zone",
            PathKind::ServiceSameNode => "service-same-node",
            PathKind::ServiceCrossNode => "service-cross-node",
            PathKind::Hairpin => "hairpin",
            PathKind::Dra => "dra",
        }
    }

    /// The agents the client side runs in.
    pub fn network(self) -> Network {
        match self {
            PathKind::Host => Network::Host,
            PathKind::Dra => Network::Dra,
            _ => Network::Pod,
        }
    }

    /// Whether the server is a second pod on the client's node.
    pub fn needs_peer(self) -> bool {
        matches!(self, PathKind::SameNode | PathKind::ServiceSameNode)
    }

    /// Whether the server is reached through a ClusterIP Service.
    pub fn through_service(self) -> bool {
        matches!(
            self,
            PathKind::ServiceSameNode | PathKind::ServiceCrossNode | PathKind::Hairpin
        )
    }

    /// Whether client and server are on one node.
    pub fn one_node(self) -> bool {
        matches!(
            self,
            PathKind::SameNode | PathKind::ServiceSameNode | PathKind::Hairpin
        )
    }

    /// Parses `same-node,cross-node,service,host`: `service` is both
    /// service paths, `pod` is cross-node (the old `--network pod`);
    /// each path at most once, in the order given.
    pub fn parse_list(s: &str) -> Result<Vec<PathKind>, K8sError> {
        let mut out: Vec<PathKind> = Vec::new();
        for part in s.split(',').map(str::trim) {
            let add: Vec<PathKind> = match part {
                "service" => vec![PathKind::ServiceSameNode, PathKind::ServiceCrossNode],
                "pod" => vec![PathKind::CrossNode],
                _ => match PathKind::ALL.iter().find(|p| p.as_str() == part) {
                    Some(p) => vec![*p],
                    None => {
                        return Err(K8sError::Invalid(format!(
                            "--paths: {part:?} is not a path (use {}, or service for both service paths)",
                            PathKind::ALL.map(|p| p.as_str()).join(", ")
                        )));
                    }
                },
            };
            for p in add {
                if out.contains(&p) {
                    return Err(K8sError::Invalid(format!(
                        "--paths: {p} given twice in {s:?}"
                    )));
                }
                out.push(p);
            }
        }
        Ok(out)
    }

    /// The paths that the old `--network` modes measured: across nodes.
    pub fn of_network(n: Network) -> PathKind {
        match n {
            Network::Host => PathKind::Host,
            Network::Dra => PathKind::Dra,
            _ => PathKind::CrossNode,
        }
    }
}

impl fmt::Display for PathKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One test of a path: client node to server node (indices into the
/// chosen nodes; equal for the one-node paths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Link {
    /// The client's node.
    pub client: usize,
    /// The server's node.
    pub server: usize,
}

/// Whether two nodes are in different zones (both labelled, labels
/// differ; regions count too).
fn zones_differ(a: &NodeInfo, b: &NodeInfo) -> bool {
    let differ =
        |x: &Option<String>, y: &Option<String>| matches!((x, y), (Some(x), Some(y)) if x != y);
    differ(&a.zone, &b.zone) || differ(&a.region, &b.region)
}

/// Why a path has no test to run over the chosen nodes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoLinks {
    /// cross-zone, and no pair of the nodes crosses zones.
    #[error(
        "{path}: no pair of the chosen nodes is in different zones ({} labels: {places})",
        crate::nodes::ZONE_LABEL
    )]
    OneZone {
        /// The path.
        path: PathKind,
        /// Each node with its zone (`n1 zone a, n2 no zone label`).
        places: String,
    },
    /// cross-node, and every pair crosses zones.
    #[error(
        "{0}: no pair of the chosen nodes is in one zone (every pair crosses zones: ask for cross-zone)"
    )]
    AllCrossZones(PathKind),
    /// A path between two nodes, and no pair of distinct nodes.
    #[error("{0}: no pair of distinct nodes to test (choose at least 2 nodes)")]
    OneNode(PathKind),
}

/// The tests of `path` over `nodes`, given the node pairs of the pattern
/// or pairs file; Err(why) when the path has none to run.
pub fn plan(path: PathKind, nodes: &[NodeInfo], pairs: &[Link]) -> Result<Vec<Link>, NoLinks> {
    let links: Vec<Link> = if path.one_node() {
        (0..nodes.len())
            .map(|i| Link {
                client: i,
                server: i,
            })
            .collect()
    } else {
        pairs
            .iter()
            .filter(|l| l.client != l.server)
            .filter(|l| match path {
                PathKind::CrossNode => !zones_differ(&nodes[l.client], &nodes[l.server]),
                PathKind::CrossZone => zones_differ(&nodes[l.client], &nodes[l.server]),
                _ => true,
            })
            .copied()
            .collect()
    };
    if !links.is_empty() {
        return Ok(links);
    }
    Err(match path {
        PathKind::CrossZone => NoLinks::OneZone {
            path,
            places: nodes
                .iter()
                .map(|n| format!("{} {}", n.name, n.place()))
                .collect::<Vec<_>>()
                .join(", "),
        },
        PathKind::CrossNode => NoLinks::AllCrossZones(path),
        _ => NoLinks::OneNode(path),
    })
}

/// The pairs of the pattern (`pairs`) that no asked path measures, each
/// with why: a pair across zones when only cross-node was asked, or in
/// one zone when only cross-zone was. Nothing when no path between two
/// nodes was asked (the pairs are then not the point).
pub fn left_out(
    pairs: &[Link],
    planned: &[(PathKind, Vec<Link>)],
    nodes: &[NodeInfo],
) -> Vec<String> {
    if planned.iter().all(|(p, _)| p.one_node()) {
        return Vec::new();
    }
    let measured = |l: &Link| planned.iter().any(|(_, ls)| ls.contains(l));
    // The advice names the whole list to pass: `--paths cross-zone` alone
    // would drop the paths asked.
    let asked: Vec<String> = planned.iter().map(|(p, _)| p.to_string()).collect();
    let asked = asked.join(",");
    let mut out = Vec::new();
    for l in pairs
        .iter()
        .filter(|l| l.client != l.server && !measured(l))
    {
        let (a, b) = (&nodes[l.client], &nodes[l.server]);
        let (how, want) = if zones_differ(a, b) {
            (
                format!("crosses zones ({} -> {})", a.place(), b.place()),
                PathKind::CrossZone,
            )
        } else {
            (
                format!("is in one zone ({})", a.place()),
                PathKind::CrossNode,
            )
        };
        out.push(format!(
            "pair {} -> {} {how} and no path asked for measures it (measure it with --paths {asked},{want})",
            a.name, b.name
        ));
    }
    out
}

/// Splits `links` between `nodes` into rounds in which no host is in two
/// tests (a one-node link occupies its host once): greedy, in order.
/// Nodes on one host ([`NodeInfo::host`]) share its CPUs, so two tests
/// on them at once would measure each other.
pub fn rounds(links: &[Link], nodes: &[NodeInfo]) -> Vec<Vec<Link>> {
    let host = |n: usize| nodes.get(n).map_or("", |x| x.host());
    let mut rounds: Vec<Vec<Link>> = Vec::new();
    for l in links {
        let on = |x: &Link, n: usize| [x.client, x.server].iter().any(|&e| host(e) == host(n));
        let busy = |r: &Vec<Link>, n: usize| r.iter().any(|x| on(x, n));
        match rounds
            .iter_mut()
            .find(|r| !busy(r, l.client) && !busy(r, l.server))
        {
            Some(r) => r.push(*l),
            None => rounds.push(vec![*l]),
        }
    }
    rounds
}

/// Reads a pairs file: one `CLIENT SERVER` (or `CLIENT,SERVER`) node pair
/// per line; `#` starts a comment. Every node must be among `nodes`.
pub fn parse_pairs(text: &str, nodes: &[NodeInfo]) -> Result<Vec<Link>, K8sError> {
    let index = |name: &str, line: usize| {
        nodes.iter().position(|n| n.name == name).ok_or_else(|| {
            K8sError::Invalid(format!(
                "--pairs line {line}: node {name:?} is not among the chosen nodes ({})",
                nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    };
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let parts: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|p| !p.is_empty())
            .collect();
        let [c, s] = parts[..] else {
            return Err(K8sError::Invalid(format!(
                "--pairs line {}: {line:?}: write CLIENT SERVER",
                i + 1
            )));
        };
        out.push(Link {
            client: index(c, i + 1)?,
            server: index(s, i + 1)?,
        });
    }
    if out.is_empty() {
        return Err(K8sError::Invalid("--pairs: the file names no pair".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(zones: &[&str]) -> Vec<NodeInfo> {
        zones
            .iter()
            .enumerate()
            .map(|(i, z)| NodeInfo {
                name: format!("n{i}"),
                zone: (!z.is_empty()).then(|| z.to_string()),
                ready: true,
                ..NodeInfo::default()
            })
            .collect()
    }

    fn all_pairs(n: usize) -> Vec<Link> {
        let mut v = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                v.push(Link {
                    client: a,
                    server: b,
                });
            }
        }
        v
    }

    #[test]
    fn pairs_split_by_zone_and_one_node_paths_take_each_node() {
        let ns = nodes(&["a", "a", "b"]);
        let p = all_pairs(3);
        assert_eq!(
            plan(PathKind::CrossNode, &ns, &p).unwrap(),
            vec![Link {
                client: 0,
                server: 1
            }]
        );
        assert_eq!(plan(PathKind::CrossZone, &ns, &p).unwrap().len(), 2);
        assert_eq!(plan(PathKind::ServiceCrossNode, &ns, &p).unwrap().len(), 3);
        assert_eq!(plan(PathKind::SameNode, &ns, &p).unwrap().len(), 3);
        let unzoned = nodes(&["", ""]);
        let e = plan(PathKind::CrossZone, &unzoned, &all_pairs(2)).unwrap_err();
        assert!(e.to_string().contains("no zone label"), "{e}");
    }

    #[test]
    fn pairs_no_path_measures_are_named_with_the_path_that_would() {
        let ns = nodes(&["a", "a", "b"]);
        let p = all_pairs(3);
        let cross = plan(PathKind::CrossNode, &ns, &p).unwrap();
        let planned = vec![(PathKind::CrossNode, cross)];
        let out = left_out(&p, &planned, &ns);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(
            out.iter().all(|l| l.contains("crosses zones")
                && l.ends_with("(measure it with --paths cross-node,cross-zone)")),
            "{out:?}"
        );
        assert!(
            out.iter()
                .any(|l| l.starts_with("pair n") && l.contains("n2")),
            "{out:?}"
        );
        // The advice followed: nothing is left out.
        let list = out[0].rsplit("--paths ").next().unwrap();
        let followed: Vec<(PathKind, Vec<Link>)> = PathKind::parse_list(list.trim_end_matches(')'))
            .unwrap()
            .into_iter()
            .map(|k| (k, plan(k, &ns, &p).unwrap()))
            .collect();
        assert!(left_out(&p, &followed, &ns).is_empty());
        // Only one-node paths asked: no pair is left out.
        let one = vec![(
            PathKind::SameNode,
            plan(PathKind::SameNode, &ns, &p).unwrap(),
        )];
        assert!(left_out(&p, &one, &ns).is_empty());
    }

    #[test]
    fn rounds_never_put_a_node_in_two_tests() {
        let ls = [
            all_pairs(4),
            (0..4)
                .map(|i| Link {
                    client: i,
                    server: i,
                })
                .collect(),
        ]
        .concat();
        let ns = nodes(&["a", "a", "b", "b"]);
        let rs = rounds(&ls, &ns);
        assert_eq!(rs.iter().map(Vec::len).sum::<usize>(), ls.len());
        assert_eq!(rs[0].len(), 2, "two disjoint pairs at once: {rs:?}");
        for r in &rs {
            let mut seen = std::collections::BTreeSet::new();
            for l in r {
                assert!(seen.insert(l.client), "{r:?}");
                assert!(l.client == l.server || seen.insert(l.server), "{r:?}");
            }
        }
        // Four nodes on one host (one boot id): one test at a time.
        let one: Vec<NodeInfo> = ns
            .into_iter()
            .map(|n| NodeInfo {
                boot_id: "b00t".into(),
                ..n
            })
            .collect();
        let rs = rounds(&ls, &one);
        assert!(rs.iter().all(|r| r.len() == 1), "{rs:?}");
    }

    #[test]
    fn path_lists_and_pairs_files_parse_or_say_why() {
        assert_eq!(
            PathKind::parse_list("same-node,service,host").unwrap(),
            vec![
                PathKind::SameNode,
                PathKind::ServiceSameNode,
                PathKind::ServiceCrossNode,
                PathKind::Host
            ]
        );
        assert!(PathKind::parse_list("host,host").is_err());
        assert!(
            PathKind::parse_list("overlay")
                .unwrap_err()
                .to_string()
                .contains("cross-zone")
        );
        let ns = nodes(&["", "", ""]);
        let l = parse_pairs("# pairs\nn0 n2\nn1,n0\n", &ns).unwrap();
        assert_eq!(
            l,
            vec![
                Link {
                    client: 0,
                    server: 2
                },
                Link {
                    client: 1,
                    server: 0
                }
            ]
        );
        assert!(
            parse_pairs("n0 n9\n", &ns)
                .unwrap_err()
                .to_string()
                .contains("n9")
        );
        assert!(parse_pairs("n0\n", &ns).is_err());
        assert!(parse_pairs("#\n", &ns).is_err());
    }
}
