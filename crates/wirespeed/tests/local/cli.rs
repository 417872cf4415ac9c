//! The command line on bad input: a clear message and a non-zero exit,
//! never a panic or a hang. Loopback only; no privileges needed.

use crate::common;
use crate::ports;
use common::{assert_clean_failure, bin, first_result, serve, ws};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
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
    // A closed set fails in clap, naming the flag and listing the choices.
    assert_clean_failure(
        &["bench", "127.0.0.1", "--format", "bogus"],
        "invalid value 'bogus' for '--format <format>'",
    );
    assert_clean_failure(
        &["bench", "127.0.0.1", "--format", "bogus"],
        "[possible values: table, json, kv, iperf3-json]",
    );
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

/// Every closed set outside bench (patterns, output formats, reach, the
/// optimize goal)
/// fails in clap too, naming the flag and listing the choices, before
/// anything reads a file or a cluster; an old spelling (`incast`) is
/// still taken without being listed.
#[test]
fn closed_sets_are_typed_at_parse_time() {
    for (args, choices) in [
        (
            &[
                "fleet",
                "run",
                "--agents",
                "/nonexistent",
                "--pattern",
                "mesh",
            ][..],
            "[possible values: pairs, ring, all-to-all, one-to-many, many-to-one]",
        ),
        (
            &["k8s", "run", "--pattern", "mesh"][..],
            "[possible values: pairs, ring, all-to-all, one-to-many, many-to-one]",
        ),
        (
            &["k8s", "run", "--reach", "vpn"][..],
            "[possible values: api, direct]",
        ),
        (
            &["k8s", "manifests", "--output", "xml"][..],
            "[possible values: yaml, json]",
        ),
        (
            &["k8s", "watch", "manifests", "--output", "xml"][..],
            "[possible values: yaml, json]",
        ),
        (
            &["model", "--format", "csv"][..],
            "[possible values: table, json]",
        ),
        (
            &["report", "x.json", "--format", "pdf"][..],
            "[possible values: html, md, csv]",
        ),
        (
            &["optimize", "127.0.0.1", "--goal", "speed"][..],
            "[possible values: throughput, bidir, rr]",
        ),
        (
            &["bench", "127.0.0.1", "-w", "tcp"][..],
            "[possible values: stream, rr, crr, udp-stream, udp-rr]",
        ),
        (
            &["bench", "127.0.0.1", "--direction", "up"][..],
            "[possible values: forward, reverse, bidir]",
        ),
        (
            &["bench", "127.0.0.1", "--io", "aio"][..],
            "[possible values: epoll, uring]",
        ),
        (
            &["k8s", "run", "--workloads", "stream,tcp"][..],
            "[possible values: stream, rr, crr, udp-stream, udp-rr]",
        ),
        (
            &["k8s", "run", "--network", "host,overlay"][..],
            "[possible values: host, pod, dra]",
        ),
        (
            &["k8s", "watch", "apply", "--network", "sriov"][..],
            "[possible values: host, pod, dra]",
        ),
        (
            &["fleet", "watch", "--synthetic", "4", "--probes", "rr,ping"][..],
            "[possible values: rr, crr, rr-64k]",
        ),
    ] {
        assert_clean_failure(args, choices);
        assert_clean_failure(args, "invalid value");
    }
    // Lists and values of an open set are checked at parse time too.
    for (args, why) in [
        (&["k8s", "run", "--paths", "host,tunnel"][..], "not a path"),
        (&["k8s", "run", "--sweep-sizes", "1k,big"][..], "big"),
        (&["k8s", "run", "--sweep-flows", "1,four"][..], "four"),
        (
            &["k8s", "run", "--ready-timeout", "soon"][..],
            "--ready-timeout",
        ),
        (&["serve", "--idle-timeout", "5x"][..], "--idle-timeout"),
        (&["serve", "--max-msg-size", "huge"][..], "--max-msg-size"),
        (&["serve", "--data-ports", "9-1"][..], "--data-ports"),
        (&["model", "--nic-cap", "fast"][..], "--nic-cap"),
        (
            &["fleet", "watch", "--synthetic", "4", "--retain", "forever"][..],
            "--retain",
        ),
    ] {
        assert_clean_failure(args, why);
        assert_clean_failure(args, "invalid value");
    }
    let out = Command::new(bin())
        .args(["fleet", "plan", "--synthetic", "4", "--pattern", "incast"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("many-to-one"));
}

// --policy-load and --interference are refused before anything touches a
// cluster (the
// kubeconfig named does not exist): levels out of order, no pod path to
// load, the run's own policy turned off, with --resume.
#[test]
fn policy_load_and_interference_flags_are_checked_before_the_cluster() {
    let run = |more: &[&str], want: &str| {
        let mut args = vec!["k8s", "run", "--image", "127.0.0.1:1/ws:t"];
        args.extend_from_slice(&["--kubeconfig", "/nonexistent/kubeconfig"]);
        args.extend_from_slice(more);
        assert_clean_failure(&args, want);
    };
    run(&["--policy-load", "100,0"], "ascending");
    run(&["--policy-load", "0,9000"], "at most 5000");
    run(
        &["--policy-load", "0,x"],
        "invalid value 'x' for '--policy-load",
    );
    run(
        &["--policy-load", "0,100", "--paths", "host"],
        "add --paths cross-node",
    );
    run(
        &["--policy-load", "0,100", "--no-network-policy"],
        "drop --no-network-policy",
    );
    run(
        &[
            "--policy-load",
            "0,100",
            "--resume",
            "/nonexistent/out.json",
        ],
        "cannot be used with",
    );
    // --interference too: a request/response victim, K ascending, not
    // with --policy-load.
    run(
        &["--interference", "0,2"],
        "use -w rr (or crr, udp-rr) alone",
    );
    run(&["-w", "rr", "--interference", "2,1"], "ascending");
    run(
        &[
            "-w",
            "rr",
            "--interference",
            "0,2",
            "--policy-load",
            "0,100",
        ],
        "cannot be used with",
    );
    run(&["--loader", "same"], "--interference");
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
    let addr = server.loopback_addr();
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

/// Whether prlimit and setpriv (util-linux) are here; says so if not.
fn can_limit_fds() -> bool {
    let ok = Command::new("prlimit").arg("--version").output().is_ok()
        && Command::new("setpriv").arg("--version").output().is_ok();
    wirespeed_testkit::require(
        ok,
        "needs prlimit and setpriv (util-linux)",
        "the fd limit test",
    )
}

/// `wirespeed serve` on 127.0.0.1 with at most 48 open files.
fn serve_with_48_fds(extra: &[&str]) -> common::ServerProc {
    serve_with_fds(48, extra)
}

/// `wirespeed serve` on 127.0.0.1 with at most `n` open files. setpriv
/// drops CAP_SYS_RESOURCE so the server cannot raise the hard limit that
/// prlimit sets.
fn serve_with_fds(n: u32, extra: &[&str]) -> common::ServerProc {
    let nofile = format!("--nofile={n}:{n}");
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--bounding-set",
        "-sys_resource",
        "--inh-caps",
        "-sys_resource",
        "prlimit",
        &nofile,
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
        "--max-connections",
        "100",
        "--handshake-timeout",
        "60s",
        "--idle-timeout",
        "60s",
    ]);
    let pid = srv.proc.0.id();
    let addr = srv.loopback_addr();
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
    // Hold handshakes: they get an eighth of the descriptor limit (6
    // here), the oldest making room for the next (told `busy`), so a
    // client that authenticates is still served, and the server does not
    // spin.
    let cpu0 = cpu_secs(pid);
    let mut held: Vec<TcpStream> = (0..60)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    held[0]
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 512];
    let n = held[0].read(&mut buf).unwrap_or(0);
    let told = String::from_utf8_lossy(&buf[..n]);
    assert!(
        told.contains("busy") && told.contains("dropped to make room"),
        "{told}"
    );
    let cpu = cpu_secs(pid) - cpu0;
    assert!(cpu < 0.3, "{cpu} s of CPU holding 60 handshakes");
    let out = ws(&["bench", &addr, "-d", "0.2s", "--warmup", "0s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(held);
    // As authenticated connections take the descriptors, the handshakes
    // still open (3, below their share) make room; with none left to
    // drop, the next client is told the server is out of descriptors,
    // not met with silence.
    let waiting: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    let cfg = wirespeed_engine::ClientConfig::new(&addr);
    let mut authed = Vec::new();
    let mut refused = None;
    for _ in 0..60 {
        match wirespeed_engine::testing::Control::connect(&cfg) {
            Ok(c) => authed.push(c),
            Err(e) => {
                refused = Some(e.to_string());
                break;
            }
        }
    }
    let refused = refused.expect("never refused");
    assert!(
        refused.contains("busy") && refused.contains("file descriptors"),
        "{refused}"
    );
    for mut s in waiting {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let n = s.read(&mut buf).unwrap_or(0);
        let told = String::from_utf8_lossy(&buf[..n]);
        assert!(told.contains("dropped to make room"), "{told}");
    }
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
    drop(authed);
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
    let addr = srv.loopback_addr();
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
    let addr = srv.loopback_addr();
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

/// A connection to `to` from local address `from` that never sends a
/// byte (the engine's data-socket code binds the source address).
fn silent_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    use wirespeed_engine::testing::{LocalBind, ResolvedPath, connect_flow};
    let path = ResolvedPath {
        local: LocalBind::Addr(from),
        remote: to,
    };
    let spec = wirespeed_types::TestSpec::default();
    connect_flow(&path, &spec, 0, &[], Duration::from_secs(2))
        .unwrap_or_else(|e| panic!("connect from {from}: {e}"))
        .into()
}

// Found: under `ulimit -n 128`, 100 silent connections from 100
// addresses took every descriptor and the server refused a keyed client
// "out of file descriptors". Handshakes now get a share of the limit and
// the oldest makes room, so a client that completes its handshake is
// served while the silent ones are still connected.
#[test]
fn silent_handshakes_cannot_lock_a_keyed_client_out_under_a_low_fd_limit() {
    if !can_limit_fds() {
        return;
    }
    let key = KeyFile::new("key-fds", "a-shared-secret-of-some-length\n", 0o600);
    let srv = serve_with_fds(
        128,
        &["--key-file", key.path(), "--handshake-timeout", "60s"],
    );
    let addr = srv.loopback_addr();
    let to: SocketAddr = addr.parse().unwrap();
    let held: Vec<TcpStream> = (2..102u8)
        .map(|i| silent_from(IpAddr::from([127, 0, 0, i]), to))
        .collect();
    let (out, took) = run_bounded(
        &[
            "bench",
            &addr,
            "--key-file",
            key.path(),
            "-d",
            "0.3s",
            "--warmup",
            "0s",
        ],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the keyed client was refused: {err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    drop(held);
}

/// The lines a child writes on stdout, as they come.
fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// A --json-stream line as JSON.
fn event(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

// Found: a server killed mid-test left --json-stream without an end or
// an error event. Now the stream ends with an "error" event carrying the
// reason (in iperf3's format followed by an empty "end", as iperf3 3.17+
// writes it), and bench exits non-zero.
#[test]
fn json_stream_ends_with_an_error_event_when_the_server_dies_mid_test() {
    for extra in [&[][..], &["--format", "iperf3-json"]] {
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--bind", "127.0.0.1", "--port", "0"]);
        let mut srv = serve(cmd);
        let addr = srv.loopback_addr();
        let mut client = common::Proc(
            Command::new(bin())
                .args(["bench", &addr, "--json-stream", "-d", "30s"])
                .args(["--warmup", "0s", "-i", "0.2s"])
                .args(extra)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let lines = stdout_lines(&mut client.0);
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !seen
            .iter()
            .any(|v: &serde_json::Value| v["event"] == "interval")
        {
            let left = deadline.saturating_duration_since(Instant::now());
            seen.push(event(&lines.recv_timeout(left).expect("an interval event")));
        }
        srv.proc.0.kill().unwrap();
        srv.proc.0.wait().unwrap();
        let t0 = Instant::now();
        while client.0.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = client.0.try_wait().unwrap().expect("bench still running");
        assert!(!status.success(), "{extra:?}: bench exited 0");
        // The pipe ends with bench: every line is in once the reader stops.
        while let Ok(l) = lines.recv_timeout(Duration::from_secs(5)) {
            seen.push(event(&l));
        }
        let names: Vec<&str> = seen.iter().filter_map(|v| v["event"].as_str()).collect();
        let err = seen
            .iter()
            .rposition(|v| v["event"] == "error")
            .unwrap_or_else(|| panic!("{extra:?}: no error event in {names:?}"));
        let why = seen[err]["data"].as_str().unwrap_or_default();
        assert!(!why.is_empty(), "{extra:?}: {}", seen[err]);
        let tail = &names[err..];
        if extra.is_empty() {
            assert_eq!(tail, ["error"], "{names:?}");
        } else {
            assert_eq!(tail, ["error", "end"], "{names:?}");
            assert_eq!(seen[err + 1]["data"], serde_json::json!({}));
        }
    }
}

/// SIGTERM (what Kubernetes and systemd send) to a server with a test in
/// flight: the server exits within 2 s with status 0, and its client is
/// told the test was interrupted (before: the signal killed the server
/// outright, or as a container's first process it was ignored until the
/// 30 s grace ran out).
#[test]
fn sigterm_ends_the_server_and_tells_its_client_the_test_was_interrupted() {
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--bind", "127.0.0.1", "--port", "0"]);
    let mut server = serve(cmd);
    let addr = server.loopback_addr();
    let client = Command::new(bin())
        .args(["bench", &addr, "-d", "30s", "--warmup", "0s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut client = common::Proc(client);
    server.wait_for("started", 10);
    let stopped = common::terminate(&mut server.proc.0, Duration::from_secs(5));
    let (status, took) = stopped.expect("the server ran on 5 s after SIGTERM");
    assert!(
        status.success() && took < Duration::from_secs(2),
        "{status} after {took:?}"
    );
    let t = Instant::now();
    let done = loop {
        if let Some(st) = client.0.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "the client ran on");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    client
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!done.success(), "the client exited 0: {err}");
    assert!(err.contains("interrupted: the server is stopping"), "{err}");
}

// `bench --interference` on loopback: the victim alone and beside two
// loaders, per size; every point measured, the loaders' goodput per
// loader, the knee in words, and the refusals of what makes no sense.
#[test]
fn interference_measures_the_victim_alone_and_beside_loaders() {
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--bind", "127.0.0.1", "--port", "0"]);
    let server = serve(cmd);
    let addr = server.loopback_addr();
    let base = ["bench", &addr, "-w", "rr", "-d", "0.5s", "--warmup", "0s"];
    let args = [
        &base[..],
        &["--size", "4k,64k", "--interference", "0,2", "--json"],
    ]
    .concat();
    let out = ws(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("interference 64 KiB K=2:"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["victim_workload"], "rr");
    assert_eq!(v["loader_workload"], "stream");
    let curves = v["curves"].as_array().unwrap();
    assert_eq!(curves.len(), 2);
    for (c, size) in curves.iter().zip([4096, 65536]) {
        assert_eq!(c["size"], size);
        let ks: Vec<u64> = c["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["k"].as_u64().unwrap())
            .collect();
        assert_eq!(ks, [0, 2]);
        for p in c["points"].as_array().unwrap() {
            assert!(p["victim_tps"].as_f64().unwrap() > 0.0, "{p}");
            assert!(
                p["p99_us"].as_f64().unwrap() >= p["p50_us"].as_f64().unwrap(),
                "{p}"
            );
            assert_eq!(p["victim"]["spec"]["request_size"], size);
        }
        let loaders = c["points"][1]["loader_bps"].as_array().unwrap();
        assert_eq!(loaders.len(), 2, "{c}");
        assert!(loaders.iter().all(|b| b.as_f64().unwrap() > 1e6), "{c}");
        assert!(c["points"][0]["loader"].is_null());
    }
    // The table names the knee (or how far p99 rose) per size.
    let args = [&base[..], &["--size", "4k", "--interference", "0,1"]].concat();
    let out = ws(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("beside K loaders running stream"), "{text}");
    assert!(text.contains("knee: p99 "), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    assert_clean_failure(
        &["bench", &addr, "--interference", "0,2"],
        "request/response victim",
    );
    assert_clean_failure(
        &["bench", &addr, "-w", "rr", "--interference", "2,1"],
        "ascending",
    );
    assert_clean_failure(
        &[
            "bench",
            &addr,
            "-w",
            "rr",
            "--interference",
            "0,2",
            "--format",
            "kv",
        ],
        "drop --format kv",
    );
    assert_clean_failure(&["bench", &addr, "--loader", "same"], "--interference");
}
