//! `k8s run --policy-load N,M,...`: what NetworkPolicies cost the paths
//! they select (report 3's question of what enforcing policy costs).
//!
//! Each level adds load policies until N select the agents. Each has the
//! rules a real policy has (an ipBlock, a namespace selector, a pod
//! selector, TCP and UDP ports) and matches none of the run's traffic, so
//! the run's own policy still admits it and every packet the enforcer
//! checks is checked against the load as well.
//!
//! Whether the enforcer has a level in force is seen, not assumed: the
//! run's own policy does not admit agent-to-agent HTTP, and the last
//! policy of each level (the gate, [`GATE`]) does. One agent probes
//! another's HTTP port (`POST /v1/probe`) until it gets in. Enforcers
//! program what the API server sent them in order, so the gate in force
//! means the load before it is too. Before the next level the gate is
//! deleted and the probe waits to be refused again.

use crate::deploy::Deployment;
use crate::error::K8sError;
use crate::manifests::{Object, Options, agent_pods, policy_port};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};
use wirespeed_fleet::Fleet;
use wirespeed_fleet::run::AgentClient;

/// The gate policy's name.
pub const GATE: &str = "wirespeed-load-gate";

/// The most load policies a run applies.
pub const MAX_LOAD: u32 = 5000;

/// Longest wait for an enforcer to put a level in force (or to take the
/// gate out again).
pub const ENFORCE_WAIT: Duration = Duration::from_secs(120);

/// How long one probe waits for its connection.
const PROBE_WAIT: Duration = Duration::from_secs(1);

/// Load policy `i`'s name (1-based).
pub fn load_name(i: u32) -> String {
    format!("wirespeed-load-{i:05}")
}

/// Checks `--policy-load`'s levels: from 0, strictly ascending, at most
/// [`MAX_LOAD`].
pub fn check_levels(levels: &[u32]) -> Result<(), K8sError> {
    let bad = |why: String| Err(K8sError::Invalid(format!("--policy-load {why}")));
    if levels.is_empty() {
        return bad("needs the numbers of policies, e.g. 0,100".into());
    }
    if levels.windows(2).any(|w| w[0] >= w[1]) {
        return bad(format!(
            "{levels:?}: list the numbers in ascending order, each once, e.g. 0,100,1000"
        ));
    }
    if levels[0] != 0 {
        return bad(format!(
            "{levels:?}: start at 0, the paths without load that the others are compared with (e.g. 0,{})",
            levels[0]
        ));
    }
    match levels.last() {
        Some(&n) if n > MAX_LOAD => bad(format!("{n}: at most {MAX_LOAD} policies")),
        _ => Ok(()),
    }
}

/// Whether the cluster enforces NetworkPolicy, as the probe found.
pub enum Enforcement {
    /// It does: the probe, ready for the levels.
    Enforced(Gate),
    /// It does not: why, in words.
    NotEnforced(String),
}

/// How a wait on the probe ended.
enum Waited {
    /// The probe answered as awaited after this long.
    Done(Duration),
    /// It did not within the bound: its last answer.
    TimedOut(String),
}

fn ingress_policy(o: &Options, name: &str, rule: NetworkPolicyIngressRule) -> Object {
    Object::NetworkPolicy(Box::new(NetworkPolicy {
        metadata: o.meta(name, true),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(agent_pods()),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![rule]),
            egress: None,
        }),
    }))
}

/// Load policy `i`: admits to the agents, on a TCP and a UDP port of
/// its own, a /28 of 198.18.0.0/15 (the benchmarking range, which no
/// cluster uses), the pods of namespaces labelled for it and the pods of
/// this namespace labelled for it: none of which exist.
pub fn load_policy(o: &Options, i: u32) -> Object {
    let net = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + (i % 8192) * 16;
    let label = |v: String| LabelSelector {
        match_labels: Some(BTreeMap::from([("wirespeed.dev/load".to_string(), v)])),
        ..LabelSelector::default()
    };
    let p = 20_000 + (i % 20_000) as u16;
    let rule = NetworkPolicyIngressRule {
        from: Some(vec![
            NetworkPolicyPeer {
                ip_block: Some(IPBlock {
                    cidr: format!("{}/28", Ipv4Addr::from(net)),
                    except: None,
                }),
                ..NetworkPolicyPeer::default()
            },
            NetworkPolicyPeer {
                namespace_selector: Some(label(format!("ns-{i}"))),
                ..NetworkPolicyPeer::default()
            },
            NetworkPolicyPeer {
                pod_selector: Some(label(format!("pod-{i}"))),
                ..NetworkPolicyPeer::default()
            },
        ]),
        ports: Some(vec![
            policy_port("TCP", p, None),
            policy_port("UDP", p, None),
        ]),
    };
    ingress_policy(o, &load_name(i), rule)
}

