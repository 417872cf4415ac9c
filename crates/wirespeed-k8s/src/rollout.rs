//! Waiting for a DaemonSet's agents, and saying why they are not there.
//!
//! Every couple of seconds [`wait`] reads the DaemonSet, its pods and the
//! nodes, and [`diagnose`] turns them into a [`State`]: how many agents
//! are Ready, what each other pod waits for (scheduling, image pulls,
//! crashes with their last exit code) and which nodes the DaemonSet
//! leaves out because of a taint its pods do not tolerate (the DaemonSet
//! controller skips those nodes silently). A state that will not resolve
//! by itself ([`TERMINAL_REASONS`], an untolerated taint) ends the wait
//! once it has lasted [`Watch::grace`], with the pods' statuses and events
//! printed first, so the record survives the teardown that follows.

use crate::K8sError;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Node, Pod, Taint, Toleration};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

/// Container waiting reasons that end a run: they do not resolve without
/// a change (another image, a fixed agent).
pub const TERMINAL_REASONS: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CrashLoopBackOff",
];

/// Waiting reasons that are trouble but may resolve (a Secret that
/// appears, a runtime hiccup): shown, waited out until the timeout.
pub const TROUBLE_REASONS: [&str; 4] = [
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "PreCreateHookError",
];

/// Taints whose nodes are not meant to run workloads, or not able to (a
/// node that is not Ready): a node with only these and no agent is noted,
/// not an error.
pub const NOTED_TAINTS: [&str; 4] = [
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// How a wait goes.
pub struct Watch<'a> {
    /// Longest wait for every agent to be Ready.
    pub timeout: Duration,
    /// Time between looks.
    pub poll: Duration,
    /// How long a terminal state must last before the wait gives up.
    pub grace: Duration,
    /// Where progress and evidence lines go.
    pub log: &'a (dyn Fn(&str) + Sync),
}

impl<'a> Watch<'a> {
    /// A wait of at most `timeout`, looking every 2 s, giving up 20 s
    /// into a terminal state, logging to `log`.
    pub fn new(timeout: Duration, log: &'a (dyn Fn(&str) + Sync)) -> Watch<'a> {
        Watch {
            timeout,
            poll: Duration::from_secs(2),
            grace: Duration::from_secs(20),
            log,
        }
    }
}

impl fmt::Debug for Watch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("timeout", &self.timeout)
            .field("poll", &self.poll)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

/// Something that keeps an agent from being Ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The pod, when a pod is the one in trouble.
    pub pod: Option<String>,
    /// The node (the pod's, or the node left out).
    pub node: Option<String>,
    /// Kubernetes' reason (`ImagePullBackOff`, `Unschedulable`) or
    /// `UntoleratedTaint`.
    pub reason: String,
    /// What Kubernetes said, with the last exit code when there is one.
    pub message: String,
    /// It will not resolve by itself: the run ends.
    pub terminal: bool,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let node = self.node.as_deref().unwrap_or("(none yet)");
        match &self.pod {
            Some(pod) => write!(
                f,
                "pod {pod} on node {node}: {}: {}",
                self.reason, self.message
            ),
            None => f.write_str(&self.message),
        }
    }
}

/// What a DaemonSet's agents are doing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// Pods the DaemonSet wants (its status), at least the pods seen.
    pub desired: usize,
    /// Pods Running and Ready.
    pub ready: usize,
    /// Pods not Ready and what they wait for (`pod X: ContainerCreating`).
    pub waiting: Vec<String>,
    /// Trouble, terminal or not.
    pub problems: Vec<Problem>,
    /// Facts worth a line that are not trouble (a control-plane node left
    /// out, nodes that could not be read).
    pub notes: Vec<String>,
}

impl State {
    /// One progress line: `2/3 agents Ready; pod X: ContainerCreating`.
    pub fn progress(&self) -> String {
        let mut parts = vec![if self.desired == 0 {
            "no agent pod yet".to_string()
        } else {
            format!("{}/{} agents Ready", self.ready, self.desired)
        }];
        parts.extend(self.waiting.iter().cloned());
        parts.extend(
            self.problems
                .iter()
                .filter(|p| p.pod.is_none())
                .map(|p| p.to_string()),
        );
        parts.join("; ")
    }

