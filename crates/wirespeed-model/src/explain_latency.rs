//! The rule of a `--breakdown` result: the segment that takes most of the
//! tail's round trip, with what moves it (docs/latency.md).

use crate::bottleneck::{Bottleneck, BottleneckKind, ev};
use wirespeed_types::breakdown::{Breakdown, PercentileSlice};
use wirespeed_types::result::TestResult;

/// A segment taking at least this share of the round trip at p99 is named.
pub const DOMINANT_SHARE: f64 = 0.4;

/// What to do about a segment, by its key.
fn remedy(key: &str) -> &'static str {
    match key {
        "server_rx_stack" | "client_rx_stack" => {
            "the receiver's wake-up: pin the threads away from busy CPUs (--pin, --remote-pin), busy poll (net.core.busy_poll, SO_BUSY_POLL), or steer the softirq to the reader's CPU (RFS)"
        }
        "client_queue" | "server_queue" => {
            "a queue in the qdisc or driver, e.g. a standing queue behind a rate cap: a shallower queue (a lower tbf limit, fq_codel where the kernel has it) or pacing below the cap (--pacing)"
        }
        "client_send_stack" | "server_send_stack" => {
            "the send path before the qdisc: TCP held the data (congestion window, pacing, TCP Small Queues) or an overlay or netfilter costs time; check --cc and the path's encapsulation"
        }
        "server_app" => "the server application's own time between reading and writing",
        "client_connect" => {
            "connection setup: the handshake's round trip, a full accept queue or SYN backlog at the server (net.core.somaxconn, tcp_max_syn_backlog), or SYN retransmits; persistent connections (rr) avoid it"
        }
        "server_accept" => {
            "the server thread's wake-up to accept: pin it away from busy CPUs, more worker threads (--threads) so that one is free to accept"
        }
        _ => {
            "the wire and what the hosts do outside their timestamps: the links, NIC queues, the far side's receive softirq"
        }
    }
}

/// The slice the rule judges: p99, or the highest one reported.
fn tail(b: &Breakdown) -> Option<&PercentileSlice> {
    b.at(99.0).or(b.at_percentiles.last())
}

/// `latency_segment`: the segment with the largest share of the tail.
pub fn latency_rule(r: &TestResult, out: &mut Vec<Bottleneck>) {
    let Some(b) = &r.breakdown else { return };
    let Some(s) = tail(b) else { return };
    let Some((i, share)) = s
        .shares
        .iter()
        .copied()
        .enumerate()
        .take(b.segments.len())
        .max_by(|a, b| a.1.total_cmp(&b.1))
    else {
        return;
    };
    if share < DOMINANT_SHARE {
        return;
    }
    let Some((key, label)) = b.segment(i) else {
        return;
    };
    let p50_share = b
        .at(50.0)
        .and_then(|m| m.shares.get(i))
        .copied()
        .unwrap_or(0.0);
    let mut evidence = vec![
        ev(
            format!("p{}_round_trip", s.percentile),
            s.round_trip_us,
            "us",
        ),
        ev(format!("p{}_{key}", s.percentile), s.parts_us[i], "us"),
        ev(format!("p{}_{key}_share", s.percentile), share * 100.0, "%"),
        ev(format!("p50_{key}_share"), p50_share * 100.0, "%"),
    ];
    if let Some(seg) = b.segments.get(i) {
        evidence.push(ev(format!("{key}_p50"), seg.p50_us, "us"));
    }
    out.push(Bottleneck {
        kind: BottleneckKind::LatencySegment,
        evidence,
        message: format!(
            "p{} is {:.0}% {label} ({:.1} of {:.1} us; {:.0}% at p50): {}",
            s.percentile,
            share * 100.0,
            s.parts_us[i],
            s.round_trip_us,
            p50_share * 100.0,
            remedy(key)
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_types::breakdown::{Joined, RR_SEGMENTS, summarize};

    fn result(wake: i64) -> TestResult {
        let joined: Vec<Joined> = (0..1000)
            .map(|i| {
                let w = if i % 50 == 0 { wake } else { 8000 };
                (0, i, [0, 1500, 500, 2000, 0, w, 50, 1500, 500, 8000], 0)
            })
            .collect();
        TestResult {
            breakdown: summarize(joined, &RR_SEGMENTS),
            ..TestResult::default()
        }
    }

    #[test]
    fn names_the_wake_up_that_takes_the_tail() {
        let mut out = Vec::new();
        latency_rule(&result(200_000), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].kind, BottleneckKind::LatencySegment);
        assert!(out[0].message.starts_with("p99 is 9"), "{}", out[0].message);
        assert!(out[0].message.contains("server receive stack and wake-up"));
        assert!(out[0].message.contains("--remote-pin"));
    }

    #[test]
    fn an_even_spread_is_no_finding() {
        let mut out = Vec::new();
        latency_rule(&result(8000), &mut out);
        assert!(out.is_empty(), "{out:?}");
        latency_rule(&TestResult::default(), &mut out);
        assert!(out.is_empty());
    }
}
