//! `wirespeed k8s run` from a machine that reaches only the API server:
//! real `wirespeed agent`s in lab namespaces, a real kube-apiserver + etcd
//! (k8s/testenv) in the lab's switch namespace, which routes to the
//! nodes, and the test playing the kubelet (wirespeed_k8s::testkit).
//!
//! The runner runs in a namespace of its own with no interface but
//! loopback: its one way out is a forwarder from its 127.0.0.1:PORT to the
//! API server's, so every request to an agent goes through the API
//! server's pod proxy. It authenticates as the `wirespeed-runner`
//! service account of `k8s manifests --runner`, so the run also proves
//! that account's ClusterRole is enough.

use crate::common;

use common::{Proc, bin, start_agent_with};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wirespeed_k8s::Network;
use wirespeed_k8s::testkit::{self, FakeNode, TestEnv};
use wirespeed_lab::{Lab, LabSpec, spawn_in};

const NODES: [&str; 3] = ["n1", "n2", "n3"];
/// Links per node: 0 the node network (host IPs), 1 the pod network.
const LINKS: usize = 2;

/// Field order matters: the forwarder stops, agents die, the API server
/// stops, then the lab goes, then the files.
struct Live {
    forward: Option<Forward>,
    agents: Vec<Proc>,
    env: Option<TestEnv>,
    lab: Option<Lab>,
    dir: PathBuf,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.forward.take();
        self.agents.clear();
        self.env.take();
        if let Some(l) = self.lab.take() {
            let _ = l.down();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Three nodes behind a routing switch `sw` (the API server's home), and
/// `runner` with no link at all.
fn lab_spec(name: &str) -> LabSpec {
    common::star_lab(name, &NODES, LINKS, 180, &["runner"], |_, l| {
        l.rate = Some("200mbit".into())
    })
}

/// Accepts on 127.0.0.1:`port` in namespace `from` and connects each
/// connection to 127.0.0.1:`port` in namespace `to`; stops on drop.
struct Forward {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), wirespeed_lab::LabError>>>,
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

fn forward(from: &str, to: &str, port: u16) -> Forward {
    let listener = spawn_in(from, move || TcpListener::bind(("127.0.0.1", port)))
        .unwrap()
        .join()
        .unwrap()
        .unwrap()
        .expect("listen in the runner's namespace");
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let halt = stop.clone();
    // Sockets made on this thread live in `to`; the listener stays in `from`.
    let thread = spawn_in(to, move || {
        while !halt.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((c, _)) => {
                    let _ = c.set_nonblocking(false);
                    if let Ok(up) = TcpStream::connect(("127.0.0.1", port)) {
                        pipe(c.try_clone().unwrap(), up.try_clone().unwrap());
                        pipe(up, c);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // The accept poll's period, not a wait for readiness.
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(_) => break,
            }
        }
    })
    .unwrap();
    Forward {
        stop,
        thread: Some(thread),
    }
}

/// The API server's port, from the kubeconfig start.sh wrote.
fn api_port(kubeconfig: &Path) -> u16 {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let at = text
        .find("server: https://127.0.0.1:")
        .expect("a loopback server")
        + 26;
    text[at..].lines().next().unwrap().trim().parse().unwrap()
}

/// Lab, API server in `sw`, key file, one agent per node (`extra` flags
/// per node) and the nodes as each mode's pods report them.
fn setup(test: &str, extra: &[&[&str]; 3]) -> Option<(Live, PathBuf, Vec<FakeNode>)> {
    if !testkit::require(wirespeed_lab::is_root(), "lab namespaces need root", test) {
        return None;
    }
    let name = Lab::unique("k8sr");
    let dir = std::env::temp_dir().join(format!("{name}-files"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut live = Live {
        forward: None,
        agents: Vec::new(),
        env: None,
        lab: Some(Lab::up(&lab_spec(&name)).expect("lab up")),
        dir: dir.clone(),
    };
    let lab = live.lab.as_ref().unwrap();
    live.env = Some(TestEnv::start(test, Some(&lab.ns("sw")))?);
    let key = dir.join("key");
    std::fs::write(&key, "k8s-reach-key-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut nodes = Vec::new();
    for (i, h) in NODES.iter().enumerate() {
        live.agents.push(start_agent_with(lab, h, &key, extra[i]));
        let addr = |l: usize| lab.addr4(h, LINKS * i + l).unwrap().to_string();
        nodes.push(FakeNode {
            name: format!("node-{h}"),
            host_ip: addr(0),
            pod_ip: addr(1),
            nics: Vec::new(),
        });
    }
    let (kc, names) = (
        live.env.as_ref().unwrap().kubeconfig.clone(),
        nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>(),
    );
    spawn_in(&lab.ns("sw"), move || testkit::register_nodes(&kc, &names))
        .unwrap()
        .join()
        .unwrap()
        .expect("enter the switch namespace")
        .expect("register the nodes");
    Some((live, key, nodes))
}

/// The runner's objects (`k8s manifests --runner`) applied, and a
/// kubeconfig with its service account's token; `without_proxy` leaves
/// the `pods/proxy` rule out of its ClusterRole (an admin's copy that
/// lost it).
fn runner_kubeconfig(sw: &str, admin: &Path, out: &Path, without_proxy: bool) {
    let mut o = wirespeed_k8s::Options::new(
        vec![Network::Host, Network::Pod],
        "ws-runner",
        b"unused-key-0123456789abcdef",
    );
    o.image = "wirespeed:test".into();
    o.privileged_namespace = true;
    let mut objs = wirespeed_k8s::runner_job::build(&o, &[]).unwrap();
    for obj in objs.iter_mut().filter(|_| without_proxy) {
        if let wirespeed_k8s::runner_job::RunnerObject::ClusterRole(role) = obj {
            let rules = role.rules.get_or_insert_with(Vec::new);
            let before = rules.len();
            rules.retain(|r| !r.resources.iter().flatten().any(|x| x == "pods/proxy"));
            assert_eq!(rules.len() + 1, before, "one pods/proxy rule");
        }
    }
    let admin2 = admin.to_path_buf();
    let token = spawn_in(sw, move || {
        testkit::block_on(async {
            let c = wirespeed_k8s::cluster::client(Some(&admin2)).await?;
            testkit::apply_runner(&c, &objs).await?;
            testkit::token_for(&c, "ws-runner", wirespeed_k8s::manifests::RUNNER_SA).await
        })
    })
    .unwrap()
    .join()
    .unwrap()
    .unwrap()
    .unwrap()
    .expect("runner objects and token");
    testkit::kubeconfig_with_token(admin, &token, out).unwrap();
}

fn leftovers(sw: &str, kc: &Path, ns: &'static str) -> Vec<String> {
    let kc = kc.to_path_buf();
    spawn_in(sw, move || testkit::leftovers(&kc, ns))
        .unwrap()
        .join()
        .unwrap()
        .unwrap()
        .unwrap()
}

/// `wirespeed k8s run` in lab host `host` with kubeconfig `kc`, into
/// namespace `ns`, 0.5 s tests, `--out out`, plus `extra` flags.
fn k8s_run(
    lab: &Lab,
    host: &str,
    kc: &Path,
    ns: &str,
    key: &Path,
    out: &Path,
    extra: &[&str],
) -> std::process::Output {
    let mut run = lab.command(host, bin());
    run.args(["k8s", "run", "--kubeconfig"])
        .arg(kc)
        .args(["--namespace", ns])
        .args(extra)
        .args(["--ready-timeout", "60s", "--image", "wirespeed:test"])
        .arg("--key-file")
        .arg(key)
        .args(["-d", "0.5s", "--warmup", "0.2s", "--out"])
        .arg(out);
    run.output().expect("run wirespeed k8s run")
}

/// The runner's account without `pods/proxy`: the run is refused at its
/// first request to an agent, with what to grant and where it is
/// printed; the ClusterRole `k8s manifests --runner` prints, applied as
/// the refusal says, is what the next run (the test's own) uses.
fn proxy_refused_then_granted(
    lab: &Lab,
    runner_kc: &Path,
    key: &Path,
    nodes: &[FakeNode],
    dir: &Path,
    admin: &Path,
) {
    let sw = lab.ns("sw");
    runner_kubeconfig(&sw, admin, runner_kc, true);
    let ns = "ws-noproxy";
    let plays = vec![(Network::Pod, nodes.to_vec())];
    let kc = admin.to_path_buf();
    let player = spawn_in(&sw, move || {
        testkit::play_run(&kc, ns, &plays, Duration::from_secs(60))
    })
    .unwrap();
    let out = dir.join("noproxy.json");
    let o = k8s_run(
        lab,
        "runner",
        runner_kc,
        ns,
        key,
        &out,
        &["--network", "pod"],
    );
    // Long lines are folded at 100 columns: joined back.
    let stderr = common::cluster::unfold(&String::from_utf8_lossy(&o.stderr));
    player.join().unwrap().unwrap().expect("the test's kubelet");
    assert!(!o.status.success(), "{stderr}");
    assert!(
        stderr.contains("the API server's pod proxy answered 403")
            && stderr.contains(&format!(
                "the kubeconfig's user needs get, create and update on pods/proxy in namespace {ns} (`wirespeed k8s manifests --runner` prints that ClusterRole)"
            )),
        "{stderr}"
    );
    // Given once, not once per agent.
    let down: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(" is DOWN: "))
        .collect();
    let advised = down
        .iter()
        .filter(|l| l.contains("the kubeconfig's user needs"))
        .count();
    assert_eq!((down.len(), advised), (3, 1), "{stderr}");
    assert!(
        down[1..]
            .iter()
            .all(|l| l.ends_with("; what to do: as above")),
        "{stderr}"
    );
    runner_kubeconfig(&sw, admin, runner_kc, false);
}

#[test]
fn k8s_run_reaches_agents_only_through_the_api_server_and_measures_every_pair() {
    let test = "k8s_reach_api";
    let _heavy = common::heavy();
    let Some((mut live, key, nodes)) = setup(test, &[&[], &[], &[]]) else {
        return;
    };
    let lab = live.lab.as_ref().unwrap();
    let (sw, runner_ns) = (lab.ns("sw"), lab.ns("runner"));
    let env = live.env.as_ref().unwrap();
    let admin = env.kubeconfig.clone();
    let port = api_port(&admin);
    live.forward = Some(forward(&runner_ns, &sw, port));
    let runner_kc = live.dir.join("runner.kubeconfig");
    proxy_refused_then_granted(lab, &runner_kc, &key, &nodes, &live.dir, &admin);

    // From the runner's namespace no agent address answers.
    let target: SocketAddr = format!("{}:5380", nodes[0].pod_ip).parse().unwrap();
    let direct = spawn_in(&runner_ns, move || {
        TcpStream::connect_timeout(&target, Duration::from_secs(1)).map(|_| ())
    })
    .unwrap()
    .join()
    .unwrap()
    .unwrap();
    assert!(direct.is_err(), "the runner must not reach {target}");

    let ns = "ws-reach";
    let plays: Vec<(Network, Vec<FakeNode>)> = vec![
        (Network::Host, nodes.clone()),
        (Network::Pod, nodes.clone()),
    ];
    let kc = admin.clone();
    let player = spawn_in(&sw, move || {
        testkit::play_run(&kc, ns, &plays, Duration::from_secs(60))
    })
    .unwrap();
    let out = live.dir.join("out.json");
    let o = k8s_run(
        lab,
        "runner",
        &runner_kc,
        ns,
        &key,
        &out,
        &["--network", "host,pod", "--privileged-namespace"],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    println!("{}\n{stderr}", String::from_utf8_lossy(&o.stdout));
    player.join().unwrap().unwrap().expect("the test's kubelet");
    assert!(o.status.success(), "k8s run failed: {stderr}");
    assert!(
        stderr.contains("through the API server's pod proxy"),
        "{stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let tests = r["results"]["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 3, "all-to-all of 3 agents: {r}");
        for t in tests {
            assert!(t["error"].is_null(), "{t}");
            let bps = t["throughput_bps"].as_f64().unwrap();
            assert!((50e6..=210e6).contains(&bps), "{bps}");
        }
    }
    assert!(stderr.contains("deleted the"), "{stderr}");
    let left = leftovers(&sw, &admin, ns);
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_pair_that_fails_exits_3_naming_the_pair() {
    let test = "k8s_reach_fail";
    let _heavy = common::heavy();
    // n3's engine listens on 5301, not the 5300 its pod declares: every
    // test towards it fails; its HTTP API answers as usual.
    let Some((live, key, nodes)) = setup(test, &[&[], &[], &["--port", "5301"]]) else {
        return;
    };
    let lab = live.lab.as_ref().unwrap();
    let sw = lab.ns("sw");
    let admin = live.env.as_ref().unwrap().kubeconfig.clone();
    let ns = "ws-fail";
    let plays = vec![(Network::Pod, nodes)];
    let kc = admin.clone();
    let player = spawn_in(&sw, move || {
        testkit::play_run(&kc, ns, &plays, Duration::from_secs(60))
    })
    .unwrap();
    let out = live.dir.join("out.json");
    let extra = ["--network", "pod", "--pattern", "one-to-many"];
    let o = k8s_run(lab, "sw", &admin, ns, &key, &out, &extra);
    let stderr = String::from_utf8_lossy(&o.stderr);
    println!("{}\n{stderr}", String::from_utf8_lossy(&o.stdout));
    player.join().unwrap().unwrap().expect("the test's kubelet");
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("1 of 2 tests not measured (exit 3)"),
        "{stderr}"
    );
    let line = stderr
        .lines()
        .find(|l| l.contains("not measured: cross-node path, stream:"))
        .unwrap_or_else(|| panic!("no unmeasured line: {stderr}"));
    assert!(line.contains("stream: node-n1 -> node-n3"), "{line}");
    // The results are written all the same, the measured test included.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let tests = doc["runs"][0]["results"]["tests"].as_array().unwrap();
    assert_eq!(tests.iter().filter(|t| t["error"].is_null()).count(), 1);
    let left = leftovers(&sw, &admin, ns);
    assert!(left.is_empty(), "left behind: {left:?}");
}
