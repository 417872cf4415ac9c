//! Interference on one server (`bench --interference`): a victim
//! request/response test measured alone and while K loaders load the same
//! server, for each K and each block size. On one host the K loaders are
//! one test of K flows on K threads, each flow a loader with its own
//! connection and server thread; it starts first, and the victim starts
//! once the loaders have reported their first interval, so the victim's
//! whole window is loaded.

use crate::client::{ClientConfig, Reach, run_test_via};
use crate::error::EngineError;
use std::sync::mpsc;
use std::time::Duration;
use wirespeed_types::interference::{
    Curve, INTERFERENCE_SCHEMA_VERSION, InterferenceReport, Point,
};
use wirespeed_types::{TestResult, TestSpec, Workload};

/// The loaders run this much longer than the victim's warm-up plus
/// duration, so the victim's handshake and its last sample are loaded too.
const LOADER_SLACK_S: f64 = 1.0;

/// The most loaders one test runs beside (each is a thread of its own).
pub const MAX_LOADERS: u32 = 1024;

/// How often the loaders report; their first report releases the victim.
const LOADER_INTERVAL_S: f64 = 0.25;

/// What to run: the victim (its workload transactional), the loaders'
/// workload, the K values and the victim's block sizes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The victim's test; its sizes are replaced by each of `sizes`.
    pub victim: TestSpec,
    /// What each loader runs (stream, or the victim's own rr).
    pub loader: Workload,
    /// Loader counts, measured in this order (0 = the victim alone).
    pub ks: Vec<u32>,
    /// Bytes per request and response, one curve each.
    pub sizes: Vec<u32>,
}

/// Runs `plan` against the server of `cfg`; `on_point` sees each point as
/// it lands (size, point). The first failed test ends the run.
pub fn run(
    cfg: &ClientConfig,
    reach: &Reach,
    plan: &Plan,
    on_point: &mut dyn FnMut(u32, &Point),
) -> Result<InterferenceReport, EngineError> {
    if plan.victim.workload.is_bulk() {
        return Err(EngineError::Spec(format!(
            "--interference measures a request/response victim: use -w rr, crr or udp-rr, not {}",
            plan.victim.workload.name()
        )));
    }
    let mut curves = Vec::new();
    for &size in &plan.sizes {
        let mut curve = Curve {
            size,
            ..Curve::default()
        };
        for &k in &plan.ks {
            let p = point(cfg, reach, plan, size, k)?;
            on_point(size, &p);
            curve.points.push(p);
        }
        curve.find_knee();
        curves.push(curve);
    }
    Ok(report(plan, curves))
}

/// The run of `plan` with its measured `curves` (here, or across hosts
/// by wirespeed-fleet).
pub fn report(plan: &Plan, curves: Vec<Curve>) -> InterferenceReport {
    InterferenceReport {
        schema_version: INTERFERENCE_SCHEMA_VERSION,
        victim_workload: plan.victim.workload.name().to_string(),
        loader_workload: plan.loader.name().to_string(),
        curves,
    }
}

/// The victim's spec at one block size.
pub fn victim_at(plan: &Plan, size: u32) -> TestSpec {
    TestSpec {
        request_size: size,
        response_size: size,
        interval_s: 0.0,
        ..plan.victim.clone()
    }
}

/// The spec of `k` loaders running `loader` beside `victim` (at the
/// victim's block size when the loader is transactional): K flows on K
/// threads over the victim's paths, reporting every quarter second, for
/// the victim's whole test and a little more.
pub fn loaders_beside(v: &TestSpec, loader: Workload, k: u32) -> TestSpec {
    let size = v.request_size;
    let rr = !loader.is_bulk();
    TestSpec {
        workload: loader,
        duration_s: v.warmup_s + v.duration_s + LOADER_SLACK_S,
        warmup_s: 0.0,
        threads: k,
        flows: k,
        paths: v.paths.clone(),
        request_size: if rr { size } else { 1 },
        response_size: if rr { size } else { 1 },
        congestion: v.congestion.clone(),
        nodelay: v.nodelay,
        interval_s: LOADER_INTERVAL_S,
        io: v.io,
        ..TestSpec::default()
    }
}

