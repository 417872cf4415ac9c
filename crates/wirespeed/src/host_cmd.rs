//! `wirespeed inspect`, `doctor` and `tune`: flags, then wirespeed-host's
//! tune session (`session`) and its renderings; `--netns` re-runs
//! this binary there through wirespeed-host's typed helper
//! (`reentry::enter_netns`, which also remounts /sys for that namespace).

use anyhow::{Context, Result, bail};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_engine::spec::{parse_duration, parse_rate};
use wirespeed_experiment::peer::{self, DoctorRequest};
use wirespeed_host::Snapshot;
use wirespeed_host::doctor::Goal;
use wirespeed_host::reentry::{self, current_netns};
use wirespeed_host::session::{self, ApplyOptions, Place, PlanRequest, Show};
use wirespeed_host::tune::{JournalCheck, Plan, StateDir};

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

/// Re-runs this process inside namespace `--netns` when asked to and
/// not already there; returns only when no re-run is needed.
pub fn enter_netns(at: &Where) -> Result<()> {
    match &at.netns {
        Some(name) => Ok(reentry::enter_netns(name)?),
        None => Ok(()),
    }
}

impl Where {
    /// Where a session runs (after [`enter_netns`]).
    pub fn place(&self) -> Place {
        Place {
            root: self.root.clone(),
            netns: current_netns(),
        }
    }
}

/// The terminal: the plan rendered, lines on stdout, warnings on stderr.
pub struct Terminal {
    /// Print the plan (not with --json).
    pub show_plan: bool,
}

impl Show for Terminal {
    fn plan(&mut self, plan: &Plan) {
        if self.show_plan {
            print!("{}", wirespeed_report::host::plan(plan));
        }
    }
    fn line(&mut self, text: &str) {
        println!("{text}");
    }
    fn warn(&mut self, text: &str) {
        eprintln!("{text}");
    }
}

/// Settles the journal of `at` before a command (see [`session::settle`]);
/// a failure is a warning.
pub(crate) fn settle_first(at: &Where, roll: bool) {
    if at.root.is_none() {
        let place = at.place();
        let st = StateDir::new(default_state_dir(at));
        session::settle_or_warn(&st, &place, roll, &mut Terminal { show_plan: false });
    }
}

pub(crate) fn snapshot(at: &Where) -> Result<Snapshot> {
    Ok(at.place().snapshot()?)
}

/// Runs `wirespeed inspect`.
pub fn run_inspect(a: InspectArgs) -> Result<()> {
    enter_netns(&a.at)?;
    settle_first(&a.at, false);
    let s = snapshot(&a.at)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", wirespeed_report::host::snapshot(&s));
    }
    Ok(())
}

/// What `wirespeed doctor` asks of wirespeed-experiment's doctor.
fn doctor_request(a: &DoctorArgs) -> Result<DoctorRequest> {
    Ok(DoctorRequest {
        goal: a.goal.goal()?,
        peers: a.peer.as_ref().map(|p| {
            p.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()
        }),
        port: a.port,
        key: a.key_file.as_deref().map(crate::read_key).transpose()?,
        test_duration: parse_duration(&a.test_duration)?,
        probe: !a.no_probe,
    })
}

/// Runs `wirespeed doctor`.
pub fn run_doctor(a: DoctorArgs) -> Result<()> {
    enter_netns(&a.at)?;
    settle_first(&a.at, true);
    let r = peer::doctor(&a.at.place(), &doctor_request(&a)?)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!(
            "{}",
            wirespeed_report::host::findings(&r.findings, &r.peer_tests)
        );
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
    Place::live(current_netns().or_else(|| at.netns.clone())).default_state_dir()
}

/// Tune's changing commands need root (CAP_NET_ADMIN and /proc/sys writes).
fn need_root() -> Result<()> {
    crate::need_root(
        "tune changes kernel settings: run it as root (or under sudo); `tune plan` works without",
    )
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

/// What `tune plan` and `tune apply` make the plan from.
fn plan_request(a: &TuneArgs) -> Result<PlanRequest> {
    Ok(PlanRequest {
        profile: a.profile.clone(),
        devs: a.devs.clone(),
        peers: peer_addrs(a)?,
        goal: a.goal.goal()?,
        control_port: wirespeed_engine::DEFAULT_PORT,
    })
}

/// The guards of `tune apply` from its flags.
fn apply_options(a: &ApplyArgs) -> Result<ApplyOptions> {
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
    Ok(ApplyOptions {
        confirm_within: asked,
        no_confirm: a.no_confirm,
        force: a.force,
        hint: state_flag(&a.plan.state),
    })
}

/// Runs `wirespeed tune ...`.
pub fn run_tune(c: TuneCmd) -> Result<()> {
    let mut term = Terminal { show_plan: true };
    match c {
        TuneCmd::Plan(a) => {
            enter_netns(&a.state.at)?;
            let place = a.state.at.place();
            session::settle(&state_dir(&a.state)?, &place, true, &mut term)?;
            let plan = session::make_plan(&place, &plan_request(&a)?)?.plan;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&plan)?);
            } else {
                print!("{}", wirespeed_report::host::plan(&plan));
            }
        }
        TuneCmd::Apply(a) => {
            need_root()?;
            enter_netns(&a.plan.state.at)?;
            let o = apply_options(&a)?;
            let st = state_dir(&a.plan.state)?;
            term.show_plan = !a.plan.json;
            let place = a.plan.state.at.place();
            session::apply(&st, &place, &plan_request(&a.plan)?, &o, &mut term)?;
        }
        TuneCmd::Confirm(a) => {
            enter_netns(&a.at)?;
            if session::confirm(&state_dir(&a)?)? {
                println!(
                    "confirmed: the automatic rollback is cancelled (wirespeed tune rollback still restores)"
                );
            } else {
                println!("nothing waits for confirmation");
            }
        }
        TuneCmd::Rollback(a) => {
            need_root()?;
            enter_netns(&a.state.at)?;
            let st = state_dir(&a.state)?;
            if let Some(text) = session::rollback(&st, &a.state.at.place(), a.if_overdue)? {
                println!("{text}");
            }
        }
        TuneCmd::Status(a) => {
            enter_netns(&a.at)?;
            match session::status(&state_dir(&a)?)? {
                None => println!("no journal: wirespeed has changed nothing here"),
                Some(j) => {
                    let text = wirespeed_report::host::journal(
                        &j,
                        j.watchdog_alive(),
                        j.from_earlier_boot(),
                    );
                    print!("{text}");
                    if let Some(p) = session::journal_problem(&j) {
                        bail!("{p}");
                    }
                }
            }
        }
        TuneCmd::Watchdog(a) => session::watchdog(&state_dir(&a)?, &a.at.place())?,
    }
    Ok(())
}

/// The flags that name this journal, for the hints printed.
fn state_flag(a: &StateArgs) -> String {
    let mut s = String::new();
    if let Some(n) = current_netns().or_else(|| a.at.netns.clone()) {
        s.push_str(&format!(" --netns {n}"));
    }
    if let Some(d) = &a.state_dir {
        s.push_str(&format!(" --state-dir {}", d.display()));
    }
    s
}
