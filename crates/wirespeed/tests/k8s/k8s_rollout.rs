//! `wirespeed k8s run` fails loudly, and soon, when its agents cannot
//! roll out: against a real kube-apiserver + etcd (k8s/testenv) with the
//! test playing the kubelet and the DaemonSet controller
//! (wirespeed_k8s::testkit). No root, no agents: the run must stop before
//! it would test anything.

use crate::common;

use common::bin;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use wirespeed_k8s::Network;
use wirespeed_k8s::testkit::{self, FakeNode, Kubelet, TestEnv};

/// A scratch directory with a key file, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("wirespeed-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let key = d.join("key");
        std::fs::write(&key, "k8s-rollout-key-0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        Scratch(d)
    }

    fn key(&self) -> PathBuf {
        self.0.join("key")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn node(i: u8) -> FakeNode {
    FakeNode {
        name: format!("n{i}"),
        host_ip: format!("192.0.2.{i}"),
        pod_ip: format!("198.51.100.{i}"),
        nics: Vec::new(),
    }
}

/// `k8s run --network pod` in `ns` (at most 120 s of waiting), timed.
fn run(env: &TestEnv, s: &Scratch, ns: &str, image: &str) -> (Output, Duration) {
    let t0 = Instant::now();
    let out = Command::new(bin())
        .args(["k8s", "run", "--kubeconfig"])
        .arg(&env.kubeconfig)
        .args(["--namespace", ns, "--network", "pod", "--image", image])
        .args(["--ready-timeout", "120s", "-d", "0.5s", "--key-file"])
        .arg(s.key())
        .output()
        .expect("run wirespeed k8s run");
    (out, t0.elapsed())
}

#[test]
fn an_image_pull_back_off_fails_the_run_within_60_s_naming_pod_and_reason() {
    let test = "k8s_rollout_pull";
    let Some(env) = TestEnv::start(test, None) else {
        return;
    };
    let s = Scratch::new(test);
    let (ns, image) = ("ws-pull", "registry.invalid/wirespeed:missing");
    let stuck = Kubelet::Stuck {
        status: testkit::image_pull_back_off(image, "192.0.2.3"),
        events: vec![
            (
                "Failed".into(),
                format!("Failed to pull image \"{image}\": not found"),
            ),
            (
                "BackOff".into(),
                format!("Back-off pulling image \"{image}\""),
            ),
        ],
    };
    let pods = vec![
        (node(1), Kubelet::Ready),
        (node(2), Kubelet::Ready),
        (node(3), stuck),
    ];
    let names: Vec<String> = pods.iter().map(|(n, _)| n.name.clone()).collect();
    testkit::register_nodes(&env.kubeconfig, &names).expect("register the nodes");
    let kc = env.kubeconfig.clone();
    let player = std::thread::spawn(move || {
        testkit::play_scene(&kc, ns, Network::Pod, &[], &pods, Duration::from_secs(60))
    });
    let (out, took) = run(&env, &s, ns, image);
    player.join().unwrap().expect("the test's kubelet");
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(60), "took {took:?}: {err}");
    let named = "pod wirespeed-agent-pod-n3 on node n3: ImagePullBackOff";
    assert!(
        err.contains(&format!(
            "error: DaemonSet {ns}/wirespeed-agent-pod cannot roll out: {named}"
        )),
        "{err}"
    );
    assert!(err.contains("check --image"), "{err}");
    // Progress while waiting, and the evidence printed before teardown.
    assert!(
        err.contains("2/3 agents Ready; pod wirespeed-agent-pod-n3: ImagePullBackOff"),
        "{err}"
    );
    let evidence = err
        .find("event Warning Failed: Failed to pull image")
        .expect("events printed");
    let deleted = err.find("deleted the").expect("teardown reported");
    assert!(evidence < deleted, "{err}");
    assert!(
        err[deleted..].contains("applied: 1 DaemonSet, ") && err[deleted..].contains("1 Namespace"),
        "the deleted kinds: {err}"
    );
    let left = testkit::leftovers(&env.kubeconfig, ns).unwrap();
    assert!(left.is_empty(), "left behind: {left:?}");
}

// A node left out for a taint: the real cluster's tests
// (k8s_cluster.rs, k8s_paths.rs) leave a tainted node out by name.
