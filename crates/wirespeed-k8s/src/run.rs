//! `wirespeed k8s run`: choose the nodes, plan each path's tests over
//! them, apply the agents the paths need (and a Service per server for
//! the service paths), wait for them, run each path's tests with
//! wirespeed-fleet's runner, and delete what the run made: on success, on
//! error, and on Ctrl-C or SIGTERM. The paths are compared side by side
//! ([`crate::Comparison`]); [`crate::gates`] judges them.

use crate::K8sError;
use crate::cluster;
use crate::deploy::Deployment;
use crate::discover::{Agent, discover_with};
use crate::manifests::{self, Network, Options};
use crate::nodes::{self, NodeChoice, NodeInfo, Selection};
use crate::paths::{self, Link, PathKind};
use crate::policy_load::Enforcement;
use crate::proxy::{self, Reach};
use crate::rollout::Watch;
use crate::sysctls::{self, InForce, SysctlPlan, SysctlReport};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirespeed_fleet::run::ProgressFn;
use wirespeed_fleet::{
    AgentSpec, Fleet, FleetResults, Job, NicSpec, Pattern, Plan, Progress, Round, RunOptions,
};
use wirespeed_types::fleet::LinkTest;

/// How a run goes.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The kubeconfig (else $KUBECONFIG, ~/.kube/config or in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The objects (namespace, image, key, profile, ...); the networks
    /// are set from the paths.
    pub objects: Options,
    /// The paths to measure, in order.
    pub paths: Vec<PathKind>,
    /// Which nodes take part.
    pub choice: NodeChoice,
    /// Who tests whom across nodes (unless `pairs` is given).
    pub pattern: Pattern,
    /// The node pairs of a pairs file (its text), instead of `pattern`.
    pub pairs: Option<String>,
    /// Tests per node at once.
    pub concurrent: u32,
    /// The fleet runner's options (workloads, repeats, key, progress).
    pub fleet: RunOptions,
    /// Longest wait for each mode's agents to be Ready.
    pub ready_timeout: Duration,
    /// Longest wait for each deleted object to be gone.
    pub delete_timeout: Duration,
    /// How long a request to the API server is retried after its first
    /// failure ([`crate::retry`]).
    pub api_retry: Duration,
    /// Leave the objects in place (for debugging a cluster).
    pub keep: bool,
    /// How the agents' HTTP APIs are reached: through the API server's pod
    /// proxy (the default) or straight to their addresses.
    pub reach: Reach,
    /// Called as each test lands (`--out` is rewritten from it).
    pub on_case: Option<OnCase>,
    /// Tests an earlier, interrupted run measured, by path (`--resume`):
    /// taken from it, not measured again.
    pub earlier: Vec<(PathKind, Vec<LinkTest>)>,
    /// NetworkPolicies to add before each round of the pod paths
    /// (`--policy-load`, ascending; empty: none, one round).
    pub policy_load: Vec<u32>,
    /// Interference instead of the pair matrix (`--interference`), over
    /// the first path's network; the server's node when named.
    pub interference: Option<(wirespeed_fleet::interference::Plan, Option<String>)>,
}

/// Called with the run as it stands each time a test lands: the paths
/// measured so far and the current one's tests, so that a run stopped
/// at any point has every finished test written down.
#[derive(Clone)]
pub struct OnCase(pub Arc<dyn Fn(&RunOutcome) + Send + Sync>);

impl std::fmt::Debug for OnCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnCase")
    }
}

/// One path's tests and results.
#[derive(Debug, Clone, Serialize)]
pub struct PathRun {
    /// The path.
    pub path: PathKind,
    /// The agents' network mode.
    pub network: Network,
    /// The agents its tests ran between.
    pub agents: Vec<Agent>,
    /// Each fleet entry's node (entries: `NODE`, `NODE_peer`, and
    /// `..._svc` for a Service in front of that agent).
    pub nodes: BTreeMap<String, String>,
    /// The fleet runner's results.
    pub results: FleetResults,
    /// NetworkPolicies selecting the agents while it ran (`--policy-load`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_load: Option<u32>,
}

impl PathRun {
    /// The path, and the policy load it ran under when there was one.
    pub fn label(&self) -> String {
        match self.policy_load {
            Some(n) => format!("{}, {n} policies", self.path),
            None => self.path.to_string(),
        }
    }
}

/// A whole run: the nodes, the paths that could not be planned, and
/// each path's results.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// The nodes chosen and those left out, with the reason.
    pub selection: Selection,
    /// Paths asked for with no test to run, with the reason.
    pub unplanned: Vec<String>,
    /// Node pairs no asked path measures, each with why.
    pub left_out: Vec<String>,
    /// Each measured path, in the order asked.
    pub runs: Vec<PathRun>,
    /// The profile's pod sysctls: which were set, which were left out and
    /// why, and what each pod had in force (read back from its agent).
    pub sysctls: Option<SysctlReport>,
    /// The nodes of agents that went down and stayed down, when the node
    /// itself looks lost ([`nodes::lost`]), each with the pairs it left
    /// unmeasured.
    pub lost_nodes: Vec<String>,
    /// The victim's curves of `--interference` (then `runs` is empty).
    pub interference: Option<wirespeed_types::interference::InterferenceReport>,
}

/// Resolves on Ctrl-C or SIGTERM, naming which.
async fn interrupted() -> &'static str {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "Ctrl-C",
        _ = term => "SIGTERM",
    }
}

