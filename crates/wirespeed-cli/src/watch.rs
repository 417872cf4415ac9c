//! The flags of `wirespeed fleet watch`, and the probes and traffic budget
//! they make.

use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;
use wirespeed_fleet::Fleet;
use wirespeed_fleet::run::WorkloadSpec;
use wirespeed_fleet::schedule::{Budget, Schedule};
use wirespeed_types::units::{parse_duration, parse_rate};
use wirespeed_types::{TestSpec, Workload};

/// Options of `wirespeed fleet watch`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The fleet file (TOML; docs/fleet.md).
    #[arg(long)]
    pub agents: Option<PathBuf>,
    /// Plan for N made-up agents instead (with --dry-run only).
    #[arg(long, conflicts_with = "agents")]
    pub synthetic: Option<usize>,
    /// The fleet key file (the agents' --key-file).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// The history file (SQLite; created, or migrated, as needed).
    #[arg(long, default_value = "wirespeed-history.db")]
    pub history: PathBuf,
    /// Share of each link's capacity the watcher may use on average,
    /// percent: probes take at most half of it, bandwidth tests the rest.
    #[arg(long, default_value_t = 1.0)]
    pub budget: f64,
    /// Each link's capacity, e.g. 10gbit, 100mbit (the budget's base).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long, default_value = "10gbit")]
    pub link_rate: String,
    /// How often each pair is probed (stretched to fit the budget).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "30s")]
    pub probe_period: String,
    /// The probes, run together on each pair: rr (200 transactions of
    /// 1 byte), crr (20 connections), rr-64k (8 transactions of 64 KiB).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "rr,crr,rr-64k"
    )]
    pub probes: Vec<Probe>,
    /// Length of each bandwidth test of the rotation (per NIC pair).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "2s")]
    pub bandwidth_duration: String,
    /// Agents each agent probes at most (all of them up to N + 1 agents).
    #[arg(long, default_value_t = 16)]
    pub peers: usize,
    /// A probe's latency floor is past its threshold at this many times
    /// its link's baseline median (and 1.5 times the baseline's high, and
    /// --min-change above it); two tests past it in a row make the link
    /// degraded, two back under half the excess make it healthy.
    #[arg(long, default_value_t = 3.0)]
    pub drift_ratio: f64,
    /// Latency changes under this are never judged, e.g. 500us, 2ms (the
    /// floors of a healthy path move by hundreds of microseconds on a
    /// busy host).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "500us")]
    pub min_change: String,
    /// Stop after this long (default: run until killed).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long = "for")]
    pub run_for: Option<String>,
    /// Prune history older than this, at start and hourly.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "30d")]
    pub retain: String,
    /// Serve the live page (/), /metrics and /v1/watch here, e.g.
    /// 127.0.0.1:5390.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Print the schedule (pairs, probe period, bandwidth rotation) and
    /// how long planning took, then exit.
    #[arg(long)]
    pub dry_run: bool,
}

/// A probe of `fleet watch --probes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Probe {
    /// 200 transactions of 1 byte.
    Rr,
    /// 20 connections.
    Crr,
    /// 8 transactions of 64 KiB.
    #[value(name = "rr-64k")]
    Rr64k,
}

/// A probe's workload, labelled with its name.
pub fn probe(p: Probe) -> WorkloadSpec {
    let (workload, size, count) = match p {
        Probe::Rr => (Workload::Rr, 1u32, 200u64),
        Probe::Crr => (Workload::Crr, 1, 20),
        Probe::Rr64k => (Workload::Rr, 65536, 8),
    };
    let name = clap::ValueEnum::to_possible_value(&p)
        .map_or_else(String::new, |v| v.get_name().to_string());
    let spec = TestSpec {
        workload,
        request_size: size,
        response_size: size,
        duration_s: 3.0,
        warmup_s: 0.0,
        interval_s: 0.0,
        bytes: Some(count * 2 * u64::from(size)),
        ..TestSpec::default()
    };
    WorkloadSpec { label: name, spec }
}

