//! UDP workloads in emulated hosts: two namespaces joined by veth, a
//! `wirespeed serve` process in one, `wirespeed bench -w udp-*` in the
//! other; links capped by tbf so that datagrams are really dropped.
//! Needs root; skips (with a note) otherwise.

use crate::common;
use common::{bin, f, first_result, heavy, lab_with_server, path, root_or_skip, run};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};
use wirespeed_lab::Lab;

fn bench(lab: &Lab, args: &[&str]) -> std::process::Output {
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server, "--json"]).args(args);
    run(cmd)
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// Sent, received and lost agree exactly.
fn consistent(udp: &Value) {
    assert_eq!(
        u(udp, "datagrams_sent") - u(udp, "datagrams_received"),
        u(udp, "lost"),
        "{udp}"
    );
}

// A 100 Mbit/s tbf cap, two flows each sent at 100 Mbit/s: twice the
// cap. tbf counts the frame (1400 + 8 + 20 + 14 bytes a datagram), so
// about 48.5% of the datagrams fit and about half are dropped; every
// datagram is accounted for, on every flow, path and in total. Below the
// cap nothing is lost and the jitter a shaped link adds is reported.
#[test]
fn udp_loss_is_counted_right_under_a_tbf_cap_that_drops() {
    if !root_or_skip("udp_loss_under_a_cap") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-udploss", 1, Some("100mbit"));
    let p = path(&lab, 0);
    let out = bench(
        &lab,
        &[
            "-w",
            "udp-stream",
            "-l",
            "1400",
            "-b",
            "100mbit",
            "-F",
            "2",
            // Send buffers above tbf's queue: the qdisc drops instead of
            // holding the socket back (a local qdisc otherwise paces UDP).
            "--sndbuf",
            "4m",
            "-d",
            "3s",
            "--warmup",
            "0.5s",
            "--paths",
            &p,
        ],
    );
    let r = first_result(&out);
    let udp = &r["udp"];
    consistent(udp);
    let loss = f(udp, "loss_pct");
    assert!((40.0..=60.0).contains(&loss), "loss {loss}% at 2x the cap");
    // What got through is the cap's worth (goodput within 10% of it).
    let got = f(&r, "throughput_bps");
    let cap_goodput = 100e6 * 1400.0 / 1442.0;
    assert!(
        (got / cap_goodput - 1.0).abs() < 0.10,
        "{got} through a cap of {cap_goodput}"
    );
    // The sender's side moved about twice that.
    assert!(f(&r, "local_bps") > 1.7 * got, "{r}");
    // tbf tail-drops whatever arrives at a full queue, so the loss is not
    // shared evenly (one CI run: 7.8% for one flow, the rest for the
    // other); each flow loses some and the counts add up.
    for fl in r["flows"].as_array().unwrap() {
        consistent(&fl["udp"]);
        assert!(f(&fl["udp"], "loss_pct") > 1.0, "{fl}");
    }
    consistent(&r["paths"][0]["udp"]);
    assert_eq!(r["paths"][0]["udp"]["lost"], udp["lost"]);
    consistent(&r["directions"][0]["udp"]);
    explain_names_the_loss(&out.stdout);

    // Below the cap: no loss, and the shaped link's jitter is there.
    let r = first_result(&bench(
        &lab,
        &[
            "-w",
            "udp-stream",
            "-l",
            "1400",
            "-b",
            "60mbit",
            "-d",
            "2s",
            "--warmup",
            "0.3s",
            "--paths",
            &p,
        ],
    ));
    let udp = &r["udp"];
    consistent(udp);
    assert!(f(udp, "loss_pct") < 0.5, "{udp}");
    let j = f(udp, "jitter_us");
    assert!(j > 0.0 && j < 50_000.0, "jitter {j} us");
    assert!(r["flows"][0]["udp"]["jitter_us"].as_f64().unwrap() > 0.0);
}

