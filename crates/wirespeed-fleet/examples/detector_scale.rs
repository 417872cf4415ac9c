//! What judging and localizing cost the watcher per probe period at
//! 1,000 agents (docs/fleet.md, "Tested"): a synthetic fleet of N agents
//! with two NICs each in four zones, the schedule's pairs, one probe
//! period of rows (rr, crr and rr-64k over each NIC pair, floors with the
//! lab's noise) fed to the detector as the watcher feeds it (one job at a
//! time, localization after each job that changed a series), first
//! healthy, then with one zone's links 2 ms slower; localization runs as
//! the watcher runs it, at most once a second of the period's results
//! when a series changed health. Prints the CPU time (this thread's,
//! from /proc/thread-self/stat) per period.
//!
//! `cargo run --release -p wirespeed-fleet --example detector_scale [N]`

use std::time::Instant;
use wirespeed_fleet::health::{Detector, Link, Rules};
use wirespeed_fleet::localize::{self, Incidents};
use wirespeed_fleet::schedule::{Budget, Schedule};
use wirespeed_fleet::{Fleet, watch};
use wirespeed_types::fleet::HistoryRow;

/// This thread's CPU time so far, seconds (utime + stime ticks).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let tail = stat.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<&str> = tail.split_whitespace().collect();
    // After the command name: state is field 3, utime 14, stime 15.
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    let ticks = tick(11) + tick(12);
    ticks as f64 / 100.0
}

/// A small deterministic noise in [0, 1).
fn noise(i: u64) -> f64 {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    x as f64 / (1u64 << 53) as f64
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let mut fleet = Fleet::synthetic(n);
    for (i, a) in fleet.agents.iter_mut().enumerate() {
        let mut second = a.nics[0].clone();
        second.name = "eth1".into();
        a.nics.push(second);
        a.labels.insert("zone".into(), format!("z{}", i % 4));
    }
    let budget = Budget {
        nic_pairs: 2,
        ..Budget::default()
    };
    let s = Schedule::new(n, &budget).expect("schedule");
    let topo = watch::topology(&fleet, &s);
    let mut det = Detector::new(Rules::default());
    let mut inc = Incidents::new(1);
    let zone_of = |i: usize| format!("z{}", i % 4);
    let mut seq = 0u64;
    // The jobs of one second of a period (the watcher's pace).
    let jobs_a_second = (s.pairs().len() as f64 / s.probe_period_s()).ceil() as usize;
    let (mut unexplained, mut since) = (false, 0usize);
    println!(
        "{n} agents, {} pairs, {} links, probes every {:.0} s",
        s.pairs().len(),
        topo.len(),
        s.probe_period_s()
    );
    for period in 0..12 {
        let slow_zone = (period >= 8).then(|| "z1".to_string());
        let (t, c0) = (Instant::now(), cpu_s());
        let (mut rows_n, mut localized) = (0usize, 0usize);
        for &(a, b) in s.pairs() {
            let (x, y) = (&fleet.agents[a], &fleet.agents[b]);
            let slow = slow_zone
                .as_ref()
                .is_some_and(|z| (zone_of(a) == *z) != (zone_of(b) == *z));
            let mut job = Vec::new();
            for (w, base) in [("rr", 10.0), ("crr", 60.0), ("rr-64k", 40.0)] {
                for nic in ["eth0", "eth1"] {
                    seq += 1;
                    let v = base * (1.0 + noise(seq)) + if slow { 4000.0 } else { 0.0 };
                    job.push(HistoryRow {
                        at_unix: 1e9 + period as f64 * s.probe_period_s(),
                        workload: w.into(),
                        client: x.name.clone(),
                        server: y.name.clone(),
                        client_nic: nic.into(),
                        server_nic: nic.into(),
                        min_us: Some(v),
                        retransmits: (w != "crr").then_some(0),
                        client_idle_pct: Some(80.0),
                        server_idle_pct: Some(80.0),
                        ..HistoryRow::default()
                    });
                }
            }
            rows_n += job.len();
            unexplained |= !det.observe_job(&job).is_empty();
            since += 1;
            if unexplained && since >= jobs_a_second {
                (unexplained, since) = (false, 0);
                localized += 1;
                let found = localize::explain(&topo, det.links(), det.bad_links());
                inc.update(&topo, found, det.links(), 1e9);
            }
        }
        let bad: Vec<&Link> = det.bad_links().into_iter().collect();
        let open: Vec<String> = inc
            .open()
            .map(|o| {
                let (sc, su) = o.scope.scope_and_subject();
                format!("{sc} {su}")
            })
            .collect();
        println!(
            "period {period:2}{}: {rows_n} rows, {localized} localizations, {:.3} s CPU ({:.3} s wall); {} links not healthy; open: {open:?}",
            if slow_zone.is_some() {
                " (z1 slow)"
            } else {
                ""
            },
            cpu_s() - c0,
            t.elapsed().as_secs_f64(),
            bad.len()
        );
    }
    let rss = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .map(|l| l.trim_start_matches("VmRSS:").trim().to_string())
        .unwrap_or_default();
    println!("{} series; resident {rss}", det.len());
}
