//! The crate's one error type.

use thiserror::Error;

/// Everything that can go wrong while planning or running an experiment,
/// an optimize search or the demo.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// An experiment file is invalid; the message names the file, line and field.
    #[error("{0}")]
    File(String),
    /// A field of an experiment file is refused; `place` names the file,
    /// line and field (the cause in the message, not a `source`).
    #[error("{place}: {error}")]
    Field {
        /// Where: "in FILE: line L, [[TABLE]] #N field `FIELD`".
        place: String,
        /// Why.
        error: Box<crate::experiment::FieldError>,
    },
    /// Bench arguments are invalid (an unknown flag, a missing value, a bad size).
    #[error("{0}")]
    Bench(String),
    /// A step failed; `what` says which. The cause is part of the message,
    /// not a `source`, so a chain printer does not print it twice.
    #[error("{what}: {error}")]
    Failed {
        /// What was being done.
        what: String,
        /// Why it failed.
        error: String,
    },
    /// A size, rate, duration or test description is malformed.
    #[error("{0}")]
    Invalid(#[from] wirespeed_types::Invalid),
    /// A test failed in the engine.
    #[error(transparent)]
    Engine(#[from] wirespeed_engine::EngineError),
    /// Building, changing or removing a lab failed.
    #[error(transparent)]
    Lab(#[from] wirespeed_lab::LabError),
    /// Reading or changing a host failed.
    #[error(transparent)]
    Host(#[from] wirespeed_host::HostError),
    /// SIGINT or SIGTERM asked the run to stop.
    #[error("interrupted")]
    Interrupted,
}

/// Shorthand for this crate's results.
pub type Result<T, E = ExperimentError> = std::result::Result<T, E>;

/// Says what was being done when an error struck (anyhow's `context`,
/// flattened into one message).
pub trait Context<T> {
    /// Wraps the error as [`ExperimentError::Failed`] with `what`.
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: std::fmt::Display> Context<T> for std::result::Result<T, E> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ExperimentError::Failed {
            what: what(),
            error: e.to_string(),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.ok_or_else(|| ExperimentError::Failed {
            what: what(),
            error: "missing".into(),
        })
    }
}

/// An [`ExperimentError::Failed`] from a message.
pub(crate) fn failed(what: impl Into<String>, error: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Failed {
        what: what.into(),
        error: error.to_string(),
    }
}
