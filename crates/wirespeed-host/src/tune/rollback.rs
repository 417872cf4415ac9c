//! Undoing: rollback of a journal, the confirm that keeps it, the
//! recovery of one left overdue or from an earlier boot, and the
//! watchdog's wait for the deadline.

use super::JournalCheck;
use super::apply::restore_all;
use super::journal::now_unix;
use super::{Host, Journal, Setting, StateDir, StateLock};
use crate::HostError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolledBack {
    /// Settings restored (or found at their old value already).
    pub restored: Vec<String>,
    /// Settings skipped because their device or sysctl no longer exists,
    /// with the reason.
    pub skipped: Vec<(String, String)>,
    /// The journal came from an earlier boot: retired without touching
    /// the host (the kernel reset its settings at boot).
    #[serde(default)]
    pub stale_boot: bool,
}

/// Restores every journaled value and retires the journal, for a caller
/// that holds the state directory's lock.
pub fn rollback_locked(
    host: &mut Host,
    state: &StateDir,
    _lock: &StateLock,
) -> Result<RolledBack, HostError> {
    let Some(j) = state.load()? else {
        return Ok(RolledBack::default());
    };
    let pairs: Vec<(Setting, String)> = j
        .entries
        .iter()
        .map(|e| (e.setting.clone(), e.old.clone()))
        .collect();
    let skipped = restore_all(host, &pairs)?;
    state.retire()?;
    Ok(RolledBack {
        restored: pairs
            .iter()
            .map(|(s, _)| s.label())
            .filter(|l| !skipped.iter().any(|(g, _)| g == l))
            .collect(),
        skipped,
        stale_boot: false,
    })
}

/// Restores every journaled value and retires the journal. A journaled
/// device deleted since is skipped (and reported), not an error; a journal
/// from an earlier boot is retired without touching the host.
pub fn rollback(host: &mut Host, state: &StateDir) -> Result<RolledBack, HostError> {
    let lock = state.lock()?;
    if state.load()?.is_some_and(|j| j.from_earlier_boot()) {
        state.retire_as("stale-boot")?;
        return Ok(RolledBack {
            stale_boot: true,
            ..RolledBack::default()
        });
    }
    rollback_locked(host, state, &lock)
}

/// Like [`rollback`], but only when the journal is still unconfirmed and
/// its deadline has passed (what a second, independent timer runs).
pub fn rollback_if_overdue(
    host: &mut Host,
    state: &StateDir,
) -> Result<Option<RolledBack>, HostError> {
    let lock = state.lock()?;
    match state.load()? {
        Some(j) if j.overdue_s().is_some() && !j.from_earlier_boot() => {
            rollback_locked(host, state, &lock).map(Some)
        }
        _ => Ok(None),
    }
}

/// Cancels the automatic rollback; the journal stays for a later rollback.
/// Refused once the deadline has passed: by then the changes are due to be
/// rolled back (or were). Returns the journal as it was (None when there
/// is none).
pub fn confirm(state: &StateDir) -> Result<Option<Journal>, HostError> {
    let _lock = state.lock()?;
    let Some(mut j) = state.load()? else {
        return Ok(None);
    };
    if let Some(late) = j.overdue_s() {
        return Err(HostError::Refused(format!(
            "too late to confirm: the deadline passed {late:.0} s ago, so these changes are due to be rolled back; run `wirespeed tune rollback`, then apply again if you want them"
        )));
    }
    let was = j.clone();
    j.deadline_unix = None;
    j.watchdog_pid = None;
    j.timer_unit = None;
    state.save(&j)?;
    Ok(Some(was))
}

/// Records in the journal what will roll it back at the deadline: the
/// watchdog's pid and, when one was armed, a systemd timer unit (under
/// the lock the apply held).
pub fn record_guards(
    state: &StateDir,
    _lock: &StateLock,
    watchdog_pid: Option<u32>,
    timer_unit: Option<String>,
) -> Result<(), HostError> {
    let Some(mut j) = state.load()? else {
        return Ok(());
    };
    if j.deadline_unix.is_none() {
        return Ok(());
    }
    j.watchdog_pid = watchdog_pid;
    j.timer_unit = timer_unit;
    state.save(&j)
}

