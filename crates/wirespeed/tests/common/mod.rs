//! Shared by the binary's integration tests: the binary's path, a server
//! child process killed on drop, and JSON helpers.
#![allow(dead_code)]

pub mod cluster;
pub mod install;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// Tests that measure throughput take this lock so they do not share the
/// two cores with each other.
pub static HEAVY: Mutex<()> = Mutex::new(());

/// Takes the heavy-test lock, surviving a poisoned lock.
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Path of the wirespeed binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

/// The previous release's binary: k8s/testenv/prev-release.sh builds it
/// once from its pinned commit and caches it under target/.
pub fn prev_release() -> String {
    let out = Command::new(cluster::repo().join("k8s/testenv/prev-release.sh"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run k8s/testenv/prev-release.sh");
    assert!(
        out.status.success(),
        "the previous release did not build (k8s/testenv/prev-release.sh; its output is above)"
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A child process killed (and reaped) on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `wirespeed agent --name HOST` in lab host `host` (HTTP on
/// 5380, engine on all addresses, key `key`) and waits for its
/// "listening" line.
pub fn start_agent(lab: &wirespeed_lab::Lab, host: &str, key: &std::path::Path) -> Proc {
    start_agent_with(lab, host, key, &[])
}

/// [`start_agent`] with `extra` agent flags.
pub fn start_agent_with(
    lab: &wirespeed_lab::Lab,
    host: &str,
    key: &std::path::Path,
    extra: &[&str],
) -> Proc {
    let mut cmd = lab.command(host, bin());
    cmd.args([
        "agent",
        "--name",
        host,
        "--http",
        "0.0.0.0:5380",
        "--bind",
        "0.0.0.0",
    ])
    .args(extra)
    .arg("--key-file")
    .arg(key)
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn agent");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let agent = Proc(child);
    assert!(
        line.contains("listening"),
        "agent {host} did not start: {line:?}"
    );
    agent
}

/// A running `wirespeed serve`: its process and its log lines.
pub struct ServerProc {
    /// The process, killed on drop.
    pub proc: Proc,
    /// The listening line it printed first.
    pub banner: String,
    lines: Receiver<String>,
}

impl ServerProc {
    /// The loopback `127.0.0.1:PORT` its listening line names.
    pub fn loopback_addr(&self) -> String {
        self.banner
            .split_whitespace()
            .find(|w| w.starts_with("127.0.0.1:"))
            .expect("a 127.0.0.1 address in the listening line")
            .to_string()
    }

    /// Waits for a log line containing `needle` (the server's readiness
    /// signal for test start, end and failure); panics after `secs`.
    pub fn wait_for(&self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => continue,
                Err(_) => panic!("the server printed no line with {needle:?} within {secs} s"),
            }
        }
    }
}

/// Starts `wirespeed serve` via `cmd`; returns once it prints its
/// listening line (the readiness signal).
pub fn serve(mut cmd: Command) -> ServerProc {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn server");
    let out = child.stdout.take().unwrap();
    let mut reader = BufReader::new(out);
    let mut banner = String::new();
    reader.read_line(&mut banner).unwrap();
    assert!(
        banner.contains("listening on"),
        "server did not start: {banner:?}"
    );
    // Keep draining stdout so the server never blocks on a full pipe.
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for l in reader.lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    ServerProc {
        proc: Proc(child),
        banner,
        lines,
    }
}

/// Runs a command and returns its output.
pub fn run(mut cmd: Command) -> Output {
    cmd.output().expect("run command")
}

/// Runs the binary with these arguments (strings or paths).
pub fn ws<A: AsRef<std::ffi::OsStr>>(args: &[A]) -> Output {
    let mut c = Command::new(bin());
    c.args(args);
    run(c)
}

/// Asserts that the binary fails on these arguments, without a panic, with
/// `needle` (lower case) in its error.
pub fn assert_clean_failure(args: &[&str], needle: &str) {
    let out = ws(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        err.to_lowercase().contains(needle),
        "{args:?}: expected {needle:?} in {err}"
    );
}

/// Parses `--json` output and returns the first result.
pub fn first_result(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "bench failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["schema_version"], 1);
    v["results"][0].clone()
}

/// A float field of a JSON value.
pub fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[allow(unused_imports)]
pub use wirespeed_testkit::need_root as root_or_skip;

/// A 2-host lab with `nics` links capped at `rate`, and a server on host b.
pub fn lab_with_server(
    prefix: &str,
    nics: usize,
    rate: Option<&str>,
) -> (wirespeed_lab::Lab, ServerProc) {
    let spec = wirespeed_lab::LabSpec::two_hosts(&wirespeed_lab::Lab::unique(prefix), nics, rate);
    lab_spec_with_server(&spec)
}

/// The lab of `spec` with a server on host b (port 5300).
pub fn lab_spec_with_server(spec: &wirespeed_lab::LabSpec) -> (wirespeed_lab::Lab, ServerProc) {
    let lab = wirespeed_lab::Lab::up(spec).expect("lab up");
    let mut cmd = lab.command("b", bin());
    cmd.args(["serve", "--port", "5300", "--idle-timeout", "3s"]);
    (lab, serve(cmd))
}

/// The `LOCAL=REMOTE` path over link `link` from host a to host b.
pub fn path(lab: &wirespeed_lab::Lab, link: usize) -> String {
    format!(
        "{}={}",
        lab.addr4("a", link).unwrap(),
        lab.addr4("b", link).unwrap()
    )
}

/// A fresh directory under the temp dir for one test: `ws-TAG-PID`.
pub fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ws-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("create a temp dir");
    d
}

/// The namespaces in /run/netns whose name contains `part`.
pub fn namespaces_with(part: &str) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(part))
                .collect()
        })
        .unwrap_or_default()
}

