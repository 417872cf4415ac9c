//! Building and removing labs. A lab is built by a list of typed
//! operations ([`Op`]: each displays as the `ip`, `tc`, `sysctl` or
//! `ethtool` command a person would type), computed first and shown on
//! request, then done in order by wirespeed-host (over netlink and
//! /proc/sys; qdiscs by `tc`, firewall rules by `nft` or
//! `iptables-restore`); a [`Lab`] guard removes every namespace when dropped,
//! also on error and on panic, and `up` sweeps namespaces that earlier
//! test processes left when they were killed.

use crate::error::LabError;
use crate::plan::{Addressing, Nic, address};
use crate::spec::{
    CapKind, DEFAULT_FLOW_BUCKETS, HostSpec, LabSpec, LinkSpec, RouteSpec, parse_prefix, parse_rate,
};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use wirespeed_host::mptcp::{self, EndpointKind, Limits};
use wirespeed_host::netops::Route;
use wirespeed_host::{LinkSize, Op};

/// Whether the process runs with effective uid 0 (wirespeed-host's).
pub use wirespeed_host::is_root;

/// The namespace of `host` in lab `lab`.
pub fn ns_name(lab: &str, host: &str) -> String {
    format!("{lab}-{host}")
}

/// Token bucket sizes for a cap of `bps`: (burst bytes, queue limit bytes).
///
/// The burst holds 5 ms of tokens: tbf refills only when its watchdog
/// timer fires, and on a busy or oversubscribed VM that timer runs late by
/// milliseconds; a 2 ms burst leaves no slack for that (one CI run saw
/// two 1 Gbit/s caps deliver 655 and 634 Mbit/s where a quiet machine
/// gets 99%). 5 ms moves a 1 s average by at most 0.5%.
pub fn tbf_sizes(bps: u64) -> (u64, u64) {
    let bytes_per_ms = bps / 8 / 1000;
    let burst = (bytes_per_ms * 5).max(64 * 1024);
    let limit = (bytes_per_ms * 20).max(4 * burst);
    (burst, limit)
}

/// Every operation that builds `spec`, in order; each displays as the
/// command a person would type.
pub fn build_ops(spec: &LabSpec, plan: &Addressing) -> Vec<Op> {
    let ns = |h: &str| ns_name(&spec.name, h);
    let mut out: Vec<Op> = Vec::new();
    for h in &spec.hosts {
        out.push(Op::NetnsAdd { ns: ns(&h.name) });
        out.push(up_op(&ns(&h.name), "lo"));
        // Deterministic reverse-path filtering: off, so ECMP and source
        // routing never drop packets that arrive on the "other" NIC.
        for k in ["all", "default"] {
            out.push(sysctl_op(
                &ns(&h.name),
                &format!("net.ipv4.conf.{k}.rp_filter"),
                "0",
            ));
        }
    }
    // Host sysctls, but those of the lab's own devices, which exist only
    // once the links do.
    for h in &spec.hosts {
        for (k, v) in h.sysctl.iter().filter(|(k, _)| !dev_sysctl(plan, k)) {
            out.push(sysctl_op(&ns(&h.name), k, v));
        }
    }
    for (l, p) in spec.links.iter().zip(&plan.links) {
        out.push(Op::Veth {
            ns_a: ns(&p.host_a),
            dev_a: p.a.dev.clone(),
            ns_b: ns(&p.host_b),
            dev_b: p.b.dev.clone(),
        });
        for (host, nic) in [(&p.host_a, &p.a), (&p.host_b, &p.b)] {
            link_end_ops(&ns(host), nic, l, &mut out);
        }
    }
    vxlan_ops(spec, plan, &mut out);
    for h in &spec.hosts {
        host_route_ops(&ns(&h.name), h, plan, &mut out);
    }
    for r in &spec.routes {
        out.extend(route_op(&ns(&r.host), r, plan));
    }
    for h in &spec.hosts {
        for (k, v) in h.sysctl.iter().filter(|(k, _)| dev_sysctl(plan, k)) {
            out.push(sysctl_op(&ns(&h.name), k, v));
        }
    }
    out.extend(mptcp_ops(spec, plan));
    for (i, p) in spec.policies.iter().enumerate() {
        out.push(crate::policy::policy_op(&ns(&p.host), i, p));
    }
    out
}

fn sysctl_op(n: &str, key: &str, value: &str) -> Op {
    Op::Sysctl {
        ns: n.into(),
        key: key.into(),
        value: value.into(),
    }
}

fn up_op(n: &str, dev: &str) -> Op {
    Op::Up {
        ns: n.into(),
        dev: dev.into(),
    }
}

/// Whether sysctl `k` names one of the lab's own devices.
fn dev_sysctl(plan: &Addressing, k: &str) -> bool {
    plan.links
        .iter()
        .chain(&plan.vxlans)
        .any(|p| k.contains(&format!(".{}.", p.a.dev)) || k.contains(&format!(".{}.", p.b.dev)))
}

/// One end (`nic` in namespace `n`) of link `l`: its sizes, GRO,
/// addresses and caps, then up.
fn link_end_ops(n: &str, nic: &Nic, l: &LinkSpec, out: &mut Vec<Op>) {
    // MTU and IPv6 sizes first: setting those at or below 64 KiB
    // overwrites the IPv4 ones.
    let groups: [&[(LinkSize, Option<u32>)]; 2] = [
        &[
            (LinkSize::Mtu, l.mtu),
            (LinkSize::GsoMaxSize, l.gso_max_size),
            (LinkSize::GroMaxSize, l.gro_max_size),
            (LinkSize::GsoMaxSegs, l.gso_max_segs),
        ],
        &[
            (LinkSize::GsoIpv4MaxSize, l.gso_ipv4_max_size),
            (LinkSize::GroIpv4MaxSize, l.gro_ipv4_max_size),
        ],
    ];
    for group in groups {
        let sizes: Vec<(LinkSize, u32)> = group
            .iter()
            .filter_map(|(k, v)| v.map(|v| (*k, v)))
            .collect();
        if !sizes.is_empty() {
            out.push(Op::LinkSet {
                ns: n.into(),
                dev: nic.dev.clone(),
                sizes,
            });
        }
    }
    if let Some(g) = l.gro {
        out.push(Op::Feature {
            ns: n.into(),
            dev: nic.dev.clone(),
            name: "gro".into(),
            on: g,
        });
    }
    out.extend(addr_ops(n, nic));
    let rate = l.rate.as_deref().and_then(parse_rate);
    match l.flow_rate.as_deref().and_then(parse_rate) {
        Some(per_flow) => out.extend(flow_cap_ops(
            n,
            &nic.dev,
            rate,
            per_flow,
            l.flows.unwrap_or(DEFAULT_FLOW_BUCKETS),
            l.packet_overhead,
        )),
        None => {
            if let Some(bps) = rate {
                out.extend(cap_ops(n, &nic.dev, bps, l.cap, l.packet_overhead));
            }
        }
    }
    out.push(up_op(n, &nic.dev));
}

