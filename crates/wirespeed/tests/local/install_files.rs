//! The install files, without a cluster (issue 45): charts/wirespeed
//! renders exactly the objects `wirespeed k8s watch manifests` prints for
//! the same settings, passes `helm lint`, and its values.schema.json
//! refuses a bad value naming the field; its PrometheusRule carries the
//! rules of contrib/prometheus; the Grafana dashboard decodes strictly
//! with Grafana's Foundation SDK (k8s/testenv/dashcheck); the krew
//! manifest that contrib/krew/package.sh writes passes krew's validator,
//! krew installs the plugin from it, and real kubectl runs
//! `kubectl wirespeed` through it. The cluster half is k8s_install.rs.

use crate::common;

use common::install::{chart, have_tools, helm_template, kubectl, run, tool, watch_manifests};
use serde_json::Value;
use sha2::Digest;

/// Labels Helm's templates add to every object's metadata.
const HELM_LABELS: [&str; 2] = ["app.kubernetes.io/instance", "helm.sh/chart"];

/// Kinds only the chart makes (switches of its values).
const CHART_ONLY: [&str; 4] = [
    "PersistentVolumeClaim",
    "ServiceMonitor",
    "PodMonitor",
    "PrometheusRule",
];

fn hex_sha256(b: &[u8]) -> String {
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The key in a Secret's data (base64).
fn secret_key(o: &Value) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(o["data"]["key"].as_str().expect("the Secret's key"))
        .expect("base64")
}

/// The objects with what may differ between the two renderings made
/// equal: Helm's labels gone, the key (random in both) and its digest
/// replaced once the digest is checked against the key; sorted by kind
/// and name. Returns the kinds left out (`skip`) apart.
fn normalise(mut objs: Vec<Value>, skip: &[&str]) -> (Vec<Value>, Vec<String>) {
    let key = objs
        .iter()
        .find(|o| o["kind"] == "Secret")
        .map(secret_key)
        .expect("a key Secret");
    let digest = hex_sha256(&key);
    let mut left = Vec::new();
    objs.retain(|o| {
        let k = o["kind"].as_str().unwrap_or("").to_string();
        let keep = !skip.contains(&k.as_str());
        if !keep {
            left.push(k);
        }
        keep
    });
    for o in &mut objs {
        if let Some(l) = o["metadata"]["labels"].as_object_mut() {
            for h in HELM_LABELS {
                l.remove(h);
            }
        }
        if o["kind"] == "Secret" {
            o["data"]["key"] = "KEY".into();
        }
        let ann = &mut o["spec"]["template"]["metadata"]["annotations"]["wirespeed.dev/key-sha256"];
        if !ann.is_null() {
            assert_eq!(ann.as_str(), Some(digest.as_str()), "the key's digest");
            *ann = "DIGEST".into();
        }
    }
    let id = |o: &Value| format!("{}/{}", o["kind"], o["metadata"]["name"]);
    objs.sort_by_key(id);
    left.sort();
    (objs, left)
}

