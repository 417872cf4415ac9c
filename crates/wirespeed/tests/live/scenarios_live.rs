//! The scenarios shipped in scenarios/ run live, shortened (1 s runs, few
//! repeats), and each asserts the direction and size of its effect as
//! ratios within one run (root only; skips otherwise). Every experiment
//! removes its lab itself, also when it fails.

use crate::common;
use common::{bin, heavy, root_or_skip};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use wirespeed_lab::{Lab, LabSpec};

/// Path of a file of a shipped scenario.
fn scenario(name: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
        .join(file)
}

/// Runs a scenario's experiment shortened to `repeats` runs of `duration`;
/// returns the results JSON.
fn experiment(name: &str, file: &str, repeats: u32, duration: &str) -> Value {
    let out = std::env::temp_dir().join(format!(
        "ws-scen-{name}-{}-{}.json",
        file.trim_end_matches(".toml"),
        std::process::id()
    ));
    let o = Command::new(bin())
        .arg("experiment")
        .arg(scenario(name, file))
        .arg("--out")
        .arg(&out)
        .args(["--fresh", "--json", "--repeats", &repeats.to_string()])
        .args(["--duration", duration, "--warmup", "0.3s"])
        .output()
        .expect("run wirespeed experiment");
    let _ = std::fs::remove_file(&out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{name}/{file} failed:\n{err}");
    serde_json::from_slice(&o.stdout).expect("results JSON")
}

/// Asserts that every cell's median is above `min`.
fn every_cell_above(v: &Value, min: f64) {
    for c in v["cells"].as_array().unwrap() {
        let m = c["stats"]["median"].as_f64().unwrap();
        assert!(m > min, "{}: {m}", c["name"]);
    }
}

/// The cell named `name`.
fn cell<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["cells"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no cell {name:?} in {v}"))
}

/// A cell's median (its last point's, for a sweep).
fn median(v: &Value, name: &str) -> f64 {
    cell(v, name)["stats"]["median"].as_f64().unwrap()
}

/// The median of the point with sweep value `x` of a cell.
fn point(v: &Value, name: &str, x: &str) -> f64 {
    cell(v, name)["points"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["x"] == x))
        .and_then(|p| p["stats"]["median"].as_f64())
        .unwrap_or_else(|| panic!("no point {x} in cell {name}"))
}

