//! `wirespeed agent` and `wirespeed fleet run|plan|history|token`
//! (`fleet watch` is in watch_cmd.rs): flags to
//! wirespeed-fleet's types, progress on stderr, wirespeed-report's
//! renderings.

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_experiment::{BenchArgs, spec_from};
use wirespeed_fleet::run::{Progress, WorkloadSpec};
use wirespeed_fleet::{AgentConfig, Fleet, FleetResults, Pattern, RunOptions};

/// Options of `wirespeed agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The agent's name in the fleet [default: the host name].
    #[arg(long)]
    name: Option<String>,
    /// Address and port of the HTTP API.
    #[arg(long, default_value = "[::]:5380")]
    http: SocketAddr,
    /// Pin the fleet: test only the agents of this file (else the
    /// controller sends the fleet with its key).
    #[arg(long)]
    fleet: Option<PathBuf>,
    /// Tests this agent runs as a client at once.
    #[arg(long, default_value_t = 4)]
    max_client_tests: usize,
    /// Serve /metrics without the key (it tells the host's kernel, NICs
    /// and link speeds): for a Prometheus that cannot hold the bearer
    /// token of `wirespeed fleet token`.
    #[arg(long)]
    metrics_open: bool,
    /// The server's flags (--key-file is required).
    #[command(flatten)]
    serve: crate::ServeArgs,
}

/// `wirespeed fleet ...`.
#[derive(clap::Subcommand, Debug)]
pub enum FleetCmd {
    /// Run a test matrix over the agents of a fleet file.
    Run(Box<RunArgs>),
    /// Plan the rounds only: how many, and how long planning takes.
    Plan(PlanArgs),
    /// Print the bearer token that reads the agents' API (metrics, facts,
    /// results) without the key: for a Prometheus scrape config.
    Token(TokenArgs),
    /// Show stored tests from a history file (`fleet run --history`).
    History(HistoryArgs),
    /// Measure the fleet on a schedule under a budget: light probes
    /// between pairs, bandwidth tests in a rotation, every result stored,
    /// drift raised with the facts that changed; a live page and
    /// Prometheus series on --listen.
    Watch(Box<crate::watch_cmd::WatchArgs>),
}

/// Options of `wirespeed fleet history`.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// The history file (SQLite).
    #[arg(long)]
    db: PathBuf,
    /// Only tests between these two agents, either way: A,B.
    #[arg(long)]
    pair: Option<String>,
    /// Only tests of the last DURATION, e.g. 7d, 12h, 30m.
    #[arg(long, default_value = "7d")]
    since: String,
    /// Only this workload label.
    #[arg(long)]
    workload: Option<String>,
    /// At most N rows, the newest (0: all).
    #[arg(long, default_value_t = 1000)]
    limit: usize,
    /// Remove the runs older than --since instead of showing anything.
    #[arg(long)]
    prune: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `wirespeed fleet token`.
#[derive(clap::Args, Debug)]
pub struct TokenArgs {
    /// The fleet key file (the agents' --key-file).
    #[arg(long)]
    key_file: PathBuf,
}

/// Options of `wirespeed fleet run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The fleet file (TOML; docs/fleet.md).
    #[arg(long)]
    agents: PathBuf,
    /// pairs, ring, all-to-all, one-to-many or many-to-one.
    #[arg(long, default_value = "all-to-all")]
    pattern: String,
    /// Tests each host takes part in at once (1: never two at once).
    #[arg(long, default_value_t = 1)]
    concurrent: u32,
    /// Runs of each test; two or more measure the noise band.
    #[arg(long, default_value_t = 2)]
    repeats: u32,
    /// Fail (exit 2) when a link's median is below this rate, e.g. 5gbit.
    #[arg(long)]
    min: Option<String>,
    /// Fail (exit 2) when a link falls below the same link of this
    /// earlier `fleet run --out` by more than --tolerance.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Allowed drop against --baseline, percent.
    #[arg(long, default_value_t = 10.0)]
    tolerance: f64,
    /// Also write the JSON results here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write the HTML report (matrix heatmap, outliers) here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Also store every test and each agent's facts in this history file
    /// (SQLite; created, or migrated, as needed).
    #[arg(long)]
    history: Option<PathBuf>,
    /// Bench's flags: workload, duration, flows, sizes, --key-file (required), --json.
    #[command(flatten)]
    bench: BenchArgs,
}

