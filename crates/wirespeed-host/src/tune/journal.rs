//! The rollback journal on the running host: this boot's id, a new
//! journal of this boot, and what only the host can tell about one (is it
//! from an earlier boot, does its watchdog still run). The journal's
//! types are wirespeed-types' (`host::tune::{Journal, Entry}`).

use super::{Journal, TUNE_SCHEMA};
pub use wirespeed_types::host::tune::now_unix;

/// This boot's id (/proc/sys/kernel/random/boot_id), which changes at every boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// An empty journal of this boot.
pub(super) fn new_journal() -> Journal {
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

/// What only the running host can tell about a journal.
pub trait JournalCheck {
    /// True when the journal was written in an earlier boot: the kernel has
    /// reset every setting it lists since.
    // The name it had as Journal's own method (callers keep it); not a
    // conversion, as clippy guesses from the `from_` prefix.
    #[allow(clippy::wrong_self_convention)]
    fn from_earlier_boot(&self) -> bool;
    /// Whether the watchdog recorded in the journal still runs (None when
    /// none is recorded).
    fn watchdog_alive(&self) -> Option<bool>;
}

impl JournalCheck for Journal {
    fn from_earlier_boot(&self) -> bool {
        match (&self.boot_id, boot_id()) {
            (Some(then), Some(now)) => *then != now,
            _ => false,
        }
    }

    fn watchdog_alive(&self) -> Option<bool> {
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
