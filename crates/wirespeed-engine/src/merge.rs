//! Joins the client's and the server's side reports into one
//! [`TestResult`]: per flow, per path, per direction and in total.

use crate::proto::{SideFlow, SideReport};
use crate::result::{
    DirectionResult, FlowResult, IntervalSample, PathResult, SCHEMA_VERSION, TestResult,
    UdpOffload, UdpStats, balance, finite, jain, loss_pct,
};
use crate::spec::{FlowKind, TestSpec};

/// A UDP flow's datagram figures from both sides' counts: the sender's
/// datagrams sent, the receiver's received (udp-rr: the client's own).
fn udp_stats(kind: FlowKind, c: &SideFlow, s: &SideFlow) -> Option<UdpStats> {
    let (cu, su) = (
        c.udp.clone().unwrap_or_default(),
        s.udp.clone().unwrap_or_default(),
    );
    if c.udp.is_none() && s.udp.is_none() {
        return None;
    }
    let (snd, rcv) = match kind {
        FlowKind::Forward => (&cu, &su),
        FlowKind::Reverse => (&su, &cu),
        _ => {
            return Some(UdpStats {
                datagrams_sent: cu.sent,
                datagrams_received: cu.received,
                lost: cu.timeouts,
                loss_pct: loss_pct(cu.timeouts, cu.sent),
                out_of_order: cu.out_of_order,
                duplicates: cu.duplicates,
                jitter_us: 0.0,
            });
        }
    };
    let lost = snd.sent.saturating_sub(rcv.received);
    Some(UdpStats {
        datagrams_sent: snd.sent,
        datagrams_received: rcv.received,
        lost,
        loss_pct: loss_pct(lost, snd.sent),
        out_of_order: rcv.out_of_order,
        duplicates: rcv.duplicates,
        jitter_us: finite(rcv.jitter_us),
    })
}

/// Sums the datagram figures of `flows` (None when none has any).
fn udp_sum<'a>(flows: impl Iterator<Item = &'a FlowResult>) -> Option<UdpStats> {
    flows
        .filter_map(|f| f.udp.as_ref())
        .fold(None, |acc: Option<UdpStats>, u| {
            let mut a = acc.unwrap_or_default();
            a.add(u);
            Some(a)
        })
}

fn bps(bytes: u64, secs: f64) -> f64 {
    finite(bytes as f64 * 8.0 / secs)
}

/// Builds the result of a test from both sides' figures.
pub fn merge(
    spec: &TestSpec,
    server: &str,
    client: &SideReport,
    remote: &SideReport,
    intervals: Vec<IntervalSample>,
    started_unix: f64,
) -> TestResult {
    let lw = client.window_s;
    let flows: Vec<FlowResult> = spec
        .roster()
        .iter()
        .map(|plan| flow_result(spec, plan, client, remote))
        .collect();
    let main: Vec<&FlowResult> = flows
        .iter()
        .filter(|f| f.kind != Some(FlowKind::Probe))
        .collect();
    let sum = |f: &dyn Fn(&FlowResult) -> f64| main.iter().map(|x| f(x)).sum::<f64>();
    let total = sum(&|f| f.throughput_bps);
    let paths = path_results(spec, server, &main, total);
    let directions = if spec.workload.is_bulk() {
        direction_results(&main)
    } else {
        Vec::new()
    };
    let goodputs: Vec<f64> = main.iter().map(|f| f.throughput_bps).collect();
    let path_tp: Vec<f64> = paths.iter().map(|p| p.throughput_bps).collect();
    let transactions: u64 = main.iter().map(|f| f.transactions).sum();
    let udp = udp_sum(main.iter().copied());
    let mut notes = client.notes.clone();
    notes.extend(remote.notes.iter().map(|n| format!("server: {n}")));
    TestResult {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        spec: spec.clone(),
        server: server.to_string(),
        client: String::new(),
        started_unix: finite(started_unix),
        window_s: finite(lw),
        congestion_control: client.congestion_control.clone(),
        throughput_bps: total,
        local_bps: sum(&|f| f.local_bps),
        remote_bps: sum(&|f| f.remote_bps),
        directions,
        paths,
        flows,
        transactions_per_s: if spec.workload.is_bulk() {
            0.0
        } else {
            finite(transactions as f64 / lw)
        },
        latency: client.latency.clone(),
        probe_latency: client.probe_latency.clone(),
        fairness: jain(&goodputs),
        path_balance: balance(&path_tp),
        contended: wirespeed_types::contention::judge(&client.cpu, &remote.cpu),
        local_cpu: client.cpu.clone(),
        remote_cpu: remote.cpu.clone(),
        server_concurrent_tests: remote.concurrent_tests.max(1),
        intervals,
        notes,
        udp,
        udp_offload: spec.workload.is_udp().then(|| offload(client, remote)),
        breakdown: None,
        io_engines: (!spec.io.is_epoll()).then(|| crate::result::IoEngines {
            client: client.io_engine.unwrap_or_default(),
            server: remote.io_engine,
        }),
    }
}

