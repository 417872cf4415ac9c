//! `wirespeed k8s run` under a production cluster's rules, on a real
//! two-node cluster (k8s/testenv/cluster.sh, kubelets allowing one unsafe
//! sysctl): a namespace the admin made with Pod Security `restricted`
//! enforced runs pod-network agents with no privileged container and
//! only the sysctls that namespace, the kernel and the kubelet admit,
//! read back from inside the pods; host mode is refused there; a second
//! run in the same namespace is refused by the first one's Lease without
//! touching its objects; a namespace wirespeed makes with
//! --privileged-namespace admits the kubelet-allowed unsafe sysctl.

use crate::common;

use common::cluster::{Cluster, can_run, check_nodes, nothing_left, text, unique, wait_for};
use common::{Proc, bin, heavy};
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A profile with a safe sysctl, an unsafe one the test kubelets allow,
/// an unsafe one they do not, and a host-wide one.
const PROFILE: &str = r#"description = "k8s_security test profile"
[sysctl]
"net.ipv4.tcp_rmem" = "4096 131072 7340032"
"net.ipv4.tcp_slow_start_after_idle" = "0"
"net.ipv4.tcp_no_metrics_save" = "1"
"net.core.rmem_max" = "8388608"
"#;

/// The one unsafe sysctl the test cluster's kubelets allow.
const ALLOWED: &str = "net.ipv4.tcp_slow_start_after_idle";