    /// The problems that end the run.
    pub fn terminal(&self) -> Vec<&Problem> {
        self.problems.iter().filter(|p| p.terminal).collect()
    }
}

fn pod_name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

fn pod_node(p: &Pod) -> Option<String> {
    p.spec.as_ref().and_then(|s| s.node_name.clone())
}

/// Running with condition Ready=True.
pub fn ready(p: &Pod) -> bool {
    let Some(st) = &p.status else { return false };
    st.phase.as_deref() == Some("Running")
        && st
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// `; last exit code 1 (Error): message` from a container's last
/// termination, when it has one.
fn last_exit(cs: &ContainerStatus) -> String {
    let Some(t) = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref()) else {
        return String::new();
    };
    let mut s = format!("; last exit code {}", t.exit_code);
    if let Some(r) = &t.reason {
        s += &format!(" ({r})");
    }
    if let Some(m) = t.message.as_deref().filter(|m| !m.is_empty()) {
        s += &format!(": {}", m.trim());
    }
    s
}

/// What one container that is not running shows.
enum ContainerState {
    /// Trouble ([`TERMINAL_REASONS`], [`TROUBLE_REASONS`]).
    Trouble {
        /// The waiting reason.
        reason: String,
        /// The container, Kubernetes' message and its last exit.
        text: String,
        /// Whether it will not resolve by itself.
        terminal: bool,
    },
    /// A normal wait, such as `ContainerCreating`, or an exit.
    Waits(String),
}

/// The trouble of one container, or what it waits for; None when it runs.
fn container_state(cs: &ContainerStatus) -> Option<ContainerState> {
    let state = cs.state.as_ref()?;
    if let Some(w) = &state.waiting {
        let reason = w.reason.clone().unwrap_or_else(|| "Waiting".into());
        let msg = w.message.clone().unwrap_or_default();
        let terminal = TERMINAL_REASONS.contains(&reason.as_str());
        if terminal || TROUBLE_REASONS.contains(&reason.as_str()) {
            let text = format!("container {}: {}{}", cs.name, msg.trim(), last_exit(cs));
            return Some(ContainerState::Trouble {
                reason,
                text,
                terminal,
            });
        }
        return Some(ContainerState::Waits(reason));
    }
    let t = state.terminated.as_ref()?;
    Some(ContainerState::Waits(format!(
        "container {} exited with code {}",
        cs.name, t.exit_code
    )))
}

/// A pod's trouble and, when it is not Ready, what it waits for.
pub(crate) fn pod_state(p: &Pod) -> (Vec<Problem>, Option<String>) {
    let (name, node) = (pod_name(p), pod_node(p));
    let problem = |reason: String, message: String, terminal: bool| Problem {
        pod: Some(name.clone()),
        node: node.clone(),
        reason,
        message,
        terminal,
    };
    let mut problems = Vec::new();
    let mut waits = Vec::new();
    let st = p.status.clone().unwrap_or_default();
    for c in st.conditions.iter().flatten() {
        if c.type_ == "PodScheduled" && c.status == "False" {
            let reason = c.reason.clone().unwrap_or_else(|| "Unschedulable".into());
            problems.push(problem(
                reason,
                c.message.clone().unwrap_or_default(),
                false,
            ));
        }
    }
    let statuses = st.init_container_statuses.iter().flatten();
    for cs in statuses.chain(st.container_statuses.iter().flatten()) {
        match container_state(cs) {
            Some(ContainerState::Trouble {
                reason,
                text,
                terminal,
            }) => problems.push(problem(reason, text, terminal)),
            Some(ContainerState::Waits(wait)) => waits.push(wait),
            None => {}
        }
    }
    if ready(p) {
        return (problems, None);
    }
    let what = match (problems.first(), waits.first(), st.phase.as_deref()) {
        // The scheduler says why it cannot place the pod: that is the news.
        (Some(pr), _, _) if pr.reason == "Unschedulable" && !pr.message.is_empty() => {
            format!("{}: {}", pr.reason, pr.message)
        }
        (Some(pr), _, _) => pr.reason.clone(),
        (None, Some(w), _) => w.clone(),
        (None, None, Some("Running")) => "Running, not Ready (readiness probe)".into(),
        (None, None, Some(phase)) => phase.to_string(),
        (None, None, None) => "no status yet".into(),
    };
    (problems, Some(format!("pod {name}: {what}")))
}

