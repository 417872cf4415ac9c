//! `bench --breakdown` between two namespaces joined by veth: the segments
//! of a transaction add up to the round trip the client measures, and a
//! planted cause (a CPU hog on the server's CPU, a standing queue in a tbf
//! cap, a VXLAN overlay) moves the segment it belongs to. Needs root;
//! skips (with a note) otherwise.

use crate::common;
use common::{Proc, bin, f, first_result, heavy, lab_spec_with_server, root_or_skip, run, serve};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};
use wirespeed_lab::{Lab, LabSpec, VxlanSpec};

/// Runs `bench DST -w rr --breakdown --json -d 2s ARGS` in host a; the
/// result.
fn breakdown(lab: &Lab, dst: &str, args: &[&str]) -> Value {
    breakdown_for(lab, dst, "2s", args)
}

/// As [`breakdown`], for `secs`.
fn breakdown_for(lab: &Lab, dst: &str, secs: &str, args: &[&str]) -> Value {
    breakdown_of(lab, dst, "rr", secs, args)
}

/// As [`breakdown`], of `workload` (rr, crr, udp-rr) for `secs`.
fn breakdown_of(lab: &Lab, dst: &str, workload: &str, secs: &str, args: &[&str]) -> Value {
    let mut cmd = lab.command("a", bin());
    cmd.args([
        "bench",
        dst,
        "--port",
        "5300",
        "-w",
        workload,
        "--breakdown",
    ])
    .args(["--json", "-d", secs, "--warmup", "0.5s"])
    .args(args);
    let r = first_result(&run(cmd));
    let b = &r["breakdown"];
    assert!(b.is_object(), "no breakdown: {r}");
    assert!(f(b, "transactions") >= 20.0, "too few joined: {b}");
    let bad = f(b, "incomplete") / (f(b, "transactions") + f(b, "incomplete"));
    assert!(bad < 0.1, "{}% incomplete: {b}", bad * 100.0);
    r
}

/// Segment `name`'s own p50, microseconds.
fn p50(r: &Value, name: &str) -> f64 {
    let segs = r["breakdown"]["segments"].as_array().expect("segments");
    let s = segs
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no segment {name}"));
    f(s, "p50_us")
}

const NAMES: [&str; 8] = [
    "client_send_stack",
    "client_queue",
    "wire",
    "server_rx_stack",
    "server_app",
    "server_send_stack",
    "server_queue",
    "client_rx_stack",
];

/// Each segment's p50 growth from `before` to `after`, microseconds.
fn growth(before: &Value, after: &Value) -> Vec<(&'static str, f64)> {
    let g: Vec<_> = NAMES
        .iter()
        .map(|n| (*n, p50(after, n) - p50(before, n)))
        .collect();
    eprintln!("p50 growth (us): {g:?}");
    g
}

/// Segment `name` grew at p50 by over 500 us, and no other segment by a
/// tenth of that.
fn only_grows(before: &Value, after: &Value, name: &str) {
    if let Err(e) = grows_alone(before, after, name) {
        panic!("{e}");
    }
}

/// As [`only_grows`], the failure as an error.
fn grows_alone(before: &Value, after: &Value, name: &str) -> Result<(), String> {
    let g = growth(before, after);
    let d = p50(after, name) - p50(before, name);
    if d <= 500.0 {
        return Err(format!("{name} grew by {d} us only"));
    }
    match g.iter().find(|(n, o)| *n != name && *o >= d / 10.0) {
        Some((n, o)) => Err(format!("{n} grew by {o} us beside {name}'s {d}")),
        None => Ok(()),
    }
}

fn server_addr(lab: &Lab) -> String {
    lab.addr4("b", 0).unwrap().to_string()
}

