//! inspect, doctor and tune, live in lab namespaces: what the lab sets
//! reads back, planted problems are found, apply/rollback restores every
//! value, a failure mid-plan changes nothing, the confirm deadline fires,
//! and doctor's advice takes one flow on one of two 1 Gbit/s NICs to both.
//! Needs root; skips (with a note) otherwise.

use crate::common;
use common::{bin, f, first_result, heavy, root_or_skip, run, serve, ws};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};
use wirespeed_lab::{Lab, LabSpec};

fn lab(name_prefix: &str, body: &str) -> Lab {
    let name = Lab::unique(name_prefix);
    let spec = LabSpec::from_toml_str(&format!("name = \"{name}\"\n{body}")).expect("lab spec");
    let lab = Lab::up(&spec).expect("lab up");
    // Readiness, not a sleep: the kernel adds each link's IPv6 link-local
    // route shortly after the link is up, so a snapshot taken at once can
    // lack routes that every later one has.
    for h in &spec.hosts {
        let ns = lab.ns(&h.name);
        wait_until(5, || link_local_routes_in_place(&ns));
    }
    lab
}

/// Whether every link but loopback in `ns` has its fe80::/64 route.
fn link_local_routes_in_place(ns: &str) -> bool {
    let snap = inspect(ns);
    let routes = snap["routes"].as_array().cloned().unwrap_or_default();
    snap["links"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["kind"] != "loopback")
        .all(|l| {
            routes
                .iter()
                .any(|r| r["dst"] == "fe80::/64" && r["dev"] == l["name"])
        })
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "wirespeed failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `wirespeed tune VERB --netns NS --state-dir DIR EXTRA...`.
/// An apply passes --force: these labs have no gateway or peer to
/// measure a path toward, so an MTU raise is unverified (issue 13; the
/// refusal itself is tested in cutoff_live.rs).
fn tune_in(ns: &str, dir: &str, verb: &str, extra: &[&str]) -> Output {
    let mut args = vec!["tune", verb, "--netns", ns, "--state-dir", dir];
    if verb == "apply" {
        args.push("--force");
    }
    args.extend_from_slice(extra);
    ws(&args)
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).expect("JSON output")
}

fn inspect(ns: &str) -> Value {
    json(&ws(&["inspect", "--netns", ns, "--json"]))
}

fn link<'a>(snap: &'a Value, name: &str) -> &'a Value {
    snap["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no link {name}"))
}

fn state_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ws-tune-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The settings tune may change, from a snapshot: what must come back
/// exactly after a rollback.
fn tunables(snap: &Value) -> Value {
    let links: Vec<Value> = snap["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            serde_json::json!([
                l["name"],
                l["mtu"],
                l["gso_max_size"],
                l["gro_max_size"],
                l["gso_ipv4_max_size"],
                l["gro_ipv4_max_size"],
                l["features"]
            ])
        })
        .collect();
    serde_json::json!({"links": links, "sysctls": snap["sysctls"], "rules": snap["rules"], "routes": snap["routes"]})
}

