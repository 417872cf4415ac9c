//! A real Kubernetes cluster for the binary's tests:
//! k8s/testenv/cluster.sh brings it up (etcd, kube-apiserver, scheduler,
//! controller-manager, per node a network namespace with containerd,
//! runc, a CNI, a kubelet and kube-proxy; a registry holding the agent
//! image the binary under test built) and takes it down on drop.
//!
//! Two fixtures: [`NEWEST`], which every real-cluster test runs on
//! (`Cluster::up`), and [`OLDEST`], the oldest supported, which keeps a
//! smoke test. `WIRESPEED_K8S_FIXTURE=oldest` runs them all on the oldest
//! (a machine without `build.sh --version 1.37` and `build.sh addons`).

use super::bin;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn script() -> PathBuf {
    repo().join("k8s/testenv/cluster.sh")
}

/// The newest fixture: Kubernetes 1.37, containerd 2, flannel's vxlan
/// backend, NetworkPolicy enforced (kube-router's firewall), CoreDNS.
pub const NEWEST: &[&str] = &[
    "--version",
    "1.37",
    "--runtime",
    "containerd2",
    "--cni",
    "flannel-vxlan",
    "--network-policy",
    "--dns",
];

/// The oldest supported fixture: Kubernetes 1.34, containerd 1.6, the
/// bridge CNI with static routes, no policy, no DNS.
pub const OLDEST: &[&str] = &[
    "--version",
    "1.34",
    "--runtime",
    "containerd1",
    "--cni",
    "bridge",
];

/// The fixture `Cluster::up` uses: [`NEWEST`] unless
/// `WIRESPEED_K8S_FIXTURE=oldest`.
pub fn default_fixture() -> &'static [&'static str] {
    match std::env::var("WIRESPEED_K8S_FIXTURE").as_deref() {
        Ok("oldest") => OLDEST,
        _ => NEWEST,
    }
}

/// What `fixture` needs that build.sh has not built, if anything.
fn missing_bins(fixture: &[&str]) -> Option<String> {
    let root = std::env::var("KUBE_TESTENV_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target/k8s-testenv"));
    let newest = fixture.contains(&"1.37");
    let bins = if newest {
        root.join("1.37/bin")
    } else {
        std::env::var("KUBE_TESTENV_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|_| root.join("bin"))
    };
    let mut need = vec![(bins.join("kubelet"), "k8s/testenv/build.sh")];
    if newest {
        need[0].1 = "k8s/testenv/build.sh --version 1.37";
        need.push((
            root.join("addons/bin/flanneld"),
            "k8s/testenv/build.sh addons",
        ));
    }
    need.into_iter()
        .find(|(p, _)| !p.exists())
        .map(|(p, how)| format!("{} is missing: run {how}", p.display()))
}

/// Whether this machine can run the default fixture; under CI=true it must.
pub fn can_run(test: &str) -> bool {
    can_run_on(test, default_fixture())
}

/// Whether this machine can run `fixture`; under CI=true it must.
pub fn can_run_on(test: &str, fixture: &[&str]) -> bool {
    let why = if !wirespeed_lab::is_root() {
        Some("needs root".to_string())
    } else if let Some(m) = missing_bins(fixture) {
        Some(m)
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
        Some(w) => wirespeed_testkit::require(false, &w, test),
        None => true,
    }
}

/// A cluster made by cluster.sh, taken down on drop.
pub struct Cluster {
    /// The cluster's name (cluster.sh --name).
    pub name: String,
    /// Its env file: KUBECONFIG, SERVER, TOKEN, CA, IMAGE, NODES, ...
    pub env: BTreeMap<String, String>,
}

impl Cluster {
    /// A cluster of the default fixture with `args` (nodes, zones, ...).
    pub fn up(name: &str, args: &[&str]) -> Cluster {
        Cluster::up_on(name, default_fixture(), args)
    }