#[test]
fn tpu_multinic_fills_both_extra_nics_evenly() {
    if !root_or_skip("tpu_multinic_fills_both_extra_nics_evenly") {
        return;
    }
    let _g = heavy();
    let v = experiment("tpu-multinic", "experiment.toml", 1, "2s");
    let total = median(&v, "both extra NICs, 2 x 16 flows");
    // tbf counts the Ethernet header: goodput per 1 Gbit/s cap at MTU 8896
    // is (8896 - 52) / (8896 + 14) of it.
    let ceiling = 2.0 * 1e9 * (8896.0 - 52.0) / (8896.0 + 14.0);
    assert!(
        total >= 0.95 * ceiling,
        "total {total} vs ceiling {ceiling}"
    );
    let paths = cell(&v, "both extra NICs, 2 x 16 flows")["points"][0]["paths"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(paths.len(), 2, "{paths:?}");
    let (p0, p1) = (
        paths[0]["median_bps"].as_f64().unwrap(),
        paths[1]["median_bps"].as_f64().unwrap(),
    );
    assert!((p0 - p1).abs() <= 0.10 * p0.max(p1), "split {p0} / {p1}");
}

#[test]
fn overlay_cost_vxlan_costs_throughput() {
    if !root_or_skip("overlay_cost_vxlan_costs_throughput") {
        return;
    }
    let _g = heavy();
    let v = experiment("overlay-cost", "experiment.toml", 1, "1s");
    // Uncapped figures move 20-60% on a shared 2-core machine: only check
    // they exist. Under a 1 Gbit/s cap, VXLAN's 50 bytes per packet cost
    // goodput exactly: 1398 vs 1448 payload bytes per 1514-byte frame.
    every_cell_above(&v, 1e8);
    let host = median(&v, "host network, 1 Gbit/s NIC");
    let vx = median(&v, "vxlan overlay, 1 Gbit/s NIC");
    let ratio = vx / host;
    assert!(
        (0.95..=0.98).contains(&ratio),
        "vxlan {vx} vs host {host}: {ratio} (expected 1398/1448 = 0.966)"
    );
    let rr = experiment("overlay-cost", "rr.toml", 1, "0.5s");
    for c in rr["cells"].as_array().unwrap() {
        let pts = c["points"].as_array().unwrap();
        assert_eq!(pts.len(), 4, "{}", c["name"]);
        if c["name"] != "host network, rr" {
            assert!(pts.iter().all(|p| p["vs_baseline_pct"].is_f64()), "{c}");
        }
    }
    // Where the round trip goes on each network: every run of every
    // cell carries a breakdown whose segments add up within 2% at p50.
    let bd = experiment("overlay-cost", "breakdown.toml", 1, "1s");
    for c in bd["cells"].as_array().unwrap() {
        let runs = c["points"][0]["runs"].as_array().unwrap();
        assert!(!runs.is_empty(), "{}", c["name"]);
        for r in runs {
            let b = &r["breakdown"];
            assert!(
                b["transactions"].as_u64().unwrap_or(0) > 0,
                "{}: {b}",
                c["name"]
            );
            let err = b["sum_error_p50"].as_f64().unwrap_or(1.0);
            assert!(err < 0.02, "{}: sum error {err}", c["name"]);
        }
    }
}

// Report 3's policy question: a policy enforcer's rules cost each new
// connection in proportion to their number when walked one by one
// (nftables more than x_tables on this kernel), and nothing when looked up
// in a set. Measured 2026-11-29: 10,000 rules -62% (nftables) and -31%
// (iptables-legacy) of crr's connections/s, a set of 10,000 +2%. One 1 s
// run per cell on a shared machine: only ratios of 1.5 and more are
// asserted, and the set against linear rules, not against no rules.
#[test]
fn policy_cost_grows_with_linear_rules_not_with_a_set() {
    if !root_or_skip("policy_cost_grows_with_linear_rules_not_with_a_set") {
        return;
    }
    let _g = heavy();
    let v = experiment("policy-cost", "experiment.toml", 1, "1s");
    every_cell_above(&v, 100.0);
    let none = median(&v, "no rules, crr");
    let nft = median(&v, "nftables 10000 rules, crr");
    let legacy = median(&v, "iptables-legacy 10000 rules, crr");
    let set = median(&v, "nftables set of 10000, crr");
    let all = format!("none {none}, nftables {nft}, iptables-legacy {legacy}, set {set}");
    assert!(nft < 0.8 * none && legacy < 0.9 * none, "{all}");
    assert!(
        nft < legacy,
        "linear nftables rules cost more than x_tables': {all}"
    );
    assert!(set > 1.5 * nft, "{all}");
}

/// Whether `wirespeed doctor` in `ns` reports finding `id`.
fn doctor_finds(ns: &str, id: &str) -> bool {
    let o = Command::new(bin())
        .args(["doctor", "--netns", ns, "--json"])
        .output()
        .expect("run wirespeed doctor");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        !text.is_empty(),
        "doctor printed nothing: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_str(&text).expect("doctor JSON");
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["id"] == id)
}

