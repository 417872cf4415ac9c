//! The crate's one error type: each variant says what was tried, on what,
//! and what to do.

use std::path::PathBuf;

/// Why an image could not be built, written or pushed.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Reading a file for the image (the binary, a library it needs).
    #[error("read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The binary is not one this image can run.
    #[error("{path}: {why}")]
    Binary {
        /// The binary.
        path: PathBuf,
        /// What is wrong and what to do.
        why: String,
    },
    /// Making the layer, the JSON documents or the layout in memory.
    #[error("{what}: {why}")]
    Encode {
        /// The document or archive being made.
        what: &'static str,
        /// The encoder's error.
        why: String,
    },
    /// Writing the OCI image layout tar.
    #[error("write {path}: {source} (check the directory exists and is writable)")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Pushing to a registry.
    #[error("push {reference}: {step}: {why}")]
    Push {
        /// The reference pushed to.
        reference: String,
        /// The step that failed (authenticate, upload the layer, ...).
        step: String,
        /// The registry client's error and what to check.
        why: String,
    },
}
