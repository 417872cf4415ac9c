//! A tune session, the one API that changes a host: settle a journal
//! left behind, make the plan (a profile's, or doctor's fixes) under the
//! state directory's lock, apply it with a journal, start the confirm
//! watchdog and the systemd backup timer, check the gateway and peers
//! after, confirm, roll back, show the journal's status, and the
//! watchdog's own loop. The binary's `tune`, `inspect` and `doctor`,
//! optimize and the experiment runner all call these functions; inside a
//! lab namespace they run on a thread that [`crate::netns::run_in_with_sys`]
//! put there. What they print goes through [`Show`].

use crate::doctor::{Goal, diagnose_measured};
use crate::guard::{self, Checks};
use crate::pathmtu::{self, PathMtu};
use crate::reentry::Reentry;
use crate::tune::{
    self, Host, Journal, JournalCheck, Plan, Recovered, RolledBack, Setting, StateDir,
};
use crate::{Fs, HostError, Snapshot, inspect, profiles};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a session's lines go: the plan (which the caller renders),
/// lines for stdout and warnings for stderr.
pub trait Show {
    /// The plan about to be applied (before any change).
    fn plan(&mut self, plan: &Plan);
    /// A line of the session's output.
    fn line(&mut self, text: &str);
    /// A warning.
    fn warn(&mut self, text: &str);
}

/// Where a session runs: the tree /proc and /sys are read under, and the
/// named namespace it is in (None: the namespace it was started in).
#[derive(Debug, Clone, Default)]
pub struct Place {
    /// /proc and /sys under this directory instead of / (a recorded
    /// tree): nothing is then probed.
    pub root: Option<PathBuf>,
    /// The named network namespace, for the snapshot and the hints.
    pub netns: Option<String>,
}

impl Place {
    /// The host itself, or namespace `netns` (entered already).
    pub fn live(netns: Option<String>) -> Place {
        Place {
            netns,
            ..Place::default()
        }
    }

    /// The tree /proc and /sys are read under.
    pub fn fs(&self) -> Fs {
        self.root.clone().map(Fs::at).unwrap_or_default()
    }

    /// True when reading a recorded tree, not the running host.
    pub fn recorded(&self) -> bool {
        self.root.is_some()
    }

    /// /var/lib/wirespeed/NETNS, or .../host outside a named namespace.
    pub fn default_state_dir(&self) -> PathBuf {
        PathBuf::from("/var/lib/wirespeed").join(self.netns.as_deref().unwrap_or("host"))
    }

    /// Reads the host into a snapshot.
    pub fn snapshot(&self) -> Result<Snapshot, HostError> {
        let mut s = inspect(&self.fs()).map_err(|e| e.within("cannot read the host"))?;
        s.netns = self.netns.clone();
        Ok(s)
    }

    /// Opens netlink sockets here.
    pub fn open_host(&self) -> Result<Host, HostError> {
        Host::open(self.fs()).map_err(|e| e.within("cannot open netlink"))
    }
}

/// What a plan is made from.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// A profile name or file; None: the fixes of doctor's findings.
    pub profile: Option<String>,
    /// NICs a profile's link settings apply to (empty: all in use).
    pub devs: Vec<String>,
    /// Addresses beyond this host that must stay reachable.
    pub peers: Vec<IpAddr>,
    /// What doctor sizes things for.
    pub goal: Goal,
    /// The control port of wirespeed's own servers (a connection to it
    /// is a control connection that must survive the change).
    pub control_port: u16,
}

/// A plan and what it was judged by.
pub struct Planned {
    /// The host it was read from.
    pub host: Host,
    /// The plan.
    pub plan: Plan,
    /// The snapshot it was made from.
    pub snap: Snapshot,
}

