//! Installing wirespeed the way Kubernetes and Prometheus users do, on a
//! real three-node cluster of the newest fixture (issue 45): the Prometheus
//! Operator's CRDs are installed, then `helm install` of charts/wirespeed
//! (helm built from its module) with its ServiceMonitor, PodMonitor and
//! PrometheusRule gives a watching fleet whose state
//! `kubectl wirespeed watch status` prints through a real kubectl;
//! Debian's Prometheus scrapes the watcher with the ServiceMonitor's
//! equivalent config and the contrib rules, a planted slowdown (a tbf
//! cap on a node's link) fires WirespeedDrift, and every query of the
//! Grafana dashboard returns data; `helm upgrade` to a new image tag
//! rolls the agents and the watcher and keeps the history and the key;
//! `helm uninstall` leaves nothing in the namespace.

use crate::common;

use common::cluster::{
    Cluster, Scratch, can_run, check_nodes, nothing_left, probe_times, recent_rows, text, unique,
    wait_for,
};
use common::heavy;
use common::install::{chart, crd, have_tools, kubectl, tool};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::Instant;

/// A command in the runner's namespace (it reaches the API server only).
fn in_runner(c: &Cluster, prog: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("ip")
        .args(["netns", "exec", c.get("RUNNER_NETNS")])
        .arg(prog)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", prog.display()))
}

/// `helm ARGS --kubeconfig RUNNER` in the runner's namespace.
fn helm(c: &Cluster, args: &[&str]) -> Output {
    let mut a = args.to_vec();
    a.extend(["--kubeconfig", c.get("RUNNER_KUBECONFIG")]);
    in_runner(c, &tool("helm"), &a, &[])
}

