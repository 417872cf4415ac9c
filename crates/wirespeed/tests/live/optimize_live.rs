//! `wirespeed optimize` and `wirespeed explain` in emulated hosts: two
//! namespaces joined by tbf-capped veth NICs, a server in one, the binary
//! in the other. Needs root; skips (with a note) otherwise.

use crate::common;
use common::{bin, f, first_result, heavy, lab_with_server, path, root_or_skip, run, serve};
use serde_json::Value;
use std::process::Command;
use wirespeed_lab::{Lab, LabSpec};

fn server(lab: &Lab) -> String {
    lab.addr4("b", 0).unwrap().to_string()
}

/// The settings optimize may touch, as `wirespeed inspect --json` reads them on host a.
fn host_state(lab: &Lab) -> Value {
    let mut cmd = lab.command("a", bin());
    cmd.args(["inspect", "--json"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "inspect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("inspect JSON");
    // Per-NIC source routing lives in rules and routes: part of the host too.
    let routes = |what: &str| {
        let mut c = lab.command("a", "ip");
        c.args([what, "show", "table", "all"]);
        // Link-local addresses appear when DAD ends, not when optimize runs.
        String::from_utf8_lossy(&run(c).stdout)
            .lines()
            .filter(|l| !l.contains("fe80:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let keys = [
        "name",
        "mtu",
        "gso_max_size",
        "gro_max_size",
        "gso_ipv4_max_size",
        "gro_ipv4_max_size",
    ];
    let links: Vec<Value> = v["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| {
            keys.iter()
                .map(|k| ((*k).to_string(), l[*k].clone()))
                .collect()
        })
        .collect();
    serde_json::json!({
        "links": links,
        "sysctls": v["sysctls"],
        "rules": routes("rule"),
        "routes": routes("route"),
    })
}

/// The multinic scenario of report 2 (two 1 Gbit/s NICs in one subnet,
/// no per-NIC routes, small TCP buffers) under a unique name, with a server on b.
fn multinic_lab() -> (Lab, common::ServerProc) {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/multinic-ladder/lab.toml"
    );
    let mut spec = LabSpec::from_toml_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    spec.name = Lab::unique("t-opt");
    let lab = Lab::up(&spec).expect("lab up");
    let mut cmd = lab.command("b", bin());
    cmd.args(["serve", "--port", "5300", "--idle-timeout", "5s"]);
    (lab, serve(cmd))
}

#[test]
fn optimize_reaches_the_sum_of_caps_and_leaves_the_host_as_found() {
    if !root_or_skip("optimize_reaches_the_sum_of_caps") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = multinic_lab();
    let before = host_state(&lab);
    let dir = std::env::temp_dir().join(format!("ws-opt-{}", lab.name()));
    let out_json = dir.join("ladder.json");
    std::fs::create_dir_all(&dir).unwrap();
    let paths = format!("{},{}", path(&lab, 0), path(&lab, 1));
    let mut cmd = lab.command("a", bin());
    cmd.args(["optimize", &server(&lab), "--paths", &paths])
        .args([
            "--budget",
            "60s",
            "--step-duration",
            "1s",
            "--warmup",
            "0.3s",
        ])
        .arg("--state-dir")
        .arg(dir.join("state"))
        .arg("--out")
        .arg(&out_json);
    let t = std::time::Instant::now();
    let out = run(cmd);
    let took = t.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "optimize failed");
    // Bounded in time: the budget plus one step's overrun and the setup.
    assert!(took < 90.0, "optimize took {took:.0} s on a 60 s budget");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).expect("ladder JSON");
    assert_eq!(v["mode"], "ladder");
    let cells = v["cells"].as_array().unwrap();
    assert!(cells.len() >= 2, "fewer than 2 ladder steps: {v}");
    assert_eq!(cells[0]["name"], "baseline");
    let best = f(&v["optimize"], "best_median");
    assert!(best >= 0.9 * 2.0e9, "best {best} is under 90% of 2 Gbit/s");
    let last = cells.last().unwrap();
    assert!((f(&last["stats"], "median") - best).abs() < 1.0);
    // The ladder renders as HTML.
    let html = dir.join("report.html");
    let mut rep = Command::new(bin());
    rep.arg("report").arg(&out_json).arg("-o").arg(&html);
    assert!(run(rep).status.success());
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    // The host as found.
    assert_eq!(host_state(&lab), before, "optimize left host a changed");
    let _ = std::fs::remove_dir_all(&dir);
    drop(_server);
    lab.down().unwrap();
}

