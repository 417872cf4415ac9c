//! `wirespeed k8s run` when things fail, on a real Kubernetes cluster
//! (k8s/testenv/cluster.sh; see k8s_cluster.rs): runs SIGKILLed and
//! resumed, an agent pod deleted mid-test, the API server restarted
//! mid-run, a dead run's Lease taken over, a node lost mid-run. One
//! cluster of three nodes for all of it, in order; `cluster.sh down`
//! must leave nothing behind.

use crate::common;

use common::cluster::{Cluster, can_run, check_nodes, nothing_left, text, unique};
use common::heavy;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The case keys (path, workload, repeat, client, server) of an --out
/// document, each with its goodput and transactions (bit for bit: a test
/// taken from an earlier run keeps them; a test measured again would not).
fn cases(doc: &Value) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    for run in doc["runs"].as_array().into_iter().flatten() {
        for t in run["results"]["tests"].as_array().into_iter().flatten() {
            if !t["error"].is_null() {
                continue;
            }
            let key = format!(
                "{} {} #{} {}>{}",
                run["path"], t["workload"], t["repeat"], t["client"], t["server"]
            );
            let bits = |k: &str| t[k].as_f64().unwrap_or(0.0).to_bits();
            let old = out.insert(
                key.clone(),
                (bits("throughput_bps"), bits("transactions_per_s")),
            );
            assert!(old.is_none(), "{key} measured twice");
        }
    }
    out
}

