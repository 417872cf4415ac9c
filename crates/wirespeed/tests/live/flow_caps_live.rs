//! The lab's per-flow caps (`flow_rate`) over TCP and UDP, IPv4 and IPv6:
//! two namespaces joined by a veth link whose ends put each flow in an
//! HTB class of its own, `wirespeed serve` in one, `wirespeed bench` in
//! the other. Each flow is held near the per-flow rate, not the link's
//! (which is uncapped here), and the sender's tc counters show which
//! bucket classes carried the flows. Needs root; skips otherwise.

use crate::common;
use common::{bin, f, first_result, heavy, lab_spec_with_server, root_or_skip, run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use wirespeed_lab::{Lab, LabSpec};

/// A two-host lab with one uncapped link whose flows are capped at
/// `flow_rate` each over `buckets` buckets, and a server on host b.
fn capped_lab(
    prefix: &str,
    flow_rate: &str,
    buckets: u32,
    big_tcp: bool,
) -> (Lab, common::ServerProc) {
    let mut spec = LabSpec::two_hosts(&Lab::unique(prefix), 1, None);
    let l = &mut spec.links[0];
    l.flow_rate = Some(flow_rate.into());
    l.flows = Some(buckets);
    if big_tcp {
        l.gso_max_size = Some(185_000);
        l.gro_max_size = Some(185_000);
    }
    lab_spec_with_server(&spec)
}

/// The `LOCAL=REMOTE` path from host a to host b over IPv6 (or IPv4).
fn path(lab: &Lab, v6: bool) -> String {
    if v6 {
        format!(
            "{}={}",
            lab.addr6("a", 0).unwrap(),
            lab.addr6("b", 0).unwrap()
        )
    } else {
        common::path(lab, 0)
    }
}

/// Bytes sent so far by each HTB class on host a's NIC, by class id
/// (`tc -s class show`; iproute2 6.1 prints no JSON for htb classes).
fn class_bytes(lab: &Lab) -> BTreeMap<String, u64> {
    let out = Command::new("tc")
        .args(["-n", &lab.ns("a"), "-s", "class", "show", "dev"])
        .arg(lab.dev("a", 0).unwrap())
        .output()
        .expect("run tc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut bytes = BTreeMap::new();
    let mut class = None;
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["class", "htb", id, ..] => class = Some(id.to_string()),
            ["Sent", n, "bytes", ..] => {
                if let Some(c) = class.take() {
                    bytes.insert(c, n.parse().expect("a byte count"));
                }
            }
            _ => {}
        }
    }
    bytes
}

/// What a run moved through host a's classes: the bytes of each bucket
/// class that moved any, and of the default class 1:2.
struct Classes {
    buckets: Vec<u64>,
    default: u64,
}

impl Classes {
    /// All bytes the run moved.
    fn total(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.default
    }

    /// How many bucket classes carried over a quarter of them each (a
    /// flow's bucket, not the control connection's).
    fn carrying(&self) -> usize {
        let total = self.total();
        self.buckets.iter().filter(|b| **b * 4 > total).count()
    }
}

/// Runs `bench` from host a with `args` and returns its first result
/// and the bytes each class sent meanwhile.
fn bench(lab: &Lab, args: &[&str]) -> (Value, Classes) {
    let before = class_bytes(lab);
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server, "--json"]).args(args);
    let r = first_result(&run(cmd));
    let after = class_bytes(lab);
    let moved = |c: &str| after[c] - before.get(c).copied().unwrap_or(0);
    let buckets = after
        .keys()
        .filter(|c| c.len() == 5 && c.starts_with("1:1"))
        .map(|c| moved(c))
        .filter(|b| *b > 0)
        .collect();
    (
        r,
        Classes {
            buckets,
            default: moved("1:2"),
        },
    )
}

/// Each flow's goodput, bits per second.
fn flow_rates(r: &Value) -> Vec<f64> {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fl| f(fl, "throughput_bps"))
        .collect()
}

/// Asserts that two flows each went through a bucket of their own and
/// next to nothing through the default class.
fn two_buckets(c: &Classes, what: &str) {
    assert_eq!(c.carrying(), 2, "{what}: buckets {:?}", c.buckets);
    assert!(
        c.default * 50 < c.total(),
        "{what}: default class {} of {} bytes",
        c.default,
        c.total()
    );
}

