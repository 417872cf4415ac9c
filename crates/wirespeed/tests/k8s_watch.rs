//! `wirespeed k8s watch` on a real three-node cluster
//! (k8s/testenv/cluster.sh: kubelets, containerd, scheduler, controllers,
//! CNI, the image this repo's binary built), driven from a namespace that
//! reaches only the API server: apply makes the agents' DaemonSet and the
//! watcher's Deployment and returns once the watcher watches all three;
//! the watcher probes every pair (read back through the API server's
//! service proxy: `k8s watch status` and `/metrics`); a replaced agent
//! pod is found again and its node's links are measured on the new pod;
//! bad flags and an unknown namespace fail loudly; delete removes it all
//! and refuses a namespace wirespeed did not make.

mod common;

use common::cluster::{
    Cluster, Scratch, can_run, check_nodes, nothing_left, text, unique, wait_for,
};
use common::heavy;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Instant;

/// `k8s watch status --json` in the runner namespace: the state, or None
/// when the command failed.
fn status(c: &Cluster, ns: &str, json_file: &str) -> Option<Value> {
    let (out, _) = c.runner(&[
        "k8s",
        "watch",
        "status",
        "--namespace",
        ns,
        "--json",
        json_file,
    ]);
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&std::fs::read(json_file).ok()?).ok()
}

/// The node pairs (unordered) with a probe that measured, newer than
/// `after`, in a state's newest rows.
fn measured_pairs(st: &Value, after: f64) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for r in st["latest"].as_array().into_iter().flatten() {
        let ok = r["error"].is_null() && r["at_unix"].as_f64().unwrap_or(0.0) > after;
        let (a, b) = (
            r["client"].as_str().unwrap_or("").to_string(),
            r["server"].as_str().unwrap_or("").to_string(),
        );
        if ok && r["workload"] == "rr" {
            out.insert(if a < b { (a, b) } else { (b, a) });
        }
    }
    out
}

fn all_pairs(nodes: &[String]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (i, a) in nodes.iter().enumerate() {
        for b in &nodes[i + 1..] {
            out.insert((a.clone(), b.clone()));
        }
    }
    out
}

