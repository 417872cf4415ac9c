//! For tests: a real etcd + kube-apiserver (k8s/testenv/start.sh),
//! stopped by a guard, and helpers that play the controllers and the
//! kubelet that test environment lacks (k8s/testenv/README.md says what
//! that covers). Not for use against a real cluster.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::api::resource::v1::ResourceClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::K8sError;
use crate::manifests::{CLAIM_NAME, DRANET_DRIVER, Network};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where build.sh put the binaries.
fn bin_dir() -> PathBuf {
    if let Some(b) = std::env::var_os("KUBE_TESTENV_BIN") {
        return b.into();
    }
    if let Some(d) = std::env::var_os("KUBE_TESTENV_DIR") {
        return PathBuf::from(d).join("bin");
    }
    repo().join("target/k8s-testenv/bin")
}

pub use wirespeed_testkit::require;

/// A running testenv; dropping it stops both servers and removes its dir.
pub struct TestEnv {
    dir: PathBuf,
    /// Its kubeconfig (admin token).
    pub kubeconfig: PathBuf,
}

impl TestEnv {
    /// Starts one, or None (skipped) when the binaries are missing
    /// outside CI; in network namespace `netns` when given (its servers
    /// then listen on that namespace's loopback). Panics when start.sh
    /// fails (a test's setup).
    pub fn start(test: &str, netns: Option<&str>) -> Option<TestEnv> {
        let bin = bin_dir();
        let have = bin.join("etcd").is_file() && bin.join("kube-apiserver").is_file();
        if !require(
            have,
            &format!(
                "no etcd/kube-apiserver in {} (run k8s/testenv/build.sh)",
                bin.display()
            ),
            test,
        ) {
            return None;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "wirespeed-k8s-{test}-{}-{nanos}",
            std::process::id()
        ));
        let script = repo().join("k8s/testenv/start.sh");
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&script);
                c
            }
            None => Command::new(&script),
        };
        let st = cmd
            .arg(&dir)
            .env("KUBE_TESTENV_BIN", &bin)
            .status()
            .expect("run k8s/testenv/start.sh");
        assert!(st.success(), "{test}: k8s/testenv/start.sh failed: {st}");
        Some(TestEnv {
            kubeconfig: dir.join("kubeconfig"),
            dir,
        })
    }

    /// An admin client.
    pub async fn client(&self) -> Result<Client, K8sError> {
        crate::cluster::client(Some(&self.kubeconfig)).await
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        let st = Command::new(repo().join("k8s/testenv/stop.sh"))
            .arg(&self.dir)
            .status();
        if !matches!(st, Ok(s) if s.success()) {
            eprintln!("k8s/testenv/stop.sh {} failed: {st:?}", self.dir.display());
        }
    }
}

/// One node as the test plays it: its name, its node IP, the agent pod's
/// IP on the pod network, and for dra the claimed NICs (name, CIDR).
#[derive(Debug, Clone)]
pub struct FakeNode {
    /// Node name.
    pub name: String,
    /// Node IP (hostIP; the pod IP too on the host network).
    pub host_ip: String,
    /// Pod IP (pod network).
    pub pod_ip: String,
    /// DraNet NICs moved into the pod: (interface, "addr/prefix").
    pub nics: Vec<(String, String)>,
}

