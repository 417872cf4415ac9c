//! The model's one error type.

use thiserror::Error;

/// Everything that can go wrong while reading a profile or computing ceilings.
#[derive(Debug, Error, PartialEq)]
pub enum ModelError {
    /// A profile file is unreadable or inconsistent; the message says where.
    #[error("invalid profile: {0}")]
    Profile(String),
    /// No built-in profile has this name.
    #[error(
        "unknown profile {name:?}: built-in profiles are {known}, or give the path of a TOML file"
    )]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The built-in names, comma separated.
        known: String,
    },
    /// The query (vCPUs, NICs, caps, prices) is out of range or incomplete.
    #[error("{0}")]
    Query(String),
}
