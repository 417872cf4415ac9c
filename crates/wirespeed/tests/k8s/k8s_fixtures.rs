//! The two cluster fixtures of k8s/testenv/cluster.sh, each proven by
//! what it adds:
//!
//! - the newest (Kubernetes 1.37, containerd 2, flannel's vxlan backend,
//!   NetworkPolicy enforced by kube-router, CoreDNS): a pod in another
//!   namespace resolves cluster names through CoreDNS and is refused at
//!   every agent port while wirespeed's NetworkPolicy stands, yet the run
//!   (through the API server's pod proxy) measures every pair and its
//!   Service path; with the policy deleted the same pod reaches the
//!   agents' engine and HTTP ports; a run under `--policy-load 0,100`
//!   awaits each level through its probe and measures both;
//! - the oldest supported (1.34, containerd 1.6, the bridge CNI): a
//!   smoke run of the host, cross-node and Service paths.
//!
//! Each test then checks that `cluster.sh down` left nothing behind.

use crate::common;

use common::cluster::{
    Cluster, NEWEST, OLDEST, Scratch, can_run_on, check_nodes, nothing_left, text, unique, wait_for,
};
use common::heavy;
use serde_json::{Value, json};

/// The run's and the probe's namespaces, and the policy-load run's.
const RUN_NS: &str = "wsfix-run";
const LOAD_NS: &str = "wsfix-load";
const PROBE_NS: &str = "wsfix-probe";
/// The agents' engine and HTTP ports (wirespeed-k8s's defaults) and the
/// first of their data ports.
const PORTS: [u16; 3] = [5300, 5380, 5301];

/// `k8s run` with `args` and `--out`: exit 0, and each of `paths`
/// measured on `pairs` node pairs (a median above zero).
fn run_paths(c: &Cluster, s: &Scratch, args: &[&str], paths: &[&str], pairs: usize) {
    let out_json = s.file("run.json");
    let mut all_args = args.to_vec();
    all_args.extend_from_slice(&["--out", &out_json]);
    let out = c.k8s_run(&s.key(), &all_args);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let cases = doc["paths"]["cases"].as_array().expect("cases").clone();
    for p in paths {
        let measured = cases
            .iter()
            .filter(|k| k["path"] == *p && k["median"].as_f64().is_some_and(|m| m > 0.0))
            .count();
        assert_eq!(measured, pairs, "{p} on every pair: {cases:?}\n{all}");
    }
}

/// `k8s run` on the pod network, cross-node and through each agent's
/// Service, leaving the objects (`--keep`) so the probe can try them.
fn measure_under_policy(c: &Cluster, s: &Scratch) {
    let args = [
        "--namespace",
        RUN_NS,
        "--paths",
        "cross-node,service-cross-node",
        "--keep",
    ];
    run_paths(c, s, &args, &["cross-node", "service-cross-node"], 1);
}

