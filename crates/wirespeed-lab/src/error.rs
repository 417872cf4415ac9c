//! The lab's one error type.

use thiserror::Error;

/// Everything that can go wrong while describing, building or removing a lab.
#[derive(Debug, Error)]
pub enum LabError {
    /// The lab description is invalid; the message names the field (and line).
    #[error("invalid lab: {0}")]
    Spec(String),
    /// A command that changes the host failed; `cmd` is what was run.
    #[error("`{cmd}` failed: {stderr}")]
    Command {
        /// The command line as a person would type it.
        cmd: String,
        /// What it printed on stderr (trimmed).
        stderr: String,
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
