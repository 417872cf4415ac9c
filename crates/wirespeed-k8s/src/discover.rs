//! Finding the agents: wait until a DaemonSet's agents are Ready, then read
//! each pod's addresses: the pod IPs (pod network), the node's IPs
//! (hostNetwork), or the addresses of the NICs its ResourceClaim got from
//! DraNet (`status.devices[].networkData`).

use crate::K8sError;
use crate::manifests::{APP_AGENT, APP_LABEL, CLAIM_NAME, DRANET_DRIVER, NETWORK_LABEL, Network};
use crate::rollout::{self, Watch, ready};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::Client;
use kube::api::Api;
use kube::runtime::wait::await_condition;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// One address an agent can be tested on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentNic {
    /// The interface name when known (DraNet's networkData).
    pub name: Option<String>,
    /// The address.
    pub addr: IpAddr,
}

/// A ready agent and where to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agent {
    /// Its pod.
    pub pod: String,
    /// Its node (spec.nodeName, else the host IP).
    pub node: String,
    /// The network mode of its DaemonSet.
    pub network: Network,
    /// The address its API and server listen on (pod IP; node IP on the
    /// host network).
    pub control: IpAddr,
    /// The addresses traffic goes to, one per NIC.
    pub nics: Vec<AgentNic>,
}

fn parse_ip(s: &str, what: &str) -> Result<IpAddr, K8sError> {
    s.split('/')
        .next()
        .unwrap_or("")
        .parse()
        .map_err(|_| K8sError::Discovery(format!("{what}: {s:?} is not an IP address")))
}

/// The claim a dra pod got for its NICs (from `status.resourceClaimStatuses`).
pub fn claim_of(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .resource_claim_statuses
        .iter()
        .flatten()
        .find(|s| s.name == CLAIM_NAME)?
        .resource_claim_name
        .clone()
}

/// The claimed NICs' addresses in a claim's status (DraNet's devices only).
pub fn claim_nics(c: &ResourceClaim) -> Result<Vec<AgentNic>, K8sError> {
    let name = c.metadata.name.as_deref().unwrap_or("?");
    let mut out = Vec::new();
    for d in c.status.iter().flat_map(|s| s.devices.iter().flatten()) {
        if d.driver != DRANET_DRIVER {
            continue;
        }
        let Some(nd) = &d.network_data else { continue };
        for ip in nd.ips.iter().flatten() {
            out.push(AgentNic {
                name: nd.interface_name.clone(),
                addr: parse_ip(ip, &format!("ResourceClaim {name} device {}", d.device))?,
            });
        }
    }
    Ok(out)
}

/// The agent of a Ready pod. `claims` maps claim names to claims (dra).
pub fn agent_of(
    network: Network,
    p: &Pod,
    claims: &BTreeMap<String, ResourceClaim>,
) -> Result<Agent, K8sError> {
    let name = p.metadata.name.clone().unwrap_or_default();
    let st = p
        .status
        .as_ref()
        .ok_or_else(|| K8sError::Discovery(format!("pod {name} has no status")))?;
    let what = format!("pod {name}");
    // The plural list when set, else the single field (older servers).
    let ips = |many: Option<Vec<&String>>, one: Option<&String>| -> Result<Vec<IpAddr>, K8sError> {
        match many {
            Some(v) if !v.is_empty() => v.into_iter().map(|ip| parse_ip(ip, &what)).collect(),
            _ => one.into_iter().map(|ip| parse_ip(ip, &what)).collect(),
        }
    };
    let host_ips = ips(
        st.host_ips
            .as_ref()
            .map(|v| v.iter().map(|h| &h.ip).collect()),
        st.host_ip.as_ref(),
    )?;
    let pod_ips = ips(
        st.pod_ips
            .as_ref()
            .map(|v| v.iter().map(|h| &h.ip).collect()),
        st.pod_ip.as_ref(),
    )?;
    let node = p
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .or_else(|| host_ips.first().map(IpAddr::to_string))
        .unwrap_or_default();
    let plain = |ips: &[IpAddr]| -> Vec<AgentNic> {
        ips.iter()
            .map(|a| AgentNic {
                name: None,
                addr: *a,
            })
            .collect()
    };
    let (control, nics) = match network {
        Network::Host => (host_ips.first().or(pod_ips.first()), plain(&host_ips)),
        Network::Pod | Network::PodPeer => (pod_ips.first(), plain(&pod_ips)),
        Network::Dra => {
            let claim = claim_of(p).ok_or_else(|| {
                K8sError::Discovery(format!(
                    "{what} has no ResourceClaim for {CLAIM_NAME:?} in its status"
                ))
            })?;
            let c = claims.get(&claim).ok_or_else(|| {
                K8sError::Discovery(format!("{what}: ResourceClaim {claim} not found"))
            })?;
            (pod_ips.first(), claim_nics(c)?)
        }
    };
    let control = *control.ok_or_else(|| {
        K8sError::Discovery(format!("{what} is Ready but has no {network} address"))
    })?;
    if nics.is_empty() {
        return Err(K8sError::Discovery(format!(
            "{what}: no addresses for the {network} network"
        )));
    }
    Ok(Agent {
        pod: name,
        node,
        network,
        control,
        nics,
    })
}

