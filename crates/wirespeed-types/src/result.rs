//! Result types: plain serde structs with a schema version. Their JSON is a
//! stable interface (docs/json-schema.md); every float in them is finite.

use crate::spec::{FlowKind, TestSpec};
use serde::{Deserialize, Serialize};

/// Version of the JSON result schema; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// Replaces NaN and infinities by 0 so JSON output stays valid numbers.
pub fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// Latency percentiles of a set of transactions, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Transactions measured.
    pub count: u64,
    /// Minimum.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Standard deviation.
    #[serde(default)]
    pub stddev_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
}

/// TCP_INFO of one flow, read at the end of the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life.
    pub retransmits: u64,
    /// Smoothed RTT, microseconds.
    pub rtt_us: u64,
    /// RTT variance, microseconds.
    pub rttvar_us: u64,
    /// Minimum RTT seen, microseconds.
    pub min_rtt_us: u64,
    /// Congestion window, segments.
    pub cwnd: u64,
    /// Sender MSS, bytes.
    pub mss: u64,
    /// Path MTU, bytes.
    pub pmtu: u64,
    /// Latest delivery rate estimate, bits per second.
    pub delivery_rate_bps: u64,
    /// Pacing rate, bits per second.
    pub pacing_rate_bps: u64,
    /// Microseconds limited by the receive window.
    pub rwnd_limited_us: u64,
    /// Microseconds limited by the send buffer.
    pub sndbuf_limited_us: u64,
    /// Duplicate SACKs received (spurious retransmits).
    pub dsack_dups: u64,
}

/// `--rx-zerocopy`: how one flow's receiver took its bytes in. The kernel
/// maps a received page into the receiver (TCP_ZEROCOPY_RECEIVE) only when
/// it is a whole order-0 page at offset 0 of an skb fragment; the rest is
/// copied with read(2) (docs/benchmarks.md, "Receive without copying").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RxZeroCopy {
    /// Bytes mapped into the receiver's address space, not copied.
    pub mapped_bytes: u64,
    /// Bytes copied with read(2): what the kernel could not map.
    pub copied_bytes: u64,
    /// mapped / (mapped + copied), 0-1.
    pub fraction: f64,
    /// Why this receiver copied every byte (the zero-copy path could not
    /// start or the kernel refused it), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

impl RxZeroCopy {
    /// Counts with their fraction filled in.
    pub fn of(mapped_bytes: u64, copied_bytes: u64, fallback: Option<String>) -> RxZeroCopy {
        let all = mapped_bytes + copied_bytes;
        RxZeroCopy {
            mapped_bytes,
            copied_bytes,
            fraction: if all == 0 {
                0.0
            } else {
                mapped_bytes as f64 / all as f64
            },
            fallback,
        }
    }
}

/// Datagram figures of a UDP flow, or summed over a path, a direction or
/// the test. Counts cover the flow's whole life (warm-up, window and the
/// drain after it), so `sent - received == lost` holds exactly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpStats {
    /// Datagrams the sender sent (udp-rr: requests the client sent).
    pub datagrams_sent: u64,
    /// Distinct datagrams the receiver took in (udp-rr: answers in time).
    pub datagrams_received: u64,
    /// `datagrams_sent - datagrams_received` (udp-rr: transactions whose
    /// answer did not come within the timeout).
    pub lost: u64,
    /// `lost` as a share of `datagrams_sent`, percent.
    pub loss_pct: f64,
    /// Datagrams that arrived after one with a higher sequence number
    /// (udp-rr: answers that came after their timeout).
    pub out_of_order: u64,
    /// Datagrams that arrived a second time.
    pub duplicates: u64,
    /// Interarrival jitter as RFC 3550 defines it, microseconds; for a
    /// path, direction or test the mean over flows weighted by datagrams
    /// received. 0 for udp-rr.
    pub jitter_us: f64,
}

