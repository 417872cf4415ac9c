//! Fuzz body for tune profiles (wirespeed-host's `profiles`). Shared by the
//! `tune_profile` fuzz target and crates/wirespeed-host/tests/fuzz_corpus.rs,
//! which replays the corpus.

use std::collections::BTreeMap;
use wirespeed_host::profiles::{actions, parse};
use wirespeed_host::snapshot::{BigTcpSupport, Link};
use wirespeed_host::tune::check_action;
use wirespeed_host::{Fs, Known, Snapshot};

/// A profile file's text as `tune apply --profile FILE` reads it: parsed
/// and checked, turned into actions for a host with one NIC, and every
/// action put through tune's safety rules (against a file tree that does
/// not exist, so nothing is read or written).
pub fn tune_profile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(profile) = parse("fuzz", text) else {
        return;
    };
    let snap = host();
    let Ok(list) = actions(&profile, &[], &snap) else {
        return;
    };
    let fs = Fs::at("/nonexistent/wirespeed-fuzz");
    for a in &list {
        let _ = (a.command(), a.setting.label());
        let _ = check_action(a, &snap, &fs, false);
    }
}

/// A host with one used NIC and the buffer sysctls a profile raises.
fn host() -> Snapshot {
    let mut eth = Link::new(2, "eth0", "physical");
    eth.up = true;
    eth.mtu = 1500;
    eth.max_mtu = Some(9000);
    eth.addresses = vec!["10.0.0.1/24".into()];
    let sysctls: BTreeMap<String, Known<String>> = [
        ("net.core.rmem_max", "212992"),
        ("net.core.wmem_max", "212992"),
        ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
        ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Known::Value(v.to_string())))
    .collect();
    Snapshot {
        schema_version: 1,
        hostname: "fuzz".into(),
        netns: None,
        kernel: "6.1.0".into(),
        cpus: 4,
        mem_total_bytes: Known::Value(8 << 30),
        big_tcp: BigTcpSupport {
            ipv6: true,
            ipv4: true,
        },
        links: vec![eth],
        routes: vec![],
        rules: vec![],
        egress: vec![],
        sysctls,
        sysctl_readonly: vec![],
    }
}