/// `wirespeed explain` over that result: it names the datagram loss, says
/// the path (not the idle receiver) dropped them and asks for a lower -b;
/// no TCP rule fires on a UDP result.
fn explain_names_the_loss(result: &[u8]) {
    let file = std::env::temp_dir().join(format!("ws-udp-{}.json", std::process::id()));
    std::fs::write(&file, result).unwrap();
    let out = common::ws(&[
        "explain",
        file.to_str().unwrap(),
        "--path-cap",
        "100mbit",
        "--json",
    ]);
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let found = v["explanations"][0]["explanation"]["bottlenecks"]
        .as_array()
        .unwrap();
    let kinds: Vec<&str> = found.iter().map(|b| b["kind"].as_str().unwrap()).collect();
    let loss = found
        .iter()
        .find(|b| b["kind"] == "datagram_loss")
        .unwrap_or_else(|| panic!("no datagram_loss in {kinds:?}"));
    let msg = loss["message"].as_str().unwrap();
    assert!(msg.contains("lower -b"), "{msg}");
    let pct = loss["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "loss_pct")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!((30.0..=70.0).contains(&pct), "loss {pct}%");
    assert!(
        !kinds.contains(&"retransmits") && !kinds.contains(&"small_buffers"),
        "{kinds:?}"
    );
}

// Reverse and both ways, over IPv6, through the capped link: each
// direction's datagrams are accounted for apart.
#[test]
fn udp_reverse_and_bidir_over_ipv6_under_a_cap() {
    if !root_or_skip("udp_reverse_bidir_v6") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-udpv6", 1, Some("200mbit"));
    let v6 = format!(
        "{}={}",
        lab.addr6("a", 0).unwrap(),
        lab.addr6("b", 0).unwrap()
    );
    for dir in ["--reverse", "--bidir"] {
        let r = first_result(&bench(
            &lab,
            &[
                "-w",
                "udp-stream",
                "-b",
                "50mbit",
                "-F",
                "2",
                dir,
                "-d",
                "1.5s",
                "--warmup",
                "0.3s",
                "--path",
                &v6,
            ],
        ));
        consistent(&r["udp"]);
        assert!(f(&r["udp"], "loss_pct") < 1.0, "{dir}: {}", r["udp"]);
        let dirs = r["directions"].as_array().unwrap();
        assert_eq!(dirs.len(), if dir == "--bidir" { 2 } else { 1 });
        for d in dirs {
            consistent(&d["udp"]);
            assert!(f(d, "received_bps") > 0.8 * 100e6, "{dir}: {d}");
        }
    }
}

// GSO and GRO on, then off: both run, over veth, and the result says which
// offload ran on which side.
#[test]
fn udp_gso_and_gro_on_and_off() {
    if !root_or_skip("udp_gso_gro") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-udpgso", 1, None);
    let on = first_result(&bench(
        &lab,
        &["-w", "udp-stream", "-d", "1s", "--warmup", "0.2s"],
    ));
    let off = first_result(&bench(
        &lab,
        &[
            "-w",
            "udp-stream",
            "-d",
            "1s",
            "--warmup",
            "0.2s",
            "--no-gso",
            "--no-gro",
        ],
    ));
    for r in [&on, &off] {
        consistent(&r["udp"]);
        assert!(f(r, "throughput_bps") > 1e7, "{}", r["udp"]);
    }
    assert_eq!(
        on["udp_offload"]["client_gso"], true,
        "{}",
        on["udp_offload"]
    );
    assert_eq!(
        on["udp_offload"]["server_gro"], true,
        "{}",
        on["udp_offload"]
    );
    assert_eq!(off["udp_offload"]["client_gso"], false);
    assert_eq!(off["udp_offload"]["server_gro"], false);
    assert_eq!(off["spec"]["udp_gso"], false);
}

// udp-rr: percentiles in order; then requests blackholed for a while in
// the server's namespace (its answers have no route back): those
// transactions time out and are counted lost, and the flows carry on once
// the route is back, so the test ends on time.
#[test]
fn udp_rr_percentiles_and_lost_transactions_never_stall() {
    if !root_or_skip("udp_rr") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-udprr", 1, None);
    let r = first_result(&bench(
        &lab,
        &[
            "-w", "udp-rr", "--size", "64", "-F", "2", "-d", "1s", "--warmup", "0.2s",
        ],
    ));
    let l = &r["latency"];
    let p = ["min_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us"].map(|k| f(l, k));
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "{l}");
    assert!(f(&r, "transactions_per_s") > 100.0);
    consistent(&r["udp"]);
    assert_eq!(r["udp"]["lost"], 0, "{}", r["udp"]);

    let server = lab.addr4("b", 0).unwrap().to_string();
    let client_ip = lab.addr4("a", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args([
        "bench",
        &server,
        "-w",
        "udp-rr",
        "--size",
        "64",
        "-F",
        "2",
        "--rr-timeout",
        "20ms",
        "-d",
        "3s",
        "--warmup",
        "0s",
        "--interval",
        "0.2s",
    ])
    .stdout(Stdio::piped());
    let t0 = Instant::now();
    let mut child = common::Proc(cmd.spawn().unwrap());
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    // Interval lines are the readiness signal: traffic flows, so cut the
    // way back for five intervals, then restore it.
    let mut next = || lines.next().expect("an interval line").unwrap();
    let first = next();
    assert!(first.contains("trans/s"), "{first:?}");
    let route = |op: &str| {
        let st = lab
            .command("b", "ip")
            .args(["route", op, "blackhole", &format!("{client_ip}/32")])
            .status()
            .unwrap();
        assert!(st.success(), "ip route {op} blackhole");
    };
    route("add");
    for _ in 0..5 {
        next();
    }
    route("del");
    let mut rest = Vec::new();
    for l in lines.by_ref() {
        rest.push(l.unwrap());
    }
    child.0.wait().unwrap();
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(15), "took {took:?}");
    // The table's line: "datagrams  requests N, answered M, lost L (P%), late answers K".
    let line = rest
        .iter()
        .find(|l| l.contains("requests "))
        .unwrap_or_else(|| panic!("no datagram line in {rest:?}"));
    let num = |key: &str| -> u64 {
        let after = line
            .split(key)
            .nth(1)
            .unwrap_or_else(|| panic!("{key} in {line}"));
        after
            .trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {line}"))
    };
    let (sent, got, lost) = (num("requests "), num("answered "), num("lost "));
    assert_eq!(sent - got, lost, "{line}");
    assert!(
        lost >= 10,
        "only {lost} transactions lost in 1 s of blackhole: {line}"
    );
    assert!(got > 100, "{line}");
    // After the route came back the flows carried on.
    let last: Vec<&String> = rest.iter().filter(|l| l.contains("trans/s")).collect();
    let tail = last.last().expect("interval lines after the blackhole");
    assert!(!tail.contains(" 0 trans/s"), "stalled: {tail}");
}

// A client killed in the middle of a reverse UDP test (the server sending
// to it): the server ends that test and serves the next client.
#[test]
fn a_killed_udp_client_leaves_the_server_serving() {
    if !root_or_skip("a_killed_udp_client") {
        return;
    }
    let _g = heavy();
    let (lab, server_proc) = lab_with_server("t-udpkill", 1, None);
    common::kill_mid_test(
        &lab,
        &[
            "-w",
            "udp-stream",
            "-R",
            "-F",
            "2",
            "-b",
            "200mbit",
            "-d",
            "20s",
        ],
    );
    server_proc.wait_for("went away", 10);
    let r = first_result(&bench(
        &lab,
        &[
            "-w",
            "udp-stream",
            "-b",
            "100mbit",
            "-d",
            "1s",
            "--warmup",
            "0.2s",
        ],
    ));
    consistent(&r["udp"]);
    assert!(f(&r, "throughput_bps") > 5e7);
    assert_eq!(r["server_concurrent_tests"], 1, "the killed test is gone");
}
