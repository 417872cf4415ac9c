//! Doctor: rules over a [`Snapshot`] that name what limits bandwidth or
//! latency, with the values read as evidence, the reason, and the fix as
//! [`Action`]s (and bench flags where the fix is in how one tests).
//! Pure: no I/O (path measurements come in as [`PathMtu`]s).

use crate::guard::mtu_doubt;
use crate::inspect::{network, parse_cidr};
use crate::pathmtu::PathMtu;
use crate::snapshot::{Link, Snapshot};
use crate::tune::{Action, Setting};
use std::net::IpAddr;
pub use wirespeed_types::host::finding::{Evidence, Finding, Severity};

/// What the user is after.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// Wanted throughput in bit/s (None: the sum of the used links' speeds).
    pub bps: Option<f64>,
    /// Round-trip time to size buffers for, in microseconds.
    pub rtt_us: f64,
    /// Request/response work (latency) rather than bulk transfer.
    pub rr: bool,
}

impl Default for Goal {
    fn default() -> Self {
        Goal {
            bps: None,
            rtt_us: 500.0,
            rr: false,
        }
    }
}

fn ev(name: impl Into<String>, value: impl ToString) -> Evidence {
    Evidence {
        name: name.into(),
        value: value.to_string(),
    }
}

/// The links that carry traffic: up, not loopback, with an address.
pub fn used_links(s: &Snapshot) -> Vec<&Link> {
    s.links
        .iter()
        .filter(|l| l.kind != "loopback" && l.up && !l.addresses.is_empty())
        .collect()
}

fn set(setting: Setting, value: impl ToString) -> Action {
    Action {
        setting,
        value: value.to_string(),
    }
}

/// Runs every rule, with no path measured (MTU raises come out unverified).
pub fn diagnose(s: &Snapshot, goal: &Goal) -> Vec<Finding> {
    diagnose_measured(s, goal, &[])
}

