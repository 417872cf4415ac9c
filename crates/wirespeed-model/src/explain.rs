//! Explain a result: measured against each ceiling, and the bottleneck
//! named from evidence in the result (CPU, NICs, flows, TCP_INFO) and in
//! facts the caller knows about the path.

use crate::bottleneck::*;
use crate::ceilings::{Ceilings, flows_needed};
use crate::gbits;
use crate::profile::SCHEMA_VERSION;
use wirespeed_types::result::{CpuUsage, FlowResult, jain};
use wirespeed_types::spec::FlowKind;
use wirespeed_types::{Direction, TestResult};

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        wirespeed_types::result::finite(part / whole * 100.0)
    } else {
        0.0
    }
}

/// Bytes of overhead an encapsulation adds to each packet (IPv4 underlay),
/// from docs/facts.md: VXLAN 50, IP-in-IP 20, WireGuard 60.
pub fn encap_overhead(name: &str) -> Option<u32> {
    match name.to_ascii_lowercase().as_str() {
        "vxlan" => Some(50),
        "ipip" | "ip-in-ip" | "ipinip" => Some(20),
        "wireguard" | "wg" => Some(60),
        _ => None,
    }
}

/// (forward, reverse) goodput; from the total when the result has no
/// per-direction figures.
fn directions(r: &TestResult) -> (f64, f64) {
    let get = |name: &str| {
        r.directions
            .iter()
            .filter(|d| d.direction == name)
            .map(|d| d.received_bps)
            .sum::<f64>()
    };
    if r.directions.is_empty() {
        match r.spec.direction {
            Direction::Reverse if r.spec.workload.is_bulk() => (0.0, r.throughput_bps),
            _ => (r.throughput_bps, 0.0),
        }
    } else {
        (get("forward"), get("reverse"))
    }
}

/// A path's one-way load: its busier direction.
fn path_load(p: &wirespeed_types::result::PathResult) -> f64 {
    let one_way = p.forward_bps.max(p.reverse_bps);
    if one_way > 0.0 {
        one_way
    } else {
        p.throughput_bps
    }
}

/// Flows that carry bulk data or transactions (not the latency probe).
fn work_flows(r: &TestResult) -> Vec<&FlowResult> {
    r.flows
        .iter()
        .filter(|f| f.kind != Some(FlowKind::Probe))
        .collect()
}

/// Sets a result against the ceilings (when known) and names what limits
/// it. Pure: reads only its arguments.
pub fn explain(r: &TestResult, c: Option<&Ceilings>, facts: &Facts) -> Explanation {
    let (fwd, rev) = directions(r);
    let one_way = fwd.max(rev);
    let both = fwd + rev;
    let nic_cap = facts
        .path_cap_bps
        .filter(|x| x.is_finite() && *x > 0.0)
        .or(c.and_then(|c| c.per_nic_bps));
    let mut out = Explanation {
        schema_version: SCHEMA_VERSION,
        measured_one_way_bps: one_way,
        measured_both_ways_bps: both,
        ..Explanation::default()
    };
    let mut add = |ceiling: String, cap: Option<f64>, measured: f64| {
        if let Some(cap) = cap.filter(|x| *x > 0.0) {
            out.percent_of.push(PercentOf {
                ceiling,
                ceiling_bps: cap,
                measured_bps: measured,
                percent: pct(measured, cap),
            });
        }
    };
    if let Some(c) = c {
        add("per_vm_one_way".into(), c.per_vm_one_way_bps, one_way);
        if r.spec.direction == Direction::Bidir || rev > 0.0 && fwd > 0.0 {
            add("per_vm_both_ways".into(), c.per_vm_both_ways_bps, both);
        }
    }
    for p in &r.paths {
        add(
            format!("per_nic path {} ({})", p.index, p.label),
            nic_cap,
            path_load(p),
        );
    }
    let flows = work_flows(r);
    if let Some(c) = c
        && !flows.is_empty()
    {
        let mean = flows.iter().map(|f| f.throughput_bps).sum::<f64>() / flows.len() as f64;
        add(
            format!("per_flow (mean of {} flows)", flows.len()),
            c.per_flow_bps,
            mean,
        );
    }

    let above: Vec<String> = out
        .percent_of
        .iter()
        .filter(|p| p.percent > 100.0 * ABOVE_CAP)
        .map(|p| format!("{} {:.0}%", p.ceiling, p.percent))
        .collect();
    if !above.is_empty() {
        out.notes.push(format!(
            "measured above the ceiling ({}): the profile's figure does not hold for this path (a larger machine, or traffic that bypasses the cap, e.g. loopback)",
            above.join(", ")
        ));
    }
    let mut b = Vec::new();
    cpu_rule(r, &mut b);
    nic_rules(r, nic_cap, c.map(|c| c.nics), &mut b);
    if let Some(c) = c {
        vm_rule(
            c,
            one_way,
            both,
            r.spec.direction == Direction::Bidir,
            &mut b,
        );
        flow_cap_rule(r, c, fwd, rev, &mut b);
    }
    retransmit_rule(r, &mut b);
    let nic_named = b.iter().any(|x| x.kind == BottleneckKind::NicImbalance);
    hash_rule(r, nic_named, &mut b);
    buffer_rule(r, &mut b);
    encap_rule(r, facts, &mut b);
    crate::explain_udp::udp_rules(r, &mut b);
    crate::explain_latency::latency_rule(r, &mut b);
    out.summary = if b.is_empty() {
        "no bottleneck found by the rules: CPU, NICs, flows, retransmits, paths and buffers look clear".into()
    } else {
        let kinds: Vec<&str> = b.iter().map(|x| x.kind.name()).collect();
        format!("{} finding(s): {}", b.len(), kinds.join(", "))
    };
    out.bottlenecks = b;
    out
}

