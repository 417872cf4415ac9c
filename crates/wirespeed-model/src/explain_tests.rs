//! One test per rule, over results built by hand, and the report figures.

use super::*;
use crate::ceilings::{Query, ceilings};
use crate::profile::builtin;
use wirespeed_types::result::{DirectionResult, PathResult, TcpInfo};
use wirespeed_types::{TestSpec, Workload};

const G: f64 = 1e9;

/// A forward stream result of `flows` flows on one path, `gbit` in total,
/// each flow with TCP_INFO (no retransmits, 100 us RTT).
fn stream(direction: Direction, flows: u32, gbit: f64) -> TestResult {
    let per = gbit * G / flows as f64;
    let (name, kind) = match direction {
        Direction::Reverse => ("reverse", FlowKind::Reverse),
        _ => ("forward", FlowKind::Forward),
    };
    TestResult {
        schema_version: 1,
        spec: TestSpec {
            direction,
            flows,
            ..TestSpec::default()
        },
        window_s: 10.0,
        throughput_bps: gbit * G,
        directions: vec![DirectionResult {
            direction: name.into(),
            sent_bps: gbit * G,
            received_bps: gbit * G,
            flows,
            ..DirectionResult::default()
        }],
        paths: vec![PathResult {
            index: 0,
            label: "10.0.0.1=10.0.0.2".into(),
            flows,
            throughput_bps: gbit * G,
            forward_bps: if name == "forward" { gbit * G } else { 0.0 },
            reverse_bps: if name == "reverse" { gbit * G } else { 0.0 },
            share: 1.0,
            ..PathResult::default()
        }],
        flows: (0..flows)
            .map(|id| FlowResult {
                id,
                kind: Some(kind),
                throughput_bps: per,
                client_sent_total: (per * 11.0 / 8.0) as u64,
                server_sent_total: (per * 11.0 / 8.0) as u64,
                tcp_info: Some(TcpInfo {
                    rtt_us: 100,
                    mss: 1448,
                    pmtu: 1500,
                    ..TcpInfo::default()
                }),
                ..FlowResult::default()
            })
            .collect(),
        ..TestResult::default()
    }
}

/// Two paths carrying `a` and `b` Gbit/s forward with `fa` and `fb` flows.
fn two_paths(a: f64, b: f64, fa: u32, fb: u32) -> TestResult {
    let mut r = stream(Direction::Forward, fa + fb, a + b);
    r.paths = [(0, a, fa), (1, b, fb)]
        .iter()
        .map(|&(i, g, f)| PathResult {
            index: i,
            label: format!("10.0.{i}.1=10.0.{i}.2"),
            flows: f,
            throughput_bps: g * G,
            forward_bps: g * G,
            share: g / (a + b),
            ..PathResult::default()
        })
        .collect();
    r
}

fn model(profile: &str, vcpus: Option<u32>, nics: u32) -> Ceilings {
    ceilings(
        &builtin(profile).unwrap(),
        &Query {
            vcpus,
            nics: Some(nics),
            ..Query::default()
        },
    )
    .unwrap()
}

fn kinds(e: &Explanation) -> Vec<BottleneckKind> {
    e.bottlenecks.iter().map(|b| b.kind).collect()
}

fn find(e: &Explanation, k: BottleneckKind) -> &Bottleneck {
    e.bottlenecks
        .iter()
        .find(|b| b.kind == k)
        .unwrap_or_else(|| panic!("no {k:?} in {e:#?}"))
}