/// The tests each path will run, and the paths that have none.
struct Planned {
    selection: Selection,
    paths: Vec<(PathKind, Vec<Link>)>,
    unplanned: Vec<String>,
    left_out: Vec<String>,
}

/// Chooses the nodes and plans every path over them.
async fn plan_paths(
    cfg: &RunConfig,
    client: &kube::Client,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Planned, K8sError> {
    let all = nodes::list(client).await?;
    let mut choice = cfg.choice.clone();
    choice.host_network = cfg.paths.contains(&PathKind::Host);
    let min = if cfg.paths.iter().all(|p| p.one_node()) {
        1
    } else {
        2
    };
    let selection = nodes::select(&all, &choice, min)?;
    for (n, why) in &selection.left_out {
        log(&format!("node {n} left out: {why}"));
    }
    let chosen = &selection.chosen;
    log(&format!(
        "nodes: {}",
        chosen
            .iter()
            .map(|n| format!("{} ({})", n.name, n.place()))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let pairs = match &cfg.pairs {
        Some(text) => paths::parse_pairs(text, chosen)?,
        None if chosen.len() >= 2 => wirespeed_fleet::plan::plan_n(chosen.len(), cfg.pattern, 1)
            .map_err(|e| K8sError::fleet("fleet run: plan the pairs", e))?
            .jobs()
            .map(|(_, j)| Link {
                client: j.client,
                server: j.server,
            })
            .collect(),
        None => Vec::new(),
    };
    let mut planned = Planned {
        paths: Vec::new(),
        unplanned: Vec::new(),
        left_out: Vec::new(),
        selection: Selection::default(),
    };
    for &p in &cfg.paths {
        match paths::plan(p, chosen, &pairs) {
            Ok(links) => planned.paths.push((p, links)),
            Err(why) => {
                log(&format!("not measured: {why}"));
                planned.unplanned.push(why.to_string());
            }
        }
    }
    // Host first: the baseline the others are compared with.
    planned.paths.sort_by_key(|(p, _)| *p);
    for (p, links) in &planned.paths {
        log(&format!("plan: {p}: {}", name_links(links, chosen)));
    }
    planned.left_out = paths::left_out(&pairs, &planned.paths, chosen);
    for l in &planned.left_out {
        log(&format!("not measured: {l}"));
    }
    if let Some(shared) = nodes::shared_host(chosen) {
        log(&shared);
    }
    planned.selection = selection;
    if planned.paths.is_empty() {
        return Err(K8sError::Invalid(format!(
            "no path has a test to run: {}",
            planned.unplanned.join("; ")
        )));
    }
    Ok(planned)
}

/// "1 Namespace, 3 DaemonSets, 9 Services" for objects named `KIND
/// NAMESPACE/NAME`, kinds in their first order.
fn by_kind(objs: &[String]) -> String {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for o in objs {
        let k = o.split(' ').next().unwrap_or(o);
        match kinds.iter_mut().find(|(x, _)| *x == k) {
            Some((_, n)) => *n += 1,
            None => kinds.push((k, 1)),
        }
    }
    kinds
        .iter()
        .map(|(k, n)| match n {
            1 => format!("1 {k}"),
            n if k.ends_with('s') => format!("{n} {k}es"),
            n if k.ends_with('y') => format!("{n} {}ies", &k[..k.len() - 1]),
            n => format!("{n} {k}s"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// "a -> b, b -> c" (a one-node link: "a"), for the plan's log.
fn name_links(links: &[Link], nodes: &[NodeInfo]) -> String {
    let name = |i: usize| nodes.get(i).map_or("?", |n| n.name.as_str());
    links
        .iter()
        .map(|l| {
            if l.client == l.server {
                name(l.client).to_string()
            } else {
                format!("{} -> {}", name(l.client), name(l.server))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The networks (DaemonSets) the planned paths need, in order.
fn networks_for(paths: &[(PathKind, Vec<Link>)]) -> Vec<Network> {
    let mut out: Vec<Network> = Vec::new();
    for (p, _) in paths {
        let mut need = vec![p.network()];
        if p.needs_peer() {
            need.push(Network::PodPeer);
        }
        for n in need {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

async fn measure(
    cfg: &RunConfig,
    client: &kube::Client,
    dep: &mut Deployment,
    log: &(dyn Fn(&str) + Sync),
) -> Result<RunOutcome, K8sError> {
    let planned = plan_paths(cfg, client, log).await?;
    let chosen = &planned.selection.chosen;
    let mut o = cfg.objects.clone();
    o.networks = networks_for(&planned.paths);
    o.node_names = Some(chosen.iter().map(|n| n.name.clone()).collect());
    host_in_existing_namespace(client, &mut o).await?;
    let level = namespace_level(client, &o).await?;
    let sysctl_plan = plan_sysctls(&o, client, chosen, &level, log).await;
    o.pod_sysctls = sysctl_plan
        .as_ref()
        .map(|p| p.apply.clone())
        .unwrap_or_default();
    if o.network_policy && o.api_sources.is_empty() {
        o.api_sources = api_server_sources(client, log).await;
    }
    let objs = manifests::build(&o)?;
    let names: Vec<String> = chosen.iter().map(|n| n.name.clone()).collect();
    // Checked against the ResourceSlices, and the shared DeviceClass made
    // when missing, before the namespace or anything else is applied.
    let objs = crate::dra::prepare(client, &o, &names, objs, log).await?;
    let holder = o
        .run_id
        .clone()
        .unwrap_or_else(|| format!("pid-{}", std::process::id()));
    let privileged = o.networks.contains(&Network::Host);
    dep.claim_namespace(client, &objs[0], &holder, privileged)
        .await?;
    for n in &dep.notes {
        log(n);
    }
    log(&format!(
        "holding the run lock of namespace {} (Lease {})",
        o.namespace,
        crate::lock::LEASE
    ));
    dep.apply(client, &objs[1..]).await?;
    log(&format!(
        "applied {} objects in namespace {} (label {}={})",
        objs.len(),
        o.namespace,
        manifests::RUN_LABEL,
        o.run_id.as_deref().unwrap_or("-")
    ));
    let mut agents: BTreeMap<Network, BTreeMap<String, Agent>> = BTreeMap::new();
    for &n in &o.networks {
        agents.insert(n, wait_agents(cfg, &o, client, n, log).await?);
    }
    let sysctls = match sysctl_plan {
        Some(plan) => Some(read_back(cfg, &o, client, &agents, plan, log).await),
        None => None,
    };
    let services = make_services(&o, client, dep, &planned.paths, chosen, &agents, log).await?;
    let mut done = RunOutcome {
        selection: planned.selection.clone(),
        unplanned: planned.unplanned.clone(),
        left_out: planned.left_out.clone(),
        runs: Vec::new(),
        sysctls,
        lost_nodes: Vec::new(),
        interference: None,
    };
    let ends = Endpoints {
        o: &o,
        chosen,
        agents: &agents,
        services: &services,
    };
    if let Some((plan, server)) = &cfg.interference {
        let net = planned
            .paths
            .first()
            .map_or(Network::Pod, |p| p.0.network());
        done.interference = Some(interfere(cfg, client, &ends, net, plan, server, log).await?);
        return Ok(done);
    }
    measure_levels(cfg, client, dep, &planned.paths, &ends, &mut done, log).await?;
    done.lost_nodes = lost_nodes(client, &done.runs).await;
    for l in &done.lost_nodes {
        log(l);
    }
    Ok(done)
}

/// Every path once, or with `--policy-load` every path at the first level
/// and the pod paths again at each later one, the level in force first
/// ([`crate::policy_load`]). On a cluster that does not enforce
/// NetworkPolicy the later levels are not measured, and said so.
async fn measure_levels(
    cfg: &RunConfig,
    client: &kube::Client,
    dep: &mut Deployment,
    paths: &[(PathKind, Vec<Link>)],
    ends: &Endpoints<'_>,
    done: &mut RunOutcome,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), K8sError> {
    let levels: Vec<Option<u32>> = if cfg.policy_load.is_empty() {
        vec![None]
    } else {
        cfg.policy_load.iter().copied().map(Some).collect()
    };
    let mut gate = None;
    if !cfg.policy_load.is_empty() {
        match policy_gate(cfg, client, ends, log).await? {
            Enforcement::Enforced(g) => gate = Some(g),
            Enforcement::NotEnforced(why) => {
                log(&why);
                let later: Vec<String> = levels[1..].iter().flatten().map(u32::to_string).collect();
                if !later.is_empty() {
                    done.unplanned
                        .push(format!("policy load {}: {why}", later.join(",")));
                }
            }
        }
    }
    for (i, level) in levels.iter().enumerate() {
        match (&mut gate, level) {
            (Some(g), Some(n)) => g.level(client, dep, ends.o, *n, log).await?,
            (None, Some(_)) if i > 0 => break,
            _ => {}
        }
        for (p, links) in paths {
            if i > 0 && p.network() != Network::Pod {
                continue;
            }
            let step = Step {
                path: *p,
                links,
                policy_load: *level,
            };
            let run = measure_path(cfg, client, &step, ends, done, log).await?;
            done.runs.push(run);
        }
    }
    Ok(())
}

/// The probes of `--policy-load`: each chosen node's pod-network agent
/// probing the next one's (a ring, so every node's enforcer is seen), or
/// with one node its peer agent.
async fn policy_gate(
    cfg: &RunConfig,
    client: &kube::Client,
    ends: &Endpoints<'_>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Enforcement, K8sError> {
    let nodes: Vec<&String> = ends
        .agents
        .get(&Network::Pod)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    let pairs: Vec<_> = match nodes.as_slice() {
        [] => Vec::new(),
        [a] => vec![(
            ends.entry(Network::Pod, a, false),
            ends.entry(Network::PodPeer, a, false),
        )],
        _ => (0..nodes.len())
            .map(|i| {
                let (a, b) = (nodes[i], nodes[(i + 1) % nodes.len()]);
                (
                    ends.entry(Network::Pod, a, false),
                    ends.entry(Network::Pod, b, false),
                )
            })
            .collect(),
    };
    let fopts = fleet_options(cfg, client, &ends.o.namespace);
    let mut probes = Vec::new();
    for pair in pairs {
        let (Some((a, _)), Some((b, _))) = pair else {
            continue;
        };
        let prober = wirespeed_fleet::run::client_of(&a, &fopts)
            .map_err(|e| K8sError::fleet("the policy probe", e))?;
        probes.push(crate::policy_load::Probe::new(
            prober,
            Fleet { agents: vec![a, b] },
        ));
    }
    if probes.is_empty() {
        return Err(K8sError::Invalid(
            "--policy-load needs two pod-network agents to probe the policies with: two nodes, or --paths same-node on one".into(),
        ));
    }
    crate::policy_load::Gate::start(probes, log).await
}

/// `--interference` over `network`'s agents: the server on the named (or
/// first chosen) node, the victim on the next, the loaders on the rest.
async fn interfere(
    cfg: &RunConfig,
    client: &kube::Client,
    ends: &Endpoints<'_>,
    network: Network,
    plan: &wirespeed_fleet::interference::Plan,
    server: &Option<String>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<wirespeed_types::interference::InterferenceReport, K8sError> {
    use wirespeed_fleet::interference::{NoRoles, Roles};
    let nodes: Vec<&str> = ends.chosen.iter().map(|n| n.name.as_str()).collect();
    let roles = Roles::pick(&nodes, server.as_deref()).map_err(|e| {
        K8sError::Invalid(match e {
            NoRoles::UnknownServer => format!(
                "--interference-server {}: not among the run's nodes ({})",
                server.as_deref().unwrap_or_default(),
                nodes.join(", ")
            ),
            NoRoles::TooFew => "--interference needs two nodes at least: a server and a victim (and more for the loaders)".into(),
        })
    })?;
    let mut fleet = Fleet { agents: Vec::new() };
    for n in &nodes {
        let (spec, _) = ends.entry(network, n, false).ok_or_else(|| {
            K8sError::Discovery(format!(
                "--interference: no Ready {network} agent on node {n}"
            ))
        })?;
        fleet.agents.push(spec);
    }
    let loaders: Vec<&str> = roles.loaders.iter().map(|&i| nodes[i]).collect();
    log(&format!(
        "interference: server {}, victim {}, loaders {} ({network} network)",
        nodes[roles.server],
        nodes[roles.victim],
        if loaders.is_empty() {
            "none".into()
        } else {
            loaders.join(", ")
        }
    ));
    let fopts = fleet_options(cfg, client, &ends.o.namespace);
    let on_point = |size: u32, p: &wirespeed_types::interference::Point| {
        let loaders = match p.k {
            0 => "none".to_string(),
            _ => format!("{:.2} Gbit/s", p.loaders_bps() / 1e9),
        };
        log(&format!(
            "interference {size} bytes K={}: {:.0} trans/s, p99 {:.1} us, loaders {loaders}",
            p.k, p.victim_tps, p.p99_us
        ));
    };
    wirespeed_fleet::interference::run(&fleet, &roles, plan, &fopts, &on_point)
        .await
        .map_err(|e| K8sError::fleet("--interference", e))
}

/// One path to measure, under the policy load in force.
struct Step<'a> {
    path: PathKind,
    links: &'a [Link],
    policy_load: Option<u32>,
}

/// The nodes of agents that ended the run down and look lost, each with
/// the pairs (`client>server`) it left unmeasured.
async fn lost_nodes(client: &kube::Client, runs: &[PathRun]) -> Vec<String> {
    let mut pairs: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for r in runs {
        for a in r.results.agents.iter().filter(|a| !a.up) {
            let Some(node) = r.nodes.get(&a.name) else {
                continue;
            };
            let set = pairs.entry(node.clone()).or_default();
            for t in &r.results.tests {
                if t.error.is_some() && (t.client == a.name || t.server == a.name) {
                    set.insert(format!("{}>{}", t.client, t.server));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (node, set) in pairs {
        if let Some(why) = nodes::lost(client, &node).await {
            let set: Vec<String> = set.into_iter().collect();
            out.push(format!("{why}; its pairs not measured: {}", set.join(", ")));
        }
    }
    out
}

/// The progress callback of one path's fleet run when tests are written
/// down as they land: `inner` first, then `sink` with `done` plus this
/// path (`current`) and its tests so far.
fn journal(
    sink: OnCase,
    done: &RunOutcome,
    current: PathRun,
    inner: Option<ProgressFn>,
) -> ProgressFn {
    let mut state = done.clone();
    state.runs.push(current);
    let state = Mutex::new(state);
    Arc::new(move |pr: &Progress| {
        if let Some(f) = &inner {
            f(pr);
        }
        if let Progress::Test(t) = pr {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(run) = st.runs.last_mut() {
                run.results.tests.push((**t).clone());
            }
            (sink.0)(&st);
        }
    })
}

/// The profile's sysctls the pod-network agents can have on every chosen
/// node (None: no profile sysctls, or host network only); logs each
/// sysctl's fate.
async fn plan_sysctls(
    o: &Options,
    client: &kube::Client,
    chosen: &[NodeInfo],
    level: &str,
    log: &(dyn Fn(&str) + Sync),
) -> Option<SysctlPlan> {
    let wanted = &o.profile.as_ref()?.1.sysctl;
    if wanted.is_empty() || o.networks.iter().all(|n| n.host_network()) {
        return None;
    }
    let nodes = sysctls::read_nodes(client, chosen).await;
    let plan = sysctls::plan(wanted, &nodes, level);
    for l in plan.lines() {
        log(&l);
    }
    Some(plan)
}

/// The Pod Security level the run's pods will meet: an existing
/// namespace's `enforce` label (empty when unset: the cluster's default),
/// else the level the run would give the namespace it makes.
/// Host-network agents in a namespace that already exists: fine when it
/// enforces `privileged` (as if --privileged-namespace were given, since
/// it is not relabelled), else refused now with the fixes that work for
/// an existing namespace (not the flag, which only labels one wirespeed
/// makes).
async fn host_in_existing_namespace(
    client: &kube::Client,
    o: &mut Options,
) -> Result<(), K8sError> {
    if !o.networks.contains(&Network::Host) || o.privileged_namespace {
        return Ok(());
    }
    match crate::deploy::enforced_level(client, &o.namespace).await? {
        None => Ok(()),
        Some(Some(l)) if l == "privileged" => {
            o.privileged_namespace = true;
            Ok(())
        }
        Some(l) => Err(crate::deploy::not_privileged(
            &o.namespace,
            &l.unwrap_or_else(|| "unset (the cluster default)".into()),
        )),
    }
}

async fn namespace_level(client: &kube::Client, o: &Options) -> Result<String, K8sError> {
    Ok(
        match crate::deploy::enforced_level(client, &o.namespace).await? {
            Some(level) => level.unwrap_or_default(),
            None if o.privileged_namespace => "privileged".into(),
            None => "restricted".into(),
        },
    )
}

/// The API server's own addresses (the `kubernetes` Service's
/// EndpointSlices in `default`), as /32 or /128: where its pod-proxy
/// connections come from on most clusters. Logged and empty when they
/// cannot be read. EndpointSlices, not the v1 Endpoints that 1.33 and
/// later deprecate (every call warns).
async fn api_server_sources(client: &kube::Client, log: &(dyn Fn(&str) + Sync)) -> Vec<String> {
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let api: kube::Api<EndpointSlice> = kube::Api::namespaced(client.clone(), "default");
    let lp = kube::api::ListParams::default().labels("kubernetes.io/service-name=kubernetes");
    match api.list(&lp).await {
        Ok(l) => {
            let mut out: Vec<String> = l
                .items
                .into_iter()
                .flat_map(|s| s.endpoints)
                .flat_map(|e| e.addresses)
                .filter_map(|a| a.parse::<IpAddr>().ok())
                .map(|ip| match ip {
                    IpAddr::V4(_) => format!("{ip}/32"),
                    IpAddr::V6(_) => format!("{ip}/128"),
                })
                .collect();
            out.sort();
            out.dedup();
            out
        }
        Err(e) => {
            log(&format!(
                "the API server's addresses could not be read ({e}): the NetworkPolicy admits the agents' HTTP port from the run's pods only (add --api-source CIDR)"
            ));
            Vec::new()
        }
    }
}

/// What each pod-network agent reads in its own /proc/sys for the planned
/// sysctls (its `/v1/facts`), logged where it differs from the plan.
async fn read_back(
    cfg: &RunConfig,
    o: &Options,
    client: &kube::Client,
    agents: &BTreeMap<Network, BTreeMap<String, Agent>>,
    plan: SysctlPlan,
    log: &(dyn Fn(&str) + Sync),
) -> SysctlReport {
    let services = BTreeMap::new();
    let ends = Endpoints {
        o,
        chosen: &[],
        agents,
        services: &services,
    };
    let fopts = fleet_options(cfg, client, &o.namespace);
    let mut in_force = Vec::new();
    for (n, by_node) in agents.iter().filter(|(n, _)| !n.host_network()) {
        for node in by_node.keys() {
            let Some((spec, a)) = ends.entry(*n, node, false) else {
                continue;
            };
            let (values, error) = match wirespeed_fleet::run::client_of(&spec, &fopts) {
                Ok(c) => match c.facts().await {
                    Ok(s) => (
                        plan.apply
                            .keys()
                            .map(|k| (k.clone(), s.sysctl(k).map(String::from)))
                            .collect(),
                        None,
                    ),
                    Err(e) => (BTreeMap::new(), Some(e.to_string())),
                },
                Err(e) => (BTreeMap::new(), Some(e.to_string())),
            };
            in_force.push(InForce {
                pod: a.pod.clone(),
                node: a.node.clone(),
                network: n.to_string(),
                values,
                error,
            });
        }
    }
    let report = SysctlReport { plan, in_force };
    for m in report.mismatches() {
        log(&format!("sysctl not in force: {m}"));
    }
    log(&format!(
        "pod sysctls read back from {} agents",
        report.in_force.len()
    ));
    report
}

/// The fleet runner's options with the run's way of reaching agents:
/// through the API server's pod proxy (`--reach api`) or straight.
fn fleet_options(cfg: &RunConfig, client: &kube::Client, ns: &str) -> RunOptions {
    let mut fopts = cfg.fleet.clone();
    if cfg.reach == Reach::Api {
        fopts.transport = Some(proxy::factory(
            client.clone(),
            ns,
            fopts.http_timeout,
            cfg.api_retry,
        ));
    }
    fopts
}

/// Waits for one DaemonSet's agents; by node.
async fn wait_agents(
    cfg: &RunConfig,
    o: &Options,
    client: &kube::Client,
    n: Network,
    log: &(dyn Fn(&str) + Sync),
) -> Result<BTreeMap<String, Agent>, K8sError> {
    log(&format!(
        "{n}: waiting for DaemonSet {} (at most {} s)",
        n.daemonset_name(),
        cfg.ready_timeout.as_secs()
    ));
    let mode_log = |l: &str| log(&format!("{n}: {l}"));
    let watch = Watch::new(cfg.ready_timeout, &mode_log);
    let found = discover_with(client, &o.namespace, n, &watch).await?;
    for a in &found {
        let nics: Vec<String> = a.nics.iter().map(|x| x.addr.to_string()).collect();
        log(&format!(
            "{n}: agent {} on {} at {} (NICs {})",
            a.pod,
            a.node,
            a.control,
            nics.join(", ")
        ));
    }
    Ok(found.into_iter().map(|a| (a.node.clone(), a)).collect())
}

/// The Service name in front of `network`'s agent on the `i`-th node.
fn service_name(network: Network, i: usize) -> String {
    format!("wirespeed-{}-{i}", network.as_str())
}

/// Makes a ClusterIP Service (and its EndpointSlice) in front of every
/// agent a service path tests, and reads their ClusterIPs: by
/// (network, node).
async fn make_services(
    o: &Options,
    client: &kube::Client,
    dep: &mut Deployment,
    planned: &[(PathKind, Vec<Link>)],
    chosen: &[NodeInfo],
    agents: &BTreeMap<Network, BTreeMap<String, Agent>>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<BTreeMap<(Network, String), IpAddr>, K8sError> {
    let mut targets: Vec<(Network, usize)> = Vec::new();
    for (p, links) in planned.iter().filter(|(p, _)| p.through_service()) {
        let n = if p.needs_peer() {
            Network::PodPeer
        } else {
            Network::Pod
        };
        for l in links {
            if !targets.contains(&(n, l.server)) {
                targets.push((n, l.server));
            }
        }
    }
    let mut objs = Vec::new();
    let mut names = Vec::new();
    for &(n, i) in &targets {
        let Some(a) = agents.get(&n).and_then(|m| m.get(&chosen[i].name)) else {
            continue;
        };
        let name = service_name(n, i);
        objs.extend(manifests::service(o, &name, a.control));
        names.push((n, chosen[i].name.clone(), name));
    }
    if objs.is_empty() {
        return Ok(BTreeMap::new());
    }
    dep.apply(client, &objs).await?;
    let mut out = BTreeMap::new();
    for (n, node, name) in names {
        let ip = cluster::cluster_ip(client, &o.namespace, &name).await?;
        log(&format!(
            "Service {name} at {ip} in front of the {n} agent on {node}"
        ));
        out.insert((n, node), ip);
    }
    Ok(out)
}

/// What a path's fleet is made from.
struct Endpoints<'a> {
    o: &'a Options,
    /// The nodes chosen, as the links index them.
    chosen: &'a [NodeInfo],
    agents: &'a BTreeMap<Network, BTreeMap<String, Agent>>,
    services: &'a BTreeMap<(Network, String), IpAddr>,
}

impl Endpoints<'_> {
    /// The fleet entry for `network`'s agent on `node`, reached through
    /// its Service when `via_service`; None when no agent runs there.
    fn entry(&self, network: Network, node: &str, via_service: bool) -> Option<(AgentSpec, Agent)> {
        let a = self.agents.get(&network)?.get(node)?;
        let mut name = node.to_string();
        if network == Network::PodPeer {
            name += "_peer";
        }
        let mut spec = agent_spec(&name, a, self.o.port, self.o.http_port);
        if via_service {
            let ip = self.services.get(&(network, node.to_string()))?;
            spec.name = name + "_svc";
            spec.control = SocketAddr::new(*ip, self.o.port).to_string();
            spec.nics.clear();
        }
        Some((spec, a.clone()))
    }
}

/// The fleet entry named `name` for agent `a` (engine on `port`, API on
/// `http_port`), labelled with its node, network and pod.
pub(crate) fn agent_spec(name: &str, a: &Agent, port: u16, http_port: u16) -> AgentSpec {
    AgentSpec {
        name: name.to_string(),
        agent_name: Some(a.pod.clone()),
        control: SocketAddr::new(a.control, port).to_string(),
        http: SocketAddr::new(a.control, http_port).to_string(),
        nics: a
            .nics
            .iter()
            .enumerate()
            .map(|(i, n)| NicSpec {
                name: n.name.clone().unwrap_or_else(|| format!("nic{i}")),
                address: n.addr,
            })
            .collect(),
        labels: [
            ("node".to_string(), a.node.clone()),
            ("network".to_string(), a.network.to_string()),
            ("pod".to_string(), a.pod.clone()),
        ]
        .into(),
    }
}

/// One path: its fleet (the client and server entries of its links),
/// the links in rounds, then the fleet runner.
async fn measure_path(
    cfg: &RunConfig,
    client: &kube::Client,
    step: &Step<'_>,
    ends: &Endpoints<'_>,
    done: &RunOutcome,
    log: &(dyn Fn(&str) + Sync),
) -> Result<PathRun, K8sError> {
    let (p, links) = (step.path, step.links);
    let server_net = if p.needs_peer() {
        Network::PodPeer
    } else {
        p.network()
    };
    let mut fleet = Fleet { agents: Vec::new() };
    let mut agents: Vec<Agent> = Vec::new();
    let mut nodes = BTreeMap::new();
    let mut nets = BTreeMap::new();
    let mut index = |e: Option<(AgentSpec, Agent)>, node: &str| -> Result<usize, K8sError> {
        let (spec, a) = e.ok_or_else(|| {
            K8sError::Discovery(format!("{p}: no Ready agent (or Service) on node {node}"))
        })?;
        if let Some(i) = fleet.agents.iter().position(|x| x.name == spec.name) {
            return Ok(i);
        }
        nodes.insert(spec.name.clone(), node.to_string());
        nets.insert(spec.name.clone(), a.network);
        fleet.agents.push(spec);
        if !agents.contains(&a) {
            agents.push(a);
        }
        Ok(fleet.agents.len() - 1)
    };
    let mut rounds = Vec::new();
    for r in paths::rounds(links, ends.chosen) {
        let mut jobs = Vec::new();
        for l in r {
            let (c, s) = (&ends.chosen[l.client].name, &ends.chosen[l.server].name);
            let client_i = index(ends.entry(p.network(), c, false), c)?;
            let server_i = index(ends.entry(server_net, s, p.through_service()), s)?;
            jobs.push(Job {
                client: client_i,
                server: server_i,
            });
        }
        rounds.push(jobs);
    }
    let k = cfg.concurrent.max(1) as usize;
    let plan = Plan {
        pattern: cfg.pattern,
        concurrent: cfg.concurrent.max(1),
        agents: fleet.agents.len(),
        rounds: rounds
            .chunks(k)
            .map(|c| Round { jobs: c.concat() })
            .collect(),
    };
    let label = match step.policy_load {
        Some(n) => format!("{p}, {n} policies"),
        None => p.to_string(),
    };
    log(&format!(
        "{label}: {} tests in {} rounds between {} agents; agents reached {}",
        plan.len(),
        plan.rounds.len(),
        agents.len(),
        match cfg.reach {
            Reach::Api => "through the API server's pod proxy (--reach api)",
            Reach::Direct => "on their addresses (--reach direct)",
        }
    ));
    let mut fopts = fleet_options(cfg, client, &ends.o.namespace);
    if p.through_service() {
        await_service_rules(&fleet, &plan, &fopts, &|l| log(&format!("{p}: {l}"))).await?;
    }
    let mut run = PathRun {
        path: p,
        network: p.network(),
        agents,
        nodes,
        results: FleetResults::default(),
        policy_load: step.policy_load,
    };
    fopts.earlier = earlier_of(cfg, p, log);
    fopts.replace = Some(replacer(cfg, client, nets));
    if let Some(sink) = &cfg.on_case {
        fopts.progress = Some(journal(sink.clone(), done, run.clone(), fopts.progress));
    }
    run.results = wirespeed_fleet::run_async(&fleet, &plan, &fopts)
        .await
        .map_err(|e| K8sError::fleet(format!("fleet run: {p}"), e))?;
    Ok(run)
}

/// Longest wait for a Ready replacement of an agent that went down.
const REPLACE_WAIT: Duration = Duration::from_secs(30);

/// Finds the replacement of a fleet agent that went down: the Ready pod
/// its DaemonSet made on the same node (at most [`REPLACE_WAIT`], or the
/// run's ready timeout when shorter), as an entry of the same name. An
/// entry reached through a Service keeps the Service as its address.
fn replacer(
    cfg: &RunConfig,
    client: &kube::Client,
    nets: BTreeMap<String, Network>,
) -> wirespeed_fleet::run::Replacer {
    let (client, o) = (client.clone(), cfg.objects.clone());
    let wait = cfg.ready_timeout.min(REPLACE_WAIT);
    Arc::new(move |old: AgentSpec| {
        let (client, o, net) = (client.clone(), o.clone(), nets.get(&old.name).copied());
        Box::pin(async move {
            let node = old.labels.get("node")?;
            let a = crate::discover::replacement(&client, &o.namespace, net?, node, wait).await?;
            let mut new = agent_spec(&old.name, &a, o.port, o.http_port);
            if old.name.ends_with("_svc") {
                new.control = old.control.clone();
                new.nics.clear();
            }
            Some(new)
        })
    })
}

/// The tests of path `p` an earlier run measured (`--resume`), logged.
fn earlier_of(cfg: &RunConfig, p: PathKind, log: &(dyn Fn(&str) + Sync)) -> Vec<LinkTest> {
    let tests: Vec<LinkTest> = cfg
        .earlier
        .iter()
        .filter(|(q, _)| *q == p)
        .flat_map(|(_, t)| t.iter().filter(|t| t.error.is_none()).cloned())
        .collect();
    if !tests.is_empty() {
        log(&format!(
            "{p}: {} tests measured by the earlier run are kept, not measured again",
            tests.len()
        ));
    }
    tests
}

/// Longest wait for a new Service's rules on every client's node.
const SERVICE_RULES_WAIT: Duration = Duration::from_secs(60);

/// Waits until every test of `plan` connects through its Service: each
/// node's service proxy (kube-proxy, or the CNI's) programs a new Service
/// a moment after its EndpointSlice appears, and a test before that is
/// refused. Probes with one short test per link of the plan until all
/// connect, then returns; after [`SERVICE_RULES_WAIT`] the run goes on
/// and reports what still fails.
async fn await_service_rules(
    fleet: &Fleet,
    plan: &Plan,
    opts: &RunOptions,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), K8sError> {
    let mut probe = opts.clone();
    probe.repeats = 1;
    probe.progress = None;
    probe.earlier.clear();
    probe.workloads.truncate(1);
    for w in &mut probe.workloads {
        w.spec.duration_s = 0.2;
        w.spec.warmup_s = 0.0;
        w.spec.bytes = None;
    }
    let deadline = tokio::time::Instant::now() + SERVICE_RULES_WAIT;
    loop {
        let r = wirespeed_fleet::run_async(fleet, plan, &probe)
            .await
            .map_err(|e| K8sError::fleet("fleet run: the Services' rules", e))?;
        let refused: Vec<&LinkTest> = r.tests.iter().filter(|t| t.error.is_some()).collect();
        let Some(first) = refused.first() else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            log(&format!(
                "{} of {} links still fail through their Services after {} s; measuring anyway",
                refused.len(),
                r.tests.len(),
                SERVICE_RULES_WAIT.as_secs()
            ));
            return Ok(());
        }
        log(&format!(
            "waiting for the service rules: {} of {} links refused ({} -> {}: {})",
            refused.len(),
            r.tests.len(),
            first.client,
            first.server,
            first.error.as_deref().unwrap_or("")
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every requested test that was not measured (failed, or skipped because
/// an agent was down), one line each: mode, workload, client -> server,
/// NIC pair, and why.
pub fn unmeasured(runs: &[PathRun]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        for t in &r.results.tests {
            let Some(err) = &t.error else { continue };
            let down = r
                .results
                .agents
                .iter()
                .filter(|a| !a.up && err.contains(&format!("agent {} ", a.name)))
                .filter_map(|a| a.error.as_deref())
                .map(|e| format!(" ({e})"))
                .collect::<String>();
            out.push(format!(
                "{} path, {}: {} -> {} ({} -> {}): {err}{down}",
                r.path,
                t.workload,
                t.client,
                t.server,
                or_dash(&t.client_nic),
                or_dash(&t.server_nic)
            ));
        }
    }
    out
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// Runs `cfg` (blocking: builds its own runtime). `log` gets one line per
/// step. Whatever happens, the objects the run applied are deleted unless
/// `keep` is set; an error in the run wins over one in cleanup, which is
/// then logged.
pub fn run_blocking(cfg: &RunConfig, log: &(dyn Fn(&str) + Sync)) -> Result<RunOutcome, K8sError> {
    cluster::runtime()?.block_on(async {
        let client = cluster::client_with(cfg.kubeconfig.as_deref(), cfg.api_retry).await?;
        let mut dep = Deployment::new();
        let r = tokio::select! {
            r = measure(cfg, &client, &mut dep, log) => r,
            s = interrupted() => Err(K8sError::Interrupted(s)),
        };
        if cfg.keep {
            log(&kept(cfg, &dep));
            return r;
        }
        let td = tokio::select! {
            t = dep.teardown(&client, cfg.delete_timeout) => t,
            s = interrupted() => Err(K8sError::Cleanup(format!("{s} during cleanup"))),
        };
        match (&r, td) {
            (_, Ok(gone)) if gone.is_empty() => {}
            (_, Ok(gone)) => log(&format!(
                "deleted the {} objects this run applied: {}",
                gone.len(),
                by_kind(&gone)
            )),
            // The results stand; what is left is said, for `k8s cleanup`.
            (Ok(_), Err(e)) if dep.unreachable => log(&e.to_string()),
            (Ok(_), Err(e)) => return Err(e),
            (Err(_), Err(e)) => log(&format!("also: {e}")),
        }
        r
    })
}

/// What `--keep` left and the commands that delete it.
fn kept(cfg: &RunConfig, dep: &Deployment) -> String {
    kept_text(dep.objects(), &cfg.objects.namespace)
}

/// What `--keep` left of `objects` in `ns`, and how to delete it: the
/// namespace when the run made it; otherwise only what the run made
/// (`kubectl delete namespace` would take the owner's other objects too).
fn kept_text(objects: &[crate::Object], ns: &str) -> String {
    let names: Vec<String> = objects.iter().map(|o| o.describe()).collect();
    let made_ns = objects
        .iter()
        .any(|o| matches!(o, crate::Object::Namespace(_)));
    let how = if made_ns {
        format!("`kubectl delete namespace {ns}`")
    } else {
        format!(
            "`wirespeed k8s cleanup --namespace {ns} --force` (the namespace was there before the run: it stays)"
        )
    };
    format!(
        "--keep: left {} objects in place ({}); delete them with {how}",
        names.len(),
        names.join(", "),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn kept_objects_are_deleted_with_their_namespace_only_when_the_run_made_it() {
        let mut o = crate::Options::new(vec![crate::Network::Pod], "ns1", b"0123456789abcdef0123");
        o.image = "r/wirespeed:1".into();
        let objs = crate::manifests::build(&o).unwrap();
        let made = super::kept_text(&objs, "ns1");
        assert!(
            made.ends_with("delete them with `kubectl delete namespace ns1`"),
            "{made}"
        );
        let theirs: Vec<crate::Object> = objs
            .into_iter()
            .filter(|o| !matches!(o, crate::Object::Namespace(_)))
            .collect();
        let kept = super::kept_text(&theirs, "ns1");
        assert!(
            kept.contains("`wirespeed k8s cleanup --namespace ns1 --force`"),
            "{kept}"
        );
        assert!(!kept.contains("kubectl delete namespace"), "{kept}");
    }

    #[test]
    fn deleted_objects_are_counted_by_kind() {
        let gone: Vec<String> = [
            "Service a/x",
            "DaemonSet a/d",
            "Service a/y",
            "Ingress a/i",
            "Ingress a/j",
            "NetworkPolicy a/p",
            "NetworkPolicy a/q",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            super::by_kind(&gone),
            "2 Services, 1 DaemonSet, 2 Ingresses, 2 NetworkPolicies"
        );
    }
}
