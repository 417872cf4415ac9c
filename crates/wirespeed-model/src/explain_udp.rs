//! The rules only a UDP stream test has: datagrams lost on the way, and a
//! sender or receiver paying per datagram because GSO or GRO did not run.

use crate::bottleneck::{Bottleneck, BottleneckKind, busy, ev};
use wirespeed_types::result::TestResult;
use wirespeed_types::spec::{Direction, Workload};

/// Loss at or above this share of the datagrams sent, percent, is a finding.
pub const UDP_LOSS_PCT: f64 = 1.0;

/// The UDP rules: `datagram_loss` per direction, `udp_no_offload` per side.
pub fn udp_rules(r: &TestResult, out: &mut Vec<Bottleneck>) {
    if r.spec.workload != Workload::UdpStream {
        return;
    }
    loss_rule(r, out);
    offload_rule(r, out);
}

fn loss_rule(r: &TestResult, out: &mut Vec<Bottleneck>) {
    for d in &r.directions {
        let Some(u) = &d.udp else { continue };
        if u.datagrams_sent == 0 || u.loss_pct < UDP_LOSS_PCT {
            continue;
        }
        // The receiving side of this direction, and whether it ran out of CPU.
        let (receiver, cpu) = if d.direction == "reverse" {
            ("client", &r.local_cpu)
        } else {
            ("server", &r.remote_cpu)
        };
        let offered = match r.spec.rate_bps {
            Some(b) if b > 0 => format!(
                "the sender offered {:.2} Gbit/s per flow (-b)",
                b as f64 / 1e9
            ),
            _ => "the sender sent as fast as it could (-b 0)".to_string(),
        };
        let why = if busy(cpu) {
            format!(
                "the {receiver} (receiver) had a core {:.0}% busy: its socket buffers overflowed; keep UDP GRO on, spread flows over more threads (-T), raise --rcvbuf (net.core.rmem_max bounds it)",
                cpu.max_core_pct
            )
        } else {
            format!(
                "the receiver had CPU to spare, so the path dropped them (a rate cap, a policer or a shallow queue): {offered}; lower -b to what the path carries ({:.2} Gbit/s arrived)",
                d.received_bps / 1e9
            )
        };
        out.push(Bottleneck {
            kind: BottleneckKind::DatagramLoss,
            evidence: vec![
                ev(format!("{}_sent_bps", d.direction), d.sent_bps, "bit/s"),
                ev(
                    format!("{}_received_bps", d.direction),
                    d.received_bps,
                    "bit/s",
                ),
                ev("datagrams_sent", u.datagrams_sent as f64, "datagrams"),
                ev("datagrams_lost", u.lost as f64, "datagrams"),
                ev("loss_pct", u.loss_pct, "%"),
                ev(format!("{receiver}_max_core_pct"), cpu.max_core_pct, "%"),
            ],
            message: format!(
                "{} of {} datagrams {} were lost ({:.2}% >= {UDP_LOSS_PCT:.0}%): {why}",
                u.lost, u.datagrams_sent, d.direction, u.loss_pct
            ),
        });
    }
}

fn offload_rule(r: &TestResult, out: &mut Vec<Bottleneck>) {
    let Some(o) = &r.udp_offload else { return };
    let dir = r.spec.direction;
    // (side, its cpu, whether it sends, its GSO ran, its GRO ran)
    let sides = [
        (
            "client",
            &r.local_cpu,
            dir != Direction::Reverse,
            o.client_gso,
            o.client_gro,
        ),
        (
            "server",
            &r.remote_cpu,
            dir != Direction::Forward,
            o.server_gso,
            o.server_gro,
        ),
    ];
    for (side, cpu, sends, gso_ran, gro_ran) in sides {
        if !busy(cpu) {
            continue;
        }
        // A side receives what the other sends.
        let receives = dir == Direction::Bidir || !sends;
        // (job, whether the side does it, its offload ran, asked for, flag, offload)
        let jobs = [
            (
                "sends",
                sends,
                gso_ran,
                r.spec.udp_gso,
                "--no-gso",
                "GSO (UDP_SEGMENT)",
            ),
            (
                "receives",
                receives,
                gro_ran,
                r.spec.udp_gro,
                "--no-gro",
                "GRO (UDP_GRO)",
            ),
        ];
        for (job, does, ran, asked_for, flag, name) in jobs {
            if !does || ran {
                continue;
            }
            let asked = if asked_for {
                "the kernel did not take it (UDP GSO needs Linux 4.18, GRO 5.0): see the test's notes"
                    .to_string()
            } else {
                format!("{flag} turned it off: drop it")
            };
            out.push(Bottleneck {
                kind: BottleneckKind::UdpNoOffload,
                evidence: vec![
                    ev(format!("{side}_max_core_pct"), cpu.max_core_pct, "%"),
                    ev("datagram_bytes", r.spec.msg_size as f64, "bytes"),
                ],
                message: format!(
                    "the {side} {job} one datagram per system call and packet without {name} and had a core {:.0}% busy: {asked}; TCP gets segmentation offloads by default, UDP only with GSO/GRO (report 4)",
                    cpu.max_core_pct
                ),
            });
        }
    }
}
