//! Pod sysctls the Kubernetes way: a profile's sysctls go into the pod's
//! `securityContext.sysctls` (no privileged init step), and only those
//! every chosen node will accept. A sysctl is set in a pod when the
//! kernel keeps it per network namespace on that node's release and the
//! kubelet admits it: the kubelet's built-in safe list, or its
//! `--allowed-unsafe-sysctls` (read from the kubelet's `/configz` through
//! the API server). Anything else would make the kubelet refuse the pod
//! (SysctlForbidden) or the runtime fail it, over and over: it is left
//! out and named with the reason. Host-network pods take none.

use crate::nodes::NodeInfo;
use kube::Client;
use serde::Serialize;
use std::collections::BTreeMap;
use wirespeed_host::sysctl_scope::{netns_sysctl_refusal, netns_sysctl_refusal_on};

/// The kubelet's safe sysctls (Kubernetes 1.34,
/// pkg/kubelet/sysctl/safe_sysctls.go) with the first kernel on which the
/// kubelet counts each as safe.
pub const KUBELET_SAFE: &[(&str, Option<(u32, u32)>)] = &[
    ("kernel.shm_rmid_forced", None),
    ("net.ipv4.ip_local_port_range", None),
    ("net.ipv4.tcp_syncookies", None),
    ("net.ipv4.ping_group_range", None),
    ("net.ipv4.ip_unprivileged_port_start", None),
    ("net.ipv4.ip_local_reserved_ports", Some((3, 16))),
    ("net.ipv4.tcp_keepalive_time", Some((4, 5))),
    ("net.ipv4.tcp_fin_timeout", Some((4, 6))),
    ("net.ipv4.tcp_keepalive_intvl", Some((4, 5))),
    ("net.ipv4.tcp_keepalive_probes", Some((4, 5))),
    ("net.ipv4.tcp_rmem", Some((4, 15))),
    ("net.ipv4.tcp_wmem", Some((4, 15))),
];

/// Whether the kubelet counts `key` as safe on a kernel of `release`
/// (unknown release: only the sysctls safe on every kernel).
pub fn kubelet_safe(key: &str, release: &str) -> bool {
    let v = wirespeed_host::inspect::kernel_version(release);
    KUBELET_SAFE
        .iter()
        .any(|(k, since)| *k == key && since.is_none_or(|s| v.is_some_and(|v| v >= s)))
}

/// Whether a kubelet `allowedUnsafeSysctls` list admits `key` (entries
/// are names or prefixes ending in `*`, as the kubelet reads them).
pub fn allow_listed(list: &[String], key: &str) -> bool {
    list.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => p == key,
    })
}

/// Why a kubelet's `/configz` could not be read; printed inside the
/// sysctl's reason, each cause once.
#[derive(Debug, thiserror::Error)]
pub enum ConfigzError {
    /// The request could not be made (a node name no URL can hold).
    #[error("{0}")]
    Request(http::Error),
    /// The API server (or the kubelet behind it) gave no answer in time.
    #[error("no answer in {0} s")]
    NoAnswer(u64),
    /// The API server refused or failed the request (RBAC: `get` on
    /// `nodes/proxy`).
    #[error("{0}")]
    Api(kube::Error),
    /// The answer is not JSON.
    #[error("unreadable /configz: {0}")]
    Unreadable(serde_json::Error),
    /// The answer has no `kubeletconfig`.
    #[error("/configz has no kubeletconfig")]
    NoKubeletConfig,
}

/// What one node will do with the pod sysctls.
#[derive(Debug)]
pub struct NodeSysctls {
    /// The node.
    pub node: String,
    /// Its kernel release.
    pub kernel: String,
    /// Its kubelet's `allowedUnsafeSysctls`, or why it could not be read.
    pub allowed_unsafe: Result<Vec<String>, ConfigzError>,
}

/// A sysctl left out of the pods, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// Its name.
    pub key: String,
    /// The profile's value.
    pub value: String,
    /// Why it is not set in the pods.
    pub reason: String,
}