/// The gate: admits the agents' HTTP port from the namespace's pods,
/// agents included (the run's own policy leaves agents out).
pub fn gate_policy(o: &Options) -> Object {
    let rule = NetworkPolicyIngressRule {
        from: Some(vec![NetworkPolicyPeer {
            pod_selector: Some(LabelSelector::default()),
            ..NetworkPolicyPeer::default()
        }]),
        ports: Some(vec![policy_port("TCP", o.http_port, None)]),
    };
    ingress_policy(o, GATE, rule)
}

/// One agent probing another's HTTP port: the other's node enforces.
pub struct Probe {
    prober: AgentClient,
    /// The fleet of the two (pushed to the prober before each wait: a
    /// path's run replaces it).
    fleet: Fleet,
    peer: String,
    /// `pod A -> pod B's HTTP port`, for messages.
    what: String,
}

impl Probe {
    /// `prober` (the first agent of `fleet`) probing the second.
    pub fn new(prober: AgentClient, fleet: Fleet) -> Probe {
        let pod = |i: usize| {
            fleet.agents[i]
                .labels
                .get("pod")
                .cloned()
                .unwrap_or_else(|| fleet.agents[i].name.clone())
        };
        Probe {
            prober,
            peer: fleet.agents[1].name.clone(),
            what: format!("{} -> {}'s HTTP port", pod(0), pod(1)),
            fleet,
        }
    }
}

/// The probes (one into each node's agent: ingress policy is enforced on
/// the node of the pod it admits to) and the levels applied so far.
pub struct Gate {
    probes: Vec<Probe>,
    loaded: u32,
    open: bool,
}

impl Gate {
    /// The gate over `probes`; [`Enforcement::NotEnforced`] when a probe
    /// got in for [`ENFORCE_WAIT`] / 4 although the run's own policy
    /// refuses it.
    pub async fn start(
        probes: Vec<Probe>,
        log: &(dyn Fn(&str) + Sync),
    ) -> Result<Enforcement, K8sError> {
        let g = Gate {
            probes,
            loaded: 0,
            open: false,
        };
        log(&format!(
            "policy load: probing {} (the run's NetworkPolicy refuses these; each level's last policy admits them)",
            g.what()
        ));
        match g.wait(false, ENFORCE_WAIT / 4).await? {
            Waited::Done(_) => Ok(Enforcement::Enforced(g)),
            Waited::TimedOut(detail) => Ok(Enforcement::NotEnforced(format!(
                "this cluster does not enforce NetworkPolicy: {detail} for {} s although the run's own policy refuses it, so policies cost nothing to measure here",
                (ENFORCE_WAIT / 4).as_secs()
            ))),
        }
    }

    /// Every probe, for messages.
    fn what(&self) -> String {
        let all: Vec<&str> = self.probes.iter().map(|p| p.what.as_str()).collect();
        all.join(", ")
    }

    /// Puts level `n` in force: the gate out, load policies up to `n`,
    /// the gate back in and awaited. Every object goes through `dep`, so
    /// the run deletes them at its end.
    pub async fn level(
        &mut self,
        client: &kube::Client,
        dep: &mut Deployment,
        o: &Options,
        n: u32,
        log: &(dyn Fn(&str) + Sync),
    ) -> Result<(), K8sError> {
        if self.open {
            crate::cluster::delete(client, &gate_policy(o), Duration::from_secs(30)).await?;
            self.await_probe(false, n).await?;
            self.open = false;
        }
        let load: Vec<Object> = (self.loaded + 1..=n).map(|i| load_policy(o, i)).collect();
        dep.apply(client, &load).await?;
        self.loaded = self.loaded.max(n);
        if n == 0 {
            return Ok(());
        }
        dep.apply(client, &[gate_policy(o)]).await?;
        let took = self.await_probe(true, n).await?;
        self.open = true;
        log(&format!(
            "policy load {n}: {n} load NetworkPolicies (and the gate) select the agents, in force on every node after {:.1} s (each probe got in once the gate, applied after them, was)",
            took.as_secs_f64()
        ));
        Ok(())
    }