/// Each overlay's two ends over the link under it: the device, its MTU
/// (50 bytes below the link's unless set), addresses, up.
fn vxlan_ops(spec: &LabSpec, plan: &Addressing, out: &mut Vec<Op>) {
    for (v, p) in spec.vxlans.iter().zip(&plan.vxlans) {
        let under = &plan.links[v.link];
        let umtu = spec.links[v.link].mtu.unwrap_or(1500);
        let mtu = v.mtu.unwrap_or(umtu.saturating_sub(50).max(68));
        for (host, nic) in [(&p.host_a, &p.a), (&p.host_b, &p.b)] {
            let n = ns_name(&spec.name, host);
            let (Some(me), Some(peer)) = (under.end(host), under.peer_of(host)) else {
                continue;
            };
            out.push(Op::Vxlan {
                ns: n.clone(),
                dev: nic.dev.clone(),
                id: v.id,
                local: me.addr4,
                remote: peer.addr4,
                port: v.port,
                under: me.dev.clone(),
            });
            out.push(Op::LinkSet {
                ns: n.clone(),
                dev: nic.dev.clone(),
                sizes: vec![(LinkSize::Mtu, mtu)],
            });
            out.extend(addr_ops(&n, nic));
            out.push(up_op(&n, &nic.dev));
        }
    }
}

/// Host `h`'s loopback addresses and, with source routing, a rule and a
/// table per NIC (IPv4 and IPv6) so replies leave by the NIC they came to.
fn host_route_ops(n: &str, h: &HostSpec, plan: &Addressing, out: &mut Vec<Op>) {
    for a in &h.loopback {
        // Validated by the spec; a bad one is left out here.
        if let Some((addr, len)) = parse_prefix(a) {
            out.push(Op::Addr {
                ns: n.into(),
                dev: "lo".into(),
                addr,
                len,
                nodad: addr.is_ipv6(),
            });
        }
    }
    if h.source_routing {
        let mine = plan.links.iter().filter_map(|p| p.end(&h.name));
        for (k, nic) in mine.enumerate() {
            let table = 100 + k as u32;
            let priority = 1000 + k as u32;
            let v4 = (IpAddr::from(nic.addr4), nic.subnet4.into(), nic.len4);
            let v6 = (IpAddr::from(nic.addr6), nic.net6().into(), 64);
            for (from, dst, len) in [v4, v6] {
                out.push(Op::Rule {
                    ns: n.into(),
                    from,
                    table,
                    priority,
                });
                out.push(Op::Route(Route {
                    ns: n.into(),
                    dst,
                    len,
                    via: Vec::new(),
                    dev: Some(nic.dev.clone()),
                    src: from.is_ipv4().then_some(from),
                    table: Some(table),
                }));
            }
        }
    }
}

/// Route `r` in namespace `n`, over the peers of its links; None for a
/// bad destination (the spec rejects those).
fn route_op(n: &str, r: &RouteSpec, plan: &Addressing) -> Option<Op> {
    // Validated by the spec; a bad one is left out here.
    let (dst, len) = parse_prefix(&r.dst)?;
    let hop = |k: usize| -> Option<(IpAddr, String)> {
        let p = plan.links.get(k)?;
        let dev = p.end(&r.host)?.dev.clone();
        let peer = p.peer_of(&r.host)?;
        let gw = if dst.is_ipv6() {
            IpAddr::from(peer.addr6)
        } else {
            IpAddr::from(peer.addr4)
        };
        Some((gw, dev))
    };
    Some(Op::Route(Route {
        ns: n.into(),
        dst,
        len,
        via: r.links.iter().filter_map(|&k| hop(k)).collect(),
        dev: None,
        src: None,
        table: None,
    }))
}

/// Each `[[mptcp]]` host's limits, then its endpoints: its address on
/// each named link, IPv4 and IPv6.
fn mptcp_ops(spec: &LabSpec, plan: &Addressing) -> Vec<Op> {
    let mut out = Vec::new();
    for m in &spec.mptcp {
        let ns = ns_name(&spec.name, &m.host);
        out.push(Op::MptcpLimits {
            ns: ns.clone(),
            limits: Limits {
                subflows: m.subflows,
                add_addr_accepted: m.add_addr_accepted,
            },
        });
        // Validated by the spec: a bad kind or link is left out here.
        let Some(kind) = EndpointKind::parse(&m.kind) else {
            continue;
        };
        for nic in m
            .endpoints
            .iter()
            .filter_map(|&k| plan.links.get(k)?.end(&m.host))
        {
            for addr in [IpAddr::from(nic.addr4), IpAddr::from(nic.addr6)] {
                out.push(Op::MptcpEndpoint {
                    ns: ns.clone(),
                    addr,
                    dev: nic.dev.clone(),
                    kind,
                });
            }
        }
    }
    out
}

