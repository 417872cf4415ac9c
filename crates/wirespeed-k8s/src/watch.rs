//! The watcher on Kubernetes (`wirespeed k8s watch`): `fleet watch` as a
//! one-replica Deployment beside the agents' DaemonSet, in a namespace of
//! its own that stays until `k8s watch delete`.
//!
//! - [`objects`]: the agents' objects ([`crate::manifests::build`]), the
//!   watcher's Deployment (service account [`RUNNER_SA`], which the
//!   namespace's discover Role lets read pods) and a Service in front of
//!   its live page, `/metrics` (with Prometheus scrape annotations) and
//!   `/v1/watch`. Both pod templates carry the key's digest, so a new key
//!   rolls agents and watcher together.
//! - [`run_in_cluster`]: what the watcher's pod runs. It finds its agents
//!   through the API server, watches them, and when the set changes (a
//!   node joins or leaves, an agent pod is replaced) it lets the tests in
//!   flight finish, marks the links of a node left without an agent down,
//!   and watches the agents Ready then on the same history. Only the
//!   first set waits for a rollout; a running watcher outlives a failed
//!   set.
//! - [`apply_blocking`], [`status_blocking`], [`delete_blocking`]: what
//!   the user runs from anywhere that reaches the API server; the page and
//!   state are read through the API server's service proxy.

use crate::discover::{Agent, agent_of, discover_with};
use crate::manifests::{
    self, APP_AGENT, APP_LABEL, KEY_DIR, KEY_ENTRY, KEY_SECRET, MANAGED_BY, NETWORK_LABEL, Network,
    Object, Options, RUNNER_SA,
};
use crate::rollout::{Watch, ready};
use crate::{K8sError, cluster};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, HTTPGetAction,
    PersistentVolumeClaimVolumeSource, Pod, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Client;
use kube::api::{Api, ListParams};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirespeed_fleet::watch::{Live, WatchOptions};
use wirespeed_fleet::watch_http::PageFn;
use wirespeed_fleet::{AgentSpec, Fleet};
use wirespeed_types::fleet::WatchState;

/// Name of the watcher's Deployment and Service, and its pods'
/// [`APP_LABEL`].
pub const WATCHER: &str = "wirespeed-watch";
/// The namespace `k8s watch` uses unless told otherwise.
pub const DEFAULT_NAMESPACE: &str = "wirespeed-watch";
/// The port the watcher serves its page, `/metrics` and `/v1/watch` on.
pub const WATCH_PORT: u16 = 5390;
/// Where the history lives in the watcher's pod.
pub const HISTORY_DIR: &str = "/var/lib/wirespeed";
/// The pod-template annotation holding the key's digest.
pub const KEY_DIGEST: &str = "wirespeed.dev/key-sha256";

/// The watcher's part of the objects.
#[derive(Debug, Clone)]
pub struct Watcher {
    /// The network mode whose agents it watches: host or pod.
    pub network: Network,
    /// More `fleet watch` flags (the caller checks them).
    pub args: Vec<String>,
    /// The user's PersistentVolumeClaim for the history; None: an
    /// emptyDir, which outlives a restart of the container, not the pod.
    pub history_claim: Option<String>,
    /// How often the watcher re-lists its agents.
    pub rediscover: Duration,
}