/// `kubectl ARGS` in the runner's namespace, with `plugins` first on
/// PATH (where `kubectl-wirespeed` is).
fn kubectl_in(c: &Cluster, plugins: &std::path::Path, args: &[&str]) -> Output {
    let path = format!(
        "{}:{}",
        plugins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut a = args.to_vec();
    a.extend(["--kubeconfig", c.get("RUNNER_KUBECONFIG")]);
    in_runner(c, &kubectl(), &a, &[("PATH", &path)])
}

/// The Prometheus Operator's CRDs, established.
fn install_crds(c: &Cluster, s: &Scratch) {
    for plural in ["servicemonitors", "podmonitors", "prometheusrules"] {
        let f = crd(plural);
        let o = kubectl_in(c, &s.0, &["create", "-f", f.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        let o = kubectl_in(
            c,
            &s.0,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                &format!("crd/{plural}.monitoring.coreos.com"),
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
}

/// The values the test installs with: a fast schedule, the history on a
/// volume, the monitoring objects.
const VALUES: &str = "network: pod
watch:
  rediscover: 3s
  probePeriod: 5s
  bandwidthDuration: 1s
  linkRate: 1gbit
  budget: \"10\"
  history:
    persistence: {enabled: true, size: 1Gi, storageClassName: \"\"}
serviceMonitor: {enabled: true, interval: 5s}
podMonitor: {enabled: true, interval: 5s}
prometheusRule: {enabled: true}
";

/// `kubectl wirespeed watch status -n NS --json F`: the state, once it
/// succeeds.
fn status(c: &Cluster, s: &Scratch, ns: &str) -> Result<Value, String> {
    let jf = s.file("state.json");
    let o = kubectl_in(
        c,
        &s.0,
        &["wirespeed", "watch", "status", "-n", ns, "--json", &jf],
    );
    if !o.status.success() {
        return Err(format!("kubectl wirespeed watch status: {}", text(&o)));
    }
    let bytes = std::fs::read(&jf).map_err(|e| format!("{jf}: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{jf}: {e}"))
}

/// The watch state once its measured probes per pair satisfy `done`,
/// waiting at most 120 s; on timeout the panic shows the last `recent`
/// rows, every pod and its log.
fn probed(
    c: &Cluster,
    s: &Scratch,
    ns: &str,
    what: &str,
    done: impl Fn(&BTreeMap<(String, String), Vec<f64>>) -> bool,
) -> Value {
    c.wait_explained(ns, what, 120, || {
        let st = status(c, s, ns)?;
        if done(&probe_times(&st)) {
            return Ok(st);
        }
        Err(recent_rows(&st))
    })
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Debian's Prometheus in the first node's namespace (it reaches the API
/// server and the pods), killed on drop.
struct Prometheus {
    child: Child,
    netns: String,
    port: u16,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// GET `path` of its HTTP API, as JSON.
    fn get(&self, path: &str) -> Option<Value> {
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.netns,
                "curl",
                "-sf",
                "--max-time",
                "10",
                "-G",
            ])
            .arg(format!("http://127.0.0.1:{}{}", self.port, path))
            .output()
            .ok()?;
        serde_json::from_slice(&o.stdout).ok()
    }

    /// An instant query's result vector, or None when Prometheus does
    /// not answer (yet).
    fn try_query(&self, q: &str) -> Option<Vec<Value>> {
        let enc: String = q
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let r = self.get(&format!("/api/v1/query?query={enc}"))?;
        assert_eq!(r["status"], "success", "{q}: {r}");
        Some(r["data"]["result"].as_array().cloned().unwrap_or_default())
    }

    /// Panics with its log when it has exited.
    fn alive(&mut self, log: &str) {
        if let Ok(Some(st)) = self.child.try_wait() {
            panic!(
                "prometheus exited ({st}):\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
    }
}

/// The targets the ServiceMonitor selects, as Prometheus' Kubernetes
/// discovery with the Operator's relabelling finds them: the Services of
/// its namespaces matching its label selector, their EndpointSlices'
/// ready addresses on the port of its endpoint's name; labelled as the
/// Operator labels them. None while there is no ready address.
fn service_monitor_targets(c: &Cluster, sm: &Value) -> Option<Value> {
    let spec = &sm["spec"];
    let port_name = spec["endpoints"][0]["port"].as_str()?;
    let selector: Vec<String> = spec["selector"]["matchLabels"]
        .as_object()?
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    let mut groups = Vec::new();
    for ns in spec["namespaceSelector"]["matchNames"].as_array()? {
        let ns = ns.as_str()?;
        let svcs = c.api(
            "GET",
            &format!(
                "/api/v1/namespaces/{ns}/services?labelSelector={}",
                selector.join(",")
            ),
            None,
        );
        for svc in svcs["items"].as_array()? {
            let name = svc["metadata"]["name"].as_str()?;
            let slices = c.api(
                "GET",
                &format!(
                    "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D{name}"
                ),
                None,
            );
            for sl in slices["items"].as_array()? {
                let Some(port) = sl["ports"]
                    .as_array()?
                    .iter()
                    .find(|p| p["name"] == port_name)
                    .and_then(|p| p["port"].as_u64())
                else {
                    continue;
                };
                for e in sl["endpoints"].as_array().into_iter().flatten() {
                    if e["conditions"]["ready"] != true {
                        continue;
                    }
                    groups.push(json!({
                        "targets": [format!("{}:{port}", e["addresses"][0].as_str()?)],
                        "labels": {"namespace": ns, "service": name, "endpoint": port_name,
                            "pod": e["targetRef"]["name"]}}));
                }
            }
        }
    }
    (!groups.is_empty()).then_some(Value::Array(groups))
}

/// Debian's Prometheus scraping what the ServiceMonitor read back from
/// the API server selects, at its path and interval, with the contrib
/// rules. Debian builds Prometheus without its Kubernetes discovery
/// (`kubernetes_sd_configs` is refused), so the discovery the Operator's
/// generated config would do is [`service_monitor_targets`], handed to
/// Prometheus as a file_sd file.
fn prometheus(c: &Cluster, s: &Scratch, ns: &str) -> Prometheus {
    let sm = c.api(
        "GET",
        &format!("/apis/monitoring.coreos.com/v1/namespaces/{ns}/servicemonitors/wirespeed-watch"),
        None,
    );
    let ep = &sm["spec"]["endpoints"][0];
    let targets = wait_for("the ServiceMonitor's targets", 60, || {
        service_monitor_targets(c, &sm)
    });
    std::fs::write(s.file("targets.json"), targets.to_string()).unwrap();
    let config = json!({
        "global": {"scrape_interval": ep["interval"], "evaluation_interval": "5s"},
        "rule_files": [common::cluster::repo().join("contrib/prometheus/wirespeed-rules.yml")],
        "scrape_configs": [{
            "job_name": format!("serviceMonitor/{ns}/wirespeed-watch/0"),
            "metrics_path": ep["path"],
            "scrape_interval": ep["interval"],
            "file_sd_configs": [{"files": [s.file("targets.json")]}]}]});
    let cfg = s.file("prometheus.yml");
    std::fs::write(&cfg, config.to_string()).unwrap();
    let netns = format!("{}-n1", c.name);
    let port = 19090;
    let log = std::fs::File::create(s.file("prometheus.log")).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &netns, "prometheus"])
        .arg(format!("--config.file={cfg}"))
        .arg(format!("--storage.tsdb.path={}", s.file("tsdb")))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("run prometheus");
    let mut p = Prometheus { child, netns, port };
    let log = s.file("prometheus.log");
    wait_for("Prometheus scraping the watcher", 120, || {
        p.alive(&log);
        let up = p.try_query("up")?;
        let pairs = p.try_query("wirespeed_watch_pairs")?;
        (up.len() == 1 && up[0]["value"][1] == "1" && !pairs.is_empty()).then_some(())
    });
    p
}

/// A 20 Mbit/s cap on the path between nodes `i` and `j` only, both
/// ways: on each node's eth0 an htb whose capped class takes the packets
/// to the other node's address (flannel's VXLAN carries pod traffic
/// there too), everything else in an uncapped default class. Until
/// dropped.
struct PairCap(Vec<String>);

impl PairCap {
    fn on(c: &Cluster, i: usize, j: usize) -> PairCap {
        let ip = |n: usize| -> String {
            let node = c.api("GET", &format!("/api/v1/nodes/{}", c.nodes()[n - 1]), None);
            node["status"]["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["type"] == "InternalIP")
                .and_then(|a| a["address"].as_str())
                .unwrap_or_else(|| panic!("node {n} has no InternalIP: {node}"))
                .to_string()
        };
        let mut netns = Vec::new();
        for (from, to) in [(i, j), (j, i)] {
            let ns = format!("{}-n{from}", c.name);
            let dst = format!("{}/32", ip(to));
            for tc in [
                &[
                    "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "10",
                    "r2q", "100000",
                ][..],
                &[
                    "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb",
                    "rate", "100gbit",
                ],
                &[
                    "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:20", "htb",
                    "rate", "20mbit", "quantum", "1514",
                ],
                &[
                    "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1",
                    "u32", "match", "ip", "dst", &dst, "flowid", "1:20",
                ],
            ] {
                let o = Command::new("ip")
                    .args(["netns", "exec", &ns, "tc"])
                    .args(tc)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "tc {tc:?} in {ns}: {}", text(&o));
            }
            netns.push(ns);
        }
        PairCap(netns)
    }
}

impl Drop for PairCap {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip")
                .args([
                    "netns", "exec", ns, "tc", "qdisc", "del", "dev", "eth0", "root",
                ])
                .output();
        }
    }
}

/// What the watch holds, for a failure's message: its incidents, busy
/// hosts, the series not healthy and its newest tests.
fn watch_dump(c: &Cluster, s: &Scratch, ns: &str) -> String {
    match status(c, s, ns) {
        Ok(st) => format!(
            "incidents: {}\nbusy hosts: {}\nnot healthy: {}\nnewest: {}",
            st["incidents"],
            st["busy_hosts"],
            st["health"],
            serde_json::to_string_pretty(&st["latest"]).unwrap_or_default()
        ),
        Err(e) => e,
    }
}

/// The alert `name` firing in Prometheus, if it is.
fn firing(p: &Prometheus, name: &str) -> Option<Value> {
    let r = p.get("/api/v1/alerts")?;
    r["data"]["alerts"]
        .as_array()?
        .iter()
        .find(|a| a["labels"]["alertname"] == name && a["state"] == "firing")
        .cloned()
}

/// Every query of the dashboard (k8s/testenv/dashcheck lists them),
/// its variables set to what the metrics hold, returns data.
fn dashboard_queries_return_data(p: &Prometheus) {
    let dash = common::cluster::repo().join("contrib/grafana/wirespeed-watch.json");
    let out = Command::new(tool("dashcheck")).arg(&dash).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The pair the variables name: one with a bandwidth test (one per
    // pair every bandwidth_every_s, 38 s here), which the goodput and
    // CPU panels need.
    let series = wait_for("a bandwidth test's series", 120, || {
        let g = p.try_query("wirespeed_watch_goodput_bits_per_second{workload=\"stream\"}")?;
        (!g.is_empty()).then_some(g)
    });
    let m = &series[0]["metric"];
    let (client, server) = (m["client"].as_str().unwrap(), m["server"].as_str().unwrap());
    let mut queries: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The incident annotation shows while one is open: first.
    queries.sort_by_key(|q| q["kind"] != "annotation");
    for q in queries {
        let expr = q["expr"]
            .as_str()
            .unwrap()
            .replace("$probe", "rr")
            .replace("$client", client)
            .replace("$server", server)
            .replace("$__rate_interval", "1m");
        // label_values(METRIC, LABEL) is Grafana's: its series.
        let expr = match expr.strip_prefix("label_values(") {
            Some(rest) => rest.rsplit_once(',').unwrap().0.to_string(),
            None => expr,
        };
        // A probe of that pair in that direction may be a period away.
        wait_for(
            &format!("{}: {expr} returning data", q["where"]),
            60,
            || (!p.try_query(&expr)?.is_empty()).then_some(()),
        );
    }
}

/// What is left in the namespace of the kinds the chart makes.
fn left_in(c: &Cluster, ns: &str) -> Vec<String> {
    let mut left = Vec::new();
    for (path, kind) in [
        ("api/v1", "pods"),
        ("api/v1", "services"),
        ("api/v1", "secrets"),
        ("api/v1", "serviceaccounts"),
        ("api/v1", "persistentvolumeclaims"),
        ("apis/apps/v1", "daemonsets"),
        ("apis/apps/v1", "deployments"),
        ("apis/rbac.authorization.k8s.io/v1", "roles"),
        ("apis/rbac.authorization.k8s.io/v1", "rolebindings"),
        ("apis/networking.k8s.io/v1", "networkpolicies"),
        ("apis/monitoring.coreos.com/v1", "servicemonitors"),
        ("apis/monitoring.coreos.com/v1", "podmonitors"),
        ("apis/monitoring.coreos.com/v1", "prometheusrules"),
    ] {
        let r = c.api("GET", &format!("/{path}/namespaces/{ns}/{kind}"), None);
        for o in r["items"].as_array().into_iter().flatten() {
            let name = o["metadata"]["name"].as_str().unwrap_or("");
            if kind == "serviceaccounts" && name == "default" {
                continue;
            }
            left.push(format!("{kind}/{name}"));
        }
    }
    left
}

#[test]
fn helm_installs_upgrades_and_uninstalls_a_watch_prometheus_scrapes() {
    let test = "helm_installs_upgrades_and_uninstalls_a_watch_prometheus_scrapes";
    if !can_run(test) || !have_tools(test) {
        return;
    }
    let _h = heavy();
    let name = unique("wsi");
    {
        // Before the cluster, so it goes after it: the history volume's
        // directory is in it.
        let s = Scratch::with_key(&format!("{name}-install"), "unused-key-for-scratch");
        let c = Cluster::up(&name, &["--nodes", "3"]);
        check_nodes(&c, 3);
        std::os::unix::fs::symlink(common::bin(), s.0.join("kubectl-wirespeed")).unwrap();
        let ns = format!("{name}-ws");
        install_crds(&c, &s);
        let pv = c.history_volume(&ns, "wirespeed-history", &s.0.join("pv"));
        std::fs::write(s.file("values.yaml"), VALUES).unwrap();
        let chart = chart();
        let chart = chart.to_str().unwrap();
        // 1. helm install.
        let t = Instant::now();
        let o = helm(
            &c,
            &[
                "install",
                "wirespeed",
                chart,
                "-n",
                &ns,
                "--create-namespace",
                "--set",
                &format!("image={}", c.get("IMAGE")),
                "-f",
                &s.file("values.yaml"),
                "--wait",
                "--timeout",
                "5m",
            ],
        );
        assert!(o.status.success(), "helm install: {}", text(&o));
        eprintln!("helm install --wait took {:?}", t.elapsed());
        let st = probed(&c, &s, &ns, "every pair probed after the install", |t| {
            t.len() == 3
        });
        let o = kubectl_in(&c, &s.0, &["wirespeed", "watch", "status", "-n", &ns]);
        assert!(o.status.success(), "{}", text(&o));
        eprintln!("kubectl wirespeed watch status:\n{}", text(&o));
        for n in c.nodes() {
            assert!(text(&o).contains(&n), "{n} in the status");
        }
        assert!(st["recent"].is_array());
        // 2. Prometheus through the ServiceMonitor's config; one node
        // pair's path capped: a pair incident, the contrib alert fires,
        // and both clear once the cap goes.
        let p = prometheus(&c, &s, &ns);
        probed(&c, &s, &ns, "a baseline of 6 probes of every pair", |t| {
            t.values().all(|v| v.len() >= 6)
        });
        let mut pair = [c.nodes()[0].clone(), c.nodes()[1].clone()];
        pair.sort();
        let subject = pair.join(",");
        let cap = PairCap::on(&c, 1, 2);
        let planted = Instant::now();
        let alert = c.wait_explained(&ns, "WirespeedIncident firing", 240, || {
            firing(&p, "WirespeedIncident").ok_or_else(|| watch_dump(&c, &s, &ns))
        });
        eprintln!(
            "WirespeedIncident fired {:?} after the cap: {alert}",
            planted.elapsed()
        );
        assert_eq!(
            (
                &alert["labels"]["scope"],
                alert["labels"]["subject"].as_str()
            ),
            (&Value::from("pair"), Some(subject.as_str())),
            "{alert}"
        );
        let st = status(&c, &s, &ns).unwrap();
        let incidents = st["incidents"].as_array().cloned().unwrap_or_default();
        assert!(
            incidents
                .iter()
                .all(|i| i["scope"] == "pair" && i["subject"] == subject.as_str()),
            "only the capped pair is named: {incidents:?}"
        );
        // The dashboard's queries while the incident is open (its
        // annotation shows open incidents).
        dashboard_queries_return_data(&p);
        drop(cap);
        let cleared = Instant::now();
        wait_for("the incident closed and the alert cleared", 240, || {
            let st = status(&c, &s, &ns).ok()?;
            let open = st["incidents"]
                .as_array()?
                .iter()
                .any(|i| i["closed_unix"].is_null());
            (!open && firing(&p, "WirespeedIncident").is_none()).then_some(())
        });
        eprintln!("cleared {:?} after the cap went", cleared.elapsed());
        drop(p);
        // 3. helm upgrade to a new image tag: everything rolls, the
        // history and the key are kept.
        let key_before = c.api(
            "GET",
            &format!("/api/v1/namespaces/{ns}/secrets/wirespeed-key"),
            None,
        );
        let new_image = c.image_of(common::bin(), "upgraded");
        assert_ne!(new_image, c.get("IMAGE"));
        let t_up = now_unix();
        let o = helm(
            &c,
            &[
                "upgrade",
                "wirespeed",
                chart,
                "-n",
                &ns,
                "--reuse-values",
                "--set",
                &format!("image={new_image}"),
                "--wait",
                "--timeout",
                "5m",
            ],
        );
        assert!(o.status.success(), "helm upgrade: {}", text(&o));
        wait_for("every pod on the new image", 180, || {
            let a = c.agent_images(&ns);
            (a.len() == 3
                && a.values().all(|(i, r)| *i == new_image && *r)
                && c.watcher_rolled_out(&ns)
                && c.watcher_image(&ns).as_deref() == Some(new_image.as_str()))
            .then_some(())
        });
        let st = probed(&c, &s, &ns, "probes after the upgrade", |t| {
            t.len() == 3 && t.values().all(|v| v.iter().any(|&x| x > t_up + 1.0))
        });
        let t = probe_times(&st);
        assert!(
            t.values().all(|v| v.iter().any(|&x| x < t_up)),
            "the probes before the upgrade are kept: {t:?}"
        );
        assert!(
            st["started_unix"].as_f64() > Some(t_up),
            "a new watcher: {st}"
        );
        let key_after = c.api(
            "GET",
            &format!("/api/v1/namespaces/{ns}/secrets/wirespeed-key"),
            None,
        );
        assert_eq!(key_before["data"], key_after["data"], "the key is kept");
        // 4. helm uninstall: nothing left.
        let o = helm(
            &c,
            &[
                "uninstall",
                "wirespeed",
                "-n",
                &ns,
                "--wait",
                "--timeout",
                "3m",
            ],
        );
        assert!(o.status.success(), "helm uninstall: {}", text(&o));
        wait_for("nothing left in the namespace", 120, || {
            left_in(&c, &ns).is_empty().then_some(())
        });
        let o = helm(&c, &["list", "-n", &ns, "-q"]);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "", "no release");
        c.api("DELETE", &format!("/api/v1/namespaces/{ns}"), None);
        c.api("DELETE", &format!("/api/v1/persistentvolumes/{pv}"), None);
        for plural in ["servicemonitors", "podmonitors", "prometheusrules"] {
            c.api(
                "DELETE",
                &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.monitoring.coreos.com"),
                None,
            );
        }
    }
    nothing_left(&name);
}
