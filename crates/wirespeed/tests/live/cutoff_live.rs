//! doctor and tune never cut off the host they run on (issue 13), live:
//! a host whose eth0 leads to a gateway namespace, with a narrow (MTU
//! 1400) hop behind the gateway's 9000-capable veth. doctor measures the
//! path and withholds jumbo advice; a forced MTU-9000 apply on that path
//! rolls back within seconds because the full-size check fails; on a
//! 9000-clean path it is kept after `tune confirm`; a plan touching the
//! default-route NIC gets the 120 s deadline by default; the SSH peer and
//! the session's own connections are found. Needs root; skips otherwise.

use crate::common;
use common::{bin, root_or_skip, serve, ws};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use wirespeed_lab::{Lab, LabSpec};

/// host h --eth0 (h end HOST_MTU, gw end 9000)--> gw --(FAR_MTU)--> far;
/// h's default route via gw; gw forwards and answers ICMP unthrottled.
struct Path3 {
    lab: Lab,
    h: String,
    far: String,
    gw_addr: String,
}

fn path3(tag: &str, host_mtu: u32, far_mtu: u32) -> Path3 {
    let name = Lab::unique(tag);
    let spec = LabSpec::from_toml_str(&format!(
        r#"name = "{name}"
[[host]]
name = "h"
[[host]]
name = "gw"
sysctl = {{ "net.ipv4.ip_forward" = "1", "net.ipv4.icmp_ratelimit" = "0" }}
[[host]]
name = "far"
[[link]]
a = "h"
b = "gw"
mtu = 9000
subnet = "10.213.1.0/24"
[[link]]
a = "gw"
b = "far"
mtu = {far_mtu}
subnet = "10.213.2.0/24"
[[route]]
host = "h"
dst = "0.0.0.0/0"
links = [0]
[[route]]
host = "far"
dst = "10.213.1.0/24"
links = [1]
"#
    ))
    .expect("lab spec");
    let lab = Lab::up(&spec).expect("lab up");
    let h = lab.ns("h");
    let st = Command::new("ip")
        .args([
            "-n",
            &h,
            "link",
            "set",
            "eth0",
            "mtu",
            &host_mtu.to_string(),
        ])
        .status()
        .unwrap();
    assert!(st.success());
    Path3 {
        far: lab.addr4("far", 1).unwrap().to_string(),
        gw_addr: lab.addr4("gw", 0).unwrap().to_string(),
        h,
        lab,
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "wirespeed failed:\n{}", text(out));
    assert!(!text(out).contains("panicked"), "{}", text(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn mtu_of(ns: &str) -> u64 {
    let s: Value = serde_json::from_str(&ok(&ws(&["inspect", "--netns", ns, "--json"]))).unwrap();
    s["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "eth0")
        .unwrap()["mtu"]
        .as_u64()
        .unwrap()
}

/// A state directory and a profile file removed on drop.
struct Files {
    dir: PathBuf,
    prof: PathBuf,
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.prof);
    }
}

fn files(tag: &str, profile: &str) -> Files {
    let base = std::env::temp_dir().join(format!("ws-cutoff-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let prof = base.with_extension("toml");
    std::fs::write(&prof, profile).unwrap();
    Files { dir: base, prof }
}

fn no_mtu_fix(doc: &Value) -> bool {
    doc["findings"].as_array().unwrap().iter().all(|f| {
        f["actions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["setting"]["kind"] != "mtu")
    })
}

#[test]
fn doctor_measures_the_narrow_hop_and_withholds_jumbo_advice() {
    if !root_or_skip("doctor_measures_the_narrow_hop") {
        return;
    }
    // eth0 at 1500: the hop behind the gateway answers "fragmentation
    // needed" for 1500-byte probes toward far.
    let p = path3("t-pmtu", 1500, 1400);
    let mut far = p.lab.command("far", bin());
    far.args(["serve", "--bind", &p.far]);
    let _server = serve(far);
    let out = ok(&ws(&[
        "doctor",
        "--netns",
        &p.h,
        "--peer",
        &p.far,
        "--test-duration",
        "0.5s",
        "--json",
    ]));
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(no_mtu_fix(&doc), "an MTU fix was proposed: {out}");
    let path = doc["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["target"] == p.far.as_str())
        .unwrap_or_else(|| panic!("no path measured toward far: {out}"));
    assert_eq!(path["mtu"], 1400, "{path}");
    assert_eq!(path["exact"], true, "{path}");
    assert_eq!(path["dev"], "eth0");
    let gw = doc["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["role"] == "gateway")
        .expect("the gateway is probed");
    assert_eq!(gw["target"], p.gw_addr.as_str());
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "path-mtu")
        .unwrap_or_else(|| panic!("no path-mtu finding: {out}"));
    assert!(f["title"].as_str().unwrap().contains("1400"), "{f}");
    assert!(
        f["why"].as_str().unwrap().contains("1348 bytes at 1400"),
        "{f}"
    );
    // The VM of the issue: eth0 itself at 1400 (max_mtu 65535), path 1400.
    let st = Command::new("ip")
        .args(["-n", &p.h, "link", "set", "eth0", "mtu", "1400"])
        .status()
        .unwrap();
    assert!(st.success());
    let out = ok(&ws(&["doctor", "--netns", &p.h, "--json"]));
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(no_mtu_fix(&doc), "an MTU fix was proposed on the VM: {out}");
    let j = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "jumbo-frames")
        .unwrap_or_else(|| panic!("no jumbo-frames evidence: {out}"));
    let ev = j["evidence"].to_string();
    assert!(ev.contains("at least 1400 bytes"), "{ev}");
    let table = ok(&ws(&["doctor", "--netns", &p.h]));
    assert!(!table.contains("mtu 9000"), "{table}");
    p.lab.down().unwrap();
}

#[test]
fn a_hop_that_drops_large_packets_silently_is_found_by_the_search() {
    if !root_or_skip("silent_drop") {
        return;
    }
    // The gateway's own end at 1400 behind h's 1500: veth drops larger
    // frames without a word, so only silence shows the limit.
    let p = path3("t-pmsil", 1500, 9000);
    let gw = p.lab.ns("gw");
    let st = Command::new("ip")
        .args(["-n", &gw, "link", "set", "eth0", "mtu", "1400"])
        .status()
        .unwrap();
    assert!(st.success());
    let t = Instant::now();
    let out = ok(&ws(&["doctor", "--netns", &p.h, "--json"]));
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let doc: Value = serde_json::from_str(&out).unwrap();
    let path = &doc["paths"][0];
    let m = path["mtu"].as_u64().unwrap();
    // veth lets 4 bytes of VLAN slack through: 1400..=1404 on the wire.
    assert!((1400..=1404).contains(&m), "{path}");
    assert_eq!(path["exact"], true);
    assert!(path["how"].as_str().unwrap().contains("silently"), "{path}");
    assert!(no_mtu_fix(&doc), "{out}");
    p.lab.down().unwrap();
}

const JUMBO: &str = "[link]\nmtu = 9000\n";

#[test]
fn a_forced_jumbo_apply_on_a_narrow_path_rolls_back_at_once() {
    if !root_or_skip("forced_jumbo_rolls_back") {
        return;
    }
    let p = path3("t-pmfor", 1500, 1400);
    let f = files("forced", JUMBO);
    let d = f.dir.to_str().unwrap();
    let pr = f.prof.to_str().unwrap();
    let base = [
        "tune",
        "apply",
        "--netns",
        &p.h,
        "--state-dir",
        d,
        "--profile",
        pr,
        "--dev",
        "eth0",
        "--peer",
        &p.far,
    ];
    // Without --force the unverified step is skipped: nothing changes.
    let out = ok(&ws(&base));
    assert!(out.contains("UNVERIFIED"), "{out}");
    assert!(out.contains("carries 1400 bytes at most"), "{out}");
    assert_eq!(mtu_of(&p.h), 1500);
    // Forced, with a deadline: the full-size check toward far fails and
    // the apply rolls back at once, long before the 60 s deadline.
    let mut args = base.to_vec();
    args.extend(["--force", "--confirm-within", "60s"]);
    let t = Instant::now();
    let out = ws(&args);
    let took = t.elapsed();
    let all = text(&out);
    assert!(!out.status.success(), "the apply was kept: {all}");
    assert!(took < Duration::from_secs(15), "took {took:?}: {all}");
    assert!(all.contains("full-size check toward peer"), "{all}");
    assert!(all.contains("1400"), "{all}");
    assert!(all.contains("rolled back at once"), "{all}");
    assert!(!all.contains("panicked"), "{all}");
    assert_eq!(mtu_of(&p.h), 1500);
    let st = ok(&ws(&["tune", "status", "--netns", &p.h, "--state-dir", d]));
    assert!(st.contains("no journal"), "{st}");
    p.lab.down().unwrap();
}

#[test]
fn a_jumbo_apply_on_a_clean_path_is_kept_after_confirm() {
    if !root_or_skip("jumbo_clean_path_kept") {
        return;
    }
    let p = path3("t-pmok", 1500, 9000);
    let f = files("clean", JUMBO);
    let d = f.dir.to_str().unwrap();
    let out = ok(&ws(&[
        "tune",
        "apply",
        "--netns",
        &p.h,
        "--state-dir",
        d,
        "--profile",
        f.prof.to_str().unwrap(),
        "--dev",
        "eth0",
        "--peer",
        &p.far,
        "--force",
        "--confirm-within",
        "60s",
    ]));
    assert!(
        out.contains(&format!(
            "check passed: a 9000-byte packet (don't fragment) gets through to peer {}",
            p.far
        )),
        "{out}"
    );
    assert!(out.contains("gets through to gateway"), "{out}");
    assert!(out.contains("roll back in 60 s"), "{out}");
    let st = ok(&ws(&["tune", "status", "--netns", &p.h, "--state-dir", d]));
    assert!(
        st.contains("rolls back in") && st.contains("running"),
        "{st}"
    );
    let c = ok(&ws(&["tune", "confirm", "--netns", &p.h, "--state-dir", d]));
    assert!(c.contains("confirmed"), "{c}");
    let st = ok(&ws(&["tune", "status", "--netns", &p.h, "--state-dir", d]));
    assert!(st.contains("confirmed"), "{st}");
    assert_eq!(mtu_of(&p.h), 9000);
    ok(&ws(&[
        "tune",
        "rollback",
        "--netns",
        &p.h,
        "--state-dir",
        d,
    ]));
    assert_eq!(mtu_of(&p.h), 1500);
    p.lab.down().unwrap();
}

#[test]
fn a_plan_touching_the_default_route_nic_gets_the_default_deadline() {
    if !root_or_skip("default_deadline") {
        return;
    }
    let p = path3("t-pmdef", 1500, 1500);
    let f = files("default", "[link.features]\n\"rx-gro\" = \"on\"\n");
    let d = f.dir.to_str().unwrap();
    let pr = f.prof.to_str().unwrap();
    let plan = ok(&ws(&[
        "tune",
        "plan",
        "--netns",
        &p.h,
        "--state-dir",
        d,
        "--profile",
        pr,
        "--dev",
        "eth0",
    ]));
    assert!(
        plan.contains(&format!(
            "eth0 carries the IPv4 default route via {}",
            p.gw_addr
        )),
        "{plan}"
    );
    let out = ok(&ws(&[
        "tune",
        "apply",
        "--netns",
        &p.h,
        "--state-dir",
        d,
        "--profile",
        pr,
        "--dev",
        "eth0",
    ]));
    assert!(out.contains("roll back in 120 s"), "{out}");
    assert!(out.contains("check passed: gateway"), "{out}");
    let st = ok(&ws(&["tune", "status", "--netns", &p.h, "--state-dir", d]));
    assert!(st.contains("rolls back in 1"), "{st}");
    assert!(st.contains("running"), "the watchdog is armed: {st}");
    ok(&ws(&["tune", "confirm", "--netns", &p.h, "--state-dir", d]));
    let st = ok(&ws(&["tune", "status", "--netns", &p.h, "--state-dir", d]));
    assert!(st.contains("confirmed"), "{st}");
    ok(&ws(&[
        "tune",
        "rollback",
        "--netns",
        &p.h,
        "--state-dir",
        d,
    ]));
    // --no-confirm: applied without a deadline, as asked.
    let out = ok(&ws(&[
        "tune",
        "apply",
        "--netns",
        &p.h,
        "--state-dir",
        d,
        "--profile",
        pr,
        "--dev",
        "eth0",
        "--no-confirm",
    ]));
    assert!(!out.contains("roll back in"), "{out}");
    let st = ok(&ws(&["tune", "status", "--netns", &p.h, "--state-dir", d]));
    assert!(st.contains("confirmed"), "{st}");
    ok(&ws(&[
        "tune",
        "rollback",
        "--netns",
        &p.h,
        "--state-dir",
        d,
    ]));
    p.lab.down().unwrap();
}

#[test]
fn the_ssh_peer_and_the_sessions_own_connections_mark_their_nic() {
    if !root_or_skip("ssh_peer_marks") {
        return;
    }
    // h: eth0 to gw (default route), eth1 to gw on a second link.
    let name = Lab::unique("t-pmssh");
    let spec = LabSpec::from_toml_str(&format!(
        "name = \"{name}\"\n[[host]]\nname = \"h\"\n[[host]]\nname = \"gw\"\n\
         [[link]]\na = \"h\"\nb = \"gw\"\n[[link]]\na = \"h\"\nb = \"gw\"\n"
    ))
    .unwrap();
    let lab = Lab::up(&spec).unwrap();
    let h = lab.ns("h");
    let peer1 = lab.addr4("gw", 1).unwrap().to_string();
    let f = files("ssh", "[link.features]\n\"rx-gro\" = \"on\"\n");
    let d = f.dir.to_str().unwrap();
    let pr = f.prof.to_str().unwrap();
    let plan_args = [
        "tune",
        "plan",
        "--netns",
        &h,
        "--state-dir",
        d,
        "--profile",
        pr,
        "--dev",
        "eth1",
    ];
    // No session by eth1: not marked.
    let plain = Command::new(bin())
        .args(plan_args)
        .env_remove("SSH_CONNECTION")
        .output()
        .unwrap();
    assert!(!ok(&plain).contains("carries"), "{}", text(&plain));
    // SSH_CONNECTION names a client reached by eth1.
    let ssh = Command::new(bin())
        .args(plan_args)
        .env(
            "SSH_CONNECTION",
            format!("{peer1} 50022 {} 22", lab.addr4("h", 1).unwrap()),
        )
        .output()
        .unwrap();
    let out = ok(&ssh);
    assert!(
        out.contains(&format!("eth1 carries your SSH session from {peer1}")),
        "{out}"
    );
    // The session's own connection: the shell that runs wirespeed holds
    // a TCP connection to a server on gw, reached by eth1.
    let mut srv = lab.command("gw", bin());
    srv.args(["serve", "--bind", &peer1, "--port", "5399"]);
    let _server = serve(srv);
    let script = format!(
        "exec 3<>/dev/tcp/{peer1}/5399 && {} {}; r=$?; exec 3<&-; exit $r",
        bin(),
        plan_args[..]
            .iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let held = lab
        .command("h", "bash")
        .args(["-c", &script])
        .env_remove("SSH_CONNECTION")
        .output()
        .unwrap();
    let out = ok(&held);
    assert!(
        out.contains("eth1 carries the connection of bash") && out.contains(&peer1),
        "{out}"
    );
    lab.down().unwrap();
}
