//! The fleet's one error type.

use crate::transport::TransportError;
use crate::upload::PartError;
use thiserror::Error;
use wirespeed_types::protocol::Disagreement;

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
    /// A loader of an interference point failed (its agent's error).
    #[error("cannot plan: the {k} loaders (victim at {size} bytes): {error}")]
    Loaders {
        /// Loaders at the point.
        k: u32,
        /// The victim's block size.
        size: u32,
        /// The loader's error.
        error: Box<FleetError>,
    },
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
    /// An agent is not what the controller expects (not a wirespeed
    /// agent, another name, an upload replaced); the message says what.
    #[error("agent {agent}: {message}")]
    Agent {
        /// The agent's name.
        agent: String,
        /// What is wrong.
        message: String,
    },
    /// No HTTP client could be made for an agent.
    #[error("agent {agent}: cannot make an HTTP client: {error}")]
    HttpClient {
        /// The agent's name.
        agent: String,
        /// reqwest's error.
        error: reqwest::Error,
    },
    /// No answer came from an agent: `error` says why (cannot connect,
    /// timed out, the relay out or refusing).
    #[error("agent {agent}: {what} at {at}: {error}")]
    Unreachable {
        /// The agent's name.
        agent: String,
        /// What was asked, e.g. "health check".
        what: &'static str,
        /// Where the request went, as its transport describes it.
        at: String,
        /// Why no answer came.
        error: Box<TransportError>,
    },
    /// An agent answered with an error status.
    #[error("agent {agent}: {what}: {}{}", status_text(*.status), .said.as_ref().map(|s| format!(": {s}")).unwrap_or_default())]
    Status {
        /// The agent's name.
        agent: String,
        /// What was asked.
        what: &'static str,
        /// The HTTP status.
        status: u16,
        /// What it said (its JSON error, or the start of its body); None
        /// where the body is not read.
        said: Option<String>,
    },
    /// An agent's answer is not what the request expects.
    #[error("agent {agent}: {what}: unreadable answer: {error}")]
    Unreadable {
        /// The agent's name.
        agent: String,
        /// What was asked.
        what: &'static str,
        /// The decoding error.
        error: serde_json::Error,
    },
    /// An agent speaks no fleet protocol version this build speaks.
    #[error("agent {agent}: {error}")]
    Version {
        /// The agent's name.
        agent: String,
        /// Both sides' versions and which to upgrade.
        error: Disagreement,
    },
    /// An agent answered its health check that it is stopping.
    #[error(
        "agent {agent}: health check: the agent is stopping (its pod or process is being shut down)"
    )]
    Stopping {
        /// The agent's name.
        agent: String,
    },
    /// A fleet could not be split into parts for an agent.
    #[error("agent {agent}: {error}")]
    Parts {
        /// The agent's name.
        agent: String,
        /// Why.
        error: PartError,
    },
    /// Something could not be encoded as JSON.
    #[error("cannot encode {what}: {error}")]
    Encode {
        /// What.
        what: String,
        /// serde_json's error.
        error: serde_json::Error,
    },
    /// A fleet file's text is not a fleet (TOML or its fields).
    #[error("invalid fleet: {}{}", .file.as_ref().map(|f| format!("{f}: ")).unwrap_or_default(), .error.to_string().trim_end().replace('\n', " "))]
    FleetFile {
        /// The file, when read from one.
        file: Option<String>,
        /// The TOML error.
        error: Box<toml::de::Error>,
    },
    /// A history file's SQL failed: what was being done, and SQLite's error.
    #[error("history: {what}: {error}")]
    Sql {
        /// What was being done.
        what: String,
        /// SQLite's error.
        error: Box<rusqlite::Error>,
    },
    /// A history file cannot be opened, read or written; the message
    /// names the file and what to do.
    #[error("history: {0}")]
    History(String),
    /// A results or baseline file is not what it should be.
    #[error("{0}")]
    Results(String),
}

