//! `k8s run` from inside the cluster: a ServiceAccount, the ClusterRole
//! and ClusterRoleBinding that give it exactly what a run calls
//! ([`needs`]), and a Job that runs `wirespeed k8s run ...` with it
//! (`wirespeed k8s manifests --runner`).
//!
//! The rules are cluster-wide because each run creates its own namespace
//! (`wirespeed-RUNID`) and its objects in it: a Role in a namespace that
//! does not exist yet cannot grant that.

use crate::K8sError;
use crate::manifests::{self, Network, NicSelector, Options, RUNNER_SA};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, Namespace, PodSecurityContext, PodSpec, PodTemplateSpec, SeccompProfile,
    ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// The ClusterRole and ClusterRoleBinding of the runner.
pub const RUNNER_ROLE: &str = "wirespeed-runner";
/// The Job that runs `k8s run`.
pub const RUNNER_JOB: &str = "wirespeed-run";

/// One permission a run needs, and the calls that need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Resource (or `resource/subresource`).
    pub resource: &'static str,
    /// Verbs.
    pub verbs: &'static [&'static str],
    /// The calls, for the docs and a reviewer.
    pub why: &'static str,
}

/// What applying an object and deleting it again calls: `get` (the run
/// refuses objects that exist; deletion polls until it is gone), `patch`
/// and `create` (server-side apply of a new object) and `delete`. No
/// `list` or `watch`: the runner cannot enumerate Secrets.
const APPLIED: &[&str] = &["get", "create", "patch", "delete"];

fn need(
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    why: &'static str,
) -> Need {
    Need {
        group,
        resource,
        verbs,
        why,
    }
}

/// The permissions `k8s run` over `networks` uses, derived from its
/// calls (deploy.rs and cluster.rs apply and delete, rollout.rs and
/// discover.rs read, proxy.rs reaches the agents).
pub fn needs(networks: &[Network]) -> Vec<Need> {
    let applied = "the run's objects: Deployment::apply (get, then server-side apply: patch, and create for a new object) and teardown (delete, then get until gone)";
    let mut out = vec![
        need(
            "",
            "namespaces",
            &["get", "create", "patch", "delete"],
            "the run's namespace: applied, deleted last (not awaited)",
        ),
        need("", "serviceaccounts", APPLIED, applied),
        need("", "secrets", APPLIED, applied),
        need("rbac.authorization.k8s.io", "roles", APPLIED, applied),
        need(
            "rbac.authorization.k8s.io",
            "rolebindings",
            APPLIED,
            applied,
        ),
        need(
            "apps",
            "daemonsets",
            &["get", "create", "patch", "delete", "list", "watch"],
            "applied and deleted; rollout::wait gets each one every 2 s; list and watch because the run's Role wirespeed-discover grants them",
        ),
        need(
            "",
            "pods",
            &["get", "list", "watch"],
            "rollout::wait lists the agents' pods; get and watch because the run's Role wirespeed-discover grants them and RBAC lets one grant only what one holds",
        ),
        need(
            "",
            "pods/proxy",
            &["get", "create", "update"],
            "--reach api: GET /healthz, /v1/facts, /v1/results/ID (get), POST /v1/run and /v1/probe (create), PUT /v1/fleet (update) through the pod proxy",
        ),
        need(
            "",
            "events",
            &["list"],
            "the events of pods that are not Ready (fieldSelector involvedObject.name)",
        ),
        need(
            "",
            "nodes",
            &["get", "list"],
            "nodes::list reads every node once: zones, taints, readiness (which nodes a run tests, and why others are left out); nodes::lost gets the node of an agent that went down",
        ),
        need("", "services", APPLIED, applied),
        need("discovery.k8s.io", "endpointslices", APPLIED, applied),
        need("networking.k8s.io", "networkpolicies", APPLIED, applied),
        need(
            "coordination.k8s.io",
            "leases",
            &["get", "create", "update", "delete"],
            "lock.rs: the namespace's run lock (create; get and update to renew or take over an expired one; delete at the end); nodes::lost gets a node's Lease in kube-node-lease",
        ),
        need(
            "",
            "nodes/proxy",
            &["get"],
            "sysctls.rs reads each chosen node's kubelet /configz (allowedUnsafeSysctls) before setting pod sysctls",
        ),
        need(
            "discovery.k8s.io",
            "endpointslices",
            &["list"],
            "the API server's addresses (default/kubernetes's EndpointSlices, by label) for the NetworkPolicy's pod-proxy rule",
        ),
    ];
    if networks.contains(&Network::Dra) {
        out.push(need(
            "resource.k8s.io",
            "resourceclaimtemplates",
            APPLIED,
            applied,
        ));
        out.push(need(
            "resource.k8s.io",
            "deviceclasses",
            &["get", "create", "patch"],
            "dra::prepare gets the DeviceClass and creates the shared one when missing (server-side apply); no run deletes it",
        ));
        out.push(need(
            "resource.k8s.io",
            "resourceslices",
            &["list"],
            "dra::prepare checks the profile's private flags against the devices the drivers publish",
        ));
        out.push(need(
            "resource.k8s.io",
            "resourceclaims",
            &["get", "list", "watch"],
            "discover waits for each pod's claim to carry its NICs' addresses",
        ));
    }
    out
}

