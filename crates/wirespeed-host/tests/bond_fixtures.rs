//! Bonds cannot be created on the test kernel: their sysfs and
//! /proc/net/bonding trees are recorded fixtures. Read them, diagnose
//! them (layer2 with one peer, layer3+4 under VXLAN), and set the hash
//! policy through tune on a copy of the tree, then roll it back.

use std::path::{Path, PathBuf};
use wirespeed_host::doctor::{Goal, diagnose};
use wirespeed_host::fsroot::{Fs, read_bond};
use wirespeed_host::snapshot::{BigTcpSupport, Known, Link, Snapshot};
use wirespeed_host::tune::{self, Action, Host, Setting, StateDir};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn link(index: u32, name: &str, kind: &str) -> Link {
    let mut l = Link::new(index, name, kind);
    l.up = true;
    l.mtu = 9000;
    l.max_mtu = Some(9000);
    l
}

fn snapshot_with(fixture_name: &str, vxlan_over_bond: bool) -> Snapshot {
    let fs = Fs::at(fixture(fixture_name));
    let mut bond = link(3, "bond0", "bond");
    bond.addresses = vec!["10.9.0.1/24".into()];
    bond.bond = Some(read_bond(&fs, "bond0").expect("fixture bond"));
    bond.slaves = vec!["ens1f0".into(), "ens1f1".into()];
    let mut links = vec![bond];
    if vxlan_over_bond {
        let mut vx = link(4, "vxlan0", "vxlan");
        vx.mtu = 8950;
        vx.lower = Some("bond0".into());
        vx.addresses = vec!["10.99.0.1/24".into()];
        links.push(vx);
    }
    Snapshot {
        schema_version: 1,
        hostname: "fixture".into(),
        netns: None,
        kernel: "6.1.0".into(),
        cpus: 32,
        mem_total_bytes: Known::Value(64 << 30),
        big_tcp: BigTcpSupport {
            ipv6: true,
            ipv4: false,
        },
        links,
        routes: vec![],
        rules: vec![],
        egress: vec![],
        sysctls: Default::default(),
        sysctl_readonly: vec![],
    }
}

#[test]
fn recorded_bonds_read_with_mode_policy_and_slave_state() {
    let b = read_bond(&Fs::at(fixture("bond-8023ad-layer2")), "bond0").unwrap();
    assert_eq!(b.mode, "802.3ad");
    assert_eq!(b.xmit_hash_policy, "layer2");
    assert_eq!(b.miimon, Some(100));
    assert_eq!(b.slaves.len(), 2);
    assert_eq!(
        (
            b.slaves[0].name.as_str(),
            b.slaves[0].mii_status.as_str(),
            b.slaves[0].speed_mbps
        ),
        ("ens1f0", "up", Some(25000))
    );
    assert_eq!(
        (b.slaves[1].mii_status.as_str(), b.slaves[1].speed_mbps),
        ("down", None)
    );
    let x = read_bond(&Fs::at(fixture("bond-xor-layer34")), "bond0").unwrap();
    assert_eq!(
        (x.mode.as_str(), x.xmit_hash_policy.as_str()),
        ("balance-xor", "layer3+4")
    );
    assert!(read_bond(&Fs::at(fixture("bond-xor-layer34")), "bond9").is_err());
}

#[test]
fn proc_bonding_alone_is_enough() {
    let text =
        std::fs::read_to_string(fixture("bond-8023ad-layer23").join("proc/net/bonding/bond0"))
            .unwrap();
    let b = wirespeed_host::fsroot::parse_proc_bonding(&text);
    assert_eq!(
        (b.mode.as_str(), b.xmit_hash_policy.as_str()),
        ("802.3ad", "layer2+3")
    );
    assert_eq!(b.slaves.len(), 2);
}

fn bond_finding(s: &Snapshot) -> Option<wirespeed_host::Finding> {
    diagnose(s, &Goal::default())
        .into_iter()
        .find(|f| f.id == "bond-hash")
}

#[test]
fn doctor_flags_hash_policies_that_cannot_spread_flows() {
    let f = bond_finding(&snapshot_with("bond-8023ad-layer2", false)).expect("layer2 flagged");
    assert_eq!(f.actions[0].value, "layer3+4");
    assert!(f.evidence.iter().any(|e| e.value == "layer2"));
    assert_eq!(
        f.actions[0].command(),
        "ip link set dev bond0 type bond xmit_hash_policy layer3+4"
    );
    // layer3+4 is right for host networking...
    assert!(bond_finding(&snapshot_with("bond-xor-layer34", false)).is_none());
    // ...but not under VXLAN: the outer headers are alike.
    let v = bond_finding(&snapshot_with("bond-xor-layer34", true))
        .expect("vxlan over layer3+4 flagged");
    assert_eq!(v.actions[0].value, "encap3+4");
    assert!(v.why.contains("vxlan0"));
    assert_eq!(
        bond_finding(&snapshot_with("bond-8023ad-layer23", false))
            .unwrap()
            .actions[0]
            .value,
        "layer3+4"
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

#[test]
fn tune_sets_and_rolls_back_a_recorded_bond_policy() {
    let root = std::env::temp_dir().join(format!("ws-bond-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    copy_tree(&fixture("bond-8023ad-layer2"), &root);
    let snap = snapshot_with("bond-8023ad-layer2", false);
    let host = Host::open(Fs::at(&root));
    let why = "no netlink socket here";
    if !wirespeed_testkit::require(
        host.is_ok(),
        why,
        "tune_sets_and_rolls_back_a_recorded_bond_policy",
    ) {
        return;
    }
    let mut host = host.unwrap();
    let state = StateDir::new(root.join("state"));
    let action = Action {
        setting: Setting::BondHashPolicy {
            dev: "bond0".into(),
        },
        value: "layer3+4".into(),
    };
    let plan = host.plan("test", vec![action], &snap).unwrap();
    assert_eq!(plan.steps[0].current, "layer2");
    tune::apply(&mut host, &state, &plan, None).unwrap();
    let policy = root.join("sys/class/net/bond0/bonding/xmit_hash_policy");
    assert_eq!(std::fs::read_to_string(&policy).unwrap().trim(), "layer3+4");
    tune::rollback(&mut host, &state).unwrap();
    assert_eq!(std::fs::read_to_string(&policy).unwrap().trim(), "layer2");
    let bad = Action {
        setting: Setting::BondHashPolicy {
            dev: "bond0".into(),
        },
        value: "layer9".into(),
    };
    let e = host.plan("test", vec![bad], &snap).unwrap_err().to_string();
    assert!(e.contains("not a bond hash policy"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}