fn evidence(b: &Bottleneck, name: &str) -> f64 {
    b.evidence
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no evidence {name} in {b:#?}"))
        .value
}

#[test]
fn busy_core_named_by_role_and_direction() {
    let none = Facts::default();
    let mut r = stream(Direction::Forward, 1, 10.0);
    r.local_cpu.max_core_pct = 97.0;
    r.local_cpu.total_pct = 99.0;
    let e = explain(&r, None, &none);
    let b = find(&e, BottleneckKind::SenderCpu);
    assert_eq!(evidence(b, "client_max_core_pct"), 97.0);
    assert!(b.message.contains("client") && b.message.contains("97%"));
    // The same busy server core is the receiver in a forward test...
    let mut r = stream(Direction::Forward, 1, 10.0);
    r.remote_cpu.max_core_pct = 93.0;
    assert_eq!(
        kinds(&explain(&r, None, &none)),
        vec![BottleneckKind::ReceiverCpu]
    );
    // ...and the sender in a reverse test.
    let mut r = stream(Direction::Reverse, 1, 10.0);
    r.remote_cpu.max_core_pct = 93.0;
    assert_eq!(
        kinds(&explain(&r, None, &none)),
        vec![BottleneckKind::SenderCpu]
    );
    r.spec.direction = Direction::Bidir;
    assert_eq!(
        kinds(&explain(&r, None, &none)),
        vec![BottleneckKind::CpuCore]
    );
    // 89% is not a bottleneck.
    r.remote_cpu.max_core_pct = 89.0;
    assert!(explain(&r, None, &none).bottlenecks.is_empty());
}

#[test]
fn one_nic_at_cap_while_another_idles() {
    // Report 2's machine: 16 Gbit/s per NIC.
    let c = model("ibm-vpc", Some(32), 2);
    let r = two_paths(15.8, 2.0, 2, 2);
    let e = explain(&r, Some(&c), &Facts::default());
    let b = find(&e, BottleneckKind::NicImbalance);
    assert_eq!(evidence(b, "nic_cap"), 16e9);
    assert_eq!(evidence(b, "path1_bps"), 2e9);
    assert!(
        b.message.contains("path 0") && b.message.contains("99%"),
        "{}",
        b.message
    );
    // Equal flows, unequal traffic, but the NIC rule already named it.
    assert!(!kinds(&e).contains(&BottleneckKind::HashImbalance));
    let p0 = &e
        .percent_of
        .iter()
        .find(|p| p.ceiling.contains("path 0"))
        .unwrap();
    assert!((p0.percent - 98.75).abs() < 1e-9);
}

#[test]
fn paths_sharing_one_nic() {
    // Report 2 before the host routes: both paths leave by NIC 0, so
    // together they carry one NIC's 16 Gbit/s and NIC 1 idles.
    let c = model("ibm-vpc", Some(32), 2);
    let e = explain(&two_paths(7.9, 7.8, 1, 1), Some(&c), &Facts::default());
    let b = find(&e, BottleneckKind::NicImbalance);
    assert!((evidence(b, "paths_sum_bps") - 15.7e9).abs() < 1.0);
    assert!(b.message.contains("host route"), "{}", b.message);
}

#[test]
fn one_used_nic_at_cap_while_the_others_are_not_in_the_test() {
    let c = model("ibm-vpc", Some(32), 2);
    let mut r = two_paths(15.8, 0.0, 4, 0);
    r.paths.truncate(1);
    let e = explain(&r, Some(&c), &Facts::default());
    assert_eq!(kinds(&e), vec![BottleneckKind::NicImbalance]);
    let b = find(&e, BottleneckKind::NicImbalance);
    assert_eq!(evidence(b, "nics"), 2.0);
    assert!(
        b.message.contains("1 of the machine's 2 NICs"),
        "{}",
        b.message
    );
}

#[test]
fn every_nic_at_cap_is_the_nic_limit() {
    // Report 2: 4 streams per NIC gave 32.0, the theoretical maximum.
    let c = model("ibm-vpc", Some(32), 2);
    let e = explain(&two_paths(16.0, 16.0, 4, 4), Some(&c), &Facts::default());
    assert_eq!(kinds(&e), vec![BottleneckKind::NicCap]);
    let vm = &e.percent_of[0];
    assert_eq!(vm.ceiling, "per_vm_one_way");
    assert!((vm.percent - 100.0).abs() < 1e-9);
    // A path cap given as a fact (a lab link) works without a profile.
    let facts = Facts {
        path_cap_bps: Some(1e9),
        ..Facts::default()
    };
    let e = explain(&two_paths(0.95, 0.95, 1, 1), None, &facts);
    assert_eq!(kinds(&e), vec![BottleneckKind::NicCap]);
}

#[test]
fn bidir_against_both_ways() {
    // Report 2: bidir 57.4 Gbit/s on 2 NICs is 90% of 64.
    let c = model("ibm-vpc", Some(32), 2);
    let mut r = two_paths(14.35, 14.35, 4, 4);
    r.spec.direction = Direction::Bidir;
    r.throughput_bps = 57.4 * G;
    r.directions = ["forward", "reverse"]
        .iter()
        .map(|d| DirectionResult {
            direction: d.to_string(),
            received_bps: 28.7 * G,
            flows: 8,
            ..DirectionResult::default()
        })
        .collect();
    let e = explain(&r, Some(&c), &Facts::default());
    let both = e
        .percent_of
        .iter()
        .find(|p| p.ceiling == "per_vm_both_ways")
        .unwrap();
    assert!((both.percent - 89.6875).abs() < 1e-9, "{both:?}");
}

#[test]
fn vm_cap_of_report5() {
    // 8 vCPUs: 16 Gbit/s per VM, no per-NIC cap: the VM figure binds.
    let c = model("gce", Some(8), 1);
    let e = explain(
        &stream(Direction::Forward, 16, 15.6),
        Some(&c),
        &Facts::default(),
    );
    let b = find(&e, BottleneckKind::VmCap);
    assert_eq!(evidence(b, "per_vm_ceiling"), 16e9);
    assert_eq!(evidence(b, "vcpus"), 8.0);
    assert!(b.message.contains("8 vCPUs x 2 Gbit/s"), "{}", b.message);
}

#[test]
fn per_flow_cap_with_too_few_flows() {
    let c = crate::ceilings::tests::of_instance("aws", "c5n.18xlarge");
    // 2 flows x 5 Gbit/s: 9.8 measured on a 100 Gbit/s machine.
    let e = explain(
        &stream(Direction::Forward, 2, 9.8),
        Some(&c),
        &Facts::default(),
    );
    let b = find(&e, BottleneckKind::PerFlowCap);
    assert_eq!(evidence(b, "flows"), 2.0);
    assert_eq!(evidence(b, "flows_x_cap"), 10e9);
    assert_eq!(evidence(b, "flows_needed"), 20.0);
    assert!(b.message.contains("-F 20"), "{}", b.message);
    // Report 5: 8 flows of 1.25 pass 10 Gbit/s on a 16 Gbit/s VM; 4 flows stop at 5.
    let c = model("gce", Some(8), 1);
    let e = explain(
        &stream(Direction::Forward, 4, 4.9),
        Some(&c),
        &Facts::default(),
    );
    assert_eq!(
        evidence(find(&e, BottleneckKind::PerFlowCap), "flows_needed"),
        13.0
    );
    // Enough flows, or well below flows x cap: not named.
    let e = explain(
        &stream(Direction::Forward, 4, 2.0),
        Some(&c),
        &Facts::default(),
    );
    assert!(!kinds(&e).contains(&BottleneckKind::PerFlowCap));
}

#[test]
fn retransmits_relative_to_segments() {
    let mut r = stream(Direction::Forward, 2, 10.0);
    // Each flow sent 5 Gbit/s x 11 s = 6.9 GB over its life: 4.75 million
    // segments of 1448 bytes, 9.5 million in all.
    for f in &mut r.flows {
        f.tcp_info.as_mut().unwrap().retransmits = 1000;
    }
    assert!(explain(&r, None, &Facts::default()).bottlenecks.is_empty());
    for f in &mut r.flows {
        f.tcp_info.as_mut().unwrap().retransmits = 20_000;
    }
    let e = explain(&r, None, &Facts::default());
    let b = find(&e, BottleneckKind::Retransmits);
    assert_eq!(evidence(b, "retransmits"), 40_000.0);
    let rate = evidence(b, "retransmit_pct");
    assert!((0.42..0.43).contains(&rate), "{rate}");
}

#[test]
fn hash_imbalance_over_paths_and_links() {
    // Uneven flows over two paths.
    let e = explain(&two_paths(6.0, 2.0, 3, 1), None, &Facts::default());
    let b = find(&e, BottleneckKind::HashImbalance);
    assert_eq!(evidence(b, "path0_flows"), 3.0);
    assert!(b.message.contains("1 to 3"), "{}", b.message);
    // Fewer flows than paths.
    let e = explain(&two_paths(0.9, 0.0, 1, 0), None, &Facts::default());
    let m = &find(&e, BottleneckKind::HashImbalance).message;
    assert!(m.contains("fewer flows (1) than paths (2)"), "{m}");
    // Equal flows, unequal traffic, no caps known.
    let e = explain(&two_paths(6.0, 2.0, 2, 2), None, &Facts::default());
    assert!(
        (evidence(find(&e, BottleneckKind::HashImbalance), "path_balance") - 1.0 / 3.0).abs()
            < 1e-9
    );
    // One path, flows hashed onto links of a bond: 3 share one link, 1 has the other.
    let mut r = stream(Direction::Forward, 4, 2.0);
    for (f, g) in r.flows.iter_mut().zip([0.33, 0.33, 0.34, 1.0]) {
        f.throughput_bps = g * G;
    }
    let e = explain(&r, None, &Facts::default());
    let b = find(&e, BottleneckKind::HashImbalance);
    assert!(evidence(b, "fairness") < FAIRNESS_MIN);
    assert!(b.message.contains("layer3+4"));
}

#[test]
fn small_buffers_from_tcp_info_and_from_buffer_over_rtt() {
    let mut r = stream(Direction::Forward, 2, 4.0);
    // 11 s of life (1 s warm-up + 10 s), send-buffer limited for 6.6 s each.
    for f in &mut r.flows {
        f.tcp_info.as_mut().unwrap().sndbuf_limited_us = 6_600_000;
    }
    let e = explain(&r, None, &Facts::default());
    let b = find(&e, BottleneckKind::SmallBuffers);
    assert!((evidence(b, "sndbuf_limited_pct") - 60.0).abs() < 1e-9);
    // 256 KiB, doubled by the kernel, over 1 ms allows 4.2 Gbit/s per
    // flow; flows ran at 3.2.
    let mut r = stream(Direction::Forward, 2, 6.4);
    r.spec.sndbuf = Some(256 * 1024);
    r.spec.rcvbuf = Some(256 * 1024);
    for f in &mut r.flows {
        f.tcp_info.as_mut().unwrap().rtt_us = 1000;
    }
    let e = explain(&r, None, &Facts::default());
    let b = find(&e, BottleneckKind::SmallBuffers);
    assert!((evidence(b, "buffer_over_rtt") - 4_194_304_000.0).abs() < 1.0);
    assert!(b.message.contains("262144-byte"), "{}", b.message);
    // The same buffer over a 100 us RTT allows 42 Gbit/s: not named.
    for f in &mut r.flows {
        f.tcp_info.as_mut().unwrap().rtt_us = 100;
    }
    assert!(explain(&r, None, &Facts::default()).bottlenecks.is_empty());
}

#[test]
fn encapsulation_from_a_fact() {
    let r = stream(Direction::Forward, 1, 5.0);
    let facts = Facts {
        encapsulation: Some("vxlan".into()),
        ..Facts::default()
    };
    let e = explain(&r, None, &facts);
    let b = find(&e, BottleneckKind::Encapsulation);
    assert_eq!(evidence(b, "overhead"), 50.0);
    assert_eq!(evidence(b, "path_mtu"), 1500.0);
    assert!(b.message.contains("report 3"));
    assert_eq!(encap_overhead("IPIP"), Some(20));
    assert_eq!(encap_overhead("geneve"), None);
    // Unknown kinds are still named, without a byte count.
    let facts = Facts {
        encapsulation: Some("geneve".into()),
        ..Facts::default()
    };
    assert!(
        find(&explain(&r, None, &facts), BottleneckKind::Encapsulation)
            .evidence
            .is_empty()
    );
}

#[test]
fn clean_and_odd_results_do_not_panic() {
    let c = model("ibm-vpc", Some(8), 1);
    let e = explain(
        &stream(Direction::Forward, 4, 6.0),
        Some(&c),
        &Facts::default(),
    );
    assert!(e.bottlenecks.is_empty(), "{e:#?}");
    assert!(e.summary.starts_with("no bottleneck"));
    assert!((e.percent_of[0].percent - 50.0).abs() < 1e-9);
    // An empty result, and one full of NaN.
    let _ = explain(&TestResult::default(), Some(&c), &Facts::default());
    let mut r = stream(Direction::Forward, 2, f64::NAN);
    r.local_cpu.max_core_pct = f64::NAN;
    r.window_s = f64::NAN;
    let e = explain(
        &r,
        Some(&c),
        &Facts {
            path_cap_bps: Some(f64::NAN),
            encapsulation: Some(String::new()),
        },
    );
    for p in &e.percent_of {
        assert!(p.percent.is_finite());
    }
    // rr results have no direction: measured is the total.
    let mut r = stream(Direction::Forward, 1, 1.0);
    r.spec.workload = Workload::Rr;
    r.directions.clear();
    assert_eq!(
        explain(&r, None, &Facts::default()).measured_one_way_bps,
        1e9
    );
}

/// A forward udp-stream result: `sent` datagrams, `lost` of them lost,
/// 2 flows without TCP_INFO, offloads as given.
fn udp(sent: u64, lost: u64, gso: bool, gro: bool) -> TestResult {
    use wirespeed_types::result::{UdpOffload, UdpStats, loss_pct};
    let mut r = stream(Direction::Forward, 2, 1.0);
    r.spec.workload = Workload::UdpStream;
    r.spec.rate_bps = Some(1_000_000_000);
    for f in &mut r.flows {
        f.tcp_info = None;
    }
    let u = UdpStats {
        datagrams_sent: sent,
        datagrams_received: sent - lost,
        lost,
        loss_pct: loss_pct(lost, sent),
        ..UdpStats::default()
    };
    r.directions[0].sent_bps = 2.0 * G;
    r.directions[0].udp = Some(u.clone());
    r.udp = Some(u);
    r.udp_offload = Some(UdpOffload {
        client_gso: gso,
        client_gro: gro,
        server_gso: gso,
        server_gro: gro,
    });
    r
}

#[test]
fn udp_loss_is_blamed_on_the_path_or_on_a_busy_receiver() {
    let none = Facts::default();
    // Half lost, receiver idle: the path dropped them; lower -b.
    let e = explain(&udp(1000, 500, true, true), None, &none);
    let b = find(&e, BottleneckKind::DatagramLoss);
    assert!((evidence(b, "loss_pct") - 50.0).abs() < 1e-9);
    assert!(b.message.contains("lower -b"), "{}", b.message);
    assert!(b.message.contains("1.00 Gbit/s per flow"), "{}", b.message);
    // The same loss with the server's core full: its buffers overflowed.
    let mut r = udp(1000, 500, true, true);
    r.remote_cpu.max_core_pct = 99.0;
    let b = find(&explain(&r, None, &none), BottleneckKind::DatagramLoss).clone();
    assert!(b.message.contains("server (receiver)"), "{}", b.message);
    assert!(b.message.contains("--rcvbuf"), "{}", b.message);
    // Under 1% is no finding; nor is a TCP retransmit rule fired for UDP.
    let e = explain(&udp(1000, 9, true, true), None, &none);
    assert!(!kinds(&e).contains(&BottleneckKind::DatagramLoss), "{e:#?}");
    assert!(!kinds(&e).contains(&BottleneckKind::Retransmits));
}

#[test]
fn a_busy_side_without_gso_or_gro_is_told_which_offload_it_lacks() {
    let none = Facts::default();
    // --no-gso with the sending client's core full.
    let mut r = udp(1000, 0, false, true);
    r.spec.udp_gso = false;
    r.local_cpu.max_core_pct = 100.0;
    let e = explain(&r, None, &none);
    let b = find(&e, BottleneckKind::UdpNoOffload);
    assert!(b.message.contains("client sends"), "{}", b.message);
    assert!(
        b.message.contains("--no-gso turned it off"),
        "{}",
        b.message
    );
    // The sender is also named as the CPU bottleneck of a one-way test.
    assert!(kinds(&e).contains(&BottleneckKind::SenderCpu), "{e:#?}");
    // GRO asked for but not taken by the kernel, receiving server busy.
    let mut r = udp(1000, 0, true, false);
    r.remote_cpu.max_core_pct = 95.0;
    let b = find(&explain(&r, None, &none), BottleneckKind::UdpNoOffload).clone();
    assert!(b.message.contains("server receives"), "{}", b.message);
    assert!(b.message.contains("did not take it"), "{}", b.message);
    // Offloads on, or cores not busy: no finding.
    let mut r = udp(1000, 0, true, true);
    r.local_cpu.max_core_pct = 100.0;
    assert!(!kinds(&explain(&r, None, &none)).contains(&BottleneckKind::UdpNoOffload));
    let r = udp(1000, 0, false, false);
    assert!(!kinds(&explain(&r, None, &none)).contains(&BottleneckKind::UdpNoOffload));
}