/// [`needs`] as RBAC rules.
pub fn rules(networks: &[Network]) -> Vec<PolicyRule> {
    needs(networks)
        .into_iter()
        .map(|n| PolicyRule {
            api_groups: Some(vec![n.group.to_string()]),
            resources: Some(vec![n.resource.to_string()]),
            verbs: n.verbs.iter().map(|v| v.to_string()).collect(),
            ..PolicyRule::default()
        })
        .collect()
}

fn meta(name: &str, ns: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: ns.map(str::to_string),
        labels: Some(BTreeMap::from([(
            manifests::MANAGED_BY.0.to_string(),
            manifests::MANAGED_BY.1.to_string(),
        )])),
        ..ObjectMeta::default()
    }
}

/// `k8s run`'s flags for the objects `o` describes (networks, image,
/// ports, profile, dra's NICs, node selector, tolerations), then `extra`
/// as given (workload, duration, pattern, ...). A single-valued flag that
/// `extra` also sets is left to `extra` (the later, explicit one wins, and
/// clap refuses a flag given twice).
pub fn run_args(o: &Options, extra: &[String]) -> Vec<String> {
    let given = |k: &str| {
        extra
            .iter()
            .any(|x| x == k || x.starts_with(&format!("{k}=")))
    };
    let mut a: Vec<String> = vec!["k8s".into(), "run".into()];
    // A flag with its value, unless the extra arguments give it.
    let flag = |a: &mut Vec<String>, k: &str, v: String| {
        if !given(k) {
            a.push(k.to_string());
            a.push(v);
        }
    };
    let nets: Vec<&str> = o.networks.iter().map(|n| n.as_str()).collect();
    flag(&mut a, "--network", nets.join(","));
    flag(&mut a, "--image", o.image.clone());
    flag(&mut a, "--port", o.port.to_string());
    flag(&mut a, "--http-port", o.http_port.to_string());
    if let Some((name, _)) = &o.profile {
        flag(&mut a, "--profile", name.clone());
    }
    if o.networks.contains(&Network::Dra) {
        flag(&mut a, "--nics", o.nics.to_string());
        match &o.nic_selector {
            NicSelector::Physical => {}
            NicSelector::NetworkPrefix(p) => flag(&mut a, "--network-prefix", p.clone()),
            NicSelector::IfNamePrefix(p) => flag(&mut a, "--ifname-prefix", p.clone()),
            NicSelector::Cel(e) => flag(&mut a, "--nic-cel", e.clone()),
        }
        if let Some(c) = &o.device_class {
            flag(&mut a, "--device-class", c.clone());
        }
    }
    let mut many = |k: &str, v: String| {
        a.push(k.to_string());
        a.push(v);
    };
    for (k, v) in &o.node_selector {
        many("--node-selector", format!("{k}={v}"));
    }
    for t in &o.tolerations {
        many("--toleration", toleration_flag(t));
    }
    if !o.disable_ebpf && !given("--keep-ebpf") {
        a.push("--keep-ebpf".into());
    }
    if o.tolerate_all && !given("--tolerate-all") {
        a.push("--tolerate-all".into());
    }
    if o.privileged_namespace && !given("--privileged-namespace") {
        a.push("--privileged-namespace".into());
    }
    if !o.network_policy && !given("--no-network-policy") {
        a.push("--no-network-policy".into());
    }
    for c in &o.api_sources {
        a.push("--api-source".into());
        a.push(c.clone());
    }
    let kv = |m: &std::collections::BTreeMap<String, String>| {
        m.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    if !o.requests.is_empty() {
        flag(&mut a, "--requests", kv(&o.requests));
    }
    if !o.limits.is_empty() {
        flag(&mut a, "--limits", kv(&o.limits));
    }
    if let Some(p) = &o.priority_class {
        flag(&mut a, "--priority-class", p.clone());
    }
    flag(
        &mut a,
        "--data-ports",
        format!("{}-{}", o.data_ports.0, o.data_ports.1),
    );
    a.extend(extra.iter().cloned());
    a
}

/// A toleration back as `KEY[=VALUE][:EFFECT]`.
fn toleration_flag(t: &k8s_openapi::api::core::v1::Toleration) -> String {
    let mut s = t.key.clone().unwrap_or_default();
    if let Some(v) = &t.value {
        s += &format!("={v}");
    }
    if let Some(e) = &t.effect {
        s += &format!(":{e}");
    }
    s
}

/// A container that meets the `restricted` Pod Security level.
fn restricted_container(o: &Options, args: Vec<String>) -> Container {
    Container {
        name: "run".into(),
        image: Some(o.image.clone()),
        args: Some(args),
        security_context: Some(manifests::restricted_security()),
        ..Container::default()
    }
}

fn job(o: &Options, args: Vec<String>) -> Job {
    let ns = o.namespace.as_str();
    Job {
        metadata: meta(RUNNER_JOB, Some(ns)),
        spec: Some(JobSpec {
            // A run is not retried: a second one would test again.
            backoff_limit: Some(0),
            ttl_seconds_after_finished: Some(86_400),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: meta(RUNNER_JOB, None).labels,
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(RUNNER_SA.into()),
                    restart_policy: Some("Never".into()),
                    // SIGTERM starts the teardown; give it time to finish.
                    termination_grace_period_seconds: Some(120),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(65532),
                        run_as_group: Some(65532),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".into(),
                            ..SeccompProfile::default()
                        }),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![restricted_container(o, args)],
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

/// The runner's objects, in apply order: its Namespace (`o.namespace`,
/// Pod Security `restricted`), ServiceAccount [`RUNNER_SA`], ClusterRole
/// and ClusterRoleBinding [`RUNNER_ROLE`] with [`rules`], and Job
/// [`RUNNER_JOB`] running `wirespeed` with [`run_args`].
pub fn build(o: &Options, extra: &[String]) -> Result<Vec<RunnerObject>, K8sError> {
    o.validate()?;
    let ns = o.namespace.as_str();
    let mut ns_meta = meta(ns, None);
    let labels = ns_meta.labels.get_or_insert_with(BTreeMap::new);
    // The run's agents share the runner's namespace: host-network agents
    // and unsafe sysctls need it `privileged` (--privileged-namespace);
    // everything else meets `restricted`.
    let level = if o.privileged_namespace {
        "privileged"
    } else {
        "restricted"
    };
    for mode in ["enforce", "warn", "audit"] {
        labels.insert(format!("pod-security.kubernetes.io/{mode}"), level.into());
    }
    Ok(vec![
        RunnerObject::Namespace(Namespace {
            metadata: ns_meta,
            ..Namespace::default()
        }),
        RunnerObject::ServiceAccount(ServiceAccount {
            metadata: meta(RUNNER_SA, Some(ns)),
            ..ServiceAccount::default()
        }),
        RunnerObject::ClusterRole(ClusterRole {
            metadata: meta(RUNNER_ROLE, None),
            rules: Some(rules(&o.networks)),
            ..ClusterRole::default()
        }),
        RunnerObject::ClusterRoleBinding(ClusterRoleBinding {
            metadata: meta(RUNNER_ROLE, None),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: RUNNER_ROLE.into(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: RUNNER_SA.into(),
                namespace: Some(ns.to_string()),
                ..Subject::default()
            }]),
        }),
        RunnerObject::Job(Box::new(job(o, run_args(o, extra)))),
    ])
}

/// One of the runner's objects.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum RunnerObject {
    /// Where the runner lives.
    Namespace(Namespace),
    /// Its account.
    ServiceAccount(ServiceAccount),
    /// What a run may do.
    ClusterRole(ClusterRole),
    /// The account bound to it.
    ClusterRoleBinding(ClusterRoleBinding),
    /// The run (boxed: large).
    Job(Box<Job>),
}

