//! Where a request/response round trip is spent (`bench --breakdown`):
//! each transaction's round trip cut into segments, each measured on one
//! host's clock from kernel and application timestamps, so no clock sync
//! between the hosts is needed. docs/latency.md says which timestamp each
//! segment comes from and what it leaves out.

use serde::{Deserialize, Serialize};

/// Every segment a breakdown can have, in the order a transaction passes
/// them, as (JSON key, label). The wire (both ways) and whatever the far
/// side does outside its timestamps is what the round trip leaves after
/// the host segments. A workload reports the ones it measures
/// ([`RR_SEGMENTS`], [`CRR_SEGMENTS`]), in this order.
pub const SEGMENTS: [(&str, &str); 10] = [
    ("client_connect", "client connect and handshake"),
    ("client_send_stack", "client send stack"),
    ("client_queue", "client queue/driver"),
    ("wire", "wire and unaccounted"),
    ("server_accept", "server accept wake-up"),
    ("server_rx_stack", "server receive stack and wake-up"),
    ("server_app", "server application"),
    ("server_send_stack", "server send stack"),
    ("server_queue", "server queue/driver"),
    ("client_rx_stack", "client receive stack and wake-up"),
];

/// The segments of rr and udp-rr (indices into [`SEGMENTS`]): no
/// connection is set up inside a transaction.
pub const RR_SEGMENTS: [usize; 8] = [1, 2, 3, 5, 6, 7, 8, 9];

/// The segments of crr: every one, the handshake and the accept included.
pub const CRR_SEGMENTS: [usize; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

/// Index in [`SEGMENTS`] of the wire.
pub const WIRE: usize = 3;

/// The percentiles a breakdown reports, as fractions.
pub const PERCENTILES: [f64; 4] = [0.50, 0.90, 0.99, 0.999];

/// One segment's own distribution over the sampled transactions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SegmentStats {
    /// Key from [`SEGMENTS`] (or `round_trip`).
    pub name: String,
    /// Median, microseconds.
    pub p50_us: f64,
    /// 90th percentile, microseconds.
    pub p90_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// 99.9th percentile, microseconds.
    pub p999_us: f64,
}

/// The transactions at one percentile of the round trip, cut into
/// segments: the parts add up to `round_trip_us`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PercentileSlice {
    /// The percentile, e.g. 99.0.
    pub percentile: f64,
    /// Mean round trip of the transactions around that percentile, us.
    pub round_trip_us: f64,
    /// Transactions averaged (those ranked closest to the percentile).
    pub transactions: u64,
    /// Mean of each segment over them, microseconds, in [`SEGMENTS`] order.
    pub parts_us: Vec<f64>,
    /// Each part's share of the round trip, 0..1, in [`SEGMENTS`] order.
    pub shares: Vec<f64>,
}

/// One transaction's segments, for the waterfall of the slowest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransactionParts {
    /// Roster flow id.
    pub flow: u32,
    /// Transaction number on its connection, from 0.
    pub seq: u64,
    /// Round trip, microseconds.
    pub round_trip_us: f64,
    /// Segments, microseconds, in [`SEGMENTS`] order.
    pub parts_us: Vec<f64>,
}

/// The `breakdown` key of a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Which timestamps were used: "software" (kernel software
    /// timestamps and the application's CLOCK_REALTIME reads).
    pub timestamps: String,
    /// Sampled transactions with every timestamp on both sides.
    pub transactions: u64,
    /// One transaction in this many was kept (a bounded sample).
    pub sampled_every: u64,
    /// Sampled transactions left out for a missing timestamp.
    pub incomplete: u64,
    /// Each segment's own percentiles, in [`SEGMENTS`] order.
    pub segments: Vec<SegmentStats>,
    /// The round trip's percentiles over the same transactions.
    pub round_trip: SegmentStats,
    /// The round trip at each of [`PERCENTILES`] cut into segments.
    pub at_percentiles: Vec<PercentileSlice>,
    /// The slowest sampled transactions, slowest first.
    pub slowest: Vec<TransactionParts>,
    /// The client's timestamp bookkeeping per transaction (error-queue
    /// reads, matching), nanoseconds.
    pub cost_ns_per_transaction: f64,
    /// Median round trip of the sampled transactions by the client's own
    /// monotonic clock (what rr measures), microseconds.
    pub measured_p50_us: f64,
    /// Median over the sampled transactions of |sum of segments - measured
    /// round trip| / measured round trip: how well the segments add up.
    pub sum_error_p50: f64,
    /// How much longer the sampled (timestamped) transactions took at p50
    /// than all of the test's: the kernel's cost of generating SCHED and
    /// SND timestamps, inside the segments, microseconds.
    pub stamping_cost_us: f64,
    /// Remarks: missing timestamps, fallbacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The timestamping the client's device toward the server offers
    /// (`ethtool -T`), when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceClock>,
}