/// The agents' objects and the watcher's, in apply order.
pub fn objects(o: &Options, w: &Watcher) -> Result<Vec<Object>, K8sError> {
    if o.networks != [w.network] || w.network == Network::Dra || w.network == Network::PodPeer {
        return Err(K8sError::Invalid(format!(
            "k8s watch watches one network, host or pod (not {})",
            o.networks
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    if let Some(c) = &w.history_claim
        && !manifests::is_dns_label(c)
    {
        return Err(K8sError::Invalid(format!(
            "--history-claim {c:?} is not a valid claim name"
        )));
    }
    let digest = key_digest(&o.key);
    let mut out = manifests::build(o)?;
    for obj in &mut out {
        if let Object::DaemonSet(ds) = obj
            && let Some(spec) = ds.spec.as_mut()
        {
            annotate(&mut spec.template, &digest);
        }
    }
    out.push(Object::Deployment(Box::new(deployment(o, w, &digest))));
    out.push(Object::Service(Box::new(service(o))));
    Ok(out)
}

/// The key's SHA-256, hex.
fn key_digest(key: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(key)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn annotate(t: &mut PodTemplateSpec, digest: &str) {
    t.metadata
        .get_or_insert_with(ObjectMeta::default)
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(KEY_DIGEST.into(), digest.into());
}

/// The labels of the watcher's pods (and its selector).
fn watcher_labels() -> BTreeMap<String, String> {
    BTreeMap::from([(APP_LABEL.to_string(), WATCHER.to_string())])
}

/// What the watcher's container runs: `k8s watch in-cluster` with the
/// agents' ports, then the user's `fleet watch` flags.
pub fn watcher_args(o: &Options, w: &Watcher) -> Vec<String> {
    let mut a: Vec<String> = [
        "k8s",
        "watch",
        "in-cluster",
        "--namespace",
        &o.namespace,
        "--network",
        w.network.as_str(),
        "--port",
        &o.port.to_string(),
        "--http-port",
        &o.http_port.to_string(),
        "--rediscover",
        &format!("{}s", w.rediscover.as_secs().max(1)),
        "--key-file",
        &format!("{KEY_DIR}/{KEY_ENTRY}"),
        "--history",
        &format!("{HISTORY_DIR}/history.db"),
        "--listen",
        &format!("0.0.0.0:{WATCH_PORT}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(w.args.iter().cloned());
    a
}

fn watcher_container(o: &Options, w: &Watcher) -> Container {
    Container {
        name: "watch".into(),
        image: Some(o.image.clone()),
        args: Some(watcher_args(o, w)),
        ports: Some(vec![ContainerPort {
            name: Some("http".into()),
            container_port: i32::from(WATCH_PORT),
            protocol: Some("TCP".into()),
            ..ContainerPort::default()
        }]),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "key".into(),
                mount_path: KEY_DIR.into(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "history".into(),
                mount_path: HISTORY_DIR.into(),
                ..VolumeMount::default()
            },
        ]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/healthz".into()),
                port: IntOrString::Int(i32::from(WATCH_PORT)),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(5),
            ..Probe::default()
        }),
        security_context: Some(manifests::restricted_security()),
        ..Container::default()
    }
}

fn watcher_volumes(w: &Watcher) -> Vec<Volume> {
    let history = match &w.history_claim {
        Some(c) => Volume {
            name: "history".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: c.clone(),
                read_only: Some(false),
            }),
            ..Volume::default()
        },
        None => Volume {
            name: "history".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
    };
    vec![manifests::key_volume(), history]
}

/// One replica, replaced with `Recreate`: two watchers never share a
/// history file.
fn deployment(o: &Options, w: &Watcher, digest: &str) -> Deployment {
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(watcher_labels()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            service_account_name: Some(RUNNER_SA.into()),
            node_selector: (!o.node_selector.is_empty()).then(|| o.node_selector.clone()),
            tolerations: (!o.tolerations.is_empty()).then(|| o.tolerations.clone()),
            priority_class_name: o.priority_class.clone(),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                ..manifests::image_user()
            }),
            containers: vec![watcher_container(o, w)],
            volumes: Some(watcher_volumes(w)),
            ..PodSpec::default()
        }),
    };
    annotate(&mut template, digest);
    Deployment {
        metadata: o.meta(WATCHER, true),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(watcher_labels()),
                ..LabelSelector::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("Recreate".into()),
                ..DeploymentStrategy::default()
            }),
            template,
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