/// How long a Ready dra pod's claim may lack the NICs' network data
/// before the run says the NIC was not placed. A driver that places NICs
/// (DraNet through NRI, the test driver through the CRI) writes it
/// before the pod's containers start, so a Ready pod without it has a
/// claim that was prepared but whose NIC stayed out of the pod.
pub const NIC_PLACE_WAIT: Duration = Duration::from_secs(30);

/// Why a Ready pod's claim has no NIC to test: what the scheduler
/// allocated (or that it allocated nothing) and that no NIC was placed.
pub fn not_placed(c: &ResourceClaim, pod: &str, waited: Duration) -> String {
    let ns = c.metadata.namespace.as_deref().unwrap_or("?");
    let name = c.metadata.name.as_deref().unwrap_or("?");
    let alloc: Vec<String> = c
        .status
        .iter()
        .filter_map(|s| s.allocation.as_ref())
        .filter_map(|a| a.devices.as_ref())
        .flat_map(|d| d.results.iter().flatten())
        .map(|r| format!("{} device {} from pool {}", r.driver, r.device, r.pool))
        .collect();
    if alloc.is_empty() {
        return format!(
            "ResourceClaim {ns}/{name} (pod {pod}) has no allocation: the dra path is not measured"
        );
    }
    format!(
        "ResourceClaim {ns}/{name} (pod {pod}): the scheduler allocated {}, but the NIC was not placed in the pod: after {} s its status.devices carries no networkData from {DRANET_DRIVER} (a driver that does not move NICs into pods, e.g. DraNet without NRI); the dra path is not measured",
        alloc.join(", "),
        waited.as_secs()
    )
}

/// Does `claim` carry DraNet's network data?
fn has_network_data(c: Option<&ResourceClaim>) -> bool {
    c.is_some_and(|c| claim_nics(c).is_ok_and(|n| !n.is_empty()))
}

async fn within<T>(
    deadline: Instant,
    what: &str,
    fut: impl Future<Output = Result<T, kube::runtime::wait::Error>>,
) -> Result<T, K8sError> {
    let left = deadline.saturating_duration_since(Instant::now());
    tokio::time::timeout(left, fut)
        .await
        .map_err(|_| K8sError::Timeout {
            what: what.to_string(),
            secs: left.as_secs(),
        })?
        .map_err(|error| K8sError::Watch {
            what: what.to_string(),
            error,
        })
}

/// Waits (at most `timeout`, no log) until the `network` DaemonSet in
/// `ns` is rolled out, then returns its Ready agents with their
/// addresses; [`discover_with`] with [`Watch::new`].
pub async fn discover(
    client: &Client,
    ns: &str,
    network: Network,
    timeout: Duration,
) -> Result<Vec<Agent>, K8sError> {
    discover_with(client, ns, network, &Watch::new(timeout, &|_| {})).await
}