/// What an agent request met, for a caller that acts on it rather than
/// reads it ([`FleetError::fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Nothing answered (connection refused, unreachable), or the agent
    /// is stopping.
    Down,
    /// The agent refused the key or the request (401, 403).
    Refused,
    /// No answer in time.
    TimedOut,
    /// The agent has no such thing (404).
    NotFound,
    /// The agent is busy or unavailable (429, 503).
    Busy,
    /// The relay between the controller and the agent (the API server)
    /// is out or refused the request.
    Relay,
    /// Any other failure of an agent request.
    Other,
}

impl FleetError {
    /// What an agent request met; None for errors that are not an
    /// agent's (a fleet file, a plan, a history file).
    pub fn fault(&self) -> Option<Fault> {
        Some(match self {
            FleetError::Unreachable { error, .. } => match error.as_ref() {
                TransportError::Connect(_) => Fault::Down,
                TransportError::TimedOut { .. } => Fault::TimedOut,
                e if e.is_relay() => Fault::Relay,
                _ => Fault::Other,
            },
            FleetError::Stopping { .. } => Fault::Down,
            FleetError::Loaders { error, .. } => return error.fault(),
            FleetError::Status { status, .. } => match status {
                401 | 403 => Fault::Refused,
                404 => Fault::NotFound,
                429 | 503 => Fault::Busy,
                _ => Fault::Other,
            },
            FleetError::Agent { .. }
            | FleetError::HttpClient { .. }
            | FleetError::Unreadable { .. }
            | FleetError::Version { .. }
            | FleetError::Parts { .. } => Fault::Other,
            _ => return None,
        })
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, error: std::io::Error) -> FleetError {
        FleetError::Io {
            what: what.into(),
            error,
        }
    }
}

/// "403 Forbidden" for 403.
pub(crate) fn status_text(code: u16) -> String {
    reqwest::StatusCode::from_u16(code)
        .map(|s| s.to_string())
        .unwrap_or_else(|_| code.to_string())
}

/// The fleet's result type.
pub type Result<T, E = FleetError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, said: Option<&str>) -> FleetError {
        FleetError::Status {
            agent: "a".into(),
            what: "start a test",
            status,
            said: said.map(String::from),
        }
    }

    #[test]
    fn an_agents_status_reads_as_before_and_is_told_by_variant() {
        assert_eq!(
            status(429, Some("busy")).to_string(),
            "agent a: start a test: 429 Too Many Requests: busy"
        );
        assert_eq!(
            status(404, None).to_string(),
            "agent a: start a test: 404 Not Found"
        );
        for (code, fault) in [
            (401, Fault::Refused),
            (403, Fault::Refused),
            (404, Fault::NotFound),
            (429, Fault::Busy),
            (503, Fault::Busy),
            (500, Fault::Other),
        ] {
            assert_eq!(status(code, None).fault(), Some(fault), "{code}");
        }
        assert_eq!(FleetError::Plan("x".into()).fault(), None);
    }

    #[test]
    fn no_answer_is_told_by_its_transport_error() {
        let gone = |error| FleetError::Unreachable {
            agent: "a".into(),
            what: "health check",
            at: "http://10.0.0.1:5380".into(),
            error: Box::new(error),
        };
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = gone(TransportError::Connect(Box::new(refused)));
        assert_eq!(e.fault(), Some(Fault::Down));
        assert_eq!(
            e.to_string(),
            "agent a: health check at http://10.0.0.1:5380: cannot connect"
        );
        let e = gone(TransportError::TimedOut {
            after: std::time::Duration::from_secs(5),
        });
        assert_eq!(e.fault(), Some(Fault::TimedOut));
        assert!(e.to_string().ends_with(": timed out after 5s"), "{e}");
        let e = gone(TransportError::RelayRefused {
            relay: "the API server's pod proxy".into(),
            status: 403,
            said: "forbidden".into(),
            hint: String::new(),
        });
        assert_eq!(e.fault(), Some(Fault::Relay));
        assert!(
            e.to_string()
                .ends_with("the API server's pod proxy answered 403: forbidden"),
            "{e}"
        );
        let stopping = FleetError::Stopping { agent: "a".into() };
        assert_eq!(stopping.fault(), Some(Fault::Down));
    }
}
