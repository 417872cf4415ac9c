//! `wirespeed inspect`, `doctor` and `tune`: wiring of the host crate,
//! with `--netns` handled by re-running this binary under `ip netns exec`
//! (which also remounts /sys for that namespace).

use anyhow::{Context, Result, bail};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_engine::spec::{parse_duration, parse_rate};
use wirespeed_engine::{ClientConfig, run_test};
use wirespeed_experiment::peer::{self, PeerTest};
use wirespeed_host::doctor::{Goal, diagnose_measured};
use wirespeed_host::guard::{self, Checks};
use wirespeed_host::pathmtu::{self, PathMtu};
use wirespeed_host::tune::{self, Host, Setting, StateDir};
use wirespeed_host::{Finding, Fs, Snapshot, inspect, profiles};

/// Environment variable naming the namespace after a `--netns` re-exec.
const NETNS_ENV: &str = "WIRESPEED_NETNS";

/// Options every host command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Where {
    /// Run in this named network namespace (/run/netns/NAME).
    #[arg(long)]
    pub netns: Option<String>,
    /// Read /proc and /sys under this directory instead of / (recorded trees).
    #[arg(long, hide = true)]
    pub root: Option<PathBuf>,
}

/// Options of `wirespeed inspect`.
#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    at: Where,
    /// Print the snapshot as JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `wirespeed doctor`.
#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    at: Where,
    #[command(flatten)]
    goal: GoalArgs,
    /// A `wirespeed serve` to measure against: one address per peer NIC,
    /// comma-separated; a short test per path names the bottleneck.
    #[arg(long)]
    peer: Option<String>,
    /// Control port of the peer.
    #[arg(long, default_value_t = wirespeed_engine::DEFAULT_PORT)]
    port: u16,
    /// Key file when the peer requires one.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Length of each peer test.
    #[arg(long, default_value = "2s")]
    test_duration: String,
    /// Do not probe the path MTU toward the gateway and peers (MTU
    /// advice then comes out unverified).
    #[arg(long)]
    no_probe: bool,
    /// Print findings as JSON.
    #[arg(long)]
    json: bool,
}

/// What doctor and tune size things for.
#[derive(clap::Args, Debug, Clone)]
pub struct GoalArgs {
    /// Wanted throughput (e.g. 40gbit); default: the sum of the NICs' speeds.
    #[arg(long)]
    goal: Option<String>,
    /// Round-trip time to size socket buffers for.
    #[arg(long, default_value = "500us")]
    rtt: String,
    /// The work is request/response (latency), not bulk.
    #[arg(long)]
    rr: bool,
}

impl GoalArgs {
    fn goal(&self) -> Result<Goal> {
        let bps = self
            .goal
            .as_deref()
            .map(parse_rate)
            .transpose()
            .context("--goal")?
            .map(|b| b as f64);
        let rtt_us = parse_duration(&self.rtt).context("--rtt")? * 1e6;
        if rtt_us <= 0.0 {
            bail!("--rtt must be above zero");
        }
        Ok(Goal {
            bps,
            rtt_us,
            rr: self.rr,
        })
    }
}

/// `wirespeed tune` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum TuneCmd {
    /// Print the actions as the commands a person would type.
    Plan(TuneArgs),
    /// Apply the plan, journaling old values first.
    Apply(ApplyArgs),
    /// Keep the last apply (cancel its automatic rollback).
    Confirm(StateArgs),
    /// Restore every value the journal holds.
    Rollback(RollbackArgs),
    /// Show the journal; exits non-zero when it needs attention (deadline
    /// passed unconfirmed, watchdog gone, journal from an earlier boot).
    Status(StateArgs),
    /// (internal) wait for the deadline and roll back unless confirmed.
    #[command(hide = true)]
    Watchdog(StateArgs),
}