fn owner(kind: &str, api_version: &str, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn merge(v: serde_json::Value) -> Patch<serde_json::Value> {
    Patch::Merge(v)
}

/// How the test's kubelet leaves a pod.
#[derive(Debug, Clone)]
pub enum Kubelet {
    /// Running and Ready on the node's addresses.
    Ready,
    /// This pod status (as a kubelet writes it, e.g. [`image_pull_back_off`])
    /// and these events about the pod (reason, message), as the kubelet
    /// records them.
    Stuck {
        /// The `status` object.
        status: serde_json::Value,
        /// Warning events: (reason, message).
        events: Vec<(String, String)>,
    },
}

/// A pod status whose agent container cannot pull `image`, as a kubelet
/// writes it after the first failed pulls.
pub fn image_pull_back_off(image: &str, host_ip: &str) -> serde_json::Value {
    json!({
        "phase": "Pending",
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": "True"},
            {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady"},
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
        ],
        "containerStatuses": [{
            "name": "agent", "image": image, "imageID": "", "ready": false,
            "restartCount": 0, "started": false,
            "state": {"waiting": {"reason": "ImagePullBackOff",
                "message": format!("Back-off pulling image \"{image}\": ErrImagePull: failed to pull and unpack image \"{image}\": not found")}},
        }],
    })
}

/// Plays the DaemonSet controller, the scheduler, the resource-claim
/// controller, DraNet and the kubelet for DaemonSet `ds` in `ns`: one pod
/// per node from the DaemonSet's own template (owner reference, node
/// name), for dra its ResourceClaim from the template with allocation and
/// networkData, then Running/Ready pod status and the DaemonSet's status.
pub async fn play_daemonset(
    client: &Client,
    ns: &str,
    ds: &str,
    nodes: &[FakeNode],
) -> Result<Vec<Pod>, K8sError> {
    let all: Vec<(FakeNode, Kubelet)> = nodes.iter().map(|n| (n.clone(), Kubelet::Ready)).collect();
    play_daemonset_with(client, ns, ds, &all).await
}

/// [`play_daemonset`] with each pod left as its [`Kubelet`] says; the
/// DaemonSet's status counts the Ready ones.
pub async fn play_daemonset_with(
    client: &Client,
    ns: &str,
    ds: &str,
    nodes: &[(FakeNode, Kubelet)],
) -> Result<Vec<Pod>, K8sError> {
    let dss: Api<DaemonSet> = Api::namespaced(client.clone(), ns);
    let d = dss
        .get(ds)
        .await
        .map_err(|e| K8sError::api("get DaemonSet", e))?;
    let Some(tpl) = d.spec.clone().map(|s| s.template) else {
        return Err(K8sError::Discovery(format!("DaemonSet {ds} has no spec")));
    };
    let mut out = Vec::new();
    for (n, kubelet) in nodes {
        out.push(play_pod(client, ns, ds, &d, &tpl, n, kubelet).await?);
    }
    write_daemonset_status(&dss, ds, &d, nodes).await?;
    Ok(out)
}

/// Node `n`'s pod of DaemonSet `d` (`ds`, template `tpl`), as the
/// controllers and the kubelet would make it: created, its DraNet claim
/// made and allocated when the template asks for one, its status written
/// as `kubelet` says.
async fn play_pod(
    client: &Client,
    ns: &str,
    ds: &str,
    d: &DaemonSet,
    tpl: &PodTemplateSpec,
    n: &FakeNode,
    kubelet: &Kubelet,
) -> Result<Pod, K8sError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut spec = tpl.spec.clone().unwrap_or_default();
    spec.node_name = Some(n.name.clone());
    let mut meta = tpl.metadata.clone().unwrap_or_default();
    meta.name = Some(format!("{ds}-{}", n.name));
    meta.namespace = Some(ns.into());
    meta.owner_references = Some(vec![owner("DaemonSet", "apps/v1", &d.metadata)]);
    let host_net = spec.host_network == Some(true);
    let wants_claim = spec
        .resource_claims
        .iter()
        .flatten()
        .find(|c| c.name == CLAIM_NAME)
        .and_then(|c| c.resource_claim_template_name.clone());
    let pod = pods
        .create(
            &PostParams::default(),
            &Pod {
                metadata: meta,
                spec: Some(spec),
                status: None,
            },
        )
        .await
        .map_err(|e| K8sError::api("create the pod the DaemonSet controller would", e))?;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let mut status = ready_status(n, host_net);
    if let Some(tpl_name) = wants_claim {
        let claim_name = make_claim(client, ns, &pod, &tpl_name).await?;
        allocate_claim(client, ns, &claim_name, n, &pod).await?;
        status["resourceClaimStatuses"] =
            json!([{"name": CLAIM_NAME, "resourceClaimName": claim_name}]);
    }
    if let Kubelet::Stuck { status: st, events } = kubelet {
        status = st.clone();
        for (reason, message) in events {
            record_event(client, &pod, reason, message).await?;
        }
    }
    pods.patch_status(
        &pod_name,
        &PatchParams::default(),
        &merge(json!({ "status": status })),
    )
    .await
    .map_err(|e| K8sError::api("write pod status as the kubelet would", e))
}

