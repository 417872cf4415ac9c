//! The command line on bad input: a clear message and a non-zero exit,
//! never a panic or a hang. Loopback only; no privileges needed.

mod common;
#[path = "../../wirespeed-engine/tests/common/ports.rs"]
mod ports;
use common::{assert_clean_failure, bin, first_result, serve, ws};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A key file with `mode`, removed on drop.
struct KeyFile(PathBuf);

impl KeyFile {
    fn new(name: &str, body: &str, mode: u32) -> KeyFile {
        let p = std::env::temp_dir().join(format!("ws-{name}-{}", std::process::id()));
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        KeyFile(p)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn bad_flags_get_clear_errors() {
    assert_clean_failure(
        &["bench", "127.0.0.1", "-w", "rr", "--size", "4x"],
        "bad size",
    );
    assert_clean_failure(&["bench", "127.0.0.1", "--paths", "=10.0.0.1"], "bad path");
    assert_clean_failure(&["bench", "127.0.0.1", "--duration=-1s"], "duration");
    assert_clean_failure(&["bench", "127.0.0.1", "-F", "0"], "at least 1");
    assert_clean_failure(&["bench", "127.0.0.1", "--format", "xml"], "format");
    assert_clean_failure(&["bench", "127.0.0.1", "--pin", "3-1"], "cpu list");
    assert_clean_failure(
        &["bench", "127.0.0.1", "--size", "1k"],
        "request/response workloads (rr, crr, udp-rr)",
    );
    assert_clean_failure(
        &["bench", "127.0.0.1", "-w", "udp-stream", "-l", "70000"],
        "between 28",
    );
    assert_clean_failure(
        &["bench", "127.0.0.1", "-w", "udp-rr", "--rr-timeout", "0s"],
        "timeout",
    );
    assert_clean_failure(&["bench", "127.0.0.1", "--pacing", "fast"], "bad rate");
    assert_clean_failure(&["bench", "[::1"], "bad address");
    assert_clean_failure(&["bench", "-w", "nope", "127.0.0.1"], "invalid value");
    assert_clean_failure(&["frobnicate"], "unrecognized");
}

#[test]
fn no_server_is_a_clear_error() {
    // Port 1 on loopback: nothing listens there.
    assert_clean_failure(
        &["bench", "127.0.0.1:1", "-d", "1s"],
        "is `wirespeed serve` running",
    );
}

#[test]
fn short_key_file_is_refused() {
    let k = KeyFile::new("key-short", "short", 0o600);
    assert_clean_failure(
        &["serve", "--port", "0", "--key-file", k.path()],
        "at least 16",
    );
}

#[test]
fn loopback_bench_with_key_sweep_and_formats() {
    let key = KeyFile::new("key-ok", "a-shared-secret-of-some-length\n", 0o600);
    let k = key.path();
    let mut cmd = Command::new(bin());
    cmd.args([
        "serve",
        "--bind",
        "127.0.0.1",
        "--port",
        "0",
        "--key-file",
        k,
    ]);
    let server = serve(cmd);
    let line = server.banner.clone();
    let addr = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("address in line")
        .to_string();
    // Without the key: refused.
    let out = ws(&["bench", &addr, "-d", "0.3s", "--warmup", "0s"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("key"));
    // A size sweep: one result per size, in order.
    let out = ws(&[
        "bench",
        &addr,
        "--key-file",
        k,
        "-w",
        "rr",
        "--size",
        "1,4k,64k",
        "-d",
        "0.3s",
        "--warmup",
        "0s",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 3);
    let sizes: Vec<u64> = rs
        .iter()
        .map(|r| r["spec"]["request_size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, vec![1, 4096, 65536]);
    assert!(
        rs.iter()
            .all(|r| r["transactions_per_s"].as_f64().unwrap() > 0.0)
    );
    // The table names every size.
    let out = ws(&[
        "bench",
        &addr,
        "--key-file",
        k,
        "-w",
        "rr",
        "--size",
        "1,4k",
        "-d",
        "0.3s",
        "--warmup",
        "0s",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("4096") || text.contains("4 KiB") || text.contains("4k"),
        "{text}"
    );
    // Reverse and bidir from the CLI.
    let r = first_result(&ws(&[
        "bench",
        &addr,
        "--key-file",
        k,
        "-R",
        "-d",
        "0.3s",
        "--warmup",
        "0s",
        "--json",
    ]));
    assert_eq!(r["directions"][0]["direction"], "reverse");
    let r = first_result(&ws(&[
        "bench",
        &addr,
        "--key-file",
        k,
        "--bidir",
        "-d",
        "0.3s",
        "--warmup",
        "0s",
        "--json",
    ]));
    assert_eq!(r["directions"].as_array().unwrap().len(), 2);
}

#[test]
fn huge_durations_are_clear_errors_not_panics() {
    // Parsed before anything touches the host; today's main panics in
    // Duration::from_secs_f64 here.
    let dir = std::env::temp_dir().join(format!("ws-state-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    assert_clean_failure(
        &[
            "tune",
            "apply",
            "--state-dir",
            d,
            "--confirm-within",
            "99999999999999999999h",
        ],
        "at most",
    );
    assert_clean_failure(
        &["bench", "127.0.0.1:1", "--timeout", "99999999999999999999h"],
        "at most",
    );
    assert_clean_failure(
        &["serve", "--port", "0", "--idle-timeout", "5000000000000h"],
        "at most",
    );
    assert_clean_failure(&["bench", "127.0.0.1:1", "-d", "1e400s"], "duration");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pacing_below_8_bits_per_second_is_refused() {
    assert_clean_failure(&["bench", "127.0.0.1:1", "--pacing", "7bit"], "pacing");
    assert_clean_failure(&["bench", "127.0.0.1:1", "--pacing", "0.5"], "pacing");
}

#[test]
fn os_errors_are_printed_once() {
    let out = ws(&["bench", "127.0.0.1:1", "-d", "1s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
}

// Item 6: key files are read as ssh reads private keys, and bounded.
#[test]
fn unsafe_or_huge_key_files_are_refused() {
    let body = "a-shared-secret-of-some-length\n";
    for (mode, who) in [(0o666, "every user"), (0o620, "its group")] {
        let k = KeyFile::new("key-w", body, mode);
        let out = ws(&["bench", "127.0.0.1:1", "--key-file", k.path()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains(&format!("writable by {who}")), "{err}");
        assert!(err.contains(&format!("chmod 600 {}", k.path())), "{err}");
        assert!(err.contains(&format!("{mode:03o}")), "{err}");
    }
    // World-readable: taken, with a warning on stderr.
    let k = KeyFile::new("key-r", body, 0o644);
    let out = ws(&["bench", "127.0.0.1:1", "--key-file", k.path()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: key file") && err.contains("readable by every user"),
        "{err}"
    );
    assert!(err.contains("is `wirespeed serve` running"), "{err}");
    // Private: no warning.
    let k = KeyFile::new("key-p", body, 0o600);
    let out = ws(&["bench", "127.0.0.1:1", "--key-file", k.path()]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    // An endless file fails fast.
    let t0 = Instant::now();
    assert_clean_failure(
        &["serve", "--port", "0", "--key-file", "/dev/zero"],
        "more than 4096 bytes",
    );
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}

/// Runs the binary, killing it after `limit`; its output and run time.
fn run_bounded(args: &[&str], limit: Duration) -> (std::process::Output, Duration) {
    let t0 = Instant::now();
    let mut child = Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    (out, t0.elapsed())
}

// Item 7: --timeout bounds each control answer as a whole: a server that
// trickles its challenge a byte at a time cannot stretch it.
#[test]
fn client_timeout_bounds_a_trickled_answer() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let Ok((mut s, _)) = l.accept() else { return };
        let mut hello = [0u8; 64];
        let _ = s.read(&mut hello);
        // A challenge frame whose bytes come one every 300 ms (for 15 s).
        let mut frame = vec![0, 0, 0, 200];
        frame.extend(std::iter::repeat_n(b' ', 200));
        for b in frame.into_iter().take(50) {
            if s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let (out, took) = run_bounded(
        &["bench", &addr, "--timeout", "2s", "-d", "1s"],
        Duration::from_secs(12),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(took < Duration::from_millis(3500), "took {took:?}: {err}");
    assert!(
        err.contains("timed out") && err.contains("challenge"),
        "{err}"
    );
    server.join().unwrap();
}

/// utime + stime of a process, seconds.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    (f[0] + f[1]) as f64 / 100.0
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn banner_addr(banner: &str) -> String {
    banner
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("address in banner")
        .to_string()
}

/// Whether prlimit and setpriv (util-linux) are here; says so if not.
fn can_limit_fds() -> bool {
    let ok = Command::new("prlimit").arg("--version").output().is_ok()
        && Command::new("setpriv").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipping: needs prlimit and setpriv (util-linux)");
    }
    ok
}

/// `wirespeed serve` on 127.0.0.1 with at most 48 open files. setpriv
/// drops CAP_SYS_RESOURCE so the server cannot raise the hard limit that
/// prlimit sets.
fn serve_with_48_fds(extra: &[&str]) -> common::ServerProc {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--bounding-set",
        "-sys_resource",
        "--inh-caps",
        "-sys_resource",
        "prlimit",
        "--nofile=48:48",
        bin(),
        "serve",
        "--bind",
        "127.0.0.1",
        "--port",
        "0",
    ])
    .args(extra);
    serve(cmd)
}

// Item 4: out of file descriptors, the server answers `busy` with the
// reason at once instead of spinning or going silent, and its default
// flow limit comes from its open-file limit.
#[test]
fn out_of_descriptors_the_server_says_busy_and_stays_idle() {
    if !can_limit_fds() {
        return;
    }
    // The default flow limit follows the descriptor limit.
    let srv = serve_with_48_fds(&[]);
    let line = srv.wait_for("flows per test", 5);
    assert!(
        line.contains("at most 12 flows") && line.contains("limit 48"),
        "{line}"
    );
    drop(srv);
    // With a flow limit above it: a client asking for more flows than
    // there are descriptors gets busy at once, and the server stays idle.
    let srv = serve_with_48_fds(&[
        "--max-flows",
        "1000",
        "--max-unauthenticated",
        "100",
        "--max-per-source",
        "100",
        "--handshake-timeout",
        "60s",
    ]);
    let pid = srv.proc.0.id();
    let addr = banner_addr(&srv.banner);
    let cpu0 = cpu_secs(pid);
    let (out, took) = run_bounded(
        &["bench", &addr, "-F", "80", "-d", "1s", "--warmup", "0s"],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("busy") && err.contains("file descriptors"),
        "{err}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    let cpu = cpu_secs(pid) - cpu0;
    assert!(cpu < 0.5, "the server used {cpu} s of CPU in {took:?}");
    // Hold handshakes until the descriptors run out: the next client is
    // told so, not met with silence, and the server does not spin.
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..60 {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(150)))
            .unwrap();
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            Ok(n) if n > 0 => {
                refused = Some(String::from_utf8_lossy(&buf[..n]).to_string());
                break;
            }
            _ => held.push(s),
        }
    }
    let refused = refused.expect("never refused");
    assert!(
        refused.contains("busy") && refused.contains("file descriptors"),
        "{refused}"
    );
    let cpu0 = cpu_secs(pid);
    let t0 = Instant::now();
    for _ in 0..10 {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 512];
        let n = s.read(&mut buf).unwrap_or(0);
        assert!(String::from_utf8_lossy(&buf[..n]).contains("file descriptors"));
        std::thread::sleep(Duration::from_millis(100));
    }
    let cpu = cpu_secs(pid) - cpu0;
    assert!(cpu < 0.3, "{cpu} s of CPU in {:?}", t0.elapsed());
    // Freed descriptors serve again: once the server has closed every
    // connection it accepted.
    drop(held);
    let control: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    common::cluster::wait_for("the server to close the held connections", 10, || {
        (ports::connections_on(&pid.to_string(), control) == 0).then_some(())
    });
    let out = ws(&["bench", &addr, "-d", "0.2s", "--warmup", "0s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// Item 4: a client killed mid-test has its flows closed at once.
#[test]
fn a_killed_clients_descriptors_are_released_within_two_seconds() {
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--bind", "127.0.0.1", "--port", "0"]);
    let srv = serve(cmd);
    let pid = srv.proc.0.id();
    let addr = banner_addr(&srv.banner);
    let base = fd_count(pid);
    let mut client = common::Proc(
        Command::new(bin())
            .args(["bench", &addr, "-F", "200", "-d", "30s", "--warmup", "0s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    srv.wait_for("started", 10);
    assert!(fd_count(pid) >= base + 200, "{} fds", fd_count(pid));
    client.0.kill().unwrap();
    let t0 = Instant::now();
    while fd_count(pid) > base + 2 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "{} fds after {:?} (baseline {base})",
        fd_count(pid),
        t0.elapsed()
    );
}

// Found: out of descriptors during a crr test, the server's workers spun
// on the data listener they could not accept from. They now back off.
#[test]
fn out_of_descriptors_in_a_crr_test_the_workers_do_not_spin() {
    if !can_limit_fds() {
        return;
    }
    let srv = serve_with_48_fds(&["--preamble-timeout", "30s"]);
    let pid = srv.proc.0.id();
    let addr = banner_addr(&srv.banner);
    let control: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let mut client = common::Proc(
        Command::new(bin())
            .args(["bench", &addr, "-w", "crr", "-d", "4s", "--warmup", "0s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    srv.wait_for("started", 10);
    let port = ports::listening_ports(&pid.to_string())
        .into_iter()
        .find(|p| *p != control)
        .expect("the test's data port");
    // Idle connections until the server has no descriptor left.
    let held: Vec<TcpStream> = (0..60)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    assert!(held.len() > 40);
    common::cluster::wait_for("the server to run out of its 48 descriptors", 10, || {
        (fd_count(pid) >= 48).then_some(())
    });
    let cpu0 = cpu_secs(pid);
    std::thread::sleep(Duration::from_secs(1));
    let cpu = cpu_secs(pid) - cpu0;
    assert!(cpu < 0.5, "the server used {cpu} s of CPU in 1 s");
    drop(held);
    let t0 = Instant::now();
    while client.0.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        client.0.try_wait().unwrap().is_some(),
        "the client never ended"
    );
}
