//! The host crate's one error type.

use std::io;
use std::net::IpAddr;

/// What went wrong while reading or changing the host.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A netlink request failed; `what` names the request. The OS error is
    /// in the message, not a `source` (anyhow's `{:#}` would print it twice).
    #[error("netlink {what}: {error}")]
    Netlink {
        /// The request, e.g. "set mtu of eth1".
        what: String,
        /// The kernel's answer.
        error: io::Error,
    },
    /// A netlink answer could not be decoded.
    #[error("netlink {what}: cannot decode the kernel's answer: {detail}")]
    Decode {
        /// The request.
        what: String,
        /// The decoder's message.
        detail: String,
    },
    /// A file under /proc or /sys could not be read or written (the OS
    /// error in the message, not a `source`, so it prints once).
    #[error("{path}: {error}")]
    File {
        /// The file.
        path: String,
        /// The error.
        error: io::Error,
    },
    /// No link of that name.
    #[error("no network device named {0:?} in this namespace")]
    NoSuchLink(String),
    /// A value the user asked for is refused as unsafe or invalid.
    #[error("refused: {0}")]
    Refused(String),
    /// A value written did not read back as written.
    #[error("verify failed for {what}: wrote {wanted}, reads {got}")]
    Verify {
        /// The setting.
        what: String,
        /// The value written.
        wanted: String,
        /// The value read back.
        got: String,
    },
    /// A command wirespeed runs (tc) failed; `cmd` is the command line.
    #[error("`{cmd}` failed: {stderr}")]
    Command {
        /// The command line as a person would type it.
        cmd: String,
        /// What it printed on stderr (trimmed).
        stderr: String,
    },
    /// A path probe could not be sent (no ICMP socket, no route); the OS
    /// error in the message, not a `source`.
    #[error("{what} toward {target}: {error}")]
    Probe {
        /// What could not be done, e.g. "cannot route a probe".
        what: &'static str,
        /// Where the probe was to go.
        target: IpAddr,
        /// The OS error.
        error: io::Error,
    },
    /// A check after a guarded apply failed, and the apply was rolled back
    /// (`rolled` says what was restored).
    #[error("check failed after the apply: {failed}\nrolled back at once: {rolled}")]
    CheckFailed {
        /// The check that failed.
        failed: Box<crate::guard::CheckFailed>,
        /// What the rollback restored, as text.
        rolled: String,
    },
    /// A tuning journal or profile could not be parsed or stored.
    #[error("{0}")]
    State(String),
    /// A change failed during an apply; the values changed before it were
    /// restored, unless `restore_failed` says why not.
    #[error(
        "{error}; {}",
        restore_failed.as_ref().map_or_else(
            || "every value changed before it was restored".to_string(),
            |r| format!("and restoring failed too: {r}")
        )
    )]
    ApplyFailed {
        /// The change that failed.
        error: Box<HostError>,
        /// Why restoring the values changed before failed, if it did.
        restore_failed: Option<Box<HostError>>,
    },
    /// A tuning journal could not be encoded (the JSON error in the
    /// message, not a `source`).
    #[error("{0}")]
    Encode(serde_json::Error),
    /// The journal file does not parse (the JSON error in the message,
    /// not a `source`).
    #[error(
        "{path} is not a wirespeed journal ({error}): wirespeed changes nothing here until it is repaired or moved away (`mv {path} {path}.bad`; the values it held must then be restored by hand)"
    )]
    BadJournal {
        /// The journal file.
        path: String,
        /// The JSON error.
        error: serde_json::Error,
    },
    /// An unknown profile name.
    #[error("unknown profile {0:?} (known: throughput, latency, tpu-multinic, bulk-multinic)")]
    UnknownProfile(String),
    /// What was being done when `inner` went wrong (printed as
    /// "what: inner", as anyhow's context prints).
    #[error("{what}: {inner}")]
    Context {
        /// What was being done.
        what: String,
        /// The error.
        inner: Box<HostError>,
    },
    /// Another tune command holds the state directory's lock.
    #[error(
        "another wirespeed tune holds the lock on {dir}{}; waited {waited_s:.0} s: try again when it has finished",
        holder.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Busy {
        /// The state directory.
        dir: String,
        /// The holder's pid, as it wrote it in the lock file.
        holder: Option<u32>,
        /// How long this command waited.
        waited_s: f64,
    },
}

impl HostError {
    /// A netlink error for request `what`.
    pub fn netlink(what: impl Into<String>, source: io::Error) -> Self {
        HostError::Netlink {
            what: what.into(),
            error: source,
        }
    }

    /// Whether the error says the object is gone: a device deleted since
    /// (ENODEV, no such link) or a /proc/sys file that no longer exists.
    pub fn is_gone(&self) -> bool {
        match self {
            HostError::NoSuchLink(_) => true,
            HostError::Netlink { error, .. } => error.raw_os_error() == Some(libc::ENODEV),
            HostError::File { error, .. } => error.kind() == io::ErrorKind::NotFound,
            HostError::Context { inner, .. } => inner.is_gone(),
            _ => false,
        }
    }

    /// This error, said to have happened while doing `what`.
    pub fn within(self, what: impl Into<String>) -> Self {
        HostError::Context {
            what: what.into(),
            inner: Box::new(self),
        }
    }

    /// A file error on `path`.
    pub fn file(path: impl AsRef<std::path::Path>, source: io::Error) -> Self {
        HostError::File {
            path: path.as_ref().display().to_string(),
            error: source,
        }
    }
}