/// Where the journal lives.
#[derive(clap::Args, Debug, Clone)]
pub struct StateArgs {
    #[command(flatten)]
    at: Where,
    /// Journal directory (default /var/lib/wirespeed/NETNS or .../host).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// How long to wait for another tune command holding the journal's lock.
    #[arg(long, default_value = "30s")]
    lock_wait: String,
}

/// Options of `tune rollback`.
#[derive(clap::Args, Debug, Clone)]
pub struct RollbackArgs {
    #[command(flatten)]
    state: StateArgs,
    /// (internal, the backup timer) roll back only when the journal is
    /// still unconfirmed past its deadline.
    #[arg(long, hide = true)]
    if_overdue: bool,
}

/// Options of `tune plan`.
#[derive(clap::Args, Debug, Clone)]
pub struct TuneArgs {
    #[command(flatten)]
    state: StateArgs,
    #[command(flatten)]
    goal: GoalArgs,
    /// A profile (throughput, latency, tpu-multinic, bulk-multinic) or a
    /// profile file; default: the fixes of doctor's findings.
    #[arg(long)]
    profile: Option<String>,
    /// NICs a profile's link settings apply to (repeat; default: all in use).
    #[arg(long = "dev")]
    devs: Vec<String>,
    /// Addresses beyond this host that must stay reachable (repeat or
    /// comma-separate): their path MTU is measured before an MTU change,
    /// and they are checked after an apply, like the default gateway.
    #[arg(long = "peer", value_delimiter = ',')]
    peers: Vec<String>,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `tune apply`.
#[derive(clap::Args, Debug, Clone)]
pub struct ApplyArgs {
    #[command(flatten)]
    plan: TuneArgs,
    /// Roll back automatically unless `wirespeed tune confirm` comes
    /// within this time. A plan that touches the device carrying the
    /// default route, your session or a control connection gets 120s
    /// unless told otherwise.
    #[arg(long, conflicts_with = "no_confirm")]
    confirm_within: Option<String>,
    /// Apply a plan that touches what carries this host without a
    /// confirm deadline (and without the checks after it).
    #[arg(long)]
    no_confirm: bool,
    /// Apply steps marked unverified (an MTU the path was not shown to
    /// carry); the checks after the apply still roll them back if a
    /// full-size packet is lost.
    #[arg(long)]
    force: bool,
}

/// Re-runs this process inside namespace `name` when asked to and not
/// already there; returns only when no re-exec is needed.
pub fn enter_netns(at: &Where) -> Result<()> {
    let Some(name) = &at.netns else { return Ok(()) };
    if std::env::var(NETNS_ENV).ok().as_deref() == Some(name.as_str()) {
        return Ok(());
    }
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bail!("bad namespace name {name:?}");
    }
    if !std::path::Path::new("/run/netns").join(name).exists() {
        bail!("no network namespace {name:?} (see `ip netns list`)");
    }
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--netns" {
            it.next();
        } else if !a.starts_with("--netns=") {
            args.push(a);
        }
    }
    // exec, not spawn: `ip netns exec` replaces this process (and execs
    // wirespeed in turn), so no parent is left to be killed apart from
    // the work, and signals and the exit status reach the caller directly.
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new("ip")
        .args(["netns", "exec", name])
        .arg(&exe)
        .args(&args)
        .env(NETNS_ENV, name)
        .exec();
    Err(anyhow::Error::new(err).context("cannot run `ip netns exec` (is iproute2 installed?)"))
}

fn fs_of(at: &Where) -> Fs {
    at.root.clone().map(Fs::at).unwrap_or_default()
}

pub(crate) fn snapshot(at: &Where) -> Result<Snapshot> {
    let mut s = inspect(&fs_of(at)).context("cannot read the host")?;
    s.netns = std::env::var(NETNS_ENV).ok();
    Ok(s)
}

/// Runs `wirespeed inspect`.
pub fn run_inspect(a: InspectArgs) -> Result<()> {
    enter_netns(&a.at)?;
    if a.at.root.is_none() {
        let st = StateDir::new(default_state_dir(&a.at));
        if let Err(e) = settle(&st, &a.at, false) {
            eprintln!("warning: {e:#}");
        }
    }
    let s = snapshot(&a.at)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", crate::host_render::snapshot(&s));
    }
    Ok(())
}