/// Runs every rule, with the path MTUs measured toward the gateways and
/// peers as evidence for the rules that depend on the path.
pub fn diagnose_measured(s: &Snapshot, goal: &Goal, paths: &[PathMtu]) -> Vec<Finding> {
    let mut out = Vec::new();
    second_nic_unused(s, &mut out);
    ecmp_hash(s, &mut out);
    bond_hash(s, &mut out);
    jumbo_frames(s, paths, &mut out);
    socket_buffers(s, goal, &mut out);
    offloads(s, &mut out);
    big_tcp(s, &mut out);
    slow_start(s, goal, &mut out);
    busy_poll(s, goal, &mut out);
    overlay(s, &mut out);
    congestion_control(s, &mut out);
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// An IPv4 CIDR's network address (None for IPv6 and host routes).
fn v4_subnet(cidr: &str) -> Option<IpAddr> {
    match parse_cidr(cidr)? {
        (ip @ IpAddr::V4(_), len) if len < 32 => Some(network(ip, len)),
        _ => None,
    }
}

fn second_nic_unused(s: &Snapshot, out: &mut Vec<Finding>) {
    let links = used_links(s);
    let mut by_subnet: std::collections::BTreeMap<IpAddr, Vec<(&Link, String)>> =
        Default::default();
    for l in &links {
        for a in &l.addresses {
            if let Some(net) = v4_subnet(a) {
                by_subnet.entry(net).or_default().push((l, a.clone()));
            }
        }
    }
    for (_, members) in by_subnet {
        let devs: std::collections::BTreeSet<&str> =
            members.iter().map(|(l, _)| l.name.as_str()).collect();
        if devs.len() < 2 {
            continue;
        }
        let mut evidence = Vec::new();
        let mut actions = Vec::new();
        for (l, cidr) in &members {
            let ip = cidr.split('/').next().unwrap_or("");
            let leaves = s
                .egress
                .iter()
                .find(|e| e.address == ip)
                .and_then(|e| e.leaves_by.clone());
            evidence.push(ev(
                format!("{ip} on {}", l.name),
                format!("leaves by {}", leaves.as_deref().unwrap_or("unknown")),
            ));
            if leaves.as_deref() != Some(l.name.as_str()) {
                actions.push(set(
                    Setting::SourceRoute {
                        dev: l.name.clone(),
                        addr: cidr.clone(),
                        table: 100 + l.index,
                        priority: 1000 + l.index,
                    },
                    "present",
                ));
            }
        }
        if actions.is_empty() {
            continue;
        }
        let unused: Vec<String> = actions
            .iter()
            .filter_map(|a| a.setting.dev().map(String::from))
            .collect();
        out.push(Finding {
            id: "second-nic-unused".into(),
            severity: Severity::Critical,
            title: format!("{} share one subnet without per-NIC source routing: {} never sends", devs.iter().copied().collect::<Vec<_>>().join(", "), unused.join(", ")),
            evidence,
            why: "The main table has one route for the subnet, so traffic from every local address leaves by the same NIC; the other NIC's bandwidth is never used (report 2: each extra NIC needs a route via its own interface).".into(),
            actions,
            bench_flags: Some("--paths LOCAL1=REMOTE1,LOCAL2=REMOTE2 (one path per NIC)".into()),
            unverified: None,
        });
    }
}

fn ecmp_hash(s: &Snapshot, out: &mut Vec<Finding>) {
    for (fam, key) in [
        (4u8, "net.ipv4.fib_multipath_hash_policy"),
        (6, "net.ipv6.fib_multipath_hash_policy"),
    ] {
        let multipath: Vec<_> = s
            .routes
            .iter()
            .filter(|r| r.family == fam && r.nexthops.len() > 1)
            .collect();
        if multipath.is_empty() || s.sysctl(key) != Some("0") {
            continue;
        }
        let mut evidence = vec![ev(key, "0 (L3: source and destination address only)")];
        for r in &multipath {
            let hops: Vec<String> = r
                .nexthops
                .iter()
                .map(|h| h.dev.clone().unwrap_or_default())
                .collect();
            evidence.push(ev(
                format!("route {}", r.dst),
                format!("multipath over {}", hops.join(", ")),
            ));
        }
        out.push(Finding {
            id: "ecmp-l3-hash".into(),
            severity: Severity::Warn,
            title: format!("ECMP over {} next hops hashes on addresses only (IPv{fam})", multipath[0].nexthops.len()),
            evidence,
            why: "With the L3 hash every flow between one pair of addresses takes the same next hop, however many flows run: one link carries it all. The L4 hash (1) spreads flows by port.".into(),
            actions: vec![Action::sysctl(key, "1")],
            bench_flags: Some("-F 8 (several flows, so the L4 hash has ports to spread)".into()),
            unverified: None,
        });
    }
}

fn bond_hash(s: &Snapshot, out: &mut Vec<Finding>) {
    for l in &s.links {
        let Some(b) = &l.bond else { continue };
        if !matches!(b.mode.as_str(), "balance-xor" | "802.3ad" | "balance-tlb") {
            continue;
        }
        let overlay = s
            .links
            .iter()
            .find(|v| v.kind == "vxlan" && v.lower.as_deref() == Some(l.name.as_str()));
        let evidence = vec![
            ev(format!("{} mode", l.name), &b.mode),
            ev(format!("{} xmit_hash_policy", l.name), &b.xmit_hash_policy),
            ev(
                format!("{} slaves", l.name),
                b.slaves
                    .iter()
                    .map(|x| format!("{} ({})", x.name, x.mii_status))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        ];
        let (want, why) = match (overlay, b.xmit_hash_policy.as_str()) {
            (Some(v), p) if p != "encap3+4" && p != "encap2+3" => (
                "encap3+4",
                format!("{} runs VXLAN over this bond: the outer headers of every tunnelled flow are alike, so {p} puts them on one slave; encap3+4 hashes the inner headers (report 3).", v.name),
            ),
            (None, "layer2") => (
                "layer3+4",
                "layer2 hashes MAC addresses only: all traffic to one peer or one gateway uses one slave, so a client tops out at one link's speed (report 3: 25 of 50 Gbit/s until the policy changed).".to_string(),
            ),
            (None, "layer2+3") => (
                "layer3+4",
                "layer2+3 hashes addresses: many flows between one pair of hosts share one slave; layer3+4 spreads them by port (for host networking).".to_string(),
            ),
            _ => continue,
        };
        out.push(Finding {
            id: "bond-hash".into(),
            severity: Severity::Critical,
            title: format!(
                "bond {} ({}) hashes with {}: flows cannot spread over its {} slaves",
                l.name,
                b.mode,
                b.xmit_hash_policy,
                b.slaves.len()
            ),
            evidence,
            why,
            actions: vec![set(
                Setting::BondHashPolicy {
                    dev: l.name.clone(),
                },
                want,
            )],
            bench_flags: Some("-F 8".into()),
            unverified: None,
        });
    }
}

/// The MTU doctor advises for a link: 9000 bounded by the device's
/// maximum and by what its lower link will have once advised itself.
fn jumbo_target(s: &Snapshot, l: &Link, depth: u8) -> u32 {
    let mut target = 9000u32.max(l.mtu);
    if let Some(max) = l.max_mtu.filter(|m| *m > 0) {
        target = target.min(max);
    }
    if let Some(lo) = l
        .lower
        .as_deref()
        .and_then(|n| s.link(n))
        .filter(|_| depth < 4)
    {
        let overhead = if l.kind == "vxlan" { 50 } else { 0 };
        target = target.min(jumbo_target(s, lo, depth + 1).saturating_sub(overhead));
    }
    target
}

/// Payload of one full-size IPv4 TCP segment at `mtu`: 20 bytes of IP,
/// 20 of TCP and 12 of timestamps off (1448 at 1500, 1348 at 1400).
pub fn tcp_payload(mtu: u32) -> u32 {
    mtu.saturating_sub(52)
}

fn jumbo_frames(s: &Snapshot, paths: &[PathMtu], out: &mut Vec<Finding>) {
    for l in used_links(s) {
        let target = jumbo_target(s, l, 0);
        let via: Vec<&PathMtu> = paths
            .iter()
            .filter(|p| p.dev.as_deref() == Some(l.name.as_str()))
            .collect();
        let evidence = mtu_evidence(s, l, &via);
        // A path measured below the device's own MTU: large packets
        // depend on ICMP reaching this host (or are lost); no larger MTU.
        let low = via
            .iter()
            .filter(|p| p.exact)
            .filter_map(|p| p.mtu.map(|m| (m, *p)))
            .filter(|(m, _)| *m < l.mtu)
            .min_by_key(|(m, _)| *m);
        if let Some((m, p)) = low {
            out.push(narrow_path(l, m, p, evidence));
            continue;
        }
        if l.mtu >= target || target < 2000 {
            continue;
        }
        // An MTU below Ethernet's 1500 is what a cloud or tunnel network
        // hands out (DHCP option 26) when it carries no more; probes
        // cannot go above it, so nothing here can show it is wrong.
        if l.mtu < 1500 && l.kind != "vxlan" {
            out.push(small_network(l, target, &via, evidence));
            continue;
        }
        out.push(jumbo_advice(l, target, paths, evidence));
    }
}

/// Link `l`'s MTUs (its own, its maximum, its lower device's) and the
/// path MTUs measured through it (`via`).
fn mtu_evidence(s: &Snapshot, l: &Link, via: &[&PathMtu]) -> Vec<Evidence> {
    let lower = l.lower.as_deref().and_then(|n| s.link(n));
    let mut evidence = vec![ev(format!("{} mtu", l.name), l.mtu)];
    if let Some(m) = l.max_mtu {
        evidence.push(ev(format!("{} max_mtu", l.name), m));
    }
    if let Some(lo) = lower {
        evidence.push(ev(format!("{} (lower) mtu", lo.name), lo.mtu));
    }
    for p in via {
        evidence.push(ev(
            format!(
                "path MTU toward {} ({}, {} probe{})",
                p.target,
                p.role,
                p.probes,
                if p.probes == 1 { "" } else { "s" }
            ),
            p.summary(),
        ));
    }
    evidence
}

/// The path through `l` toward `p` carries only `m` bytes, below `l`'s MTU.
fn narrow_path(l: &Link, m: u32, p: &PathMtu, evidence: Vec<Evidence>) -> Finding {
    Finding {
        id: "path-mtu".into(),
        severity: Severity::Warn,
        title: format!(
            "the path from {} toward {} ({}) carries {m} bytes, less than {}'s MTU {}: no larger MTU",
            l.name, p.target, p.role, l.name, l.mtu
        ),
        evidence,
        why: format!(
            "Packets above {m} bytes get through only while the hop's ICMP \"fragmentation needed\" reaches this host and the kernel lowers its path MTU; where that ICMP is filtered they are lost (a black hole for bulk TCP). A TCP segment carries {} bytes at {m} against {} at {}. Raising {}'s MTU would lose more, not gain: fix the narrow hop, or set {}'s MTU to {m}.",
            tcp_payload(m),
            tcp_payload(l.mtu),
            l.mtu,
            l.name,
            l.name
        ),
        actions: vec![],
        bench_flags: None,
        unverified: None,
    }
}

/// `l` runs an MTU below 1500 as its network hands out: no change advised.
fn small_network(l: &Link, target: u32, via: &[&PathMtu], evidence: Vec<Evidence>) -> Finding {
    let answered: Vec<String> = via
        .iter()
        .filter(|p| p.mtu == Some(l.mtu) && !p.exact)
        .map(|p| format!("{} {}", p.role, p.target))
        .collect();
    Finding {
        id: "jumbo-frames".into(),
        severity: Severity::Info,
        title: format!(
            "{} runs MTU {} (max_mtu allows {target}); the network it is on was measured only up to {}: no change advised",
            l.name, l.mtu, l.mtu
        ),
        evidence,
        why: format!(
            "An MTU below Ethernet's 1500 is set for a network that carries no more (a cloud overlay or a tunnel, often by DHCP); {}a probe cannot be larger than {}'s own MTU, so nothing on this host can show that {target} bytes would get through, and a larger MTU on such a network loses every large packet, your own SSH session's included. At MTU {} a TCP segment carries {} bytes. Raise it only where the provider documents a larger MTU (then: wirespeed tune apply --profile FILE --peer PEER --force, which checks a full-size packet and rolls back if it is lost).",
            if answered.is_empty() {
                String::new()
            } else {
                format!("{} answered at that size, but ", answered.join(" and "))
            },
            l.name,
            l.mtu,
            tcp_payload(l.mtu)
        ),
        actions: vec![],
        bench_flags: None,
        unverified: None,
    }
}

/// `l` could run MTU `target`: the advice to raise it (unverified when
/// the measured `paths` doubt it).
fn jumbo_advice(l: &Link, target: u32, paths: &[PathMtu], evidence: Vec<Evidence>) -> Finding {
    let doubt = mtu_doubt(&l.name, target, paths);
    Finding {
        id: "jumbo-frames".into(),
        severity: Severity::Warn,
        title: format!(
            "{} runs MTU {} where {} is allowed{}",
            l.name,
            l.mtu,
            target,
            if doubt.is_some() {
                " (unverified: the path beyond may not carry it)"
            } else {
                ""
            }
        ),
        evidence,
        why: format!(
            "Each packet costs per-packet work on both sides; at MTU {} a TCP segment carries {} bytes ({:.1}% of the frame), at {target} it carries {} ({:.1}%) in a sixth of the packets (report 2: 18.4 -> 19.9 Gbit/s). Every link on the path, and the peer, must take the larger MTU.",
            l.mtu,
            tcp_payload(l.mtu),
            100.0 * tcp_payload(l.mtu) as f64 / (l.mtu + 14) as f64,
            tcp_payload(target),
            100.0 * tcp_payload(target) as f64 / (target + 14) as f64
        ),
        actions: vec![set(
            Setting::Mtu {
                dev: l.name.clone(),
            },
            target,
        )],
        bench_flags: None,
        unverified: doubt,
    }
}

/// Bytes of buffer a socket needs to keep `bps` in flight over `rtt_us`:
/// twice the bandwidth-delay product (the kernel advertises about half
/// of its receive buffer as window).
pub fn buffer_needed(bps: f64, rtt_us: f64) -> u64 {
    (2.0 * bps / 8.0 * rtt_us / 1e6).ceil() as u64
}

fn socket_buffers(s: &Snapshot, goal: &Goal, out: &mut Vec<Finding>) {
    let speeds: f64 = used_links(s)
        .iter()
        .filter_map(|l| l.speed_mbps.get())
        .map(|m| *m as f64 * 1e6)
        .sum();
    let bps = goal.bps.unwrap_or(if speeds > 0.0 { speeds } else { 10e9 });
    let need = buffer_needed(bps, goal.rtt_us).max(4 << 20);
    let need_mib = need.div_ceil(1 << 20) << 20;
    let mut evidence = vec![
        ev("goal", format!("{:.1} Gbit/s", bps / 1e9)),
        ev("rtt", format!("{} us", goal.rtt_us)),
        ev("2 x bandwidth-delay product", format!("{need} bytes")),
    ];
    let mut actions = Vec::new();
    for (key, first) in [
        ("net.ipv4.tcp_rmem", 131072u64),
        ("net.ipv4.tcp_wmem", 16384),
    ] {
        if let Some(v) = s.sysctl_ints(key).filter(|v| v.len() == 3) {
            evidence.push(ev(key, format!("{} {} {}", v[0], v[1], v[2])));
            if v[2] < need {
                actions.push(Action::sysctl(
                    key,
                    format!("{} {} {need_mib}", v[0], v[1].max(first)),
                ));
            }
        }
    }
    for key in ["net.core.rmem_max", "net.core.wmem_max"] {
        if let Some(v) = s.sysctl_ints(key).and_then(|v| v.first().copied()) {
            let ro = if s.writable(key) {
                ""
            } else {
                " (read-only here: set it in the initial namespace)"
            };
            evidence.push(ev(key, format!("{v}{ro}")));
            if v < need && s.writable(key) {
                actions.push(Action::sysctl(key, need_mib.to_string()));
            }
        }
    }
    if actions.is_empty() {
        return;
    }
    out.push(Finding {
        id: "socket-buffers".into(),
        severity: Severity::Warn,
        title: format!("socket buffer limits are below {} MiB, what {:.1} Gbit/s at {} us needs", need_mib >> 20, bps / 1e9, goal.rtt_us),
        evidence,
        why: "A TCP flow cannot have more than its window in flight; the window is bounded by tcp_rmem's maximum (autotuning) or rmem_max (SO_RCVBUF). Below the bandwidth-delay product the flow idles each round trip (report 2: 8 MB buffers took 19.9 to 29.1 Gbit/s).".into(),
        actions,
        bench_flags: None,
        unverified: None,
    });
}

fn offloads(s: &Snapshot, out: &mut Vec<Finding>) {
    for l in used_links(s) {
        let Some(features) = l.features.get() else {
            continue;
        };
        let mut actions = Vec::new();
        let mut evidence = Vec::new();
        for (name, short) in [
            ("tx-tcp-segmentation", "tso"),
            ("tx-generic-segmentation", "gso"),
            ("rx-gro", "gro"),
        ] {
            if let Some(f) = features.get(name) {
                evidence.push(ev(
                    format!("{} {short}", l.name),
                    if f.on {
                        "on"
                    } else if f.fixed {
                        "off [fixed]"
                    } else {
                        "off"
                    },
                ));
                if !f.on && !f.fixed {
                    actions.push(set(
                        Setting::Feature {
                            dev: l.name.clone(),
                            name: name.into(),
                        },
                        "on",
                    ));
                }
            }
        }
        if actions.is_empty() {
            continue;
        }
        out.push(Finding {
            id: "offload-off".into(),
            severity: Severity::Warn,
            title: format!("segmentation or receive offloads are off on {}", l.name),
            evidence,
            why: "Without TSO/GSO the stack builds every MTU-sized packet itself, without GRO it processes each one on receive: per-packet CPU cost caps a flow well below the link (veth ships with GRO off).".into(),
            actions,
            bench_flags: None,
            unverified: None,
        });
    }
}

fn big_tcp(s: &Snapshot, out: &mut Vec<Finding>) {
    for l in used_links(s) {
        let Some(tso) = l.tso_max_size else { continue };
        if tso <= 65536 {
            continue;
        }
        let size = tso.min(185000);
        let has6 = l
            .addresses
            .iter()
            .any(|a| a.contains(':') && !a.starts_with("fe80"));
        let mut actions = Vec::new();
        let mut evidence = vec![
            ev("kernel", &s.kernel),
            ev(format!("{} tso_max_size", l.name), tso),
        ];
        let mut add = |cur: Option<u32>, setting: Setting, label: &str, ev_: &mut Vec<Evidence>| {
            if let Some(c) = cur {
                ev_.push(ev(format!("{} {label}", l.name), c));
                if c <= 65536 {
                    actions.push(set(setting, size));
                }
            }
        };
        if s.big_tcp.ipv6 && has6 {
            add(
                l.gso_max_size,
                Setting::GsoMaxSize {
                    dev: l.name.clone(),
                },
                "gso_max_size",
                &mut evidence,
            );
            add(
                l.gro_max_size,
                Setting::GroMaxSize {
                    dev: l.name.clone(),
                },
                "gro_max_size",
                &mut evidence,
            );
        }
        if s.big_tcp.ipv4 {
            add(
                l.gso_ipv4_max_size,
                Setting::GsoIpv4MaxSize {
                    dev: l.name.clone(),
                },
                "gso_ipv4_max_size",
                &mut evidence,
            );
            add(
                l.gro_ipv4_max_size,
                Setting::GroIpv4MaxSize {
                    dev: l.name.clone(),
                },
                "gro_ipv4_max_size",
                &mut evidence,
            );
        }
        if actions.is_empty() {
            continue;
        }
        out.push(Finding {
            id: "big-tcp".into(),
            severity: Severity::Info,
            title: format!("BIG TCP is available on {} but off", l.name),
            evidence,
            why: format!("GSO/GRO packets stop at 64 KiB; BIG TCP lets the stack handle packets up to {size} bytes (the driver allows {tso}), fewer per byte: report 4 saw +50% transactions/s and -30% latency for 80000-byte request/response. GRO sizes only matter where GRO is on."),
            actions,
            bench_flags: None,
            unverified: None,
        });
    }
}

fn slow_start(s: &Snapshot, goal: &Goal, out: &mut Vec<Finding>) {
    if s.sysctl("net.ipv4.tcp_slow_start_after_idle") != Some("1") {
        return;
    }
    out.push(Finding {
        id: "slow-start-after-idle".into(),
        severity: if goal.rr { Severity::Warn } else { Severity::Info },
        title: "TCP restarts slow start after every idle period".into(),
        evidence: vec![ev("net.ipv4.tcp_slow_start_after_idle", 1)],
        why: "Request/response work idles between requests; each idle resets the congestion window, so large responses pay extra round trips (report 1 and tuned's network-throughput set it to 0).".into(),
        actions: vec![Action::sysctl("net.ipv4.tcp_slow_start_after_idle", "0")],
        bench_flags: None,
        unverified: None,
    });
}

/// The busy-poll time the finding and optimize suggest, µs: tuned's
/// network-latency profile sets the same.
pub const BUSY_POLL_US: u32 = 50;

/// Request/response work on a host that does not busy poll: each reply
/// waits for the softirq to wake the reader.
fn busy_poll(s: &Snapshot, goal: &Goal, out: &mut Vec<Finding>) {
    let (Some(read), Some(poll)) = (
        s.sysctl("net.core.busy_read"),
        s.sysctl("net.core.busy_poll"),
    ) else {
        return;
    };
    if !goal.rr || read != "0" || poll != "0" {
        return;
    }
    out.push(Finding {
        id: "busy-poll".into(),
        severity: Severity::Info,
        title: "the kernel does not busy poll: every reply waits for a wake-up".into(),
        evidence: vec![ev("net.core.busy_read", read), ev("net.core.busy_poll", poll)],
        why: format!("A request/response reader sleeps until the softirq that received the reply wakes it; busy polling spins on the NIC's queue for up to {BUSY_POLL_US} us instead, which takes the wake-up out of p50 and p99 at the cost of a busy CPU while a socket waits (tuned's network-latency profile sets both to {BUSY_POLL_US}). It needs a NIC queue with NAPI: veth and loopback gain little. Measure one test first with --busy-poll (per socket), then make it host-wide."),
        actions: vec![
            Action::sysctl("net.core.busy_read", BUSY_POLL_US.to_string()),
            Action::sysctl("net.core.busy_poll", BUSY_POLL_US.to_string()),
        ],
        bench_flags: Some(format!("--busy-poll {BUSY_POLL_US}")),
        unverified: None,
    });
}

fn overlay(s: &Snapshot, out: &mut Vec<Finding>) {
    for l in used_links(s).into_iter().filter(|l| l.kind == "vxlan") {
        let v = l.vxlan.as_ref();
        out.push(Finding {
            id: "overlay".into(),
            severity: Severity::Info,
            title: format!("{} is a VXLAN overlay{}", l.name, v.and_then(|v| v.underlay.as_ref()).map(|u| format!(" over {u}")).unwrap_or_default()),
            evidence: vec![
                ev(format!("{} vni", l.name), v.and_then(|v| v.id).map(|i| i.to_string()).unwrap_or_else(|| "?".into())),
                ev(format!("{} mtu", l.name), l.mtu),
                ev("encapsulation overhead", "50 bytes per packet (IPv4 underlay)"),
            ],
            why: "Every packet is encapsulated and decapsulated in software: 50 bytes less payload and extra CPU per packet. Report 3 measured 20-25% fewer read IOPS at 1-8 KiB blocks and 30-50% at 1-8 MiB over VXLAN, against about 2% for direct routing.".into(),
            actions: vec![],
            bench_flags: Some("compare against the underlay address: --path UNDERLAY_LOCAL=UNDERLAY_REMOTE".into()),
            unverified: None,
        });
    }
}

fn congestion_control(s: &Snapshot, out: &mut Vec<Finding>) {
    let Some(cc) = s.sysctl("net.ipv4.tcp_congestion_control") else {
        return;
    };
    let avail = s
        .sysctl("net.ipv4.tcp_available_congestion_control")
        .unwrap_or("");
    if cc == "bbr" && avail.split_whitespace().any(|a| a == "cubic") {
        out.push(Finding {
            id: "congestion-control".into(),
            severity: Severity::Info,
            title: "the default congestion control is bbr".into(),
            evidence: vec![ev("net.ipv4.tcp_congestion_control", cc), ev("net.ipv4.tcp_available_congestion_control", avail)],
            why: "On sub-millisecond paths bbr's pacing can hold one flow well below cubic (here between namespaces about 16 vs 33 Gbit/s); measure both before choosing.".into(),
            actions: vec![],
            bench_flags: Some("--cc cubic".into()),
            unverified: None,
        });
    }
}