/// Tolerations the DaemonSet controller adds to every pod it makes.
fn daemonset_tolerates(taint: &Taint, host_network: bool) -> bool {
    let auto: &[(&str, &str)] = &[
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    auto.iter()
        .any(|(k, e)| taint.key == *k && taint.effect == *e)
        || (host_network
            && taint.key == "node.kubernetes.io/network-unavailable"
            && taint.effect == "NoSchedule")
}

/// Whether toleration `t` tolerates `taint` (Kubernetes' matching rules).
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty())
        && e != taint.effect
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if key.is_empty() {
        return t.operator.as_deref() == Some("Exists");
    }
    if key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        _ => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
    }
}

/// `K=V:Effect` (or `K:Effect`).
pub fn taint_text(t: &Taint) -> String {
    match t.value.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => format!("{}={v}:{}", t.key, t.effect),
        None => format!("{}:{}", t.key, t.effect),
    }
}

/// The taints of `node` that keep pods with `tolerations` off it.
fn untolerated<'n>(
    node: &'n Node,
    tolerations: &[Toleration],
    host_network: bool,
) -> Vec<&'n Taint> {
    blocking_taints(
        node.spec.iter().flat_map(|s| s.taints.iter().flatten()),
        tolerations,
        host_network,
    )
}

/// Of `taints`, those that keep a DaemonSet's pods with `tolerations` off
/// their node: NoSchedule or NoExecute, not tolerated by the pods nor by
/// the DaemonSet controller itself.
pub(crate) fn blocking_taints<'t>(
    taints: impl IntoIterator<Item = &'t Taint>,
    tolerations: &[Toleration],
    host_network: bool,
) -> Vec<&'t Taint> {
    taints
        .into_iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .filter(|t| !daemonset_tolerates(t, host_network))
        .filter(|t| !tolerations.iter().any(|x| tolerates(x, t)))
        .collect()
}

/// Whether `node` carries every label of the pods' nodeSelector and is
/// among the nodes their affinity pins them to (`metadata.name In`).
fn selected(node: &Node, ds: &DaemonSet) -> bool {
    let spec = ds.spec.as_ref().and_then(|s| s.template.spec.as_ref());
    let name = node.metadata.name.as_deref().unwrap_or("");
    let pinned = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|r| {
            r.node_selector_terms.iter().any(|t| {
                t.match_fields.iter().flatten().all(|f| {
                    f.key != "metadata.name"
                        || f.operator != "In"
                        || f.values.iter().flatten().any(|v| v == name)
                })
            })
        })
        .unwrap_or(true);
    let Some(sel) = spec.and_then(|s| s.node_selector.as_ref()) else {
        return pinned;
    };
    let labels = node.metadata.labels.clone().unwrap_or_default();
    pinned && sel.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Nodes the DaemonSet should cover but has no pod on, and why.
