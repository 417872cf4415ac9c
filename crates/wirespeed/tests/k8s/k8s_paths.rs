//! `wirespeed k8s run --paths ...` on a real three-node cluster
//! (k8s/testenv/cluster.sh: two nodes in zone r1-a, one in r1-b, the
//! last one tainted): every path measured and shown in one table, a
//! tainted node left out by name, a ClusterIP path that follows its
//! Service's endpoints through kube-proxy, a planted regression (a tbf
//! cap on one node's link) failing `--baseline` with that node's pairs
//! named, and the JUnit XML read back by a JUnit parser; output that fits
//! 100 columns, pairs no asked path measures named, and cases measured
//! beside a CPU hog reported contended (exit 3). The advice of each
//! refusal met here is followed: the toleration and the paths it names,
//! the namespace --keep says to delete.

use crate::common;

use common::cluster::{
    Cluster, Scratch, can_run, check_nodes, nothing_left, text, unique, wait_for,
};
use common::heavy;
use serde_json::Value;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `k8s run` from the runner namespace with the flags every run here
/// shares.
fn run(c: &Cluster, key: &str, args: &[&str]) -> Output {
    let mut all = vec!["--privileged-namespace"];
    all.extend_from_slice(args);
    c.k8s_run(key, &all)
}

/// Without --tolerate-all the tainted node is left out by name, and the
/// pair from the pairs file is measured (exit 0, no wait for a pod that
/// cannot be placed), over a sweep of message sizes and flow counts.
fn tainted_node_left_out(c: &Cluster, s: &Scratch, key: &str, nodes: &[String]) {
    let pairs = s.file("pairs");
    std::fs::write(
        &pairs,
        format!("# client server\n{} {}\n", nodes[0], nodes[1]),
    )
    .unwrap();
    let t = Instant::now();
    let out = run(
        c,
        key,
        &[
            "--paths",
            "cross-node",
            "--pairs",
            &pairs,
            "--sweep-sizes",
            "64k,512k",
            "--sweep-flows",
            "1,2",
        ],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(t.elapsed() < Duration::from_secs(120), "{all}");
    // The advice: its first half is what every_path then passes.
    assert!(
        all.contains(&format!(
            "node {} left out: taint wirespeed.dev/test=busy:NoSchedule not tolerated (add {TOLERATE} or --tolerate-all)",
            nodes[2]
        )),
        "{all}"
    );
    assert!(
        all.contains(&format!("{} -> {}", nodes[0], nodes[1])),
        "{all}"
    );
    // The sweep: one case per message size and flow count.
    for w in [
        "stream-64k-P1",
        "stream-512k-P1",
        "stream-64k-P2",
        "stream-512k-P2",
    ] {
        assert!(
            all.lines().any(|l| l.contains("cross-node")
                && l.contains(&format!(" {w} "))
                && l.contains("pass")),
            "{w}: {all}"
        );
    }
}

/// The toleration the taint advice names, as every_path follows it.
const TOLERATE: &str = "--toleration wirespeed.dev/test=busy:NoSchedule";

/// Every path, tainted node included (the taint advice followed: the
/// toleration it names), twice each: one table, every case measured with
/// a 95% interval, the same cases in CSV, JUnit and HTML.
fn every_path(c: &Cluster, s: &Scratch, key: &str, nodes: &[String]) -> Value {
    let (out_json, junit, csv, html) = (
        s.file("base.json"),
        s.file("base.xml"),
        s.file("base.csv"),
        s.file("base.html"),
    );
    let out = run(
        c,
        key,
        &[
            "--paths",
            "same-node,cross-node,cross-zone,service,hairpin,host",
            "--toleration",
            TOLERATE.split_once(' ').unwrap().1,
            "--repeats",
            "2",
            "--out",
            &out_json,
            "--junit",
            &junit,
            "--csv",
            &csv,
            "--html",
            &html,
        ],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("paths side by side"), "{all}");
    // What a terminal shows fits 100 columns, stdout and stderr alike.
    let raw = [&out.stdout, &out.stderr].map(|b| String::from_utf8_lossy(b).into_owned());
    for l in raw.iter().flat_map(|t| t.lines()) {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}\n{all}",
            l.chars().count()
        );
    }
    // Every path's pairs were listed before anything was applied; the
    // nodes share this machine's kernel, so their tests ran one at a time
    // and none was contended.
    assert!(all.contains("plan: same-node: "), "{all}");
    assert!(all.contains("share one kernel"), "{all}");
    assert!(
        !all.contains("CONTENDED") && !all.contains("contended"),
        "{all}"
    );
    assert!(!all.contains("( -> )"), "no empty NIC names: {all}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let cases = doc["paths"]["cases"].as_array().expect("cases").clone();
    let count = |p: &str| cases.iter().filter(|c| c["path"] == p).count();
    // Zones r1-a, r1-a, r1-b: one pair in a zone, two across.
    for (p, n) in [
        ("same-node", 3),
        ("cross-node", 1),
        ("cross-zone", 2),
        ("service-same-node", 3),
        ("service-cross-node", 3),
        ("hairpin", 3),
        ("host", 3),
    ] {
        assert_eq!(count(p), n, "{p}: {cases:?}");
    }
    for k in &cases {
        assert_eq!(k["values"].as_array().unwrap().len(), 2, "{k}");
        assert!(k["ci95"].is_array(), "{k}");
        assert!(k["median"].as_f64().unwrap() > 1e7, "{k}");
        assert!(k["breaches"].as_array().unwrap().is_empty(), "{k}");
        assert!(stdout.contains(&format!(
            "{} -> {}",
            k["client_node"].as_str().unwrap(),
            k["server_node"].as_str().unwrap()
        )));
    }
    assert!(
        cases
            .iter()
            .any(|k| k["path"] == "cross-zone" && k["server_node"] == nodes[2].as_str())
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let report =
        quick_junit::Report::deserialize_from_str(&xml).expect("JUnit XML a JUnit parser reads");
    assert_eq!(report.tests, cases.len(), "{xml}");
    assert_eq!(report.failures + report.errors, 0, "{xml}");
    for suite in &report.test_suites {
        for tc in &suite.test_cases {
            let class = tc
                .classname
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default();
            assert!(class.starts_with("wirespeed.k8s."), "{xml}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap().lines().count(),
        cases.len() + 1
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("data-chart=\"heatmap\""),
        "heatmap in the page"
    );
    println!("{stdout}");
    doc
}

/// With every node tolerated and only the pod network's cross-node path
/// asked, the tolerated node's pairs cross zones: each is named with the
/// path that would measure it, before the run applies anything and in
/// its cases and --out.
fn pairs_left_out_named(c: &Cluster, s: &Scratch, key: &str, nodes: &[String]) {
    let out_json = s.file("pod.json");
    let out = run(
        c,
        key,
        &["--tolerate-all", "--network", "pod", "--out", &out_json],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let before_apply = stderr.split("applied ").next().unwrap_or_default();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let left: Vec<&str> = doc["paths"]["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for other in &nodes[..2] {
        let pair = |a: &str, b: &str| format!("pair {a} -> {b} crosses zones");
        let named =
            |t: &str| t.contains(&pair(other, &nodes[2])) || t.contains(&pair(&nodes[2], other));
        assert!(named(before_apply), "{all}");
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("left out: ") && named(l)),
            "{all}"
        );
        assert!(
            left.iter().any(|l| named(l) && l.ends_with(ADVICE)),
            "{left:?}"
        );
    }
    // The advice followed: every pair measured, none left out.
    let mut args = vec![
        "--tolerate-all",
        "--network",
        "pod",
        "--workloads",
        "stream",
    ];
    args.extend(ADVICE.trim_end_matches(')').split(' ').skip(3));
    let out = run(c, key, &args);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("left out: pair"), "{all}");
    for other in &nodes[..2] {
        let pair = |a: &str, b: &str| format!("{a} -> {b}");
        assert!(
            all.lines().any(|l| l.contains("cross-zone")
                && (l.contains(&pair(other, &nodes[2])) || l.contains(&pair(&nodes[2], other)))
                && l.contains("pass")),
            "{other} and {}: {all}",
            nodes[2]
        );
    }
}

/// What a pair left out by the paths asked says to add.
const ADVICE: &str = "(measure it with --paths cross-node,cross-zone)";

/// An image its registry does not have, asked for from where the
/// registry answers (the root namespace, with the admin kubeconfig):
/// refused before anything is applied, with the registry's words.
fn missing_image_refused_before_apply(c: &Cluster, key: &str) {
    let ns = "wsp-noimage";
    let image = format!("{}/wirespeed:no-such-tag", c.get("REGISTRY"));
    let t = Instant::now();
    let out = Command::new(common::bin())
        .args([
            "k8s",
            "run",
            "--kubeconfig",
            c.get("KUBECONFIG"),
            "--image",
            &image,
        ])
        .args([
            "--key-file",
            key,
            "--namespace",
            ns,
            "--paths",
            "cross-node",
        ])
        .output()
        .expect("run k8s run");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "{:?}: {all}",
        t.elapsed()
    );
    assert!(
        all.contains(&format!("--image {image}: its registry has no such image")),
        "{all}"
    );
    assert!(
        all.contains("MANIFEST_UNKNOWN") || all.contains("manifest unknown"),
        "{all}"
    );
    let gone = c.api("GET", &format!("/api/v1/namespaces/{ns}"), None);
    assert_eq!(gone["code"], 404, "nothing applied: {gone}");
}