impl UdpStats {
    /// Adds `o`'s counts; jitter becomes the mean weighted by datagrams
    /// received.
    pub fn add(&mut self, o: &UdpStats) {
        let (a, b) = (self.datagrams_received as f64, o.datagrams_received as f64);
        self.jitter_us = if a + b > 0.0 {
            finite((self.jitter_us * a + o.jitter_us * b) / (a + b))
        } else {
            0.0
        };
        self.datagrams_sent = self.datagrams_sent.saturating_add(o.datagrams_sent);
        self.datagrams_received = self.datagrams_received.saturating_add(o.datagrams_received);
        self.lost = self.lost.saturating_add(o.lost);
        self.out_of_order = self.out_of_order.saturating_add(o.out_of_order);
        self.duplicates = self.duplicates.saturating_add(o.duplicates);
        self.loss_pct = loss_pct(self.lost, self.datagrams_sent);
    }
}

/// `lost` as a percentage of `sent` (0 when nothing was sent).
pub fn loss_pct(lost: u64, sent: u64) -> f64 {
    if sent == 0 {
        0.0
    } else {
        finite(lost as f64 * 100.0 / sent as f64)
    }
}

/// Which UDP offloads ran on each side: asked for, and taken by the kernel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpOffload {
    /// The client's sends went out as GSO batches (UDP_SEGMENT).
    pub client_gso: bool,
    /// The client's sockets had UDP_GRO on.
    pub client_gro: bool,
    /// The server's sends went out as GSO batches.
    pub server_gso: bool,
    /// The server's sockets had UDP_GRO on.
    pub server_gro: bool,
}

/// CPU use of one side over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// Process user time as % of one core.
    pub user_pct: f64,
    /// Process system time as % of one core.
    pub system_pct: f64,
    /// user + system, % of one core (200 = two cores busy).
    pub total_pct: f64,
    /// Busy % of each core of the machine, from /proc/stat.
    pub per_core_pct: Vec<f64>,
    /// The busiest core's busy %.
    pub max_core_pct: f64,
    /// CPU % of each worker thread (% of one core).
    pub per_thread_pct: Vec<f64>,
    /// % of the window each worker thread waited on a run queue for a
    /// CPU (/proc/thread-self/schedstat); empty where the kernel has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_thread_wait_pct: Vec<f64>,
    /// The kernel's boot id: two ends with the same one share a host and
    /// its CPUs (namespaces, or pods on one node).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_id: String,
}

/// One flow's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowResult {
    /// Roster index.
    pub id: u32,
    /// Path index.
    pub path: u32,
    /// Worker thread index.
    pub thread: u32,
    /// Role of the flow.
    pub kind: Option<FlowKind>,
    /// Bytes the client moved (sent for forward, received for reverse) in the window.
    pub local_bytes: u64,
    /// Bytes the server moved in the window.
    pub remote_bytes: u64,
    /// Client-side rate, bits per second.
    pub local_bps: f64,
    /// Server-side rate, bits per second.
    pub remote_bps: f64,
    /// Goodput: the receiving side's rate, bits per second.
    pub throughput_bps: f64,
    /// Transactions completed in the window (rr, crr, probe).
    pub transactions: u64,
    /// Bytes the client sent over the flow's whole life.
    pub client_sent_total: u64,
    /// Bytes the client received over the flow's whole life.
    pub client_received_total: u64,
    /// Bytes the server sent over the flow's whole life.
    pub server_sent_total: u64,
    /// Bytes the server received over the flow's whole life.
    pub server_received_total: u64,
    /// TCP_INFO at the sender's end (client for forward, server for reverse).
    pub tcp_info: Option<TcpInfo>,
    /// Datagram figures (UDP workloads only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpStats>,
    /// `--rx-zerocopy`: bytes the receiver took in mapped and copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_zerocopy: Option<RxZeroCopy>,
    /// Segments the other end retransmitted (TCP_INFO of the end
    /// `tcp_info` is not from): in request/response both ends send, and
    /// a link that drops the responses shows only there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_end_retransmits: Option<u64>,
}