/// A NIC's IPv4 and IPv6 addresses; IPv6 with nodad: usable at once, no
/// 1-2 s duplicate address detection.
fn addr_ops(n: &str, nic: &Nic) -> [Op; 2] {
    [
        Op::Addr {
            ns: n.into(),
            dev: nic.dev.clone(),
            addr: nic.addr4.into(),
            len: nic.len4,
            nodad: false,
        },
        Op::Addr {
            ns: n.into(),
            dev: nic.dev.clone(),
            addr: nic.addr6.into(),
            len: 64,
            nodad: true,
        },
    ]
}

/// A `tc -n NS ...` operation.
pub(crate) fn tc(n: &str, args: &[&str]) -> Op {
    Op::Tc {
        ns: n.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

/// `tc` arguments charging `overhead` bytes per packet, if any.
fn overhead_args(overhead: Option<u32>) -> Vec<String> {
    overhead
        .map(|o| vec!["overhead".to_string(), o.to_string()])
        .unwrap_or_default()
}

/// A `tc -n NS ...` operation with `extra` arguments at its end.
fn tc_with(n: &str, args: &[&str], extra: &[String]) -> Op {
    let mut op = tc(n, args);
    if let Op::Tc { args, .. } = &mut op {
        args.extend_from_slice(extra);
    }
    op
}

/// The qdisc operations that cap `dev`'s egress at `bps`, charging
/// `overhead` bytes per packet beyond its length.
pub fn cap_ops(n: &str, dev: &str, bps: u64, kind: CapKind, overhead: Option<u32>) -> Vec<Op> {
    let (burst, limit) = tbf_sizes(bps);
    let rate = format!("{bps}bit");
    let (burst, limit) = (burst.to_string(), limit.to_string());
    let ov = overhead_args(overhead);
    match kind {
        CapKind::Tbf => vec![tc_with(
            n,
            &[
                "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst", &burst, "limit",
                &limit,
            ],
            &ov,
        )],
        CapKind::Htb => vec![
            tc(
                n,
                &[
                    "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
                ],
            ),
            tc_with(
                n,
                &[
                    "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate",
                    &rate, "ceil", &rate, "burst", &burst, "cburst", &burst,
                ],
                &ov,
            ),
        ],
    }
}

/// Per-flow caps on `dev`: HTB with a parent class at `total` (the link's
/// rate, or 100 Gbit/s when uncapped), a default class 1:2, and `buckets`
/// classes at `per_flow` each; filters put every TCP and UDP packet, IPv4
/// and IPv6, in the bucket of its flow.
///
/// TCP (u32, prio 1 for IPv4 and 2 for IPv6, one shared hash table 2:)
/// is hashed on the client's port (its bits 1 to log2(buckets)): Linux
/// gives connect() even ports and bind(0) (a listener's port) odd ones, so
/// a packet with an even source port is hashed on its source port and one
/// with an odd source port on its destination port, and both directions
/// of one flow land in the same bucket. Consecutive connections to one
/// server get ports 2-16 apart, so up to buckets / 8 flows of one test
/// never share a bucket. The ports are read at byte 20 (IPv4 without
/// options: a packet with options is hashed on them), at byte 40 (IPv6)
/// or at byte 48 behind the 8-byte hop-by-hop header that BIG TCP puts on
/// IPv6 packets above 64 KB.
///
/// UDP (cBPF, prio 3 and 4, see `udp_hash_program`) is hashed on the
/// source port XOR the destination port: a UDP socket's bind(0) port is
/// random, so distinct flows share a bucket by chance (1 - B!/((B-N)!
/// B^N) for N flows over B buckets).
///
/// The default class gets what no filter matches: ICMP, other protocols,
/// IPv4 UDP fragments after the first, and IPv6 packets with other
/// extension headers. Every class charges `overhead` bytes per packet
/// beyond its length, if given.
pub fn flow_cap_ops(
    n: &str,
    dev: &str,
    total: Option<u64>,
    per_flow: u64,
    buckets: u32,
    overhead: Option<u32>,
) -> Vec<Op> {
    let total = total.unwrap_or(100_000_000_000);
    // A class is assured `rate` and may borrow from its parent up to
    // `ceil`; the assured rates of the buckets add up to the parent's, so
    // only the parent's rate bounds their sum.
    let class = |parent: &str, id: &str, rate: u64, ceil: u64| {
        let (rate, ceil_s) = (format!("{rate}bit"), format!("{ceil}bit"));
        let burst = tbf_sizes(ceil).0.to_string();
        tc_with(
            n,
            &[
                "class", "add", "dev", dev, "parent", parent, "classid", id, "htb", "rate", &rate,
                "ceil", &ceil_s, "burst", &burst, "cburst", &burst, "quantum", "65536",
            ],
            &overhead_args(overhead),
        )
    };
    let mut out = vec![
        tc(
            n,
            &[
                "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "2",
            ],
        ),
        class("1:", "1:1", total, total),
        class("1:1", "1:2", 8000, total),
    ];
    let buckets = buckets.clamp(2, 256);
    let flow_class = |k: u32| format!("1:{:x}", FLOW_CLASS_MINOR + k);
    let ceil = per_flow.min(total);
    let assured = (total / u64::from(buckets)).clamp(8000, ceil);
    for k in 0..buckets {
        out.push(class("1:1", &flow_class(k), assured, ceil));
    }
    let filter = |prio: &str, proto: &str, extra: &[&str]| {
        let mut v = vec![
            "filter", "add", "dev", dev, "parent", "1:", "prio", prio, "protocol", proto,
        ];
        v.extend_from_slice(extra);
        tc(n, &v)
    };
    let divisor = buckets.to_string();
    out.push(filter(
        "1",
        "ip",
        &["handle", "2:", "u32", "divisor", &divisor],
    ));
    for k in 0..buckets {
        let ht = format!("2:{k:x}:");
        out.push(filter(
            "1",
            "ip",
            &[
                "u32",
                "ht",
                &ht,
                "match",
                "u32",
                "0",
                "0",
                "flowid",
                &flow_class(k),
            ],
        ));
    }
    // Port bits 1.. (bit 0 is the parity that tells client from server).
    let bits = (buckets - 1) << 1;
    let (smask, dmask) = (format!("0x{:08x}", bits << 16), format!("0x{bits:08x}"));
    let parities = [("0", &smask), ("1", &dmask)];
    for (parity, mask) in parities {
        out.push(filter(
            "1",
            "ip",
            &[
                "u32", "ht", "800::", "match", "ip", "protocol", "6", "0xff", "match", "ip",
                "sport", parity, "0x1", "hashkey", "mask", mask, "at", "20", "link", "2:",
            ],
        ));
    }
    // IPv6 TCP into the same table (u32 tables are shared by the filters
    // of one qdisc): the ports at byte 40, or at 48 behind BIG TCP's
    // hop-by-hop header (next header 0; its own next header 6, length 0).
    for (parity, mask) in parities {
        out.push(filter(
            "2",
            "ipv6",
            &[
                "u32", "match", "ip6", "protocol", "6", "0xff", "match", "ip6", "sport", parity,
                "0x1", "hashkey", "mask", mask, "at", "40", "link", "2:",
            ],
        ));
    }
    for (parity, mask) in parities {
        out.push(filter(
            "2",
            "ipv6",
            &[
                "u32", "match", "ip6", "protocol", "0", "0xff", "match", "u16", "0x0600", "0xffff",
                "at", "40", "match", "u16", parity, "0x1", "at", "48", "hashkey", "mask", mask,
                "at", "48", "link", "2:",
            ],
        ));
    }
    for (prio, proto, v6) in [("3", "ip", false), ("4", "ipv6", true)] {
        let program = udp_hash_program(v6, buckets);
        out.push(filter(prio, proto, &["bpf", "bytecode", &program]));
    }
    out
}

/// Minor number of the first per-flow bucket class (1:100).
const FLOW_CLASS_MINOR: u32 = 0x100;

/// A classic BPF program, in tc's `bytecode` form ("N,code jt jf k,..."),
/// that returns the bucket class of a UDP packet (IPv6 if `v6`) seen from
/// its Ethernet header, as cls_bpf hands it over on egress: 1:100 plus
/// (source port XOR destination port) modulo `buckets` (a power of two),
/// so both directions of a flow share a bucket whoever chose which port.
/// Anything else returns 0, which cls_bpf takes as no match. An IPv4
/// fragment after the first carries no ports and is not matched.
fn udp_hash_program(v6: bool, buckets: u32) -> String {
    use libc::{
        BPF_A, BPF_ABS, BPF_ADD, BPF_ALU, BPF_AND, BPF_B, BPF_H, BPF_IND, BPF_JEQ, BPF_JMP,
        BPF_JSET, BPF_K, BPF_LD, BPF_LDX, BPF_MISC, BPF_MSH, BPF_RET, BPF_RSH, BPF_TAX, BPF_W,
        BPF_X, BPF_XOR,
    };
    // (code, jt, jf, k); a jump's offsets count the instructions skipped.
    const ETH: u32 = 14;
    const UDP: u32 = 17;
    let base = (1 << 16) | FLOW_CLASS_MINOR;
    let mut p: Vec<(u32, u32, u32, u32)> = Vec::new();
    if v6 {
        p.push((BPF_LD | BPF_B | BPF_ABS, 0, 0, ETH + 6)); // next header
        p.push((BPF_JMP | BPF_JEQ | BPF_K, 0, 7, UDP));
        p.push((BPF_LD | BPF_W | BPF_ABS, 0, 0, ETH + 40)); // ports
    } else {
        p.push((BPF_LD | BPF_B | BPF_ABS, 0, 0, ETH + 9)); // protocol
        p.push((BPF_JMP | BPF_JEQ | BPF_K, 0, 10, UDP));
        p.push((BPF_LD | BPF_H | BPF_ABS, 0, 0, ETH + 6)); // fragment offset
        p.push((BPF_JMP | BPF_JSET | BPF_K, 8, 0, 0x1fff));
        p.push((BPF_LDX | BPF_B | BPF_MSH, 0, 0, ETH)); // X = header length
        p.push((BPF_LD | BPF_W | BPF_IND, 0, 0, ETH)); // ports
    }
    p.extend([
        (BPF_MISC | BPF_TAX, 0, 0, 0),         // X = sport << 16 | dport
        (BPF_ALU | BPF_RSH | BPF_K, 0, 0, 16), // A = sport
        (BPF_ALU | BPF_XOR | BPF_X, 0, 0, 0),  // low 16 bits: sport ^ dport
        (BPF_ALU | BPF_AND | BPF_K, 0, 0, buckets - 1),
        (BPF_ALU | BPF_ADD | BPF_K, 0, 0, base),
        (BPF_RET | BPF_A, 0, 0, 0),
        (BPF_RET | BPF_K, 0, 0, 0), // no match
    ]);
    let mut s = p.len().to_string();
    for (code, jt, jf, k) in p {
        s.push_str(&format!(",{code} {jt} {jf} {k}"));
    }
    s
}

/// Does one operation; a failure carries its command line and the reason.
pub fn apply(op: &Op) -> Result<(), LabError> {
    op.apply().map_err(|error| LabError::Command {
        cmd: op.to_string(),
        error,
    })
}

/// What is needed to find and remove a lab later (`lab down`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabState {
    /// Lab name.
    pub name: String,
    /// The spec it was built from.
    pub spec: LabSpec,
    /// Its addressing.
    pub plan: Addressing,
    /// True from before the first namespace is made until the build has
    /// finished: a state file still building whose `pid` is gone is what a
    /// killed `lab up` left.
    #[serde(default)]
    pub building: bool,
    /// The process building the lab (while `building`).
    #[serde(default)]
    pub pid: Option<u32>,
}

impl LabState {
    /// Namespace of a host of this lab.
    pub fn ns(&self, host: &str) -> String {
        ns_name(&self.name, host)
    }

    /// A command that runs `program` inside `host`'s namespace.
    pub fn command(&self, host: &str, program: &str) -> Command {
        ns_command(&self.ns(host), program)
    }
}

/// A command that runs `program` inside namespace `ns`: the one way the
/// lab starts a program in a namespace.
pub(crate) fn ns_command(ns: &str, program: &str) -> Command {
    // A spawn on purpose: the caller's program (a server that outlives
    // the call, a tool a test runs, a fault's delayer) is a process of its
    // own, placed in the namespace by `ip netns exec` (which also gives it
    // the namespace's /sys).
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, program]);
    c
}

