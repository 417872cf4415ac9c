//! The flags of `wirespeed inspect`, `doctor` and `tune`, and the tune
//! requests they make.

use anyhow::{Context, Result, bail};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_experiment::doctor_peer::DoctorRequest;
use wirespeed_host::doctor::Goal;
use wirespeed_host::reentry::current_netns;
use wirespeed_host::session::{ApplyOptions, Place, PlanRequest};
use wirespeed_host::tune::StateDir;
use wirespeed_types::spec::{parse_duration, parse_rate};

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
    /// Where: this host, a namespace, a recorded tree.
    #[command(flatten)]
    pub at: Where,
    /// Print the snapshot as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `wirespeed doctor`.
#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// Where: this host, a namespace, a recorded tree.
    #[command(flatten)]
    pub at: Where,
    /// What to diagnose for.
    #[command(flatten)]
    pub goal: GoalArgs,
    /// A `wirespeed serve` to measure against: one address per peer NIC,
    /// comma-separated; a short test per path names the bottleneck.
    #[arg(long)]
    pub peer: Option<String>,
    /// Control port of the peer.
    #[arg(long, default_value_t = wirespeed_engine::DEFAULT_PORT)]
    pub port: u16,
    /// Key file when the peer requires one.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Length of each peer test.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "2s")]
    pub test_duration: String,
    /// Do not probe the path MTU toward the gateway and peers (MTU
    /// advice then comes out unverified).
    #[arg(long)]
    pub no_probe: bool,
    /// Print findings as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What doctor and tune size things for.
#[derive(clap::Args, Debug, Clone)]
pub struct GoalArgs {
    /// Wanted throughput (e.g. 40gbit); default: the sum of the NICs' speeds.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long)]
    pub goal: Option<String>,
    /// Round-trip time to size socket buffers for.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "500us")]
    pub rtt: String,
    /// The work is request/response (latency), not bulk.
    #[arg(long)]
    pub rr: bool,
}

impl GoalArgs {
    /// The goal the flags name.
    pub fn goal(&self) -> Result<Goal> {
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
    /// Where the host is.
    #[command(flatten)]
    pub at: Where,
    /// Journal directory (default /var/lib/wirespeed/NETNS or .../host).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// How long to wait for another tune command holding the journal's lock.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "30s")]
    pub lock_wait: String,
}

/// Options of `tune rollback`.
#[derive(clap::Args, Debug, Clone)]
pub struct RollbackArgs {
    /// The host and its state directory.
    #[command(flatten)]
    pub state: StateArgs,
    /// (internal, the backup timer) roll back only when the journal is
    /// still unconfirmed past its deadline.
    #[arg(long, hide = true)]
    pub if_overdue: bool,
}

/// Options of `tune plan`.
#[derive(clap::Args, Debug, Clone)]
pub struct TuneArgs {
    /// The host and its state directory.
    #[command(flatten)]
    pub state: StateArgs,
    /// What to tune for.
    #[command(flatten)]
    pub goal: GoalArgs,
    /// A profile (throughput, latency, tpu-multinic, bulk-multinic) or a
    /// profile file; default: the fixes of doctor's findings.
    #[arg(long)]
    pub profile: Option<String>,
    /// NICs a profile's link settings apply to (repeat; default: all in use).
    #[arg(long = "dev")]
    pub devs: Vec<String>,
    /// Addresses beyond this host that must stay reachable (repeat or
    /// comma-separate): their path MTU is measured before an MTU change,
    /// and they are checked after an apply, like the default gateway.
    #[arg(long = "peer", value_delimiter = ',')]
    pub peers: Vec<String>,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `tune apply`.
#[derive(clap::Args, Debug, Clone)]
pub struct ApplyArgs {
    /// What to plan.
    #[command(flatten)]
    pub plan: TuneArgs,
    /// Roll back automatically unless `wirespeed tune confirm` comes
    /// within this time. A plan that touches the device carrying the
    /// default route, your session or a control connection gets 120s
    /// unless told otherwise.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, conflicts_with = "no_confirm")]
    pub confirm_within: Option<String>,
    /// Apply a plan that touches what carries this host without a
    /// confirm deadline (and without the checks after it).
    #[arg(long)]
    pub no_confirm: bool,
    /// Apply steps marked unverified (an MTU the path was not shown to
    /// carry); the checks after the apply still roll them back if a
    /// full-size packet is lost.
    #[arg(long)]
    pub force: bool,
}

impl Where {
    /// Where a session runs (after `wirespeed_host::reentry::enter_netns`).
    pub fn place(&self) -> Place {
        Place {
            root: self.root.clone(),
            netns: current_netns(),
        }
    }
}

/// What `wirespeed doctor` asks of wirespeed-experiment's doctor.
pub fn doctor_request(a: &DoctorArgs) -> Result<DoctorRequest> {
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

/// The tune state directory the flags name (the default for the place).
pub fn state_dir(a: &StateArgs) -> Result<StateDir> {
    let dir = a
        .state_dir
        .clone()
        .unwrap_or_else(|| default_state_dir(&a.at));
    let wait = parse_duration(&a.lock_wait).context("--lock-wait")?;
    Ok(StateDir::new(dir).with_lock_wait(Duration::from_secs_f64(wait.clamp(0.0, 3600.0))))
}

/// /var/lib/wirespeed/NETNS, or .../host outside a named namespace.
pub fn default_state_dir(at: &Where) -> PathBuf {
    Place::live(current_netns().or_else(|| at.netns.clone())).default_state_dir()
}

/// The peers `--peer` names, as addresses.
pub fn peer_addrs(a: &TuneArgs) -> Result<Vec<IpAddr>> {
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
pub fn plan_request(a: &TuneArgs) -> Result<PlanRequest> {
    Ok(PlanRequest {
        profile: a.profile.clone(),
        devs: a.devs.clone(),
        peers: peer_addrs(a)?,
        goal: a.goal.goal()?,
        control_port: wirespeed_engine::DEFAULT_PORT,
    })
}

/// The guards of `tune apply` from its flags.
pub fn apply_options(a: &ApplyArgs) -> Result<ApplyOptions> {
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

/// The flags that name this journal, for the hints printed.
pub fn state_flag(a: &StateArgs) -> String {
    let mut s = String::new();
    if let Some(n) = current_netns().or_else(|| a.at.netns.clone()) {
        s.push_str(&format!(" --netns {n}"));
    }
    if let Some(d) = &a.state_dir {
        s.push_str(&format!(" --state-dir {}", d.display()));
    }
    s
}