/// Figures of one path, summed over its flows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathResult {
    /// Index in the spec's path list.
    pub index: u32,
    /// `LOCAL=REMOTE` label.
    pub label: String,
    /// Flows on the path.
    pub flows: u32,
    /// Goodput of the path, bits per second (both directions summed).
    pub throughput_bps: f64,
    /// Client-to-server goodput, bits per second.
    pub forward_bps: f64,
    /// Server-to-client goodput, bits per second.
    pub reverse_bps: f64,
    /// Share of the total, 0..1.
    pub share: f64,
    /// Datagram figures of the path's flows (UDP workloads only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpStats>,
}

/// One direction of a stream test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionResult {
    /// "forward" (client sends) or "reverse".
    pub direction: String,
    /// Sender-side rate, bits per second.
    pub sent_bps: f64,
    /// Receiver-side rate (goodput), bits per second.
    pub received_bps: f64,
    /// Flows in this direction.
    pub flows: u32,
    /// Datagram figures of the direction's flows (udp-stream only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpStats>,
}

/// Latency percentiles of the transactions of one interval, in
/// microseconds, from a log-linear histogram (16 buckets per power of two:
/// each figure is within about 3% of the exact one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalLatency {
    /// Transactions measured in the interval.
    pub count: u64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Maximum.
    pub max_us: f64,
}

/// A progress sample at the client, over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Seconds since measuring began at the interval's end (negative during warm-up).
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub len_s: f64,
    /// Client-side bits per second over the interval (sent plus received).
    pub bps: f64,
    /// Client-side transactions per second over the interval.
    pub tps: f64,
    /// Client-side bits per second of each flow (sent plus received),
    /// indexed like `flows`; empty in results of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_bps: Vec<f64>,
    /// Transactions per second of each flow, indexed like `flows`; empty
    /// when no flow completed a transaction in the interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_tps: Vec<f64>,
    /// Latency of the interval's rr or crr transactions (measured window only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<IntervalLatency>,
    /// Latency of the interval's probe transactions (stream with --probe-rr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_latency: Option<IntervalLatency>,
}

/// The full result of one test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// wirespeed version that produced it.
    pub tool_version: String,
    /// The spec that ran.
    pub spec: TestSpec,
    /// Server control address.
    pub server: String,
    /// The client's address on the control connection (empty in results
    /// of older versions).
    #[serde(default)]
    pub client: String,
    /// Unix time the measured window started.
    pub started_unix: f64,
    /// Measured window length at the client, seconds.
    pub window_s: f64,
    /// Congestion control read back from the first flow.
    pub congestion_control: String,
    /// Goodput summed over directions, bits per second.
    pub throughput_bps: f64,
    /// Client-side rate (neper's local_throughput), bits per second.
    pub local_bps: f64,
    /// Server-side rate (neper's remote_throughput), bits per second.
    pub remote_bps: f64,
    /// Per direction (stream only).
    pub directions: Vec<DirectionResult>,
    /// Per path.
    pub paths: Vec<PathResult>,
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Transactions per second (rr, crr).
    pub transactions_per_s: f64,
    /// Latency (rr, crr).
    pub latency: Option<LatencySummary>,
    /// Latency of the probe flow under load (stream with --probe-rr).
    pub probe_latency: Option<LatencySummary>,
    /// Jain's fairness index over flow goodputs, 0..1 (1 = equal).
    pub fairness: f64,
    /// Weakest path's goodput over the strongest's, 0..1.
    pub path_balance: f64,
    /// Client CPU over the window.
    pub local_cpu: CpuUsage,
    /// Server CPU over the window.
    pub remote_cpu: CpuUsage,
    /// Most tests the server ran at once during this one (1 = alone).
    pub server_concurrent_tests: u32,
    /// Interval samples.
    pub intervals: Vec<IntervalSample>,
    /// Remarks: fallbacks, caveats.
    pub notes: Vec<String>,
    /// Datagram figures over every flow (UDP workloads only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpStats>,
    /// Which UDP offloads ran (UDP workloads only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_offload: Option<UdpOffload>,
    /// Where the round trip is spent (rr with `--breakdown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<crate::breakdown::Breakdown>,
    /// Which I/O engine each side's workers ran, when the test asked for
    /// one other than epoll (`--io uring`); a side that fell back says why
    /// in `notes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_engines: Option<IoEngines>,
    /// Why the figures cannot be trusted: an end's CPUs were taken by
    /// other work ([`crate::contention`]); None when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended: Option<String>,
}

