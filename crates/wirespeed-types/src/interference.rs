//! What many clients do to each other on one server (report 3's "cross-load
//! interference"): a victim request/response workload measured while K
//! loaders load the same server, for each K and each block size, and the
//! knee where the victim's p99 has doubled. Plain serde data: the engine
//! fills it (`bench --interference`), the report renders it.

use crate::result::TestResult;
use serde::{Deserialize, Serialize};

/// Version of the interference document; raised on incompatible changes.
pub const INTERFERENCE_SCHEMA_VERSION: u32 = 1;

/// How much the victim's p99 must grow over its unloaded figure to name
/// the knee ("p99 doubles at K=4").
pub const KNEE_FACTOR: f64 = 2.0;

/// The victim at one load: K loaders beside it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Loaders running beside the victim.
    pub k: u32,
    /// The victim's transactions per second.
    pub victim_tps: f64,
    /// The victim's median latency, microseconds.
    pub p50_us: f64,
    /// The victim's 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// The victim's 99.9th percentile latency, microseconds.
    pub p999_us: f64,
    /// The server process's CPU over the victim's window, % of one core.
    pub server_cpu_pct: f64,
    /// Each loader's goodput over its own window, bits per second.
    pub loader_bps: Vec<f64>,
    /// The victim's full result.
    pub victim: TestResult,
    /// The loaders' test (K flows, one per loader), when K > 0.
    pub loader: Option<TestResult>,
}

impl Point {
    /// The loaders' goodput together, bits per second.
    pub fn loaders_bps(&self) -> f64 {
        self.loader_bps.iter().sum()
    }
}

/// The victim's curve at one block size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// Bytes per request (and per response).
    pub size: u32,
    /// One point per K, in the order measured (ascending K).
    pub points: Vec<Point>,
    /// The first K where p99 reached [`KNEE_FACTOR`] times the smallest
    /// K's p99, if any did.
    pub knee: Option<u32>,
}

impl Curve {
    /// Sets [`Curve::knee`] from the points.
    pub fn find_knee(&mut self) {
        let Some(base) = self.points.first().map(|p| p.p99_us) else {
            self.knee = None;
            return;
        };
        self.knee = self
            .points
            .iter()
            .skip(1)
            .find(|p| base > 0.0 && p.p99_us >= base * KNEE_FACTOR)
            .map(|p| p.k);
    }

    /// The knee in words: "p99 doubles at K=4 (31.2 us -> 70.5 us)", or
    /// how far it rose when it never doubled.
    pub fn knee_text(&self) -> String {
        let (Some(first), Some(last)) = (self.points.first(), self.points.last()) else {
            return "no points".into();
        };
        let at = |k: u32| self.points.iter().find(|p| p.k == k);
        match self.knee.and_then(at) {
            Some(p) => format!(
                "p99 doubles at K={} ({:.1} us at K={} -> {:.1} us)",
                p.k, first.p99_us, first.k, p.p99_us
            ),
            None => format!(
                "p99 never doubled: {:.1} us at K={} -> {:.1} us at K={} ({:.2}x)",
                first.p99_us,
                first.k,
                last.p99_us,
                last.k,
                last.p99_us / first.p99_us.max(f64::MIN_POSITIVE)
            ),
        }
    }
}

impl Curve {
    /// With `--breakdown`: which segment of the victim's p99 round trip
    /// grew most from the first point to the last ("server receive stack
    /// and wake-up: 12.0 -> 840.0 us of the p99's 31.2 -> 8192.0 us"), or
    /// None without breakdowns.
    pub fn segment_growth(&self) -> Option<String> {
        let p99 = |p: &Point| {
            let b = p.victim.breakdown.as_ref()?;
            b.at_percentiles
                .iter()
                .find(|s| (s.percentile - 99.0).abs() < 1e-9)
                .cloned()
        };
        let (first, last) = (p99(self.points.first()?)?, p99(self.points.last()?)?);
        let (i, grew) = first
            .parts_us
            .iter()
            .zip(&last.parts_us)
            .map(|(a, b)| b - a)
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let name = crate::breakdown::SEGMENTS.get(i).map_or("?", |s| s.1);
        (grew > 0.0).then(|| {
            format!(
                "{name}: {:.1} -> {:.1} us of the p99's {:.1} -> {:.1} us",
                first.parts_us[i], last.parts_us[i], first.round_trip_us, last.round_trip_us
            )
        })
    }
}

/// A whole interference run: the victim's curve per block size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterferenceReport {
    /// [`INTERFERENCE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// What the victim ran: `rr`, `crr` or `udp-rr`.
    pub victim_workload: String,
    /// What the loaders ran, e.g. `stream` or `rr`.
    pub loader_workload: String,
    /// One curve per block size, in the order asked.
    pub curves: Vec<Curve>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(p99s: &[(u32, f64)]) -> Curve {
        let mut c = Curve {
            size: 4096,
            points: p99s
                .iter()
                .map(|&(k, p99_us)| Point {
                    k,
                    p99_us,
                    ..Point::default()
                })
                .collect(),
            knee: None,
        };
        c.find_knee();
        c
    }

    #[test]
    fn the_knee_is_the_first_k_whose_p99_doubled() {
        let c = curve(&[(0, 30.0), (1, 45.0), (2, 61.0), (4, 200.0)]);
        assert_eq!(c.knee, Some(2));
        assert_eq!(
            c.knee_text(),
            "p99 doubles at K=2 (30.0 us at K=0 -> 61.0 us)"
        );
    }

    #[test]
    fn the_segment_that_grew_most_is_named() {
        let with = |k: u32, parts: Vec<f64>| {
            let slice = crate::breakdown::PercentileSlice {
                percentile: 99.0,
                round_trip_us: parts.iter().sum(),
                parts_us: parts,
                ..Default::default()
            };
            Point {
                k,
                victim: TestResult {
                    breakdown: Some(crate::breakdown::Breakdown {
                        at_percentiles: vec![slice],
                        ..Default::default()
                    }),
                    ..TestResult::default()
                },
                ..Point::default()
            }
        };
        let mut base = vec![1.0; 10];
        let mut loaded = base.clone();
        loaded[3] = 500.0;
        base[5] = 2.0;
        let c = Curve {
            points: vec![with(0, base), with(8, loaded)],
            ..Curve::default()
        };
        let g = c.segment_growth().unwrap();
        assert!(
            g.starts_with("wire and unaccounted: 1.0 -> 500.0 us"),
            "{g}"
        );
        assert_eq!(curve(&[(0, 1.0), (2, 3.0)]).segment_growth(), None);
    }

    #[test]
    fn a_curve_that_never_doubles_says_how_far_it_rose() {
        let c = curve(&[(0, 30.0), (8, 45.0)]);
        assert_eq!(c.knee, None);
        assert!(c.knee_text().contains("never doubled"), "{}", c.knee_text());
        assert!(c.knee_text().contains("1.50x"), "{}", c.knee_text());
        assert_eq!(curve(&[]).knee, None);
    }
}
