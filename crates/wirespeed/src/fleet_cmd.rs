//! `wirespeed agent` and `wirespeed fleet run|plan|history|token`
//! (`fleet watch` is in watch_cmd.rs): flags to
//! wirespeed-fleet's types, progress on stderr, wirespeed-report's
//! renderings.

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_cli::fleet::*;
use wirespeed_fleet::run::Progress;
use wirespeed_fleet::{AgentConfig, Fleet, FleetResults, Pattern, RunOptions};

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
    let stop = crate::stop::on_stop_signals()?;
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
    agent.wait_until(&stop)?;
    eprintln!("wirespeed agent {name}: stopped by a signal");
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
    if a.prune {
        if !a.db.is_file() {
            bail!("no history file {}", a.db.display());
        }
        let gone = History::open(&a.db)?.prune(now - age)?;
        println!("removed {gone} run(s) older than {}", a.since);
        return Ok(());
    }
    if a.incidents {
        let events = History::open_read(&a.db)?.events(now - age)?;
        let mut incidents = wirespeed_fleet::incident::from_events(&events);
        if let Some((x, y)) = &pair {
            incidents.retain(|i| {
                i.supporting
                    .iter()
                    .any(|p| p.split(',').any(|h| h == x || h == y))
                    || i.subject == *x
                    || i.subject == *y
            });
        }
        if a.json {
            println!("{}", serde_json::to_string_pretty(&incidents)?);
        } else {
            print!("{}", wirespeed_report::watch::render_incidents(&incidents));
        }
        return Ok(());
    }
    let q = Query {
        pair,
        since_unix: now - age,
        workload: a.workload,
        limit: a.limit,
    };
    let rows = History::open_read(&a.db)?.tests(&q)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", wirespeed_report::fleet::render_history(&rows));
    }
    Ok(())
}

fn plan(a: PlanArgs) -> Result<()> {
    let pattern: Pattern = a.pattern;
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

/// A run's progress lines as printed: an agent down with the same advice
/// as the one before (after the last "; " of why, e.g. the pod proxy's
/// RBAC hint for every agent) is not given it again.
#[derive(Default)]
pub(crate) struct ProgressLines {
    /// The advice of the last agent down.
    advice: std::sync::Mutex<String>,
}

impl ProgressLines {
    /// The line for `p`, folded for the terminal.
    pub(crate) fn line(&self, p: &Progress) -> String {
        let short = match p {
            Progress::Down { agent, why } => self
                .repeated(why)
                .map(|cause| format!("agent {agent} is DOWN: {cause}; what to do: as above")),
            _ => None,
        };
        wirespeed_report::fold(&short.unwrap_or_else(|| progress_line(p)))
    }

    /// `why` without its advice when that advice is the last one given;
    /// otherwise None, and its advice becomes the last one.
    fn repeated<'w>(&self, why: &'w str) -> Option<&'w str> {
        let (cause, advice) = why.rsplit_once("; ").unwrap_or((why, ""));
        let mut last = self.advice.lock().unwrap_or_else(|e| e.into_inner());
        if !advice.is_empty() && *last == advice {
            return Some(cause);
        }
        *last = advice.to_string();
        None
    }
}

/// One progress line of a fleet run (for stderr).
fn progress_line(p: &Progress) -> String {
    match p {
        Progress::Round { round, of, jobs } => {
            format!("round {}/{of}: {jobs} test(s) at once", round + 1)
        }
        Progress::Test(t) => {
            let nics = if t.client_nic.is_empty() && t.server_nic.is_empty() {
                String::new()
            } else {
                format!(" ({} -> {})", t.client_nic, t.server_nic)
            };
            let what = match &t.error {
                Some(err) => err.clone(),
                None => test_figure(t),
            };
            format!(
                "  {} {} -> {}{nics}: {what}",
                t.workload, t.client, t.server
            )
        }
        Progress::Down { agent, why } => format!("agent {agent} is DOWN: {why}"),
        Progress::Replaced { agent, now } => {
            format!("agent {agent} is back: its replacement, {now}, takes its tests")
        }
    }
}

/// A measured test's headline in its workload's unit (transactions/s
/// and p99 for request/response, goodput for bulk), marked when
/// contended.
fn test_figure(t: &wirespeed_types::fleet::LinkTest) -> String {
    let tps = Some(t.transactions_per_s).filter(|x| *x > 0.0);
    let rate = wirespeed_report::human_rate(t.throughput_bps, tps);
    let fig = match (tps, t.p99_us) {
        (Some(_), Some(p)) => format!("{rate}, p99 {}", wirespeed_report::human_us(p)),
        _ => rate,
    };
    match t.contended() {
        Some(why) => format!("{fig} CONTENDED: {why}"),
        None => fig,
    }
}

