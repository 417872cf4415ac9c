//! `wirespeed lab up | exec | down` from a TOML file, as a user runs them.

use crate::common;
use common::{bin, namespaces_with, root_or_skip, temp_dir, ws};
use std::path::Path;
use std::process::Command;

/// `wirespeed lab exec NAME HOST --state-dir DIR -- CMD...`.
fn lab_exec(name: &str, host: &str, dir: &str, cmd: &[&str]) -> std::process::Output {
    let mut args = vec!["lab", "exec", name, host, "--state-dir", dir, "--"];
    args.extend_from_slice(cmd);
    ws(&args)
}

#[test]
fn lab_up_exec_down() {
    if !root_or_skip("lab_up_exec_down") {
        return;
    }
    let dir = temp_dir("labcli");
    let name = format!("lc-p{}-0", std::process::id());
    let file = dir.join("lab.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"{name}\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[link]]\na = \"a\"\nb = \"b\"\nmtu = 4000\nrate = \"100mbit\"\n"
        ),
    )
    .unwrap();
    let state = dir.join("state");
    let (f, s) = (file.to_str().unwrap(), state.to_str().unwrap());
    let out = ws(&["lab", "up", f, "--state-dir", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("eth0"), "{text}");
    assert!(Path::new("/run/netns").join(format!("{name}-a")).exists());
    // Bringing the same lab up twice is refused, and the first stays.
    let again = ws(&["lab", "up", f, "--state-dir", s]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    // exec runs in the host's namespace: it sees the lab's NIC.
    let out = lab_exec(&name, "a", s, &["cat", "/sys/class/net/eth0/mtu"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "4000");
    let bad_host = lab_exec(&name, "zz", s, &["true"]);
    assert!(!bad_host.status.success());
    assert!(String::from_utf8_lossy(&bad_host.stderr).contains("no host"));
    // exec passes the command's exit status through.
    let st = lab_exec(&name, "a", s, &["sh", "-c", "exit 7"]);
    assert_eq!(st.status.code(), Some(7));
    // A namespace removed behind the lab's back: a clear error, and down still works.
    assert!(
        Command::new("ip")
            .args(["netns", "del", &format!("{name}-b")])
            .status()
            .unwrap()
            .success()
    );
    let gone = lab_exec(&name, "b", s, &["true"]);
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(!gone.status.success());
    assert!(
        err.contains(&format!("namespace {name}-b of lab {name} is gone"))
            && err.contains("wirespeed lab down"),
        "{err}"
    );
    let out = ws(&["lab", "down", &name, "--state-dir", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!Path::new("/run/netns").join(format!("{name}-a")).exists());
    let gone = ws(&["lab", "down", &name, "--state-dir", s]);
    assert!(!gone.status.success(), "down of a lab that is not up fails");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_lab_file_names_the_line_and_field() {
    let dir = temp_dir("labbad");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\n[[host]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"nowhere\"\n",
    )
    .unwrap();
    let out = ws(&[
        "lab",
        "up",
        file.to_str().unwrap(),
        "--state-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 6") && err.contains("`b`") && err.contains("nowhere"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Removes the namespaces of a prefix on drop, also when the test fails.
struct NsGuard(String);

impl Drop for NsGuard {
    fn drop(&mut self) {
        for n in namespaces_with(&self.0) {
            let _ = Command::new("ip").args(["netns", "del", &n]).status();
        }
    }
}

/// Starts `wirespeed lab up FILE` and SIGKILLs it once namespace `first`
/// exists (the readiness signal that the build has begun).
fn kill_lab_up_mid_build(file: &str, state: &str, first: &str) {
    let mut child = Command::new(bin())
        .args(["lab", "up", file, "--state-dir", state])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !Path::new("/run/netns").join(first).exists() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    let st = child.wait().unwrap();
    assert!(
        Path::new("/run/netns").join(first).exists(),
        "the build never began"
    );
    assert!(!st.success(), "the build finished before the kill");
}

/// A lab file of `hosts` hosts (each with `extra` lines) in a temp dir,
/// its namespaces removed on drop.
struct ManyHosts {
    name: String,
    dir: std::path::PathBuf,
    file: String,
    state: String,
    _guard: NsGuard,
}

impl ManyHosts {
    fn new(prefix: &str, hosts: usize, extra: &str) -> ManyHosts {
        let dir = temp_dir(&format!("lab-{prefix}"));
        let name = format!("{prefix}-p{}-0", std::process::id());
        let mut text = format!("name = \"{name}\"\n");
        for i in 0..hosts {
            text.push_str(&format!("[[host]]\nname = \"h{i}\"\n{extra}"));
        }
        let file = dir.join("lab.toml");
        std::fs::write(&file, text).unwrap();
        let path = |p: std::path::PathBuf| p.to_str().unwrap().to_string();
        ManyHosts {
            _guard: NsGuard(format!("{name}-")),
            file: path(file),
            state: path(dir.join("state")),
            name,
            dir,
        }
    }
}

#[test]
fn a_killed_lab_up_is_removed_by_lab_down_or_the_next_lab_up() {
    if !root_or_skip("a_killed_lab_up") {
        return;
    }
    let hosts = 60;
    let lab = ManyHosts::new(
        "lk",
        hosts,
        "sysctl = { \"net.ipv4.tcp_slow_start_after_idle\" = \"0\" }\n",
    );
    let (name, dir, state) = (&lab.name, &lab.dir, &lab.dir.join("state"));
    let (f, s) = (lab.file.as_str(), lab.state.as_str());
    let first = format!("{name}-h0");

    kill_lab_up_mid_build(f, s, &first);
    let left = namespaces_with(&format!("{name}-")).len();
    assert!((1..hosts).contains(&left), "{left} namespaces left");
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state.join(format!("{name}.json"))).unwrap())
            .unwrap();
    assert_eq!(st["building"], true, "{st}");
    let out = ws(&["lab", "down", name, "--state-dir", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(namespaces_with(&format!("{name}-")), Vec::<String>::new());
    assert!(!state.join(format!("{name}.json")).exists());

    // Killed again: the next `lab up` of the name removes the leftovers first.
    kill_lab_up_mid_build(f, s, &first);
    let out = ws(&["lab", "up", f, "--state-dir", s]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("that a killed `lab up`"), "{err}");
    assert_eq!(namespaces_with(&format!("{name}-")).len(), hosts);
    let out = ws(&["lab", "down", name, "--state-dir", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(namespaces_with(&format!("{name}-")), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_lab_file_with_a_host_wide_sysctl_is_refused_before_anything_is_built() {
    let dir = temp_dir("labwide");
    let name = format!("lw-p{}-0", std::process::id());
    let _guard = NsGuard(format!("{name}-"));
    // The host's own value: even a build that got through would change nothing.
    let swappiness = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
    let file = dir.join("wide.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"{name}\"\n[[host]]\nname = \"a\"\nsysctl = {{ \"vm.swappiness\" = \"{}\" }}\n",
            swappiness.trim()
        ),
    )
    .unwrap();
    let (f, s) = (file.to_str().unwrap(), dir.to_str().unwrap());
    let out = ws(&["lab", "up", f, "--state-dir", s]);
    if out.status.success() {
        let _ = ws(&["lab", "down", &name, "--state-dir", s]);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a lab with vm.swappiness was built");
    assert!(
        err.contains("line 4")
            && err.contains("vm.swappiness")
            && err.contains("not per network namespace"),
        "{err}"
    );
    assert!(namespaces_with(&format!("{name}-")).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn endless_or_huge_description_files_are_refused_not_read() {
    let dir = temp_dir("labhuge");
    let big = dir.join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    let b = big.to_str().unwrap();
    for (args, needle) in [
        (vec!["lab", "up", "/dev/zero"], "not a regular file"),
        (vec!["lab", "up", b], "larger than 1024 KiB"),
        (
            vec!["experiment", "/dev/zero", "--dry-run"],
            "not a regular file",
        ),
        (vec!["experiment", b, "--dry-run"], "larger than 1024 KiB"),
        (
            vec!["tune", "plan", "--profile", "/dev/zero"],
            "not a regular file",
        ),
        (vec!["tune", "plan", "--profile", b], "larger than 1024 KiB"),
    ] {
        let t = std::time::Instant::now();
        let out = ws(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_lab_ups_of_one_name_at_once_leave_one_whole_lab() {
    if !root_or_skip("two_lab_ups_at_once") {
        return;
    }
    let hosts = 12;
    let lab = ManyHosts::new("l2", hosts, "");
    let (name, dir) = (&lab.name, &lab.dir);
    let (f, s) = (lab.file.as_str(), lab.state.as_str());
    let kids: Vec<std::process::Child> = (0..2)
        .map(|_| {
            Command::new(bin())
                .args(["lab", "up", f, "--state-dir", s])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<std::process::Output> = kids
        .into_iter()
        .map(|k| k.wait_with_output().unwrap())
        .collect();
    let won = outs.iter().filter(|o| o.status.success()).count();
    let errs: Vec<String> = outs
        .iter()
        .filter(|o| !o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    assert_eq!(won, 1, "exactly one build wins: {errs:?}");
    assert!(
        errs[0].contains("is being built by process") || errs[0].contains("exists already"),
        "{errs:?}"
    );
    assert_eq!(
        namespaces_with(&format!("{name}-")).len(),
        hosts,
        "the loser removed namespaces of the winner: {errs:?}"
    );
    let out = ws(&["lab", "down", name, "--state-dir", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(namespaces_with(&format!("{name}-")).is_empty());
    let _ = std::fs::remove_dir_all(dir);
}