fn cpu_rule(r: &TestResult, out: &mut Vec<Bottleneck>) {
    let stream = r.spec.workload.is_bulk();
    for (side, cpu, sends) in [
        (
            "client",
            &r.local_cpu,
            r.spec.direction == Direction::Forward,
        ),
        (
            "server",
            &r.remote_cpu,
            r.spec.direction == Direction::Reverse,
        ),
    ] {
        let CpuUsage {
            max_core_pct,
            total_pct,
            ..
        } = *cpu;
        if !busy(cpu) {
            continue;
        }
        let one_way = stream && r.spec.direction != Direction::Bidir;
        let udp = r.spec.workload.is_udp();
        let (kind, role, fix) = match (one_way, sends) {
            (true, true) => (
                BottleneckKind::SenderCpu,
                "the sender",
                if udp {
                    "spread flows over more threads (-T), keep UDP GSO on, send larger datagrams (-l) or a larger MTU"
                } else {
                    "spread flows over more threads (-T), try --zerocopy, a larger MTU or GSO size"
                },
            ),
            (true, false) => (
                BottleneckKind::ReceiverCpu,
                "the receiver",
                if udp {
                    "spread flows over more threads (-T) and RX queues, keep UDP GRO on, a larger MTU"
                } else {
                    "spread flows over more threads (-T) and RX queues, try --skip-rx-copy, GRO and a larger MTU"
                },
            ),
            _ => (
                BottleneckKind::CpuCore,
                "sending and receiving",
                "spread flows over more threads (-T) and queues",
            ),
        };
        out.push(Bottleneck {
            kind,
            evidence: vec![
                ev(format!("{side}_max_core_pct"), max_core_pct, "%"),
                ev(format!("{side}_process_cpu_pct"), total_pct, "%"),
                ev(format!("{side}_busiest_thread_pct"), busiest_thread(cpu), "%"),
                ev("threads", r.spec.threads as f64, "threads"),
            ],
            message: format!(
                "the {side} ({role}) had a core {max_core_pct:.0}% busy (>= {CPU_BUSY_PCT:.0}%): one core limits the test; {fix}"
            ),
        });
    }
}