// Each sampled transaction's segments add up to the round trip the client
// measured for it on its own monotonic clock: within 2% at p50 (of the
// per-transaction error, and of the medians), for rr with 1-byte and
// 80000-byte messages, crr (with its connect and accept segments) and
// udp-rr; every host segment is non-negative at p50 (a timestamp tied to
// the wrong bytes would show as a negative wire).
#[test]
fn segments_add_up_to_the_round_trip_at_p50() {
    if !root_or_skip("segments_add_up") {
        return;
    }
    let _g = heavy();
    let spec = LabSpec::two_hosts(&Lab::unique("t-bdsum"), 1, None);
    let (lab, _server) = lab_spec_with_server(&spec);
    let runs = [
        ("rr", "1"),
        ("rr", "80000"),
        ("crr", "1"),
        // udp-rr's requests carry a 28-byte header.
        ("udp-rr", "32"),
        ("udp-rr", "1400"),
    ];
    for (w, size) in runs {
        let r = breakdown_of(&lab, &server_addr(&lab), w, "2s", &["--size", size]);
        let b = &r["breakdown"];
        let measured = f(b, "measured_p50_us");
        let at = &b["at_percentiles"][0];
        assert_eq!(f(at, "percentile"), 50.0);
        let sum: f64 = at["parts_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .sum();
        let err = f(b, "sum_error_p50");
        let size = format!("{w} {size}");
        eprintln!(
            "{size}: per-transaction error at p50 {:.3}%; segments at p50 sum to {sum:.2} us, measured p50 {measured:.2} us; all transactions p50 {:.2} us (stamping cost {:.2} us)",
            err * 100.0,
            f(&r["latency"], "p50_us"),
            f(b, "stamping_cost_us")
        );
        assert!(err < 0.02, "size {size}: per-transaction error {err}");
        assert!(
            (sum - measured).abs() / measured < 0.02,
            "size {size}: sum {sum} against {measured}"
        );
        for n in NAMES {
            assert!(p50(&r, n) >= 0.0, "size {size}: {n} negative at p50");
        }
        let names: Vec<&str> = b["segments"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["name"].as_str())
            .collect();
        if w == "crr" {
            // The handshake is its own segment: socket, connect, SYN and
            // SYN-ACK, the wake-up to write; the accept too.
            assert_eq!(names.len(), 10, "{names:?}");
            let connect = p50(&r, "client_connect");
            assert!(connect > 0.0, "crr: connect {connect} us at p50");
            assert!(p50(&r, "server_accept") >= 0.0);
        } else {
            assert_eq!(names, NAMES, "{w}");
        }
    }
}

/// Waits until process `pid` has used CPU time (a busy loop is running).
fn wait_busy(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let utime: u64 = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().nth(11))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if utime > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the CPU hog never ran");
}

// A busy loop on the server's CPU: the server (SCHED_IDLE, so the hog
// keeps the CPU when the server wakes; at equal priority the scheduler
// lets a waking task in at once and only the tail moves) wakes late for
// each request. The server's receive stack and wake-up grows by
// milliseconds at p50; no other segment grows by a tenth of that.
#[test]
fn a_cpu_hog_on_the_servers_cpu_grows_the_server_wake_up() {
    if !root_or_skip("cpu_hog") {
        return;
    }
    let _g = heavy();
    let spec = LabSpec::two_hosts(&Lab::unique("t-bdhog"), 1, None);
    let lab = Lab::up(&spec).expect("lab up");
    let mut cmd = lab.command("b", "chrt");
    cmd.args([
        "--idle",
        "0",
        bin(),
        "serve",
        "--port",
        "5300",
        "--idle-timeout",
        "3s",
    ]);
    let _server = serve(cmd);
    // The SCHED_IDLE server is starved by any task on its CPU, also one
    // from outside the test during the run without the hog: a try whose
    // baseline was starved too is made again, up to three in all.
    for attempt in 1..=3 {
        match hog_try(&lab) {
            Ok(()) => return,
            Err(e) if attempt < 3 => eprintln!("try {attempt}: {e}; again"),
            Err(e) => panic!("three tries: {e}"),
        }
    }
}

/// One try of the hog test: rr without the hog, then with it.
fn hog_try(lab: &Lab) -> Result<(), String> {
    let pin = ["--size", "1", "--pin", "0", "--remote-pin", "1"];
    let before = breakdown(lab, &server_addr(lab), &pin);
    let mut hog = lab.command("b", "taskset");
    hog.args(["-c", "1", "sh", "-c", "while :; do :; done"]);
    let hog = Proc(hog.spawn().expect("start the hog"));
    wait_busy(hog.0.id());
    // Starved, the server answers a few dozen requests a second.
    let after = breakdown_for(lab, &server_addr(lab), "5s", &pin);
    drop(hog);
    grows_alone(&before, &after, "server_rx_stack")
}

