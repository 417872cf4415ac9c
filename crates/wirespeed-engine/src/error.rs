//! The engine's one error type.

use thiserror::Error;

/// Everything that can go wrong while setting up or running a test.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The test description is invalid or outside the server's limits.
    #[error("invalid test: {0}")]
    Spec(String),
    /// A socket operation failed; `what` says which, on what.
    ///
    /// The OS error is part of the message and deliberately not a `source`:
    /// a chain printer (anyhow's `{:#}`) would print it twice.
    #[error("{what}: {error}")]
    Io {
        /// What was being done, e.g. "connect to 10.0.0.2:5300".
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The peer broke the control protocol or sent something unreadable.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The peer answered with an error of its own.
    #[error("server refused: {0}")]
    Refused(String),
    /// The server is running as many tests as it allows.
    #[error("server busy: {0}")]
    Busy(String),
    /// The key check failed or a key was required.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// A key file is missing, unsafe or not a key.
    #[error("key file {0}")]
    Key(String),
    /// The peer did not answer in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The test was ended before its time: the server was stopped
    /// (SIGTERM, Ctrl-C) while it ran.
    #[error("interrupted: {0}")]
    Interrupted(String),
    /// The loaders' test of an interference run failed (`bench
    /// --interference`); the cause is kept as its variant, printed once.
    #[error("the {k} loaders' test failed: {cause}{hint}")]
    Loaders {
        /// How many loaders it had.
        k: u32,
        /// Why it failed.
        cause: Box<EngineError>,
        /// What to do, when the cause says (empty otherwise).
        hint: &'static str,
    },
}

impl EngineError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> EngineError {
        if matches!(
            source.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            return EngineError::Timeout(what.into());
        }
        EngineError::Io {
            what: what.into(),
            error: source,
        }
    }
}

impl From<wirespeed_types::Invalid> for EngineError {
    fn from(e: wirespeed_types::Invalid) -> EngineError {
        EngineError::Spec(e.0)
    }
}