#[test]
fn inspect_reads_back_what_the_lab_set() {
    if !root_or_skip("inspect_reads_back_what_the_lab_set") {
        return;
    }
    let lab = lab(
        "t-insp",
        r#"
[[host]]
name = "a"
sysctl = { "net.ipv4.tcp_rmem" = "4096 87380 12345678", "net.ipv4.fib_multipath_hash_policy" = "1" }
loopback = ["10.231.0.1/32"]
[[host]]
name = "b"
loopback = ["10.231.0.2/32"]
[[link]]
a = "a"
b = "b"
mtu = 9000
gso_max_size = 185000
gro_max_size = 150000
[[link]]
a = "a"
b = "b"
[[vxlan]]
link = 0
id = 77
[[route]]
host = "a"
dst = "10.231.0.2/32"
links = [0, 1]
"#,
    );
    let ns = lab.ns("a");
    // The IPv4 BIG TCP sizes: iproute2 here cannot set them, tune can.
    let dir = state_dir("insp");
    let prof = dir.with_extension("toml");
    std::fs::write(
        &prof,
        "[link]\ngso_ipv4_max_size = 100000\ngro_ipv4_max_size = 110000\n",
    )
    .unwrap();
    ok(&ws(&[
        "tune",
        "apply",
        "--netns",
        &ns,
        "--state-dir",
        dir.to_str().unwrap(),
        "--profile",
        prof.to_str().unwrap(),
        "--dev",
        "eth1",
    ]));
    let s = inspect(&ns);
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["netns"], ns.as_str());
    let e0 = link(&s, "eth0");
    assert_eq!(e0["kind"], "veth");
    assert_eq!(e0["driver"], "veth");
    assert_eq!(e0["mtu"], 9000);
    assert_eq!(e0["gso_max_size"], 185000);
    assert_eq!(e0["gro_max_size"], 150000);
    assert_eq!(e0["tso_max_size"], 524280);
    assert_eq!(e0["speed_mbps"], 10000, "veth reports 10 Gbit/s");
    assert!(
        e0["features"]["rx-gro"].is_object(),
        "features read: {}",
        e0["features"]
    );
    assert_eq!(e0["offloads"]["tso"], true);
    let e1 = link(&s, "eth1");
    assert_eq!(e1["mtu"], 1500);
    assert_eq!(e1["gso_ipv4_max_size"], 100000);
    assert_eq!(e1["gro_ipv4_max_size"], 110000);
    let vx = link(&s, "vx0");
    assert_eq!(vx["kind"], "vxlan");
    assert_eq!(vx["vxlan"]["id"], 77);
    assert_eq!(vx["vxlan"]["port"], 4789);
    assert_eq!(vx["vxlan"]["underlay"], "eth0");
    assert_eq!(vx["mtu"], 8950);
    assert_eq!(s["sysctls"]["net.ipv4.tcp_rmem"], "4096 87380 12345678");
    assert_eq!(s["sysctls"]["net.ipv4.fib_multipath_hash_policy"], "1");
    // rmem_max cannot be read-only-ly unknown: it reads in a namespace.
    assert!(s["sysctls"]["net.core.rmem_max"].is_string());
    let mp = s["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dst"] == "10.231.0.2/32")
        .expect("multipath route");
    let hops: Vec<&str> = mp["nexthops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["dev"].as_str().unwrap())
        .collect();
    assert_eq!(hops, ["eth0", "eth1"]);
    let eg = s["egress"].as_array().unwrap();
    assert!(
        eg.iter()
            .any(|e| e["dev"] == "eth1" && e["leaves_by"] == "eth1"),
        "{eg:?}"
    );
    // The table form names the same things.
    let table = ok(&ws(&["inspect", "--netns", &ns]));
    for needle in [
        "eth0",
        "vxlan vx0: id 77",
        "multipath: eth0 w1, eth1 w1",
        "net.ipv4.tcp_rmem = 4096 87380 12345678",
    ] {
        assert!(table.contains(needle), "{needle:?} missing in\n{table}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

#[test]
fn doctor_finds_each_planted_problem() {
    if !root_or_skip("doctor_finds_each_planted_problem") {
        return;
    }
    let lab = lab(
        "t-doc",
        r#"
[[host]]
name = "a"
sysctl = { "net.ipv4.tcp_rmem" = "4096 87380 1048576", "net.ipv4.fib_multipath_hash_policy" = "0" }
loopback = ["10.232.0.1/32"]
[[host]]
name = "b"
[[link]]
a = "a"
b = "b"
subnet = "10.232.50.0/24"
[[link]]
a = "a"
b = "b"
subnet = "10.232.50.0/24"
[[link]]
a = "a"
b = "b"
[[vxlan]]
link = 2
[[route]]
host = "a"
dst = "10.232.9.9/32"
links = [0, 2]
"#,
    );
    let ns = lab.ns("a");
    let out = json(&ws(&[
        "doctor", "--netns", &ns, "--goal", "40gbit", "--rtt", "1ms", "--json",
    ]));
    let ids: Vec<&str> = out["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    for want in [
        "second-nic-unused",
        "ecmp-l3-hash",
        "jumbo-frames",
        "socket-buffers",
        "offload-off",
        "big-tcp",
        "slow-start-after-idle",
        "overlay",
    ] {
        assert!(ids.contains(&want), "doctor missed {want}: {ids:?}");
    }
    let find = |id: &str| {
        out["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap()
            .clone()
    };
    let sn = find("second-nic-unused");
    assert_eq!(sn["severity"], "critical");
    assert_eq!(sn["actions"][0]["setting"]["dev"], "eth1", "{sn}");
    assert_eq!(find("ecmp-l3-hash")["actions"][0]["value"], "1");
    // 40 Gbit/s over 1 ms needs 10 MB; tcp_rmem allows 1 MiB.
    let sb = find("socket-buffers");
    assert!(
        sb["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["setting"]["key"] == "net.ipv4.tcp_rmem"),
        "{sb}"
    );
    // vxlan's MTU is bounded by its underlay: no jumbo advice beyond it.
    let jumbo: Vec<Value> = out["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "jumbo-frames")
        .cloned()
        .collect();
    assert!(
        jumbo
            .iter()
            .all(|j| j["title"].as_str().unwrap().contains("where 9000")
                || j["title"].as_str().unwrap().starts_with("vx"))
    );
    // A clean host reports none of the fixable problems after tuning
    // (--force: no path here to verify the MTU steps by).
    let dir = state_dir("doc");
    ok(&ws(&[
        "tune",
        "apply",
        "--force",
        "--netns",
        &ns,
        "--state-dir",
        dir.to_str().unwrap(),
        "--goal",
        "40gbit",
        "--rtt",
        "1ms",
    ]));
    let after = json(&ws(&[
        "doctor", "--netns", &ns, "--goal", "40gbit", "--rtt", "1ms", "--json",
    ]));
    let left: Vec<&str> = after["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["actions"].as_array().unwrap().is_empty())
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(left.is_empty(), "still fixable after tune apply: {left:?}");
    ok(&ws(&[
        "tune",
        "rollback",
        "--netns",
        &ns,
        "--state-dir",
        dir.to_str().unwrap(),
    ]));
    let again = json(&ws(&[
        "doctor", "--netns", &ns, "--goal", "40gbit", "--rtt", "1ms", "--json",
    ]));
    assert_eq!(
        again["findings"], out["findings"],
        "rollback did not bring back the same host"
    );
    let _ = std::fs::remove_dir_all(&dir);
    lab.down().unwrap();
}

const SHARED_PAIR: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[link]]
a = "a"
b = "b"
subnet = "SUBNET"
[[link]]
a = "a"
b = "b"
subnet = "SUBNET"
"#;

fn write_profile(tag: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("ws-prof-{tag}-{}.toml", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

const FULL_PROFILE: &str = r#"
[sysctl]
"net.ipv4.tcp_rmem" = "4096 131072 8388608"
"net.ipv4.tcp_slow_start_after_idle" = "0"
"net.ipv4.tcp_rto_min_us" = "5000"
[link]
mtu = 9000
gso_max_size = 185000
gro_max_size = 185000
gso_ipv4_max_size = 185000
gro_ipv4_max_size = 185000
source_routing = true
[link.features]
"rx-gro" = "on"
"#;

#[test]
fn apply_then_rollback_restores_every_value_and_apply_twice_is_a_no_op() {
    if !root_or_skip("apply_then_rollback") {
        return;
    }
    let lab = lab("t-roll", &SHARED_PAIR.replace("SUBNET", "10.233.50.0/24"));
    let ns = lab.ns("a");
    let dir = state_dir("roll");
    let d = dir.to_str().unwrap();
    let prof = write_profile("roll", FULL_PROFILE);
    let before = inspect(&ns);
    let plan = json(&tune_in(
        &ns,
        d,
        "plan",
        &[
            "--profile",
            prof.to_str().unwrap(),
            "--dev",
            "eth1",
            "--json",
        ],
    ));
    let steps = plan["steps"].as_array().unwrap();
    assert!(steps.len() >= 9, "{plan}");
    let cmds: Vec<&str> = steps
        .iter()
        .map(|s| s["command"].as_str().unwrap())
        .collect();
    assert!(cmds.contains(&"ip link set dev eth1 mtu 9000"), "{cmds:?}");
    let gso = cmds
        .iter()
        .position(|c| c.contains(" gso_max_size"))
        .unwrap();
    let gso4 = cmds
        .iter()
        .position(|c| c.contains(" gso_ipv4_max_size"))
        .unwrap();
    assert!(
        gso < gso4,
        "IPv6 sizes must come before IPv4 ones: {cmds:?}"
    );
    let out = ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", prof.to_str().unwrap(), "--dev", "eth1"],
    ));
    assert!(out.contains("applied"), "{out}");
    let mid = inspect(&ns);
    let e1 = link(&mid, "eth1");
    assert_eq!(e1["mtu"], 9000);
    assert_eq!(e1["gso_max_size"], 185000);
    assert_eq!(e1["gso_ipv4_max_size"], 185000);
    assert_eq!(e1["features"]["rx-gro"]["on"], true);
    assert_eq!(mid["sysctls"]["net.ipv4.tcp_rto_min_us"], "5000");
    assert!(
        mid["egress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["dev"] == "eth1" && e["leaves_by"] == "eth1")
    );
    assert!(
        before["egress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["dev"] == "eth1" && e["leaves_by"] == "eth0"),
        "the lab's second NIC should start unused"
    );
    // Apply twice: nothing to do, journal unchanged.
    let journal = std::fs::read(dir.join("journal.json")).unwrap();
    let again = ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", prof.to_str().unwrap(), "--dev", "eth1"],
    ));
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(std::fs::read(dir.join("journal.json")).unwrap(), journal);
    let status = ok(&ws(&["tune", "status", "--netns", &ns, "--state-dir", d]));
    assert!(status.contains("mtu of eth1: 1500 -> 9000"), "{status}");
    let rb = ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
    assert!(rb.contains("restored"), "{rb}");
    assert_eq!(
        tunables(&inspect(&ns)),
        tunables(&before),
        "rollback left a difference"
    );
    assert!(!dir.join("journal.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

#[test]
fn a_failure_mid_plan_leaves_nothing_changed() {
    if !root_or_skip("a_failure_mid_plan") {
        return;
    }
    let lab = lab("t-fail", &SHARED_PAIR.replace("SUBNET", "10.234.50.0/24"));
    let ns = lab.ns("a");
    let dir = state_dir("fail");
    let d = dir.to_str().unwrap();
    let prof = write_profile("fail", FULL_PROFILE);
    let before = inspect(&ns);
    // Plant a route (via the other NIC) in the table source routing will
    // use: adding its own fails (EEXIST) at the last step, after sysctls,
    // MTU and GSO sizes changed.
    let idx = link(&before, "eth1")["index"].as_u64().unwrap();
    let st = lab
        .command("a", "ip")
        .args([
            "route",
            "add",
            "10.234.50.0/24",
            "dev",
            "eth0",
            "table",
            &(100 + idx).to_string(),
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let before = inspect(&ns);
    let out = tune_in(
        &ns,
        d,
        "apply",
        &["--profile", prof.to_str().unwrap(), "--dev", "eth1"],
    );
    assert!(!out.status.success(), "apply should fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("every value changed before it was restored") && err.contains("File exists"),
        "{err}"
    );
    assert_eq!(
        tunables(&inspect(&ns)),
        tunables(&before),
        "a failed apply left changes"
    );
    assert!(
        !dir.join("journal.json").exists(),
        "a failed first apply leaves no journal"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

#[test]
fn the_confirm_deadline_rolls_back_and_confirm_keeps() {
    if !root_or_skip("the_confirm_deadline") {
        return;
    }
    let lab = lab("t-conf", &SHARED_PAIR.replace("SUBNET", "10.235.50.0/24"));
    let ns = lab.ns("a");
    let dir = state_dir("conf");
    let d = dir.to_str().unwrap();
    let prof = write_profile(
        "conf",
        "[sysctl]\n\"net.ipv4.tcp_rto_min_us\" = \"7000\"\n[link]\nmtu = 4000\n",
    );
    let p = prof.to_str().unwrap();
    let rto = |ns: &str| {
        inspect(ns)["sysctls"]["net.ipv4.tcp_rto_min_us"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let orig = rto(&ns);
    // Not confirmed: the watchdog restores both values after 2 s.
    let out = ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", p, "--dev", "eth0", "--confirm-within", "2s"],
    ));
    assert!(out.contains("roll back in 2 s"), "{out}");
    assert_eq!(rto(&ns), "7000");
    let refused = tune_in(&ns, d, "apply", &["--profile", p, "--dev", "eth1"]);
    assert!(
        !refused.status.success(),
        "a second apply while one waits must be refused"
    );
    let status = ok(&ws(&["tune", "status", "--netns", &ns, "--state-dir", d]));
    assert!(status.contains("rolls back in"), "{status}");
    assert!(
        wait_until(15, || dir.join("watchdog.log").exists()),
        "the watchdog never finished"
    );
    let log = std::fs::read_to_string(dir.join("watchdog.log")).unwrap();
    assert!(log.contains("rolled back"), "{log}");
    assert_eq!(rto(&ns), orig);
    assert_eq!(link(&inspect(&ns), "eth0")["mtu"], 1500);
    std::fs::remove_file(dir.join("watchdog.log")).unwrap();
    // Confirmed: the values stay after the deadline; rollback still restores.
    ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", p, "--dev", "eth0", "--confirm-within", "2s"],
    ));
    let c = ok(&ws(&["tune", "confirm", "--netns", &ns, "--state-dir", d]));
    assert!(c.contains("confirmed"), "{c}");
    assert!(
        wait_until(15, || dir.join("watchdog.log").exists()),
        "the watchdog never finished"
    );
    assert!(
        std::fs::read_to_string(dir.join("watchdog.log"))
            .unwrap()
            .contains("nothing to do")
    );
    assert_eq!(rto(&ns), "7000");
    ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
    assert_eq!(rto(&ns), orig);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

#[test]
fn refuses_unsafe_values_with_a_clear_message() {
    if !root_or_skip("refuses_unsafe_values") {
        return;
    }
    let lab = lab(
        "t-unsafe",
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nmtu = 3000\n[[vxlan]]\nlink = 0\n",
    );
    let ns = lab.ns("a");
    let dir = state_dir("unsafe");
    let d = dir.to_str().unwrap();
    for (text, dev, needle) in [
        ("[link]\nmtu = 5000\n", "vx0", "lower link eth0"),
        (
            "[link]\ngso_max_size = 524288\n",
            "eth0",
            "tso_max_size of 524280",
        ),
        (
            "[sysctl]\n\"net.ipv4.tcp_rmem\" = \"4096 131072 999999999999\"\n",
            "eth0",
            "of memory",
        ),
        ("[link]\nmtu = 70000\n", "eth0", "65535"),
        ("[link]\nmtu = 1000\n", "eth0", "IPv6's minimum of 1280"),
        (
            "[sysctl]\n\"net.ipv6.conf.all.disable_ipv6\" = \"1\"\n",
            "eth0",
            "cannot bring back",
        ),
        ("[link]\nmtuu = 9000\n", "eth0", "unknown field `mtuu`"),
    ] {
        let prof = write_profile("unsafe", text);
        let out = tune_in(
            &ns,
            d,
            "apply",
            &["--profile", prof.to_str().unwrap(), "--dev", dev],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle),
            "{text}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        let _ = std::fs::remove_file(&prof);
    }
    assert!(!dir.join("journal.json").exists());
    // In a namespace rmem_max is read-only: skipped with the reason, not failed.
    let plan = ok(&tune_in(
        &ns,
        d,
        "plan",
        &["--profile", "throughput", "--dev", "eth0"],
    ));
    assert!(
        plan.contains("skipped: sysctl -w net.core.rmem_max")
            && plan.contains("read-only inside a network namespace"),
        "{plan}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    lab.down().unwrap();
}

#[test]
fn doctor_peer_names_the_unused_nic_and_its_advice_fills_both() {
    if !root_or_skip("doctor_peer_e2e") {
        return;
    }
    let _g = heavy();
    let body = SHARED_PAIR
        .replace("SUBNET", "10.236.50.0/24")
        .replace("subnet = ", "rate = \"1gbit\"\nsubnet = ");
    let lab = lab("t-peer", &body);
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    let mut cmd = lab.command("b", bin());
    cmd.args(["serve", "--port", "5301"]);
    let _server = serve(cmd);
    let peers = format!(
        "{},{}",
        lab.addr4("b", 0).unwrap(),
        lab.addr4("b", 1).unwrap()
    );
    let doc = json(&ws(&[
        "doctor",
        "--netns",
        &a,
        "--peer",
        &peers,
        "--port",
        "5301",
        "--test-duration",
        "1.5s",
        "--json",
    ]));
    let ids: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"peer-nics-share-a-bottleneck"),
        "{ids:?}\n{doc}"
    );
    assert!(ids.contains(&"second-nic-unused"), "{ids:?}");
    let tests = doc["peer_tests"].as_array().unwrap();
    let base = f(&tests[0], "bps");
    assert!(base < 1.0e9 * 1.02, "one flow on one capped NIC: {base}");
    // Tune both hosts as doctor says, then bench with its flags.
    let (da, db) = (state_dir("peer-a"), state_dir("peer-b"));
    for (ns, dir) in [(&a, &da), (&b, &db)] {
        ok(&ws(&[
            "tune",
            "apply",
            "--netns",
            ns,
            "--state-dir",
            dir.to_str().unwrap(),
        ]));
    }
    let after = json(&ws(&[
        "doctor",
        "--netns",
        &a,
        "--peer",
        &peers,
        "--port",
        "5301",
        "--test-duration",
        "1.5s",
        "--json",
    ]));
    let flags = after["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "peer-use-all-nics" || f["id"] == "peer-flow-count")
        .and_then(|f| f["bench_flags"].as_str())
        .unwrap_or_else(|| panic!("no bench advice after tuning: {after}"))
        .to_string();
    assert!(flags.starts_with("--paths "), "{flags}");
    let mut bench_args: Vec<String> = vec![
        "bench".into(),
        lab.addr4("b", 0).unwrap().to_string(),
        "--port".into(),
        "5301".into(),
        "--json".into(),
        "-d".into(),
        "3s".into(),
    ];
    bench_args.extend(flags.split_whitespace().map(String::from));
    if !flags.contains("-F") {
        bench_args.extend(["-F".into(), "4".into()]);
    }
    let mut c = lab.command("a", bin());
    c.args(&bench_args);
    let r = first_result(&run(c));
    let t = f(&r, "throughput_bps");
    assert!(
        t >= 0.9 * 2.0e9,
        "after tuning and doctor's flags {bench_args:?}: {t}"
    );
    for (ns, dir) in [(&a, &da), (&b, &db)] {
        ok(&ws(&[
            "tune",
            "rollback",
            "--netns",
            ns,
            "--state-dir",
            dir.to_str().unwrap(),
        ]));
        let _ = std::fs::remove_dir_all(dir);
    }
    drop(_server);
    lab.down().unwrap();
}

#[test]
fn unprivileged_users_can_inspect_but_not_tune() {
    if !root_or_skip("unprivileged_users") {
        return;
    }
    let as_nobody = |args: &[&str]| {
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()])
            .args(args)
            .output()
    };
    let out = as_nobody(&["inspect", "--json"]);
    if !wirespeed_testkit::require(out.is_ok(), "no setpriv (util-linux)", "inspect as nobody") {
        return;
    }
    let out = out.unwrap();
    if String::from_utf8_lossy(&out.stderr).contains("Permission denied") && !out.status.success() {
        eprintln!("skipping: the binary is not reachable by nobody");
        return;
    }
    let snap = json(&out);
    assert!(
        snap["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["kind"] == "loopback")
    );
    let out = as_nobody(&[
        "tune",
        "apply",
        "--profile",
        "latency",
        "--state-dir",
        "/tmp/ws-nobody-never",
    ])
    .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("run it as root"));
    assert!(!std::path::Path::new("/tmp/ws-nobody-never").exists());
}

/// `sysctl -n KEY` inside namespace `ns`.
fn sysctl_in(ns: &str, key: &str) -> String {
    let out = run({
        let mut c = std::process::Command::new("ip");
        c.args(["netns", "exec", ns, "sysctl", "-n", key]);
        c
    });
    assert!(out.status.success(), "read {key} in {ns}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn journal_of(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("journal.json")).unwrap()).unwrap()
}

fn fails(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "should have failed: {}{err}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn concurrent_applies_journal_every_change_and_wait_for_the_lock() {
    if !root_or_skip("concurrent_applies") {
        return;
    }
    let lab = lab("t-lock", "[[host]]\nname = \"a\"\n");
    let ns = lab.ns("a");
    let dir = state_dir("lock");
    let d = dir.to_str().unwrap();
    let keys = [
        "net.ipv4.tcp_slow_start_after_idle",
        "net.ipv4.tcp_no_metrics_save",
        "net.ipv4.tcp_mtu_probing",
        "net.ipv4.tcp_sack",
        "net.ipv4.tcp_window_scaling",
        "net.ipv4.tcp_tw_reuse",
        "net.ipv4.tcp_autocorking",
        "net.ipv4.tcp_thin_linear_timeouts",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_syn_retries",
        "net.ipv4.tcp_synack_retries",
        "net.ipv4.tcp_retries2",
        "net.ipv4.ip_default_ttl",
        "net.ipv4.tcp_rto_min_us",
        "net.ipv4.tcp_reordering",
        "net.ipv4.fib_multipath_hash_policy",
        "net.ipv4.tcp_ecn",
    ];
    let orig: Vec<String> = keys.iter().map(|k| sysctl_in(&ns, k)).collect();
    let profiles: Vec<PathBuf> = keys
        .iter()
        .zip(&orig)
        .enumerate()
        .map(|(i, (k, v))| {
            let new = match v.as_str() {
                "0" | "2" => "1".to_string(),
                "1" => "0".to_string(),
                n => (n.parse::<u64>().unwrap() + 1).to_string(),
            };
            write_profile(
                &format!("lock{i}"),
                &format!("[sysctl]\n\"{k}\" = \"{new}\"\n"),
            )
        })
        .collect();
    // 20 applies at once, each of another sysctl, on one journal.
    let mut kids: Vec<std::process::Child> = profiles
        .iter()
        .map(|p| {
            std::process::Command::new(bin())
                .args([
                    "tune",
                    "apply",
                    "--netns",
                    &ns,
                    "--state-dir",
                    d,
                    "--profile",
                ])
                .arg(p)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let end = Instant::now() + Duration::from_secs(120);
    let mut failed = Vec::new();
    for k in &mut kids {
        loop {
            match k.try_wait().unwrap() {
                Some(st) => {
                    if !st.success() {
                        let mut e = String::new();
                        use std::io::Read;
                        let _ = k.stderr.take().unwrap().read_to_string(&mut e);
                        failed.push(e);
                    }
                    break;
                }
                None if Instant::now() > end => {
                    let _ = k.kill();
                    let _ = k.wait();
                    failed.push("did not finish in 120 s".into());
                    break;
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
    let j = journal_of(&dir);
    let journaled: Vec<(String, String)> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["setting"]["key"].as_str().unwrap_or("").to_string(),
                e["old"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (k, o) in keys.iter().zip(&orig) {
        if sysctl_in(&ns, k) != *o {
            assert!(
                journaled.contains(&(k.to_string(), o.clone())),
                "{k} changed but is not journaled with its old value {o}: {journaled:?}"
            );
        }
    }
    assert!(failed.is_empty(), "applies failed: {failed:?}");
    assert_eq!(journaled.len(), keys.len(), "{journaled:?}");
    // No temporary journal is left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".tmp")), "{names:?}");

    // While another holds the lock, a command waits its --lock-wait and
    // then names the holder.
    let lockf = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("lock"))
        .unwrap();
    lockf.lock().unwrap();
    std::fs::write(dir.join("lock"), format!("{}\n", std::process::id())).unwrap();
    let t = Instant::now();
    let err = fails(&tune_in(&ns, d, "rollback", &["--lock-wait", "1s"]));
    assert!(t.elapsed() >= Duration::from_secs(1));
    assert!(
        err.contains("another wirespeed tune holds the lock")
            && err.contains(&format!("(pid {})", std::process::id())),
        "{err}"
    );
    drop(lockf);
    let rb = ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
    assert!(rb.contains("restored 20 setting(s)"), "{rb}");
    for (k, o) in keys.iter().zip(&orig) {
        assert_eq!(sysctl_in(&ns, k), *o, "{k} not restored");
    }
    for p in &profiles {
        let _ = std::fs::remove_file(p);
    }
    let _ = std::fs::remove_dir_all(&dir);
    lab.down().unwrap();
}

#[test]
fn a_dead_watchdog_cannot_leave_an_unconfirmed_apply_in_place() {
    if !root_or_skip("a_dead_watchdog") {
        return;
    }
    let lab = lab("t-wdog", &SHARED_PAIR.replace("SUBNET", "10.236.50.0/24"));
    let ns = lab.ns("a");
    let dir = state_dir("wdog");
    let d = dir.to_str().unwrap();
    let prof = write_profile(
        "wdog",
        "[sysctl]\n\"net.ipv4.tcp_rto_min_us\" = \"7000\"\n[link]\nmtu = 4000\n",
    );
    let p = prof.to_str().unwrap();
    let orig = sysctl_in(&ns, "net.ipv4.tcp_rto_min_us");
    let out = ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", p, "--dev", "eth0", "--confirm-within", "2s"],
    ));
    let j = journal_of(&dir);
    let pid = j["watchdog_pid"]
        .as_u64()
        .expect("the journal names its watchdog");
    assert!(out.contains(&format!("watchdog pid {pid}")), "{out}");
    assert_eq!(j["boot_id"].as_str().map(str::len), Some(36), "{j}");
    let st = ok(&ws(&["tune", "status", "--netns", &ns, "--state-dir", d]));
    assert!(st.contains(&format!("watchdog pid {pid} running")), "{st}");
    // SIGKILL the watchdog (as the OOM killer would).
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    // Let the deadline pass: nothing fires it now.
    let deadline = j["deadline_unix"].as_f64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    std::thread::sleep(Duration::from_secs_f64((deadline - now).max(0.0) + 0.5));
    assert_eq!(sysctl_in(&ns, "net.ipv4.tcp_rto_min_us"), "7000");
    // status: overdue, named, non-zero.
    let out = ws(&["tune", "status", "--netns", &ns, "--state-dir", d]);
    let err = fails(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("OVERDUE"), "{text}");
    assert!(
        err.contains("deadline passed") && err.contains(&format!("pid {pid}) is gone")),
        "{err}"
    );
    // A late confirm is refused and says to roll back.
    let err = fails(&ws(&["tune", "confirm", "--netns", &ns, "--state-dir", d]));
    assert!(
        err.contains("too late to confirm") && err.contains("rollback"),
        "{err}"
    );
    assert_eq!(sysctl_in(&ns, "net.ipv4.tcp_rto_min_us"), "7000");
    // The next command that touches the host rolls back first, and says so.
    let out = tune_in(&ns, d, "plan", &["--profile", p, "--dev", "eth0"]);
    let plan = ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unconfirmed") && err.contains("rolled it back first"),
        "{err}"
    );
    assert_eq!(sysctl_in(&ns, "net.ipv4.tcp_rto_min_us"), orig);
    assert_eq!(link(&inspect(&ns), "eth0")["mtu"], 1500);
    assert!(
        plan.contains("1500 -> 4000"),
        "the plan sees the restored host: {plan}"
    );
    assert!(!dir.join("journal.json").exists());
    ok(&ws(&["tune", "status", "--netns", &ns, "--state-dir", d]));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

#[test]
fn a_journal_from_an_earlier_boot_is_retired_without_touching_the_host() {
    if !root_or_skip("earlier_boot") {
        return;
    }
    let lab = lab("t-boot", "[[host]]\nname = \"a\"\n");
    let ns = lab.ns("a");
    let dir = state_dir("boot");
    let d = dir.to_str().unwrap();
    let prof = write_profile("boot", "[sysctl]\n\"net.ipv4.tcp_rto_min_us\" = \"7000\"\n");
    ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", prof.to_str().unwrap()],
    ));
    // As after a reboot: another boot id, and the value is what boot set.
    let mut j = journal_of(&dir);
    j["boot_id"] = "00000000-0000-4000-8000-000000000000".into();
    std::fs::write(dir.join("journal.json"), j.to_string()).unwrap();
    let set = |v: &str| {
        assert!(
            lab.command("a", "sysctl")
                .args(["-qw", &format!("net.ipv4.tcp_rto_min_us={v}")])
                .status()
                .unwrap()
                .success()
        )
    };
    set("9000");
    let err = fails(&ws(&["tune", "status", "--netns", &ns, "--state-dir", d]));
    assert!(err.contains("earlier boot"), "{err}");
    let rb = ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
    assert!(rb.contains("earlier boot"), "{rb}");
    assert_eq!(sysctl_in(&ns, "net.ipv4.tcp_rto_min_us"), "9000");
    assert!(!dir.join("journal.json").exists());
    assert!(
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("stale-boot-"))
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

#[test]
fn rollback_restores_the_ipv4_sizes_the_kernel_changed_as_a_side_effect() {
    if !root_or_skip("side_effects") {
        return;
    }
    let lab = lab(
        "t-side",
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
         gso_max_size = 185000\ngro_max_size = 185000\ngso_ipv4_max_size = 40000\ngro_ipv4_max_size = 40000\n",
    );
    let ns = lab.ns("a");
    let dir = state_dir("side");
    let d = dir.to_str().unwrap();
    let before = inspect(&ns);
    assert_eq!(link(&before, "eth0")["gso_ipv4_max_size"], 40000);
    let prof = write_profile(
        "side",
        "[link]\ngso_max_size = 65536\ngro_max_size = 65536\n",
    );
    let out = ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", prof.to_str().unwrap(), "--dev", "eth0"],
    ));
    assert!(
        out.contains("the kernel also changed gso_ipv4_max_size of eth0: 40000 -> 65536"),
        "{out}"
    );
    let mid = link(&inspect(&ns), "eth0").clone();
    assert_eq!(mid["gso_max_size"], 65536);
    assert_eq!(mid["gso_ipv4_max_size"], 65536, "the kernel's side effect");
    let st = ok(&ws(&["tune", "status", "--netns", &ns, "--state-dir", d]));
    assert!(
        st.contains(
            "gso_ipv4_max_size of eth0: 40000 -> 65536 (side effect of gso_max_size of eth0)"
        ),
        "{st}"
    );
    ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
    let after = inspect(&ns);
    let e0 = link(&after, "eth0");
    assert_eq!(e0["gso_max_size"], 185000);
    assert_eq!(
        e0["gso_ipv4_max_size"], 40000,
        "rollback left the side effect"
    );
    assert_eq!(
        e0["gro_ipv4_max_size"], 40000,
        "rollback left the side effect"
    );
    assert_eq!(tunables(&after), tunables(&before));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

#[test]
fn under_netns_only_per_namespace_sysctls_are_set() {
    if !root_or_skip("netns_confines_sysctls") {
        return;
    }
    let lab = lab("t-scope", "[[host]]\nname = \"a\"\n");
    let ns = lab.ns("a");
    let dir = state_dir("scope");
    let d = dir.to_str().unwrap();
    let host = |k: &str| {
        std::fs::read_to_string(format!("/proc/sys/{}", k.replace('.', "/")))
            .unwrap()
            .trim()
            .to_string()
    };
    // The host's own values: even if the refusal failed, nothing would change.
    let keys = ["kernel.hostname", "vm.swappiness", "fs.file-max"];
    let before: Vec<String> = keys.iter().map(|k| host(k)).collect();
    for (k, v) in keys.iter().zip(&before) {
        let prof = write_profile(
            "scope",
            &format!("[sysctl]\n\"net.ipv4.tcp_rto_min_us\" = \"7000\"\n\"{k}\" = \"{v}\"\n"),
        );
        let p = prof.to_str().unwrap();
        for verb in ["plan", "apply"] {
            let err = fails(&ws(&[
                "tune",
                verb,
                "--netns",
                &ns,
                "--state-dir",
                d,
                "--profile",
                p,
            ]));
            assert!(
                err.contains(k) && err.contains("not per network namespace"),
                "{verb} {k}: {err}"
            );
        }
        // Without --netns the key is allowed and named host-wide (plan only:
        // this test changes nothing on the host).
        let plan = ok(&ws(&["tune", "plan", "--state-dir", d, "--profile", p]));
        assert!(
            plan.lines()
                .any(|l| l.contains(&format!("sysctl -w {k}=")) && l.contains("(host-wide)")),
            "{plan}"
        );
        let _ = std::fs::remove_file(&prof);
    }
    assert_eq!(keys.iter().map(|k| host(k)).collect::<Vec<_>>(), before);
    assert_ne!(
        sysctl_in(&ns, "net.ipv4.tcp_rto_min_us"),
        "7000",
        "a refused plan applies nothing"
    );
    assert!(!dir.join("journal.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
    lab.down().unwrap();
}

#[test]
fn rollback_skips_a_deleted_nic_and_retires_the_journal() {
    if !root_or_skip("deleted_nic") {
        return;
    }
    let lab = lab("t-gone", &SHARED_PAIR.replace("SUBNET", "10.237.50.0/24"));
    let ns = lab.ns("a");
    let dir = state_dir("gone");
    let d = dir.to_str().unwrap();
    let orig = sysctl_in(&ns, "net.ipv4.tcp_rto_min_us");
    let prof = write_profile(
        "gone",
        "[sysctl]\n\"net.ipv4.tcp_rto_min_us\" = \"7000\"\n[link]\nmtu = 4000\nsource_routing = true\n[link.features]\n\"rx-gro\" = \"on\"\n",
    );
    ok(&tune_in(
        &ns,
        d,
        "apply",
        &["--profile", prof.to_str().unwrap(), "--dev", "eth1"],
    ));
    let rules_with_table = || {
        let out = run({
            let mut c = std::process::Command::new("ip");
            c.args(["-n", &ns, "rule", "show"]);
            c
        });
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("lookup 1"))
            .count()
    };
    assert_eq!(rules_with_table(), 1, "source routing adds a rule");
    assert!(
        lab.command("a", "ip")
            .args(["link", "del", "eth1"])
            .status()
            .unwrap()
            .success()
    );
    let rb = ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
    assert!(
        rb.contains("skipped mtu of eth1") && rb.contains("no longer exists"),
        "{rb}"
    );
    assert_eq!(sysctl_in(&ns, "net.ipv4.tcp_rto_min_us"), orig);
    assert_eq!(rules_with_table(), 0, "the orphaned rule is removed");
    assert!(!dir.join("journal.json").exists(), "the journal is retired");
    let again = ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
    assert!(again.contains("nothing to roll back"), "{again}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&prof);
    lab.down().unwrap();
}

/// A lab whose host a got FULL_PROFILE on eth1 from an apply that was
/// sent `signal` as soon as its journal existed (the readiness signal:
/// written before the first change).
struct Signalled {
    lab: Lab,
    ns: String,
    dir: PathBuf,
    prof: PathBuf,
    before: Value,
}

impl Signalled {
    fn new(tag: &str, subnet: &str, signal: &str, within: &str) -> Signalled {
        let lab = lab(&format!("t-{tag}"), &SHARED_PAIR.replace("SUBNET", subnet));
        let ns = lab.ns("a");
        let dir = state_dir(tag);
        let prof = write_profile(tag, FULL_PROFILE);
        let before = inspect(&ns);
        let mut child = std::process::Command::new(bin())
            .args(["tune", "apply", "--force", "--netns", &ns, "--state-dir"])
            .arg(&dir)
            .arg("--profile")
            .arg(&prof)
            .args(["--dev", "eth1", "--confirm-within", within])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let end = Instant::now() + Duration::from_secs(30);
        while !dir.join("journal.json").exists() && Instant::now() < end {
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(
            dir.join("journal.json").exists(),
            "the apply never journaled"
        );
        let _ = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        let _ = child.wait();
        Signalled {
            lab,
            ns,
            dir,
            prof,
            before,
        }
    }

    fn d(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    fn done(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.prof);
        self.lab.down().unwrap();
    }
}

#[test]
fn ctrl_c_during_apply_gives_a_whole_guarded_apply() {
    if !root_or_skip("ctrl_c_during_apply") {
        return;
    }
    let t = Signalled::new("int", "10.238.50.0/24", "-INT", "30s");
    // Every step is in place and the watchdog guards it.
    let mid = inspect(&t.ns);
    let e1 = link(&mid, "eth1");
    assert_eq!(e1["mtu"], 9000);
    assert_eq!(e1["gso_ipv4_max_size"], 185000);
    assert_eq!(e1["features"]["rx-gro"]["on"], true);
    assert_eq!(mid["sysctls"]["net.ipv4.tcp_rto_min_us"], "5000");
    let j = journal_of(&t.dir);
    assert!(j["watchdog_pid"].as_u64().is_some(), "no watchdog: {j}");
    ok(&tune_in(&t.ns, t.d(), "status", &[]));
    ok(&tune_in(&t.ns, t.d(), "rollback", &[]));
    assert_eq!(tunables(&inspect(&t.ns)), tunables(&t.before));
    t.done();
}

#[test]
fn an_apply_killed_after_its_journal_is_rolled_back_exactly() {
    if !root_or_skip("apply_killed_after_journal") {
        return;
    }
    // SIGKILL lands somewhere between the journal and the end.
    let t = Signalled::new("kill", "10.239.50.0/24", "-KILL", "2s");
    let j = journal_of(&t.dir);
    let st = tune_in(&t.ns, t.d(), "status", &[]);
    if j["watchdog_pid"].is_null() {
        let err = fails(&st);
        assert!(err.contains("no watchdog was recorded"), "{err}");
    }
    // Whatever the kill left, once the deadline has passed either the
    // watchdog or the next command restores the host exactly.
    std::thread::sleep(Duration::from_millis(2500));
    let p = t.prof.to_str().unwrap();
    let _ = tune_in(&t.ns, t.d(), "plan", &["--profile", p, "--dev", "eth1"]);
    assert!(
        wait_until(10, || !t.dir.join("journal.json").exists()),
        "nothing rolled back"
    );
    assert_eq!(tunables(&inspect(&t.ns)), tunables(&t.before));
    t.done();
}

/// One ethtool feature of `dev` in namespace `ns`, from inspect.
fn feature_on(ns: &str, dev: &str, name: &str) -> bool {
    link(&inspect(ns), dev)["features"][name]["on"]
        .as_bool()
        .unwrap_or_else(|| panic!("no feature {name} on {dev}"))
}

#[test]
fn two_concurrent_applies_of_dependent_features_roll_back_to_the_original() {
    if !root_or_skip("concurrent_features") {
        return;
    }
    // A turns GSO off; B turns scatter-gather and TSO off, and the kernel
    // turns GSO off with scatter-gather. Whatever order the two take the
    // lock in, the rollback must bring every feature back (the defect:
    // A's plan, made before B's apply, journaled B's side effect as
    // GSO's original value, and GSO stayed off after a "successful"
    // rollback).
    let lab = lab("t-feat", &SHARED_PAIR.replace("SUBNET", "10.233.57.0/24"));
    let ns = lab.ns("a");
    let dir = state_dir("feat");
    let d = dir.to_str().unwrap();
    let a = write_profile(
        "feat-a",
        "[link.features]\n\"tx-generic-segmentation\" = \"off\"\n",
    );
    let b = write_profile(
        "feat-b",
        "[link.features]\n\"tx-scatter-gather\" = \"off\"\n\"tx-tcp-segmentation\" = \"off\"\n",
    );
    assert!(feature_on(&ns, "eth0", "tx-generic-segmentation"));
    let before = tunables(&inspect(&ns));
    for round in 0..10 {
        let kids: Vec<std::process::Child> = [&a, &b]
            .iter()
            .map(|p| {
                std::process::Command::new(bin())
                    .args(["tune", "apply", "--netns", &ns, "--state-dir", d])
                    .args(["--dev", "eth0", "--profile"])
                    .arg(p)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for k in kids {
            let out = k.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(!feature_on(&ns, "eth0", "tx-generic-segmentation"));
        let rb = ok(&ws(&["tune", "rollback", "--netns", &ns, "--state-dir", d]));
        assert!(rb.contains("restored"), "round {round}: {rb}");
        assert_eq!(
            tunables(&inspect(&ns)),
            before,
            "round {round}: rollback left a difference ({rb})"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&a);
    let _ = std::fs::remove_file(&b);
    lab.down().unwrap();
}