/// What [`recover`] found and did.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovered {
    /// Nothing to do: no journal, or one that is confirmed or not yet due.
    Nothing,
    /// The journal was unconfirmed past its deadline: rolled back now.
    RolledBack {
        /// Seconds past the deadline.
        overdue_s: f64,
        /// The watchdog that should have done it, if one was recorded.
        watchdog_pid: Option<u32>,
        /// What was restored.
        result: RolledBack,
    },
    /// The journal came from an earlier boot: retired, host untouched.
    StaleBoot {
        /// Its boot id.
        boot_id: String,
    },
}

/// Settles a journal the next command must not build on: rolls back an
/// unconfirmed journal whose deadline has passed (its watchdog died, or
/// the host rebooted... ) and retires one from an earlier boot. Cheap
/// when there is nothing to do (no lock, nothing created).
pub fn recover(host: &mut Host, state: &StateDir) -> Result<Recovered, HostError> {
    let needs = |j: &Journal| j.from_earlier_boot() || j.overdue_s().is_some();
    if !state.load()?.is_some_and(|j| needs(&j)) {
        return Ok(Recovered::Nothing);
    }
    let lock = state.lock()?;
    let Some(j) = state.load()? else {
        return Ok(Recovered::Nothing);
    };
    if j.from_earlier_boot() {
        state.retire_as("stale-boot")?;
        return Ok(Recovered::StaleBoot {
            boot_id: j.boot_id.unwrap_or_default(),
        });
    }
    let Some(overdue_s) = j.overdue_s() else {
        return Ok(Recovered::Nothing);
    };
    let result = rollback_locked(host, state, &lock)?;
    Ok(Recovered::RolledBack {
        overdue_s,
        watchdog_pid: j.watchdog_pid,
        result,
    })
}

/// What the watchdog did.
#[derive(Debug, Clone, PartialEq)]
pub enum Watched {
    /// Confirmed, or rolled back by someone else: nothing to do.
    Nothing,
    /// The deadline passed unconfirmed: rolled back.
    RolledBack(RolledBack),
    /// Told to stop before the deadline (a signal): rolled back at once,
    /// unless there was nothing of its own to roll back.
    Stopped {
        /// What told it to stop (`SIGTERM`, ...).
        by: String,
        /// What was restored; None when the journal was confirmed, rolled
        /// back already, or is guarded by another watchdog that still runs.
        rolled: Option<RolledBack>,
    },
}

/// The watchdog's loop: waits until the deadline, looking at the journal
/// at least every 100 ms and pausing in between with `pause(at_most)`,
/// then rolls back unless confirmed. When `pause` returns a reason to
/// stop (the watchdog's: a SIGTERM, SIGINT, SIGHUP or SIGQUIT that came),
/// it rolls back at once, since changes left in place unguarded past the
/// deadline are the unsafe outcome, and returns [`Watched::Stopped`].
pub fn watch(
    host: &mut Host,
    state: &StateDir,
    pause: &mut dyn FnMut(Duration) -> Option<String>,
) -> Result<Watched, HostError> {
    loop {
        let Some(j) = state.load()? else {
            return Ok(Watched::Nothing);
        };
        let Some(deadline) = j.deadline_unix else {
            return Ok(Watched::Nothing);
        };
        if now_unix() >= deadline {
            return Ok(match rollback_if_overdue(host, state)? {
                Some(r) => Watched::RolledBack(r),
                None => Watched::Nothing,
            });
        }
        // try_: a hand-edited journal's absurd deadline must not panic.
        let left = Duration::try_from_secs_f64(deadline - now_unix()).unwrap_or_default();
        if let Some(by) = pause(left.clamp(Duration::from_millis(1), Duration::from_millis(100))) {
            let rolled = rollback_on_stop(host, state)?;
            return Ok(Watched::Stopped { by, rolled });
        }
    }
}

/// The watchdog told to stop before its deadline: under the lock (an
/// apply that has not yet recorded this watchdog finishes first), rolls
/// back a journal that is still unconfirmed and not guarded by another
/// watchdog that still runs; leaves a confirmed one (or none) as it is.
fn rollback_on_stop(host: &mut Host, state: &StateDir) -> Result<Option<RolledBack>, HostError> {
    let lock = state.lock()?;
    let Some(j) = state.load()? else {
        return Ok(None);
    };
    let another = j
        .watchdog_pid
        .is_some_and(|p| p != std::process::id() && j.watchdog_alive() == Some(true));
    if j.deadline_unix.is_none() || j.from_earlier_boot() || another {
        return Ok(None);
    }
    rollback_locked(host, state, &lock).map(Some)
}