/// NIC rules; `nics` is the machine's NIC count when a profile gives one.
fn nic_rules(r: &TestResult, cap: Option<f64>, nics: Option<u32>, out: &mut Vec<Bottleneck>) {
    let Some(cap) = cap else { return };
    if r.paths.is_empty() {
        return;
    }
    let loads: Vec<f64> = r.paths.iter().map(path_load).collect();
    let at: Vec<usize> = (0..loads.len())
        .filter(|&i| (AT_CAP * cap..=ABOVE_CAP * cap).contains(&loads[i]))
        .collect();
    let idle: Vec<usize> = (0..loads.len())
        .filter(|&i| loads[i] < IDLE * cap)
        .collect();
    let mut evidence = vec![ev("nic_cap", cap, "bit/s")];
    for (p, l) in r.paths.iter().zip(&loads) {
        evidence.push(ev(format!("path{}_bps", p.index), *l, "bit/s"));
        evidence.push(ev(
            format!("path{}_flows", p.index),
            p.flows as f64,
            "flows",
        ));
    }
    let label = |i: usize| format!("path {} ({})", r.paths[i].index, r.paths[i].label);
    if !at.is_empty() && !idle.is_empty() {
        let (a, i) = (at[0], idle[0]);
        out.push(Bottleneck {
            kind: BottleneckKind::NicImbalance,
            evidence,
            message: format!(
                "{} runs at {:.0}% of its {} Gbit/s cap while {} carries {:.0}%: move flows to the idle NIC (one --paths pair per NIC) and check that each NIC has its own host route (report 2)",
                label(a),
                pct(loads[a], cap),
                gbits(cap),
                label(i),
                pct(loads[i], cap)
            ),
        });
    } else if at.is_empty() && loads.len() >= 2 && {
        let sum: f64 = loads.iter().sum();
        (AT_CAP * cap..=ABOVE_CAP * cap).contains(&sum)
    } {
        let sum: f64 = loads.iter().sum();
        evidence.push(ev("paths_sum_bps", sum, "bit/s"));
        out.push(Bottleneck {
            kind: BottleneckKind::NicImbalance,
            evidence,
            message: format!(
                "the {} paths together carry {} Gbit/s, {:.0}% of one NIC's {} Gbit/s cap, none of them near it alone: they likely leave by one NIC while the other idles; give each NIC a host route via its own interface, or per-NIC source routing (report 2)",
                loads.len(),
                gbits(sum),
                pct(sum, cap),
                gbits(cap)
            ),
        });
    } else if at.len() == loads.len() && nics.is_some_and(|n| n as usize > loads.len()) {
        let n = nics.unwrap_or_default();
        evidence.push(ev("nics", n as f64, "nics"));
        out.push(Bottleneck {
            kind: BottleneckKind::NicImbalance,
            evidence,
            message: format!(
                "the test used {} of the machine's {n} NICs and each one it used runs at {:.0}% or more of its {} Gbit/s cap: the other NICs idle; add a --paths pair per NIC (report 2)",
                loads.len(),
                AT_CAP * 100.0,
                gbits(cap)
            ),
        });
    } else if at.len() == loads.len() {
        out.push(Bottleneck {
            kind: BottleneckKind::NicCap,
            evidence,
            message: format!(
                "every NIC runs at {:.0}% or more of its {} Gbit/s cap: the NICs are the limit; more needs more NICs or a larger machine",
                AT_CAP * 100.0,
                gbits(cap)
            ),
        });
    }
}

fn vm_rule(c: &Ceilings, one_way: f64, both: f64, bidir: bool, out: &mut Vec<Bottleneck>) {
    let Some(vm) = c.per_vm_one_way_bps else {
        return;
    };
    // Where the NICs' sum is the VM figure, the NIC rule already names it.
    if c.per_nic_bps
        .is_some_and(|n| n * c.nics as f64 <= vm * (1.0 + 1e-9))
    {
        return;
    }
    let (measured, cap, name) = match (bidir, c.per_vm_both_ways_bps) {
        (true, Some(b)) => (both, b, "both ways"),
        _ => (one_way, vm, "one way"),
    };
    if (AT_CAP * cap..=ABOVE_CAP * cap).contains(&measured) {
        let mut evidence = vec![
            ev("measured", measured, "bit/s"),
            ev("per_vm_ceiling", cap, "bit/s"),
        ];
        if let Some(t) = c.vm_total_bps {
            evidence.push(ev("vm_total", t, "bit/s"));
        }
        if let Some(v) = c.vcpus {
            evidence.push(ev("vcpus", v as f64, "vcpus"));
        }
        out.push(Bottleneck {
            kind: BottleneckKind::VmCap,
            evidence,
            message: format!(
                "{:.0}% of the VM's {} Gbit/s ceiling ({name}; {}): the profile's per-VM limit binds; more needs a larger machine",
                pct(measured, cap),
                gbits(cap),
                c.basis.get("vm_total").map(String::as_str).unwrap_or("")
            ),
        });
    }
}