/// Flow `plan` from both sides' counts: its goodput is what the receiver
/// counted (both ways for request/response).
fn flow_result(
    spec: &TestSpec,
    plan: &crate::spec::FlowPlan,
    client: &SideReport,
    remote: &SideReport,
) -> FlowResult {
    let (lw, rw) = (client.window_s, remote.window_s);
    let c = client
        .flows
        .get(plan.id as usize)
        .cloned()
        .unwrap_or_default();
    let s = remote
        .flows
        .iter()
        .find(|f| f.id == plan.id)
        .cloned()
        .unwrap_or_default();
    let (local_bytes, remote_bytes, goodput_local, info, other) = match plan.kind {
        FlowKind::Forward => (
            c.window_sent,
            s.window_received,
            false,
            c.tcp_info.clone(),
            &s.tcp_info,
        ),
        FlowKind::Reverse => (
            c.window_received,
            s.window_sent,
            true,
            s.tcp_info.clone(),
            &c.tcp_info,
        ),
        _ => (
            c.window_sent + c.window_received,
            s.window_sent + s.window_received,
            true,
            c.tcp_info.clone(),
            &s.tcp_info,
        ),
    };
    let other_end_retransmits = other.as_ref().map(|t| t.retransmits);
    let (local_bps, remote_bps) = (bps(local_bytes, lw), bps(remote_bytes, rw));
    FlowResult {
        id: plan.id,
        path: plan.path,
        thread: plan.thread,
        kind: Some(plan.kind),
        local_bytes,
        remote_bytes,
        local_bps,
        remote_bps,
        throughput_bps: if goodput_local { local_bps } else { remote_bps },
        transactions: c.transactions,
        client_sent_total: c.total_sent,
        client_received_total: c.total_received,
        server_sent_total: s.total_sent,
        server_received_total: s.total_received,
        tcp_info: info,
        udp: if spec.workload.is_udp() {
            udp_stats(plan.kind, &c, &s)
        } else {
            None
        },
        rx_zerocopy: s.rx_zerocopy.clone().or_else(|| c.rx_zerocopy.clone()),
        other_end_retransmits,
    }
}

/// Each path's flows and goodput, each way, and its share of `total`.
fn path_results(
    spec: &TestSpec,
    server: &str,
    main: &[&FlowResult],
    total: f64,
) -> Vec<PathResult> {
    let npaths = spec.paths.len().max(1);
    let mut paths: Vec<PathResult> = (0..npaths)
        .map(|i| PathResult {
            index: i as u32,
            label: spec
                .paths
                .get(i)
                .map(|p| p.label())
                .unwrap_or_else(|| server.to_string()),
            ..PathResult::default()
        })
        .collect();
    for f in main {
        let p = &mut paths[f.path as usize % npaths];
        p.flows += 1;
        p.throughput_bps += f.throughput_bps;
        match f.kind {
            Some(FlowKind::Reverse) => p.reverse_bps += f.throughput_bps,
            _ => p.forward_bps += f.throughput_bps,
        }
    }
    for p in &mut paths {
        p.share = finite(p.throughput_bps / total);
        p.udp = udp_sum(main.iter().copied().filter(|f| f.path == p.index));
    }
    paths
}

/// A bulk test's figures each way that had flows.
fn direction_results(main: &[&FlowResult]) -> Vec<DirectionResult> {
    let mut directions = Vec::new();
    for (kind, name) in [
        (FlowKind::Forward, "forward"),
        (FlowKind::Reverse, "reverse"),
    ] {
        let fl: Vec<&&FlowResult> = main.iter().filter(|f| f.kind == Some(kind)).collect();
        if fl.is_empty() {
            continue;
        }
        let (sent, recv) = if kind == FlowKind::Forward {
            (
                fl.iter().map(|f| f.local_bps).sum(),
                fl.iter().map(|f| f.remote_bps).sum(),
            )
        } else {
            (
                fl.iter().map(|f| f.remote_bps).sum(),
                fl.iter().map(|f| f.local_bps).sum(),
            )
        };
        directions.push(DirectionResult {
            direction: name.into(),
            sent_bps: sent,
            received_bps: recv,
            flows: fl.len() as u32,
            udp: udp_sum(fl.iter().map(|f| **f)),
        });
    }
    directions
}

