//! Small synthetic results, for tests and examples of the renderings.

use crate::experiment::{CellResult, Point};
use wirespeed_types::result::{LatencySummary, PathResult};
use wirespeed_types::{SCHEMA_VERSION, TestResult, TestSpec, Workload};

/// A stream result with `bps` over `paths` equal paths.
pub fn stream(bps: f64, paths: usize) -> TestResult {
    TestResult {
        schema_version: SCHEMA_VERSION,
        throughput_bps: bps,
        paths: (0..paths)
            .map(|i| PathResult {
                index: i as u32,
                label: format!("10.0.{i}.1=10.0.{i}.2"),
                throughput_bps: bps / paths as f64,
                ..PathResult::default()
            })
            .collect(),
        ..TestResult::default()
    }
}

/// An rr result with `tps` and a p50 of `p50` us.
pub fn rr(tps: f64, p50: f64, size: u32) -> TestResult {
    TestResult {
        schema_version: SCHEMA_VERSION,
        spec: TestSpec {
            workload: Workload::Rr,
            request_size: size,
            response_size: size,
            ..TestSpec::default()
        },
        transactions_per_s: tps,
        latency: Some(LatencySummary {
            p50_us: p50,
            p90_us: p50 * 1.5,
            p99_us: p50 * 2.0,
            ..LatencySummary::default()
        }),
        ..TestResult::default()
    }
}

/// A cell of one point with these runs.
pub fn cell(name: &str, runs: Vec<TestResult>) -> CellResult {
    CellResult {
        name: name.into(),
        change: format!("change of {name}"),
        points: vec![Point {
            runs,
            ..Point::default()
        }],
        ..CellResult::default()
    }
}
