//! `wirespeed model` and `wirespeed explain` from the command line: the
//! figures of reports 2 and 5, custom caps, clear errors on bad input, and
//! explain over a results file written by a loopback bench.

use crate::common;
use common::{assert_clean_failure, bin, serve, ws};
use serde_json::Value;
use std::process::Command;

/// Runs the binary, asserts success, and returns its stdout.
fn ok_text(args: &[&str]) -> String {
    let out = ws(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the binary, asserts success, and parses its stdout as JSON.
fn ok_json(args: &[&str]) -> Value {
    serde_json::from_str(&ok_text(args)).expect("valid JSON")
}

fn gbit(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) / 1e9
}

#[test]
fn report2_figures_as_json() {
    let v = ok_json(&[
        "model",
        "--profile",
        "ibm-vpc",
        "--vcpus",
        "8",
        "--nics",
        "1",
        "--json",
    ]);
    assert_eq!(v["schema_version"], 1);
    let c = &v["ceilings"];
    assert_eq!(gbit(&c["vm_total_bps"]), 16.0);
    assert_eq!(gbit(&c["network_bps"]), 12.0);
    assert_eq!(gbit(&c["per_nic_bps"]), 12.0);
    assert_eq!(gbit(&c["per_vm_one_way_bps"]), 12.0);
    assert_eq!(gbit(&c["per_vm_both_ways_bps"]), 24.0);
    let v = ok_json(&[
        "model",
        "--profile",
        "ibm-vpc",
        "--vcpus",
        "32",
        "--nics",
        "2",
        "--format",
        "json",
    ]);
    let c = &v["ceilings"];
    assert_eq!(gbit(&c["per_nic_bps"]), 16.0);
    assert_eq!(gbit(&c["per_vm_one_way_bps"]), 32.0);
    assert_eq!(gbit(&c["per_vm_both_ways_bps"]), 64.0);
}

#[test]
fn custom_caps_from_flags() {
    let args: Vec<&str> = "model --profile custom --nic-cap 25gbit --nics 2 --flow-cap 5gbit"
        .split(' ')
        .collect();
    let text = ok_text(&args);
    assert!(text.contains("25.00 Gbit/s"), "{text}");
    assert!(text.contains("50.00 Gbit/s"), "{text}");
    assert!(
        text.contains("flows per NIC to reach the NIC ceiling: 5 flows"),
        "{text}"
    );
    assert!(
        text.contains("flows to reach the VM ceiling: 10 flows"),
        "{text}"
    );
}

#[test]
fn report5_price_choice_and_flows_for_a_target() {
    let v = ok_json(&[
        "model",
        "--profile",
        "gce",
        "--vcpus",
        "8",
        "--target",
        "10gbit",
        "--json",
    ]);
    assert_eq!(v["flows_for_target"], 8);
    assert_eq!(v["prices"]["cheapest_meeting_target"], "e2-standard-8");
    // Prices from the command line replace the profile's, by name or size.
    let v = ok_json(&[
        "model",
        "--profile",
        "ibm-vpc",
        "--vcpus",
        "8",
        "--price",
        "0.40,bx2-16x64=0.80",
        "--json",
    ]);
    let rows = v["prices"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["instance"], "8 vCPUs");
    assert_eq!(gbit(&rows[1]["delivered_bps"]), 16.0);
    assert!(ok_text(&["model", "--list"]).contains("tpu-multinic"));
}

#[test]
fn bad_input_gets_clear_errors() {
    assert_clean_failure(&["model", "--profile", "nope"], "unknown profile \"nope\"");
    assert_clean_failure(
        &["model", "--profile", "ibm-vpc", "--vcpus", "0"],
        "--vcpus must be at least 1",
    );
    assert_clean_failure(
        &["model", "--profile", "custom", "--nic-cap", "fast"],
        "bad rate",
    );
    assert_clean_failure(&["model", "--profile", "custom"], "--nic-cap");
    assert_clean_failure(&["model", "--profile", "gce"], "give --vcpus");
    assert_clean_failure(&["model"], "give --profile");
    assert_clean_failure(&["model", "--vcpus", "8"], "--profile");
    assert_clean_failure(
        &[
            "model",
            "--profile",
            "gce",
            "--vcpus",
            "8",
            "--price",
            "x=y",
        ],
        "bad price",
    );
    assert_clean_failure(
        &["explain", "/nonexistent/results.json", "--profile", "gce"],
        "read results file",
    );
    let bad = std::env::temp_dir().join(format!("ws-model-bad-{}.json", std::process::id()));
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    assert_clean_failure(
        &["explain", bad.to_str().unwrap()],
        "not a wirespeed results file",
    );
    let _ = std::fs::remove_file(&bad);
}

#[test]
fn profile_file_from_a_path() {
    let path = std::env::temp_dir().join(format!("ws-profile-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "schema_version = 1\nname = \"mine\"\ndescription = \"two 10G NICs\"\n\
         # our datacentre: 10 Gbit/s ports\nnic_cap_gbit = 10.0\ndefault_nics = 2\n",
    )
    .unwrap();
    let v = ok_json(&["model", "--profile", path.to_str().unwrap(), "--json"]);
    assert_eq!(gbit(&v["ceilings"]["per_vm_one_way_bps"]), 20.0);
    std::fs::write(&path, "schema_version = 1\nname = \"mine\"\n").unwrap();
    assert_clean_failure(
        &["model", "--profile", path.to_str().unwrap()],
        "description",
    );
    let _ = std::fs::remove_file(&path);
}

/// A hand-written result: report 2's two NICs, one at its 16 Gbit/s cap
/// and the other nearly idle.
const TWO_NICS: &str = r#"{
  "schema_version": 1,
  "results": [{
    "schema_version": 1, "tool_version": "test",
    "spec": {"workload": "stream", "direction": "forward", "duration_s": 10.0,
      "warmup_s": 1.0, "threads": 2, "flows": 4, "paths": [], "msg_size": 524288,
      "request_size": 1, "response_size": 1, "sndbuf": null, "rcvbuf": null,
      "congestion": null, "nodelay": false, "zerocopy": false, "skip_rx_copy": false,
      "pacing_bps": null, "client_cpus": [], "server_cpus": [], "interval_s": 0.0,
      "probe_rr": false},
    "server": "10.0.0.2:5300", "started_unix": 0.0, "window_s": 10.0,
    "congestion_control": "cubic", "throughput_bps": 17.8e9, "local_bps": 17.8e9,
    "remote_bps": 17.8e9,
    "directions": [{"direction": "forward", "sent_bps": 17.8e9, "received_bps": 17.8e9, "flows": 4}],
    "paths": [
      {"index": 0, "label": "10.0.0.1=10.0.0.2", "flows": 2, "throughput_bps": 15.8e9,
       "forward_bps": 15.8e9, "reverse_bps": 0.0, "share": 0.888},
      {"index": 1, "label": "10.0.1.1=10.0.1.2", "flows": 2, "throughput_bps": 2.0e9,
       "forward_bps": 2.0e9, "reverse_bps": 0.0, "share": 0.112}],
    "flows": [], "transactions_per_s": 0.0, "latency": null, "probe_latency": null,
    "fairness": 1.0, "path_balance": 0.127,
    "local_cpu": {"user_pct": 1.0, "system_pct": 40.0, "total_pct": 41.0,
      "per_core_pct": [50.0], "max_core_pct": 50.0, "per_thread_pct": []},
    "remote_cpu": {"user_pct": 1.0, "system_pct": 40.0, "total_pct": 41.0,
      "per_core_pct": [50.0], "max_core_pct": 50.0, "per_thread_pct": []},
    "server_concurrent_tests": 1, "intervals": [], "notes": []
  }]
}"#;

#[test]
fn explain_a_hand_written_result() {
    let path = std::env::temp_dir().join(format!("ws-explain-{}.json", std::process::id()));
    std::fs::write(&path, TWO_NICS).unwrap();
    let p = path.to_str().unwrap();
    let v = ok_json(&[
        "explain",
        p,
        "--profile",
        "ibm-vpc",
        "--vcpus",
        "32",
        "--json",
    ]);
    let e = &v["explanations"][0];
    // NICs default to the result's two paths: 16 per NIC, 32 one way.
    assert_eq!(gbit(&e["ceilings"]["per_vm_one_way_bps"]), 32.0);
    let x = &e["explanation"];
    assert_eq!(x["percent_of"][0]["ceiling"], "per_vm_one_way");
    let pct = x["percent_of"][0]["percent"].as_f64().unwrap();
    assert!((pct - 55.625).abs() < 1e-9, "{pct}");
    let b = &x["bottlenecks"][0];
    assert_eq!(b["kind"], "nic_imbalance");
    assert!(
        b["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "nic_cap" && e["value"] == 16e9)
    );
    let text = ok_text(&["explain", p, "--profile", "ibm-vpc", "--vcpus", "32"]);
    assert!(text.contains("[nic_imbalance] path 0"), "{text}");
    assert!(text.contains("nic_cap=16.00 Gbit/s"), "{text}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn explain_a_loopback_bench_result() {
    let _g = common::heavy();
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--bind", "127.0.0.1", "--port", "0"]);
    let server = serve(cmd);
    let addr = server.loopback_addr();
    let out = ws(&[
        "bench", &addr, "-d", "0.5s", "--warmup", "0s", "-F", "2", "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = std::env::temp_dir().join(format!("ws-bench-{}.json", std::process::id()));
    std::fs::write(&path, &out.stdout).unwrap();
    let v = ok_json(&[
        "explain",
        path.to_str().unwrap(),
        "--profile",
        "lab",
        "--nic-cap",
        "1gbit",
        "--encap",
        "vxlan",
        "--json",
    ]);
    let x = &v["explanations"][0]["explanation"];
    assert!(x["measured_one_way_bps"].as_f64().unwrap() > 0.0);
    let kinds: Vec<&str> = x["bottlenecks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"encapsulation"), "{kinds:?}");
    // Loopback runs far above a 1 Gbit/s "NIC": the note says the cap does not hold.
    assert!(
        x["notes"][0]
            .as_str()
            .unwrap()
            .contains("above the ceiling")
    );
    // bench --profile explains after the table; bad model flags fail before the test.
    let text = ok_text(&[
        "bench",
        &addr,
        "-d",
        "0.3s",
        "--warmup",
        "0s",
        "--profile",
        "custom",
        "--nic-cap",
        "100gbit",
    ]);
    assert!(text.contains("explain: stream forward"), "{text}");
    assert!(text.contains("per_vm_one_way"), "{text}");
    assert_clean_failure(
        &["bench", &addr, "-d", "0.3s", "--profile", "gce"],
        "give --vcpus",
    );
    let _ = std::fs::remove_file(&path);
}
