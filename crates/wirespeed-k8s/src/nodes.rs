//! Which nodes a run tests: the cluster's nodes read once, narrowed by
//! name (`--nodes`), labels (`--node-selector`) and a seeded sample
//! (`--sample N --seed S`), with every node left out named and why (a
//! taint the agents do not tolerate, not Ready, cordoned, not asked for).
//! The agents are then pinned to exactly the chosen nodes (node
//! affinity on `metadata.name`), so they land only where asked.

use crate::K8sError;
use crate::rollout::{blocking_taints, taint_text};
use k8s_openapi::api::core::v1::{Node, Taint, Toleration};
use kube::Client;
use kube::api::{Api, ListParams};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The zone label every cloud sets (`topology.kubernetes.io/zone`).
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The region label (`topology.kubernetes.io/region`).
pub const REGION_LABEL: &str = "topology.kubernetes.io/region";

/// One node as a run sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Its name.
    pub name: String,
    /// `topology.kubernetes.io/zone`, when set.
    pub zone: Option<String>,
    /// `topology.kubernetes.io/region`, when set.
    pub region: Option<String>,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its NoSchedule/NoExecute taints as `K=V:Effect`.
    #[serde(skip)]
    pub taints: Vec<Taint>,
    /// The Ready condition is True.
    pub ready: bool,
    /// Cordoned (`spec.unschedulable`).
    pub unschedulable: bool,
    /// Kernel release (`status.nodeInfo.kernelVersion`), empty if unset.
    #[serde(default)]
    pub kernel: String,
    /// The node's kernel boot id (`status.nodeInfo.bootID`), empty if
    /// unset: nodes with the same one share a host and its CPUs (kind,
    /// nodes in namespaces or nested VMs on one machine).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub boot_id: String,
}

impl NodeInfo {
    /// The run's view of a Node object.
    pub fn of(n: &Node) -> NodeInfo {
        let labels: BTreeMap<String, String> = n.metadata.labels.clone().unwrap_or_default();
        let spec = n.spec.as_ref();
        let info = n.status.as_ref().and_then(|s| s.node_info.as_ref());
        NodeInfo {
            name: n.metadata.name.clone().unwrap_or_default(),
            zone: labels.get(ZONE_LABEL).cloned(),
            region: labels.get(REGION_LABEL).cloned(),
            taints: spec
                .and_then(|s| s.taints.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                .collect(),
            ready: ready_status(n) == "True",
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            kernel: info.map(|i| i.kernel_version.clone()).unwrap_or_default(),
            boot_id: info.map(|i| i.boot_id.clone()).unwrap_or_default(),
            labels,
        }
    }

    /// The host it runs on, as far as the cluster says: its boot id, else
    /// its own name.
    pub fn host(&self) -> &str {
        if self.boot_id.is_empty() {
            &self.name
        } else {
            &self.boot_id
        }
    }

    /// "zone a" / "region r, zone a" / "no zone label", for messages.
    pub fn place(&self) -> String {
        match (&self.region, &self.zone) {
            (Some(r), Some(z)) => format!("region {r}, zone {z}"),
            (None, Some(z)) => format!("zone {z}"),
            _ => "no zone label".into(),
        }
    }
}

/// The status of node `n`'s Ready condition: `True`, `False`, or
/// `Unknown` (also when it has none).
fn ready_status(n: &Node) -> String {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.status.clone())
        .unwrap_or_else(|| "Unknown".into())
}

/// How long a node's kubelet may leave its Lease in `kube-node-lease`
/// unrenewed before the node counts as lost (kubelets renew every 10 s;
/// the node controller waits 40-50 s before it marks the node NotReady).
pub const NODE_LEASE_STALE: i64 = 20;

/// Why node `name` looks lost, or None when it looks alive: its Ready
/// condition is not True, or its kubelet has not renewed its node Lease
/// for [`NODE_LEASE_STALE`] s (seen before the node controller acts).
pub async fn lost(client: &Client, name: &str) -> Option<String> {
    let nodes: Api<Node> = Api::all(client.clone());
    let ready = nodes.get_opt(name).await.ok()?.map(|n| ready_status(&n));
    let Some(ready) = ready else {
        return Some(format!("node {name} is gone from the cluster"));
    };
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "kube-node-lease");
    let age = leases
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.renew_time)
        .map(|t| k8s_openapi::jiff::Timestamp::now().as_second() - t.0.as_second());
    match age {
        Some(a) if a > NODE_LEASE_STALE => Some(format!(
            "node {name} is lost: its kubelet has not renewed its Lease for {a} s (Ready: {ready})"
        )),
        _ if ready != "True" => Some(format!("node {name} is not Ready (Ready: {ready})")),
        _ => None,
    }
}