/// Two busy loops, one per core, until dropped (or 300 s): the CPU hog.
/// Each runs in its own process group, so that dropping it kills the
/// loop under `timeout` too.
struct Hog(Vec<std::process::Child>);

impl Hog {
    fn start() -> Hog {
        use std::os::unix::process::CommandExt;
        Hog((0..2)
            .map(|_| {
                Command::new("timeout")
                    .args(["300", "sh", "-c", "while :; do :; done"])
                    .process_group(0)
                    .spawn()
                    .expect("start a busy loop")
            })
            .collect())
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let group = format!("-{}", c.id());
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = c.wait();
        }
    }
}

/// With a busy loop on each core during the run, every case is measured
/// again, then reported contended: CONTENDED in the table, the reason in
/// --out, a `contended` error in the JUnit XML, exit 3 naming each.
fn contended_under_a_cpu_hog(c: &Cluster, s: &Scratch, key: &str, nodes: &[String]) {
    let (out_json, junit) = (s.file("hog.json"), s.file("hog.xml"));
    let hog = Hog::start();
    let out = run(
        c,
        key,
        &[
            "--paths",
            "cross-node",
            "--retries",
            "1",
            "--out",
            &out_json,
            "--junit",
            &junit,
        ],
    );
    drop(hog);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    let label = format!("cross-node stream {} -> {}", nodes[0], nodes[1]);
    assert!(all.contains(&format!("contended: {label}: ")), "{all}");
    assert!(all.contains("(contended in each of 2 tries)"), "{all}");
    assert!(
        all.lines()
            .any(|l| l.contains("CONTENDED") && l.contains("cross-node")),
        "{all}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    for k in doc["paths"]["cases"].as_array().unwrap() {
        let why = k["contended"].as_str().unwrap_or_else(|| panic!("{k}"));
        assert!(
            why.contains("for a CPU") || why.contains("other work used"),
            "{why}"
        );
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("type=\"contended\""), "{xml}");
}