/// A Running, Ready pod's status on node `n` (its pod IP the node's on
/// the host network).
fn ready_status(n: &FakeNode, host_net: bool) -> serde_json::Value {
    json!({
        "phase": "Running",
        "hostIP": n.host_ip,
        "hostIPs": [{"ip": n.host_ip}],
        "podIP": if host_net { &n.host_ip } else { &n.pod_ip },
        "podIPs": [{"ip": if host_net { &n.host_ip } else { &n.pod_ip }}],
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": "True"},
            {"type": "ContainersReady", "status": "True"},
            {"type": "Ready", "status": "True"},
        ],
    })
}

/// Creates `pod`'s claim from ResourceClaimTemplate `tpl_name` as the
/// resource-claim controller would; returns the claim's name.
async fn make_claim(
    client: &Client,
    ns: &str,
    pod: &Pod,
    tpl_name: &str,
) -> Result<String, K8sError> {
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), ns);
    let rcts: Api<k8s_openapi::api::resource::v1::ResourceClaimTemplate> =
        Api::namespaced(client.clone(), ns);
    let t = rcts
        .get(tpl_name)
        .await
        .map_err(|e| K8sError::api("get ResourceClaimTemplate", e))?;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let claim_name = format!("{pod_name}-{CLAIM_NAME}");
    let tmeta = t.spec.metadata.clone().unwrap_or_default();
    claims
        .create(
            &PostParams::default(),
            &ResourceClaim {
                metadata: ObjectMeta {
                    name: Some(claim_name.clone()),
                    namespace: Some(ns.into()),
                    labels: tmeta.labels,
                    annotations: Some(
                        [(
                            "resource.kubernetes.io/pod-claim-name".to_string(),
                            CLAIM_NAME.to_string(),
                        )]
                        .into(),
                    ),
                    owner_references: Some(vec![owner("Pod", "v1", &pod.metadata)]),
                    ..ObjectMeta::default()
                },
                spec: t.spec.spec.clone(),
                status: None,
            },
        )
        .await
        .map_err(|e| K8sError::api("create the claim the resource-claim controller would", e))?;
    Ok(claim_name)
}

/// Writes claim `claim_name`'s allocation (node `n`'s NICs) and their
/// networkData, reserved for `pod`, as the scheduler and DraNet would.
async fn allocate_claim(
    client: &Client,
    ns: &str,
    claim_name: &str,
    n: &FakeNode,
    pod: &Pod,
) -> Result<(), K8sError> {
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), ns);
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let results: Vec<_> = n
        .nics
        .iter()
        .map(|(dev, _)| {
            json!({"request": CLAIM_NAME, "driver": DRANET_DRIVER, "pool": n.name, "device": dev})
        })
        .collect();
    let devices: Vec<_> = n
        .nics
        .iter()
        .map(|(dev, cidr)| {
            json!({"driver": DRANET_DRIVER, "pool": n.name, "device": dev,
                   "networkData": {"interfaceName": dev, "ips": [cidr]}})
        })
        .collect();
    claims
        .patch_status(
            claim_name,
            &PatchParams::default(),
            &merge(json!({"status": {
                "allocation": {"devices": {"results": results}},
                "reservedFor": [{"resource": "pods", "name": pod_name,
                                 "uid": pod.metadata.uid}],
                "devices": devices,
            }})),
        )
        .await
        .map_err(|e| {
            K8sError::api(
                "write the claim's allocation and networkData as the scheduler and DraNet would",
                e,
            )
        })?;
    Ok(())
}

/// Writes DaemonSet `d`'s status as its controller would: every node's
/// pod scheduled, the Ready ones ready and available.
async fn write_daemonset_status(
    dss: &Api<DaemonSet>,
    ds: &str,
    d: &DaemonSet,
    nodes: &[(FakeNode, Kubelet)],
) -> Result<(), K8sError> {
    let count = nodes.len();
    let ready = nodes
        .iter()
        .filter(|(_, k)| matches!(k, Kubelet::Ready))
        .count();
    dss.patch_status(
        ds,
        &PatchParams::default(),
        &merge(json!({"status": {
            "observedGeneration": d.metadata.generation,
            "currentNumberScheduled": count,
            "desiredNumberScheduled": count,
            "numberMisscheduled": 0,
            "numberReady": ready,
            "numberAvailable": ready,
            "updatedNumberScheduled": count,
        }})),
    )
    .await
    .map_err(|e| K8sError::api("write DaemonSet status as its controller would", e))?;
    Ok(())
}