/// Waits as `w` says until the `network` DaemonSet in `ns` is rolled out
/// (progress lines, and the evidence of a rollout that cannot finish, go
/// to `w.log`; see [`rollout::wait`]), then returns its Ready agents with
/// their addresses.
pub async fn discover_with(
    client: &Client,
    ns: &str,
    network: Network,
    w: &Watch<'_>,
) -> Result<Vec<Agent>, K8sError> {
    let deadline = Instant::now() + w.timeout;
    let ds_name = network.daemonset_name();
    let selector = format!(
        "{APP_LABEL}={APP_AGENT},{NETWORK_LABEL}={}",
        network.as_str()
    );
    let (_, pods) = rollout::wait(client, ns, &ds_name, &selector, w).await?;
    let mine: Vec<Pod> = pods.into_iter().filter(ready).collect();
    if mine.is_empty() {
        return Err(K8sError::Discovery(format!(
            "DaemonSet {ns}/{ds_name} reports Ready agents but none of its pods is Running and Ready"
        )));
    }
    let mut claims = BTreeMap::new();
    if network == Network::Dra {
        let api: Api<ResourceClaim> = Api::namespaced(client.clone(), ns);
        for p in &mine {
            let pod = p.metadata.name.as_deref().unwrap_or("?");
            let Some(name) = claim_of(p) else {
                return Err(K8sError::Discovery(format!(
                    "pod {ns}/{pod} is Ready but names no ResourceClaim for {CLAIM_NAME:?}"
                )));
            };
            let until = deadline.min(Instant::now() + NIC_PLACE_WAIT);
            let placed = within(
                until,
                &format!("ResourceClaim {ns}/{name} (pod {pod}) to carry its NICs' addresses"),
                await_condition(api.clone(), &name, has_network_data),
            )
            .await;
            let c = match placed {
                Err(K8sError::Timeout { .. }) => {
                    let c = api
                        .get(&name)
                        .await
                        .map_err(|e| K8sError::api(format!("get ResourceClaim {ns}/{name}"), e))?;
                    return Err(K8sError::Discovery(not_placed(
                        &c,
                        &format!("{ns}/{pod}"),
                        NIC_PLACE_WAIT,
                    )));
                }
                other => other?,
            }
            .ok_or_else(|| K8sError::Discovery(format!("ResourceClaim {ns}/{name} vanished")))?;
            claims.insert(name, c);
        }
    }
    let mut agents = mine
        .iter()
        .map(|p| agent_of(network, p, &claims))
        .collect::<Result<Vec<_>, _>>()?;
    agents.sort_by(|a, b| (&a.node, &a.pod).cmp(&(&b.node, &b.pod)));
    Ok(agents)
}