/// `wirespeed bench --json` on host a, saved for explain.
fn bench_to(lab: &Lab, file: &std::path::Path, args: &[&str]) {
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server(lab), "--json", "-d", "2s"])
        .args(args);
    let out = run(cmd);
    first_result(&out);
    std::fs::write(file, &out.stdout).unwrap();
}

/// The bottleneck kinds `wirespeed explain --json` names.
fn explain_kinds(file: &std::path::Path, extra: &[&str]) -> (Vec<String>, Value) {
    let mut cmd = Command::new(bin());
    cmd.arg("explain")
        .arg(file)
        .args(["--profile", "custom", "--json"])
        .args(extra);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "explain failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("explain JSON");
    let e = &v["explanations"][0]["explanation"];
    let kinds = e["bottlenecks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["kind"].as_str().unwrap().to_string())
        .collect();
    (kinds, e.clone())
}

#[test]
fn explain_names_the_planted_bottleneck() {
    if !root_or_skip("explain_names_the_planted_bottleneck") {
        return;
    }
    let _g = heavy();
    let dir = std::env::temp_dir().join(format!("ws-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let caps = ["--nic-cap", "1gbit", "--nics", "2"];
    {
        let (lab, _server) = lab_with_server("t-xcap", 2, Some("1gbit"));
        // One NIC idle: several flows, all on the first path.
        let one = dir.join("one-nic.json");
        bench_to(
            &lab,
            &one,
            &["--paths", &path(&lab, 0), "-F", "4", "-T", "2"],
        );
        let (kinds, e) = explain_kinds(&one, &caps);
        assert!(
            kinds.iter().any(|k| k == "nic_imbalance"),
            "one idle NIC not named: {e}"
        );
        // Both NICs at their caps.
        let both = dir.join("both-nics.json");
        let paths = format!("{},{}", path(&lab, 0), path(&lab, 1));
        bench_to(&lab, &both, &["--paths", &paths, "-F", "4", "-T", "2"]);
        let (kinds, e) = explain_kinds(&both, &caps);
        assert!(
            kinds.iter().any(|k| k == "nic_cap"),
            "NICs at cap not named: {e}"
        );
        assert!(!kinds.iter().any(|k| k == "nic_imbalance"), "{e}");
        drop(_server);
        lab.down().unwrap();
    }
    {
        // A per-flow cap, emulated by pacing each flow on an uncapped link.
        let (lab, _server) = lab_with_server("t-xflow", 1, None);
        let paced = dir.join("paced.json");
        bench_to(&lab, &paced, &["-F", "1", "--pacing", "300mbit"]);
        let (kinds, e) = explain_kinds(
            &paced,
            &[
                "--nic-cap",
                "10gbit",
                "--nics",
                "1",
                "--flow-cap",
                "300mbit",
            ],
        );
        assert!(
            kinds.iter().any(|k| k == "per_flow_cap"),
            "per-flow cap not named: {e}"
        );
        let msg = e["bottlenecks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["kind"] == "per_flow_cap")
            .map(|b| b["message"].as_str().unwrap().to_string())
            .unwrap();
        assert!(msg.contains("flows"), "no flows needed in {msg:?}");
        drop(_server);
        lab.down().unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_optimize_input_fails_cleanly() {
    use common::assert_clean_failure;
    assert_clean_failure(&["optimize", "127.0.0.1", "--noise", "abc"], "--noise");
    assert_clean_failure(&["optimize", "127.0.0.1", "--noise", "150%"], "between");
    assert_clean_failure(&["optimize", "127.0.0.1", "--budget", "xx"], "duration");
    assert_clean_failure(&["optimize", "127.0.0.1", "--paths", "=x"], "bad path");
    assert_clean_failure(
        &["optimize", "127.0.0.1", "--port", "1", "--no-host"],
        "baseline test",
    );
}