/// Options of `wirespeed fleet plan`.
#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// The fleet file.
    #[arg(
        long,
        required_unless_present = "synthetic",
        conflicts_with = "synthetic"
    )]
    agents: Option<PathBuf>,
    /// Plan for N made-up agents instead (planning figures only).
    #[arg(long)]
    synthetic: Option<usize>,
    /// The pattern.
    #[arg(long, default_value = "all-to-all")]
    pattern: String,
    /// Tests each host takes part in at once.
    #[arg(long, default_value_t = 1)]
    concurrent: u32,
    /// Print each round's tests too.
    #[arg(long)]
    rounds: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `wirespeed agent` until the process ends.
pub fn run_agent(a: AgentArgs) -> Result<()> {
    if a.serve.key_file.is_none() {
        bail!(
            "the agent needs --key-file: starting traffic through it is never possible without the fleet key"
        );
    }
    let (server, _) = crate::server_config(&a.serve)?;
    let key = server.key.clone().unwrap_or_default();
    let name = match a.name {
        Some(n) => n,
        None => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "agent".into()),
    };
    let fleet = a.fleet.as_deref().map(Fleet::load).transpose()?;
    let cfg = AgentConfig {
        server,
        http: a.http,
        fleet,
        max_tests: a.max_client_tests,
        metrics_open: a.metrics_open,
        ..AgentConfig::new(&name, key)
    };
    let agent = wirespeed_fleet::Agent::start(cfg)?;
    // The banner is the readiness signal scripts wait for.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "wirespeed agent {name} listening: control {}, http {}",
        agent.control_addr(),
        agent.http_addr()
    );
    let _ = out.flush();
    drop(out);
    agent.wait()?;
    Ok(())
}

/// Runs `wirespeed fleet ...`.
pub fn run(c: FleetCmd) -> Result<()> {
    match c {
        FleetCmd::Run(a) => run_matrix(*a),
        FleetCmd::Plan(a) => plan(a),
        FleetCmd::History(a) => history(a),
        FleetCmd::Watch(a) => crate::watch_cmd::run(*a),
        FleetCmd::Token(a) => {
            let key = crate::read_key(&a.key_file)?;
            println!("{}", wirespeed_fleet::auth::bearer_token(&key));
            Ok(())
        }
    }
}

/// `wirespeed fleet history`: stored tests, or pruning.
fn history(a: HistoryArgs) -> Result<()> {
    use wirespeed_fleet::history::{History, Query};
    let age = wirespeed_types::units::parse_duration(&a.since).context("--since")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs_f64();
    let pair = match a.pair.as_deref().map(|p| p.split_once(',')) {
        None => None,
        Some(Some((x, y))) if !x.is_empty() && !y.is_empty() => Some((x.into(), y.into())),
        Some(_) => bail!(
            "--pair {:?}: give two agent names, A,B",
            a.pair.unwrap_or_default()
        ),
    };
    if !a.db.exists() {
        bail!("no history file {}", a.db.display());
    }
    let mut h = History::open(&a.db)?;
    if a.prune {
        let gone = h.prune(now - age)?;
        println!("removed {gone} run(s) older than {}", a.since);
        return Ok(());
    }
    let q = Query {
        pair,
        since_unix: now - age,
        workload: a.workload,
        limit: a.limit,
    };
    let rows = h.tests(&q)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", wirespeed_report::fleet::render_history(&rows));
    }
    Ok(())
}

fn plan(a: PlanArgs) -> Result<()> {
    let pattern: Pattern = a.pattern.parse()?;
    let fleet = match (&a.agents, a.synthetic) {
        (Some(p), _) => Fleet::load(p)?,
        (None, Some(n)) => {
            if !(2..=wirespeed_fleet::fleet::MAX_AGENTS).contains(&n) {
                bail!(
                    "--synthetic {n}: use 2 to {}",
                    wirespeed_fleet::fleet::MAX_AGENTS
                );
            }
            Fleet::synthetic(n)
        }
        (None, None) => bail!("give --agents FILE or --synthetic N"),
    };
    let t = Instant::now();
    let p = wirespeed_fleet::plan(&fleet, pattern, a.concurrent)?;
    let took = t.elapsed();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
        return Ok(());
    }
    println!(
        "{} agents, {}, at most {} test(s) per host at once: {} rounds, {} tests, planned in {:.3} ms",
        fleet.agents.len(),
        pattern.name(),
        a.concurrent,
        p.rounds.len(),
        p.len(),
        took.as_secs_f64() * 1e3
    );
    if a.rounds {
        for (i, r) in p.rounds.iter().enumerate() {
            let jobs: Vec<String> = r
                .jobs
                .iter()
                .map(|j| {
                    format!(
                        "{}->{}",
                        fleet.agents[j.client].name, fleet.agents[j.server].name
                    )
                })
                .collect();
            println!("round {}: {}", i + 1, jobs.join(" "));
        }
    }
    Ok(())
}