/// Doctor's JSON.
#[derive(Debug, serde::Serialize)]
struct DoctorReport {
    schema_version: u32,
    netns: Option<String>,
    findings: Vec<Finding>,
    peer_tests: Vec<PeerTest>,
    /// Path MTUs measured toward the gateways and peers.
    paths: Vec<PathMtu>,
}

/// Runs doctor's peer tests (wirespeed-experiment's [`peer::probes`])
/// and turns them into findings ([`peer::findings`]).
fn peer_findings(
    a: &DoctorArgs,
    s: &Snapshot,
    peers: &str,
) -> Result<(Vec<PeerTest>, Vec<Finding>)> {
    let peers: Vec<String> = peers
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if peers.is_empty() {
        bail!("--peer needs at least one address");
    }
    let pairs = peer::local_for(s, &peers);
    let mut cfg = ClientConfig::new(&pairs[0].1);
    cfg.port = a.port;
    if let Some(k) = &a.key_file {
        cfg.key = Some(crate::read_key(k)?);
    }
    let duration = parse_duration(&a.test_duration)?;
    let mut tests = Vec::new();
    for p in peer::probes(&pairs) {
        let r = run_test(&cfg, &p.spec(duration)?, &mut |_| {})
            .with_context(|| format!("peer test {:?} against {} failed", p.name, pairs[0].1))?;
        tests.push(p.result(&r));
    }
    let findings = peer::findings(&tests, pairs.len());
    Ok((tests, findings))
}

/// Runs `wirespeed doctor`.
pub fn run_doctor(a: DoctorArgs) -> Result<()> {
    enter_netns(&a.at)?;
    if a.at.root.is_none() {
        let st = StateDir::new(default_state_dir(&a.at));
        if let Err(e) = settle(&st, &a.at, true) {
            eprintln!("warning: {e:#}");
        }
    }
    let s = snapshot(&a.at)?;
    let paths = if a.no_probe || a.at.root.is_some() {
        vec![]
    } else {
        let peers: Vec<IpAddr> = a
            .peer
            .iter()
            .flat_map(|p| p.split(','))
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        pathmtu::measure_all(&s, &peers)
    };
    let mut findings = diagnose_measured(&s, &a.goal.goal()?, &paths);
    let mut peer_tests = Vec::new();
    if let Some(p) = &a.peer {
        let (t, f) = peer_findings(&a, &s, p)?;
        peer_tests = t;
        findings.splice(0..0, f);
    }
    if a.json {
        let r = DoctorReport {
            schema_version: tune::TUNE_SCHEMA,
            netns: s.netns.clone(),
            findings,
            peer_tests,
            paths,
        };
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", crate::host_render::findings(&findings, &peer_tests));
    }
    Ok(())
}

fn state_dir(a: &StateArgs) -> Result<StateDir> {
    let dir = a
        .state_dir
        .clone()
        .unwrap_or_else(|| default_state_dir(&a.at));
    let wait = parse_duration(&a.lock_wait).context("--lock-wait")?;
    Ok(StateDir::new(dir).with_lock_wait(Duration::from_secs_f64(wait.clamp(0.0, 3600.0))))
}

/// /var/lib/wirespeed/NETNS, or .../host outside a named namespace.
fn default_state_dir(at: &Where) -> PathBuf {
    let ns = std::env::var(NETNS_ENV)
        .ok()
        .or_else(|| at.netns.clone())
        .unwrap_or_else(|| "host".into());
    PathBuf::from("/var/lib/wirespeed").join(ns)
}