fn flow_cap_rule(r: &TestResult, c: &Ceilings, fwd: f64, rev: f64, out: &mut Vec<Bottleneck>) {
    let Some(per_flow) = c.per_flow_bps else {
        return;
    };
    let flows_in = |name: &str| {
        r.directions
            .iter()
            .filter(|d| d.direction == name)
            .map(|d| d.flows)
            .sum::<u32>()
    };
    let (measured, n) = if rev > fwd {
        (rev, flows_in("reverse"))
    } else {
        (fwd, flows_in("forward"))
    };
    let n = if n == 0 { r.spec.flows.max(1) } else { n };
    let flows_cap = n as f64 * per_flow;
    let upper = c
        .per_vm_one_way_bps
        .or(c.per_nic_bps.map(|x| x * c.nics as f64));
    // Well above flows x cap, the cap does not hold here: not this rule.
    if measured < 0.85 * flows_cap
        || measured > 1.15 * flows_cap
        || upper.is_some_and(|u| flows_cap >= 0.95 * u)
    {
        return;
    }
    let mut evidence = vec![
        ev("flows", n as f64, "flows"),
        ev("per_flow_cap", per_flow, "bit/s"),
        ev("flows_x_cap", flows_cap, "bit/s"),
        ev("measured", measured, "bit/s"),
    ];
    let advice = match upper.and_then(|u| flows_needed(u, per_flow).map(|k| (u, k))) {
        Some((u, k)) => {
            evidence.push(ev("ceiling", u, "bit/s"));
            evidence.push(ev("flows_needed", k as f64, "flows"));
            format!(
                "use {k} flows or more (-F {k}) to reach the {} Gbit/s ceiling",
                gbits(u)
            )
        }
        None => "use more flows (-F)".into(),
    };
    out.push(Bottleneck {
        kind: BottleneckKind::PerFlowCap,
        evidence,
        message: format!(
            "{n} flows x {} Gbit/s per-flow cap = {} Gbit/s and {} Gbit/s was measured ({:.0}%): the per-flow limit binds; {advice}",
            gbits(per_flow),
            gbits(flows_cap),
            gbits(measured),
            pct(measured, flows_cap)
        ),
    });
}

fn retransmit_rule(r: &TestResult, out: &mut Vec<Bottleneck>) {
    let mut retrans = 0u64;
    let mut dsack = 0u64;
    let mut segments = 0f64;
    for f in work_flows(r) {
        let Some(i) = &f.tcp_info else { continue };
        retrans += i.retransmits;
        dsack += i.dsack_dups;
        let sent = match f.kind {
            Some(FlowKind::Forward) => f.client_sent_total,
            Some(FlowKind::Reverse) => f.server_sent_total,
            _ => f.client_sent_total + f.server_sent_total,
        };
        // Hand-made results may lack lifetime totals: use the window's bytes.
        let sent = if sent > 0 {
            sent as f64
        } else {
            f.throughput_bps * r.window_s / 8.0
        };
        let mss = if i.mss > 0 { i.mss } else { 1448 } as f64;
        segments += sent / mss;
    }
    if retrans < 10 || segments <= 0.0 {
        return;
    }
    let rate = retrans as f64 / segments;
    if rate < RETRANS_RATE {
        return;
    }
    out.push(Bottleneck {
        kind: BottleneckKind::Retransmits,
        evidence: vec![
            ev("retransmits", retrans as f64, "segments"),
            ev("segments_sent", segments.round(), "segments"),
            ev("retransmit_pct", rate * 100.0, "%"),
            ev("dsack_dups", dsack as f64, "segments"),
        ],
        message: format!(
            "{retrans} segments retransmitted, {:.2}% of about {:.0} sent (>= {:.1}%): packets are lost on the path, e.g. a policer or rate cap dropping (on AWS `ethtool -S` shows bw_*_allowance_exceeded) or shallow buffers; try --pacing or --cc bbr",
            rate * 100.0,
            segments,
            RETRANS_RATE * 100.0
        ),
    });
}

