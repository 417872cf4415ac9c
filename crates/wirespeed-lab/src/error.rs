//! The lab's one error type.

use crate::plan::AddressError;
use thiserror::Error;
use wirespeed_host::HostError;

/// Everything that can go wrong while describing, building or removing a lab.
#[derive(Debug, Error)]
pub enum LabError {
    /// The lab description is invalid; the message names the field (and line).
    #[error("invalid lab: {0}")]
    Spec(String),
    /// The lab's addressing cannot be planned (a full or malformed subnet).
    #[error("invalid lab: {0}")]
    Address(#[from] AddressError),
    /// A change to the host failed; `cmd` is that change as a command line.
    /// The host's error is in the message, not a `source` (it prints once).
    #[error("`{cmd}` failed: {error}")]
    Command {
        /// The command line as a person would type it.
        cmd: String,
        /// Why the host refused it.
        error: HostError,
    },
    /// A lab state file could not be encoded or decoded; `what` says which
    /// (the JSON error in the message, not a `source`).
    #[error("invalid lab: {what}: {error}")]
    State {
        /// What was being done, e.g. "encode lab state".
        what: String,
        /// The JSON error.
        error: serde_json::Error,
    },
    /// A file or process operation failed; `what` says which.
    /// The OS error is in the message, not a `source`: a chain printer
    /// (anyhow's `{:#}`) would print it twice.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// A fault description is invalid; the message names the field.
    #[error("invalid fault: {0}")]
    Fault(String),
    /// A command a fault runs (iptables, tc, nft, its delayer) failed or
    /// could not start; `detail` says why and what to do.
    #[error("`{cmd}` failed: {detail}")]
    Run {
        /// The command line as a person would type it.
        cmd: String,
        /// What it printed on stderr, or why it did not run.
        detail: String,
    },
    /// Building namespaces needs root.
    #[error("labs create network namespaces: run as root (or under sudo)")]
    NotRoot,
}

impl LabError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> LabError {
        LabError::Io {
            what: what.into(),
            error: source,
        }
    }
}