/// What is wrong with a journal that needs attention, if anything.
pub fn journal_problem(j: &Journal) -> Option<String> {
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
/// from an earlier boot, saying so. With `roll` false (a command that
/// only reads), or without root, it only warns.
pub fn settle(st: &StateDir, at: &Place, roll: bool, show: &mut dyn Show) -> Result<(), HostError> {
    let j = match st.load() {
        Ok(Some(j)) => j,
        Ok(None) => return Ok(()),
        // Another user's journal (root's, read by a user): not ours to settle.
        Err(HostError::File { error, .. })
            if error.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let Some(problem) = journal_problem(&j) else {
        return Ok(());
    };
    let dir = st.dir().display();
    let due = j.overdue_s().is_some() || j.from_earlier_boot();
    if !roll || !due || !crate::is_root() {
        show.warn(&format!("warning: tune journal in {dir}: {problem}"));
        return Ok(());
    }
    let mut host = at.open_host()?;
    let recovered =
        tune::recover(&mut host, st).map_err(|e| e.within("roll back the overdue journal"))?;
    match recovered {
        Recovered::Nothing => {}
        Recovered::StaleBoot { boot_id } => show.warn(&format!(
            "wirespeed: the tune journal in {dir} is from an earlier boot ({boot_id}): the kernel reset its settings at boot, so it was retired without changing anything"
        )),
        Recovered::RolledBack {
            overdue_s, result, ..
        } => {
            stop_timer(j.timer_unit.as_deref());
            show.warn(&format!(
                "wirespeed: the tune journal in {dir} was left unconfirmed {overdue_s:.0} s past its deadline: rolled it back first ({})",
                rolled_text(&result)
            ));
        }
    }
    Ok(())
}

/// [`settle`] for a command that goes on whatever it finds: a failure
/// becomes a warning.
pub fn settle_or_warn(st: &StateDir, at: &Place, roll: bool, show: &mut dyn Show) {
    if let Err(e) = settle(st, at, roll, show) {
        show.warn(&format!("warning: {e}"));
    }
}

/// "restored N setting(s): ...", plus what was skipped.
pub fn rolled_text(r: &RolledBack) -> String {
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

/// Builds the plan (a profile's, or doctor's fixes), measures the path
/// MTU where a step raises one, and marks the steps that touch what
/// carries this host and those nothing shows to be safe.
pub fn make_plan(at: &Place, req: &PlanRequest) -> Result<Planned, HostError> {
    let snap = at.snapshot()?;
    let probe = !at.recorded();
    let mut paths: Option<Vec<PathMtu>> = None;
    let (source, actions) = match &req.profile {
        Some(p) => {
            let prof = profiles::load(p)?;
            (
                format!("profile {p}"),
                profiles::actions(&prof, &req.devs, &snap)?,
            )
        }
        None => {
            let measured = if probe {
                pathmtu::measure_all(&snap, &req.peers)
            } else {
                vec![]
            };
            let f = diagnose_measured(&snap, &req.goal, &measured);
            paths = Some(measured);
            (
                "doctor".to_string(),
                f.into_iter().flat_map(|f| f.actions).collect(),
            )
        }
    };
    let mut host = at.open_host()?;
    let mut plan = host.plan(&source, actions, &snap)?;
    let raises_mtu = plan.steps.iter().any(|s| {
        !s.no_op
            && matches!(s.action.setting, Setting::Mtu { .. })
            && s.action.value.parse::<u32>().ok() > s.current.parse::<u32>().ok()
    });
    let paths = match paths {
        Some(p) => p,
        None if raises_mtu && probe => pathmtu::measure_all(&snap, &req.peers),
        None => vec![],
    };
    let carriers = if probe {
        guard::carriers(&snap, req.control_port)
    } else {
        vec![]
    };
    guard::mark(&mut plan, &carriers, &paths);
    Ok(Planned { host, plan, snap })
}

/// How an apply is guarded.
#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    /// Roll back unless confirmed within this time.
    pub confirm_within: Option<Duration>,
    /// A plan that touches what carries the host applies without a
    /// deadline (and without the checks after it).
    pub no_confirm: bool,
    /// Apply steps marked unverified.
    pub force: bool,
    /// How the state directory is named in the hints printed (`--netns
    /// NS --state-dir DIR`), so the user can type them back.
    pub hint: String,
}

/// What an apply did, in short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Settings changed now.
    pub changed: usize,
}

/// Moves the unverified steps to the skipped list unless `force`.
fn hold_unverified(plan: &mut Plan, force: bool) {
    let steps = std::mem::take(&mut plan.steps);
    for s in steps {
        match (&s.unverified, s.no_op, force) {
            (Some(u), false, false) => plan
                .skipped
                .push((s.action, format!("UNVERIFIED: {u}; --force applies it"))),
            _ => plan.steps.push(s),
        }
    }
}

/// The confirm deadline: the one asked for, or the default one when the
/// plan touches what carries the host (said on `show`).
fn deadline_of(o: &ApplyOptions, plan: &Plan, show: &mut dyn Show) -> Option<Duration> {
    match (o.confirm_within, o.no_confirm) {
        (Some(d), _) => Some(d),
        (None, false) if guard::touches_carrier(plan) => {
            show.line(&format!(
                "this plan touches what carries this host: it rolls back in {} s unless confirmed (--confirm-within to choose, --no-confirm to apply without)",
                guard::DEFAULT_CONFIRM.as_secs()
            ));
            Some(guard::DEFAULT_CONFIRM)
        }
        _ => None,
    }
}

/// The rollback guards of an apply with a deadline.
struct Guards {
    deadline: Duration,
    pid: u32,
    timer: Option<String>,
}

/// Plans and applies under the state directory's lock (so another apply
/// cannot change the host between this plan's reads and its journal),
/// starts the watchdog and the backup timer when there is a deadline,
/// then checks the gateway and peers and rolls back at once if one fails.
pub fn apply(
    st: &StateDir,
    at: &Place,
    req: &PlanRequest,
    o: &ApplyOptions,
    show: &mut dyn Show,
) -> Result<Outcome, HostError> {
    settle(st, at, true, show)?;
    let failed = |e: HostError| e.within("tune apply failed");
    // The plan is made, and every old value read, under the lock: another
    // apply that ran meanwhile has changed the host (and maybe, as a side
    // effect, what this plan would take for an original value).
    let lock = st.lock().map_err(failed)?;
    let Planned {
        mut host,
        mut plan,
        snap,
    } = make_plan(at, req)?;
    hold_unverified(&mut plan, o.force);
    show.plan(&plan);
    let deadline = deadline_of(o, &plan, show);
    // What answers now is what must answer after (with a deadline).
    let checks = match deadline {
        Some(_) if !at.recorded() => Checks::before(&snap, &req.peers),
        _ => Checks::default(),
    };
    // From here to the recorded watchdog, SIGINT/SIGTERM/SIGHUP wait:
    // Ctrl-C gives a whole, journaled, guarded apply, never half of one
    // (they act once it is done).
    let held = crate::sys::hold_signals();
    let done = tune::apply_locked(&mut host, st, &lock, &plan, deadline).map_err(failed)?;
    if done.changed.is_empty() {
        drop(held);
        show.line(if plan.skipped.is_empty() {
            "nothing to change: every value is already set"
        } else {
            "nothing changed: every step is set already or skipped (above)"
        });
        return Ok(Outcome { changed: 0 });
    }
    let mut guards = None;
    if let Some(d) = deadline {
        let pid = match spawn_watchdog(st, at) {
            Ok(pid) => pid,
            Err(e) => {
                let _ = tune::rollback_locked(&mut host, st, &lock);
                return Err(e.within("so the changes were rolled back at once"));
            }
        };
        let timer = arm_timer(st, d, at);
        tune::record_guards(st, &lock, Some(pid), timer.clone())
            .map_err(|e| e.within("record the watchdog in the journal"))?;
        guards = Some(Guards {
            deadline: d,
            pid,
            timer,
        });
    }
    drop(lock);
    drop(held);
    for s in &done.side_effects {
        show.line(&format!(
            "  the kernel also changed {s} (journaled: rollback restores it)"
        ));
    }
    if let Some(g) = &guards {
        check_after(&mut host, st, &plan, &checks, g, show)?;
    }
    let n = done.changed.len();
    match guards {
        Some(Guards {
            deadline,
            pid,
            timer,
        }) => show.line(&format!(
            "applied {n} change(s); they roll back in {:.0} s unless `wirespeed tune confirm{}` runs (watchdog pid {pid}{})",
            deadline.as_secs_f64(),
            o.hint,
            timer
                .map(|u| format!(", systemd timer {u}.timer"))
                .unwrap_or_default()
        )),
        None => show.line(&format!(
            "applied {n} change(s); journal in {} (undo: wirespeed tune rollback{})",
            st.dir().display(),
            o.hint
        )),
    }
    Ok(Outcome { changed: n })
}

/// The checks after a guarded apply; a failure rolls back at once.
fn check_after(
    host: &mut Host,
    st: &StateDir,
    plan: &Plan,
    checks: &Checks,
    g: &Guards,
    show: &mut dyn Show,
) -> Result<(), HostError> {
    for s in &checks.silent {
        show.line(&format!(
            "  not checked (did not answer before the apply): {s}"
        ));
    }
    let window = (g.deadline / 3).clamp(Duration::from_secs(1), Duration::from_secs(10));
    match checks.after(plan, window) {
        Ok(passed) => {
            for p in passed {
                show.line(&format!("  check passed: {p}"));
            }
            Ok(())
        }
        Err(failed) => {
            let r = tune::rollback(host, st).map_err(|e| {
                e.within("a check failed after the apply, and the rollback failed too")
            })?;
            stop_timer(g.timer.as_deref());
            Err(HostError::CheckFailed {
                failed: Box::new(failed),
                rolled: rolled_text(&r),
            })
        }
    }
}

/// Cancels the automatic rollback (and its backup timer); true when
/// something waited for confirmation.
pub fn confirm(st: &StateDir) -> Result<bool, HostError> {
    match tune::confirm(st)? {
        Some(j) if j.deadline_unix.is_some() => {
            stop_timer(j.timer_unit.as_deref());
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Restores every journaled value (with `if_overdue`, only when the
/// journal is unconfirmed past its deadline: what the backup timer runs)
/// and stops the backup timer. The text to print, if any.
pub fn rollback(st: &StateDir, at: &Place, if_overdue: bool) -> Result<Option<String>, HostError> {
    let timer = st.load().ok().flatten().and_then(|j| j.timer_unit);
    let mut host = at.open_host()?;
    if if_overdue {
        return Ok(tune::rollback_if_overdue(&mut host, st)?.map(|r| rolled_text(&r)));
    }
    let r = tune::rollback(&mut host, st)?;
    stop_timer(timer.as_deref());
    Ok(Some(rolled_text(&r)))
}

/// The journal as it stands (None: there is none), read under the lock
/// when an apply may be between its journal and its watchdog.
pub fn status(st: &StateDir) -> Result<Option<Journal>, HostError> {
    // A deadline without a watchdog: an apply may be between the two; its
    // lock (when ours to take) gives the settled journal.
    let unguarded = st
        .load()?
        .is_some_and(|j| j.deadline_unix.is_some() && j.watchdog_pid.is_none());
    let _lock = if unguarded { st.lock().ok() } else { None };
    st.load()
}

/// The watchdog's life: detaches from the terminal, waits for the
/// deadline, rolls back unless confirmed, and writes what it did to
/// `watchdog.log` in the state directory. SIGTERM, SIGINT, SIGHUP or
/// SIGQUIT (taken between two looks at the journal, never in the middle
/// of a rollback) end the wait early: it rolls back at once unless the
/// journal was confirmed, then exits.
pub fn watchdog(st: &StateDir, at: &Place) -> Result<(), HostError> {
    crate::sys::detach();
    let mut host = at.open_host()?;
    let log = st.dir().join("watchdog.log");
    let mut pause = |d: Duration| crate::sys::wait_stop(d).map(String::from);
    let line = match tune::watch(&mut host, st, &mut pause) {
        Ok(tune::Watched::RolledBack(r)) => format!(
            "deadline passed without confirmation: rolled back ({})",
            rolled_text(&r)
        ),
        Ok(tune::Watched::Nothing) => "confirmed or rolled back by hand: nothing to do".into(),
        Ok(tune::Watched::Stopped {
            by,
            rolled: Some(r),
        }) => format!(
            "{by} before the deadline: rolled back at once ({})",
            rolled_text(&r)
        ),
        Ok(tune::Watched::Stopped { by, rolled: None }) => format!(
            "{by}: confirmed, rolled back already or guarded by another watchdog: nothing to do"
        ),
        Err(e) => format!("rollback failed: {e}"),
    };
    let _ = std::fs::write(log, format!("{line}\n"));
    Ok(())
}

/// Starts the detached watchdog that rolls back at the deadline; returns its pid.
fn spawn_watchdog(st: &StateDir, at: &Place) -> Result<u32, HostError> {
    let mut cmd = Reentry::Watchdog {
        state_dir: st.dir().to_path_buf(),
        root: at.root.clone(),
    }
    .command()?;
    // Its own session from the start, with the signals that stop it
    // blocked until it waits for them: a Ctrl-C in the terminal does not
    // reach it, and a signal sent to it early is not lost.
    crate::sys::new_session(&mut cmd);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().map_err(|e| {
        HostError::file(Path::new("wirespeed tune watchdog"), e)
            .within("cannot start the rollback watchdog")
    })?;
    Ok(child.id())
}

/// A second, independent way for the deadline to fire where systemd is
/// the init system: a transient timer rolling back an overdue journal a
/// second after the deadline. None (and nothing done) elsewhere, or when
/// systemd-run fails.
fn arm_timer(st: &StateDir, d: Duration, at: &Place) -> Option<String> {
    if !Path::new("/run/systemd/system").is_dir() {
        return None;
    }
    let dir = std::fs::canonicalize(st.dir()).ok()?;
    let unit = format!(
        "wirespeed-rollback-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|t| t.as_secs())
            .unwrap_or(0)
    );
    let rollback = Reentry::RollbackIfOverdue {
        state_dir: dir,
        netns: at.netns.clone(),
    };
    let mut cmd = std::process::Command::new("systemd-run");
    cmd.args(["--quiet", "--collect", "--unit", &unit])
        .arg(format!("--on-active={}", d.as_secs() + 1))
        .arg("--timer-property=AccuracySec=1s")
        .args(rollback.argv().ok()?);
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
