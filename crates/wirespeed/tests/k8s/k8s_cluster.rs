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
//! `cluster.sh down` left nothing behind. Runs killed, resumed and hit by
//! faults are k8s_faults.rs.

use crate::common;

use common::cluster::{Cluster, can_run, check_nodes, nothing_left, text, unique};
use common::heavy;
use serde_json::Value;
use std::time::{Duration, Instant};

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
        "--privileged-namespace",
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
    assert!(stdout.contains("== host path"), "{all}");
    assert!(stdout.contains("== cross-node path"), "{all}");
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
    assert!(
        stdout.contains("p50 us") && stdout.contains("p99 us"),
        "{all}"
    );
    println!("{stdout}");
}

/// rr with `--breakdown` on the host and the pod network: each mode's
/// tests carry a breakdown whose segments add up to the round trip, and
/// the side-by-side table has each segment at p50 and p99 per mode, with
/// the pod path's gap to the host's (issue 28's question per mode).
fn breakdown_host_and_pod(c: &Cluster) {
    let outfile = std::env::temp_dir().join(format!("{}-bd.json", c.name));
    let (out, took) = c.runner(&[
        "k8s",
        "run",
        "--network",
        "host,pod",
        "--privileged-namespace",
        "--image",
        c.get("IMAGE"),
        "-w",
        "rr",
        "--breakdown",
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
        "k8s run --breakdown failed after {took:?}:\n{all}"
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&outfile).expect("--out written")).unwrap();
    let _ = std::fs::remove_file(&outfile);
    for run in doc["runs"].as_array().expect("runs") {
        for t in run["results"]["tests"].as_array().unwrap() {
            let b = &t["result"]["breakdown"];
            assert!(b["transactions"].as_u64().unwrap_or(0) > 0, "{t}");
            let err = b["sum_error_p50"].as_f64().unwrap_or(1.0);
            assert!(err < 0.02, "segments add up within 2% at p50: {err} in {b}");
        }
    }
    let modes = doc["comparison"][0]["modes"].as_array().expect("modes");
    assert_eq!(modes.len(), 2, "{modes:?}");
    for m in modes {
        let segs: Vec<&str> = m["segments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g["segment"].as_str())
            .collect();
        for k in [
            "client_send_stack",
            "wire",
            "server_rx_stack",
            "client_rx_stack",
        ] {
            assert!(segs.contains(&k), "{k} in {m}");
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("server_rx_stack"))
        .unwrap_or_else(|| panic!("no segment row: {all}"));
    assert!(row.contains('%'), "the pod path's gap to the host's: {row}");
    println!("{stdout}");
}

/// Report 3's many clients on the real cluster: the victim (rr from node
/// 2's pod) to node 1's pod, alone and beside K=1,2 stream loaders from
/// node 3's pod. Every point is measured, the loaders carry traffic, the
/// knee is named and `--out` holds the curves.
fn interference_on_the_pod_network(c: &Cluster) {
    let outfile = std::env::temp_dir().join(format!("{}-if.json", c.name));
    let (out, took) = c.runner(&[
        "k8s",
        "run",
        "--image",
        c.get("IMAGE"),
        "--paths",
        "cross-node",
        "-w",
        "rr",
        "-s",
        "4k",
        "--interference",
        "0,1,2",
        "-d",
        "1s",
        "--warmup",
        "0.3s",
        "--out",
        outfile.to_str().unwrap(),
    ]);
    let all = text(&out);
    assert!(
        out.status.success(),
        "k8s run --interference after {took:?}:\n{all}"
    );
    assert!(
        all.contains("victim rr 4 KiB each way, beside K loaders running stream"),
        "{all}"
    );
    assert!(all.contains("knee: p99"), "{all}");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&outfile).expect("--out written")).unwrap();
    let _ = std::fs::remove_file(&outfile);
    let points = doc["interference"]["curves"][0]["points"]
        .as_array()
        .expect("points");
    let ks: Vec<u64> = points.iter().map(|p| p["k"].as_u64().unwrap()).collect();
    assert_eq!(ks, [0, 1, 2], "{all}");
    for p in points {
        assert!(p["victim_tps"].as_f64().unwrap() > 0.0, "{p}");
        let k = p["k"].as_u64().unwrap() as usize;
        let loaders = p["loader_bps"].as_array().unwrap();
        assert_eq!(loaders.len(), k, "a flow per loader: {p}");
        assert!(loaders.iter().all(|b| b.as_f64().unwrap() > 0.0), "{p}");
    }
    println!("{}", String::from_utf8_lossy(&out.stdout));
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

/// One node tainted NoSchedule: the run leaves it out, naming the node
/// and its taint, and measures the others (no wait for a pod that
/// cannot be scheduled).
fn tainted_node(c: &Cluster) {
    let node = c
        .get("NODES")
        .split_whitespace()
        .last()
        .unwrap()
        .to_string();
    c.taint(&node, true);
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
    c.taint(&node, false);
    assert!(out.status.success(), "{all}");
    assert!(took < Duration::from_secs(90), "took {took:?}: {all}");
    assert!(
        all.contains(&format!(
            "node {node} left out: taint wirespeed.dev/test=busy:NoSchedule not tolerated"
        )),
        "names the node and the taint: {all}"
    );
}

/// A listener on the host agents' port of the first node: its agent
/// exits at start (the port is taken on the host network), the run fails
/// on CrashLoopBackOff with the advice to keep the objects and read the
/// agent's previous log. Followed (the run kept with --keep), that log
/// says why, naming the port; then the namespace is deleted.
fn crash_loop_advice_followed(c: &Cluster) {
    const PORT: &str = "5471";
    let nodes = c.nodes();
    let taker = format!(
        "import socket,time\ns=socket.socket()\ns.bind(('0.0.0.0',{PORT}))\ns.listen()\nprint('ready',flush=True)\ntime.sleep(240)"
    );
    let mut holder = common::Proc(
        std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &format!("{}-n1", c.name),
                "python3",
                "-c",
                &taker,
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 holding the port"),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.0.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready", "the port holder did not start");
    let ns = format!("{}-crash", c.name);
    let (out, took) = c.runner(&[
        "k8s",
        "run",
        "--network",
        "host",
        "--privileged-namespace",
        "--namespace",
        &ns,
        "--nodes",
        &format!("{},{}", nodes[0], nodes[1]),
        "--port",
        PORT,
        "--http-port",
        "5472",
        "--image",
        c.get("IMAGE"),
        "--keep",
        "-d",
        "1s",
    ]);
    drop(holder);
    let all = text(&out);
    let cleanup = || c.api("DELETE", &format!("/api/v1/namespaces/{ns}"), None);
    if out.status.success() || took > Duration::from_secs(150) {
        cleanup();
        panic!("took {took:?}: {all}");
    }
    let pods = c.api("GET", &format!("/api/v1/namespaces/{ns}/pods"), None);
    let crashed = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["spec"]["nodeName"] == nodes[0].as_str())
        .and_then(|p| p["metadata"]["name"].as_str())
        .unwrap_or_default()
        .to_string();
    let log = c.pod_log(&ns, &crashed, true);
    cleanup();
    assert!(
        all.contains("CrashLoopBackOff")
            && all.contains("rerun with --keep and read `kubectl logs --previous` of the pod"),
        "{all}"
    );
    assert!(all.contains("--keep: left"), "{all}");
    assert!(log.contains(PORT), "pod {crashed}'s previous log: {log}");
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
    // The log is read while the Job runs and once it is done, the longest
    // kept: the kubelet may collect a finished pod's container, and its
    // log with it, before a read after the end.
    let mut log = String::new();
    let status = loop {
        let j = c.api(
            "GET",
            &format!("/apis/batch/v1/namespaces/{ns}/jobs/{jname}"),
            None,
        );
        let pods = c.api(
            "GET",
            &format!("/api/v1/namespaces/{ns}/pods?labelSelector=job-name%3D{jname}"),
            None,
        );
        if let Some(pod) = pods["items"][0]["metadata"]["name"].as_str() {
            let now = c.pod_log(&ns, pod, false);
            if now.contains("k8s: ") && now.len() > log.len() {
                log = now;
            }
        }
        let st = &j["status"];
        if st["succeeded"].as_u64() == Some(1) || st["failed"].as_u64().unwrap_or(0) > 0 {
            break st.clone();
        }
        assert!(Instant::now() < deadline, "Job not done in 180 s: {j}");
        std::thread::sleep(Duration::from_millis(500));
    };
    for o in items.iter().rev() {
        let name = o["metadata"]["name"].as_str().unwrap_or("");
        if o["kind"] != "ServiceAccount" && o["kind"] != "Job" {
            c.api("DELETE", &format!("{}/{name}", collection(o)), None);
        }
    }
    assert_eq!(status["succeeded"], 1, "Job failed: {status}\n{log}");
    assert!(log.contains("cross-node path"), "{log}");
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
        breakdown_host_and_pod(&c);
        interference_on_the_pod_network(&c);
        missing_image(&c);
        tainted_node(&c);
        crash_loop_advice_followed(&c);
        in_cluster_job(&c);
    }
    nothing_left(&name);
}