/// What is wrong with a journal that needs attention, if anything.
fn journal_problem(j: &tune::Journal) -> Option<String> {
    if j.from_earlier_boot() {
        return Some(
            "the journal is from an earlier boot: the kernel reset its settings at boot; the next tune command retires it"
                .into(),
        );
    }
    let watchdog = match (j.watchdog_pid, j.watchdog_alive()) {
        (Some(p), Some(false)) => format!("its watchdog (pid {p}) is gone"),
        (Some(p), _) => format!("its watchdog (pid {p}) still runs"),
        (None, _) => {
            "no watchdog was recorded (the apply was stopped before it started one)".into()
        }
    };
    if let Some(late) = j.overdue_s() {
        return Some(format!(
            "the confirm deadline passed {late:.0} s ago unconfirmed and {watchdog}: these changes are due to be rolled back; the next wirespeed tune, doctor or optimize rolls them back, or run `wirespeed tune rollback` now"
        ));
    }
    if j.deadline_unix.is_some() && j.watchdog_alive() != Some(true) && j.timer_unit.is_none() {
        return Some(format!(
            "{watchdog}: nothing will roll back at the deadline; confirm, or run `wirespeed tune rollback`"
        ));
    }
    None
}

/// Before a command that reads or changes the host: rolls back a journal
/// left unconfirmed past its deadline (its watchdog died) and retires one
/// from an earlier boot, saying so on stderr. With `roll` false (no root,
/// or a command that only reads) it only warns.
pub(crate) fn settle(st: &StateDir, at: &Where, roll: bool) -> Result<()> {
    let j = match st.load() {
        Ok(Some(j)) => j,
        Ok(None) => return Ok(()),
        // Another user's journal (root's, read by a user): not ours to settle.
        Err(wirespeed_host::HostError::File { error, .. })
            if error.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let Some(problem) = journal_problem(&j) else {
        return Ok(());
    };
    let dir = st.dir().display();
    let due = j.overdue_s().is_some() || j.from_earlier_boot();
    if !roll || !due || !wirespeed_lab::is_root() {
        eprintln!("warning: tune journal in {dir}: {problem}");
        return Ok(());
    }
    let mut host = open_host(at)?;
    match tune::recover(&mut host, st).context("roll back the overdue journal")? {
        tune::Recovered::Nothing => {}
        tune::Recovered::StaleBoot { boot_id } => eprintln!(
            "wirespeed: the tune journal in {dir} is from an earlier boot ({boot_id}): the kernel reset its settings at boot, so it was retired without changing anything"
        ),
        tune::Recovered::RolledBack {
            overdue_s, result, ..
        } => {
            stop_timer(j.timer_unit.as_deref());
            eprintln!(
                "wirespeed: the tune journal in {dir} was left unconfirmed {overdue_s:.0} s past its deadline: rolled it back first ({})",
                rolled_text(&result)
            );
        }
    }
    Ok(())
}

/// "restored N setting(s): ...", plus what was skipped.
fn rolled_text(r: &tune::RolledBack) -> String {
    let mut t = if r.stale_boot {
        "the journal was from an earlier boot: retired without changing anything (the kernel reset its settings at boot)".to_string()
    } else if r.restored.is_empty() && r.skipped.is_empty() {
        "nothing to roll back".to_string()
    } else {
        format!(
            "restored {} setting(s): {}",
            r.restored.len(),
            r.restored.join(", ")
        )
    };
    for (what, why) in &r.skipped {
        t.push_str(&format!(
            "\nwarning: skipped {what}: {why} (it no longer exists)"
        ));
    }
    t
}

/// Tune's changing commands need root (CAP_NET_ADMIN and /proc/sys writes).
fn need_root() -> Result<()> {
    if !wirespeed_lab::is_root() {
        bail!(
            "tune changes kernel settings: run it as root (or under sudo); `tune plan` works without"
        );
    }
    Ok(())
}

pub(crate) fn open_host(at: &Where) -> Result<Host> {
    Host::open(fs_of(at)).context("cannot open netlink")
}

/// A plan and what it was judged by.
struct Planned {
    host: Host,
    plan: tune::Plan,
    snap: Snapshot,
    peers: Vec<IpAddr>,
}

fn peer_addrs(a: &TuneArgs) -> Result<Vec<IpAddr>> {
    a.peers
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<IpAddr>()
                .with_context(|| format!("--peer {p:?} is not an IP address"))
        })
        .collect()
}

