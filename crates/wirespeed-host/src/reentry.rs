//! The only places wirespeed runs its own binary again, each typed: a
//! command re-run inside a named namespace (`ip netns exec` mounts that
//! namespace's /sys for a process), the tune watchdog and the systemd
//! backup timer's rollback (both must outlive the command that applied).
//! The hidden command lines they use are spelled here and nowhere else.

use crate::HostError;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

/// Environment variable naming the namespace after a `--netns` re-run.
pub const NETNS_ENV: &str = "WIRESPEED_NETNS";

/// The named namespace this process was re-run in, if any.
pub fn current_netns() -> Option<String> {
    std::env::var(NETNS_ENV).ok()
}

/// A re-run of the wirespeed binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reentry {
    /// The tune watchdog: waits for the deadline of the journal in
    /// `state_dir` and rolls back unless confirmed.
    Watchdog {
        /// The journal's directory.
        state_dir: PathBuf,
        /// /proc and /sys under this root (recorded trees in tests).
        root: Option<PathBuf>,
    },
    /// The backup timer's rollback, only when the journal is still
    /// unconfirmed past its deadline.
    RollbackIfOverdue {
        /// The journal's directory.
        state_dir: PathBuf,
        /// The namespace the journal's changes were made in.
        netns: Option<String>,
    },
}

fn exe() -> Result<PathBuf, HostError> {
    std::env::current_exe()
        .map_err(|e| HostError::file("/proc/self/exe", e).within("cannot find this program's path"))
}

impl Reentry {
    /// The binary's path and the arguments of this re-run.
    pub fn argv(&self) -> Result<Vec<OsString>, HostError> {
        let mut v: Vec<OsString> = vec![exe()?.into()];
        let mut push = |s: &str| v.push(s.into());
        match self {
            Reentry::Watchdog { state_dir, root } => {
                for a in ["tune", "watchdog", "--state-dir"] {
                    push(a);
                }
                v.push(state_dir.into());
                if let Some(r) = root {
                    v.push("--root".into());
                    v.push(r.into());
                }
            }
            Reentry::RollbackIfOverdue { state_dir, netns } => {
                for a in ["tune", "rollback", "--if-overdue", "--state-dir"] {
                    push(a);
                }
                v.push(state_dir.into());
                if let Some(ns) = netns {
                    v.push("--netns".into());
                    v.push(ns.into());
                }
            }
        }
        Ok(v)
    }

    /// The command that runs it.
    pub fn command(&self) -> Result<Command, HostError> {
        let argv = self.argv()?;
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]);
        Ok(c)
    }
}

/// Re-runs this process, with the same arguments but `--netns`, inside
/// named namespace `name` through `ip netns exec` (which also mounts the
/// namespace's /sys); returns at once when this process is there already
/// (the re-run), and otherwise only with the error that stopped the exec.
pub fn enter_netns(name: &str) -> Result<(), HostError> {
    if current_netns().as_deref() == Some(name) {
        return Ok(());
    }
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(HostError::State(format!("bad namespace name {name:?}")));
    }
    if !crate::netns::exists(name) {
        return Err(HostError::State(format!(
            "no network namespace {name:?} (see `ip netns list`)"
        )));
    }
    let exe = exe()?;
    let mut args: Vec<OsString> = Vec::new();
    let mut it = std::env::args_os().skip(1);
    while let Some(a) = it.next() {
        if a == "--netns" {
            it.next();
        } else if !a.to_string_lossy().starts_with("--netns=") {
            args.push(a);
        }
    }
    // exec, not spawn: `ip netns exec` replaces this process (and execs
    // wirespeed in turn), so no parent is left to be killed apart from
    // the work, and signals and the exit status reach the caller directly.
    use std::os::unix::process::CommandExt;
    let err = Command::new("ip")
        .args(["netns", "exec", name])
        .arg(&exe)
        .args(&args)
        .env(NETNS_ENV, name)
        .exec();
    Err(HostError::State(format!(
        "cannot run `ip netns exec` (is iproute2 installed?): {err}"
    )))
}