fn read_doc(p: &std::path::Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// The tests of an --out document that were not measured, each as
/// `path workload #repeat client>server: error`.
fn errors(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for run in doc["runs"].as_array().into_iter().flatten() {
        for t in run["results"]["tests"].as_array().into_iter().flatten() {
            if let Some(e) = t["error"].as_str() {
                out.push(format!(
                    "{} {} #{} {}>{}: {e}",
                    run["path"], t["workload"], t["repeat"], t["client"], t["server"]
                ));
            }
        }
    }
    out
}

/// Waits (at most 180 s) until the run `p` writes at least `n` measured
/// tests to `out`; that document.
fn wait_cases(p: &mut common::Proc, out: &std::path::Path, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some(d) = read_doc(out).filter(|d| cases(d).len() >= n) {
            return d;
        }
        if p.0.try_wait().unwrap().is_some() {
            panic!("the run ended before {n} tests: {}", text(&finish(p, 1)));
        }
        assert!(
            Instant::now() < deadline,
            "no {n} tests in {} within 180 s",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (at most `secs`) for the run `p` to end; its output.
fn finish(p: &mut common::Proc, secs: u64) -> std::process::Output {
    use std::io::Read;
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = p.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not end within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    if let Some(mut o) = p.0.stdout.take() {
        let _ = o.read_to_end(&mut stdout);
    }
    if let Some(mut e) = p.0.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    std::process::Output {
        status,
        stdout,
        stderr,
    }
}

/// The name of the agent pod in `ns` on `node`.
fn pod_on(c: &Cluster, ns: &str, node: &str) -> String {
    let pods = c.api(
        "GET",
        &format!("/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3D{node}"),
        None,
    );
    pods["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("no pod on {node} in {ns}: {pods}"))
        .to_string()
}

/// The run's resume of `out` in a fresh namespace measures what it lacks:
/// then every case of `all` is there.
fn resumed_whole(c: &Cluster, key: &str, ns: &str, out: &std::path::Path, all: &CaseSet) {
    let r = run_cmd(c, key, ns, out, &["--resume", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(r.status.success(), "the resumed run: {}", text(&r));
    let keys: CaseSet = cases(&read_doc(out).unwrap()).keys().cloned().collect();
    assert_eq!(&keys, all, "the resumed run's cases");
}

type CaseSet = std::collections::BTreeSet<String>;

/// An agent pod deleted mid-test (issue 44, item 3): the test in flight
/// is reported interrupted, the DaemonSet's replacement takes the rest of
/// that agent's tests; the run exits 3 (one test not measured) and a
/// resume measures that one.
fn agent_pod_deleted_mid_test(c: &Cluster, s: &common::cluster::Scratch, all: &CaseSet) {
    let ns = format!("{}-del", c.name);
    let out = std::path::PathBuf::from(s.file("deleted.json"));
    let cmd = run_cmd_for(c, &s.file("key"), &ns, &out, "3s", &[]);
    let mut p = common::Proc({ cmd }.spawn().unwrap());
    let doc = wait_cases(&mut p, &out, 1);
    // The first pair's next test (3 s) starts as the first one lands.
    let node = doc["runs"][0]["results"]["tests"][0]["server"]
        .as_str()
        .unwrap()
        .to_string();
    let pod = pod_on(c, &ns, &node);
    c.api(
        "DELETE",
        &format!("/api/v1/namespaces/{ns}/pods/{pod}"),
        None,
    );
    let o = finish(&mut p, 300);
    assert_eq!(
        o.status.code(),
        Some(3),
        "one test not measured: {}",
        text(&o)
    );
    let doc = read_doc(&out).unwrap();
    let errs = errors(&doc);
    assert_eq!(
        errs.len(),
        1,
        "only the test in flight: {errs:?}\n{}",
        text(&o)
    );
    assert!(errs[0].contains("interrupted"), "{errs:?}");
    assert!(errs[0].contains(&node), "{errs:?}");
    assert_eq!(cases(&doc).len(), all.len() - 1, "{}", text(&o));
    let notes = doc["runs"][0]["results"]["notes"].to_string();
    assert!(
        notes.contains(&format!("agent {node} went down")),
        "{notes}"
    );
    assert!(notes.contains("was replaced"), "{notes}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("is back: its replacement"), "{}", text(&o));
    resumed_whole(c, &s.file("key"), &format!("{ns}-r"), &out, all);
}

/// The API server stopped and started again mid-run (issue 44, item 3):
/// the run waits it out and measures everything.
fn api_server_restarted_mid_run(c: &Cluster, s: &common::cluster::Scratch, all: &CaseSet) {
    let ns = format!("{}-api", c.name);
    let out = std::path::PathBuf::from(s.file("api.json"));
    let mut p = common::Proc(run_cmd(c, &s.file("key"), &ns, &out, &[]).spawn().unwrap());
    wait_cases(&mut p, &out, 3);
    let t = Instant::now();
    let o = common::cluster::cs(&["api-stop", "--name", &c.name]);
    assert!(o.status.success(), "{}", text(&o));
    let o = common::cluster::cs(&["api-start", "--name", &c.name]);
    assert!(o.status.success(), "{}", text(&o));
    let down = t.elapsed();
    let o = finish(&mut p, 300);
    assert!(
        o.status.success(),
        "the run through a restart: {}",
        text(&o)
    );
    let doc = read_doc(&out).unwrap();
    assert_eq!(doc["partial"], false);
    assert_eq!(errors(&doc), Vec::<String>::new());
    let keys: CaseSet = cases(&doc).keys().cloned().collect();
    assert_eq!(&keys, all);
    println!(
        "the API server was out for {down:?}; the run measured all {}",
        all.len()
    );
}

/// `k8s cleanup --namespace NS --force` deletes the namespace a run made.
fn forced_cleanup(c: &Cluster, ns: &str) {
    let (o, _) = c.runner(&["k8s", "cleanup", "--namespace", ns, "--force"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("deleted Namespace {ns}")),
        "{}",
        text(&o)
    );
}

/// The API server out longer than `--api-retry 5s` mid-run: the run
/// stops testing, names the API server, keeps what it measured, leaves
/// its objects and exits 3; once the server is back, `k8s cleanup`
/// deletes them.
fn api_server_out_past_the_bound(c: &Cluster, s: &common::cluster::Scratch) {
    let ns = format!("{}-apx", c.name);
    let out = std::path::PathBuf::from(s.file("apx.json"));
    let cmd = run_cmd(c, &s.file("key"), &ns, &out, &["--api-retry", "5s"]);
    let mut p = common::Proc({ cmd }.spawn().unwrap());
    wait_cases(&mut p, &out, 2);
    let o = common::cluster::cs(&["api-stop", "--name", &c.name]);
    assert!(o.status.success(), "{}", text(&o));
    let o = finish(&mut p, 180);
    let up = common::cluster::cs(&["api-start", "--name", &c.name]);
    assert!(up.status.success(), "{}", text(&up));
    let all = text(&o);
    assert_eq!(o.status.code(), Some(3), "{all}");
    assert!(all.contains("the API server did not answer"), "{all}");
    assert!(
        all.contains("`wirespeed k8s cleanup` deletes them"),
        "{all}"
    );
    let doc = read_doc(&out).unwrap();
    assert!(cases(&doc).len() >= 2, "what was measured stays: {all}");
    forced_cleanup(c, &ns);
}

/// A run killed in a namespace it was given; while its Lease is fresh a
/// second run is refused, and once the Lease has expired (its renewTime
/// set back: the minute is not waited for) the next run takes it over,
/// deletes what the dead run left and measures the rest.
fn dead_runs_lease_taken_over(c: &Cluster, s: &common::cluster::Scratch, all: &CaseSet) {
    let ns = format!("{}-given", c.name);
    let body =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    c.api(
        "POST",
        "/api/v1/namespaces",
        Some(("application/json", &body)),
    );
    let out = std::path::PathBuf::from(s.file("given.json"));
    let mut p = common::Proc(run_cmd(c, &s.file("key"), &ns, &out, &[]).spawn().unwrap());
    wait_cases(&mut p, &out, 2);
    p.0.kill().unwrap();
    p.0.wait().unwrap();
    let other = std::path::PathBuf::from(s.file("other.json"));
    let r = run_cmd(c, &s.file("key"), &ns, &other, &[])
        .output()
        .unwrap();
    assert!(!r.status.success(), "a fresh Lease: {}", text(&r));
    assert!(text(&r).contains("is in use by run"), "{}", text(&r));
    let lease = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/wirespeed-run");
    let old = serde_json::json!({"spec": {"renewTime": "2026-01-01T00:00:00.000000Z"}});
    let l = c.api(
        "PATCH",
        &lease,
        Some(("application/merge-patch+json", &old)),
    );
    assert_eq!(l["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z", "{l}");
    let r = run_cmd(
        c,
        &s.file("key"),
        &ns,
        &out,
        &["--resume", out.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(
        r.status.success(),
        "the run after the Lease expired: {}",
        text(&r)
    );
    assert!(
        text(&r).contains("took over the expired Lease of run"),
        "{}",
        text(&r)
    );
    assert!(
        text(&r).contains("deleted what it left: DaemonSet"),
        "{}",
        text(&r)
    );
    let keys: CaseSet = cases(&read_doc(&out).unwrap()).keys().cloned().collect();
    assert_eq!(&keys, all);
    c.api("DELETE", &format!("/api/v1/namespaces/{ns}"), None);
}

/// A node lost mid-run (issue 44, item 3): its kubelet stopped and its
/// link down. The run finishes the other pair, names the node and its
/// pairs, exits 3 and deletes what it applied; once the node is back,
/// the namespace goes.
fn node_lost_mid_run(c: &Cluster, s: &common::cluster::Scratch) {
    let ns = format!("{}-lost", c.name);
    let out = std::path::PathBuf::from(s.file("lost.json"));
    let mut p = common::Proc(run_cmd(c, &s.file("key"), &ns, &out, &[]).spawn().unwrap());
    let doc = wait_cases(&mut p, &out, 1);
    let first = &doc["runs"][0]["results"]["tests"][0];
    let busy = [
        first["client"].as_str().unwrap(),
        first["server"].as_str().unwrap(),
    ];
    let nodes = c.nodes();
    let (i, lost) = nodes
        .iter()
        .enumerate()
        .find(|(_, n)| !busy.contains(&n.as_str()))
        .expect("a node outside the first pair");
    let o = common::cluster::cs(&["node-down", &(i + 1).to_string(), "--name", &c.name]);
    assert!(o.status.success(), "{}", text(&o));
    let o = finish(&mut p, 400);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(3), "{all}");
    assert!(all.contains(&format!("node {lost} is lost")), "{all}");
    assert!(all.contains("its pairs not measured"), "{all}");
    assert!(
        all.contains("deleted the"),
        "what it applied is deleted: {all}"
    );
    let doc = read_doc(&out).unwrap();
    let done = cases(&doc);
    assert_eq!(
        done.len(),
        4,
        "the other pair, 2 workloads x 2 repeats: {done:?}\n{all}"
    );
    assert!(done.keys().all(|k| !k.contains(lost.as_str())), "{done:?}");
    assert_eq!(errors(&doc).len(), 8, "{all}");
    let o = common::cluster::cs(&["node-up", &(i + 1).to_string(), "--name", &c.name]);
    assert!(o.status.success(), "{}", text(&o));
    common::cluster::wait_for(&format!("namespace {ns} to go"), 180, || {
        (c.api("GET", &format!("/api/v1/namespaces/{ns}"), None)["code"] == 404).then_some(())
    });
}

/// `k8s run` on the pod network, 3 node pairs x stream and rr x 2
/// repeats (12 tests of 1 s), in namespace `ns`, writing `out`, with `extra`.
fn run_cmd(
    c: &Cluster,
    key: &str,
    ns: &str,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Command {
    run_cmd_for(c, key, ns, out, "1s", extra)
}

/// [`run_cmd`] with tests of `secs`.
fn run_cmd_for(
    c: &Cluster,
    key: &str,
    ns: &str,
    out: &std::path::Path,
    secs: &str,
    extra: &[&str],
) -> std::process::Command {
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", c.get("RUNNER_NETNS"), common::bin()])
        .args([
            "k8s",
            "run",
            "--image",
            c.get("IMAGE"),
            "-d",
            secs,
            "--warmup",
            "0",
        ])
        .args([
            "--key-file",
            key,
            "--network",
            "pod",
            "--workloads",
            "stream,rr",
        ])
        // Faults are the subject: a figure contended by the API server's
        // restart on these two shared cores is marked, not a failure.
        .args([
            "--allow-contended",
            "--repeats",
            "2",
            "--namespace",
            ns,
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .args(["--kubeconfig", c.get("RUNNER_KUBECONFIG")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// A run SIGKILLed once its --out holds `at` tests, then `--resume`d:
/// the killed run's file is partial and holds those tests; the resumed
/// run measures only the rest, and ends with the whole set, each test
/// once, the killed run's taken as they were.
fn killed_then_resumed(
    c: &Cluster,
    s: &common::cluster::Scratch,
    all: &std::collections::BTreeSet<String>,
    at: usize,
) {
    let out = std::path::PathBuf::from(s.file(&format!("killed-{at}.json")));
    let ns = format!("{}-k{at}", c.name);
    let mut child = common::Proc(run_cmd(c, &s.file("key"), &ns, &out, &[]).spawn().unwrap());
    let partial = wait_cases(&mut child, &out, at);
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // What the killed run left: `k8s cleanup` leaves it while its Lease
    // is fresh (the run might be alive), and deletes it when forced.
    let (o, _) = c.runner(&["k8s", "cleanup", "--namespace", &ns]);
    assert!(!o.status.success(), "a fresh Lease: {}", text(&o));
    assert!(text(&o).contains("renewed its Lease"), "{}", text(&o));
    forced_cleanup(c, &ns);
    let gone = c.api("GET", &format!("/api/v1/namespaces/{ns}"), None);
    assert!(
        gone["code"] == 404 || !gone["metadata"]["deletionTimestamp"].is_null(),
        "{gone}"
    );
    let killed = cases(&read_doc(&out).unwrap());
    assert_eq!(
        read_doc(&out).unwrap()["partial"],
        true,
        "a killed run's file says it is partial"
    );
    assert!(
        killed.len() >= at && killed.len() < all.len(),
        "{} tests at the kill",
        killed.len()
    );
    drop(partial);
    let r = run_cmd(
        c,
        &s.file("key"),
        &format!("{ns}-r"),
        &out,
        &["--resume", out.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(r.status.success(), "the resumed run: {}", text(&r));
    let doc = read_doc(&out).unwrap();
    assert_eq!(doc["partial"], false);
    let whole = cases(&doc);
    let keys: std::collections::BTreeSet<String> = whole.keys().cloned().collect();
    assert_eq!(&keys, all, "the resumed run's cases");
    for (k, v) in &killed {
        assert_eq!(
            whole.get(k),
            Some(v),
            "{k}: taken from the killed run, not measured again"
        );
    }
    println!(
        "killed at {} of {} tests; the resumed run measured {}",
        killed.len(),
        all.len(),
        all.len() - killed.len()
    );
}

/// Results survive a killed run (issue 44, item 2): `--out` is rewritten
/// as each test lands, so a run SIGKILLed at any point leaves every
/// finished test; `--resume` measures only what is missing. Three kill
/// points (after 1, 6 and 11 of 12 tests) against one uninterrupted run.
/// Then the faults of item 3, in order, on the same cluster: a dead run's
/// Lease taken over, an agent pod deleted mid-test, the API server
/// restarted mid-run, and last a node lost.
#[test]
fn killed_runs_resume_and_runs_ride_out_faults() {
    if !can_run("killed_runs_resume_and_runs_ride_out_faults") {
        return;
    }
    let _h = heavy();
    let name = unique("wsr");
    {
        let c = Cluster::up(&name, &["--nodes", "3"]);
        check_nodes(&c, 3);
        let s =
            common::cluster::Scratch::with_key(&format!("{name}-scratch"), "k8s-resume-test-key");
        let out = std::path::PathBuf::from(s.file("whole.json"));
        let r = run_cmd(&c, &s.file("key"), &format!("{name}-whole"), &out, &[])
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", text(&r));
        let doc = read_doc(&out).unwrap();
        assert_eq!(doc["partial"], false);
        let all: std::collections::BTreeSet<String> = cases(&doc).keys().cloned().collect();
        assert_eq!(all.len(), 12, "3 pairs x 2 workloads x 2 repeats: {all:?}");
        for at in [1, 6, 11] {
            killed_then_resumed(&c, &s, &all, at);
        }
        dead_runs_lease_taken_over(&c, &s, &all);
        agent_pod_deleted_mid_test(&c, &s, &all);
        api_server_restarted_mid_run(&c, &s, &all);
        api_server_out_past_the_bound(&c, &s);
        node_lost_mid_run(&c, &s);
        let (o, _) = c.runner(&["k8s", "cleanup"]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("nothing to clean up"), "{}", text(&o));
    }
    nothing_left(&name);
}