/// `ip netns exec NETNS wirespeed bench IP` with the fleet key.
fn bench_from(netns: &str, ip: &str, key: &str) -> Output {
    Command::new("ip")
        .args([
            "netns",
            "exec",
            netns,
            common::bin(),
            "bench",
            ip,
            "--key-file",
            key,
        ])
        .args(["-d", "1s", "--warmup", "0", "--timeout", "5s"])
        .output()
        .expect("run bench")
}

/// Polls `f` until it returns true (at most 40 s); false if it never did.
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
    }
    false
}

/// The service path goes through kube-proxy's rules: the Service a run
/// made (kept) is reached on its ClusterIP from a node; its endpoint
/// moved to an address where nothing listens, the same test fails; moved
/// back, it runs again. The run makes no NetworkPolicy: where policy is
/// enforced (the newest fixture) wirespeed's admits no node, and a node
/// is where this bench runs (k8s_fixtures proves the policy itself).
fn service_follows_endpoints(c: &Cluster, key: &str, nodes: &[String]) {
    let ns = format!("{}-svc", c.name);
    let out = run(
        c,
        key,
        &[
            "--paths",
            "service-cross-node",
            "--nodes",
            &format!("{},{}", nodes[0], nodes[1]),
            "--keep",
            "--no-network-policy",
            "--namespace",
            &ns,
        ],
    );
    let all = text(&out);
    // What --keep says to do afterwards, done here through the API.
    let cleanup = || c.api("DELETE", &format!("/api/v1/namespaces/{ns}"), None);
    if !out.status.success() {
        cleanup();
        panic!("{all}");
    }
    let deleted = || {
        let v = c.api("GET", &format!("/api/v1/namespaces/{ns}"), None);
        v["code"] == 404 || v["status"]["phase"] == "Terminating"
    };
    assert!(
        all.contains(&format!("delete them with `kubectl delete namespace {ns}`")),
        "{all}"
    );
    let svcs = c.api("GET", &format!("/api/v1/namespaces/{ns}/services"), None);
    let svc = svcs["items"][0].clone();
    let name = svc["metadata"]["name"].as_str().unwrap_or("").to_string();
    let ip = svc["spec"]["clusterIP"].as_str().unwrap_or("").to_string();
    let slice_path = format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/{name}");
    let slice = c.api("GET", &slice_path, None);
    let pod_ip = slice["endpoints"][0]["addresses"][0]
        .as_str()
        .unwrap_or("")
        .to_string();
    let netns = c
        .get("NODE_NETNS")
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let nowhere = c
        .get("NODE_IPS")
        .split_whitespace()
        .last()
        .unwrap()
        .to_string();
    let move_to = |addr: &str| {
        let patch = serde_json::json!({"endpoints": [{"addresses": [addr], "conditions": {"ready": true}}]});
        c.api(
            "PATCH",
            &slice_path,
            Some(("application/merge-patch+json", &patch)),
        )
    };
    let first = bench_from(&netns, &ip, key);
    let moved = move_to(&nowhere);
    let failed = eventually(|| !bench_from(&netns, &ip, key).status.success());
    move_to(&pod_ip);
    let back = eventually(|| bench_from(&netns, &ip, key).status.success());
    cleanup();
    wait_for("the kept namespace deleted", 40, || deleted().then_some(()));
    assert!(
        first.status.success(),
        "bench to the ClusterIP {ip}: {}",
        text(&first)
    );
    assert_eq!(
        moved["endpoints"][0]["addresses"][0],
        nowhere.as_str(),
        "{moved}"
    );
    assert!(
        failed,
        "the ClusterIP {ip} still answered after its endpoint moved to {nowhere}"
    );
    assert!(back, "the ClusterIP {ip} did not answer again at {pod_ip}");
}