/// Records a Warning event about `pod` as its kubelet would.
pub async fn record_event(
    client: &Client,
    pod: &Pod,
    reason: &str,
    message: &str,
) -> Result<(), K8sError> {
    use k8s_openapi::api::core::v1::Event;
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let now = json!(k8s_openapi::jiff::Timestamp::now().to_string());
    let ev: Event = serde_json::from_value(json!({
        "metadata": {"generateName": format!("{name}."), "namespace": ns},
        "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": ns,
                           "name": name, "uid": pod.metadata.uid, "fieldPath": "spec.containers{agent}"},
        "reason": reason, "message": message, "type": "Warning", "count": 3,
        "source": {"component": "kubelet", "host": pod.spec.as_ref().and_then(|s| s.node_name.clone())},
        "firstTimestamp": now, "lastTimestamp": now,
    }))
    .map_err(|e| K8sError::Render(e.into()))?;
    let api: Api<Event> = Api::namespaced(client.clone(), &ns);
    api.create(&PostParams::default(), &ev)
        .await
        .map_err(|e| K8sError::api("record an event as the kubelet would", e))?;
    Ok(())
}

/// Registers node `name` as its kubelet would, reports it Ready, and
/// leaves it with exactly `taints` (written `KEY[=VALUE]:EFFECT`) as the
/// node lifecycle controller would once it is Ready (the API server's
/// admission taints a new node `not-ready`).
pub async fn register_node(client: &Client, name: &str, taints: &[&str]) -> Result<(), K8sError> {
    use k8s_openapi::api::core::v1::Node;
    let taints: Vec<serde_json::Value> = taints
        .iter()
        .map(|t| {
            let (kv, effect) = t.rsplit_once(':').unwrap_or((t, "NoSchedule"));
            let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
            json!({"key": key, "value": value, "effect": effect})
        })
        .collect();
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
    }))
    .map_err(|e| K8sError::Render(e.into()))?;
    let api: Api<Node> = Api::all(client.clone());
    api.create(&PostParams::default(), &node)
        .await
        .map_err(|e| K8sError::api(format!("register node {name}"), e))?;
    let ready = json!({"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady"}]}});
    api.patch_status(name, &PatchParams::default(), &merge(ready))
        .await
        .map_err(|e| K8sError::api(format!("report node {name} Ready as its kubelet would"), e))?;
    let spec = json!({"spec": {"taints": taints}});
    api.patch(name, &PatchParams::default(), &merge(spec))
        .await
        .map_err(|e| K8sError::api(format!("set the taints of node {name}"), e))?;
    Ok(())
}

/// A fresh token of service account `ns/sa` (10 minutes).
pub async fn token_for(client: &Client, ns: &str, sa: &str) -> Result<String, K8sError> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let tr = sas
        .create_token_request(
            sa,
            &PostParams::default(),
            &TokenRequest {
                spec: TokenRequestSpec {
                    expiration_seconds: Some(600),
                    ..TokenRequestSpec::default()
                },
                ..TokenRequest::default()
            },
        )
        .await
        .map_err(|e| K8sError::api(format!("request a token of {ns}/{sa}"), e))?;
    Ok(tr.status.map(|s| s.token).unwrap_or_default())
}

/// Writes to `out` the kubeconfig `base` with its user's credentials
/// replaced by bearer `token` (same server and CA).
pub fn kubeconfig_with_token(base: &Path, token: &str, out: &Path) -> Result<(), K8sError> {
    let io = |what: String| move |e| K8sError::Io { what, error: e };
    let text = std::fs::read_to_string(base).map_err(io(format!("read {}", base.display())))?;
    let mut kc: serde_json::Value =
        serde_saphyr::from_str(&text).map_err(|e| K8sError::Config {
            path: Some(base.to_path_buf()),
            context: None,
            error: Box::new(e.into()),
        })?;
    for u in kc["users"].as_array_mut().into_iter().flatten() {
        u["user"] = json!({ "token": token });
    }
    std::fs::write(out, kc.to_string()).map_err(io(format!("write {}", out.display())))
}