/// Reads every node (RBAC: `list` on nodes).
pub async fn list(client: &Client) -> Result<Vec<NodeInfo>, K8sError> {
    let api: Api<Node> = Api::all(client.clone());
    let nodes = api
        .list(&ListParams::default())
        .await
        .map_err(|e| K8sError::api("list the nodes", e))?;
    let mut out: Vec<NodeInfo> = nodes.items.iter().map(NodeInfo::of).collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// What the user asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeChoice {
    /// Only these nodes (`--nodes a,b`), in this order.
    pub names: Option<Vec<String>>,
    /// Only nodes with all these labels.
    pub selector: BTreeMap<String, String>,
    /// A seeded sample of this many of the eligible nodes.
    pub sample: Option<usize>,
    /// The sample's seed: the same seed over the same nodes picks the
    /// same sample.
    pub seed: u64,
    /// Tolerate every taint (`--tolerate-all`).
    pub tolerate_all: bool,
    /// The tolerations given (`--toleration`).
    pub tolerations: Vec<Toleration>,
    /// The agents use the host network (the DaemonSet controller then
    /// also tolerates `network-unavailable`).
    pub host_network: bool,
}

/// The nodes chosen, and those left out with the reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Selection {
    /// The nodes to test, in order.
    pub chosen: Vec<NodeInfo>,
    /// (node, why) for every node not chosen.
    pub left_out: Vec<(String, String)>,
}

/// When nodes of `chosen` share a host ([`NodeInfo::host`]), a line
/// naming them: their tests run one at a time.
pub fn shared_host(chosen: &[NodeInfo]) -> Option<String> {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for n in chosen {
        groups.entry(n.host()).or_default().push(&n.name);
    }
    let shared: Vec<String> = groups
        .values()
        .filter(|g| g.len() > 1)
        .map(|g| g.join(", "))
        .collect();
    (!shared.is_empty()).then(|| {
        format!(
            "nodes {} share one kernel (the same boot id) and so its CPUs: their tests run one at a time",
            shared.join("; and ")
        )
    })
}

/// Why agents cannot run on `n` under `c`, if they cannot.
fn refusal(n: &NodeInfo, c: &NodeChoice) -> Option<String> {
    if !n.ready {
        return Some("not Ready".into());
    }
    if let Some((k, v)) = c
        .selector
        .iter()
        .find(|(k, v)| n.labels.get(*k) != Some(*v))
    {
        return Some(format!("no label {k}={v} (--node-selector)"));
    }
    if c.tolerate_all {
        return None;
    }
    let blocking: Vec<String> = blocking_taints(&n.taints, &c.tolerations, c.host_network)
        .into_iter()
        .map(taint_text)
        .collect();
    // Every blocking taint gets its own --toleration: one for the first
    // alone left a node with two taints out again.
    (!blocking.is_empty()).then(|| {
        let flags: Vec<String> = blocking
            .iter()
            .map(|t| format!("--toleration {t}"))
            .collect();
        format!(
            "taint {} not tolerated (add {} or --tolerate-all)",
            blocking.join(", "),
            flags.join(" ")
        )
    })
}