/// Builds the plan (a profile's, or doctor's fixes), measures the path
/// MTU where a step raises one, and marks the steps that touch what
/// carries this host and those nothing shows to be safe.
fn make_plan(a: &TuneArgs) -> Result<Planned> {
    let snap = snapshot(&a.state.at)?;
    let peers = peer_addrs(a)?;
    let probe = a.state.at.root.is_none();
    let mut paths: Option<Vec<PathMtu>> = None;
    let (source, actions) = match &a.profile {
        Some(p) => {
            let prof = profiles::load(p)?;
            (
                format!("profile {p}"),
                profiles::actions(&prof, &a.devs, &snap)?,
            )
        }
        None => {
            let measured = if probe {
                pathmtu::measure_all(&snap, &peers)
            } else {
                vec![]
            };
            let f = diagnose_measured(&snap, &a.goal.goal()?, &measured);
            paths = Some(measured);
            (
                "doctor".to_string(),
                f.into_iter().flat_map(|f| f.actions).collect(),
            )
        }
    };
    let mut host = open_host(&a.state.at)?;
    let mut plan = host.plan(&source, actions, &snap)?;
    let raises_mtu = plan.steps.iter().any(|s| {
        !s.no_op
            && matches!(s.action.setting, Setting::Mtu { .. })
            && s.action.value.parse::<u32>().ok() > s.current.parse::<u32>().ok()
    });
    let paths = match paths {
        Some(p) => p,
        None if raises_mtu && probe => pathmtu::measure_all(&snap, &peers),
        None => vec![],
    };
    let carriers = if probe {
        guard::carriers(&snap, wirespeed_engine::DEFAULT_PORT)
    } else {
        vec![]
    };
    guard::mark(&mut plan, &carriers, &paths);
    Ok(Planned {
        host,
        plan,
        snap,
        peers,
    })
}