pub(crate) fn workloads(b: &BenchArgs) -> Result<Vec<WorkloadSpec>> {
    let (spec, sizes) = spec_from(b).map_err(anyhow::Error::msg)?;
    if !spec.paths.is_empty() {
        bail!("--path/--paths do not apply: each test runs over a NIC pair of the fleet file");
    }
    if b.ipv4 || b.ipv6 || b.bind.is_some() || b.connect_timeout.is_some() || b.cport.is_some() {
        bail!(
            "-4/-6, -B, --cport and --connect-timeout do not apply: the agents reach each other at the fleet file's addresses"
        );
    }
    let one = sizes.len() == 1 && b.size.is_none();
    // -u names its workload without -w.
    let name = spec.workload.name();
    Ok(sizes
        .iter()
        .map(|&(req, resp)| {
            let mut s = spec.clone();
            s.request_size = req;
            s.response_size = resp;
            let label = if one || s.workload == wirespeed_engine::Workload::Stream {
                name.to_string()
            } else if req == resp {
                format!(
                    "{name}-{}",
                    wirespeed_report::human_size(req as u64).replace(' ', "")
                )
            } else {
                format!(
                    "{name}-{}/{}",
                    wirespeed_report::human_size(req as u64).replace(' ', ""),
                    wirespeed_report::human_size(resp as u64).replace(' ', "")
                )
            };
            WorkloadSpec { label, spec: s }
        })
        .collect())
}

/// One progress line of a fleet run (for stderr).
pub(crate) fn progress_line(p: &Progress) -> String {
    match p {
        Progress::Round { round, of, jobs } => {
            format!("round {}/{of}: {jobs} test(s) at once", round + 1)
        }
        Progress::Test(t) => match &t.error {
            Some(err) => format!(
                "  {} {} -> {} ({} -> {}): {err}",
                t.workload, t.client, t.server, t.client_nic, t.server_nic
            ),
            None => format!(
                "  {} {} -> {} ({} -> {}): {}",
                t.workload,
                t.client,
                t.server,
                t.client_nic,
                t.server_nic,
                wirespeed_report::human_bps(t.throughput_bps)
            ),
        },
        Progress::Down { agent, why } => format!("agent {agent} is DOWN: {why}"),
    }
}

fn run_matrix(a: RunArgs) -> Result<()> {
    let fleet = Fleet::load(&a.agents)?;
    let pattern: Pattern = a.pattern.parse()?;
    let Some(kf) = &a.bench.key_file else {
        bail!(
            "fleet run needs --key-file: the agents start tests only for requests signed with the fleet key"
        );
    };
    let key = crate::read_key(kf)?;
    let min_bps = a
        .min
        .as_deref()
        .map(wirespeed_engine::spec::parse_rate)
        .transpose()
        .context("--min")?
        .map(|b| b as f64);
    let baseline = match &a.baseline {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("read baseline {}", p.display()))?;
            let b: FleetResults = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a `fleet run --out` file", p.display()))?;
            Some((p.display().to_string(), b))
        }
        None => None,
    };
    if !(0.0..100.0).contains(&a.tolerance) {
        bail!(
            "--tolerance {}: use a percentage from 0 to 100",
            a.tolerance
        );
    }
    let plan = wirespeed_fleet::plan(&fleet, pattern, a.concurrent)?;
    let mut opts = RunOptions::new(workloads(&a.bench)?, key);
    opts.repeats = a.repeats.clamp(1, 100);
    opts.progress = Some(Arc::new(|p: &Progress| {
        let _ = writeln!(std::io::stderr().lock(), "{}", progress_line(p));
    }));
    opts.http_timeout = Duration::from_secs(5);
    let mut r = wirespeed_fleet::run(&fleet, &plan, &opts)?;
    r.verdict = Some(wirespeed_fleet::analyze::judge(
        &r,
        min_bps,
        baseline.as_ref().map(|(p, b)| (p.as_str(), b)),
        a.tolerance,
    ));
    if let Some(p) = &a.history {
        wirespeed_fleet::history::History::open(p)?.record("run", &r)?;
    }
    let json = serde_json::to_string_pretty(&r)?;
    if let Some(p) = &a.out {
        std::fs::write(p, &json).with_context(|| format!("write {}", p.display()))?;
    }
    if let Some(p) = &a.html {
        std::fs::write(p, wirespeed_report::fleet::render_fleet_html(&r))
            .with_context(|| format!("write {}", p.display()))?;
    }
    if a.bench.json || a.bench.format == "json" {
        println!("{json}");
    } else {
        print!("{}", wirespeed_report::render_fleet(&r));
    }
    if r.verdict.as_ref().is_some_and(|v| !v.passed()) {
        let _ = std::io::stdout().flush();
        std::process::exit(2);
    }
    Ok(())
}