/// Which UDP offloads each side's flows used.
fn offload(client: &SideReport, server: &SideReport) -> UdpOffload {
    let any = |r: &SideReport, f: fn(&crate::proto::UdpFlowCounts) -> bool| {
        r.flows.iter().filter_map(|x| x.udp.as_ref()).any(f)
    };
    UdpOffload {
        client_gso: any(client, |u| u.gso),
        client_gro: any(client, |u| u.gro),
        server_gso: any(server, |u| u.gso),
        server_gro: any(server, |u| u.gro),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::SideFlow;
    use crate::spec::{Direction, parse_paths};
    use proptest::prelude::*;

    fn side(flows: &[(u64, u64)], secs: f64) -> SideReport {
        SideReport {
            window_s: secs,
            flows: flows
                .iter()
                .enumerate()
                .map(|(i, &(s, r))| SideFlow {
                    id: i as u32,
                    window_sent: s,
                    window_received: r,
                    total_sent: s,
                    total_received: r,
                    ..SideFlow::default()
                })
                .collect(),
            ..SideReport::default()
        }
    }

    #[test]
    fn udp_loss_is_what_the_sender_sent_less_what_the_receiver_took() {
        use crate::proto::UdpFlowCounts;
        use crate::spec::Workload;
        let spec = TestSpec {
            workload: Workload::UdpStream,
            flows: 2,
            direction: Direction::Bidir,
            ..TestSpec::default()
        };
        let mut c = side(&[(1000, 0), (0, 500), (1000, 0), (0, 500)], 1.0);
        let mut s = side(&[(0, 500), (1000, 0), (0, 1000), (1000, 0)], 1.0);
        let snd = |n| UdpFlowCounts {
            sent: n,
            gso: true,
            ..UdpFlowCounts::default()
        };
        let rcv = |n, j| UdpFlowCounts {
            received: n,
            jitter_us: j,
            ..UdpFlowCounts::default()
        };
        // f0 fwd: 10 sent, 5 in; f1 rev: 10 sent, 5 in; f2 fwd: 10/10; f3 rev 10/5.
        c.flows[0].udp = Some(snd(10));
        s.flows[0].udp = Some(rcv(5, 10.0));
        s.flows[1].udp = Some(snd(10));
        c.flows[1].udp = Some(rcv(5, 20.0));
        c.flows[2].udp = Some(snd(10));
        s.flows[2].udp = Some(rcv(10, 10.0));
        s.flows[3].udp = Some(snd(10));
        c.flows[3].udp = Some(rcv(5, 20.0));
        let r = merge(&spec, "srv", &c, &s, vec![], 0.0);
        let u = r.udp.clone().unwrap();
        assert_eq!(
            (u.datagrams_sent, u.datagrams_received, u.lost),
            (40, 25, 15)
        );
        assert!((u.loss_pct - 37.5).abs() < 1e-9);
        assert!(
            (u.jitter_us - (5.0 * 10.0 + 5.0 * 20.0 + 10.0 * 10.0 + 5.0 * 20.0) / 25.0).abs()
                < 1e-9
        );
        let fwd = r.directions[0].udp.clone().unwrap();
        assert_eq!((fwd.datagrams_sent, fwd.lost), (20, 5));
        assert_eq!(r.flows[1].udp.as_ref().unwrap().lost, 5);
        let o = r.udp_offload.unwrap();
        assert!(o.client_gso && o.server_gso && !o.client_gro);
        assert_eq!(r.paths[0].udp.as_ref().unwrap().datagrams_sent, 40);
    }

    #[test]
    fn paths_sum_to_total_and_directions_split() {
        let spec = TestSpec {
            flows: 2,
            direction: Direction::Bidir,
            paths: parse_paths("a=b,c=d").unwrap(),
            ..TestSpec::default()
        };
        // roster: f0 fwd p0, f1 rev p0, f2 fwd p1, f3 rev p1
        let c = side(&[(100, 0), (0, 200), (300, 0), (0, 400)], 1.0);
        let s = side(&[(0, 100), (200, 0), (0, 300), (400, 0)], 1.0);
        let r = merge(&spec, "srv", &c, &s, vec![], 0.0);
        assert_eq!(r.throughput_bps, 8.0 * 1000.0);
        let psum: f64 = r.paths.iter().map(|p| p.throughput_bps).sum();
        assert_eq!(psum, r.throughput_bps);
        assert_eq!(r.directions.len(), 2);
        assert_eq!(r.directions[0].received_bps, 8.0 * 400.0);
        assert_eq!(r.directions[1].received_bps, 8.0 * 600.0);
        assert_eq!(r.paths[0].forward_bps, 800.0);
    }

    proptest! {
        #[test]
        fn json_is_always_valid(
            flows in proptest::collection::vec((any::<u64>(), any::<u64>()), 1..6),
            secs in prop_oneof![Just(0.0), Just(f64::NAN), Just(f64::INFINITY), 0.0f64..100.0],
        ) {
            let spec = TestSpec { flows: flows.len() as u32, ..TestSpec::default() };
            let c = side(&flows, secs);
            let r = merge(&spec, "srv", &c, &c, vec![], secs);
            let text = serde_json::to_string(&r).unwrap();
            prop_assert!(!text.contains("null,") || !text.contains("NaN"));
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            fn no_bad_numbers(v: &serde_json::Value) -> bool {
                match v {
                    serde_json::Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
                    serde_json::Value::Array(a) => a.iter().all(no_bad_numbers),
                    serde_json::Value::Object(o) => o.iter().all(|(k, x)| {
                        // Optional fields may be null; numbers must be finite.
                        (x.is_null() && !["throughput_bps", "window_s", "fairness"].contains(&k.as_str()))
                            || no_bad_numbers(x)
                    }),
                    _ => true,
                }
            }
            prop_assert!(no_bad_numbers(&v));
        }
    }
}