/// Runs `wirespeed tune ...`.
pub fn run_tune(c: TuneCmd) -> Result<()> {
    match c {
        TuneCmd::Plan(a) => {
            enter_netns(&a.state.at)?;
            settle(&state_dir(&a.state)?, &a.state.at, true)?;
            let plan = make_plan(&a)?.plan;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&plan)?);
            } else {
                print!("{}", crate::host_render::plan(&plan));
            }
        }
        TuneCmd::Apply(a) => {
            need_root()?;
            enter_netns(&a.plan.state.at)?;
            let asked = a
                .confirm_within
                .as_deref()
                .map(parse_duration)
                .transpose()
                .context("--confirm-within")?
                .map(Duration::from_secs_f64);
            if asked.is_some_and(|d| d < Duration::from_secs(1)) {
                bail!("--confirm-within must be at least 1s");
            }
            let st = state_dir(&a.plan.state)?;
            settle(&st, &a.plan.state.at, true)?;
            let Planned {
                mut host,
                mut plan,
                snap,
                peers,
            } = make_plan(&a.plan)?;
            // Unverified steps wait for --force: moved to the skipped list.
            let steps = std::mem::take(&mut plan.steps);
            for s in steps {
                match (&s.unverified, s.no_op, a.force) {
                    (Some(u), false, false) => plan
                        .skipped
                        .push((s.action, format!("UNVERIFIED: {u}; --force applies it"))),
                    _ => plan.steps.push(s),
                }
            }
            if !a.plan.json {
                print!("{}", crate::host_render::plan(&plan));
            }
            let risky = guard::touches_carrier(&plan);
            let deadline = match (asked, a.no_confirm) {
                (Some(d), _) => Some(d),
                (None, false) if risky => {
                    println!(
                        "this plan touches what carries this host: it rolls back in {} s unless confirmed (--confirm-within to choose, --no-confirm to apply without)",
                        guard::DEFAULT_CONFIRM.as_secs()
                    );
                    Some(guard::DEFAULT_CONFIRM)
                }
                _ => None,
            };
            // What answers now is what must answer after (with a deadline).
            let checks = match deadline {
                Some(_) if a.plan.state.at.root.is_none() => Checks::before(&snap, &peers),
                _ => Checks::default(),
            };
            // From the lock to the recorded watchdog, SIGINT/SIGTERM/SIGHUP
            // wait: Ctrl-C gives a whole, journaled, guarded apply, never
            // half of one (they act once it is done).
            let lock = st.lock().context("tune apply failed")?;
            let held = crate::sys::hold_signals();
            let done = tune::apply_locked(&mut host, &st, &lock, &plan, deadline)
                .context("tune apply failed")?;
            if done.changed.is_empty() {
                drop(held);
                if plan.skipped.is_empty() {
                    println!("nothing to change: every value is already set");
                } else {
                    println!("nothing changed: every step is set already or skipped (above)");
                }
                return Ok(());
            }
            let mut guard = None;
            if let Some(d) = deadline {
                let pid = match spawn_watchdog(&a.plan.state, &st) {
                    Ok(pid) => pid,
                    Err(e) => {
                        let _ = tune::rollback_locked(&mut host, &st, &lock);
                        return Err(e.context("so the changes were rolled back at once"));
                    }
                };
                let timer = arm_timer(&st, d);
                tune::record_guards(&st, &lock, Some(pid), timer.clone())
                    .context("record the watchdog in the journal")?;
                guard = Some((d, pid, timer));
            }
            drop(lock);
            drop(held);
            for s in &done.side_effects {
                println!("  the kernel also changed {s} (journaled: rollback restores it)");
            }
            if let Some((d, _, _)) = &guard {
                for s in &checks.silent {
                    println!("  not checked (did not answer before the apply): {s}");
                }
                let window = (*d / 3).clamp(Duration::from_secs(1), Duration::from_secs(10));
                match checks.after(&plan, window) {
                    Ok(passed) => {
                        for p in passed {
                            println!("  check passed: {p}");
                        }
                    }
                    Err(failed) => {
                        let r = tune::rollback(&mut host, &st).context(
                            "a check failed after the apply, and the rollback failed too",
                        )?;
                        stop_timer(guard.as_ref().and_then(|g| g.2.as_deref()));
                        bail!(
                            "check failed after the apply: {failed}\nrolled back at once: {}",
                            rolled_text(&r)
                        );
                    }
                }
            }
            if let Some((d, pid, timer)) = guard {
                println!(
                    "applied {} change(s); they roll back in {:.0} s unless `wirespeed tune confirm{}` runs (watchdog pid {pid}{})",
                    done.changed.len(),
                    d.as_secs_f64(),
                    state_flag(&a.plan.state),
                    timer
                        .map(|u| format!(", systemd timer {u}.timer"))
                        .unwrap_or_default()
                );
            } else {
                println!(
                    "applied {} change(s); journal in {} (undo: wirespeed tune rollback{})",
                    done.changed.len(),
                    st.dir().display(),
                    state_flag(&a.plan.state)
                );
            }
        }
        TuneCmd::Confirm(a) => {
            enter_netns(&a.at)?;
            match tune::confirm(&state_dir(&a)?)? {
                Some(j) if j.deadline_unix.is_some() => {
                    stop_timer(j.timer_unit.as_deref());
                    println!(
                        "confirmed: the automatic rollback is cancelled (wirespeed tune rollback still restores)"
                    );
                }
                _ => println!("nothing waits for confirmation"),
            }
        }
        TuneCmd::Rollback(a) => {
            need_root()?;
            enter_netns(&a.state.at)?;
            let st = state_dir(&a.state)?;
            let timer = st.load().ok().flatten().and_then(|j| j.timer_unit);
            let mut host = open_host(&a.state.at)?;
            if a.if_overdue {
                if let Some(r) = tune::rollback_if_overdue(&mut host, &st)? {
                    println!("{}", rolled_text(&r));
                }
                return Ok(());
            }
            let r = tune::rollback(&mut host, &st)?;
            stop_timer(timer.as_deref());
            println!("{}", rolled_text(&r));
        }
        TuneCmd::Status(a) => {
            enter_netns(&a.at)?;
            let st = state_dir(&a)?;
            // A deadline without a watchdog: an apply may be between the
            // two; its lock (when ours to take) gives the settled journal.
            let unguarded = st
                .load()?
                .is_some_and(|j| j.deadline_unix.is_some() && j.watchdog_pid.is_none());
            let _lock = if unguarded { st.lock().ok() } else { None };
            match st.load()? {
                None => println!("no journal: wirespeed has changed nothing here"),
                Some(j) => {
                    print!("{}", crate::host_render::journal(&j));
                    if let Some(p) = journal_problem(&j) {
                        bail!("{p}");
                    }
                }
            }
        }
        TuneCmd::Watchdog(a) => {
            crate::sys::detach();
            let mut host = open_host(&a.at)?;
            let st = state_dir(&a)?;
            let log = st.dir().join("watchdog.log");
            let line = match tune::watch(&mut host, &st) {
                Ok(tune::Watched::RolledBack(r)) => format!(
                    "deadline passed without confirmation: rolled back ({})",
                    rolled_text(&r)
                ),
                Ok(tune::Watched::Nothing) => {
                    "confirmed or rolled back by hand: nothing to do".to_string()
                }
                Err(e) => format!("rollback failed: {e}"),
            };
            let _ = std::fs::write(log, format!("{line}\n"));
        }
    }
    Ok(())
}

