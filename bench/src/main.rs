//! `bench/compare`: wirespeed against iperf3, iperf2 and sockperf on one
//! namespace testbed, in one run. Every figure is the median of several
//! runs, tools interleaved run by run so drift hits all alike; the ratios
//! are what counts (absolute speeds move 10-20% between runs here).
//!
//! Two tables: defaults against defaults (what a user sees who types each
//! tool's plain command) and equal settings (the same message size,
//! congestion control and flow count for every tool; threads where the
//! peer has them). A claim that wirespeed is faster rests on the second.
//!
//! The testbed: hosts `a` (clients) and `b` (servers); link 0 uncapped,
//! links 1 and 2 capped at 2 Gbit/s each by tbf, links 3 and 4 uncapped.
//!
//! By concern: `opts`, `bed` (the testbed), `contender` and `cmds` (what
//! each row runs), `run` and `samples` (running and its figures),
//! `report` (rows, tables, JSON).

// Unsafe code only in the sys module, allowed below.
#![deny(unsafe_code)]

mod bed;
mod cmds;
mod contender;
mod opts;
mod profile;
mod report;
mod run;
mod samples;
#[allow(unsafe_code)]
mod sys;
mod tools;

use bed::{Bed, bed_for};
use cmds::group;
use contender::Group;
use opts::{all_groups, parse_opts};
use report::{Row, extra_target, group_json, print_tables, summary_row, write_detail};
use run::sample;

/// Per-NIC cap of the capped links, bits per second.
const CAP_BPS: f64 = 2e9;
/// Goodput over frame bytes at MTU 1500: tbf counts the Ethernet header.
const GOODPUT_RATIO: f64 = 1448.0 / 1514.0;
/// The message size of every equal-settings stream row (iperf3's and
/// iperf2's default write size).
const MSG: &str = "128K";

/// Measures `g` `runs` times, tools rotated run by run; appends its
/// detail to `report` and returns its summary row and JSON.
fn measure(bed: &Bed, g: &Group, runs: usize, report: &mut String) -> (Row, serde_json::Value) {
    let (samples, errors) = sample(bed, g, runs);
    write_detail(g, &samples, report);
    let (row, ratio) = summary_row(g, &samples, &errors);
    let json = group_json(g, &samples, ratio, &errors);
    (row, json)
}

/// Makes the directory `--out` writes into before any test runs, so a
/// bad path fails at once rather than after the whole run.
fn prepare_out(out: Option<&str>) {
    let Some(dir) = out.and_then(|p| std::path::Path::new(p).parent()) else {
        return;
    };
    if !dir.as_os_str().is_empty()
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("--out: create {}: {e}", dir.display());
        std::process::exit(2);
    }
}

fn main() {
    let o = parse_opts();
    prepare_out(o.out.as_deref());
    let bed = bed_for(&o);
    let mut report = String::new();
    let mut json = serde_json::Map::new();
    let mut rows = Vec::new();
    let mut extra_targets: Vec<(String, bool)> = vec![report::size_target(&bed.ws)];
    for name in &o.groups {
        let name = all_groups().find(|g| g == name).unwrap_or("");
        let g = group(&bed, name, o.duration);
        let (row, j) = measure(&bed, &g, o.runs, &mut report);
        extra_targets.extend(extra_target(name, &g, &j));
        json.insert(name.to_string(), j);
        rows.push(row);
    }
    let cc =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap_or_default();
    println!(
        "wirespeed bench/compare: median of {} runs of {} s each, tools alternating; default congestion control {}",
        o.runs,
        o.duration,
        cc.trim()
    );
    let mut failed = print_tables(&rows);
    println!("\n## other targets\n");
    for (t, ok) in &extra_targets {
        println!("- [{}] {t}", if *ok { "met" } else { "MISS" });
    }
    println!("\n## detail (median (min-max) per contender)");
    print!("{report}");
    if let Some(path) = &o.out {
        json.insert("runs".into(), o.runs.into());
        json.insert("duration_s".into(), o.duration.into());
        if let Err(e) = std::fs::write(
            path,
            serde_json::to_string_pretty(&json).unwrap_or_default(),
        ) {
            eprintln!("write {path}: {e}");
            failed = true;
        }
    }
    drop(bed);
    if failed {
        std::process::exit(1);
    }
}