fn node_state(ds: &DaemonSet, pods: &[Pod], nodes: &[Node]) -> (Vec<Problem>, Vec<String>) {
    let spec = ds.spec.as_ref().and_then(|s| s.template.spec.clone());
    let spec = spec.unwrap_or_default();
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let host_network = spec.host_network == Some(true);
    let covered: BTreeSet<String> = pods.iter().filter_map(pod_node).collect();
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    for n in nodes {
        let name = n.metadata.name.clone().unwrap_or_default();
        if covered.contains(&name) || n.metadata.deletion_timestamp.is_some() || !selected(n, ds) {
            continue;
        }
        let bad = untolerated(n, &tolerations, host_network);
        if bad.is_empty() {
            continue;
        }
        let taints: Vec<String> = bad.iter().map(|t| taint_text(t)).collect();
        if bad.iter().all(|t| NOTED_TAINTS.contains(&t.key.as_str())) {
            notes.push(format!(
                "node {name} (taint {}: control plane or not Ready) gets no agent and is not tested",
                taints.join(", ")
            ));
            continue;
        }
        problems.push(Problem {
            pod: None,
            node: Some(name.clone()),
            reason: "UntoleratedTaint".into(),
            message: format!(
                "node {name} has taint {} that the agents do not tolerate",
                taints.join(", ")
            ),
            terminal: true,
        });
    }
    (problems, notes)
}

/// The state of `ds` from its pods and, when they could be read, the
/// cluster's nodes.
pub fn diagnose(ds: &DaemonSet, pods: &[Pod], nodes: Option<&[Node]>) -> State {
    let desired = ds
        .status
        .as_ref()
        .map_or(0, |s| s.desired_number_scheduled.max(0) as usize);
    let mut st = State {
        desired: desired.max(pods.len()),
        ready: pods.iter().filter(|p| ready(p)).count(),
        ..State::default()
    };
    for p in pods {
        let (problems, wait) = pod_state(p);
        st.problems.extend(problems);
        st.waiting.extend(wait);
    }
    if let Some(nodes) = nodes {
        let (problems, notes) = node_state(ds, pods, nodes);
        st.problems.extend(problems);
        st.notes.extend(notes);
    }
    st
}

/// A DaemonSet is rolled out: its controller saw the current spec, wants
/// at least one pod and all of them are updated and Ready.
pub fn rolled_out(ds: &DaemonSet) -> bool {
    let Some(st) = &ds.status else { return false };
    st.observed_generation.unwrap_or(0) >= ds.metadata.generation.unwrap_or(0)
        && st.desired_number_scheduled > 0
        && st.number_ready == st.desired_number_scheduled
        && st.updated_number_scheduled.unwrap_or(0) == st.desired_number_scheduled
}

/// What one look at the cluster saw.
struct Look {
    ds: DaemonSet,
    pods: Vec<Pod>,
    state: State,
}

/// Reads the DaemonSet, its pods (`selector`, owned by it) and the nodes;
/// nodes that cannot be read (RBAC) become a note.
async fn look(client: &Client, ns: &str, name: &str, selector: &str) -> Result<Look, K8sError> {
    let dss: Api<DaemonSet> = Api::namespaced(client.clone(), ns);
    let ds = dss
        .get_opt(name)
        .await
        .map_err(|e| K8sError::api(format!("get DaemonSet {ns}/{name}"), e))?
        .ok_or_else(|| K8sError::Discovery(format!("DaemonSet {ns}/{name} does not exist")))?;
    let uid = ds.meta().uid.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = pods
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(|e| K8sError::api(format!("list pods of DaemonSet {ns}/{name}"), e))?;
    let mine: Vec<Pod> = list
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "DaemonSet" && Some(&o.uid) == uid.as_ref())
        })
        .collect();
    let nodes: Api<Node> = Api::all(client.clone());
    let (nodes, note) = match nodes.list(&ListParams::default()).await {
        Ok(l) => (Some(l.items), None),
        Err(e) => (
            None,
            Some(format!(
                "cannot list nodes ({e}): nodes the DaemonSet leaves out for a taint are not checked"
            )),
        ),
    };
    let mut state = diagnose(&ds, &mine, nodes.as_deref());
    state.notes.extend(note);
    Ok(Look {
        ds,
        pods: mine,
        state,
    })
}