#[test]
fn bond_hash_l4_spreads_flows_and_doctor_flags_l3() {
    if !root_or_skip("bond_hash_l4_spreads_flows_and_doctor_flags_l3") {
        return;
    }
    let _g = heavy();
    // Eight flows hashed at random over two links all take one link in
    // 2 of 256 runs (seen once in CI's whole suite: both cells at one
    // link's cap): of two runs, the better one must use both links.
    let v = experiment("bond-hash", "experiment.toml", 2, "1s");
    let l3 = median(&v, "L3 hash (policy 0)");
    let l4 = cell(&v, "L4 hash (policy 1)");
    let best = l4["points"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["throughput_bps"].as_f64())
        .fold(0.0, f64::max);
    assert!(
        best >= 1.7 * l3,
        "L4 {best} vs L3 {l3}; the L4 cell: {}",
        l4["lab_changes"]
    );

    let text = std::fs::read_to_string(scenario("bond-hash", "lab.toml")).unwrap();
    let mut spec = LabSpec::from_toml_str(&text).unwrap();
    spec.name = Lab::unique("t-bond");
    spec.subnet_base = Some(96);
    let lab = Lab::up(&spec).expect("build the bond-hash lab");
    let ns = lab.ns("a");
    assert!(doctor_finds(&ns, "ecmp-l3-hash"), "policy 0 not flagged");
    let set = lab
        .command("a", "sysctl")
        .args(["-q", "-w", "net.ipv4.fib_multipath_hash_policy=1"])
        .status()
        .unwrap();
    assert!(set.success());
    assert!(!doctor_finds(&ns, "ecmp-l3-hash"), "policy 1 still flagged");
    lab.down().unwrap();
}

#[test]
fn big_tcp_runs_every_family_and_size() {
    if !root_or_skip("big_tcp_runs_every_family_and_size") {
        return;
    }
    let _g = heavy();
    let v = experiment("big-tcp", "experiment.toml", 1, "1s");
    every_cell_above(&v, 1e8);
    let rr = experiment("big-tcp", "rr.toml", 2, "0.5s");
    for c in rr["cells"].as_array().unwrap() {
        let p = &c["points"][0];
        assert_eq!(p["runs"].as_array().unwrap().len(), 2);
        // Each run's own figures are ordered (a median of p50s may fall
        // below one slow run's minimum, so compare within a run).
        for run in p["runs"].as_array().unwrap() {
            let l = &run["latency"];
            let q: Vec<f64> = ["min_us", "p50_us", "p90_us", "p99_us"]
                .iter()
                .map(|k| l[*k].as_f64().unwrap())
                .collect();
            assert!(q[0] > 0.0 && q.windows(2).all(|w| w[0] <= w[1]), "{l}");
        }
        let m = &p["latency"];
        assert!(m["p50_us"].as_f64() <= m["p99_us"].as_f64(), "{m}");
        assert_eq!(p["runs"][0]["spec"]["request_size"], 80000);
        assert!(c["stats"]["median"].as_f64().unwrap() > 100.0, "{c}");
    }
}

#[test]
fn core_caps_rise_then_flatten_and_need_several_flows() {
    if !root_or_skip("core_caps_rise_then_flatten_and_need_several_flows") {
        return;
    }
    let _g = heavy();
    let v = experiment("core-caps", "experiment.toml", 1, "1s");
    let n: Vec<f64> = [
        "1 vCPU",
        "2 vCPUs",
        "4 vCPUs",
        "8 vCPUs",
        "12 vCPUs (capped)",
    ]
    .iter()
    .map(|c| median(&v, c))
    .collect();
    for w in n[..4].windows(2) {
        let r = w[1] / w[0];
        assert!((1.7..=2.3).contains(&r), "doubling the vCPUs: {n:?}");
    }
    let flat = n[4] / n[3];
    assert!(
        (0.9..=1.1).contains(&flat),
        "no flattening at the cap: {n:?}"
    );
    // 78.125 Mbit/s per flow against a 1 Gbit/s VM cap: 13 flows reach it.
    let one = point(&v, "8 vCPUs, flow sweep", "1");
    let four = point(&v, "8 vCPUs, flow sweep", "4");
    let sixteen = point(&v, "8 vCPUs, flow sweep", "16");
    assert!(one <= 0.1 * sixteen, "1 flow {one} vs 16 flows {sixteen}");
    let held = one / 78.125e6;
    assert!((0.85..=1.02).contains(&held), "1 flow {one} vs its cap");
    assert!(
        sixteen >= 0.95 * n[3],
        "16 flows {sixteen} vs the cap {}",
        n[3]
    );
    assert!(
        (3.4..=4.6).contains(&(four / one)),
        "4 flows {four} vs 1 {one}"
    );
}

