//! The crate's one error: a value that does not describe a valid test.

use thiserror::Error;

/// A size, rate, duration, path or test description that is malformed or
/// out of range; the text says which and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct Invalid(pub String);
