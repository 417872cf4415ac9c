//! The command line on bad input: a clear message and a non-zero exit,
//! never a panic or a hang. Loopback only; no privileges needed.

mod common;
use common::{assert_clean_failure, bin, first_result, serve, ws};
use std::process::Command;

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
    assert_clean_failure(&["bench", "127.0.0.1", "--size", "1k"], "rr and crr");
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
    let dir = std::env::temp_dir().join(format!("ws-key-{}", std::process::id()));
    std::fs::write(&dir, "short").unwrap();
    assert_clean_failure(
        &["serve", "--port", "0", "--key-file", dir.to_str().unwrap()],
        "at least 16",
    );
    let _ = std::fs::remove_file(&dir);
}

#[test]
fn loopback_bench_with_key_sweep_and_formats() {
    let key = std::env::temp_dir().join(format!("ws-key-ok-{}", std::process::id()));
    std::fs::write(&key, "a-shared-secret-of-some-length\n").unwrap();
    let k = key.to_str().unwrap();
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
    let _ = std::fs::remove_file(&key);
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