/// Two TCP flows over IPv6 in a fresh lab whose flows are capped at
/// `flow_rate` (BIG TCP on if `big_tcp`): each flow's goodput, after
/// checking that each went through a bucket class of its own.
fn two_ipv6_tcp_flows(prefix: &str, flow_rate: &str, big_tcp: bool) -> Vec<f64> {
    let (lab, _server) = capped_lab(prefix, flow_rate, 64, big_tcp);
    let p = path(&lab, true);
    let (r, classes) = bench(
        &lab,
        &["-F", "2", "-d", "2s", "--warmup", "0.5s", "--path", &p],
    );
    let rates = flow_rates(&r);
    eprintln!(
        "{prefix}: ipv6 tcp flows {rates:?}, buckets {:?}, default {}",
        classes.buckets, classes.default
    );
    two_buckets(&classes, prefix);
    rates
}

// Two TCP flows over IPv6, each capped at 100 Mbit/s on a link that
// carries gigabits: each flow gets its cap's goodput (1428 of 1514 bytes
// a frame), the two together twice that, through two bucket classes.
#[test]
fn ipv6_tcp_flows_are_capped_each() {
    if !root_or_skip("ipv6_tcp_flows_are_capped_each") {
        return;
    }
    let _g = heavy();
    let rates = two_ipv6_tcp_flows("t-fc6", "100mbit", false);
    let goodput = 100e6 * 1428.0 / 1514.0;
    for x in &rates {
        assert!(
            (0.7..=1.03).contains(&(x / goodput)),
            "flows {rates:?} against {goodput}"
        );
    }
}

// BIG TCP over IPv6 sends packets above 64 KB with a hop-by-hop header in
// front of TCP's: they are capped per flow too (1 Gbit/s each, where BIG
// packets appear), not left to the default class at the link's rate.
#[test]
fn big_tcp_ipv6_flows_are_capped_each() {
    if !root_or_skip("big_tcp_ipv6_flows_are_capped_each") {
        return;
    }
    let _g = heavy();
    let rates = two_ipv6_tcp_flows("t-fcbig", "1gbit", true);
    // A loaded CI machine may not fill the cap; no flow passes it.
    for x in &rates {
        assert!(
            (0.2e9..=1.03e9).contains(x),
            "flows {rates:?} against 1 Gbit/s each"
        );
    }
}

// Two UDP flows, each sent at 200 Mbit/s into a 100 Mbit/s per-flow cap,
// over IPv4 and IPv6: each flow receives its cap's worth, the rest is
// lost (GSO off, so the bucket's queue drops rather than holds the
// socket back). UDP ports are random, so two flows share one of the 256
// buckets with odds 1/256: a run that shows one bucket is run again.
#[test]
fn udp_flows_are_capped_each_over_ipv4_and_ipv6() {
    if !root_or_skip("udp_flows_are_capped_each_over_ipv4_and_ipv6") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = capped_lab("t-fcudp", "100mbit", 256, false);
    for v6 in [false, true] {
        let what = if v6 { "udp ipv6" } else { "udp ipv4" };
        let p = path(&lab, v6);
        let args = [
            "-w",
            "udp-stream",
            "-l",
            "1400",
            "-b",
            "200mbit",
            "-F",
            "2",
            "--no-gso",
            "--sndbuf",
            "4m",
            "-d",
            "2s",
            "--warmup",
            "0.3s",
            "--path",
            &p,
        ];
        let (mut r, mut classes) = bench(&lab, &args);
        for _ in 0..2 {
            if classes.carrying() >= 2 {
                break;
            }
            eprintln!("{what}: both flows hashed to one bucket; running again");
            (r, classes) = bench(&lab, &args);
        }
        let rates = flow_rates(&r);
        eprintln!(
            "{what} flows {rates:?}, loss {}%, buckets {:?}, default {}",
            r["udp"]["loss_pct"], classes.buckets, classes.default
        );
        let header = if v6 { 40.0 } else { 20.0 };
        let goodput = 100e6 * 1400.0 / (1400.0 + 8.0 + header + 14.0);
        for x in &rates {
            assert!(
                (0.7..=1.03).contains(&(x / goodput)),
                "{what}: flows {rates:?} against {goodput}"
            );
        }
        // What the cap held back is lost, and counted.
        for fl in r["flows"].as_array().unwrap() {
            let u = |k: &str| fl["udp"][k].as_u64().unwrap();
            assert_eq!(
                u("datagrams_sent") - u("datagrams_received"),
                u("lost"),
                "{fl}"
            );
            assert!(f(&fl["udp"], "loss_pct") > 10.0, "{what}: {fl}");
        }
        two_buckets(&classes, what);
    }
}