/// One point: the loaders started and running, then the victim.
fn point(
    cfg: &ClientConfig,
    reach: &Reach,
    plan: &Plan,
    size: u32,
    k: u32,
) -> Result<Point, EngineError> {
    let victim = victim_at(plan, size);
    if k == 0 {
        let v = run_test_via(cfg, reach, &victim, &mut |_| {})?;
        return Ok(point_of(0, v, None));
    }
    let lspec = loaders_beside(&victim, plan.loader, k);
    let (tx, rx) = mpsc::channel::<usize>();
    std::thread::scope(|s| {
        let loaders = s.spawn(|| {
            let tx = tx;
            run_test_via(cfg, reach, &lspec, &mut |_| {
                let _ = tx.send(0);
            })
        });
        let wait = start_within(cfg);
        let running = all_started(&rx, 1, wait);
        let victim_result = running.then(|| run_test_via(cfg, reach, &victim, &mut |_| {}));
        let loaded = match loaders.join() {
            Ok(r) => r.map_err(|e| loader_error(k, e))?,
            Err(_) => return Err(EngineError::Protocol("the loaders' thread panicked".into())),
        };
        match victim_result {
            Some(v) => Ok(point_of(k, v?, Some(loaded))),
            None => Err(EngineError::Timeout(format!(
                "the {k} loaders did not start within {} s",
                wait.as_secs()
            ))),
        }
    })
}

/// How long loaders may take to report their first sample: the client's
/// control timeout (their handshake) and a few intervals.
pub fn start_within(cfg: &ClientConfig) -> Duration {
    cfg.timeout + Duration::from_secs_f64(LOADER_INTERVAL_S * 4.0)
}

/// Waits until each of `n` loader tests (numbered 0..n, each sending its
/// number on `rx` with every sample) has reported once. False when one
/// ended first (every sender gone) or `within` passed: then the caller
/// joins them to learn why.
pub fn all_started(rx: &mpsc::Receiver<usize>, n: usize, within: Duration) -> bool {
    let deadline = std::time::Instant::now() + within;
    let mut seen = vec![false; n];
    while seen.iter().any(|s| !s) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(i) if i < n => seen[i] = true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    true
}

/// A loader's failure, saying it was the loaders' test.
pub fn loader_error(k: u32, e: EngineError) -> EngineError {
    let hint = match e {
        EngineError::Busy(_) => {
            " (the victim and the loaders are two tests: start the server with --max-tests 2 or more)"
        }
        _ => "",
    };
    EngineError::Loaders {
        k,
        cause: Box::new(e),
        hint,
    }
}

/// A point from the victim's result and the loaders'.
pub fn point_of(k: u32, victim: TestResult, loader: Option<TestResult>) -> Point {
    let lat = victim.latency.clone().unwrap_or_default();
    Point {
        k,
        victim_tps: victim.transactions_per_s,
        p50_us: lat.p50_us,
        p99_us: lat.p99_us,
        p999_us: lat.p999_us,
        server_cpu_pct: victim.remote_cpu.total_pct,
        loader_bps: loader
            .as_ref()
            .map(|l| l.flows.iter().map(|f| f.throughput_bps).collect())
            .unwrap_or_default(),
        victim,
        loader,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaders_are_started_when_each_has_reported_once() {
        let (tx, rx) = mpsc::channel();
        for i in [1, 1, 0] {
            tx.send(i).unwrap();
        }
        assert!(all_started(&rx, 2, Duration::from_millis(10)));
        tx.send(0).unwrap();
        assert!(
            !all_started(&rx, 2, Duration::from_millis(10)),
            "loader 1 never reported"
        );
        drop(tx);
        assert!(
            !all_started(&rx, 1, Duration::from_secs(5)),
            "an ended loader is not running"
        );
    }

    #[test]
    fn loaders_cover_the_victims_whole_test_over_its_paths() {
        let plan = Plan {
            victim: TestSpec {
                workload: Workload::Rr,
                duration_s: 3.0,
                warmup_s: 1.0,
                nodelay: true,
                ..TestSpec::default()
            },
            loader: Workload::Rr,
            ks: vec![0, 4],
            sizes: vec![4096],
        };
        let l = loaders_beside(&victim_at(&plan, 4096), plan.loader, 4);
        assert_eq!((l.flows, l.threads), (4, 4));
        assert!(l.duration_s > plan.victim.warmup_s + plan.victim.duration_s);
        assert_eq!((l.request_size, l.response_size), (4096, 4096));
        assert!(l.nodelay);
        let stream = loaders_beside(&victim_at(&plan, 4096), Workload::Stream, 2);
        assert_eq!(stream.workload, Workload::Stream);
        assert_eq!(stream.request_size, 1);
    }
}