/// Which of a profile's sysctls the pods get.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SysctlPlan {
    /// Set in every pod-network pod's `securityContext.sysctls`.
    pub apply: BTreeMap<String, String>,
    /// Of those, the ones outside the kubelet's safe list (offline: the
    /// kubelets must allow them with `--allowed-unsafe-sysctls`).
    pub unsafe_allowed: Vec<String>,
    /// Left out, with the reason.
    pub skipped: Vec<Skipped>,
}

impl SysctlPlan {
    /// One line per sysctl: set, or left out and why.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .apply
            .iter()
            .map(|(k, v)| {
                let how = if self.unsafe_allowed.contains(k) {
                    "unsafe sysctl, admitted by the kubelet's --allowed-unsafe-sysctls"
                } else {
                    "safe sysctl"
                };
                format!("sysctl {k}={v}: set in the pods ({how})")
            })
            .collect();
        out.extend(
            self.skipped
                .iter()
                .map(|s| format!("sysctl {}={}: not set: {}", s.key, s.value, s.reason)),
        );
        out
    }
}

/// Why `key` cannot be set in a pod on `n`; None when it can.
fn refusal_on(key: &str, n: &NodeSysctls) -> Option<String> {
    if let Some(why) = netns_sysctl_refusal_on(key, &n.kernel) {
        return Some(format!("on node {}: {why}", n.node));
    }
    if kubelet_safe(key, &n.kernel) {
        return None;
    }
    match &n.allowed_unsafe {
        Ok(list) if allow_listed(list, key) => None,
        Ok(_) => Some(format!(
            "the kubelet of node {} does not allow it: start it with --allowed-unsafe-sysctls={key} (or allowedUnsafeSysctls in its config)",
            n.node
        )),
        Err(why) => Some(format!(
            "it is not a safe sysctl and the kubelet config of node {} could not be read ({why}), so it may refuse the pod",
            n.node
        )),
    }
}

/// Why Pod Security level `level` (the namespace's `enforce` label)
/// refuses a pod with the unsafe sysctl `key`: `baseline` and
/// `restricted` admit only the safe ones.
fn admission_refusal(key: &str, level: &str) -> Option<String> {
    matches!(level, "baseline" | "restricted").then(|| {
        format!(
            "the namespace enforces Pod Security `{level}`, which admits only the kubelet's safe sysctls and {key} is not one (a namespace wirespeed makes with --privileged-namespace admits it)"
        )
    })
}

/// The sysctls of `wanted` every node of `nodes` accepts in a pod of a
/// namespace that enforces Pod Security `level`.
pub fn plan(wanted: &BTreeMap<String, String>, nodes: &[NodeSysctls], level: &str) -> SysctlPlan {
    let mut p = SysctlPlan::default();
    for (k, v) in wanted {
        let safe_everywhere = nodes.iter().all(|n| kubelet_safe(k, &n.kernel));
        let admission = (!safe_everywhere)
            .then(|| admission_refusal(k, level))
            .flatten();
        let kernel = nodes.iter().find_map(|n| {
            netns_sysctl_refusal_on(k, &n.kernel).map(|w| format!("on node {}: {w}", n.node))
        });
        let refusal = kernel
            .or(admission)
            .or_else(|| nodes.iter().find_map(|n| refusal_on(k, n)));
        match refusal {
            Some(reason) => p.skipped.push(Skipped {
                key: k.clone(),
                value: v.clone(),
                reason,
            }),
            None => {
                if !safe_everywhere {
                    p.unsafe_allowed.push(k.clone());
                }
                p.apply.insert(k.clone(), v.clone());
            }
        }
    }
    p
}

/// [`plan`] without a cluster (`k8s manifests`): every sysctl a network
/// namespace can have goes in; those outside the kubelet's safe list are
/// named as needing its allow-list; host-wide ones are left out.
pub fn plan_offline(wanted: &BTreeMap<String, String>) -> SysctlPlan {
    let mut p = SysctlPlan::default();
    for (k, v) in wanted {
        if let Some(why) = netns_sysctl_refusal(k) {
            p.skipped.push(Skipped {
                key: k.clone(),
                value: v.clone(),
                reason: why,
            });
            continue;
        }
        if !KUBELET_SAFE.iter().any(|(s, _)| s == k) {
            p.unsafe_allowed.push(k.clone());
        }
        p.apply.insert(k.clone(), v.clone());
    }
    p
}

