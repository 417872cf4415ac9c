//! `wirespeed k8s run` on a real Kubernetes cluster: k8s/testenv/cluster.sh
//! brings up etcd, kube-apiserver, kube-scheduler, kube-controller-manager
//! and, per node (a network namespace), containerd + runc, the CNI bridge,
//! a kubelet and kube-proxy, all built from upstream sources, plus a
//! registry holding the agent image this repo's binary built. Nothing is
//! played: the DaemonSet controller makes the pods, the scheduler places
//! them, the kubelets pull and start them, the CNI wires them.
//!
//! One test function runs the scenarios in order on one cluster (a
//! cluster costs about a minute of two cores) and then checks that
//! `cluster.sh down` left nothing behind.

mod common;

use common::{bin, heavy};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script() -> PathBuf {
    repo().join("k8s/testenv/cluster.sh")
}

/// Whether this machine can run the cluster; under CI=true it must.
fn can_run(test: &str) -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let bins = std::env::var("KUBE_TESTENV_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target/k8s-testenv/bin"));
    let why = if !wirespeed_lab::is_root() {
        Some("needs root".to_string())
    } else if !bins.join("kubelet").exists() {
        Some(format!(
            "{} has no kubelet: run k8s/testenv/build.sh",
            bins.display()
        ))
    } else if Command::new("containerd")
        .arg("--version")
        .output()
        .is_err()
    {
        Some("containerd is not installed (.ci/run installs it)".into())
    } else {
        None
    };
    match why {
        Some(w) if ci => panic!("{test}: {w} (CI=true: not skipping)"),
        Some(w) => {
            eprintln!("skipping {test}: {w}");
            false
        }
        None => true,
    }
}

/// A cluster made by cluster.sh, taken down on drop.
struct Cluster {
    name: String,
    env: BTreeMap<String, String>,
}

