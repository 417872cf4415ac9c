//! `wirespeed k8s run` end to end against a real kube-apiserver + etcd
//! (k8s/testenv), with real `wirespeed agent`s in lab namespaces and the
//! test playing the kubelet, the DaemonSet and resource-claim controllers
//! and DraNet (wirespeed_k8s::testkit; k8s/testenv/README.md says what that
//! does not cover). The API server, `k8s run` and the player live in the
//! lab's switch namespace, which routes to the nodes.

use crate::common;

use common::{Proc, bin, start_agent};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use wirespeed_k8s::Network;
use wirespeed_k8s::testkit::{self, FakeNode, TestEnv};
use wirespeed_lab::{Lab, LabSpec};

const NODES: [&str; 3] = ["n1", "n2", "n3"];
/// Links per node: 0 the node network (host IPs), 1 the pod network (pod
/// IPs), 2 the NIC DraNet hands to the dra pods.
const LINKS: usize = 3;

/// Field order matters: agents die, then the API server stops, then the
/// lab goes, then the files.
struct Live {
    agents: Vec<Proc>,
    env: Option<TestEnv>,
    lab: Option<Lab>,
    dir: PathBuf,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.agents.clear();
        self.env.take();
        if let Some(l) = self.lab.take() {
            let _ = l.down();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lab_spec(name: &str) -> LabSpec {
    common::star_lab(name, &NODES, LINKS, 170, &[], |_, l| {
        l.rate = Some("200mbit".into())
    })
}

#[test]
fn k8s_run_discovers_agents_of_every_mode_runs_the_matrix_and_cleans_up() {
    let test = "k8s_run_live";
    if !testkit::require(wirespeed_lab::is_root(), "lab namespaces need root", test) {
        return;
    }
    let name = Lab::unique("k8s");
    let dir = std::env::temp_dir().join(format!("{name}-files"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut live = Live {
        agents: Vec::new(),
        env: None,
        lab: Some(Lab::up(&lab_spec(&name)).expect("lab up")),
        dir: dir.clone(),
    };
    let lab = live.lab.as_ref().unwrap();
    let sw = lab.ns("sw");
    let Some(env) = TestEnv::start(test, Some(&sw)) else {
        return;
    };
    let kubeconfig = env.kubeconfig.clone();
    live.env = Some(env);
    let key = dir.join("key");
    std::fs::write(&key, "k8s-live-key-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();

    // One real agent per node; each mode's pods reach it on that mode's
    // address (node IP, pod IP, claimed NIC).
    let mut plays: Vec<(Network, Vec<FakeNode>)> =
        Network::ALL.iter().map(|n| (*n, Vec::new())).collect();
    for (i, h) in NODES.iter().enumerate() {
        live.agents.push(start_agent(lab, h, &key));
        let addr = |l: usize| lab.addr4(h, LINKS * i + l).unwrap().to_string();
        let node = FakeNode {
            name: format!("node-{h}"),
            host_ip: addr(0),
            pod_ip: addr(1),
            nics: vec![(
                lab.dev(h, LINKS * i + 2).unwrap(),
                format!("{}/24", addr(2)),
            )],
        };
        for (_, nodes) in plays.iter_mut() {
            nodes.push(node.clone());
        }
    }

    let ns = "ws-live";
    let (kc, names) = (
        kubeconfig.clone(),
        NODES.map(|h| format!("node-{h}")).to_vec(),
    );
    wirespeed_lab::spawn_in(&sw, move || testkit::register_nodes(&kc, &names))
        .unwrap()
        .join()
        .unwrap()
        .expect("enter the switch namespace")
        .expect("register the nodes");
    // DraNet's ResourceSlices (gVNICs, as on GCE): the run checks the
    // tpu-multinic profile's private flag against them before applying.
    let (kc, dra_nodes) = (kubeconfig.clone(), plays[2].1.clone());
    wirespeed_lab::spawn_in(&sw, move || testkit::publish_nics(&kc, &dra_nodes))
        .unwrap()
        .join()
        .unwrap()
        .expect("enter the switch namespace")
        .expect("publish the ResourceSlices");
    let (kc, plays2) = (kubeconfig.clone(), plays.clone());
    let player = wirespeed_lab::spawn_in(&sw, move || {
        testkit::play_run(&kc, ns, &plays2, Duration::from_secs(60))
    })
    .unwrap();
    let out = dir.join("out.json");
    let mut run = lab.command("sw", bin());
    run.args(["k8s", "run", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--namespace", ns, "--network", "host,pod,dra"])
        .arg("--privileged-namespace")
        .args(["--pattern", "all-to-all", "--ready-timeout", "60s"])
        .args(["--profile", "tpu-multinic", "--image", "wirespeed:test"])
        .arg("--key-file")
        .arg(&key)
        .args(["-d", "0.5s", "--warmup", "0.2s", "--out"])
        .arg(&out);
    let o = run.output().expect("run wirespeed k8s run");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    println!("{stdout}\n{stderr}");
    player.join().unwrap().unwrap().expect("the test's kubelet");
    assert!(o.status.success(), "k8s run failed: {stderr}");

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for (r, (net, nodes)) in runs.iter().zip(&plays) {
        assert_eq!(r["network"], net.to_string());
        let agents = r["agents"].as_array().unwrap();
        assert_eq!(agents.len(), 3, "{net}");
        for (a, n) in agents.iter().zip(nodes) {
            let want: &str = match net {
                Network::Host => &n.host_ip,
                Network::Pod | Network::PodPeer => &n.pod_ip,
                Network::Dra => n.nics[0].1.split('/').next().unwrap(),
            };
            assert_eq!(a["nics"][0]["addr"], want, "{net}");
        }
        let tests = r["results"]["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 3, "{net}: all-to-all of 3 agents");
        for t in tests {
            assert!(t["error"].is_null(), "{net}: {t}");
            let bps = t["throughput_bps"].as_f64().unwrap();
            // 200 Mbit/s caps on every link: a real transfer, under the cap.
            assert!((50e6..=210e6).contains(&bps), "{net}: {bps}");
        }
    }
    assert!(stdout.contains("side by side"), "{stdout}");
    // One row per path, each with its gap to the host network.
    assert!(stdout.contains("vs host"), "{stdout}");
    for p in ["cross-node", "dra"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("  {p} ")) && l.contains('%')),
            "{p}: {stdout}"
        );
    }

    // Everything `k8s run` applied is gone; its namespace is Terminating.
    let kc = kubeconfig.clone();
    let left = wirespeed_lab::spawn_in(&sw, move || testkit::leftovers(&kc, ns))
        .unwrap()
        .join()
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn ctrl_c_while_waiting_for_agents_deletes_what_the_run_applied() {
    let test = "k8s_run_ctrl_c";
    let Some(env) = TestEnv::start(test, None) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("wirespeed-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("key");
    std::fs::write(&key, "k8s-ctrl-c-key-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ns = "ws-ctrlc";
    testkit::register_nodes(&env.kubeconfig, &["c1".into(), "c2".into()]).unwrap();
    // DraNet's NICs on both nodes, so the dra mode is applied rather than
    // refused before anything is (no device the selector admits).
    let nodes: Vec<testkit::FakeNode> = ["c1", "c2"]
        .iter()
        .map(|n| testkit::FakeNode {
            name: n.to_string(),
            host_ip: String::new(),
            pod_ip: String::new(),
            nics: vec![("eth1".into(), "10.9.0.1/24".into())],
        })
        .collect();
    testkit::publish_nics(&env.kubeconfig, &nodes).unwrap();
    let child = Command::new(bin())
        .args(["k8s", "run", "--kubeconfig"])
        .arg(&env.kubeconfig)
        .args([
            "--namespace",
            ns,
            "--network",
            "pod,dra",
            "--ready-timeout",
            "120s",
            "--image",
            "wirespeed:test",
        ])
        .arg("--key-file")
        .arg(&key)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Proc(child);
    // No kubelet plays this run: it waits for agents until interrupted.
    testkit::wait_applied(&env.kubeconfig, ns, Network::Dra, Duration::from_secs(30)).unwrap();
    let pid = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let st = child.0.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!st.success(), "{stderr}");
    assert!(stderr.contains("interrupted by Ctrl-C"), "{stderr}");
    assert!(stderr.contains("deleted the"), "{stderr}");
    let left = testkit::leftovers(&env.kubeconfig, ns).unwrap();
    assert!(left.is_empty(), "left behind: {left:?}");
}