/// The events of pod `pod` in `ns`, oldest first, one line each; a
/// refusal (RBAC) is one line saying so.
pub async fn pod_events(client: &Client, ns: &str, pod: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let lp = ListParams::default().fields(&format!("involvedObject.name={pod}"));
    let mut evs = match api.list(&lp).await {
        Ok(l) => l.items,
        Err(e) => return vec![format!("cannot list the events of pod {pod}: {e}")],
    };
    evs.sort_by_key(|e| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or(e.event_time.as_ref().map(|t| t.0))
    });
    evs.iter()
        .rev()
        .take(10)
        .rev()
        .map(|e| {
            format!(
                "event {} {}: {} (x{})",
                e.type_.as_deref().unwrap_or("-"),
                e.reason.as_deref().unwrap_or("-"),
                e.message.as_deref().unwrap_or("").trim(),
                e.count.unwrap_or(1)
            )
        })
        .collect()
}

/// The record of a rollout that failed: the DaemonSet's counts, every
/// pod not Ready with its trouble and events, the nodes left out.
async fn evidence(client: &Client, ns: &str, l: &Look) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = &l.ds.status {
        out.push(format!(
            "DaemonSet {ns}/{}: desired {}, scheduled {}, ready {}, updated {}",
            l.ds.metadata.name.as_deref().unwrap_or("?"),
            s.desired_number_scheduled,
            s.current_number_scheduled,
            s.number_ready,
            s.updated_number_scheduled.unwrap_or(0)
        ));
    }
    for p in l.pods.iter().filter(|p| !ready(p)) {
        let name = pod_name(p);
        let phase = p.status.as_ref().and_then(|s| s.phase.clone());
        out.push(format!(
            "pod {name} on node {}: phase {}",
            pod_node(p).unwrap_or_else(|| "(none)".into()),
            phase.unwrap_or_else(|| "-".into())
        ));
        for pr in l
            .state
            .problems
            .iter()
            .filter(|x| x.pod.as_ref() == Some(&name))
        {
            out.push(format!("  {}: {}", pr.reason, pr.message));
        }
        out.extend(
            pod_events(client, ns, &name)
                .await
                .into_iter()
                .map(|e| format!("  {e}")),
        );
    }
    out.extend(
        l.state
            .problems
            .iter()
            .filter(|p| p.pod.is_none())
            .map(|p| p.to_string()),
    );
    out.extend(l.state.notes.iter().cloned());
    out
}

/// What to do about the terminal problems.
fn advice(problems: &[&Problem]) -> String {
    let mut tips = Vec::new();
    let has = |rs: &[&str]| problems.iter().any(|p| rs.contains(&p.reason.as_str()));
    if has(&["ErrImagePull", "ImagePullBackOff", "InvalidImageName"]) {
        tips.push("check --image: every node must be able to pull it (`wirespeed k8s image build --push REGISTRY/wirespeed:TAG` pushes one and prints the reference to pass, docs/k8s.md)");
    }
    if has(&["CrashLoopBackOff"]) {
        tips.push("the agent exits at start: its last exit code is above; rerun with --keep and read `kubectl logs --previous` of the pod");
    }
    if has(&["UntoleratedTaint"]) {
        tips.push("tolerate the taint with --toleration KEY[=VALUE]:EFFECT, leave the node out with --node-selector, or remove the taint");
    }
    tips.join("; ")
}