    /// A cluster of `fixture` ([`NEWEST`], [`OLDEST`]) with `args`.
    pub fn up_on(name: &str, fixture: &[&str], args: &[&str]) -> Cluster {
        let out = Command::new(script())
            .args(["up", "--name", name])
            .args(fixture)
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

    pub fn get(&self, k: &str) -> &str {
        self.env.get(k).map(String::as_str).unwrap_or("")
    }

    /// The API as the admin, its answer as JSON (Null when it is not).
    pub fn api(&self, method: &str, path: &str, body: Option<(&str, &Value)>) -> Value {
        serde_json::from_slice(&self.curl(method, path, body)).unwrap_or(Value::Null)
    }

    /// The raw answer of `curl` with the cluster's CA and admin token.
    pub fn curl(&self, method: &str, path: &str, body: Option<(&str, &Value)>) -> Vec<u8> {
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

    /// Taints `node` `wirespeed.dev/test=busy:NoSchedule` (`on`) or
    /// clears its taints, as the node's admin would.
    pub fn taint(&self, node: &str, on: bool) {
        let taints = if on {
            serde_json::json!([{"key": "wirespeed.dev/test", "value": "busy", "effect": "NoSchedule"}])
        } else {
            Value::Null
        };
        let patch = serde_json::json!({"spec": {"taints": taints}});
        let r = self.api(
            "PATCH",
            &format!("/api/v1/nodes/{node}"),
            Some(("application/strategic-merge-patch+json", &patch)),
        );
        assert_eq!(r["metadata"]["name"], node, "taint patch: {r}");
        assert_eq!(r["spec"]["taints"].is_array(), on, "taint patch: {r}");
    }

    /// The node names (the env file's NODES), in order.
    pub fn nodes(&self) -> Vec<String> {
        self.get("NODES")
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    /// `k8s run` from the runner namespace with the flags the runs of
    /// these tests share (the cluster's image, 1 s stream tests without
    /// warm-up, the fleet key `key`), then `args`.
    pub fn k8s_run(&self, key: &str, args: &[&str]) -> Output {
        let mut all = vec![
            "k8s",
            "run",
            "--image",
            self.get("IMAGE"),
            "-d",
            "1s",
            "--warmup",
            "0",
            "--key-file",
            key,
        ];
        all.extend_from_slice(args);
        self.runner(&all).0
    }

    /// `cmd` run in node `i`'s network namespace (1-based), where pods
    /// and their ports are reached directly.
    pub fn on_node(&self, i: usize, cmd: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &format!("{}-n{i}", self.name)])
            .args(cmd)
            .stdin(Stdio::null())
            .output()
            .expect("run a command in a node's namespace")
    }

    /// The image of the wirespeed binary `bin` pushed to the cluster's
    /// registry as `tag`: its REF@sha256:DIGEST.
    pub fn image_of(&self, bin: &str, tag: &str) -> String {
        let reg = self.get("REGISTRY");
        let out = Command::new(bin)
            .args(["k8s", "image", "build", "--binary", bin, "--push"])
            .arg(format!("{reg}/wirespeed:{tag}"))
            .arg("--plain-http")
            .output()
            .expect("run k8s image build");
        let all = text(&out);
        assert!(out.status.success(), "{all}");
        all.split_whitespace()
            .rfind(|w| w.starts_with(reg) && w.contains("@sha256:"))
            .unwrap_or_else(|| panic!("no REF@sha256:DIGEST in: {all}"))
            .to_string()
    }

    /// A hostPath PersistentVolume of 1Gi on `dir` (made, owned by the
    /// image's user 65532), bound ahead to claim `claim` in `ns` (the
    /// fixture has no provisioner, and every node sees this machine's
    /// filesystem); its name.
    pub fn history_volume(&self, ns: &str, claim: &str, dir: &Path) -> String {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).unwrap();
        std::os::unix::fs::chown(dir, Some(65532), Some(65532)).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let pv = format!("{ns}-history");
        let body = serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                "hostPath": {"path": dir.to_string_lossy(), "type": "Directory"},
                "claimRef": {"namespace": ns, "name": claim}}});
        let r = self.api(
            "POST",
            "/api/v1/persistentvolumes",
            Some(("application/json", &body)),
        );
        assert_eq!(r["metadata"]["name"], pv.as_str(), "{r}");
        pv
    }

    /// A pod's log through the API server (and the kubelet); `previous`:
    /// the agent container's before its last restart (`kubectl logs
    /// --previous`).
    pub fn pod_log(&self, ns: &str, pod: &str, previous: bool) -> String {
        let mut path = format!("/api/v1/namespaces/{ns}/pods/{pod}/log");
        if previous {
            path.push_str("?container=agent&previous=true");
        }
        String::from_utf8_lossy(&self.curl("GET", &path, None)).into_owned()
    }

    /// What a failed wait on `ns` prints: each pod's node, phase, IP and
    /// restarts, and the last 60 lines of every pod's log.
    pub fn explain(&self, ns: &str) -> String {
        let pods = self.api("GET", &format!("/api/v1/namespaces/{ns}/pods"), None);
        let mut out = String::new();
        for p in pods["items"].as_array().into_iter().flatten() {
            let name = p["metadata"]["name"].as_str().unwrap_or("?");
            let restarts: i64 = p["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["restartCount"].as_i64())
                .sum();
            out += &format!(
                "pod {name} on {} {} ip {} restarts {restarts}\n",
                p["spec"]["nodeName"], p["status"]["phase"], p["status"]["podIP"]
            );
            let log = self.pod_log(ns, name, false);
            let lines: Vec<&str> = log.lines().collect();
            for l in &lines[lines.len().saturating_sub(60)..] {
                out += &format!("  | {l}\n");
            }
        }
        out
    }

    /// [`try_wait`] for `f` at most `secs`; on timeout, panics with what
    /// `f` last saw and [`Cluster::explain`] of `ns`.
    pub fn wait_explained<T>(
        &self,
        ns: &str,
        what: &str,
        secs: u64,
        f: impl FnMut() -> Result<T, String>,
    ) -> T {
        try_wait(secs, f).unwrap_or_else(|last| {
            panic!(
                "timed out after {secs} s waiting for {what}; the last state:\n{last}\n{}",
                self.explain(ns)
            )
        })
    }

    /// The watcher's pod in `ns`: (name, node, pod IP), once one is Ready
    /// and not being deleted.
    pub fn watcher_pod(&self, ns: &str) -> Option<(String, String, String)> {
        let pods = self.api(
            "GET",
            &format!(
                "/api/v1/namespaces/{ns}/pods?labelSelector=app.kubernetes.io%2Fname%3Dwirespeed-watch"
            ),
            None,
        );
        pods["items"].as_array()?.iter().find_map(|p| {
            let ready = p["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            (ready && p["metadata"]["deletionTimestamp"].is_null()).then_some(())?;
            Some((
                p["metadata"]["name"].as_str()?.to_string(),
                p["spec"]["nodeName"].as_str()?.to_string(),
                p["status"]["podIP"].as_str()?.to_string(),
            ))
        })
    }

    /// The watcher pod's image in `ns`, once one is Ready.
    pub fn watcher_image(&self, ns: &str) -> Option<String> {
        let (pod, _, _) = self.watcher_pod(ns)?;
        let p = self.api("GET", &format!("/api/v1/namespaces/{ns}/pods/{pod}"), None);
        p["spec"]["containers"][0]["image"]
            .as_str()
            .map(String::from)
    }

    /// Whether the watcher's Deployment in `ns` has rolled out what was
    /// last applied: observed, exactly one pod, updated and available.
    pub fn watcher_rolled_out(&self, ns: &str) -> bool {
        let d = self.api(
            "GET",
            &format!("/apis/apps/v1/namespaces/{ns}/deployments/wirespeed-watch"),
            None,
        );
        let st = &d["status"];
        st["observedGeneration"] == d["metadata"]["generation"]
            && st["replicas"] == 1
            && st["updatedReplicas"] == 1
            && st["availableReplicas"] == 1
    }

    /// The agents' pods in `ns`: node -> (image, Ready), those not being
    /// deleted.
    pub fn agent_images(&self, ns: &str) -> BTreeMap<String, (String, bool)> {
        let pods = self.api(
            "GET",
            &format!(
                "/api/v1/namespaces/{ns}/pods?labelSelector=app.kubernetes.io%2Fname%3Dwirespeed-agent"
            ),
            None,
        );
        let mut out = BTreeMap::new();
        for p in pods["items"].as_array().into_iter().flatten() {
            if !p["metadata"]["deletionTimestamp"].is_null() {
                continue;
            }
            let ready = p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            let node = p["spec"]["nodeName"].as_str().unwrap_or("").to_string();
            let image = p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or("")
                .to_string();
            out.insert(node, (image, ready));
        }
        out
    }

    /// `wirespeed ARGS` in the runner's namespace, which reaches the API
    /// server and nothing else (`--kubeconfig` goes before a `--`).
    pub fn runner(&self, args: &[&str]) -> (Output, Duration) {
        self.runner_as(bin(), args)
    }

    /// [`Cluster::runner`] with the wirespeed binary `wirespeed` (the
    /// previous release's, for the upgrade test).
    pub fn runner_as(&self, wirespeed: &str, args: &[&str]) -> (Output, Duration) {
        let t = Instant::now();
        let cut = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let out = Command::new("ip")
            .args(["netns", "exec", self.get("RUNNER_NETNS"), wirespeed])
            .args(&args[..cut])
            .args(["--kubeconfig", self.get("RUNNER_KUBECONFIG")])
            .args(&args[cut..])
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

pub fn cs(args: &[&str]) -> Output {
    Command::new(script())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run cluster.sh")
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        unfold(&String::from_utf8_lossy(&o.stdout)),
        unfold(&String::from_utf8_lossy(&o.stderr))
    )
}

/// `s` with the lines the binary folded at 100 columns
/// (`wirespeed_report::fold`) joined back, so a test finds a phrase
/// wherever the fold fell: a continuation is indented 4 more than the
/// first line of what it continues, and its first word would not have
/// fitted on the line before (the fold is greedy).
pub fn unfold(s: &str) -> String {
    let lead = |x: &str| x.len() - x.trim_start().len();
    let first_word = |x: &str| x.split_whitespace().next().map_or(0, |w| w.chars().count());
    let mut out: Vec<String> = Vec::new();
    let (mut base, mut last) = (0, 0);
    for l in s.lines() {
        match out.last_mut() {
            Some(prev) if last + 1 + first_word(l) > 100 && lead(l) == base + 4 => {
                prev.push_str(&format!(" {}", l.trim_start()))
            }
            _ => {
                base = lead(l);
                out.push(l.to_string());
            }
        }
        last = l.chars().count();
    }
    out.join("\n")
}

pub fn unique(prefix: &str) -> String {
    format!("{prefix}{:x}", std::process::id() % 0xfff)
}

/// Nodes Ready, each with the test cluster's label; the agent image is in
/// the registry (pushed by the binary under test).
pub fn check_nodes(c: &Cluster, n: usize) {
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

/// Nothing of the cluster is left on the host: processes, mounts,
/// namespaces, links, cgroups, directories.
pub fn nothing_left(name: &str) {
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

/// A scratch directory holding a private fleet key file (`key`, 0600),
/// removed on drop.
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Scratch {
    /// `$TMP/NAME` with `key` in it.
    pub fn with_key(name: &str, key: &str) -> Scratch {
        use std::os::unix::fs::PermissionsExt;
        let s = Scratch(std::env::temp_dir().join(name));
        std::fs::create_dir_all(&s.0).unwrap();
        let k = s.key();
        std::fs::write(&k, format!("{key}\n")).unwrap();
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600)).unwrap();
        s
    }

    /// The path of `name` in it.
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// The key file's path.
    pub fn key(&self) -> String {
        self.file("key")
    }
}

/// Polls `f` every 200 ms until it returns Ok, for at most `secs`; on
/// timeout, Err holds the last thing `f` saw, for the failure message.
pub fn try_wait<T>(secs: u64, mut f: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() >= end => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Polls `f` every 200 ms until it returns Some, for at most `secs`.
pub fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    try_wait(secs, || f().ok_or_else(String::new))
        .unwrap_or_else(|_| panic!("timed out after {secs} s waiting for {what}"))
}

/// A watch state's `recent` rows as JSON, for a failure message.
pub fn recent_rows(st: &Value) -> String {
    serde_json::to_string_pretty(&st["recent"]).unwrap_or_default()
}

/// The measured rr probes of each unordered node pair in a watch
/// state's `recent` rows (`k8s watch status --json`), times sorted.
pub fn probe_times(st: &Value) -> BTreeMap<(String, String), Vec<f64>> {
    let mut out: BTreeMap<_, Vec<f64>> = BTreeMap::new();
    for r in st["recent"].as_array().into_iter().flatten() {
        if r["workload"] != "rr" || !r["error"].is_null() {
            continue;
        }
        let (a, b) = (
            r["client"].as_str().unwrap_or("").to_string(),
            r["server"].as_str().unwrap_or("").to_string(),
        );
        let k = if a < b { (a, b) } else { (b, a) };
        out.entry(k)
            .or_default()
            .push(r["at_unix"].as_f64().unwrap_or(0.0));
    }
    for v in out.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    out
}
