//! Applying a plan: every value it may change journaled first, each
//! step set and verified, side effects read back, and everything this
//! call changed restored when a step fails.

use super::host::norm;
use super::journal::{JournalCheck, new_journal, now_unix};
use super::{Entry, Host, Journal, Plan, Setting, StateDir, StateLock, Step};
use crate::HostError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What apply did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Settings changed now.
    pub changed: Vec<String>,
    /// Settings already at the wanted value.
    pub unchanged: Vec<String>,
    /// Values the kernel changed as a side effect of a step, as
    /// "label: old -> new" (journaled like the steps).
    #[serde(default)]
    pub side_effects: Vec<String>,
}

/// Applies a plan: journals the old value of every setting a step sets or
/// may change as a side effect, then sets and verifies each step, and on
/// any failure restores everything this call changed and returns the
/// error. `deadline` arms the automatic rollback. Holds the state
/// directory's lock throughout, so concurrent applies queue.
pub fn apply(
    host: &mut Host,
    state: &StateDir,
    plan: &Plan,
    deadline: Option<Duration>,
) -> Result<Applied, HostError> {
    let lock = state.lock()?;
    apply_locked(host, state, &lock, plan, deadline)
}

/// Refuses to build on a journal from an earlier boot or one whose
/// apply still waits for its confirmation.
fn refuse_unsettled(state: &StateDir, before: Option<&Journal>) -> Result<(), HostError> {
    let Some(j) = before else { return Ok(()) };
    if j.from_earlier_boot() {
        return Err(HostError::Refused(format!(
            "the journal in {} is from an earlier boot: `wirespeed tune rollback` retires it (the kernel reset its settings at boot)",
            state.dir().display()
        )));
    }
    if j.deadline_unix.is_some() {
        return Err(HostError::Refused(
            "an earlier apply is waiting for `wirespeed tune confirm` (or its rollback); confirm or roll back first".into(),
        ));
    }
    Ok(())
}

/// Journals every value the steps may change, read now (not from the
/// plan), before any change: each step's side effects first, so that a
/// rollback (newest first) restores the cause before its effects. Returns
/// the (setting, old value) pairs a failure restores.
fn journal_old_values(
    host: &mut Host,
    journal: &mut Journal,
    todo: &[&Step],
) -> Result<Vec<(Setting, String)>, HostError> {
    let mut fresh: Vec<(Setting, String)> = Vec::new();
    for s in todo {
        let setting = &s.action.setting;
        for side in host.side_effects(setting) {
            if side == *setting || fresh.iter().any(|(x, _)| *x == side) {
                continue;
            }
            // A side effect this kernel or device does not have.
            let Ok(old) = host.read(&side) else { continue };
            if !journal.entries.iter().any(|e| e.setting == side) {
                journal.entries.push(Entry {
                    setting: side.clone(),
                    old: old.clone(),
                    new: old.clone(),
                    side_effect_of: Some(setting.label()),
                });
            }
            fresh.push((side, old));
        }
        let old = host.read(setting)?;
        match journal.entries.iter_mut().find(|e| e.setting == *setting) {
            Some(e) => {
                e.new = s.action.value.clone();
                e.side_effect_of = None;
            }
            None => journal.entries.push(Entry {
                setting: setting.clone(),
                old: old.clone(),
                new: s.action.value.clone(),
                side_effect_of: None,
            }),
        }
        if !fresh.iter().any(|(x, _)| x == setting) {
            fresh.push((setting.clone(), old));
        }
    }
    Ok(fresh)
}

/// Reads back what the kernel changed beside the steps (recorded for
/// status, as "label: old -> new") and drops the side effects journaled
/// by this call (entries after the first `known`) that did not happen.
fn read_back_side_effects(host: &mut Host, journal: &mut Journal, known: usize) -> Vec<String> {
    let mut side_effects = Vec::new();
    for e in journal
        .entries
        .iter_mut()
        .filter(|e| e.side_effect_of.is_some())
    {
        if let Ok(now) = host.read(&e.setting) {
            if norm(&now) != norm(&e.new) {
                side_effects.push(format!("{}: {} -> {now}", e.setting.label(), e.new));
            }
            e.new = now;
        }
    }
    let mut i = 0;
    journal.entries.retain(|e| {
        i += 1;
        i <= known || e.side_effect_of.is_none() || norm(&e.new) != norm(&e.old)
    });
    side_effects
}

/// [`apply`] for a caller that holds the state directory's lock already
/// (to start and record the watchdog under the same lock).
pub fn apply_locked(
    host: &mut Host,
    state: &StateDir,
    _lock: &StateLock,
    plan: &Plan,
    deadline: Option<Duration>,
) -> Result<Applied, HostError> {
    let before = state.load()?;
    refuse_unsettled(state, before.as_ref())?;
    let mut journal = before.clone().unwrap_or_else(new_journal);
    let known = journal.entries.len();
    let todo: Vec<&Step> = plan.steps.iter().filter(|s| !s.no_op).collect();
    let unchanged = plan
        .steps
        .iter()
        .filter(|s| s.no_op)
        .map(|s| s.action.setting.label())
        .collect();
    if todo.is_empty() {
        return Ok(Applied {
            changed: vec![],
            unchanged,
            side_effects: vec![],
        });
    }
    let fresh = journal_old_values(host, &mut journal, &todo)?;
    journal.deadline_unix = deadline.map(|d| now_unix() + d.as_secs_f64());
    journal.watchdog_pid = None;
    journal.timer_unit = None;
    state.save(&journal)?;
    for s in &todo {
        if let Err(e) = host.set(&s.action.setting, &s.action.value) {
            let restore = restore_all(host, &fresh);
            match &before {
                Some(j) => state.save(j)?,
                None => state.retire()?,
            }
            return Err(HostError::ApplyFailed {
                error: Box::new(e),
                restore_failed: restore.err().map(Box::new),
            });
        }
    }
    let side_effects = read_back_side_effects(host, &mut journal, known);
    state.save(&journal)?;
    Ok(Applied {
        changed: todo.iter().map(|s| s.action.setting.label()).collect(),
        unchanged,
        side_effects,
    })
}

/// Restores (setting, old value) pairs, newest first, then once more
/// whatever still differs (restoring an IPv6 GSO/GRO size <= 65536
/// overwrites the IPv4 one, so the IPv4 sizes come back last). A setting
/// whose device or /proc/sys file is gone is skipped and returned as
/// (label, reason).
pub(super) fn restore_all(
    host: &mut Host,
    pairs: &[(Setting, String)],
) -> Result<Vec<(String, String)>, HostError> {
    let mut gone: Vec<(Setting, String)> = Vec::new();
    let mut last_err = None;
    for _pass in 0..2 {
        last_err = None;
        for (s, old) in pairs.iter().rev() {
            if gone.iter().any(|(g, _)| g == s) {
                continue;
            }
            let r = match host.read(s) {
                Ok(now) if norm(&now) == norm(old) => continue,
                Err(e) if e.is_gone() => Err(e),
                _ => host.set(s, old),
            };
            match r {
                Ok(()) => {}
                Err(e) if e.is_gone() => {
                    host.clear_orphans(s, old);
                    gone.push((s.clone(), e.to_string()));
                }
                Err(e) => last_err = Some(e),
            }
        }
        if last_err.is_none() {
            break;
        }
    }
    match last_err {
        Some(e) => Err(e),
        None => Ok(gone.into_iter().map(|(s, why)| (s.label(), why)).collect()),
    }
}