/// Removes one namespace: first the processes still running in it (a
/// server keeps a namespace and its veths alive after `ip netns del`).
fn remove_ns(n: &str) -> Result<(), LabError> {
    crate::sys::kill_processes_in(n);
    wirespeed_host::netns::remove(n).map_err(|error| LabError::Command {
        cmd: format!("ip netns del {n}"),
        error,
    })
}

/// Removes every namespace of a lab, killing what still runs in them; the
/// veth pairs and overlays in them go with them. Namespaces already gone
/// are not an error.
pub fn destroy(state: &LabState) -> Result<(), LabError> {
    let mut first_err = None;
    for h in &state.spec.hosts {
        let n = state.ns(&h.name);
        if !Path::new("/run/netns").join(&n).exists() {
            continue;
        }
        if let Err(e) = remove_ns(&n) {
            first_err.get_or_insert(e);
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// The state file of lab `name` in `dir`.
fn state_path(name: &str, dir: &Path) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// Writes a lab's state to `dir/NAME.json` (a temporary file, then a rename).
pub fn save_state(state: &LabState, dir: &Path) -> Result<PathBuf, LabError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| LabError::io(format!("create {}", dir.display()), e))?;
    let path = state_path(&state.name, dir);
    let text = serde_json::to_string_pretty(state).map_err(|error| LabError::State {
        what: "encode lab state".into(),
        error,
    })?;
    let tmp = dir.join(format!(".{}.json.tmp-{}", state.name, std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            LabError::io(format!("write {}", path.display()), e)
        })?;
    Ok(path)
}

/// Writes a new lab's state to `dir/NAME.json`, failing when that file
/// exists (another `lab up` of the name got there first): the content is
/// written to a temporary file and hard-linked into place, which is atomic
/// and refuses to replace.
fn create_state(state: &LabState, dir: &Path) -> Result<PathBuf, LabError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| LabError::io(format!("create {}", dir.display()), e))?;
    let path = state_path(&state.name, dir);
    let text = serde_json::to_string_pretty(state).map_err(|error| LabError::State {
        what: "encode lab state".into(),
        error,
    })?;
    let tmp = dir.join(format!(".{}.json.new-{}", state.name, std::process::id()));
    let linked = std::fs::write(&tmp, text).and_then(|_| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let other = load_state(&state.name, dir).ok();
            Err(LabError::Spec(
                match other.and_then(|o| o.pid.filter(|_| o.building)) {
                    Some(pid) => format!("lab {} is being built by process {pid}", state.name),
                    None => format!(
                        "lab {0} exists already: `wirespeed lab down {0}` removes it",
                        state.name
                    ),
                },
            ))
        }
        Err(e) => Err(LabError::io(format!("write {}", path.display()), e)),
    }
}