/// `tc` in `netns` (None: the root namespace).
fn tc(netns: Option<&str>, args: &[&str]) -> Output {
    let mut c = match netns {
        Some(n) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", n, "tc"]);
            c
        }
        None => Command::new("tc"),
    };
    c.args(args).output().expect("run tc")
}

/// A tbf cap on both directions of the last node's link: `--baseline`
/// fails (exit 1) naming that node's pairs and only those; without the
/// cap the same run passes.
fn planted_regression(c: &Cluster, s: &Scratch, key: &str, nodes: &[String]) {
    let base = s.file("base.json");
    let args = [
        "--paths",
        "cross-zone,host",
        "--tolerate-all",
        "--baseline",
        &base,
        "--tolerance",
        "50",
    ];
    let node = &nodes[2];
    let root_side = format!("{}n3h", c.name);
    let cap = [
        "root", "tbf", "rate", "300mbit", "burst", "256kb", "latency", "50ms",
    ];
    let on = |dev: &str, netns: Option<&str>| {
        let mut a = vec!["qdisc", "add", "dev", dev];
        a.extend_from_slice(&cap);
        let o = tc(netns, &a);
        assert!(o.status.success(), "{}", text(&o));
    };
    on(&root_side, None);
    on("eth0", Some(node));
    let capped = run(c, key, &args);
    tc(None, &["qdisc", "del", "dev", &root_side, "root"]);
    tc(Some(node), &["qdisc", "del", "dev", "eth0", "root"]);
    let all = text(&capped);
    assert_eq!(capped.status.code(), Some(1), "{all}");
    let fails: Vec<&str> = all.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert!(!fails.is_empty(), "{all}");
    for l in &fails {
        assert!(
            l.contains(node.as_str()),
            "a breach without {node}: {l}\n{all}"
        );
        assert!(l.contains("below the baseline"), "{l}");
    }
    assert!(all.contains("broke a gate (exit 1)"), "{all}");
    let clean = run(c, key, &args);
    assert!(clean.status.success(), "{}", text(&clean));
}

#[test]
fn paths_gates_and_outputs_on_a_real_cluster() {
    if !can_run("paths_gates_and_outputs_on_a_real_cluster") {
        return;
    }
    let _h = heavy();
    let name = unique("wsp");
    let s = Scratch::with_key(
        &format!("{name}-paths"),
        "7d1f0a5c9e3b4d2a8f6e1c0b9a7d5e3f2c4b6a8d0e1f3a5c7e9b2d4f6a8c0e1",
    );
    let key = s.key();
    {
        let c = Cluster::up(&name, &["--nodes", "3", "--zones", "r1-a,r1-a,r1-b"]);
        check_nodes(&c, 3);
        let nodes = c.nodes();
        c.taint(&nodes[2], true);
        tainted_node_left_out(&c, &s, &key, &nodes);
        every_path(&c, &s, &key, &nodes);
        missing_image_refused_before_apply(&c, &key);
        pairs_left_out_named(&c, &s, &key, &nodes);
        contended_under_a_cpu_hog(&c, &s, &key, &nodes);
        service_follows_endpoints(&c, &key, &nodes);
        planted_regression(&c, &s, &key, &nodes);
        c.taint(&nodes[2], false);
    }
    nothing_left(&name);
}