/// Starts `wirespeed bench SERVER ARGS --interval 0.2s` in host a of `lab`
/// and SIGKILLs it once its first interval line says traffic flows: a
/// client that vanishes mid-test without a goodbye on any socket.
pub fn kill_mid_test(lab: &wirespeed_lab::Lab, args: &[&str]) {
    use std::io::{BufRead, BufReader};
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server, "--interval", "0.2s"])
        .args(args)
        .stdout(Stdio::piped());
    let mut child = Proc(cmd.spawn().unwrap());
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("bit/s"), "no interval line: {line:?}");
    child.0.kill().unwrap();
    child.0.wait().unwrap();
}

/// A star lab: each of `nodes` has `links` links to a routing host `sw`
/// (ip_forward on); link `n` of node `i` is lab link `links * i + n`, in
/// 10.(base+n).i.0/24, with a route to 10.(base+n).0.0/16 over it. The
/// `extra` hosts (after the nodes, before `sw`) have no link; `tweak`
/// sets each link's rate, MTU and the like.
pub fn star_lab(
    name: &str,
    nodes: &[&str],
    links: usize,
    base: usize,
    extra: &[&str],
    tweak: impl Fn(&str, &mut wirespeed_lab::LinkSpec),
) -> wirespeed_lab::LabSpec {
    use wirespeed_lab::{HostSpec, LabSpec, LinkSpec, RouteSpec};
    let mut hosts: Vec<HostSpec> = nodes
        .iter()
        .chain(extra)
        .chain(&["sw"])
        .map(|h| HostSpec {
            name: h.to_string(),
            ..HostSpec::default()
        })
        .collect();
    if let Some(sw) = hosts.last_mut() {
        sw.sysctl.insert("net.ipv4.ip_forward".into(), "1".into());
    }
    let mut spec = LabSpec {
        name: name.into(),
        ..LabSpec::default()
    };
    for (i, h) in nodes.iter().enumerate() {
        for n in 0..links {
            let mut l = LinkSpec {
                a: h.to_string(),
                b: "sw".into(),
                subnet: Some(format!("10.{}.{i}.0/24", base + n)),
                ..LinkSpec::default()
            };
            tweak(h, &mut l);
            spec.links.push(l);
            spec.routes.push(RouteSpec {
                host: h.to_string(),
                dst: format!("10.{}.0.0/16", base + n),
                links: vec![links * i + n],
            });
        }
    }
    spec.hosts = std::mem::take(&mut hosts);
    spec
}

/// Sends SIGTERM to `child` and waits up to `limit` for it to exit: its
/// status and how long it took, or None when it still runs (then it is
/// killed).
pub fn terminate(
    child: &mut Child,
    limit: Duration,
) -> Option<(std::process::ExitStatus, Duration)> {
    let t = Instant::now();
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(sent, "kill -TERM {}", child.id());
    while t.elapsed() < limit {
        if let Ok(Some(st)) = child.try_wait() {
            return Some((st, t.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}
