//! The rollback journal's contents: each [`Entry`] with the value it
//! replaced, the deadline, the watchdog and the boot it was written in.

use serde::{Deserialize, Serialize};
use super::{Setting, TUNE_SCHEMA};
use std::time::{SystemTime, UNIX_EPOCH};

/// One journaled change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The setting.
    pub setting: Setting,
    /// Its value before wirespeed first changed it.
    pub old: String,
    /// The value wirespeed set (for a side effect: the value read after
    /// the apply).
    pub new: String,
    /// When the kernel changes this value as a side effect of setting
    /// another one, that setting's label.
    #[serde(default)]
    pub side_effect_of: Option<String>,
}

/// The rollback journal: written before any change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// [`TUNE_SCHEMA`].
    pub schema_version: u32,
    /// When the first change was journaled (Unix seconds).
    pub created_unix: f64,
    /// Unix time after which a watchdog rolls back; None once confirmed.
    pub deadline_unix: Option<f64>,
    /// The boot the changes were made in (/proc/sys/kernel/random/boot_id):
    /// after a reboot the kernel has reset them, and the journal is stale.
    #[serde(default)]
    pub boot_id: Option<String>,
    /// The pid of the watchdog that rolls back at the deadline.
    #[serde(default)]
    pub watchdog_pid: Option<u32>,
    /// A systemd timer armed as a second way to roll back at the deadline.
    #[serde(default)]
    pub timer_unit: Option<String>,
    /// Changes in the order they were applied (a step's side effects
    /// before the step).
    pub entries: Vec<Entry>,
}

pub(super) fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}


/// This boot's id (/proc/sys/kernel/random/boot_id), which changes at every boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl Journal {
    /// An empty journal of this boot.
    pub(super) fn new() -> Journal {
        Journal {
            schema_version: TUNE_SCHEMA,
            created_unix: now_unix(),
            deadline_unix: None,
            boot_id: boot_id(),
            watchdog_pid: None,
            timer_unit: None,
            entries: Vec::new(),
        }
    }

    /// Seconds since the confirmation deadline passed, when it has and the
    /// journal is still unconfirmed.
    pub fn overdue_s(&self) -> Option<f64> {
        let now = now_unix();
        self.deadline_unix.filter(|d| now >= *d).map(|d| now - d)
    }

    /// True when the journal was written in an earlier boot: the kernel has
    /// reset every setting it lists since.
    pub fn from_earlier_boot(&self) -> bool {
        match (&self.boot_id, boot_id()) {
            (Some(then), Some(now)) => *then != now,
            _ => false,
        }
    }

    /// Whether the watchdog recorded in the journal still runs (None when
    /// none is recorded).
    pub fn watchdog_alive(&self) -> Option<bool> {
        let pid = self.watchdog_pid?;
        if self.from_earlier_boot() {
            return Some(false);
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The third field of stat; a zombie has exited.
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        Some(args.contains(&&b"watchdog"[..]) && args.contains(&&b"tune"[..]) && !zombie)
    }
}