impl Cluster {
    fn up(name: &str, args: &[&str]) -> Cluster {
        let out = Command::new(script())
            .args(["up", "--name", name])
            .args(args)
            .env("WIRESPEED_BIN", bin())
            .stdin(Stdio::null())
            .output()
            .expect("run cluster.sh up");
        let mut c = Cluster {
            name: name.into(),
            env: BTreeMap::new(),
        };
        assert!(
            out.status.success(),
            "cluster.sh up failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let envfile = String::from_utf8_lossy(&cs(&["env", "--name", name]).stdout)
            .trim()
            .to_string();
        let text = std::fs::read_to_string(&envfile).expect("read the cluster's env file");
        c.env = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim().trim_matches('"').trim().to_string()))
            .collect();
        c
    }

    fn get(&self, k: &str) -> &str {
        self.env.get(k).map(String::as_str).unwrap_or("")
    }

    /// The API as the admin, its answer as JSON (Null when it is not).
    fn api(&self, method: &str, path: &str, body: Option<(&str, &Value)>) -> Value {
        serde_json::from_slice(&self.curl(method, path, body)).unwrap_or(Value::Null)
    }

    /// The raw answer of `curl` with the cluster's CA and admin token.
    fn curl(&self, method: &str, path: &str, body: Option<(&str, &Value)>) -> Vec<u8> {
        let mut c = Command::new("curl");
        c.args(["-s", "--noproxy", "*", "-X", method, "--cacert"])
            .arg(self.get("CA"))
            .arg("-H")
            .arg(format!("Authorization: Bearer {}", self.get("TOKEN")));
        if let Some((ct, b)) = body {
            c.arg("-H")
                .arg(format!("Content-Type: {ct}"))
                .arg("--data-binary")
                .arg(b.to_string());
        }
        let out = c
            .arg(format!("{}{path}", self.get("SERVER")))
            .output()
            .expect("curl");
        out.stdout
    }

    /// `wirespeed ARGS` in the runner's namespace, which reaches the API
    /// server and nothing else.
    fn runner(&self, args: &[&str]) -> (Output, Duration) {
        let t = Instant::now();
        let out = Command::new("ip")
            .args(["netns", "exec", self.get("RUNNER_NETNS"), bin()])
            .args(args)
            .args(["--kubeconfig", self.get("RUNNER_KUBECONFIG")])
            .stdin(Stdio::null())
            .output()
            .expect("run wirespeed in the runner namespace");
        (out, t.elapsed())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let out = cs(&["down", "--name", &self.name]);
        if !out.status.success() {
            eprintln!(
                "cluster.sh down failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

fn cs(args: &[&str]) -> Output {
    Command::new(script())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run cluster.sh")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn unique(prefix: &str) -> String {
    format!("{prefix}{:x}", std::process::id() % 0xfff)
}

/// Nodes Ready, each with the test cluster's label; the agent image is in
/// the registry (pushed by the binary under test).
fn check_nodes(c: &Cluster, n: usize) {
    let nodes = c.api("GET", "/api/v1/nodes", None);
    let items = nodes["items"].as_array().expect("nodes list");
    assert_eq!(items.len(), n, "{nodes}");
    for node in items {
        let ready = node["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        assert!(ready, "node not Ready: {node}");
    }
    assert!(
        c.get("IMAGE").contains("@sha256:"),
        "image ref {:?}",
        c.get("IMAGE")
    );
}

/// host vs pod, every node pair, from a namespace that reaches only the
/// API server: exit 0, both modes' tables, the agents' pods Running on
/// every node from the image the project built.
fn run_host_and_pod(c: &Cluster, nodes: usize) {
    let outfile = std::env::temp_dir().join(format!("{}-run.json", c.name));
    let (out, took) = c.runner(&[
        "k8s",
        "run",
        "--network",
        "host,pod",
        "--image",
        c.get("IMAGE"),
        "--workloads",
        "stream,rr",
        "-d",
        "2s",
        "--warmup",
        "0",
        "--out",
        outfile.to_str().unwrap(),
    ]);
    let all = text(&out);
    assert!(
        out.status.success(),
        "k8s run failed after {took:?}:\n{all}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("== host network"), "{all}");
    assert!(stdout.contains("== pod network"), "{all}");
    assert!(stdout.contains("side by side"), "{all}");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&outfile).expect("--out written")).unwrap();
    let _ = std::fs::remove_file(&outfile);
    // all-to-all tests each unordered node pair once per workload.
    let pairs = nodes * (nodes - 1) / 2;
    for run in doc["runs"].as_array().expect("runs") {
        let agents = run["agents"].as_array().unwrap();
        assert_eq!(agents.len(), nodes, "one agent per node: {run}");
        let tests = run["results"]["tests"].as_array().unwrap();
        let ok = tests.iter().filter(|t| t["error"].is_null()).count();
        let errors: Vec<&Value> = tests.iter().filter(|t| !t["error"].is_null()).collect();
        assert_eq!(ok, 2 * pairs, "every pair, both workloads: {errors:?}");
        for t in tests {
            if t["workload"] == "stream" {
                assert!(t["throughput_bps"].as_f64().unwrap() > 1e8, "{t}");
            }
        }
    }
    // Report 3's table: throughput and CPU per Gbit/s for stream,
    // transactions, p50/p99 and CPU per transaction for rr, per side.
    let cmp = doc["comparison"].as_array().expect("comparison");
    assert_eq!(cmp.len(), 2, "stream and rr: {cmp:?}");
    for c in cmp {
        for m in c["modes"].as_array().unwrap() {
            let side = |k: &str| m[k].as_f64().is_some_and(|v| v > 0.0);
            if c["workload"] == "rr" {
                for k in [
                    "transactions_per_s",
                    "p50_us",
                    "p99_us",
                    "client_cpu_us_per_trans",
                    "server_cpu_us_per_trans",
                ] {
                    assert!(side(k), "{k} in {m}");
                }
            } else {
                for k in [
                    "throughput_bps",
                    "client_cpu_per_gbit",
                    "server_cpu_per_gbit",
                ] {
                    assert!(side(k), "{k} in {m}");
                }
            }
        }
    }
    assert!(stdout.contains("latency p99 (us)"), "{all}");
    println!("{stdout}");
}

/// An image that does not exist: non-zero within 60 s, naming the pull
/// failure and the pod.
fn missing_image(c: &Cluster) {
    let bad = format!("{}/wirespeed:no-such-tag", c.get("REGISTRY"));
    let (out, took) = c.runner(&[
        "k8s",
        "run",
        "--network",
        "pod",
        "--image",
        &bad,
        "-d",
        "1s",
    ]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(took < Duration::from_secs(60), "took {took:?}: {all}");
    assert!(
        all.contains("ImagePullBackOff") || all.contains("ErrImagePull"),
        "{all}"
    );
    assert!(all.contains("wirespeed-agent"), "names the pod: {all}");
}

/// One node tainted NoSchedule: the run names the node and its taint.
fn tainted_node(c: &Cluster) {
    let node = c
        .get("NODES")
        .split_whitespace()
        .last()
        .unwrap()
        .to_string();
    let patch = serde_json::json!({"spec": {"taints": [
        {"key": "wirespeed.dev/test", "value": "busy", "effect": "NoSchedule"}]}});
    let r = c.api(
        "PATCH",
        &format!("/api/v1/nodes/{node}"),
        Some(("application/strategic-merge-patch+json", &patch)),
    );
    assert!(r["spec"]["taints"].is_array(), "taint applied: {r}");
    let (out, took) = c.runner(&[
        "k8s",
        "run",
        "--network",
        "pod",
        "--image",
        c.get("IMAGE"),
        "-d",
        "1s",
    ]);
    let all = text(&out);
    let untaint = serde_json::json!({"spec": {"taints": null}});
    c.api(
        "PATCH",
        &format!("/api/v1/nodes/{node}"),
        Some(("application/strategic-merge-patch+json", &untaint)),
    );
    assert!(!out.status.success(), "{all}");
    assert!(took < Duration::from_secs(90), "took {took:?}: {all}");
    assert!(all.contains(&node), "names the node: {all}");
    assert!(all.contains("wirespeed.dev/test"), "names the taint: {all}");
}

/// The REST collection path of an object the runner manifests hold.
fn collection(o: &Value) -> String {
    let ns = o["metadata"]["namespace"].as_str().unwrap_or("");
    match o["kind"].as_str().unwrap_or("") {
        "Namespace" => "/api/v1/namespaces".into(),
        "ServiceAccount" => format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        "ClusterRole" => "/apis/rbac.authorization.k8s.io/v1/clusterroles".into(),
        "ClusterRoleBinding" => "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings".into(),
        "Job" => format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        k => panic!("runner manifests hold a {k} this test cannot create"),
    }
}

/// In-cluster mode: `k8s manifests --runner` (ServiceAccount, the
/// ClusterRole it needs, a Job running `k8s run`) applied as a user would;
/// the Job's pod reaches the API server through the `kubernetes` Service
/// (kube-proxy) and the run succeeds; its log holds the table.
fn in_cluster_job(c: &Cluster) {
    let ns = format!("{}-job", c.name);
    let out = common::ws(&[
        "k8s",
        "manifests",
        "--runner",
        "--namespace",
        &ns,
        "--image",
        c.get("IMAGE"),
        "--output",
        "json",
        "--",
        "--network",
        "pod",
        "-d",
        "1s",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("a v1 List");
    let items = list["items"].as_array().expect("items");
    for o in items {
        let r = c.api("POST", &collection(o), Some(("application/json", o)));
        assert_eq!(
            r["kind"], o["kind"],
            "create {}: {r}",
            o["metadata"]["name"]
        );
    }
    let job = items.iter().find(|o| o["kind"] == "Job").expect("a Job");
    let jname = job["metadata"]["name"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        let j = c.api(
            "GET",
            &format!("/apis/batch/v1/namespaces/{ns}/jobs/{jname}"),
            None,
        );
        let st = &j["status"];
        if st["succeeded"].as_u64() == Some(1) || st["failed"].as_u64().unwrap_or(0) > 0 {
            break st.clone();
        }
        assert!(Instant::now() < deadline, "Job not done in 180 s: {j}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let pods = c.api(
        "GET",
        &format!("/api/v1/namespaces/{ns}/pods?labelSelector=job-name%3D{jname}"),
        None,
    );
    let pod = pods["items"][0]["metadata"]["name"].as_str().unwrap_or("?");
    let log = logs(c, &ns, pod);
    for o in items.iter().rev() {
        let name = o["metadata"]["name"].as_str().unwrap_or("");
        if o["kind"] != "ServiceAccount" && o["kind"] != "Job" {
            c.api("DELETE", &format!("{}/{name}", collection(o)), None);
        }
    }
    assert_eq!(status["succeeded"], 1, "Job failed: {status}\n{log}");
    assert!(log.contains("pod network"), "{log}");
}

/// A pod's log through the API server (and the kubelet).
fn logs(c: &Cluster, ns: &str, pod: &str) -> String {
    let path = format!("/api/v1/namespaces/{ns}/pods/{pod}/log");
    String::from_utf8_lossy(&c.curl("GET", &path, None)).into_owned()
}

/// Nothing of the cluster is left on the host: processes, mounts,
/// namespaces, links, cgroups, directories.
fn nothing_left(name: &str) {
    let out = cs(&["leftovers", "--name", name]);
    assert!(out.status.success(), "cluster.sh leftovers: {}", text(&out));
    let netns = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .to_string();
    assert!(
        !netns.lines().any(|l| l.starts_with(&format!("{name}-"))),
        "{netns}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let marker = format!("/k8s-cluster/{name}");
    assert!(
        !mounts.contains(&marker) && !mounts.contains(&format!("/run/wsc/{name}/")),
        "mounts left"
    );
    for h in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        for i in 1..=9 {
            let p = h.path().join(format!("{name}-n{i}"));
            assert!(!p.exists(), "cgroup {} left", p.display());
        }
    }
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(p.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd);
            assert!(!cmd.contains(&marker), "process left: {cmd}");
        }
    }
}

#[test]
fn real_cluster_runs_agents_and_fails_loudly() {
    if !can_run("real_cluster_runs_agents_and_fails_loudly") {
        return;
    }
    let _h = heavy();
    let name = unique("wsk");
    {
        let c = Cluster::up(&name, &["--nodes", "3"]);
        check_nodes(&c, 3);
        run_host_and_pod(&c, 3);
        missing_image(&c);
        tainted_node(&c);
        in_cluster_job(&c);
    }
    nothing_left(&name);
}