/// The watcher's traffic budget from the flags and the probes.
pub fn budget(a: &WatchArgs, probes: &[WorkloadSpec], bandwidth_s: f64) -> Result<Budget> {
    if !(a.budget > 0.0 && a.budget <= 100.0) {
        bail!(
            "--budget {}: give a percentage above 0 and at most 100",
            a.budget
        );
    }
    let link_bps = parse_rate(&a.link_rate).context("--link-rate")? as f64;
    Ok(Budget {
        share: a.budget / 100.0,
        link_bps,
        probe_period_s: parse_duration(&a.probe_period).context("--probe-period")?,
        bandwidth_s,
        nic_pairs: 1,
        probe_bytes: probe_bytes(probes, link_bps),
        peers: a.peers,
    })
}

/// The probes and the budget from the flags.
pub fn plan_inputs(a: &WatchArgs) -> Result<(Vec<WorkloadSpec>, f64, Budget)> {
    let probes: Vec<WorkloadSpec> = a.probes.iter().map(|p| probe(*p)).collect();
    if probes.is_empty() {
        bail!("--probes: give at least one probe");
    }
    let bw_s = parse_duration(&a.bandwidth_duration).context("--bandwidth-duration")?;
    let b = budget(a, &probes, bw_s + 0.2)?;
    Ok((probes, bw_s, b))
}

/// Bytes one probe round of a pair may move over a link: the counted
/// bytes with headers, and what runs on past the count until the engine
/// checks it (twice its byte check's period: at the link's rate, or at
/// most a transaction each 10 us for rr, 50 us for crr).
pub fn probe_bytes(probes: &[WorkloadSpec], link_bps: f64) -> f64 {
    let tick = wirespeed_engine::BYTES_TICK.as_secs_f64();
    probes
        .iter()
        .map(|p| {
            let s = &p.spec;
            let (per_s, packets) = match s.workload {
                Workload::Crr => (20e3, 7.0),
                _ => (100e3, 2.0),
            };
            let wire = f64::from(s.request_size + s.response_size) + packets * 66.0;
            let on = (tick * link_bps / 8.0).min(tick * per_s * wire);
            s.bytes.unwrap_or(0) as f64 * 1.1 + 2.0 * on
        })
        .sum()
}

/// Prints the schedule of `n` agents and how long planning took.
pub fn dry_run(n: usize, nics: usize, b: &Budget) -> Result<()> {
    let b = Budget {
        nic_pairs: nics,
        ..b.clone()
    };
    let t = Instant::now();
    let s = Schedule::new(n, &b)?;
    let planned = t.elapsed();
    let t = Instant::now();
    let due = s.due(1e9, 1e9 + s.probe_period_s());
    let one_period = t.elapsed();
    println!(
        "{n} agents, {} pairs probed, each every {:.0} s; bandwidth: {} rounds, one every {:.0} s, each pair every {}",
        s.pairs().len(),
        s.probe_period_s(),
        s.rounds(),
        s.slot_s(),
        wirespeed_types::text::human_duration(s.bandwidth_every_s())
    );
    println!(
        "planned in {:.2} ms; one probe period's {} tests listed in {:.2} ms",
        planned.as_secs_f64() * 1e3,
        due.len(),
        one_period.as_secs_f64() * 1e3
    );
    Ok(())
}

/// `--dry-run`: the schedule of the fleet file's agents, or of N made up.
pub fn dry_run_of(a: &WatchArgs, b: &Budget) -> Result<()> {
    match (&a.agents, a.synthetic) {
        (Some(p), _) => {
            let f = Fleet::load(p)?;
            let nics = f
                .agents
                .iter()
                .map(|x| x.nics.len().max(1))
                .max()
                .unwrap_or(1);
            dry_run(f.agents.len(), nics, b)
        }
        (None, Some(n)) => dry_run(n, 1, b),
        (None, None) => bail!("give --agents FILE or --synthetic N"),
    }
}