fn hash_rule(r: &TestResult, nic_named: bool, out: &mut Vec<Bottleneck>) {
    let paths = &r.paths;
    let mut evidence = Vec::new();
    let mut why = None;
    if paths.len() >= 2 {
        let counts: Vec<u32> = paths.iter().map(|p| p.flows).collect();
        let (lo, hi) = (
            counts.iter().copied().min().unwrap_or(0),
            counts.iter().copied().max().unwrap_or(0),
        );
        let loads: Vec<f64> = paths.iter().map(|p| p.throughput_bps).collect();
        let balance = wirespeed_types::result::balance(&loads);
        for p in paths {
            evidence.push(ev(
                format!("path{}_flows", p.index),
                p.flows as f64,
                "flows",
            ));
            evidence.push(ev(
                format!("path{}_share_pct", p.index),
                p.share * 100.0,
                "%",
            ));
        }
        evidence.push(ev("path_balance", balance, "ratio"));
        let total: u32 = counts.iter().sum();
        if lo == 0 && (total as usize) < paths.len() {
            // Not a hash at all: say only what to do about it.
            out.push(Bottleneck {
                kind: BottleneckKind::HashImbalance,
                evidence,
                message: format!(
                    "fewer flows ({total}) than paths ({}): some paths carry nothing; use -F {} or more",
                    paths.len(),
                    paths.len()
                ),
            });
            return;
        } else if hi > 0 && (lo == 0 || hi as f64 >= 1.5 * lo as f64) {
            why = Some(format!(
                "flows are spread unevenly over paths ({lo} to {hi} per path)"
            ));
        } else if balance < PATH_BALANCE_MIN && !nic_named {
            why = Some(format!(
                "paths with equal flows carry unequal traffic (weakest / strongest = {balance:.2})"
            ));
        }
    } else {
        let flows = work_flows(r);
        let rates: Vec<f64> = flows.iter().map(|f| f.throughput_bps).collect();
        let fairness = jain(&rates);
        if rates.len() >= 2 && fairness < FAIRNESS_MIN {
            let max = rates.iter().cloned().fold(0.0, f64::max);
            let min = rates.iter().cloned().fold(f64::INFINITY, f64::min);
            evidence = vec![
                ev("flows", rates.len() as f64, "flows"),
                ev("fairness", fairness, "jain"),
                ev("fastest_flow", max, "bit/s"),
                ev("slowest_flow", min, "bit/s"),
            ];
            why = Some(format!(
                "flows on one path got unequal shares (Jain's index {fairness:.2}, {} to {} Gbit/s): they are likely hashed onto different links of a bond or ECMP group",
                gbits(min),
                gbits(max)
            ));
        }
    }
    if let Some(why) = why {
        out.push(Bottleneck {
            kind: BottleneckKind::HashImbalance,
            evidence,
            message: format!(
                "{why}; use an L4 hash (bond xmit_hash_policy layer3+4, encap3+4 under VXLAN; net.ipv4.fib_multipath_hash_policy=1) or more flows"
            ),
        });
    }
}

