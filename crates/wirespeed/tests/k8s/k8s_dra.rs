//! `wirespeed k8s run --network dra` on a real two-node cluster
//! (k8s/testenv/cluster.sh --dra-nics 1): the test DRA driver of
//! k8s/testenv/dradriver publishes each node's extra veth `dra0` under
//! DraNet's driver name and attributes, the real scheduler allocates the
//! run's claims, the real kubelets have the driver prepare them, the
//! driver moves each NIC into its pod, and the agents test over it. A
//! profile whose private flag the NICs lack is refused before anything is
//! applied. What is a stand-in: the driver (not DraNet, which cannot be
//! built here) and the NICs (veths on a bridge).

use crate::common;

use common::cluster::{Cluster, Scratch, can_run, check_nodes, nothing_left, text, unique};
use common::heavy;
use serde_json::Value;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `k8s run --network dra` from the runner namespace with the flags
/// every run here shares, plus `args`.
fn run(c: &Cluster, key: &str, args: &[&str]) -> Output {
    let mut all = vec!["--network", "dra", "--ready-timeout", "120s"];
    all.extend_from_slice(args);
    c.k8s_run(key, &all)
}

/// Polls `f` every 250 ms until it holds, at most `limit`.
fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The status code of a GET (404 when absent).
fn code(c: &Cluster, path: &str) -> i64 {
    let v = c.api("GET", path, None);
    if v["kind"] == "Status" {
        v["code"].as_i64().unwrap_or(0)
    } else {
        200
    }
}

fn driver_logs(c: &Cluster) -> String {
    c.get("DRA_LOGS")
        .split_whitespace()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect()
}