/// Reads a lab's state saved by [`save_state`].
pub fn load_state(name: &str, dir: &Path) -> Result<LabState, LabError> {
    if name.contains('/') || name.starts_with('.') {
        return Err(LabError::Spec(format!("bad lab name {name:?}")));
    }
    let path = state_path(name, dir);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        LabError::io(
            format!(
                "read {} (is lab {name} up? `wirespeed lab up FILE` makes it)",
                path.display()
            ),
            e,
        )
    })?;
    serde_json::from_str(&text).map_err(|error| LabError::State {
        what: format!("{} is not lab state", path.display()),
        error,
    })
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A running lab; dropping it removes every namespace it made (and its
/// state file, when it has one).
#[derive(Debug)]
pub struct Lab {
    state: LabState,
    armed: bool,
    state_file: Option<PathBuf>,
    /// The namespaces this build made: a failed build removes only these,
    /// never those of a concurrent build of the same name.
    made: Vec<String>,
}

/// Whether process `pid` still runs (exists and is not a zombie).
pub fn pid_alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(crate::sys::alive)
}

impl Lab {
    /// A lab name unique to this process and call: `PREFIX-pPID-N`, which
    /// lets a later run sweep what a killed run left.
    pub fn unique(prefix: &str) -> String {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}-p{}-{n}", std::process::id())
    }

    /// The operations `up` would do, without doing them; each displays as
    /// the command a person would type.
    pub fn commands(spec: &LabSpec) -> Result<Vec<Op>, LabError> {
        spec.validate()?;
        let plan = address(spec)?;
        Ok(build_ops(spec, &plan))
    }

    /// Builds the lab; on any failure removes what was built and says which
    /// command failed.
    pub fn up(spec: &LabSpec) -> Result<Lab, LabError> {
        Self::build(spec, None)
    }

    /// Builds the lab like [`Lab::up`], with its state in `dir/NAME.json`
    /// written BEFORE the first namespace exists (marked building), so
    /// `lab down NAME` removes even what a killed build left. When a
    /// killed build of the same name left namespaces, they are removed
    /// first; the second value then says so.
    pub fn up_recorded(spec: &LabSpec, dir: &Path) -> Result<(Lab, Option<String>), LabError> {
        spec.validate()?;
        if !is_root() {
            return Err(LabError::NotRoot);
        }
        let mut note = None;
        let path = state_path(&spec.name, dir);
        if path.exists() {
            let old = load_state(&spec.name, dir)?;
            let left = old
                .spec
                .hosts
                .iter()
                .filter(|h| Path::new("/run/netns").join(old.ns(&h.name)).exists())
                .count();
            match (old.building, old.pid) {
                (true, Some(pid)) if pid_alive(pid) && pid != std::process::id() => {
                    return Err(LabError::Spec(format!(
                        "lab {} is being built by process {pid}",
                        spec.name
                    )));
                }
                (true, _) => {
                    destroy(&old)?;
                    note = Some(format!(
                        "removed {left} namespace(s) that a killed `lab up` of {} left",
                        spec.name
                    ));
                }
                (false, _) if left > 0 => {
                    return Err(LabError::Spec(format!(
                        "lab {0} exists already (state in {1}): `wirespeed lab down {0}` removes it",
                        spec.name,
                        path.display()
                    )));
                }
                // Its namespaces are gone (a reboot, `ip netns del`): stale.
                (false, _) => {}
            }
            let _ = std::fs::remove_file(&path);
        }
        Self::build(spec, Some(dir)).map(|lab| (lab, note))
    }

    fn build(spec: &LabSpec, dir: Option<&Path>) -> Result<Lab, LabError> {
        spec.validate()?;
        if !is_root() {
            return Err(LabError::NotRoot);
        }
        sweep_stale();
        let plan = address(spec)?;
        if !spec.mptcp.is_empty()
            && let Some(why) = mptcp::unsupported(Path::new("/proc/sys"))
        {
            return Err(LabError::Spec(format!(
                "{why}; this lab's [[mptcp]] tables cannot be built here"
            )));
        }
        for h in &spec.hosts {
            let n = ns_name(&spec.name, &h.name);
            if Path::new("/run/netns").join(&n).exists() {
                return Err(LabError::Spec(format!(
                    "namespace {n} exists already: is lab {} up? (`wirespeed lab down {}`)",
                    spec.name, spec.name
                )));
            }
        }
        let mut lab = Lab {
            state: LabState {
                name: spec.name.clone(),
                spec: spec.clone(),
                plan: plan.clone(),
                building: true,
                pid: Some(std::process::id()),
            },
            armed: true,
            state_file: None,
            made: Vec::new(),
        };
        if let Some(dir) = dir {
            lab.state_file = Some(create_state(&lab.state, dir)?);
        }
        for op in build_ops(spec, &plan) {
            apply(&op)?;
            if let Op::NetnsAdd { ns } = op {
                lab.made.push(ns);
            }
        }
        lab.state.building = false;
        lab.state.pid = None;
        Ok(lab)
    }

    /// The lab's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &LabSpec {
        &self.state.spec
    }

    /// Its addressing.
    pub fn plan(&self) -> &Addressing {
        &self.state.plan
    }

    /// Namespace of `host`.
    pub fn ns(&self, host: &str) -> String {
        self.state.ns(host)
    }

    /// A command that runs `program` inside `host`'s namespace.
    pub fn command(&self, host: &str, program: &str) -> Command {
        self.state.command(host, program)
    }

    /// What is needed to find and remove the lab later (and to plant
    /// faults in it).
    pub fn state(&self) -> &LabState {
        &self.state
    }

    /// `host`'s NIC on link `link`.
    pub fn nic(&self, host: &str, link: usize) -> Option<&Nic> {
        self.state.plan.links.get(link)?.end(host)
    }

    /// `host`'s IPv4 address on link `link`.
    pub fn addr4(&self, host: &str, link: usize) -> Option<Ipv4Addr> {
        self.nic(host, link).map(|n| n.addr4)
    }

    /// `host`'s IPv6 address on link `link`.
    pub fn addr6(&self, host: &str, link: usize) -> Option<Ipv6Addr> {
        self.nic(host, link).map(|n| n.addr6)
    }

    /// `host`'s device name on link `link`.
    pub fn dev(&self, host: &str, link: usize) -> Option<String> {
        self.nic(host, link).map(|n| n.dev.clone())
    }

    /// `host`'s NIC on overlay `j`.
    pub fn vxlan(&self, host: &str, j: usize) -> Option<&Nic> {
        self.state.plan.vxlans.get(j)?.end(host)
    }

    /// Disarms the guard: the lab stays until [`destroy`] of the returned
    /// state. A state file written by [`Lab::up_recorded`] is rewritten as built.
    pub fn keep(mut self) -> Result<LabState, LabError> {
        self.armed = false;
        if let Some(dir) = self.state_file.as_deref().and_then(Path::parent) {
            save_state(&self.state, dir)?;
        }
        Ok(self.state.clone())
    }

    /// Removes the lab now, reporting failures.
    pub fn down(mut self) -> Result<(), LabError> {
        self.armed = false;
        destroy(&self.state)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut ok = true;
        for n in &self.made {
            if Path::new("/run/netns").join(n).exists() {
                ok &= remove_ns(n).is_ok();
            }
        }
        if let (true, Some(f)) = (ok, &self.state_file) {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Removes namespaces of labs named by [`Lab::unique`] whose process is
/// gone, killing what still runs in them.
pub fn sweep_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(pid) = owner_pid(&name)
            && !pid_alive(pid)
        {
            let _ = remove_ns(&name);
        }
    }
}