/// The agent pod on `node`.
fn agent_on(c: &Cluster, ns: &str, node: &str) -> Option<String> {
    let pods = c.api(
        "GET",
        &format!(
            "/api/v1/namespaces/{ns}/pods?labelSelector=app.kubernetes.io%2Fname%3Dwirespeed-agent&fieldSelector=spec.nodeName%3D{node}"
        ),
        None,
    );
    pods["items"]
        .as_array()?
        .iter()
        .find(|p| p["metadata"]["deletionTimestamp"].is_null())
        .and_then(|p| p["metadata"]["name"].as_str())
        .map(String::from)
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Applies the watcher and checks it probes every pair, through the API
/// server only.
fn apply_and_watch(c: &Cluster, ns: &str, s: &Scratch, nodes: &[String]) {
    let key = s.key();
    let (out, took) = c.runner(&[
        "k8s",
        "watch",
        "apply",
        "--image",
        c.get("IMAGE"),
        "--namespace",
        ns,
        "--network",
        "pod",
        "--key-file",
        &key,
        "--rediscover",
        "3s",
        "--ready-timeout",
        "3m",
        "--",
        "--probe-period",
        "5s",
        "--bandwidth-duration",
        "1s",
        "--link-rate",
        "1gbit",
        "--budget",
        "10",
    ]);
    let all = text(&out);
    assert!(out.status.success(), "apply failed after {took:?}: {all}");
    assert!(all.contains("watches 3 agents"), "{all}");
    assert!(
        all.contains("port-forward service/wirespeed-watch"),
        "{all}"
    );
    let jf = s.file("state.json");
    let want = all_pairs(nodes);
    let t = Instant::now();
    wait_for("every pair probed", 120, || {
        let st = status(c, ns, &jf)?;
        (measured_pairs(&st, 0.0) == want).then_some(())
    });
    let (st, _) = c.runner(&["k8s", "watch", "status", "--namespace", ns]);
    eprintln!(
        "apply took {took:?}; every pair probed {:?} later; status:\n{}",
        t.elapsed(),
        text(&st)
    );
    let metrics = String::from_utf8_lossy(&c.curl(
        "GET",
        &format!("/api/v1/namespaces/{ns}/services/wirespeed-watch:http/proxy/metrics"),
        None,
    ))
    .into_owned();
    assert!(metrics.contains("wirespeed_watch_tests_total"), "{metrics}");
    for n in nodes {
        assert!(metrics.contains(&format!("\"{n}\"")), "{n} in {metrics}");
    }
    let page = String::from_utf8_lossy(&c.curl(
        "GET",
        &format!("/api/v1/namespaces/{ns}/services/wirespeed-watch:http/proxy/"),
        None,
    ))
    .into_owned();
    assert!(page.contains("<svg"), "the live page: {page}");
}

/// An agent pod replaced by the DaemonSet controller is found again: the
/// watcher's log says so, and its node's links are measured anew.
fn replaced_agent(c: &Cluster, ns: &str, s: &Scratch, nodes: &[String]) {
    let node = &nodes[0];
    let old = agent_on(c, ns, node).expect("an agent on the first node");
    let r = c.api(
        "DELETE",
        &format!("/api/v1/namespaces/{ns}/pods/{old}"),
        None,
    );
    assert!(r["kind"].is_string(), "delete pod {old}: {r}");
    // The agent stops on SIGTERM (tests ended, exit within 2 s), so the
    // kubelet confirms the deletion long before the 30 s grace period.
    let asked = Instant::now();
    wait_for("the old pod's deletion to complete", 30, || {
        let r = c.api("GET", &format!("/api/v1/namespaces/{ns}/pods/{old}"), None);
        (r["code"] == 404).then_some(())
    });
    let took = asked.elapsed();
    eprintln!("agent pod {old} deleted in {took:?}");
    assert!(
        took < std::time::Duration::from_secs(5),
        "agent pod {old} took {took:?} to go"
    );
    let new = wait_for("a new agent pod", 90, || {
        agent_on(c, ns, node).filter(|p| *p != old)
    });
    let deleted = Instant::now();
    let log = wait_for("the watcher to watch the new pod", 120, || {
        let l = watcher_log(c, ns);
        let moved = l.split("the agents changed").nth(1)?;
        moved.contains("watching 3 agents").then_some(())?;
        moved.contains(&new).then_some(l)
    });
    assert!(log.contains(&old), "names the pod gone: {log}");
    eprintln!(
        "watching the new pod {:?} after deleting the old",
        deleted.elapsed()
    );
    let t = now_unix();
    let jf = s.file("state2.json");
    wait_for("the new pod's links measured", 60, || {
        let st = status(c, ns, &jf)?;
        let pairs = measured_pairs(&st, t);
        pairs
            .iter()
            .any(|(a, b)| a == node || b == node)
            .then_some(())
    });
}

/// The watcher pod's log, through the API server.
fn watcher_log(c: &Cluster, ns: &str) -> String {
    let pods = c.api(
        "GET",
        &format!(
            "/api/v1/namespaces/{ns}/pods?labelSelector=app.kubernetes.io%2Fname%3Dwirespeed-watch"
        ),
        None,
    );
    let pod = pods["items"][0]["metadata"]["name"].as_str().unwrap_or("?");
    String::from_utf8_lossy(&c.curl(
        "GET",
        &format!("/api/v1/namespaces/{ns}/pods/{pod}/log"),
        None,
    ))
    .into_owned()
}

/// Bad flags, an unknown namespace and a namespace wirespeed did not
/// make fail with a reason and a non-zero exit.
fn loud_failures(c: &Cluster, ns: &str) {
    let (out, _) = c.runner(&[
        "k8s", "watch", "apply", "--image", "x/y:1", "--", "--listen", ":1",
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("sets it itself"), "{}", text(&out));
    let (out, _) = c.runner(&["k8s", "watch", "status", "--namespace", "wsw-none"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("wsw-none"), "{}", text(&out));
    let user_ns = format!("{ns}-user");
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": user_ns}});
    let r = c.api(
        "POST",
        "/api/v1/namespaces",
        Some(("application/json", &body)),
    );
    assert_eq!(r["metadata"]["name"], user_ns.as_str(), "{r}");
    let (out, _) = c.runner(&["k8s", "watch", "delete", "--namespace", &user_ns]);
    let gone = c.api("GET", &format!("/api/v1/namespaces/{user_ns}"), None);
    c.api("DELETE", &format!("/api/v1/namespaces/{user_ns}"), None);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("not made by wirespeed"),
        "{}",
        text(&out)
    );
    assert_eq!(
        gone["metadata"]["name"],
        user_ns.as_str(),
        "left alone: {gone}"
    );
}

fn delete(c: &Cluster, ns: &str) {
    let t = Instant::now();
    let (out, _) = c.runner(&["k8s", "watch", "delete", "--namespace", ns]);
    assert!(out.status.success(), "{}", text(&out));
    // 44 s before the agents and the watcher stopped on SIGTERM (each
    // pod waited out its 30 s grace period).
    eprintln!("k8s watch delete took {:?}", t.elapsed());
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "k8s watch delete took {:?}",
        t.elapsed()
    );
    let r = c.api("GET", &format!("/api/v1/namespaces/{ns}"), None);
    assert_eq!(r["code"], 404, "namespace gone: {r}");
}

#[test]
fn real_cluster_watches_every_pair_and_follows_replaced_agents() {
    if !can_run("real_cluster_watches_every_pair_and_follows_replaced_agents") {
        return;
    }
    let _h = heavy();
    let name = unique("wsw");
    {
        let c = Cluster::up(&name, &["--nodes", "3"]);
        check_nodes(&c, 3);
        let nodes = c.nodes();
        let s = Scratch::with_key(&format!("{name}-scratch"), "k8s-watch-test-key");
        let ns = format!("{name}-watch");
        apply_and_watch(&c, &ns, &s, &nodes);
        replaced_agent(&c, &ns, &s, &nodes);
        loud_failures(&c, &ns);
        delete(&c, &ns);
    }
    nothing_left(&name);
}