/// Server-side applies the runner's objects (`k8s manifests --runner`).
pub async fn apply_runner(
    client: &Client,
    objs: &[crate::runner_job::RunnerObject],
) -> Result<(), K8sError> {
    use crate::runner_job::RunnerObject as R;
    let pp = PatchParams::apply(crate::cluster::FIELD_MANAGER).validation_strict();
    for o in objs {
        let what = format!("apply {}", o.describe());
        let r = match o {
            R::Namespace(x) => ssa(Api::all(client.clone()), x, &pp).await,
            R::ServiceAccount(x) => ssa(ns_api(client, &x.metadata), x, &pp).await,
            R::ClusterRole(x) => ssa(Api::all(client.clone()), x, &pp).await,
            R::ClusterRoleBinding(x) => ssa(Api::all(client.clone()), x, &pp).await,
            R::Job(x) => ssa(ns_api(client, &x.metadata), &**x, &pp).await,
        };
        r.map_err(|e| K8sError::api(what, e))?;
    }
    Ok(())
}

fn ns_api<K>(client: &Client, m: &ObjectMeta) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(client.clone(), m.namespace.as_deref().unwrap_or("default"))
}

async fn ssa<K>(api: Api<K>, o: &K, pp: &PatchParams) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = o.meta().name.clone().unwrap_or_default();
    api.patch(&name, pp, &Patch::Apply(o)).await.map(|_| ())
}

/// Runs `f` to completion on a fresh single-threaded runtime (for tests
/// that are not async themselves).
pub fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, K8sError> {
    Ok(runtime()?.block_on(f))
}

fn runtime() -> Result<tokio::runtime::Runtime, K8sError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| K8sError::Io {
            what: "start a runtime".into(),
            error: e,
        })
}

async fn applied(client: &Client, ns: &str, n: Network, wait: Duration) -> Result<(), K8sError> {
    let dss: Api<DaemonSet> = Api::namespaced(client.clone(), ns);
    let name = n.daemonset_name();
    tokio::time::timeout(wait, await_condition(dss, &name, conditions::is_created()))
        .await
        .map_err(|_| K8sError::Timeout {
            what: format!("DaemonSet {ns}/{name} to be applied"),
            secs: wait.as_secs(),
        })?
        .map_err(|error| K8sError::Watch {
            what: format!("watch DaemonSet {ns}/{name}"),
            error,
        })?;
    Ok(())
}

/// Waits (at most `wait`) until mode `n`'s DaemonSet exists in `ns`.
/// Blocking (own runtime).
pub fn wait_applied(
    kubeconfig: &Path,
    ns: &str,
    n: Network,
    wait: Duration,
) -> Result<(), K8sError> {
    runtime()?.block_on(async {
        let client = crate::cluster::client(Some(kubeconfig)).await?;
        applied(&client, ns, n, wait).await
    })
}

/// Registers the nodes `names` as their kubelets would (Ready, no
/// taints), before a `k8s run` reads which nodes there are. Blocking
/// (own runtime).
pub fn register_nodes(kubeconfig: &Path, names: &[String]) -> Result<(), K8sError> {
    runtime()?.block_on(async {
        let client = crate::cluster::client(Some(kubeconfig)).await?;
        for n in names {
            register_node(&client, n, &[]).await?;
        }
        Ok(())
    })
}

/// Publishes one ResourceSlice per node listing its NICs as DraNet on
/// GCE would (`dra.net/ifName`, `virtual` false, gVNIC's PCI vendor and
/// device), so a played run's checks of the profile against the devices
/// see them. Blocking (own runtime).
pub fn publish_nics(kubeconfig: &Path, nodes: &[FakeNode]) -> Result<(), K8sError> {
    use k8s_openapi::api::resource::v1::ResourceSlice;
    runtime()?.block_on(async {
        let client = crate::cluster::client(Some(kubeconfig)).await?;
        let api: Api<ResourceSlice> = Api::all(client.clone());
        for n in nodes {
            let devices: Vec<serde_json::Value> = n
                .nics
                .iter()
                .map(|(dev, cidr)| {
                    json!({"name": dev, "attributes": {
                        "dra.net/ifName": {"string": dev},
                        "dra.net/ipv4": {"string": cidr.split('/').next().unwrap_or("")},
                        "dra.net/virtual": {"bool": false},
                        "dra.net/pciVendor": {"string": "Google, Inc."},
                        "dra.net/pciDevice": {"string": "Compute Engine Virtual Ethernet [gVNIC]"},
                    }})
                })
                .collect();
            let slice: ResourceSlice = serde_json::from_value(json!({
                "metadata": {"name": format!("{}-{DRANET_DRIVER}", n.name)},
                "spec": {"driver": DRANET_DRIVER, "nodeName": n.name,
                         "pool": {"name": n.name, "generation": 1, "resourceSliceCount": 1},
                         "devices": devices},
            }))
            .map_err(|e| K8sError::Render(e.into()))?;
            api.create(&PostParams::default(), &slice)
                .await
                .map_err(|e| K8sError::api("publish a ResourceSlice as DraNet would", e))?;
        }
        Ok(())
    })
}