/// A `fleet run --out` file, for `flag`.
fn read_results(p: &std::path::Path, flag: &str) -> Result<FleetResults> {
    let text = std::fs::read_to_string(p).with_context(|| format!("{flag} {}", p.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{flag} {} is not a `fleet run --out` file", p.display()))
}

/// The run's progress: a line per event on stderr and, with an output
/// file, the file rewritten as each test lands (`"partial": true`).
fn progress_to(
    out: Option<PathBuf>,
    plan: &wirespeed_fleet::Plan,
) -> wirespeed_fleet::run::ProgressFn {
    let partial = std::sync::Mutex::new(FleetResults {
        schema_version: wirespeed_types::fleet::FLEET_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        pattern: plan.pattern.name().to_string(),
        concurrent: plan.concurrent,
        rounds: plan.rounds.len() as u32,
        partial: true,
        ..FleetResults::default()
    });
    let warned = std::sync::atomic::AtomicBool::new(false);
    let lines = ProgressLines::default();
    Arc::new(move |p: &Progress| {
        let _ = writeln!(std::io::stderr().lock(), "{}", lines.line(p));
        let (Some(path), Progress::Test(t)) = (&out, p) else {
            return;
        };
        let mut r = partial.lock().unwrap_or_else(|e| e.into_inner());
        r.tests.push((**t).clone());
        let written = serde_json::to_string_pretty(&*r)
            .map_err(anyhow::Error::from)
            .and_then(|text| Ok(wirespeed_experiment::runner::write_atomic(path, &text)?));
        if let Err(e) = written
            && !warned.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            eprintln!("warning: --out: {e:#}; the run goes on");
        }
    })
}

/// `fleet run --interference`: the victim's curves, a progress line per
/// point, the tables (or --json), and --out for `wirespeed report`.
fn run_interference(a: &RunArgs, fleet: &Fleet, key: Vec<u8>, ks: &[u32]) -> Result<()> {
    let workloads = workloads(&a.bench)?;
    let plan = interference_plan(ks, a.loader, a.bench.size.is_some(), &workloads)?;
    let roles = interference_roles(fleet, a.interference_server.as_deref())?;
    let mut opts = RunOptions::new(workloads, key);
    opts.http_timeout = Duration::from_secs(5);
    let name = |i: usize| fleet.agents[i].name.as_str();
    eprintln!(
        "interference: server {}, victim {}, loaders {}",
        name(roles.server),
        name(roles.victim),
        roles
            .loaders
            .iter()
            .map(|&i| name(i))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let on_point = |size: u32, p: &wirespeed_types::interference::Point| {
        eprintln!(
            "interference {size} bytes K={}: {:.0} trans/s, p99 {:.1} us",
            p.k, p.victim_tps, p.p99_us
        );
    };
    let r = wirespeed_fleet::interference::run_blocking(fleet, &roles, &plan, &opts, &on_point)?;
    let json = serde_json::to_string_pretty(&r)?;
    if let Some(p) = &a.out {
        wirespeed_experiment::runner::write_atomic(p, &json)?;
    }
    if a.bench.json {
        println!("{json}");
    } else {
        print!(
            "{}",
            wirespeed_report::interference::render_interference(&r)
        );
    }
    Ok(())
}

fn run_matrix(a: RunArgs) -> Result<()> {
    let fleet = Fleet::load(&a.agents)?;
    let pattern: Pattern = a.pattern;
    let Some(kf) = &a.bench.key_file else {
        bail!(
            "fleet run needs --key-file: the agents start tests only for requests signed with the fleet key"
        );
    };
    let key = crate::read_key(kf)?;
    if let Some(ks) = &a.interference {
        return run_interference(&a, &fleet, key, ks);
    }
    let min_bps = a
        .min
        .as_deref()
        .map(wirespeed_types::spec::parse_rate)
        .transpose()
        .context("--min")?
        .map(|b| b as f64);
    let baseline = match &a.baseline {
        Some(p) => {
            let b = read_results(p, "--baseline")?;
            if b.partial {
                eprintln!(
                    "warning: --baseline {} is partial (its run was stopped after {} tests): links it lacks are not compared",
                    p.display(),
                    b.tests.len()
                );
            }
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
    opts.retries = a.retries;
    if let Some(p) = &a.resume {
        opts.earlier = read_results(p, "--resume")?.tests;
    }
    let out_file = a.out.clone().or_else(|| a.resume.clone());
    opts.progress = Some(progress_to(out_file.clone(), &plan));
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
    if let Some(p) = &out_file {
        wirespeed_experiment::runner::write_atomic(p, &json)?;
    }
    if let Some(p) = &a.html {
        std::fs::write(p, wirespeed_report::fleet::render_fleet_html(&r))
            .with_context(|| format!("write {}", p.display()))?;
    }
    if a.bench.json || a.bench.format == wirespeed_report::Format::Json {
        println!("{json}");
    } else {
        print!("{}", wirespeed_report::render_fleet(&r));
    }
    if let Some(v) = r.verdict.as_ref().filter(|v| !v.passed()) {
        let _ = std::io::stdout().flush();
        std::process::exit(if v.failures.is_empty() { 3 } else { 2 });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_advice_for_agents_down_is_given_once() {
        let lines = ProgressLines::default();
        let down = |agent: &str, why: &str| {
            lines.line(&Progress::Down {
                agent: agent.into(),
                why: why.into(),
            })
        };
        let grant = "grant pods/proxy";
        let a = down("a", &format!("pod a: 403; {grant}"));
        let b = down("b", &format!("pod b: 403; {grant}"));
        let c = down("c", "connection refused; is the agent running");
        assert!(a.ends_with(grant), "{a}");
        assert_eq!(b, "agent b is DOWN: pod b: 403; what to do: as above");
        assert!(c.ends_with("is the agent running"), "{c}");
        assert_eq!(down("d", "gone"), "agent d is DOWN: gone");
    }
}