/// Which I/O engine each side ran (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoEngines {
    /// The client's workers: io_uring only if every worker ran it.
    pub client: crate::spec::IoEngine,
    /// The server's workers; None from a server too old to say (it ran
    /// epoll).
    pub server: Option<crate::spec::IoEngine>,
}

/// What `--json` prints: one or more results (a size sweep gives several).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Results, in run order.
    pub results: Vec<TestResult>,
}

/// Jain's fairness index: (sum x)^2 / (n * sum x^2); 1 for empty or all-zero.
pub fn jain(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 <= 0.0 {
        1.0
    } else {
        finite((s * s) / (n * s2)).clamp(0.0, 1.0)
    }
}

/// Weakest over strongest; 1 for fewer than two values or all zero.
pub fn balance(xs: &[f64]) -> f64 {
    let max = xs.iter().cloned().fold(0.0, f64::max);
    let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
    if xs.len() < 2 || max <= 0.0 {
        1.0
    } else {
        finite(min / max).clamp(0.0, 1.0)
    }
}

/// One measured test against a peer, as doctor `--peer` runs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerTest {
    /// What was tried.
    pub name: String,
    /// Paths as LOCAL=REMOTE.
    pub paths: Vec<String>,
    /// Flows per path.
    pub flows_per_path: u32,
    /// Throughput in bit/s.
    pub bps: f64,
    /// Per path throughput in bit/s.
    pub per_path_bps: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_and_balance() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), 1.0);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-9);
        assert_eq!(jain(&[]), 1.0);
        assert_eq!(balance(&[2.0, 1.0]), 0.5);
        assert_eq!(balance(&[0.0, 0.0]), 1.0);
        assert_eq!(finite(f64::NAN), 0.0);
    }

    #[test]
    fn udp_stats_add_up_and_weigh_jitter_by_datagrams() {
        let mut a = UdpStats {
            datagrams_sent: 100,
            datagrams_received: 90,
            lost: 10,
            jitter_us: 10.0,
            ..UdpStats::default()
        };
        a.add(&UdpStats {
            datagrams_sent: 20,
            datagrams_received: 10,
            lost: 10,
            jitter_us: 110.0,
            ..UdpStats::default()
        });
        assert_eq!(
            (a.datagrams_sent, a.datagrams_received, a.lost),
            (120, 100, 20)
        );
        assert!((a.jitter_us - 20.0).abs() < 1e-9);
        assert!((a.loss_pct - 100.0 / 6.0).abs() < 1e-9);
        assert_eq!(loss_pct(1, 0), 0.0);
    }

    #[test]
    fn results_without_the_newer_fields_still_load() {
        let old: IntervalSample =
            serde_json::from_str(r#"{"t_s": 0.5, "len_s": 0.5, "bps": 1e9, "tps": 0}"#).unwrap();
        assert!(old.flow_bps.is_empty() && old.latency.is_none());
        let mut v = serde_json::to_value(TestResult::default()).unwrap();
        v.as_object_mut().unwrap().remove("client");
        let r: TestResult = serde_json::from_value(v).unwrap();
        assert_eq!(r.client, "");
        // Empty per-flow series stay out of the JSON.
        let text = serde_json::to_string(&IntervalSample::default()).unwrap();
        assert!(
            !text.contains("flow_bps") && !text.contains("latency"),
            "{text}"
        );
    }
}