/// `k8s run --policy-load 0,100` on the pod network: each level is
/// awaited through the probe (the run's policy refuses agent-to-agent
/// HTTP, the gate admits it), every pair is measured under both loads,
/// the cost table compares each with itself, and no load policy is left.
fn policy_load_is_awaited_and_costed(c: &Cluster, s: &Scratch) {
    let out_json = s.file("load.json");
    let args = [
        "--namespace",
        LOAD_NS,
        "--paths",
        "cross-node",
        "--workloads",
        "crr,stream",
        "--policy-load",
        "0,100",
        "--out",
        &out_json,
    ];
    let out = c.k8s_run(&s.key(), &args);
    let all = text(&out);
    println!("k8s run --policy-load 0,100:\n{all}");
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("100 load NetworkPolicies (and the gate) select the agents, in force on every node after"),
        "{all}"
    );
    assert!(
        all.contains("== policy load: each pod path against itself"),
        "{all}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let loads: Vec<u64> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy_load"].as_u64().expect("policy_load"))
        .collect();
    assert_eq!(loads, [0, 100], "{all}");
    let cases = doc["paths"]["cases"].as_array().unwrap();
    for n in [0, 100] {
        let measured = cases
            .iter()
            .filter(|k| k["policy_load"] == n && k["median"].as_f64().is_some_and(|m| m > 0.0))
            .count();
        assert_eq!(
            measured, 2,
            "a pair x 2 workloads under {n} policies: {cases:?}"
        );
    }
    let cost = doc["policy_cost"].as_array().unwrap();
    assert_eq!(cost.len(), 2, "crr and stream: {cost:?}");
    for cmp in cost {
        let modes: Vec<&str> = cmp["modes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            modes,
            ["cross-node, 0 policies", "cross-node, 100 policies"]
        );
    }
    let left = c.api(
        "GET",
        "/apis/networking.k8s.io/v1/networkpolicies?labelSelector=wirespeed.dev%2Frun",
        None,
    );
    assert!(
        left["items"].as_array().is_some_and(|i| i.is_empty()),
        "the run's policies are gone: {left}"
    );
}

/// The agents' pod IPs in the run's namespace.
fn agent_ips(c: &Cluster, nodes: usize) -> Vec<String> {
    let path = format!(
        "/api/v1/namespaces/{RUN_NS}/pods?labelSelector=app.kubernetes.io%2Fname%3Dwirespeed-agent"
    );
    let pods = c.api("GET", &path, None);
    let ips: Vec<String> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["spec"]["hostNetwork"] != true)
        .filter_map(|p| p["status"]["podIP"].as_str().map(String::from))
        .collect();
    assert_eq!(ips.len(), nodes, "one pod-network agent per node: {pods}");
    ips
}

/// Runs netprobe as a pod in PROBE_NS against `targets`; its log, one
/// line per target.
fn probe(c: &Cluster, round: &str, targets: &[String]) -> String {
    let name = format!("probe-{round}");
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": PROBE_NS},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "probe", "image": c.get("NETPROBE_IMAGE"), "imagePullPolicy": "Never",
                "args": targets,
                "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true,
                    "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
            }]
        }
    });
    let r = c.api(
        "POST",
        &format!("/api/v1/namespaces/{PROBE_NS}/pods"),
        Some(("application/json", &pod)),
    );
    assert_eq!(r["metadata"]["name"], name.as_str(), "{r}");
    let path = format!("/api/v1/namespaces/{PROBE_NS}/pods/{name}");
    let phase = wait_for("the probe pod to finish", 120, || {
        let p = c.api("GET", &path, None);
        let ph = p["status"]["phase"].as_str().unwrap_or("").to_string();
        (ph == "Succeeded" || ph == "Failed").then_some(ph)
    });
    let log = String::from_utf8_lossy(&c.curl("GET", &format!("{path}/log"), None)).into_owned();
    assert_eq!(phase, "Succeeded", "{log}");
    log
}

/// What the probe's log says of `target`.
fn verdict<'a>(log: &'a str, target: &str) -> &'a str {
    log.lines()
        .find_map(|l| l.strip_prefix(target)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no line for {target} in:\n{log}"))
}

/// A namespace, once its `default` ServiceAccount exists (a pod made
/// before it is refused by the ServiceAccount admission).
fn namespace(c: &Cluster, ns: &str) {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let r = c.api(
        "POST",
        "/api/v1/namespaces",
        Some(("application/json", &body)),
    );
    assert_eq!(r["metadata"]["name"], ns, "{r}");
    let sa = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
    wait_for("the probe namespace's default ServiceAccount", 60, || {
        (c.api("GET", &sa, None)["metadata"]["name"] == "default").then_some(())
    });
}