/// Renders the chart with `values` (a values file's text) and
/// `manifests` with `flags`; asserts the objects are the same, and that
/// the chart's extra objects are exactly `extra`.
fn same_objects(values: &str, flags: &[&str], extra: &[&str]) {
    let ns = "wirespeed-test";
    let dir = std::env::temp_dir().join(format!("ws-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let vf = dir.join(format!("values-{}.yaml", hex_sha256(values.as_bytes())));
    std::fs::write(&vf, values).unwrap();
    let helm = helm_template(ns, &["-f", vf.to_str().unwrap()]);
    let (helm, left) = normalise(helm, &CHART_ONLY);
    let (ours, ns_left) = normalise(watch_manifests(ns, flags), &["Namespace"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(ns_left, ["Namespace"], "manifests makes the namespace");
    assert_eq!(left, extra, "the chart's own objects for {values}");
    let names = |v: &[Value]| {
        v.iter()
            .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&helm), names(&ours), "the same objects for {values}");
    for (h, o) in helm.iter().zip(&ours) {
        assert_eq!(
            h,
            o,
            "{} {} differs for values\n{values}\nchart:\n{}\nmanifests {flags:?}:\n{}",
            h["kind"],
            h["metadata"]["name"],
            serde_json::to_string_pretty(h).unwrap(),
            serde_json::to_string_pretty(o).unwrap()
        );
    }
}

#[test]
fn the_chart_renders_what_watch_manifests_prints_for_the_same_settings() {
    if !have_tools("the_chart_renders_what_watch_manifests_prints_for_the_same_settings") {
        return;
    }
    let image = "reg.example/wirespeed:1@sha256:0123";
    // The defaults.
    same_objects(
        &format!("image: {image}\n"),
        &["--image", image, "--network", "pod"],
        &[],
    );
    // Every setting the chart maps to a flag.
    same_objects(
        &format!(
            "image: {image}
port: 6300
httpPort: 6380
dataPorts: 6301-6308
nodeSelector: {{pool: net}}
tolerations: [{{key: dedicated, operator: Equal, value: net, effect: NoSchedule}}]
resources: {{requests: {{cpu: 500m, memory: 128Mi}}, limits: {{memory: 256Mi}}}}
priorityClassName: high
networkPolicy: {{apiSources: [10.0.0.1/32, 10.0.0.2/32]}}
watch:
  rediscover: 3s
  probePeriod: 5s
  budget: \"10\"
  linkRate: 1gbit
  bandwidthDuration: 1s
  driftRatio: \"2\"
  extraArgs: [--peers, \"4\"]
  history: {{existingClaim: hist}}
serviceMonitor: {{enabled: true}}
"
        ),
        &[
            "--image",
            image,
            "--port",
            "6300",
            "--http-port",
            "6380",
            "--data-ports",
            "6301-6308",
            "--node-selector",
            "pool=net",
            "--toleration",
            "dedicated=net:NoSchedule",
            "--requests",
            "cpu=500m,memory=128Mi",
            "--limits",
            "memory=256Mi",
            "--priority-class",
            "high",
            "--api-source",
            "10.0.0.1/32",
            "--api-source",
            "10.0.0.2/32",
            "--rediscover",
            "3s",
            "--history-claim",
            "hist",
            "--",
            // The chart passes its typed settings in flag order.
            "--bandwidth-duration",
            "1s",
            "--budget",
            "10",
            "--drift-ratio",
            "2",
            "--link-rate",
            "1gbit",
            "--probe-period",
            "5s",
            "--peers",
            "4",
        ],
        &["ServiceMonitor"],
    );
    // The host network, every taint tolerated, no policy; a chart-made
    // history volume and the monitoring objects.
    same_objects(
        &format!(
            "image: {image}
network: host
tolerateAll: true
networkPolicy: {{enabled: false}}
watch: {{history: {{persistence: {{enabled: true, storageClassName: \"\"}}}}}}
podMonitor: {{enabled: true}}
prometheusRule: {{enabled: true}}
"
        ),
        &[
            "--image",
            image,
            "--network",
            "host",
            "--privileged-namespace",
            "--tolerate-all",
            "--no-network-policy",
            "--history-claim",
            "wirespeed-history",
        ],
        &["PersistentVolumeClaim", "PodMonitor", "PrometheusRule"],
    );
}

#[test]
fn an_existing_key_secret_is_mounted_and_none_is_made() {
    if !have_tools("an_existing_key_secret_is_mounted_and_none_is_made") {
        return;
    }
    let objs = helm_template(
        "ns",
        &["--set", "image=r", "--set", "key.existingSecret=my-key"],
    );
    assert!(objs.iter().all(|o| o["kind"] != "Secret"), "no Secret made");
    let pods: Vec<&Value> = objs
        .iter()
        .filter(|o| o["kind"] == "DaemonSet" || o["kind"] == "Deployment")
        .collect();
    assert_eq!(pods.len(), 2);
    for o in pods {
        let t = &o["spec"]["template"];
        assert_eq!(
            t["spec"]["volumes"][0]["secret"]["secretName"], "my-key",
            "{o}"
        );
        // helm template cannot read the Secret: no digest to roll by.
        assert!(t["metadata"]["annotations"].is_null(), "{o}");
    }
    // Two renders of the default make two keys (random), each with its
    // own digest on both pod templates.
    let key = |objs: &[Value]| {
        let k = secret_key(objs.iter().find(|o| o["kind"] == "Secret").unwrap());
        assert_eq!(k.len(), 64);
        k
    };
    let (a, b) = (
        helm_template("ns", &["--set", "image=r"]),
        helm_template("ns", &["--set", "image=r"]),
    );
    assert_ne!(key(&a), key(&b));
    normalise(a, &[]);
}

#[test]
fn helm_lint_passes_and_the_schema_names_a_bad_value() {
    if !have_tools("helm_lint_passes_and_the_schema_names_a_bad_value") {
        return;
    }
    let c = chart();
    let c = c.to_str().unwrap();
    let out = run(
        &tool("helm"),
        &["lint", "--strict", c, "--set", "image=r/w:1"],
    );
    let all =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("0 chart(s) failed"), "{all}");
    for (set, field) in [
        ("network=bogus", "/network"),
        ("watch.probePeriod=5 minutes", "/watch/probePeriod"),
        ("port=70000", "/port"),
        ("dataPorts=5301", "/dataPorts"),
        ("serviceMonitr.enabled=true", "serviceMonitr"),
        (
            "watch.history.persistence.size=lots",
            "/watch/history/persistence/size",
        ),
        (
            "networkPolicy.apiSources={10.0.0.1}",
            "/networkPolicy/apiSources/0",
        ),
    ] {
        let out = run(
            &tool("helm"),
            &["template", "w", c, "--set", "image=r/w:1", "--set", set],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{set} was taken");
        assert!(err.contains(field), "{set}: the error names {field}: {err}");
    }
    // No image: refused, naming it.
    let out = run(&tool("helm"), &["template", "w", c]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/image"));
}

#[test]
fn the_prometheus_rule_carries_the_contrib_rules() {
    if !have_tools("the_prometheus_rule_carries_the_contrib_rules") {
        return;
    }
    let repo = common::cluster::repo();
    let ours =
        std::fs::read_to_string(repo.join("contrib/prometheus/wirespeed-rules.yml")).unwrap();
    let chart_copy = std::fs::read_to_string(chart().join("files/wirespeed-rules.yml")).unwrap();
    assert_eq!(
        ours, chart_copy,
        "charts/wirespeed/files/wirespeed-rules.yml is a copy of contrib/prometheus/wirespeed-rules.yml: copy it again"
    );
    let contrib: Value = serde_saphyr::from_str(&ours).unwrap();
    let objs = helm_template(
        "ns",
        &["--set", "image=r", "--set", "prometheusRule.enabled=true"],
    );
    let rule = objs.iter().find(|o| o["kind"] == "PrometheusRule").unwrap();
    assert_eq!(rule["spec"]["groups"], contrib["groups"]);
    let op: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(repo.join("contrib/prometheus/wirespeed-prometheusrule.yaml"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        op["spec"]["groups"], contrib["groups"],
        "contrib's PrometheusRule"
    );
}

#[test]
fn the_dashboard_decodes_strictly_and_every_panel_queries_prometheus() {
    if !have_tools("the_dashboard_decodes_strictly_and_every_panel_queries_prometheus") {
        return;
    }
    let repo = common::cluster::repo();
    let dash = repo.join("contrib/grafana/wirespeed-watch.json");
    let out = run(&tool("dashcheck"), &[dash.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let queries: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let panels = queries.iter().filter(|q| q["kind"] == "panel").count();
    assert!(panels >= 10, "{queries:?}");
    assert!(
        queries
            .iter()
            .all(|q| q["expr"].as_str().unwrap().contains("wirespeed_watch_"))
    );
    // A field Grafana does not know, and a mistyped one, are refused.
    let mut d: Value = serde_json::from_slice(&std::fs::read(&dash).unwrap()).unwrap();
    d["panels"][2]["targets"][0]["exprr"] = "up".into();
    d["panels"][3]["gridPos"]["w"] = "wide".into();
    let bad = std::env::temp_dir().join(format!("ws-dash-{}.json", std::process::id()));
    std::fs::write(&bad, d.to_string()).unwrap();
    let out = run(&tool("dashcheck"), &[bad.to_str().unwrap()]);
    let _ = std::fs::remove_file(&bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("panels[2].targets[0]") || err.contains("exprr"),
        "{err}"
    );
    assert!(err.contains("panels[3].gridPos.w"), "{err}");
}

#[test]
fn krew_installs_the_plugin_and_kubectl_runs_it() {
    if !have_tools("krew_installs_the_plugin_and_kubectl_runs_it") {
        return;
    }
    let repo = common::cluster::repo();
    let dir = std::env::temp_dir().join(format!("ws-krew-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out_dir = dir.join("out");
    let out = run(
        &repo.join("contrib/krew/package.sh"),
        &[
            "--binary",
            common::bin(),
            "--version",
            "v0.1.0",
            "--base-url",
            "https://example.invalid/releases/v0.1.0",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = out_dir.join("wirespeed.yaml");
    let archive = out_dir.join("wirespeed-v0.1.0-linux-amd64.tar.gz");
    let v = run(
        &tool("validate-krew-manifest"),
        &["-manifest", manifest.to_str().unwrap(), "-skip-install"],
    );
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    // krew as kubectl's plugin, installing ours from the manifest and
    // archive (no index, no network), into a root of its own.
    let path_dir = dir.join("path");
    std::fs::create_dir_all(&path_dir).unwrap();
    std::os::unix::fs::symlink(tool("krew"), path_dir.join("kubectl-krew")).unwrap();
    let krew_root = dir.join("krew");
    let path = format!(
        "{}:{}:{}",
        krew_root.join("bin").display(),
        path_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let kubectl = |args: &[&str]| {
        std::process::Command::new(kubectl())
            .args(args)
            .env("PATH", &path)
            .env("KREW_ROOT", &krew_root)
            .env("KUBECONFIG", dir.join("kubeconfig"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let i = kubectl(&[
        "krew",
        "install",
        &format!("--manifest={}", manifest.display()),
        &format!("--archive={}", archive.display()),
    ]);
    assert!(i.status.success(), "{}", String::from_utf8_lossy(&i.stderr));
    let h = kubectl(&["wirespeed", "--help"]);
    let help = String::from_utf8_lossy(&h.stdout);
    assert!(h.status.success(), "{help}");
    assert!(help.contains("Usage: kubectl wirespeed"), "{help}");
    assert!(help.contains("--context"), "{help}");
    let h = kubectl(&["wirespeed", "watch", "status", "--help"]);
    assert!(String::from_utf8_lossy(&h.stdout).contains("-n, --namespace"));
    // kubectl's --context and --kubeconfig reach the plugin: a kubeconfig
    // without that context is refused, naming it.
    std::fs::write(
        dir.join("kubeconfig"),
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .unwrap();
    let kc = dir.join("kubeconfig");
    let s = kubectl(&[
        "wirespeed",
        "watch",
        "status",
        "-n",
        "ws",
        "--context",
        "nowhere",
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&s.stderr);
    assert!(!s.status.success());
    assert!(err.contains("context \"nowhere\""), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
