//! Running contenders: one run of one (its processes at once, figures
//! added), and a group's runs with the order rotated.

use crate::bed::Bed;
use crate::contender::{Contender, Group, Kind};
use crate::profile;
use crate::samples::Samples;
use crate::tools::{Figures, Measured, Server, run_client};
use std::collections::BTreeMap;

/// Runs one contender once: its processes at the same time, their
/// figures added (rates, transactions) and their CPU summed; a server
/// shared by two processes is charged once. With `profile` (`--perf`
/// on a stream row) a system-wide profile is recorded mid-run.
pub(crate) fn run(
    bed: &Bed,
    ct: &Contender,
    profile: bool,
) -> Result<(Figures, Measured, Option<profile::Profile>), String> {
    let mut prof = None;
    let fresh = start_fresh(bed, ct)?;
    let server = |name: &str| fresh.get(name).or_else(|| bed.servers.get(name));
    let results: Vec<Result<Measured, String>> = std::thread::scope(|s| {
        let pids: Vec<u32> = ct
            .procs
            .iter()
            .filter_map(|p| server(p.1).map(Server::pid))
            .collect();
        let rec = bed
            .profile_at
            .filter(|_| profile)
            .map(|at| s.spawn(move || profile::record(at, &pids)));
        let hs: Vec<_> = ct
            .procs
            .iter()
            .map(|(argv, name)| {
                let server = &server;
                s.spawn(move || match server(name) {
                    Some(srv) => run_client(&bed.lab, "a", argv, srv),
                    None => Err(format!("no server {name} on the testbed")),
                })
            })
            .collect();
        let r = hs
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("client thread panicked".into()))
            })
            .collect();
        if let Some(h) = rec {
            match h.join() {
                Ok(Ok(p)) => prof = Some(p),
                Ok(Err(e)) => eprintln!("  perf: {e}"),
                Err(_) => eprintln!("  perf: the recording thread panicked"),
            }
        }
        r
    });
    let mut fig = Figures::default();
    let mut m = Measured::default();
    let mut charged: BTreeMap<&str, f64> = BTreeMap::new();
    for (r, (_, server)) in results.into_iter().zip(&ct.procs) {
        let one = r?;
        let f = (ct.parse)(&one.stdout)?;
        fig.bps += f.bps;
        fig.tps += f.tps;
        fig.p50_us = fig.p50_us.max(f.p50_us);
        fig.p99_us = fig.p99_us.max(f.p99_us);
        m.cpu_s += one.cpu_s;
        m.user_s += one.user_s;
        m.wall_s = m.wall_s.max(one.wall_s);
        m.maxrss_kb += one.maxrss_kb;
        let c = charged.entry(server).or_default();
        *c = c.max(one.server_cpu_s);
    }
    m.server_cpu_s = charged.values().sum();
    Ok((fig, m, prof))
}

/// Starts `ct`'s servers for one run in host `b`, each ready when its
/// port listens.
fn start_fresh(bed: &Bed, ct: &Contender) -> Result<BTreeMap<&'static str, Server>, String> {
    ct.fresh
        .iter()
        .map(|f| {
            let argv: Vec<&str> = f.argv.iter().map(String::as_str).collect();
            Server::start(&bed.lab, "b", &argv, f.port).map(|s| (f.name, s))
        })
        .collect()
}

/// Runs each of `g`'s contenders `runs` times, the order rotated run by
/// run; returns their samples and the runs that failed.
pub(crate) fn sample(bed: &Bed, g: &Group, runs: usize) -> (Vec<Samples>, Vec<String>) {
    let list = &g.contenders;
    let mut samples: Vec<Samples> = vec![Samples::default(); list.len()];
    let mut errors = Vec::new();
    for r in 0..runs {
        for k in 0..list.len() {
            // Rotate the order run by run so no tool always goes first.
            let i = (k + r) % list.len();
            let ct = &list[i];
            eprintln!("{} run {}/{runs}: {}", g.name, r + 1, ct.label);
            match run(bed, ct, g.kind == Kind::Stream) {
                Ok((f, m, p)) => samples[i].add(f, &m, p),
                Err(e) => {
                    eprintln!("  {}: {e}", ct.label);
                    errors.push(format!("{}: {e}", ct.label));
                }
            }
        }
    }
    (samples, errors)
}
