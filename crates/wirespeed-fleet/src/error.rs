//! The fleet's one error type.

use thiserror::Error;

/// Everything that can go wrong in the agent, the planner or a fleet run.
#[derive(Debug, Error)]
pub enum FleetError {
    /// The fleet file (or a fleet built in code) is invalid; the message
    /// names the agent and field.
    #[error("invalid fleet: {0}")]
    Fleet(String),
    /// The requested plan cannot be made (pattern, concurrency).
    #[error("cannot plan: {0}")]
    Plan(String),
    /// A file or socket operation failed; `what` says which, on what.
    /// The OS error is in the message, not a `source`, so a chain printer
    /// does not print it twice.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The engine failed (server start, key file).
    #[error(transparent)]
    Engine(#[from] wirespeed_engine::EngineError),
    /// An agent answered with an error or not at all.
    #[error("agent {agent}: {message}")]
    Agent {
        /// The agent's name.
        agent: String,
        /// What it said or what failed.
        message: String,
    },
    /// A history file cannot be opened, read or written; the message
    /// names the file and what to do.
    #[error("history: {0}")]
    History(String),
    /// A results or baseline file is not what it should be.
    #[error("{0}")]
    Results(String),
}

impl FleetError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, error: std::io::Error) -> FleetError {
        FleetError::Io {
            what: what.into(),
            error,
        }
    }
}

/// The fleet's result type.
pub type Result<T, E = FleetError> = std::result::Result<T, E>;