/// Waits until DaemonSet `ns/name` is rolled out with no terminal trouble
/// (looking every `w.poll`, a progress line whenever it changes), and
/// returns it with its pods. Fails once a terminal state has lasted
/// `w.grace`, or at `w.timeout`, after logging the evidence.
pub async fn wait(
    client: &Client,
    ns: &str,
    name: &str,
    selector: &str,
    w: &Watch<'_>,
) -> Result<(DaemonSet, Vec<Pod>), K8sError> {
    let deadline = Instant::now() + w.timeout;
    let mut first_terminal: Option<Instant> = None;
    let mut said = String::new();
    loop {
        let l = look(client, ns, name, selector).await?;
        let terminal = l.state.terminal();
        if terminal.is_empty() && rolled_out(&l.ds) {
            l.state.notes.iter().for_each(|n| (w.log)(n));
            return Ok((l.ds, l.pods));
        }
        let progress = l.state.progress();
        if progress != said {
            (w.log)(&progress);
            said = progress;
        }
        let now = Instant::now();
        first_terminal = if terminal.is_empty() {
            None
        } else {
            first_terminal.or(Some(now))
        };
        if first_terminal.is_some_and(|t| now.duration_since(t) >= w.grace) {
            return Err(fail(client, ns, name, &l, w).await);
        }
        if now >= deadline {
            (w.log)(&format!(
                "DaemonSet {ns}/{name} not rolled out; evidence before teardown:"
            ));
            evidence(client, ns, &l)
                .await
                .iter()
                .for_each(|e| (w.log)(&format!("  {e}")));
            return Err(K8sError::Timeout {
                what: format!(
                    "DaemonSet {ns}/{name} to have all agents Ready ({})",
                    l.state.progress()
                ),
                secs: w.timeout.as_secs(),
            });
        }
        tokio::time::sleep(w.poll.min(deadline.saturating_duration_since(now))).await;
    }
}

/// The problems as sentences, pods with the same reason and message in
/// one: "pods a on node n1, b on node n2: ImagePullBackOff: ...".
fn same_told_once(problems: &[&Problem]) -> Vec<String> {
    let mut groups: Vec<(&Problem, Vec<String>)> = Vec::new();
    for p in problems {
        let Some(pod) = &p.pod else {
            groups.push((p, Vec::new()));
            continue;
        };
        let who = format!(
            "{pod} on node {}",
            p.node.as_deref().unwrap_or("(none yet)")
        );
        match groups
            .iter_mut()
            .find(|(g, w)| !w.is_empty() && g.reason == p.reason && g.message == p.message)
        {
            Some((_, w)) => w.push(who),
            None => groups.push((p, vec![who])),
        }
    }
    groups
        .into_iter()
        .map(|(p, who)| match who.len() {
            0 | 1 => p.to_string(),
            _ => format!("pods {}: {}: {}", who.join(", "), p.reason, p.message),
        })
        .collect()
}