/// Plays one mode of a `k8s run` in namespace `ns`: registers `nodes`
/// (name, taints) first, waits (at most `wait`) for the mode's DaemonSet,
/// then plays its pods as `pods` say. Blocking (own runtime).
pub fn play_scene(
    kubeconfig: &Path,
    ns: &str,
    network: Network,
    nodes: &[(&str, &[&str])],
    pods: &[(FakeNode, Kubelet)],
    wait: Duration,
) -> Result<Vec<Pod>, K8sError> {
    runtime()?.block_on(async {
        let client = crate::cluster::client(Some(kubeconfig)).await?;
        for (name, taints) in nodes {
            register_node(&client, name, taints).await?;
        }
        applied(&client, ns, network, wait).await?;
        play_daemonset_with(&client, ns, &network.daemonset_name(), pods).await
    })
}

/// Plays the cluster for a `k8s run` in namespace `ns`: for each mode,
/// waits (at most `wait`) for its DaemonSet to be applied, then plays it
/// with [`play_daemonset`]. Blocking (own runtime): run it on a thread
/// beside the run.
pub fn play_run(
    kubeconfig: &Path,
    ns: &str,
    plays: &[(Network, Vec<FakeNode>)],
    wait: Duration,
) -> Result<(), K8sError> {
    runtime()?.block_on(async {
        let client = crate::cluster::client(Some(kubeconfig)).await?;
        for (n, nodes) in plays {
            applied(&client, ns, *n, wait).await?;
            play_daemonset(&client, ns, &n.daemonset_name(), nodes).await?;
        }
        Ok(())
    })
}

/// What a run left in `ns` and cluster-wide, by kind and name: every kind
/// a run applies (pods and claims are the DaemonSet's and the test's, left
/// for a garbage collector this server lacks). A namespace that is gone or
/// Terminating is not listed, nor the shared DeviceClass (runs keep it).
/// Blocking (own runtime).
pub fn leftovers(kubeconfig: &Path, ns: &str) -> Result<Vec<String>, K8sError> {
    use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaimTemplate};
    use kube::api::ListParams;
    runtime()?.block_on(async {
        let client = crate::cluster::client(Some(kubeconfig)).await?;
        let mine = ListParams::default().labels(&format!(
            "{}={}",
            crate::manifests::MANAGED_BY.0,
            crate::manifests::MANAGED_BY.1
        ));
        let mut left = Vec::new();
        macro_rules! names {
            ($kind:ty, $api:expr) => {{
                let api: Api<$kind> = $api;
                let l = api
                    .list(&mine)
                    .await
                    .map_err(|e| K8sError::api(concat!("list ", stringify!($kind)), e))?;
                for o in l
                    .items
                    .into_iter()
                    .filter(|o| o.metadata.name.as_deref() != Some(crate::dra::SHARED_DEVICE_CLASS))
                {
                    left.push(format!(
                        "{} {}",
                        stringify!($kind),
                        o.metadata.name.unwrap_or_default()
                    ));
                }
            }};
        }
        names!(DaemonSet, Api::namespaced(client.clone(), ns));
        names!(Secret, Api::namespaced(client.clone(), ns));
        names!(ServiceAccount, Api::namespaced(client.clone(), ns));
        names!(Role, Api::namespaced(client.clone(), ns));
        names!(RoleBinding, Api::namespaced(client.clone(), ns));
        names!(ResourceClaimTemplate, Api::namespaced(client.clone(), ns));
        names!(DeviceClass, Api::all(client.clone()));
        let nss: Api<Namespace> = Api::all(client.clone());
        let n = nss
            .get_opt(ns)
            .await
            .map_err(|e| K8sError::api("get namespace", e))?;
        if n.is_some_and(|n| n.metadata.deletion_timestamp.is_none()) {
            left.push(format!("Namespace {ns}"));
        }
        Ok(left)
    })
}
