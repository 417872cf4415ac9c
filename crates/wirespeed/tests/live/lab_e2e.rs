//! End to end in emulated hosts: two namespaces joined by veth NICs capped
//! with tbf, a `wirespeed serve` process in one and `wirespeed bench` in
//! the other. Needs root; skips (with a note) otherwise.

use crate::common;
use common::{bin, f, first_result, heavy, lab_with_server, path, root_or_skip, run};
use wirespeed_lab::Lab;

fn bench(lab: &Lab, args: &[&str]) -> std::process::Output {
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server, "--json"]).args(args);
    run(cmd)
}

#[test]
fn two_capped_nics_in_one_test_reach_the_sum_of_caps() {
    if !root_or_skip("two_capped_nics") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-caps", 2, Some("1gbit"));
    // One path alone stays under its cap.
    let one = first_result(&bench(
        &lab,
        &["-d", "3s", "--paths", &path(&lab, 0), "-F", "2"],
    ));
    let t1 = f(&one, "throughput_bps");
    assert!(t1 <= 1.0e9 * 1.02, "one capped NIC gave {t1}");
    assert!(t1 >= 0.80e9, "one capped NIC gave only {t1}");
    // Both paths in one test: >= 90% of the 2 Gbit/s of caps.
    let both = format!("{},{}", path(&lab, 0), path(&lab, 1));
    let two = first_result(&bench(
        &lab,
        &["-d", "3s", "--paths", &both, "-F", "4", "-T", "2"],
    ));
    let t2 = f(&two, "throughput_bps");
    assert!(t2 >= 0.9 * 2.0e9, "two capped NICs gave {t2}");
    let paths = two["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2);
    let sum: f64 = paths.iter().map(|p| f(p, "throughput_bps")).sum();
    assert!((sum - t2).abs() / t2 < 1e-9, "paths {sum} vs total {t2}");
    for p in paths {
        assert!(
            f(p, "throughput_bps") <= 1.0e9 * 1.02,
            "a path above its cap: {p}"
        );
        assert_eq!(p["flows"], 2);
    }
    let flows = two["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 4);
    for fl in flows {
        assert_eq!(fl["client_sent_total"], fl["server_received_total"]);
    }
    drop(_server);
    lab.down().unwrap();
}

#[test]
fn ipv6_and_device_bound_paths() {
    if !root_or_skip("ipv6_and_device_bound_paths") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-v6", 2, None);
    let v6 = format!(
        "{}={}",
        lab.addr6("a", 1).unwrap(),
        lab.addr6("b", 1).unwrap()
    );
    let dev = format!(
        "{}={}",
        lab.dev("a", 0).unwrap(),
        lab.addr4("b", 0).unwrap()
    );
    let r = first_result(&bench(
        &lab,
        &[
            "-d", "1s", "--warmup", "0.2s", "-F", "2", "--path", &v6, "--path", &dev,
        ],
    ));
    let paths = r["paths"].as_array().unwrap();
    assert!(
        paths.iter().all(|p| f(p, "throughput_bps") > 1e6),
        "{paths:?}"
    );
}

#[test]
fn a_killed_client_leaves_the_server_serving() {
    if !root_or_skip("a_killed_client") {
        return;
    }
    let _g = heavy();
    let (lab, server_proc) = lab_with_server("t-kill", 1, None);
    common::kill_mid_test(&lab, &["-d", "20s", "-F", "4"]);
    // The server notices the client is gone and ends only that test.
    server_proc.wait_for("went away", 10);
    let r = first_result(&bench(&lab, &["-d", "1s", "--warmup", "0.2s"]));
    assert!(f(&r, "throughput_bps") > 1e6);
    assert_eq!(
        r["server_concurrent_tests"], 1,
        "the killed test must be gone"
    );
}

#[test]
fn ten_thousand_flows_in_one_test() {
    if !root_or_skip("ten_thousand_flows") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-10k", 1, None);
    let p = path(&lab, 0);
    let out = bench(
        &lab,
        &[
            "-d", "2s", "--warmup", "0.5s", "-F", "10000", "-T", "2", "-l", "4k", "--paths", &p,
        ],
    );
    let r = first_result(&out);
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 10_000);
    let moving = flows
        .iter()
        .filter(|fl| fl["client_sent_total"].as_u64().unwrap_or(0) > 0)
        .count();
    let idle_threads: std::collections::BTreeMap<u64, usize> = flows
        .iter()
        .filter(|fl| fl["client_sent_total"].as_u64().unwrap_or(0) == 0)
        .fold(Default::default(), |mut m, fl| {
            *m.entry(fl["thread"].as_u64().unwrap_or(99)).or_default() += 1;
            m
        });
    assert!(
        moving >= 9_900,
        "{moving} of 10000 flows moved data; idle flows per thread {idle_threads:?}; notes {}; window {} s",
        r["notes"],
        r["window_s"]
    );
    assert!(
        flows
            .iter()
            .all(|fl| fl["client_sent_total"] == fl["server_received_total"])
    );
}

#[test]
fn kv_output_keeps_neper_keys() {
    if !root_or_skip("kv_output") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-kv", 1, None);
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args([
        "bench", &server, "-w", "rr", "-d", "1s", "--warmup", "0.2s", "--format", "kv",
    ]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for key in [
        "throughput=",
        "throughput_units=",
        "local_throughput=",
        "remote_throughput=",
        "latency_p50=",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(key)),
            "{key} missing in\n{text}"
        );
    }
}