/// The probe from outside the run: refused at every agent port while the
/// policy stands (kube-router REJECTs: a timeout would be a probe with
/// no route, which proves nothing), open at the engine and HTTP ports
/// once it is deleted; cluster names resolve through CoreDNS in both
/// rounds.
fn policy_drops_outsiders(c: &Cluster, nodes: usize) {
    namespace(c, PROBE_NS);
    let ips = agent_ips(c, nodes);
    let mut targets: Vec<String> = ips
        .iter()
        .flat_map(|ip| PORTS.iter().map(move |p| format!("{ip}:{p}")))
        .collect();
    let dns = "dns:kubernetes.default.svc.cluster.local";
    targets.push(dns.into());
    let api_ip = c.api(
        "GET",
        "/api/v1/namespaces/default/services/kubernetes",
        None,
    )["spec"]["clusterIP"]
        .as_str()
        .expect("the kubernetes Service's clusterIP")
        .to_string();

    let log = probe(c, "policy", &targets);
    println!("probe with wirespeed's NetworkPolicy:\n{log}");
    assert_eq!(verdict(&log, dns), api_ip, "CoreDNS answers a pod:\n{log}");
    for t in targets.iter().filter(|t| !t.starts_with("dns:")) {
        let v = verdict(&log, t);
        assert_eq!(
            v, "refused",
            "{t} must be refused to a pod outside the run:\n{log}"
        );
    }

    let np = format!(
        "/apis/networking.k8s.io/v1/namespaces/{RUN_NS}/networkpolicies/{}",
        wirespeed_k8s::manifests::NETWORK_POLICY
    );
    let r = c.api("DELETE", &np, None);
    assert!(r["status"] != "Failure", "delete the NetworkPolicy: {r}");
    // kube-router syncs on the delete event: wait until a probe gets in.
    let mut round = 0;
    let open = wait_for("the agents to open once the policy is gone", 90, || {
        round += 1;
        let log = probe(c, &format!("open{round}"), &targets);
        let engine_http: Vec<String> = ips
            .iter()
            .flat_map(|ip| PORTS[..2].iter().map(move |p| format!("{ip}:{p}")))
            .collect();
        engine_http
            .iter()
            .all(|t| verdict(&log, t) == "open")
            .then_some(log)
    });
    println!("probe without it (round {round}):\n{open}");
    assert_eq!(verdict(&open, dns), api_ip, "{open}");
}

#[test]
fn newest_fixture_enforces_policy_and_serves_dns() {
    if !can_run_on("newest_fixture_enforces_policy_and_serves_dns", NEWEST) {
        return;
    }
    let _h = heavy();
    let name = unique("wsn");
    {
        let c = Cluster::up_on(&name, NEWEST, &["--nodes", "2"]);
        check_nodes(&c, 2);
        assert!(c.get("VERSION").starts_with("v1.37."), "{:?}", c.env);
        assert_eq!(c.get("NETWORK_POLICY"), "kube-router");
        let s = Scratch::with_key(&format!("{name}-fix"), "fixture-test-key");
        policy_load_is_awaited_and_costed(&c, &s);
        measure_under_policy(&c, &s);
        policy_drops_outsiders(&c, 2);
        for ns in [RUN_NS, PROBE_NS] {
            c.api("DELETE", &format!("/api/v1/namespaces/{ns}"), None);
        }
    }
    nothing_left(&name);
}

#[test]
fn oldest_fixture_smoke() {
    if !can_run_on("oldest_fixture_smoke", OLDEST) {
        return;
    }
    let _h = heavy();
    let name = unique("wso");
    {
        let c = Cluster::up_on(&name, OLDEST, &["--nodes", "2"]);
        check_nodes(&c, 2);
        assert!(c.get("VERSION").starts_with("v1.34."), "{:?}", c.env);
        let s = Scratch::with_key(&format!("{name}-fix"), "fixture-test-key");
        let args = [
            "--privileged-namespace",
            "--paths",
            "host,cross-node,service",
        ];
        run_paths(
            &c,
            &s,
            &args,
            &["host", "cross-node", "service-cross-node"],
            1,
        );
    }
    nothing_left(&name);
}