fn buffer_rule(r: &TestResult, out: &mut Vec<Bottleneck>) {
    let infos: Vec<_> = work_flows(r)
        .into_iter()
        .filter_map(|f| f.tcp_info.as_ref().map(|i| (f, i)))
        .collect();
    if infos.is_empty() {
        return;
    }
    let n = infos.len() as f64;
    let life_us = ((r.spec.warmup_s + r.window_s) * 1e6).max(1.0);
    let snd: f64 = infos.iter().map(|(_, i)| i.sndbuf_limited_us as f64).sum();
    let rwnd: f64 = infos.iter().map(|(_, i)| i.rwnd_limited_us as f64).sum();
    let snd_frac = (snd / (n * life_us)).min(1.0);
    let rwnd_frac = (rwnd / (n * life_us)).min(1.0);
    let rtts: Vec<f64> = infos
        .iter()
        .map(|(_, i)| i.rtt_us as f64)
        .filter(|x| *x > 0.0)
        .collect();
    let rtt_us = if rtts.is_empty() {
        0.0
    } else {
        rtts.iter().sum::<f64>() / rtts.len() as f64
    };
    let mean_rate = infos.iter().map(|(f, _)| f.throughput_bps).sum::<f64>() / n;
    let buf = match (r.spec.sndbuf, r.spec.rcvbuf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    // A set buffer allows at most buffer / RTT per flow; Linux doubles the
    // value set (half of it for its own bookkeeping), so count it twice as
    // the upper bound.
    let bound = buf
        .filter(|_| rtt_us > 0.0)
        .map(|b| 2.0 * b as f64 * 8.0 / (rtt_us / 1e6));
    let buffer_bound = bound.is_some_and(|x| mean_rate >= 0.7 * x);
    if snd_frac < BUFFER_LIMITED && rwnd_frac < BUFFER_LIMITED && !buffer_bound {
        return;
    }
    let mut evidence = vec![
        ev("sndbuf_limited_pct", snd_frac * 100.0, "%"),
        ev("rwnd_limited_pct", rwnd_frac * 100.0, "%"),
        ev("mean_rtt", rtt_us, "us"),
        ev("mean_flow_rate", mean_rate, "bit/s"),
    ];
    let mut parts = Vec::new();
    if snd_frac >= BUFFER_LIMITED {
        parts.push(format!(
            "flows were send-buffer limited {:.0}% of the time",
            snd_frac * 100.0
        ));
    }
    if rwnd_frac >= BUFFER_LIMITED {
        parts.push(format!(
            "receive-window limited {:.0}% of the time",
            rwnd_frac * 100.0
        ));
    }
    if let (Some(b), Some(x)) = (buf, bound) {
        evidence.push(ev("socket_buffer", b as f64, "bytes"));
        evidence.push(ev("buffer_over_rtt", x, "bit/s"));
        if buffer_bound {
            parts.push(format!(
                "a {b}-byte buffer ({}, doubled by the kernel) over a {rtt_us:.0} us RTT allows at most {} Gbit/s per flow and they ran at {}",
                2 * b as u64,
                gbits(x),
                gbits(mean_rate)
            ));
        }
    }
    out.push(Bottleneck {
        kind: BottleneckKind::SmallBuffers,
        evidence,
        message: format!(
            "{}: socket buffers are small for the RTT; raise them to at least rate x RTT (--socket-buffer, net.ipv4.tcp_wmem/tcp_rmem; report 2 went from 19.9 to 29.1 Gbit/s with 8 MB)",
            parts.join("; ")
        ),
    });
}

fn encap_rule(r: &TestResult, facts: &Facts, out: &mut Vec<Bottleneck>) {
    let Some(name) = facts.encapsulation.as_deref().filter(|s| !s.is_empty()) else {
        return;
    };
    let pmtu = r
        .flows
        .iter()
        .filter_map(|f| f.tcp_info.as_ref())
        .map(|i| i.pmtu)
        .find(|&m| m > 0);
    let mut evidence = Vec::new();
    let mut cost = String::new();
    if let Some(o) = encap_overhead(name) {
        evidence.push(ev("overhead", o as f64, "bytes"));
        if let Some(m) = pmtu {
            evidence.push(ev("path_mtu", m as f64, "bytes"));
            let _ = std::fmt::Write::write_fmt(
                &mut cost,
                format_args!(
                    " ({o} bytes per packet on top of the {m}-byte inner packet, {:.1}% of the wire)",
                    pct(o as f64, (m + o as u64) as f64)
                ),
            );
        } else {
            cost = format!(" ({o} bytes per packet)");
        }
    }
    out.push(Bottleneck {
        kind: BottleneckKind::Encapsulation,
        evidence,
        message: format!(
            "{name} encapsulation on the path{cost}: besides the bytes it costs CPU and offloads; report 3 measured 20-25% fewer IOPS at 1-8 KiB and 30-50% at 1-8 MiB than host networking (direct routing about 2%): compare with host networking, raise the underlay MTU, hash bonds with encap3+4"
        ),
    });
}

#[cfg(test)]
#[path = "explain_tests.rs"]
mod tests;