// MPTCP over two 1 Gbit/s paths: the lab's [[mptcp]] tables set the
// path managers (limits, the server's announced endpoint) over netlink,
// and one -m connection moves well over one path's cap, where plain TCP
// stays under it. Where the kernel has no MPTCP the lab refuses to build,
// naming CONFIG_MPTCP (not reachable on this project's kernels, which
// have it; the refusal is unit-tested in wirespeed-host).
#[test]
fn mptcp_two_paths_beats_one_path() {
    if !root_or_skip("mptcp_two_paths_beats_one_path") {
        return;
    }
    let unsupported = wirespeed_host::mptcp::unsupported(std::path::Path::new("/proc/sys"));
    let why = unsupported.clone().unwrap_or_default();
    if !wirespeed_testkit::require(
        unsupported.is_none(),
        &why,
        "mptcp_two_paths_beats_one_path",
    ) {
        return;
    }
    let _g = heavy();
    let v = experiment("mptcp-two-paths", "experiment.toml", 1, "2s");
    let tcp = median(&v, "TCP, one path");
    let mp = median(&v, "MPTCP, two paths");
    // tbf at 1 Gbit/s: TCP tops out near 956 Mbit/s (1448/1514 of it).
    assert!((0.8e9..1.0e9).contains(&tcp), "TCP over one path: {tcp}");
    assert!(mp > 1.4 * tcp, "MPTCP {mp} vs TCP {tcp}: no second path");
    assert!(mp < 2.0e9, "MPTCP {mp} above both caps");
}

/// The victim's p99 at each K of a cell of the interference experiment.
fn p99_by_k(v: &Value, name: &str) -> Vec<(u64, f64)> {
    cell(v, name)["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let k = p["x"].as_str().unwrap().parse().unwrap();
            let r = &p["runs"][0];
            (k, r["latency"]["p99_us"].as_f64().unwrap())
        })
        .collect()
}

// Report 3's interference: eight clients, one storage host behind one
// shared 10 Gbit/s link. From many hosts (the experiment: the victim on
// c1, K loaders from c2..c8), the victim's p99 grows with K at every
// block size and the loaders fill the shared link; from one host (bench
// --interference, the loaders c1's own threads), the table names the knee.
#[test]
fn interference_many_clients_on_one_storage_host() {
    if !root_or_skip("interference_many_clients_on_one_storage_host") {
        return;
    }
    let _g = heavy();
    let v = experiment("interference", "experiment.toml", 1, "1s");
    for name in ["victim rr 4k", "victim rr 64k", "victim rr 1m"] {
        let curve = p99_by_k(&v, name);
        let ks: Vec<u64> = curve.iter().map(|c| c.0).collect();
        assert_eq!(ks, [0, 1, 2, 4, 8], "{name}");
        let (alone, most) = (curve[0].1, curve[4].1);
        assert!(
            most > 2.0 * alone,
            "{name}: p99 {alone} us alone, {most} us beside 8: {curve:?}"
        );
        let loaded = &cell(&v, name)["points"][4]["runs"][0]["notes"];
        assert!(
            loaded
                .to_string()
                .contains("beside 8 loaders from c2,c3,c4,c5,c6,c7,c8"),
            "{name}: {loaded}"
        );
    }
    let text = std::fs::read_to_string(scenario("interference", "lab.toml")).unwrap();
    let mut spec = LabSpec::from_toml_str(&text).unwrap();
    spec.name = Lab::unique("intf");
    let lab = Lab::up(&spec).expect("lab up");
    let mut cmd = lab.command("s", bin());
    cmd.args(["serve", "--port", "5300", "--idle-timeout", "3s"]);
    let _server = common::serve(cmd);
    let out = lab
        .command("c1", bin())
        .args(["bench", "10.213.0.1", "-p", "5300", "-w", "rr", "--nodelay"])
        .args([
            "--size",
            "4k",
            "--interference",
            "0,4",
            "-d",
            "1s",
            "--warmup",
            "0.3s",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.contains("knee: p99 doubles at K=4"), "{table}");
}