/// The Ready agent of `network` on `node` that is not being deleted,
/// waited for at most `wait` (polled every half second): after an agent
/// went down, the pod its DaemonSet made in place of a deleted or evicted
/// one, or the same pod once its container restarted. A pod the API still
/// shows Ready on a lost node is returned too: the caller's health check
/// finds it gone at once, rather than waiting here for a pod that cannot
/// come. None when no such pod is Ready in time.
pub async fn replacement(
    client: &Client,
    ns: &str,
    network: Network,
    node: &str,
    wait: Duration,
) -> Option<Agent> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let lp = kube::api::ListParams::default()
        .labels(&format!(
            "{APP_LABEL}={APP_AGENT},{NETWORK_LABEL}={}",
            network.as_str()
        ))
        .fields(&format!("spec.nodeName={node}"));
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if let Ok(Ok(list)) = tokio::time::timeout(left, api.list(&lp)).await {
            for p in list
                .items
                .iter()
                .filter(|p| ready(p) && p.metadata.deletion_timestamp.is_none())
            {
                let claims = claims_of(client, ns, network, p).await;
                if let Ok(a) = agent_of(network, p, &claims) {
                    return Some(a);
                }
            }
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The ResourceClaim of a dra pod, by name (empty for other networks or
/// when it cannot be read).
async fn claims_of(
    client: &Client,
    ns: &str,
    network: Network,
    p: &Pod,
) -> BTreeMap<String, ResourceClaim> {
    let mut out = BTreeMap::new();
    if network != Network::Dra {
        return out;
    }
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), ns);
    if let Some(name) = claim_of(p)
        && let Ok(c) = api.get(&name).await
    {
        out.insert(name, c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodIP, PodResourceClaimStatus, PodStatus};
    use k8s_openapi::api::resource::v1::{
        AllocatedDeviceStatus, NetworkDeviceData, ResourceClaimStatus,
    };

    fn pod(ip: &str, host: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("a-1".into());
        p.status = Some(PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some(ip.into()),
            pod_ips: Some(vec![PodIP { ip: ip.into() }]),
            host_ip: Some(host.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..PodCondition::default()
            }]),
            resource_claim_statuses: Some(vec![PodResourceClaimStatus {
                name: CLAIM_NAME.into(),
                resource_claim_name: Some("a-1-nic-x".into()),
            }]),
            ..PodStatus::default()
        });
        p
    }

    fn claim(ips: &[&str]) -> ResourceClaim {
        let mut c = ResourceClaim::default();
        c.metadata.name = Some("a-1-nic-x".into());
        c.status = Some(ResourceClaimStatus {
            devices: Some(vec![AllocatedDeviceStatus {
                driver: DRANET_DRIVER.into(),
                pool: "node-a".into(),
                device: "eth1".into(),
                network_data: Some(NetworkDeviceData {
                    interface_name: Some("eth1".into()),
                    ips: Some(ips.iter().map(|s| s.to_string()).collect()),
                    ..NetworkDeviceData::default()
                }),
                ..AllocatedDeviceStatus::default()
            }]),
            ..ResourceClaimStatus::default()
        });
        c
    }

    #[test]
    fn each_mode_takes_its_own_addresses() {
        let p = pod("10.244.0.7", "192.168.0.10");
        let none = BTreeMap::new();
        let h = agent_of(Network::Host, &p, &none).unwrap();
        assert_eq!(h.control.to_string(), "192.168.0.10");
        assert_eq!(h.node, "192.168.0.10");
        let a = agent_of(Network::Pod, &p, &none).unwrap();
        assert_eq!(a.nics[0].addr.to_string(), "10.244.0.7");
        let claims = BTreeMap::from([("a-1-nic-x".to_string(), claim(&["10.10.1.2/24"]))]);
        let d = agent_of(Network::Dra, &p, &claims).unwrap();
        assert_eq!(d.control.to_string(), "10.244.0.7");
        assert_eq!(d.nics[0].addr.to_string(), "10.10.1.2");
        assert_eq!(d.nics[0].name.as_deref(), Some("eth1"));
        assert!(agent_of(Network::Dra, &p, &none).is_err());
    }

    #[test]
    fn an_allocated_claim_without_network_data_says_the_nic_was_not_placed() {
        use k8s_openapi::api::resource::v1::{
            AllocationResult, DeviceAllocationResult, DeviceRequestAllocationResult,
        };
        let mut c = ResourceClaim::default();
        c.metadata.name = Some("a-1-nic-x".into());
        c.metadata.namespace = Some("ws".into());
        let none = not_placed(&c, "ws/a-1", NIC_PLACE_WAIT);
        assert!(none.contains("has no allocation"), "{none}");
        c.status = Some(ResourceClaimStatus {
            allocation: Some(AllocationResult {
                devices: Some(DeviceAllocationResult {
                    results: Some(vec![DeviceRequestAllocationResult {
                        request: CLAIM_NAME.into(),
                        driver: DRANET_DRIVER.into(),
                        pool: "node-a".into(),
                        device: "dra0".into(),
                        ..DeviceRequestAllocationResult::default()
                    }]),
                    ..DeviceAllocationResult::default()
                }),
                ..AllocationResult::default()
            }),
            ..ResourceClaimStatus::default()
        });
        let m = not_placed(&c, "ws/a-1", NIC_PLACE_WAIT);
        assert!(
            m.contains("allocated dra.net device dra0 from pool node-a")
                && m.contains("the NIC was not placed in the pod")
                && m.contains("not measured"),
            "{m}"
        );
        assert!(!has_network_data(Some(&c)));
    }

    #[test]
    fn a_lying_status_is_an_error_not_a_panic() {
        let p = pod("not-an-ip", "192.168.0.10");
        assert!(agent_of(Network::Pod, &p, &BTreeMap::new()).is_err());
        let claims = BTreeMap::from([("a-1-nic-x".to_string(), claim(&["10.10.1.x/24"]))]);
        let p = pod("10.244.0.7", "192.168.0.10");
        assert!(agent_of(Network::Dra, &p, &claims).is_err());
        let claims = BTreeMap::from([("a-1-nic-x".to_string(), claim(&[]))]);
        assert!(agent_of(Network::Dra, &p, &claims).is_err());
        assert!(!ready(&Pod::default()));
    }
}