/// The watcher's Service, with the scrape annotations Prometheus'
/// common Kubernetes service-discovery configs read, and the watcher's
/// app label, which a ServiceMonitor selects it by (charts/wirespeed).
fn service(o: &Options) -> Service {
    let mut meta = o.meta(WATCHER, true);
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .extend(watcher_labels());
    meta.annotations = Some(BTreeMap::from([
        ("prometheus.io/scrape".to_string(), "true".to_string()),
        ("prometheus.io/port".to_string(), WATCH_PORT.to_string()),
        ("prometheus.io/path".to_string(), "/metrics".to_string()),
    ]));
    Service {
        metadata: meta,
        spec: Some(ServiceSpec {
            selector: Some(watcher_labels()),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: i32::from(WATCH_PORT),
                target_port: Some(IntOrString::String("http".into())),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The fleet of discovered agents, each named by its node (so a
/// replaced pod continues its node's history).
pub fn fleet_of(agents: &[Agent], port: u16, http_port: u16) -> Fleet {
    Fleet {
        agents: agents
            .iter()
            .map(|a| crate::run::agent_spec(&a.node, a, port, http_port))
            .collect::<Vec<AgentSpec>>(),
    }
}

/// Where the watcher's pod finds its agents.
#[derive(Debug, Clone)]
pub struct InCluster {
    /// Its namespace (the agents').
    pub namespace: String,
    /// The agents' network mode.
    pub network: Network,
    /// The agents' engine port.
    pub port: u16,
    /// The agents' HTTP port.
    pub http_port: u16,
    /// How often the agents are listed again.
    pub rediscover: Duration,
    /// Longest wait for the agents to be Ready.
    pub ready_timeout: Duration,
}

/// Who the agents are: node, pod and address, as compared between lists.
type Identity = BTreeSet<(String, String, IpAddr)>;

fn identity(agents: &[Agent]) -> Identity {
    agents
        .iter()
        .map(|a| (a.node.clone(), a.pod.clone(), a.control))
        .collect()
}

/// The Ready agents now (no wait).
async fn listed(client: &Client, c: &InCluster) -> Result<Vec<Agent>, K8sError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &c.namespace);
    let sel = format!("{APP_LABEL}={APP_AGENT},{NETWORK_LABEL}={}", c.network);
    let list = pods
        .list(&ListParams::default().labels(&sel))
        .await
        .map_err(|e| K8sError::api("list the agents' pods", e))?;
    list.items
        .iter()
        .filter(|p| ready(p))
        .map(|p| agent_of(c.network, p, &BTreeMap::new()))
        .collect()
}

/// How the agents changed: a sentence, and the nodes that no longer have
/// a Ready agent, each with why its links are down.
struct Changed {
    why: String,
    gone: Vec<(String, String)>,
}

/// Returns when the agents differ from `now`; looks every
/// `c.rediscover`. A failed list is logged and is not a change.
async fn changed(
    client: &Client,
    c: &InCluster,
    now: &[Agent],
    log: &(dyn Fn(&str) + Sync),
) -> Changed {
    let was = identity(now);
    // Since when listing fails (the API server out): said once, and once
    // more when it works again; the known agents are probed meanwhile.
    let mut failing: Option<Instant> = None;
    loop {
        tokio::time::sleep(c.rediscover).await;
        let listing = listed(client, c).await;
        match (&listing, failing) {
            (Err(e), None) => {
                failing = Some(Instant::now());
                log(&format!(
                    "listing the agents failed: {e}; probing the {} agents known meanwhile",
                    now.len()
                ));
            }
            (Ok(_), Some(t)) => {
                failing = None;
                log(&format!(
                    "listing the agents works again after {:.0} s",
                    t.elapsed().as_secs_f64()
                ));
            }
            _ => {}
        }
        match listing {
            Ok(a) if identity(&a) != was => {
                let is = identity(&a);
                let gone: Vec<&str> = was.difference(&is).map(|x| x.1.as_str()).collect();
                let new: Vec<&str> = is.difference(&was).map(|x| x.1.as_str()).collect();
                return Changed {
                    why: format!(
                        "the agents changed (gone: {}; new or moved: {})",
                        or_none(&gone),
                        or_none(&new)
                    ),
                    gone: nodes_left(now, &a),
                };
            }
            _ => {}
        }
    }
}

/// The nodes of `was` with no agent in `is`, each with the reason its
/// links are down. A lost node's pod turns not Ready once the node
/// controller marks the node; a deleted pod leaves until its replacement
/// is Ready.
fn nodes_left(was: &[Agent], is: &[Agent]) -> Vec<(String, String)> {
    was.iter()
        .filter(|w| !is.iter().any(|a| a.node == w.node))
        .map(|w| {
            let why = format!(
                "node {} left the watched set: its agent pod {} is gone or not Ready",
                w.node, w.pod
            );
            (w.node.clone(), why)
        })
        .collect()
}

fn or_none(v: &[&str]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// What the watcher's pod runs: finds its agents (waiting for them to be
/// Ready), watches them until `opts.duration` passes or the set changes,
/// then watches the new set; serves `http` meanwhile.
pub fn run_in_cluster(
    c: &InCluster,
    opts: &WatchOptions,
    http: Option<(std::net::TcpListener, PageFn)>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<WatchState, K8sError> {
    cluster::runtime()?.block_on(async {
        let client = cluster::client(None).await?;
        let live = Arc::new(Live::default());
        let stop_http = Arc::new(tokio::sync::Notify::new());
        if let Some((l, page)) = http {
            tokio::spawn(wirespeed_fleet::watch_http::serve(
                l,
                live.clone(),
                page,
                stop_http.clone(),
            ));
        }
        let r = watch_sets(&client, c, opts, live, log).await;
        stop_http.notify_waiters();
        r
    })
}

/// One watch per agent set, on the same history and live state, until
/// the watch ends by itself (its duration, or an error).
async fn watch_sets(
    client: &Client,
    c: &InCluster,
    opts: &WatchOptions,
    live: Arc<Live>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<WatchState, K8sError> {
    let end = opts.duration.map(|d| Instant::now() + d);
    let mut first = true;
    loop {
        // The first set waits for the DaemonSet to roll out (a failure
        // there is apply's to report); a later set is the agents Ready
        // now: a running watcher neither waits for a rollout nor stops
        // on its problems (a lost node, pods marked not Ready after an
        // API server outage).
        let found = async {
            if first {
                let watch = Watch::new(c.ready_timeout, log);
                discover_with(client, &c.namespace, c.network, &watch).await
            } else {
                Ok(ready_now(client, c, log).await)
            }
        };
        let agents = tokio::select! {
            a = found => a?,
            _ = interrupted(opts) => return Ok(live.state.lock().unwrap_or_else(|p| p.into_inner()).clone()),
        };
        let was_first = std::mem::replace(&mut first, false);
        match watch_set(client, c, opts, &live, &agents, end, log).await? {
            SetEnd::Done(st) => return Ok(st),
            SetEnd::Changed => {}
            // A set's watch that fails (none of its agents answers, say)
            // ends the watcher only when it is the first or its time is
            // up: a running watcher says why and looks at its agents
            // again.
            SetEnd::Failed(e) if was_first || end.is_some_and(|t| Instant::now() >= t) => {
                return Err(K8sError::fleet("fleet watch", e));
            }
            SetEnd::Failed(e) => {
                log(&format!(
                    "the watch of {} agents failed: {e}; looking at the agents again in {} s",
                    agents.len(),
                    c.rediscover.as_secs()
                ));
                tokio::time::sleep(c.rediscover).await;
            }
        }
    }
}

/// How the watch of one agent set ended.
enum SetEnd {
    /// By itself (its duration) or interrupted (a failure then is
    /// returned as an error): the state.
    Done(WatchState),
    /// The agents changed; the links of nodes that left are marked down.
    Changed,
    /// It failed.
    Failed(wirespeed_fleet::FleetError),
}

/// Watches `agents` until the watch ends, is interrupted, or the agents
/// change.
async fn watch_set(
    client: &Client,
    c: &InCluster,
    opts: &WatchOptions,
    live: &Arc<Live>,
    agents: &[Agent],
    end: Option<Instant>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<SetEnd, K8sError> {
    let fleet = fleet_of(agents, c.port, c.http_port);
    let names: Vec<String> = agents
        .iter()
        .map(|a| format!("{} ({} at {})", a.node, a.pod, a.control))
        .collect();
    log(&format!(
        "watching {} agents: {}",
        agents.len(),
        names.join(", ")
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let mut o = opts.clone();
    o.stop = Some(stop.clone());
    o.duration = end.map(|e| e.saturating_duration_since(Instant::now()));
    let w = wirespeed_fleet::watch::watch(&fleet, &o, live.clone());
    tokio::pin!(w);
    let failed = SetEnd::Failed;
    Ok(tokio::select! {
        r = &mut w => r.map_or_else(failed, SetEnd::Done),
        _ = interrupted(opts) => SetEnd::Done(w.await.map_err(|e| K8sError::fleet("fleet watch", e))?),
        ch = changed(client, c, agents, log) => {
            log(&format!("{}: finishing the tests in flight, then watching the new set", ch.why));
            stop.store(true, Ordering::Relaxed);
            match w.await {
                Ok(_) => {
                    mark_gone(opts, live, &ch.gone, log)?;
                    SetEnd::Changed
                }
                Err(e) => failed(e),
            }
        }
    })
}

/// The Ready agents, listed every `c.rediscover` until there is one; a
/// failed list or an empty one is logged once.
async fn ready_now(client: &Client, c: &InCluster, log: &(dyn Fn(&str) + Sync)) -> Vec<Agent> {
    let mut said = false;
    loop {
        match listed(client, c).await {
            Ok(a) if !a.is_empty() => return a,
            Ok(_) if !said => log("no agent is Ready: waiting for one"),
            Err(e) if !said => log(&format!("listing the agents failed: {e}; trying again")),
            _ => {}
        }
        said = true;
        tokio::time::sleep(c.rediscover).await;
    }
}

/// Marks the links of the nodes that left as down, and says so.
fn mark_gone(
    opts: &WatchOptions,
    live: &Live,
    gone: &[(String, String)],
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), K8sError> {
    if gone.is_empty() {
        return Ok(());
    }
    let n = wirespeed_fleet::watch::mark_gone(&opts.history, live, gone)
        .map_err(|e| K8sError::fleet("mark the links of the nodes that left down", e))?;
    let why: Vec<&str> = gone.iter().map(|(_, w)| w.as_str()).collect();
    log(&format!("{}: {n} links marked down", why.join("; ")));
    Ok(())
}

/// Resolves once the watch is interrupted (a stop signal); never when
/// nothing can interrupt it.
async fn interrupted(opts: &WatchOptions) {
    let Some(flag) = &opts.interrupt else {
        return std::future::pending().await;
    };
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The watcher's state through the API server's service proxy.
async fn state(client: &Client, ns: &str) -> Result<WatchState, K8sError> {
    let svcs: Api<Service> = Api::namespaced(client.clone(), ns);
    let svc = svcs
        .get_opt(WATCHER)
        .await
        .map_err(|e| K8sError::api(format!("get Service {ns}/{WATCHER}"), e))?;
    if svc.is_none() {
        return Err(K8sError::Invalid(format!(
            "no watcher in namespace {ns}: it has no Service {WATCHER} (`k8s watch apply --namespace {ns}` makes one)"
        )));
    }
    let path = format!("/api/v1/namespaces/{ns}/services/{WATCHER}:http/proxy/v1/watch");
    let req = http::Request::get(&path)
        .body(Vec::new())
        .map_err(|error| K8sError::Request {
            what: format!("GET {path}"),
            error,
        })?;
    // kube's client retries a 503 (the proxy's "no endpoints available"
    // while the watcher is not Ready) for minutes: bound the whole call.
    match tokio::time::timeout(STATE_TIMEOUT, client.request::<WatchState>(req)).await {
        Ok(r) => r.map_err(|e| K8sError::api(format!("read the watcher's state (GET {path})"), e)),
        Err(_) => Err(K8sError::Timeout {
            what: format!("the watcher's state (GET {path}; is its pod Ready?)"),
            secs: STATE_TIMEOUT.as_secs(),
        }),
    }
}

/// The longest wait for the watcher's state through the API server.
const STATE_TIMEOUT: Duration = Duration::from_secs(20);

/// The key in the namespace's Secret, when there is one.
async fn existing_key(client: &Client, ns: &str) -> Result<Option<Vec<u8>>, K8sError> {
    let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), ns);
    let s = api
        .get_opt(KEY_SECRET)
        .await
        .map_err(|e| K8sError::api(format!("get Secret {ns}/{KEY_SECRET}"), e))?;
    Ok(s.and_then(|s| s.data?.remove(KEY_ENTRY)).map(|b| b.0))
}

/// What `k8s watch apply` does: keeps the namespace's key unless
/// `key_given`, applies the objects (server-side apply: again to change
/// them), waits for the agents, then for the watcher to watch them all.
pub fn apply_blocking(
    kubeconfig: Option<&Path>,
    mut o: Options,
    w: &Watcher,
    key_given: bool,
    timeout: Duration,
    log: &(dyn Fn(&str) + Sync),
) -> Result<WatchState, K8sError> {
    cluster::runtime()?.block_on(async {
        let client = cluster::client(kubeconfig).await?;
        if !key_given && let Some(k) = existing_key(&client, &o.namespace).await? {
            log("keeping the fleet key already in the namespace");
            o.key = k;
        }
        let objs = objects(&o, w)?;
        for obj in &objs {
            cluster::apply(&client, obj).await?;
            log(&format!("applied {}", obj.describe()));
        }
        let deadline = Instant::now() + timeout;
        let agents =
            discover_with(&client, &o.namespace, w.network, &Watch::new(timeout, log)).await?;
        log(&format!("{} agents Ready", agents.len()));
        let left = deadline.saturating_duration_since(Instant::now());
        watching(&client, &o.namespace, agents.len(), left, log).await
    })
}

/// Waits until the watcher serves a state naming `n` agents; a watcher
/// pod in trouble is named with its reason.
async fn watching(
    client: &Client,
    ns: &str,
    n: usize,
    timeout: Duration,
    log: &(dyn Fn(&str) + Sync),
) -> Result<WatchState, K8sError> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match watcher_pod_trouble(client, ns).await? {
            Some(t) if t.terminal => {
                return Err(K8sError::Discovery(format!("the watcher cannot run: {t}")));
            }
            Some(t) => t.to_string(),
            None => match rolling_out(client, ns).await? {
                Some(r) => r,
                None => match state(client, ns).await {
                    Ok(s) if s.agents.len() == n => return Ok(s),
                    Ok(s) => format!("it watches {} of {n} agents so far", s.agents.len()),
                    Err(e) => e.to_string(),
                },
            },
        };
        if Instant::now() >= deadline {
            return Err(K8sError::Discovery(format!(
                "the watcher did not watch the {n} agents within {} s: {last}",
                timeout.as_secs()
            )));
        }
        log(&format!("waiting for the watcher: {last}"));
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// What keeps the watcher's Deployment from having rolled out the
/// objects just applied, or None once it has: a changed pod template
/// replaces the watcher (`Recreate`), and until then the state read
/// through the Service would be the old watcher's.
async fn rolling_out(client: &Client, ns: &str) -> Result<Option<String>, K8sError> {
    let d = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(WATCHER)
        .await
        .map_err(|e| K8sError::api(format!("get Deployment {ns}/{WATCHER}"), e))?;
    let generation = d.metadata.generation.unwrap_or(0);
    let st = d.status.unwrap_or_default();
    let observed = st.observed_generation.unwrap_or(0);
    let (all, updated, available) = (
        st.replicas.unwrap_or(0),
        st.updated_replicas.unwrap_or(0),
        st.available_replicas.unwrap_or(0),
    );
    Ok(
        (observed < generation || all != 1 || updated != 1 || available != 1).then(|| {
            format!(
                "Deployment {ns}/{WATCHER} rolling out (generation {generation}, observed {observed}; pods {all}, updated {updated}, available {available})"
            )
        }),
    )
}

/// The first problem of the watcher's pod, or that there is none yet.
async fn watcher_pod_trouble(
    client: &Client,
    ns: &str,
) -> Result<Option<crate::rollout::Problem>, K8sError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = pods
        .list(&ListParams::default().labels(&format!("{APP_LABEL}={WATCHER}")))
        .await
        .map_err(|e| K8sError::api("list the watcher's pods", e))?;
    let Some(p) = list.items.first() else {
        return Ok(Some(crate::rollout::Problem {
            pod: None,
            node: None,
            reason: "NoPod".into(),
            message: format!("no pod of Deployment {ns}/{WATCHER} yet"),
            terminal: false,
        }));
    };
    let (problems, waiting) = crate::rollout::pod_state(p);
    Ok(problems.into_iter().next().or_else(|| {
        waiting.map(|w| crate::rollout::Problem {
            pod: None,
            node: None,
            reason: "NotReady".into(),
            message: w,
            terminal: false,
        })
    }))
}

/// What `k8s watch status` prints: the watcher's state, read through the
/// API server.
pub fn status_blocking(kubeconfig: Option<&Path>, ns: &str) -> Result<WatchState, K8sError> {
    cluster::runtime()?.block_on(async {
        let client = cluster::client(kubeconfig).await?;
        state(&client, ns).await
    })
}

/// What `k8s watch delete` does: deletes the namespace (and so everything
/// in it, history included unless it is on the user's claim) when
/// wirespeed made it, and waits at most `wait` for it to be gone.
pub fn delete_blocking(
    kubeconfig: Option<&Path>,
    ns: &str,
    wait: Duration,
    log: &(dyn Fn(&str) + Sync),
) -> Result<bool, K8sError> {
    cluster::runtime()?.block_on(async {
        let client = cluster::client(kubeconfig).await?;
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let Some(n) = api
            .get_opt(ns)
            .await
            .map_err(|e| K8sError::api(format!("get namespace {ns}"), e))?
        else {
            return Ok(false);
        };
        let ours = n
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(MANAGED_BY.0))
            .is_some_and(|v| v == MANAGED_BY.1);
        if !ours {
            return Err(K8sError::Invalid(format!(
                "namespace {ns} was not made by wirespeed (no label {}={}): not deleting it",
                MANAGED_BY.0, MANAGED_BY.1
            )));
        }
        let obj = Object::Namespace(n);
        cluster::delete(&client, &obj, wait).await?;
        let deadline = Instant::now() + wait;
        while api
            .get_opt(ns)
            .await
            .map_err(|e| K8sError::api(format!("get namespace {ns}"), e))?
            .is_some()
        {
            if Instant::now() >= deadline {
                return Err(K8sError::Timeout {
                    what: format!("namespace {ns} to be deleted"),
                    secs: wait.as_secs(),
                });
            }
            log(&format!("waiting for namespace {ns} to be gone"));
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        Ok(true)
    })
}

/// Where the page is, for a user with kubectl.
pub fn how_to_reach(ns: &str) -> String {
    format!(
        "the live page, /metrics and /v1/watch: `kubectl -n {ns} port-forward service/{WATCHER} {WATCH_PORT}` then http://127.0.0.1:{WATCH_PORT}/ (or through the API server: /api/v1/namespaces/{ns}/services/{WATCHER}:http/proxy/)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123";

    fn opts(n: Network) -> Options {
        let mut o = Options::new(vec![n], "ws-watch", KEY);
        o.image = "reg/wirespeed@sha256:00".into();
        o.privileged_namespace = n == Network::Host;
        o
    }

    fn watcher(n: Network) -> Watcher {
        Watcher {
            network: n,
            args: vec!["--probe-period".into(), "10s".into()],
            history_claim: None,
            rediscover: Duration::from_secs(30),
        }
    }

    fn agent(node: &str, pod: &str) -> Agent {
        Agent {
            pod: pod.into(),
            node: node.into(),
            network: Network::Pod,
            control: "10.0.0.1".parse().unwrap(),
            nics: Vec::new(),
        }
    }

    #[test]
    fn a_node_left_only_when_no_agent_of_its_is_listed() {
        let was = [agent("n1", "a1"), agent("n2", "a2"), agent("n3", "a3")];
        // n1's pod replaced (a new name, the same node): not gone; n3
        // gone.
        let is = [agent("n1", "b1"), agent("n2", "a2")];
        let gone = nodes_left(&was, &is);
        assert_eq!(gone.len(), 1, "{gone:?}");
        assert_eq!(gone[0].0, "n3");
        assert!(gone[0].1.contains("node n3 left") && gone[0].1.contains("a3"));
        assert!(nodes_left(&was, &was).is_empty());
    }

    #[test]
    fn the_watcher_joins_the_agents_with_a_service_and_the_key_digest() {
        let objs = objects(&opts(Network::Pod), &watcher(Network::Pod)).unwrap();
        let kinds: Vec<&str> = objs.iter().map(|o| o.kind()).collect();
        assert_eq!(kinds.first(), Some(&"Namespace"));
        assert_eq!(
            &kinds[kinds.len() - 3..],
            ["DaemonSet", "Deployment", "Service"]
        );
        let d = objs
            .iter()
            .find_map(|o| match o {
                Object::Deployment(d) => Some(d),
                _ => None,
            })
            .unwrap();
        let spec = d.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(1));
        assert_eq!(
            spec.strategy.as_ref().unwrap().type_.as_deref(),
            Some("Recreate")
        );
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.service_account_name.as_deref(), Some(RUNNER_SA));
        let args = pod.containers[0].args.as_ref().unwrap();
        assert_eq!(&args[..3], ["k8s", "watch", "in-cluster"]);
        assert_eq!(&args[args.len() - 2..], ["--probe-period", "10s"]);
        let digest = key_digest(KEY);
        for o in &objs {
            let t = match o {
                Object::Deployment(d) => &d.spec.as_ref().unwrap().template,
                Object::DaemonSet(d) => &d.spec.as_ref().unwrap().template,
                _ => continue,
            };
            let ann = t.metadata.as_ref().unwrap().annotations.as_ref().unwrap();
            assert_eq!(ann[KEY_DIGEST], digest, "{}", o.describe());
        }
    }

    #[test]
    fn one_network_of_host_or_pod_only_and_a_valid_claim() {
        let mut o = opts(Network::Pod);
        o.networks = vec![Network::Pod, Network::Host];
        assert!(objects(&o, &watcher(Network::Pod)).is_err());
        assert!(objects(&opts(Network::Dra), &watcher(Network::Dra)).is_err());
        let mut w = watcher(Network::Pod);
        w.history_claim = Some("Not_A_Name".into());
        let e = objects(&opts(Network::Pod), &w).unwrap_err().to_string();
        assert!(e.contains("--history-claim"), "{e}");
        w.history_claim = Some("history".into());
        let objs = objects(&opts(Network::Pod), &w).unwrap();
        let y = manifests::to_yaml(&objs).unwrap();
        assert!(y.contains("claimName: history"), "{y}");
    }

    #[test]
    fn a_replaced_pod_is_a_change_and_the_fleet_is_named_by_node() {
        let a = |pod: &str, ip: [u8; 4]| Agent {
            pod: pod.into(),
            node: "n1".into(),
            network: Network::Pod,
            control: IpAddr::from(ip),
            nics: vec![crate::AgentNic {
                name: None,
                addr: IpAddr::from(ip),
            }],
        };
        let one = [a("p1", [10, 0, 0, 1])];
        let two = [a("p2", [10, 0, 0, 9])];
        assert_ne!(identity(&one), identity(&two));
        let f = fleet_of(&two, 5201, 5390);
        assert_eq!(f.agents[0].name, "n1");
        assert_eq!(f.agents[0].control, "10.0.0.9:5201");
        assert_eq!(f.agents[0].nics[0].address, IpAddr::from([10, 0, 0, 9]));
    }
}