/// The pid in a `...-pPID-N-host` namespace name.
pub fn owner_pid(ns: &str) -> Option<u32> {
    let parts: Vec<&str> = ns.split('-').collect();
    parts.windows(2).find_map(|w| {
        let pid = w[0].strip_prefix('p')?;
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if w[1].is_empty() || !w[1].bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        pid.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The build's operations of `spec`, as the commands a person would type.
    fn command_lines(spec: &LabSpec) -> Vec<String> {
        Lab::commands(spec)
            .unwrap()
            .iter()
            .map(|c| c.to_string())
            .collect()
    }

    #[test]
    fn owner_pid_is_found_only_in_unique_names() {
        assert_eq!(owner_pid("t-caps-p1234-0-a"), Some(1234));
        assert_eq!(owner_pid("ladder-a"), None);
        assert_eq!(owner_pid("my-p-1-a"), None);
        let u = Lab::unique("x");
        assert_eq!(owner_pid(&format!("{u}-a")), Some(std::process::id()));
    }

    #[test]
    fn mptcp_limits_come_before_endpoints_on_both_families() {
        let mut spec = LabSpec::two_hosts("mp", 2, None);
        spec.subnet_base = Some(61);
        spec.mptcp.push(crate::spec::MptcpSpec {
            host: "b".into(),
            endpoints: vec![1],
            kind: "signal".into(),
            subflows: 2,
            add_addr_accepted: 0,
        });
        let cmds = command_lines(&spec);
        let at = |x: &str| cmds.iter().position(|c| c == x);
        let limits = at("ip -n mp-b mptcp limits set subflow 2 add_addr_accepted 0").unwrap();
        let v4 = at("ip -n mp-b mptcp endpoint add 10.61.1.2 dev eth1 signal").unwrap();
        assert!(limits < v4, "{cmds:?}");
        assert!(at("ip -n mp-b mptcp endpoint add fd00:10:61:1::2 dev eth1 signal").is_some());
        assert_eq!(
            cmds.iter().filter(|c| c.contains("mptcp endpoint")).count(),
            2
        );
    }

    #[test]
    fn commands_build_links_caps_routes_and_overlays() {
        let mut spec = LabSpec::two_hosts("cmds", 2, Some("1gbit"));
        spec.subnet_base = Some(61);
        spec.vxlans.push(crate::spec::VxlanSpec {
            link: 0,
            id: 7,
            port: 4789,
            ..Default::default()
        });
        spec.hosts[0].loopback.push("10.200.0.1/32".into());
        spec.routes.push(crate::spec::RouteSpec {
            host: "b".into(),
            dst: "10.200.0.1/32".into(),
            links: vec![0, 1],
        });
        let cmds = command_lines(&spec);
        let has = |x: &str| cmds.iter().any(|c| c.contains(x));
        assert!(has(
            "ip link add eth0 netns cmds-a type veth peer name eth0 netns cmds-b"
        ));
        assert!(has(
            "tc -n cmds-a qdisc add dev eth1 root tbf rate 1000000000bit"
        ));
        assert!(has(
            "ip -n cmds-b route add 10.200.0.1/32 nexthop via 10.61.0.1 dev eth0 nexthop via 10.61.1.1 dev eth1"
        ));
        assert!(has(
            "type vxlan id 7 local 10.61.0.1 remote 10.61.0.2 dstport 4789 dev eth0"
        ));
        assert!(has("ip -n cmds-a link set dev vx0 mtu 1450"));
        assert!(!has("flowid"), "no per-flow caps unless asked");
        assert!(!has("mptcp"), "no MPTCP unless asked");
        // Namespaces come first, routes after the links they use.
        let pos = |x: &str| cmds.iter().position(|c| c.contains(x)).unwrap();
        assert!(pos("netns add cmds-b") < pos("type veth"));
        assert!(pos("type veth") < pos("nexthop"));
    }

    #[test]
    fn per_flow_caps_hash_tcp_ports_into_htb_classes() {
        let mut spec = LabSpec::two_hosts("fc", 1, Some("1gbit"));
        spec.links[0].flow_rate = Some("250mbit".into());
        spec.links[0].flows = Some(16);
        spec.links[0].gso_ipv4_max_size = Some(185000);
        let cmds = command_lines(&spec);
        let count = |x: &str| cmds.iter().filter(|c| c.contains(x)).count();
        assert_eq!(count("tbf"), 0, "the htb parent enforces the link rate");
        assert_eq!(count("htb rate 62500000bit ceil 250000000bit"), 2 * 16);
        assert_eq!(count("classid 1:1 htb rate 1000000000bit"), 2);
        assert_eq!(count("u32 divisor 16"), 2);
        assert_eq!(count("u32 ht 2:f: match u32 0 0 flowid 1:10f"), 2);
        assert_eq!(
            count(
                "u32 ht 800:: match ip protocol 6 0xff match ip sport 0 0x1 hashkey mask 0x001e0000 at 20 link 2:"
            ),
            2
        );
        assert_eq!(
            count("match ip sport 1 0x1 hashkey mask 0x0000001e at 20"),
            2
        );
        assert_eq!(
            count("ip -n fc-b link set dev eth0 gso_ipv4_max_size 185000"),
            1
        );
        let pos = |x: &str| cmds.iter().position(|c| c.contains(x)).unwrap();
        assert!(pos("divisor") < pos("ht 2:0:") && pos("ht 2:f:") < pos("ht 800::"));
    }

    #[test]
    fn per_flow_caps_cover_ipv6_tcp_and_udp() {
        let mut spec = LabSpec::two_hosts("fc6", 1, None);
        spec.links[0].flow_rate = Some("100mbit".into());
        spec.links[0].flows = Some(16);
        let cmds = command_lines(&spec);
        let count = |x: &str| cmds.iter().filter(|c| c.contains(x)).count();
        // IPv6 TCP: the IPv4 hash at byte 40, and at 48 behind BIG TCP's
        // hop-by-hop header, into the one bucket table.
        for (parity, mask) in [("0", "0x001e0000"), ("1", "0x0000001e")] {
            let plain = format!(
                "prio 2 protocol ipv6 u32 match ip6 protocol 6 0xff match ip6 sport {parity} 0x1 hashkey mask {mask} at 40 link 2:"
            );
            let hbh = format!(
                "prio 2 protocol ipv6 u32 match ip6 protocol 0 0xff match u16 0x0600 0xffff at 40 match u16 {parity} 0x1 at 48 hashkey mask {mask} at 48 link 2:"
            );
            assert_eq!(count(&plain), 2, "{cmds:#?}");
            assert_eq!(count(&hbh), 2, "{cmds:#?}");
        }
        assert_eq!(count("divisor"), 2, "one bucket table per end");
        // UDP: a cBPF program per family, quoted as a shell takes it.
        assert_eq!(
            count(
                "prio 3 protocol ip bpf bytecode '13,48 0 0 23,21 0 10 17,40 0 0 20,69 8 0 8191,177 0 0 14,64 0 0 14,7 0 0 0,116 0 0 16,172 0 0 0,84 0 0 15,4 0 0 65792,22 0 0 0,6 0 0 0'"
            ),
            2
        );
        assert_eq!(
            count(
                "prio 4 protocol ipv6 bpf bytecode '10,48 0 0 20,21 0 7 17,32 0 0 54,7 0 0 0,116 0 0 16,172 0 0 0,84 0 0 15,4 0 0 65792,22 0 0 0,6 0 0 0'"
            ),
            2
        );
        // tc refuses two protocols at one priority.
        for (prio, proto) in [("1", "ip"), ("2", "ipv6"), ("3", "ip"), ("4", "ipv6")] {
            let at = format!("prio {prio} protocol ");
            assert!(
                cmds.iter()
                    .filter(|c| c.contains(&at))
                    .all(|c| c.contains(&format!("{at}{proto} "))),
                "{cmds:#?}"
            );
        }
    }

    /// Runs a cBPF program in tc's `bytecode` form over `pkt`, for the
    /// instructions `udp_hash_program` uses.
    fn run_cbpf(program: &str, pkt: &[u8]) -> u32 {
        let insns: Vec<[u32; 4]> = program
            .split(',')
            .skip(1)
            .map(|i| {
                let v: Vec<u32> = i.split(' ').map(|x| x.parse().unwrap()).collect();
                [v[0], v[1], v[2], v[3]]
            })
            .collect();
        assert_eq!(program.split(',').next(), Some(&*insns.len().to_string()));
        let be = |at: usize, n: usize| {
            pkt[at..at + n]
                .iter()
                .fold(0u32, |a, b| (a << 8) | u32::from(*b))
        };
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        loop {
            let [code, jt, jf, k] = insns[pc];
            pc += 1;
            match code {
                0x30 => a = be(k as usize, 1),
                0x28 => a = be(k as usize, 2),
                0x20 => a = be(k as usize, 4),
                0x40 => a = be((x + k) as usize, 4),
                0xb1 => x = 4 * (be(k as usize, 1) & 0xf),
                0x15 => pc += if a == k { jt } else { jf } as usize,
                0x45 => pc += if a & k != 0 { jt } else { jf } as usize,
                0x07 => x = a,
                0x74 => a >>= k,
                0xac => a ^= x,
                0x54 => a &= k,
                0x04 => a += k,
                0x16 => return a,
                0x06 => return k,
                _ => panic!("instruction {code:#x} not expected"),
            }
        }
    }

    /// An Ethernet frame holding an IPv4 (or IPv6) packet of `proto` with
    /// `options` bytes of IPv4 options and ports `sport` and `dport`.
    fn frame(v6: bool, proto: u8, options: usize, frag: u16, sport: u16, dport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 14];
        if v6 {
            p.extend([0x60, 0, 0, 0, 0, 16, proto, 64]);
            p.extend([0u8; 32]);
        } else {
            p.extend([0x40 | (5 + options / 4) as u8, 0, 0, 36]);
            p.extend([0, 1]);
            p.extend(frag.to_be_bytes());
            p.extend([64, proto, 0, 0]);
            p.extend([0u8; 8]);
            p.extend(vec![1u8; options]);
        }
        p.extend(sport.to_be_bytes());
        p.extend(dport.to_be_bytes());
        p.extend([0u8; 12]);
        p
    }

    #[test]
    fn the_udp_program_hashes_both_ports_and_skips_the_rest() {
        for v6 in [false, true] {
            let prog = udp_hash_program(v6, 64);
            let class = |sport: u16, dport: u16| 0x10100 + (u32::from(sport ^ dport) & 63);
            for (s, d) in [(40000, 5201), (5201, 40000), (33333, 44444), (1, 1)] {
                assert_eq!(run_cbpf(&prog, &frame(v6, 17, 0, 0, s, d)), class(s, d));
            }
            // Not UDP: no match, so the next filter or the default class.
            assert_eq!(run_cbpf(&prog, &frame(v6, 6, 0, 0, 40000, 5201)), 0);
            assert_eq!(run_cbpf(&prog, &frame(v6, 58, 0, 0, 40000, 5201)), 0);
        }
        let v4 = udp_hash_program(false, 256);
        // IPv4 options move the ports; the program follows the header length.
        let with_options = frame(false, 17, 8, 0, 40001, 5201);
        assert_eq!(
            run_cbpf(&v4, &with_options),
            0x10100 + ((40001 ^ 5201) & 255)
        );
        // The first fragment (more fragments set) has the ports; later ones do not.
        assert_eq!(
            run_cbpf(&v4, &frame(false, 17, 0, 0x2000, 40001, 5201)),
            0x10100 + ((40001 ^ 5201) & 255)
        );
        assert_eq!(run_cbpf(&v4, &frame(false, 17, 0, 0x2000 | 185, 1, 2)), 0);
    }

    #[test]
    fn a_packet_overhead_is_charged_by_every_cap_and_gso_max_segs_is_set() {
        let mut spec = LabSpec::two_hosts("po", 2, Some("100mbit"));
        for l in &mut spec.links {
            l.packet_overhead = Some(1500);
            l.gso_max_segs = Some(1);
            l.mtu = Some(9000);
        }
        spec.links[1].flow_rate = Some("50mbit".into());
        spec.links[1].flows = Some(4);
        let cmds = command_lines(&spec);
        let count = |x: &str| cmds.iter().filter(|c| c.contains(x)).count();
        assert_eq!(count("tbf rate 100000000bit"), 2);
        assert_eq!(count("limit 262144 overhead 1500"), 2, "{cmds:#?}");
        // Parent, default and four buckets on both ends.
        assert_eq!(count("quantum 65536 overhead 1500"), 2 * 6);
        assert_eq!(count("link set dev eth0 mtu 9000 gso_max_segs 1"), 2);
        spec.links[0].rate = None;
        let e = spec.validate().unwrap_err().to_string();
        assert!(e.contains("packet_overhead"), "{e}");
        spec.links[0].rate = Some("100mbit".into());
        spec.links[0].gso_max_segs = Some(0);
        let e = spec.validate().unwrap_err().to_string();
        assert!(e.contains("gso_max_segs"), "{e}");
    }
}