/// Reads the kubelet's `allowedUnsafeSysctls` of `node` from its
/// `/configz` through the API server (RBAC: `get` on `nodes/proxy`).
async fn kubelet_allowed(client: &Client, node: &str) -> Result<Vec<String>, ConfigzError> {
    const WAIT_S: u64 = 10;
    let req = http::Request::get(format!("/api/v1/nodes/{node}/proxy/configz"))
        .body(Vec::new())
        .map_err(ConfigzError::Request)?;
    let wait = std::time::Duration::from_secs(WAIT_S);
    let text = tokio::time::timeout(wait, client.request_text(req))
        .await
        .map_err(|_| ConfigzError::NoAnswer(WAIT_S))?
        .map_err(ConfigzError::Api)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(ConfigzError::Unreadable)?;
    let cfg = v
        .get("kubeletconfig")
        .ok_or(ConfigzError::NoKubeletConfig)?;
    Ok(cfg
        .get("allowedUnsafeSysctls")
        .and_then(|l| l.as_array())
        .map(|l| {
            l.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default())
}

/// What each of `nodes` accepts: its kernel and its kubelet's allow-list
/// (16 nodes asked at a time).
pub async fn read_nodes(client: &Client, nodes: &[NodeInfo]) -> Vec<NodeSysctls> {
    let mut out = Vec::with_capacity(nodes.len());
    for chunk in nodes.chunks(16) {
        let mut set = tokio::task::JoinSet::new();
        for (i, n) in chunk.iter().enumerate() {
            let (client, name) = (client.clone(), n.name.clone());
            set.spawn(async move { (i, kubelet_allowed(&client, &name).await) });
        }
        let mut got: Vec<(usize, Result<Vec<String>, ConfigzError>)> = set.join_all().await;
        got.sort_by_key(|(i, _)| *i);
        out.extend(got.into_iter().map(|(i, allowed_unsafe)| NodeSysctls {
            node: chunk[i].name.clone(),
            kernel: chunk[i].kernel.clone(),
            allowed_unsafe,
        }));
    }
    out
}

/// The sysctls of `keys` in force in one pod, read back from its agent.
#[derive(Debug, Clone, Serialize)]
pub struct InForce {
    /// The pod.
    pub pod: String,
    /// Its node.
    pub node: String,
    /// Its network mode.
    pub network: String,
    /// Each sysctl's value as the agent read it in the pod (None: not
    /// read, or the agent could not be asked).
    pub values: BTreeMap<String, Option<String>>,
    /// Why nothing could be read, if so.
    pub error: Option<String>,
}

/// The pod sysctls of a run: what was planned and what each pod had.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SysctlReport {
    /// The plan.
    pub plan: SysctlPlan,
    /// Read back from every pod-network agent.
    pub in_force: Vec<InForce>,
}

impl SysctlReport {
    /// Pods where a planned sysctl is not in force (value differs after
    /// whitespace is normalised, or could not be read).
    pub fn mismatches(&self) -> Vec<String> {
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut out = Vec::new();
        for p in &self.in_force {
            for (k, want) in &self.plan.apply {
                let got = p.values.get(k).cloned().flatten();
                if got.as_deref().map(norm) != Some(norm(want)) {
                    out.push(format!(
                        "{k} in pod {} on {}: wanted {want:?}, read {}",
                        p.pod,
                        p.node,
                        got.map_or("nothing".into(), |g| format!("{g:?}"))
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(kernel: &str, allowed: Result<Vec<String>, ConfigzError>) -> NodeSysctls {
        NodeSysctls {
            node: "n1".into(),
            kernel: kernel.into(),
            allowed_unsafe: allowed,
        }
    }

    fn wanted(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn safe_ones_go_in_host_wide_and_unlisted_ones_stay_out() {
        let w = wanted(&[
            ("net.ipv4.tcp_rmem", "4096 131072 8388608"),
            ("net.core.rmem_max", "8388608"),
            ("net.ipv4.tcp_slow_start_after_idle", "0"),
        ]);
        let p = plan(&w, &[node("6.18.4", Ok(vec![]))], "privileged");
        assert_eq!(p.apply.keys().collect::<Vec<_>>(), ["net.ipv4.tcp_rmem"]);
        assert!(p.unsafe_allowed.is_empty());
        let why = |k: &str| {
            p.skipped
                .iter()
                .find(|s| s.key == k)
                .unwrap()
                .reason
                .clone()
        };
        assert!(why("net.core.rmem_max").contains("host-wide"));
        assert!(why("net.ipv4.tcp_slow_start_after_idle").contains("--allowed-unsafe-sysctls"));
        assert_eq!(p.lines().len(), 3);
    }

    #[test]
    fn the_allow_list_admits_by_name_or_prefix_and_the_kernel_still_decides() {
        let w = wanted(&[
            ("net.ipv4.tcp_slow_start_after_idle", "0"),
            ("net.core.optmem_max", "131072"),
        ]);
        let list: Vec<String> = vec!["net.ipv4.tcp_*".into(), "net.core.optmem_max".into()];
        let p = plan(&w, &[node("6.18.4", Ok(list.clone()))], "privileged");
        let restricted = plan(&w, &[node("6.18.4", Ok(list.clone()))], "restricted");
        assert!(restricted.apply.is_empty());
        assert!(
            restricted.skipped[0]
                .reason
                .contains("Pod Security `restricted`")
        );
        assert_eq!(p.apply.len(), 2);
        assert_eq!(p.unsafe_allowed.len(), 2);
        let old = plan(&w, &[node("6.1.0-13-amd64", Ok(list))], "");
        assert_eq!(old.apply.len(), 1);
        assert!(old.skipped[0].reason.contains("6.8"), "{:?}", old.skipped);
    }

    #[test]
    fn an_unreadable_kubelet_config_admits_only_safe_sysctls() {
        let w = wanted(&[
            ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
            ("net.ipv4.tcp_no_metrics_save", "1"),
        ]);
        let unread = Err(ConfigzError::NoKubeletConfig);
        let p = plan(&w, &[node("6.18.4", unread)], "privileged");
        assert_eq!(p.apply.keys().collect::<Vec<_>>(), ["net.ipv4.tcp_wmem"]);
        let why = &p.skipped[0].reason;
        assert!(
            why.contains("could not be read (/configz has no kubeletconfig)"),
            "{why}"
        );
        // tcp_rmem is safe only from 4.15: an unreadable release is too old.
        assert!(!kubelet_safe("net.ipv4.tcp_rmem", "?"));
        assert!(kubelet_safe("net.ipv4.ip_local_port_range", "?"));
    }

    #[test]
    fn offline_every_namespaced_sysctl_goes_in_and_the_unsafe_are_named() {
        let w = wanted(&[
            ("net.ipv4.tcp_rmem", "4096 131072 8388608"),
            ("net.ipv4.tcp_rto_min_us", "5000"),
            ("net.core.wmem_max", "8388608"),
        ]);
        let p = plan_offline(&w);
        assert_eq!(p.apply.len(), 2);
        assert_eq!(p.unsafe_allowed, ["net.ipv4.tcp_rto_min_us"]);
        assert_eq!(p.skipped[0].key, "net.core.wmem_max");
    }

    #[test]
    fn mismatches_compare_values_and_name_unread_ones() {
        let mut r = SysctlReport {
            plan: plan_offline(&wanted(&[("net.ipv4.tcp_rmem", "4096  131072 8388608")])),
            in_force: vec![InForce {
                pod: "p".into(),
                node: "n".into(),
                network: "pod".into(),
                values: [(
                    "net.ipv4.tcp_rmem".to_string(),
                    Some("4096\t131072\t8388608".to_string()),
                )]
                .into(),
                error: None,
            }],
        };
        assert!(r.mismatches().is_empty());
        r.in_force[0].values.clear();
        assert!(r.mismatches()[0].contains("read nothing"));
    }
}