/// What the device a flow leaves by can timestamp: whether a hardware
/// clock was there to use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceClock {
    /// The device the kernel routes the server's address by.
    pub device: String,
    /// The best timestamps it offers: "hardware", "software" or "none".
    pub available: String,
    /// Its PTP hardware clock, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phc_index: Option<u32>,
    /// Its SOF_TIMESTAMPING capabilities by kernel name.
    pub capabilities: Vec<String>,
}

impl Breakdown {
    /// The slice at `percentile` (e.g. 99.0), if reported.
    pub fn at(&self, percentile: f64) -> Option<&PercentileSlice> {
        self.at_percentiles
            .iter()
            .find(|s| (s.percentile - percentile).abs() < 1e-9)
    }

    /// Segment `key`'s mean in the transactions at `percentile` of the
    /// round trip (e.g. 50.0), µs, when this breakdown has both.
    pub fn part_at(&self, percentile: f64, key: &str) -> Option<f64> {
        let i = self.segments.iter().position(|s| s.name == key)?;
        self.at(percentile)?.parts_us.get(i).copied()
    }

    /// Index of a segment key in [`SEGMENTS`].
    pub fn index_of(key: &str) -> Option<usize> {
        SEGMENTS.iter().position(|s| s.0 == key)
    }

    /// Index in [`SEGMENTS`] of this breakdown's `i`-th segment (the
    /// order of `segments`, `parts_us` and `shares`).
    pub fn catalogue_index(&self, i: usize) -> Option<usize> {
        self.segments
            .get(i)
            .and_then(|s| Breakdown::index_of(&s.name))
    }

    /// (JSON key, label) of this breakdown's `i`-th segment.
    pub fn segment(&self, i: usize) -> Option<(&'static str, &'static str)> {
        self.catalogue_index(i).map(|c| SEGMENTS[c])
    }

    /// Where this breakdown's segment `key` is in `parts_us` and `shares`.
    pub fn position(&self, key: &str) -> Option<usize> {
        self.segments.iter().position(|s| s.name == key)
    }
}

/// One joined transaction: its flow, number, segments (in [`SEGMENTS`]
/// order, 0 where the workload has no such segment) and the client's
/// monotonic-clock round trip, in nanoseconds.
pub type Joined = (u32, u64, [i64; 10], i64);

/// How many slowest transactions a breakdown keeps.
pub const SLOWEST: usize = 10;

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

/// Nearest-rank percentile of sorted values (0 without any).
fn rank(sorted: &[i64], q: f64) -> f64 {
    crate::stats::nearest_rank(sorted, q).map_or(0.0, |v| v as f64)
}

fn stats(name: &str, mut v: Vec<i64>) -> SegmentStats {
    v.sort_unstable();
    SegmentStats {
        name: name.to_string(),
        p50_us: us(rank(&v, 0.50)),
        p90_us: us(rank(&v, 0.90)),
        p99_us: us(rank(&v, 0.99)),
        p999_us: us(rank(&v, 0.999)),
    }
}

fn total(t: &Joined) -> i64 {
    t.2.iter().sum()
}

/// The transactions ranked around `q` (sorted by round trip): half a
/// percent of them at the median, fewer in the tail, so p99.9 averages
/// only the transactions that are really there.
fn band(n: usize, q: f64) -> std::ops::Range<usize> {
    let center = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
    let half = ((n as f64 * (1.0 - q) / 4.0).min(n as f64 / 200.0)) as usize;
    center.saturating_sub(half)..(center + half + 1).min(n)
}