    /// [`Gate::wait`] for `reached` within [`ENFORCE_WAIT`], else the
    /// timeout naming level `n`.
    async fn await_probe(&self, reached: bool, n: u32) -> Result<Duration, K8sError> {
        let last = match self.wait(reached, ENFORCE_WAIT).await? {
            Waited::Done(took) => return Ok(took),
            Waited::TimedOut(last) => last,
        };
        let what = if reached {
            format!(
                "the enforcer to put {n} NetworkPolicies and the gate {GATE} in force (still refused: {last})"
            )
        } else {
            format!("the enforcer to take the gate {GATE} out (still let in: {last})")
        };
        Err(K8sError::Timeout {
            what,
            secs: ENFORCE_WAIT.as_secs(),
        })
    }

    /// Probes until every probe's answer is `reached` (the time it took),
    /// or until `bound` has passed (the probes still waited for, with
    /// their last answers). A probe that cannot be made (the agent
    /// refuses it, or is gone) is an error, never taken for an answer.
    async fn wait(&self, reached: bool, bound: Duration) -> Result<Waited, K8sError> {
        let fleet_err = |e| K8sError::fleet("the policy probe", e);
        for p in &self.probes {
            if !p.prober.push_fleet(&p.fleet).await.map_err(fleet_err)? {
                return Err(K8sError::Invalid(format!(
                    "the policy probe: {}: the agent's fleet is pinned (--fleet), so it cannot probe its peer",
                    p.what
                )));
            }
        }
        let t0 = Instant::now();
        let mut left: Vec<&Probe> = self.probes.iter().collect();
        loop {
            let mut still = Vec::new();
            let mut last = Vec::new();
            for p in left {
                let a = p
                    .prober
                    .probe(&p.peer, PROBE_WAIT)
                    .await
                    .map_err(fleet_err)?;
                if a.reached != reached {
                    last.push(a.detail);
                    still.push(p);
                }
            }
            if still.is_empty() {
                return Ok(Waited::Done(t0.elapsed()));
            }
            if t0.elapsed() >= bound {
                return Ok(Waited::TimedOut(last.join("; ")));
            }
            left = still;
            // A poll interval: the enforcer's progress is what is awaited.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::Network;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn spec(o: &Object) -> NetworkPolicySpec {
        match o {
            Object::NetworkPolicy(p) => p.spec.clone().unwrap(),
            _ => panic!("not a NetworkPolicy"),
        }
    }

    #[test]
    fn levels_ascend_and_stay_bounded() {
        assert!(check_levels(&[0, 100, 1000]).is_ok());
        for (bad, want) in [
            (vec![], "e.g. 0,100"),
            (vec![100, 1000], "start at 0"),
            (vec![100, 0], "ascending"),
            (vec![0, 0], "ascending"),
            (vec![0, MAX_LOAD + 1], "at most"),
        ] {
            let e = check_levels(&bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad:?}: {e}");
        }
    }

    #[test]
    fn load_policies_select_the_agents_and_admit_nobody_of_the_run() {
        let o = Options::new(vec![Network::Pod], "ws-t", b"k");
        let a = spec(&load_policy(&o, 1));
        let b = spec(&load_policy(&o, 2));
        assert_eq!(a.pod_selector, Some(agent_pods()));
        let from = a.ingress.clone().unwrap()[0].from.clone().unwrap();
        assert_eq!(from[0].ip_block.clone().unwrap().cidr, "198.18.0.16/28");
        assert_eq!(
            b.ingress.unwrap()[0].from.clone().unwrap()[0]
                .ip_block
                .clone()
                .unwrap()
                .cidr,
            "198.18.0.32/28"
        );
        assert!(from[1].namespace_selector.is_some() && from[2].pod_selector.is_some());
        let ports = a.ingress.unwrap()[0].ports.clone().unwrap();
        for p in &ports {
            let n = match p.port {
                Some(IntOrString::Int(n)) => n,
                _ => 0,
            };
            assert!(n >= 20_000, "{p:?}");
            assert!(![o.port, o.http_port].contains(&(n as u16)), "{p:?}");
            assert!(
                !(o.data_ports.0..=o.data_ports.1).contains(&(n as u16)),
                "{p:?}"
            );
        }
        assert_eq!(load_name(7), "wirespeed-load-00007");
    }

    #[test]
    fn the_gate_admits_the_http_port_from_the_namespace() {
        let o = Options::new(vec![Network::Pod], "ws-t", b"k");
        let g = spec(&gate_policy(&o));
        let rule = &g.ingress.unwrap()[0];
        assert_eq!(
            rule.from.clone().unwrap()[0].pod_selector,
            Some(LabelSelector::default())
        );
        assert_eq!(
            rule.ports.clone().unwrap()[0].port,
            Some(IntOrString::Int(i32::from(o.http_port)))
        );
    }
}