impl RunnerObject {
    /// "Kind name", for messages.
    pub fn describe(&self) -> String {
        let (kind, m) = match self {
            RunnerObject::Namespace(o) => ("Namespace", &o.metadata),
            RunnerObject::ServiceAccount(o) => ("ServiceAccount", &o.metadata),
            RunnerObject::ClusterRole(o) => ("ClusterRole", &o.metadata),
            RunnerObject::ClusterRoleBinding(o) => ("ClusterRoleBinding", &o.metadata),
            RunnerObject::Job(o) => ("Job", &o.metadata),
        };
        let name = m.name.as_deref().unwrap_or("");
        match &m.namespace {
            Some(ns) => format!("{kind} {ns}/{name}"),
            None => format!("{kind} {name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(n: &[Network]) -> Options {
        let mut o = Options::new(n.to_vec(), "wirespeed", "ab".repeat(32).as_bytes());
        o.image = "registry.example/wirespeed:1".into();
        o
    }

    #[test]
    fn a_flag_given_after_the_dash_dash_is_not_given_twice() {
        let o = opts(&[Network::Pod]);
        let a = run_args(
            &o,
            &["--network".into(), "host".into(), "-d".into(), "1s".into()],
        );
        assert_eq!(a.iter().filter(|x| *x == "--network").count(), 1, "{a:?}");
        assert!(
            a.windows(2).any(|w| w[0] == "--network" && w[1] == "host"),
            "{a:?}"
        );
    }

    #[test]
    fn the_job_runs_k8s_run_with_the_objects_flags_and_the_extra_ones() {
        let mut o = opts(&[Network::Pod, Network::Dra]);
        o.tolerations =
            vec![manifests::parse_toleration("google.com/tpu=present:NoSchedule").unwrap()];
        let a = run_args(&o, &["-d".into(), "5s".into()]);
        let s = a.join(" ");
        assert!(
            s.starts_with("k8s run --network pod,dra --image registry.example/wirespeed:1"),
            "{s}"
        );
        assert!(
            s.contains("--toleration google.com/tpu=present:NoSchedule"),
            "{s}"
        );
        assert!(
            !s.contains("--network-prefix") && s.ends_with("-d 5s"),
            "{s}"
        );
        o.nic_selector = NicSelector::IfNamePrefix("eth".into());
        o.device_class = Some("mine".into());
        let s = run_args(&o, &[]).join(" ");
        assert!(s.contains("--ifname-prefix eth --device-class mine"), "{s}");
        let objs = build(&o, &[]).unwrap();
        let kinds: Vec<String> = objs.iter().map(|x| x.describe()).collect();
        assert_eq!(
            kinds,
            [
                "Namespace wirespeed",
                "ServiceAccount wirespeed/wirespeed-runner",
                "ClusterRole wirespeed-runner",
                "ClusterRoleBinding wirespeed-runner",
                "Job wirespeed/wirespeed-run"
            ]
        );
    }

    #[test]
    fn dra_rules_only_with_dra() {
        let has = |n: &[Network], r: &str| needs(n).iter().any(|x| x.resource == r);
        assert!(!has(&[Network::Pod], "deviceclasses"));
        assert!(has(&[Network::Dra], "deviceclasses"));
        assert!(has(&[Network::Host], "pods/proxy"));
    }
}