/// Starts a 2-flow cubic stream from a to b that runs `secs` seconds;
/// returns once its first interval line says traffic flows.
fn background_stream(lab: &Lab, secs: &str) -> Proc {
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server_addr(lab), "--port", "5300", "-w", "stream"])
        .args(["--cc", "cubic", "-F", "2", "-d", secs, "--warmup", "0s"])
        .args(["--interval", "0.2s"])
        .stdout(Stdio::piped());
    let mut child = Proc(cmd.spawn().expect("start the stream"));
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("bit/s"), "no interval line: {line:?}");
    child
}

// A 500 Mbit/s tbf cap on the link and a cubic stream from client to
// server keep a standing queue in the client's qdisc: each request waits
// behind it, so the client's queue segment (SCHED to SND) grows by
// milliseconds and no other segment by a tenth of that.
#[test]
fn a_standing_queue_in_tbf_grows_the_client_queue() {
    if !root_or_skip("tbf_queue") {
        return;
    }
    let _g = heavy();
    let spec = LabSpec::two_hosts(&Lab::unique("t-bdtbf"), 1, Some("500mbit"));
    let (lab, _server) = lab_spec_with_server(&spec);
    let before = breakdown(&lab, &server_addr(&lab), &["--size", "1"]);
    let stream = background_stream(&lab, "8s");
    let after = breakdown(&lab, &server_addr(&lab), &["--size", "1"]);
    drop(stream);
    only_grows(&before, &after, "client_queue");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

// The same rr directly over the veth and through a VXLAN overlay on it,
// interleaved five times (three once gave a median receive-stack growth
// of zero in a whole-binary run: one pair's noise is several
// microseconds): the overlay's encapsulation lands in the send
// stacks of both sides (SCHED is the underlay's) and its decapsulation in
// the receive stacks; the queue segments stay where they were.
#[test]
fn a_vxlan_overlay_grows_the_stack_segments_on_both_sides() {
    if !root_or_skip("vxlan_stacks") {
        return;
    }
    let _g = heavy();
    let mut spec = LabSpec::two_hosts(&Lab::unique("t-bdvx"), 1, None);
    spec.vxlans.push(VxlanSpec {
        link: 0,
        id: 42,
        port: 4789,
        ..VxlanSpec::default()
    });
    let (lab, _server) = lab_spec_with_server(&spec);
    let overlay = lab.vxlan("b", 0).expect("overlay").addr4.to_string();
    let pin = ["--size", "1", "--pin", "0", "--remote-pin", "1"];
    let mut runs: Vec<Vec<(&str, f64)>> = Vec::new();
    for _ in 0..5 {
        let direct = breakdown(&lab, &server_addr(&lab), &pin);
        let over = breakdown(&lab, &overlay, &pin);
        runs.push(growth(&direct, &over));
    }
    let med = |i: usize| median(runs.iter().map(|g| g[i].1).collect());
    let (c_send, s_send) = (med(0), med(5));
    let rx = med(3) + med(7);
    eprintln!("median growth: client send {c_send}, server send {s_send}, receive stacks {rx}");
    assert!(c_send > 0.3, "client send stack grew by {c_send} us");
    assert!(s_send > 0.3, "server send stack grew by {s_send} us");
    assert!(rx > 0.0, "receive stacks grew by {rx} us");
    for (i, n) in [(1, "client_queue"), (6, "server_queue")] {
        assert!(
            med(i).abs() < c_send.min(s_send),
            "{n} moved by {} us",
            med(i)
        );
    }
}

// What --breakdown cannot do is refused before any test, with the reason.
#[test]
fn breakdown_refuses_what_it_does_not_cover() {
    common::assert_clean_failure(
        &["bench", "127.0.0.1", "-w", "stream", "--breakdown"],
        "--breakdown cuts request/response transactions (rr, crr, udp-rr), not stream",
    );
    common::assert_clean_failure(
        &["bench", "127.0.0.1", "-w", "udp-stream", "--breakdown"],
        "not udp-stream",
    );
    common::assert_clean_failure(
        &[
            "bench",
            "127.0.0.1",
            "-w",
            "rr",
            "--breakdown",
            "--zerocopy",
        ],
        "--breakdown and --zerocopy",
    );
}