/// Logs the evidence and builds the error of a terminal rollout state.
async fn fail(client: &Client, ns: &str, name: &str, l: &Look, w: &Watch<'_>) -> K8sError {
    (w.log)(&format!(
        "DaemonSet {ns}/{name} cannot roll out; evidence before teardown:"
    ));
    evidence(client, ns, l)
        .await
        .iter()
        .for_each(|e| (w.log)(&format!("  {e}")));
    let terminal = l.state.terminal();
    let what = same_told_once(&terminal);
    K8sError::Rollout(format!(
        "DaemonSet {ns}/{name} cannot roll out: {}; {}",
        what.join("; "),
        advice(&terminal)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "agent"}]},
            "status": status,
        }))
        .unwrap()
    }

    fn node(name: &str, taints: serde_json::Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"pool": "a"}},
            "spec": {"taints": taints},
        }))
        .unwrap()
    }

    fn ds(tolerations: serde_json::Value) -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "ds"},
            "spec": {"selector": {}, "template": {"spec": {
                "containers": [{"name": "agent"}], "tolerations": tolerations}}},
            "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2,
                       "numberMisscheduled": 0, "numberReady": 1},
        }))
        .unwrap()
    }

    fn running() -> serde_json::Value {
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    }

    #[test]
    fn an_image_pull_back_off_is_terminal_and_named_with_pod_and_node() {
        let bad = pod(
            "a-2",
            "n2",
            json!({"phase": "Pending", "containerStatuses": [{
                "name": "agent", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff",
                                      "message": "Back-off pulling image \"x\""}}}]}),
        );
        let st = diagnose(&ds(json!([])), &[pod("a-1", "n1", running()), bad], None);
        assert_eq!((st.ready, st.desired), (1, 2));
        let t = st.terminal();
        assert_eq!(t.len(), 1);
        let text = t[0].to_string();
        assert!(
            text.contains("pod a-2 on node n2: ImagePullBackOff"),
            "{text}"
        );
        assert!(text.contains("Back-off pulling image"), "{text}");
        assert_eq!(st.progress(), "1/2 agents Ready; pod a-2: ImagePullBackOff");
    }

    #[test]
    fn the_same_pull_error_on_two_pods_is_told_once_and_unschedulable_says_why() {
        let bad = |name: &str, node: &str| {
            pod(
                name,
                node,
                json!({"phase": "Pending", "containerStatuses": [{
                    "name": "agent", "image": "x", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff",
                    "message": "Back-off pulling image \"x\""}}}]}),
            )
        };
        let st = diagnose(&ds(json!([])), &[bad("a-1", "n1"), bad("a-2", "n2")], None);
        let told = same_told_once(&st.terminal());
        assert_eq!(
            told,
            [
                "pods a-1 on node n1, a-2 on node n2: ImagePullBackOff: container agent: Back-off pulling image \"x\""
            ],
            "{told:?}"
        );
        let pending = pod(
            "a-3",
            "",
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient memory."}]}),
        );
        let st = diagnose(&ds(json!([])), &[pending], None);
        assert!(
            st.progress().ends_with(
                "pod a-3: Unschedulable: 0/3 nodes are available: 3 Insufficient memory."
            ),
            "{}",
            st.progress()
        );
    }

    #[test]
    fn a_crash_loop_names_the_last_exit_code_and_creating_is_only_progress() {
        let crash = pod(
            "a-2",
            "n2",
            json!({"phase": "Running", "containerStatuses": [{
                "name": "agent", "image": "x", "imageID": "", "ready": false, "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                "lastState": {"terminated": {"exitCode": 2, "reason": "Error",
                                             "message": "bad key"}}}]}),
        );
        let creating = pod(
            "a-3",
            "n3",
            json!({"phase": "Pending", "containerStatuses": [{
                "name": "agent", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
        );
        let st = diagnose(&ds(json!([])), &[crash, creating], None);
        assert_eq!(st.terminal().len(), 1);
        assert!(
            st.problems[0]
                .message
                .contains("last exit code 2 (Error): bad key")
        );
        assert!(
            st.progress().contains("pod a-3: ContainerCreating"),
            "{}",
            st.progress()
        );
    }

    #[test]
    fn a_tainted_node_without_a_pod_is_named_with_its_taint_unless_tolerated() {
        let nodes = [
            node("n1", json!([])),
            node(
                "n2",
                json!([{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
            ),
            node(
                "cp",
                json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]),
            ),
            node(
                "n4",
                json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
            ),
        ];
        let pods = [pod("a-1", "n1", running())];
        let st = diagnose(&ds(json!([])), &pods, Some(&nodes));
        let t = st.terminal();
        assert_eq!(t.len(), 1, "{:?}", st.problems);
        assert_eq!(
            t[0].to_string(),
            "node n2 has taint gpu=yes:NoSchedule that the agents do not tolerate"
        );
        assert!(
            st.notes[0].contains("node cp (taint node-role.kubernetes.io/control-plane:NoSchedule"),
            "{:?}",
            st.notes
        );
        let tol = json!([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]);
        assert!(
            diagnose(&ds(tol), &pods, Some(&nodes))
                .terminal()
                .is_empty()
        );
    }

    #[test]
    fn toleration_matching_follows_kubernetes() {
        let taint = Taint {
            key: "k".into(),
            value: Some("v".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        };
        let t = |v: serde_json::Value| serde_json::from_value::<Toleration>(v).unwrap();
        assert!(tolerates(&t(json!({"operator": "Exists"})), &taint));
        assert!(tolerates(&t(json!({"key": "k", "value": "v"})), &taint));
        assert!(!tolerates(&t(json!({"key": "k", "value": "w"})), &taint));
        assert!(!tolerates(
            &t(json!({"key": "k", "operator": "Exists", "effect": "NoExecute"})),
            &taint
        ));
        assert!(!tolerates(&t(json!({})), &taint));
    }
}