/// Chooses the nodes: those named (each must exist), else all; without
/// those that refuse the agents; then a seeded sample. Errors when a
/// named node does not exist or fewer than `min` nodes remain, naming
/// every node left out and why.
pub fn select(all: &[NodeInfo], c: &NodeChoice, min: usize) -> Result<Selection, K8sError> {
    let mut sel = Selection::default();
    let by_name: BTreeMap<&str, &NodeInfo> = all.iter().map(|n| (n.name.as_str(), n)).collect();
    let candidates: Vec<&NodeInfo> = match &c.names {
        Some(names) => {
            let mut v = Vec::new();
            for name in names {
                let n = by_name.get(name.as_str()).ok_or_else(|| {
                    K8sError::Invalid(format!(
                        "--nodes: no node {name:?} in the cluster (nodes: {})",
                        all.iter()
                            .map(|n| n.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                v.push(*n);
            }
            for n in all.iter().filter(|n| !names.contains(&n.name)) {
                sel.left_out.push((n.name.clone(), "not in --nodes".into()));
            }
            v
        }
        None => all.iter().collect(),
    };
    for n in candidates {
        match refusal(n, c) {
            Some(why) => sel.left_out.push((n.name.clone(), why)),
            None => sel.chosen.push(n.clone()),
        }
    }
    if let Some(k) = c.sample.filter(|k| *k < sel.chosen.len()) {
        let mut order: Vec<(u64, NodeInfo)> = sel
            .chosen
            .drain(..)
            .map(|n| (mix(c.seed ^ fnv(&n.name)), n))
            .collect();
        order.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.name.cmp(&b.1.name)));
        for (i, (_, n)) in order.into_iter().enumerate() {
            if i < k {
                sel.chosen.push(n);
            } else {
                sel.left_out.push((
                    n.name,
                    format!("not in the sample (--sample {k} --seed {})", c.seed),
                ));
            }
        }
        sel.chosen.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if sel.chosen.len() < min {
        let why: Vec<String> = sel
            .left_out
            .iter()
            .map(|(n, w)| format!("{n}: {w}"))
            .collect();
        return Err(K8sError::Invalid(format!(
            "{} node(s) chosen, this run needs at least {min}; left out: {}",
            sel.chosen.len(),
            if why.is_empty() {
                "none".into()
            } else {
                why.join("; ")
            }
        )));
    }
    Ok(sel)
}

/// splitmix64's finaliser: a well-spread 64-bit hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// FNV-1a of a name: a node's place in the sample does not depend on
/// which other nodes exist.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, zone: &str, taint: Option<(&str, &str)>) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            zone: (!zone.is_empty()).then(|| zone.into()),
            ready: true,
            taints: taint
                .map(|(k, e)| Taint {
                    key: k.into(),
                    value: Some("x".into()),
                    effect: e.into(),
                    ..Taint::default()
                })
                .into_iter()
                .collect(),
            ..NodeInfo::default()
        }
    }

    #[test]
    fn a_tainted_node_is_left_out_by_name_unless_tolerated() {
        let all = vec![
            node("a", "z1", None),
            node("b", "z1", None),
            node("c", "z2", Some(("gpu", "NoSchedule"))),
        ];
        let s = select(&all, &NodeChoice::default(), 2).unwrap();
        assert_eq!(s.chosen.len(), 2);
        assert_eq!(s.left_out[0].0, "c");
        assert!(
            s.left_out[0].1.contains("gpu=x:NoSchedule"),
            "{:?}",
            s.left_out
        );
        let all_in = NodeChoice {
            tolerate_all: true,
            ..NodeChoice::default()
        };
        assert_eq!(select(&all, &all_in, 2).unwrap().chosen.len(), 3);
        let one = NodeChoice {
            tolerations: vec![crate::manifests::parse_toleration("gpu=x:NoSchedule").unwrap()],
            ..NodeChoice::default()
        };
        assert_eq!(select(&all, &one, 2).unwrap().chosen.len(), 3);
    }

    /// The values of each `--flag VALUE` the advice `text` names.
    fn advised<'t>(text: &'t str, flag: &str) -> Vec<&'t str> {
        let words: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
            .collect();
        words
            .windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].trim_end_matches([',', ';']))
            .collect()
    }

    #[test]
    fn the_taint_advice_followed_admits_a_node_with_two_taints() {
        let mut c = node("c", "z2", Some(("gpu", "NoSchedule")));
        c.taints.push(Taint {
            key: "busy".into(),
            effect: "NoExecute".into(),
            ..Taint::default()
        });
        let all = vec![node("a", "z1", None), node("b", "z1", None), c];
        let s = select(&all, &NodeChoice::default(), 2).unwrap();
        let why = &s.left_out[0].1;
        let flags = advised(why, "--toleration");
        assert_eq!(flags, ["gpu=x:NoSchedule", "busy:NoExecute"], "{why}");
        let followed = NodeChoice {
            tolerations: flags
                .iter()
                .map(|t| crate::manifests::parse_toleration(t).unwrap())
                .collect(),
            ..NodeChoice::default()
        };
        assert_eq!(select(&all, &followed, 2).unwrap().chosen.len(), 3);
    }

    #[test]
    fn an_unknown_node_is_refused_with_the_names_to_use_instead() {
        let all: Vec<NodeInfo> = (0..3).map(|i| node(&format!("n{i}"), "", None)).collect();
        let named = |names: &[&str]| NodeChoice {
            names: Some(names.iter().map(|n| n.to_string()).collect()),
            ..NodeChoice::default()
        };
        let e = select(&all, &named(&["n1", "nope"]), 2)
            .unwrap_err()
            .to_string();
        let listed = e.split("(nodes: ").nth(1).expect("the nodes listed");
        let names: Vec<&str> = listed.trim_end_matches(')').split(", ").collect();
        assert_eq!(names, ["n0", "n1", "n2"], "{e}");
        assert_eq!(
            select(&all, &named(&names[..2]), 2).unwrap().chosen.len(),
            2
        );
    }

    #[test]
    fn names_must_exist_and_the_sample_is_reproducible() {
        let all: Vec<NodeInfo> = (0..20).map(|i| node(&format!("n{i}"), "", None)).collect();
        let named = NodeChoice {
            names: Some(vec!["n3".into(), "nope".into()]),
            ..NodeChoice::default()
        };
        assert!(
            select(&all, &named, 1)
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
        let c = |seed| NodeChoice {
            sample: Some(5),
            seed,
            ..NodeChoice::default()
        };
        let a = select(&all, &c(7), 2).unwrap();
        assert_eq!(a.chosen.len(), 5);
        assert_eq!(a.left_out.len(), 15);
        assert_eq!(a, select(&all, &c(7), 2).unwrap());
        assert_ne!(a.chosen, select(&all, &c(8), 2).unwrap().chosen);
        let too_few = NodeChoice {
            sample: Some(1),
            ..NodeChoice::default()
        };
        assert!(select(&all, &too_few, 2).is_err());
    }
}