fn slice(sorted: &[Joined], which: &[usize], q: f64) -> PercentileSlice {
    let b = band(sorted.len(), q);
    let k = b.len().max(1) as f64;
    let mut parts = vec![0f64; which.len()];
    for t in &sorted[b.clone()] {
        for (p, &i) in parts.iter_mut().zip(which) {
            *p += t.2[i] as f64;
        }
    }
    let rt: f64 = parts.iter().sum::<f64>() / k;
    PercentileSlice {
        percentile: q * 100.0,
        round_trip_us: us(rt),
        transactions: b.len() as u64,
        parts_us: parts.iter().map(|p| us(p / k)).collect(),
        shares: parts
            .iter()
            .map(|p| if rt > 0.0 { p / k / rt } else { 0.0 })
            .collect(),
    }
}

/// Builds the breakdown of joined transactions over the segments `which`
/// (indices into [`SEGMENTS`], in order; empty input: None).
pub fn summarize(mut joined: Vec<Joined>, which: &[usize]) -> Option<Breakdown> {
    if joined.is_empty() {
        return None;
    }
    joined.sort_by_key(total);
    let segments = which
        .iter()
        .map(|&i| stats(SEGMENTS[i].0, joined.iter().map(|t| t.2[i]).collect()))
        .collect();
    let round_trip = stats("round_trip", joined.iter().map(total).collect());
    let measured = stats("measured", joined.iter().map(|t| t.3).collect());
    let mut errs: Vec<f64> = joined
        .iter()
        .filter(|t| t.3 > 0)
        .map(|t| (total(t) - t.3).abs() as f64 / t.3 as f64)
        .collect();
    errs.sort_by(f64::total_cmp);
    let sum_error_p50 = errs
        .get(errs.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0.0);
    let slowest = joined
        .iter()
        .rev()
        .take(SLOWEST)
        .map(|t| TransactionParts {
            flow: t.0,
            seq: t.1,
            round_trip_us: us(total(t) as f64),
            parts_us: which.iter().map(|&i| us(t.2[i] as f64)).collect(),
        })
        .collect();
    Some(Breakdown {
        timestamps: "software".into(),
        transactions: joined.len() as u64,
        segments,
        round_trip,
        at_percentiles: PERCENTILES
            .iter()
            .map(|&q| slice(&joined, which, q))
            .collect(),
        slowest,
        measured_p50_us: measured.p50_us,
        sum_error_p50,
        ..Breakdown::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(seq: u64, wire: i64) -> Joined {
        (
            0,
            seq,
            [0, 1000, 1000, wire, 0, 1000, 0, 1000, 1000, 1000],
            6000 + wire,
        )
    }

    #[test]
    fn slices_add_up_and_the_tail_shows_its_cause() {
        let mut v: Vec<Joined> = (0..1000).map(|i| t(i, 4000)).collect();
        v[7] = t(7, 1_000_000);
        let b = summarize(v, &RR_SEGMENTS).expect("breakdown");
        assert_eq!(b.transactions, 1000);
        let p50 = b.at(50.0).expect("p50");
        assert!((p50.parts_us.iter().sum::<f64>() - p50.round_trip_us).abs() < 1e-6);
        assert!((p50.round_trip_us - 10.0).abs() < 1e-9);
        assert!((p50.shares.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let top = &b.slowest[0];
        assert_eq!(top.seq, 7);
        assert!(top.parts_us[2] > 900.0);
        assert_eq!(b.segments[2].p50_us, 4.0);
        assert_eq!(b.sum_error_p50, 0.0);
        assert_eq!(b.measured_p50_us, 10.0);
    }

    #[test]
    fn bands_stay_inside_and_narrow_in_the_tail() {
        assert_eq!(band(1, 0.999), 0..1);
        assert_eq!(band(10_000, 0.5), 4949..5050);
        assert_eq!(band(10_000, 0.999), 9987..9992);
        assert!(summarize(Vec::new(), &RR_SEGMENTS).is_none());
    }
}
