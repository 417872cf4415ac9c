//! Tuning: a [`Plan`] of [`Action`]s, each shown as the command a person
//! would type, applied through netlink, ethtool netlink and /proc/sys with
//! a journal of the old values written first, each value verified after
//! writing, everything rolled back when a step fails, on `rollback`, or
//! when a confirmation deadline passes. [`crate::session`] drives a whole tune
//! command (plan under the lock, apply, watchdog, checks, confirm).
//!
//! The settings, plans and journals are wirespeed-types' serde types
//! (`host::tune`, re-exported here). One concern a module: reading and
//! writing them on a host (`host`, through `knobs`), the journal
//! (`journal`), its state directory and lock (`state`), `apply`,
//! `rollback` (with confirm, recover and the watchdog's wait), and
//! `changes` (lab settings outside the journal).

mod apply;
mod changes;
mod host;
mod journal;
mod knobs;
mod rollback;
mod state;
#[cfg(test)]
mod tests;

pub use apply::{Applied, apply, apply_locked};
pub use changes::NsChanges;
pub use host::{Host, check_action};
pub use journal::{JournalCheck, boot_id};
pub use rollback::{
    Recovered, RolledBack, Watched, confirm, record_guards, recover, rollback, rollback_if_overdue,
    rollback_locked, watch,
};
pub use state::{DEFAULT_LOCK_WAIT, StateDir, StateLock};
pub use wirespeed_types::host::tune::{
    Action, Entry, Journal, LinkSize, Plan, Setting, Step, TUNE_SCHEMA,
};

pub(crate) use crate::sysctl_scope::dotted;
pub use crate::sysctl_scope::{
    HOST_WIDE_NET_SYSCTLS, netns_sysctl_refusal, sysctl_is_host_wide, valid_sysctl_name,
};
pub(crate) use host::{norm, onoff};
pub(crate) use state::euid;