/// Bytes through the root-namespace end of node `i`'s `dra0`.
fn dra_bytes(c: &Cluster, i: usize) -> u64 {
    let dir = format!("/sys/class/net/{}n{i}d0/statistics", c.name);
    ["rx_bytes", "tx_bytes"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(format!("{dir}/{f}"))
                .unwrap_or_else(|e| panic!("{dir}/{f}: {e}"))
                .trim()
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

/// tpu-multinic's gVNIC private flag on the veths: refused by name
/// before anything is applied (no namespace, no shared DeviceClass, no
/// DaemonSet, no claim template).
fn unsupported_flag_refused(c: &Cluster, key: &str, nodes: &[String]) {
    let ns = "wsdra-refused";
    let t = Instant::now();
    let out = run(
        c,
        key,
        &[
            "--profile",
            "tpu-multinic",
            "--ifname-prefix",
            "dra",
            "--namespace",
            ns,
        ],
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(t.elapsed() < Duration::from_secs(30), "{all}");
    for n in nodes {
        assert!(
            all.contains(&format!(
                "private flag enable-max-rx-buffer-size on device dra0 on node {n}"
            )),
            "{all}"
        );
    }
    assert!(all.contains("dra.net/virtual=true, type veth"), "{all}");
    assert!(all.contains("Nothing was applied"), "{all}");
    assert_eq!(code(c, &format!("/api/v1/namespaces/{ns}")), 404, "{all}");
    assert_eq!(
        code(c, "/apis/resource.k8s.io/v1/deviceclasses/wirespeed-dranet"),
        404,
        "the shared DeviceClass is made only by a run that applies"
    );
    let mine = "labelSelector=app.kubernetes.io/managed-by%3Dwirespeed";
    for path in [
        format!("/apis/apps/v1/daemonsets?{mine}"),
        format!("/apis/resource.k8s.io/v1/resourceclaimtemplates?{mine}"),
    ] {
        let l = c.api("GET", &path, None);
        assert_eq!(l["items"].as_array().map(Vec::len), Some(0), "{path}: {l}");
    }
}

/// The default selector asks for physical NICs and the nodes publish
/// only virtual ones: refused in under 5 s, before anything is applied,
/// naming each device the nodes publish and the flag that selects them
/// (`--ifname-prefix dra0`, which [`measured_over_the_claimed_nic`] then
/// passes, and it works).
fn only_virtual_nics_refused_at_once(c: &Cluster, key: &str, nodes: &[String]) {
    let ns = "wsdra-virtual";
    let t = Instant::now();
    let out = run(c, key, &["--namespace", ns]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "{:?}: {all}",
        t.elapsed()
    );
    assert!(all.contains("matches the default selector"), "{all}");
    for n in nodes {
        assert!(
            all.contains(&format!(
                "device dra0 on node {n} (ifName dra0, virtual, type veth)"
            )),
            "{all}"
        );
    }
    assert!(
        all.contains("select them with --ifname-prefix dra0 "),
        "{all}"
    );
    assert_eq!(code(c, &format!("/api/v1/namespaces/{ns}")), 404, "{all}");
}

/// A DeviceClass the cluster does not have: refused before anything is
/// applied, saying to leave the flag out, which the next run does.
fn unknown_device_class_refused(c: &Cluster, key: &str) {
    let ns = "wsdra-class";
    let out = run(
        c,
        key,
        &[
            "--device-class",
            "wsdra-no-such-class",
            "--ifname-prefix",
            "dra0",
            "--namespace",
            ns,
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("--device-class wsdra-no-such-class: no such DeviceClass in the cluster (leave the flag out"),
        "{all}"
    );
    assert_eq!(code(c, &format!("/api/v1/namespaces/{ns}")), 404, "{all}");
}

/// A run over the claimed NICs, kept so the claims can be read: the
/// scheduler's allocation, the driver's prepare, results over dra0 (its
/// bytes counted on the bridge side); then the namespace is deleted and
/// the driver unprepares and gives each NIC back to its node.
fn measured_over_the_claimed_nic(c: &Cluster, key: &str, nodes: &[String], out_json: &str) {
    let ns = "wsdra-run";
    let before: u64 = (1..=nodes.len()).map(|i| dra_bytes(c, i)).sum();
    let out = run(
        c,
        key,
        &[
            "--ifname-prefix",
            "dra0",
            "--namespace",
            ns,
            "--keep",
            "--out",
            out_json,
        ],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("dra: 2 device(s) match the selector")
            && all.contains("dra: created the shared DeviceClass wirespeed-dranet"),
        "{all}"
    );
    let net = c
        .get("DRA_NIC_NETS")
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(".0/24")
        .to_string();

    // The agents' NICs are the claimed dra0s, and every test ran over them.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(out_json).unwrap()).unwrap();
    let r = &doc["runs"][0];
    assert_eq!(r["path"], "dra", "{doc}");
    let agents = r["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2, "{doc}");
    for a in agents {
        let nic = &a["nics"][0];
        assert_eq!(nic["name"], "dra0", "{a}");
        assert!(
            nic["addr"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{net}.")),
            "{a}"
        );
    }
    let tests = r["results"]["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 1, "all-to-all of two agents: one pair: {doc}");
    for t in tests {
        assert!(t["error"].is_null(), "{t}");
        assert!(t["throughput_bps"].as_f64().unwrap() > 1e6, "{t}");
        assert_eq!(t["server_nic"], "dra0", "{t}");
    }
    let after: u64 = (1..=nodes.len()).map(|i| dra_bytes(c, i)).sum();
    assert!(
        after - before > 1_000_000,
        "the tests' bytes went over dra0: {before} -> {after}"
    );

    // The claims: allocated by the scheduler (a node selector on the
    // node it chose), reserved for their pods, prepared by the driver on
    // that node, the NIC's network data written by the driver.
    let claims = c.api(
        "GET",
        &format!("/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"),
        None,
    );
    let items = claims["items"].as_array().expect("claims");
    assert_eq!(items.len(), 2, "{claims}");
    let logs = driver_logs(c);
    let mut pools = Vec::new();
    for cl in items {
        let name = cl["metadata"]["name"].as_str().unwrap();
        let st = &cl["status"];
        let res = &st["allocation"]["devices"]["results"][0];
        assert_eq!(res["driver"], "dra.net", "{cl}");
        assert_eq!(res["device"], "dra0", "{cl}");
        let pool = res["pool"].as_str().unwrap().to_string();
        assert_eq!(
            st["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            pool.as_str(),
            "{cl}"
        );
        assert_eq!(st["reservedFor"][0]["resource"], "pods", "{cl}");
        assert_eq!(st["devices"][0]["networkData"]["interfaceName"], "dra0");
        assert!(
            logs.contains(&format!("prepare claim {ns}/{name} device dra0")),
            "{logs}"
        );
        assert!(
            logs.contains(&format!("placed claim {ns}/{name} device dra0")),
            "{logs}"
        );
        pools.push(pool);
    }
    pools.sort();
    assert_eq!(pools, nodes, "one claim per node");

    // Gone with the namespace: the kubelets unprepare, the driver gives
    // the NICs back to the nodes; the shared DeviceClass stays.
    let d = c.api("DELETE", &format!("/api/v1/namespaces/{ns}"), None);
    assert_eq!(d["metadata"]["name"], ns, "{d}");
    wait_until(
        "the run's namespace to go",
        Duration::from_secs(180),
        || code(c, &format!("/api/v1/namespaces/{ns}")) == 404,
    );
    wait_until("the driver's unprepares", Duration::from_secs(60), || {
        driver_logs(c)
            .matches(&format!("unprepare claim {ns}/"))
            .count()
            == 2
    });
    for (i, n) in nodes.iter().enumerate() {
        let ip = Command::new("ip")
            .args(["-n", n, "-4", "-o", "addr", "show", "dev", "dra0"])
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&ip.stdout);
        assert!(s.contains(&format!("{net}.{}/24", 11 + i)), "{n}: {s}");
    }
    let class = c.api(
        "GET",
        "/apis/resource.k8s.io/v1/deviceclasses/wirespeed-dranet",
        None,
    );
    assert_eq!(class["metadata"]["name"], "wirespeed-dranet", "{class}");
    assert!(
        class["metadata"]["labels"]["wirespeed.dev/run"].is_null(),
        "{class}"
    );
}

#[test]
fn dra_claims_are_allocated_prepared_placed_and_measured_on_a_real_cluster() {
    if !can_run("dra_claims_are_allocated_prepared_placed_and_measured_on_a_real_cluster") {
        return;
    }
    let _h = heavy();
    let name = unique("wsd");
    let s = Scratch::with_key(
        &format!("{name}-dra"),
        "3e1f0a5c9e3b4d2a8f6e1c0b9a7d5e3f2c4b6a8d0e1f3a5c7e9b2d4f6a8c0e2",
    );
    let key = s.key();
    let out_json = s.file("out.json");
    {
        let t = Instant::now();
        let c = Cluster::up(&name, &["--nodes", "2", "--dra-nics", "1"]);
        eprintln!("cluster {name} up with DRA NICs in {:?}", t.elapsed());
        check_nodes(&c, 2);
        let nodes = c.nodes();
        let t = Instant::now();
        unsupported_flag_refused(&c, &key, &nodes);
        only_virtual_nics_refused_at_once(&c, &key, &nodes);
        unknown_device_class_refused(&c, &key);
        eprintln!("refused before apply in {:?}", t.elapsed());
        let t = Instant::now();
        measured_over_the_claimed_nic(&c, &key, &nodes, &out_json);
        eprintln!("measured over the claimed NICs in {:?}", t.elapsed());
    }
    nothing_left(&name);
}