fn state_flag(a: &StateArgs) -> String {
    let mut s = String::new();
    if let Some(n) = std::env::var(NETNS_ENV).ok().or_else(|| a.at.netns.clone()) {
        s.push_str(&format!(" --netns {n}"));
    }
    if let Some(d) = &a.state_dir {
        s.push_str(&format!(" --state-dir {}", d.display()));
    }
    s
}

/// Starts the detached watchdog that rolls back at the deadline; returns its pid.
fn spawn_watchdog(a: &StateArgs, st: &StateDir) -> Result<u32> {
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["tune", "watchdog", "--state-dir"]).arg(st.dir());
    if let Some(r) = &a.at.root {
        cmd.arg("--root").arg(r);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().context("cannot start the rollback watchdog")?;
    Ok(child.id())
}

/// A second, independent way for the deadline to fire where systemd is
/// the init system: a transient timer running `wirespeed tune rollback
/// --if-overdue` a second after the deadline. None (and nothing done)
/// elsewhere, or when systemd-run fails.
fn arm_timer(st: &StateDir, d: Duration) -> Option<String> {
    if !std::path::Path::new("/run/systemd/system").is_dir() {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    let dir = std::fs::canonicalize(st.dir()).ok()?;
    let unit = format!(
        "wirespeed-rollback-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|t| t.as_secs())
            .unwrap_or(0)
    );
    let mut cmd = std::process::Command::new("systemd-run");
    cmd.args(["--quiet", "--collect", "--unit", &unit])
        .arg(format!("--on-active={}", d.as_secs() + 1))
        .arg("--timer-property=AccuracySec=1s")
        .arg(exe)
        .args(["tune", "rollback", "--if-overdue", "--state-dir"])
        .arg(dir);
    if let Ok(ns) = std::env::var(NETNS_ENV) {
        cmd.args(["--netns", &ns]);
    }
    let ok = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(unit)
}

/// Stops a backup timer armed by [`arm_timer`] (best effort: it only
/// ever rolls back an overdue journal anyway).
fn stop_timer(unit: Option<&str>) {
    if let Some(u) = unit {
        let _ = std::process::Command::new("systemctl")
            .args(["stop", &format!("{u}.timer")])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}