/// `k8s run` in the runner namespace, started in the background.
fn spawn_run(c: &Cluster, args: &[&str]) -> Proc {
    let child = Command::new("ip")
        .args(["netns", "exec", c.get("RUNNER_NETNS"), bin()])
        .args(["k8s", "run", "--image", c.get("IMAGE")])
        .args(args)
        .args(["--kubeconfig", c.get("RUNNER_KUBECONFIG")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start k8s run");
    Proc(child)
}

/// Waits for `p` to exit (its pipes drained as it runs) and returns
/// what it wrote.
fn finish(mut p: Proc) -> std::process::Output {
    use std::io::Read;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        p.0.stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        p.0.stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let status = p.0.wait().expect("wait for k8s run");
    std::process::Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// The agents' DaemonSets in `ns`: (name, uid, generation).
fn daemonsets(c: &Cluster, ns: &str) -> Vec<(String, String, i64)> {
    let l = c.api(
        "GET",
        &format!("/apis/apps/v1/namespaces/{ns}/daemonsets"),
        None,
    );
    l["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["metadata"]["name"].as_str().unwrap_or("").to_string(),
                d["metadata"]["uid"].as_str().unwrap_or("").to_string(),
                d["metadata"]["generation"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

fn agent_pods(c: &Cluster, ns: &str) -> Vec<Value> {
    let l = c.api(
        "GET",
        &format!(
            "/api/v1/namespaces/{ns}/pods?labelSelector=app.kubernetes.io%2Fname%3Dwirespeed-agent"
        ),
        None,
    );
    l["items"].as_array().cloned().unwrap_or_default()
}

/// `k8s run --image IMAGE --namespace NS ARGS` in the runner namespace.
fn run_in(c: &Cluster, ns: &str, args: &[&str]) -> (std::process::Output, Duration) {
    let mut all = vec!["k8s", "run", "--image", c.get("IMAGE"), "--namespace", ns];
    all.extend_from_slice(args);
    c.runner(&all)
}

/// No container of `pod` is privileged or may escalate; returns the
/// pod's sysctls (name -> value).
fn unprivileged_sysctls(pod: &Value) -> Vec<(String, String)> {
    let spec = &pod["spec"];
    for list in ["containers", "initContainers"] {
        for ctr in spec[list].as_array().into_iter().flatten() {
            let sc = &ctr["securityContext"];
            assert_ne!(sc["privileged"], true, "privileged container: {ctr}");
            assert_eq!(sc["allowPrivilegeEscalation"], false, "{ctr}");
        }
    }
    assert_ne!(spec["hostNetwork"], true, "{spec}");
    spec["securityContext"]["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `curl` to pod `pod`'s port 5380 through the API server's pod proxy as
/// the admin, who holds no fleet key (the NetworkPolicy admits the API
/// server; on an enforcing cluster nothing outside the run reaches the
/// port directly, k8s_fixtures proves that): (HTTP status, body).
fn curl_via_api(c: &Cluster, ns: &str, pod: &str, method: &str, path: &str) -> (String, String) {
    let url = format!(
        "{}/api/v1/namespaces/{ns}/pods/{pod}:5380/proxy{path}",
        c.get("SERVER")
    );
    let out = Command::new("curl")
        .args(["-s", "--noproxy", "*", "--cacert", c.get("CA"), "-H"])
        .arg(format!("Authorization: Bearer {}", c.get("TOKEN")))
        .args(["-m", "5", "-X", method, "-w", "\n%{http_code}", &url])
        .output()
        .expect("curl");
    let t = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = t.rsplit_once('\n').unwrap_or(("", &t));
    (code.to_string(), body.to_string())
}

/// From outside the run: through the API server's pod proxy (which the
/// NetworkPolicy admits) every agent endpoint but /healthz answers 401
/// to a caller without the key and tells nothing of the host; from a
/// node the data ports refuse connections (the agent's, or the policy's
/// REJECT where it is enforced); the NetworkPolicy is in place with the
/// agents' ports. This checks the agent's own lock and the object;
/// k8s_fixtures proves enforcement.
fn locked_from_outside(c: &Cluster, ns: &str, pods: &[Value]) {
    let kernel = String::from_utf8_lossy(&Command::new("uname").arg("-r").output().unwrap().stdout)
        .trim()
        .to_string();
    for p in pods {
        let ip = p["status"]["podIP"].as_str().expect("pod IP");
        let pod = p["metadata"]["name"].as_str().expect("pod name");
        assert_eq!(curl_via_api(c, ns, pod, "GET", "/healthz").0, "200");
        for (m, path) in [
            ("GET", "/metrics"),
            ("GET", "/v1/facts"),
            ("GET", "/v1/results"),
            ("POST", "/v1/run"),
            ("POST", "/v1/probe"),
            ("PUT", "/v1/fleet"),
        ] {
            let (code, body) = curl_via_api(c, ns, pod, m, path);
            assert_eq!(code, "401", "{m} {path}: {body}");
            assert!(!body.contains(&kernel) && !body.contains("eth0"), "{body}");
        }
        // The top of the range: run A's one test at a time takes the bottom.
        let connect = format!("exec 3<>/dev/tcp/{ip}/5316");
        let data = c.on_node(1, &["timeout", "5", "bash", "-c", &connect]);
        assert!(
            !data.status.success(),
            "data port 5316 of {ip} accepted a connection"
        );
    }
    let np = c.api(
        "GET",
        &format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/wirespeed-agents"),
        None,
    );
    let rule = &np["spec"]["ingress"][0];
    assert_eq!(rule["from"][0]["podSelector"], json!({}), "{np}");
    let ports: Vec<(i64, i64)> = rule["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| {
            (
                p["port"].as_i64().unwrap(),
                p["endPort"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(ports, [(5300, 0), (5301, 5316)], "{np}");
    // The HTTP port from the namespace's pods that are not agents, and
    // from the API server.
    let http = &np["spec"]["ingress"][1];
    assert_eq!(http["ports"][0]["port"], 5380, "{np}");
    let not_agents = &http["from"][0]["podSelector"]["matchExpressions"][0];
    assert_eq!(not_agents["operator"], "NotIn", "{np}");
    assert!(http["from"][1]["ipBlock"]["cidr"].is_string(), "{np}");
}

/// The admin's namespace, `restricted` enforced: the run uses it as it is.
fn restricted_namespace(c: &Cluster, ns: &str) {
    let body = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": ns, "labels": {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/enforce-version": "latest"}}
    });
    let r = c.api(
        "POST",
        "/api/v1/namespaces",
        Some(("application/json", &body)),
    );
    assert_eq!(r["metadata"]["name"], ns, "{r}");
}

/// Pod mode under `restricted`, a concurrent run refused, host mode
/// refused, the sysctls planned, set and read back.
fn restricted_run(c: &Cluster, dir: &std::path::Path, profile: &str) {
    let ns = format!("{}-sec", c.name);
    restricted_namespace(c, &ns);
    let out = dir.join("a.json");
    let a = spawn_run(
        c,
        &[
            "--namespace",
            &ns,
            "--network",
            "pod",
            "--profile",
            profile,
            "--workloads",
            "stream",
            "-d",
            "4s",
            "--warmup",
            "0",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let lease = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/wirespeed-run");
    wait_for("run A's Lease", 90, || {
        (c.api("GET", &lease, None)["spec"]["holderIdentity"].is_string()).then_some(())
    });
    let pods = wait_for("run A's two agent pods Ready", 120, || {
        let p = agent_pods(c, &ns);
        let ready = |p: &Value| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        };
        (p.len() == 2 && p.iter().all(ready)).then_some(p)
    });
    for p in &pods {
        let sysctls = unprivileged_sysctls(p);
        assert_eq!(
            sysctls,
            [(
                "net.ipv4.tcp_rmem".to_string(),
                "4096 131072 7340032".to_string()
            )],
            "restricted admits only the safe sysctl"
        );
    }
    locked_from_outside(c, &ns, &pods);
    let before = daemonsets(c, &ns);
    assert!(!before.is_empty());
    // A second run in the same namespace: refused by the Lease, touching nothing.
    let (b, took) = run_in(c, &ns, &["--network", "pod", "-d", "1s"]);
    let bt = text(&b);
    assert!(!b.status.success(), "{bt}");
    // The advice: "wait for it to end" is followed below (the host-mode
    // run in this namespace once run A ended).
    assert!(
        bt.contains("is in use by run")
            && bt.contains("wait for it to end, or give this run another --namespace"),
        "{bt}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(daemonsets(c, &ns), before, "run B changed run A's objects");
    // Host mode in a namespace wirespeed did not make and that is not
    // privileged: refused with or without the flag, with the same advice
    // (the flag only labels a namespace wirespeed makes, so it is not
    // offered for this one).
    for extra in [&[][..], &["--privileged-namespace"][..]] {
        let mut args = vec!["--network", "host", "-d", "1s"];
        args.extend_from_slice(extra);
        let (h, _) = run_in(c, &ns, &args);
        let ht = text(&h);
        assert!(!h.status.success(), "{ht}");
        assert!(
            ht.contains(&format!("label it (kubectl label namespace {ns} pod-security.kubernetes.io/enforce=privileged)"))
                && ht.contains("or give the run a new --namespace with --privileged-namespace"),
            "{ht}"
        );
        assert!(!ht.contains("Pass --privileged-namespace"), "{ht}");
    }
    let a = finish(a);
    let at = text(&a);
    assert!(a.status.success(), "run A: {at}");
    for want in [
        "net.core.rmem_max=8388608: not set",
        "host-wide",
        "Pod Security `restricted`",
    ] {
        assert!(at.contains(want), "{want:?} missing: {at}");
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let pods = v["sysctls"]["in_force"].as_array().expect("in_force");
    assert_eq!(pods.len(), 2, "{v}");
    for p in pods {
        let got = p["values"]["net.ipv4.tcp_rmem"].as_str().unwrap_or("");
        assert_eq!(
            got.split_whitespace().collect::<Vec<_>>(),
            ["4096", "131072", "7340032"],
            "{p}"
        );
    }
    // The namespace is the admin's: kept; the run's objects and lock are gone.
    let nsv = c.api("GET", &format!("/api/v1/namespaces/{ns}"), None);
    assert_eq!(nsv["status"]["phase"], "Active", "{nsv}");
    assert!(daemonsets(c, &ns).is_empty());
    assert_eq!(c.api("GET", &lease, None)["code"], 404);
    // The first advice, followed: labelled privileged, the same host-mode
    // run measures (the second, a new --namespace with
    // --privileged-namespace, is what `privileged_run` does).
    let patch =
        json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged"}}});
    let r = c.api(
        "PATCH",
        &format!("/api/v1/namespaces/{ns}"),
        Some(("application/merge-patch+json", &patch)),
    );
    assert_eq!(
        r["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "privileged",
        "{r}"
    );
    // Kept: in a namespace the run did not make, --keep's advice is
    // `k8s cleanup`, not deleting the namespace; followed, the run's
    // objects go and the namespace stays.
    let (h, _) = run_in(
        c,
        &ns,
        &["--network", "host", "-d", "1s", "--warmup", "0", "--keep"],
    );
    let ht = text(&h);
    assert!(h.status.success(), "the advice followed: {ht}");
    let advice = format!("delete them with `wirespeed k8s cleanup --namespace {ns} --force`");
    assert!(ht.contains(&advice), "{ht}");
    assert!(!daemonsets(c, &ns).is_empty());
    let (cl, _) = c.runner(&["k8s", "cleanup", "--namespace", &ns, "--force"]);
    assert!(cl.status.success(), "{}", text(&cl));
    assert!(daemonsets(c, &ns).is_empty(), "{}", text(&cl));
    let nsv = c.api("GET", &format!("/api/v1/namespaces/{ns}"), None);
    assert_eq!(nsv["status"]["phase"], "Active", "{nsv}");
}

/// A namespace wirespeed makes, `privileged` on request: the unsafe
/// sysctl the kubelets allow is set and in force; the one they do not
/// allow is left out, naming the kubelet flag.
fn privileged_run(c: &Cluster, dir: &std::path::Path, profile: &str) {
    let out = dir.join("b.json");
    let ns = format!("{}-priv", c.name);
    let (r, _) = run_in(
        c,
        &ns,
        &[
            "--network",
            "pod",
            "--privileged-namespace",
            "--profile",
            profile,
            "--workloads",
            "stream",
            "-d",
            "1s",
            "--warmup",
            "0",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let t = text(&r);
    assert!(r.status.success(), "{t}");
    assert!(
        t.contains("net.ipv4.tcp_no_metrics_save=1: not set")
            && t.contains("--allowed-unsafe-sysctls=net.ipv4.tcp_no_metrics_save"),
        "{t}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let plan = &v["sysctls"]["plan"];
    assert_eq!(plan["unsafe_allowed"], json!([ALLOWED]), "{plan}");
    for p in v["sysctls"]["in_force"].as_array().expect("in_force") {
        assert_eq!(p["values"][ALLOWED], "0", "{p}");
    }
}

#[test]
fn pod_security_sysctls_and_the_run_lock_on_a_real_cluster() {
    if !can_run("pod_security_sysctls_and_the_run_lock_on_a_real_cluster") {
        return;
    }
    let _h = heavy();
    let name = unique("wss");
    let dir = std::env::temp_dir().join(format!("{name}-security"));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = dir.join("profile.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    {
        let c = Cluster::up(&name, &["--nodes", "2", "--unsafe-sysctls", ALLOWED]);
        check_nodes(&c, 2);
        restricted_run(&c, &dir, profile.to_str().unwrap());
        privileged_run(&c, &dir, profile.to_str().unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
    nothing_left(&name);
}
