//! The crate's one error type: each variant says what was tried, on what,
//! and what to do.

use std::path::PathBuf;

/// Why an image could not be built, written or pushed.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Reading a file for the image (the binary, a library it needs).
    #[error("read {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error (in the message, so not a `source`).
        error: std::io::Error,
    },
    /// The binary is not one this image can run.
    #[error("{path}: {why}")]
    Binary {
        /// The binary.
        path: PathBuf,
        /// What is wrong and what to do.
        why: BinaryError,
    },
    /// Making the layer, the JSON documents or the layout in memory.
    #[error("{what}: {why}")]
    Encode {
        /// The document or archive being made.
        what: &'static str,
        /// The encoder's error.
        why: EncodeError,
    },
    /// Writing the OCI image layout tar.
    #[error("write {path}: {error} (check the directory exists and is writable)")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The I/O error (in the message, so not a `source`).
        error: std::io::Error,
    },
    /// Pushing to a registry.
    #[error("push {reference}: {step}: {why}")]
    Push {
        /// The reference pushed to.
        reference: String,
        /// The step that failed (authenticate, upload the layer, ...).
        step: &'static str,
        /// The registry client's error and what to check.
        why: PushError,
    },
}

/// The encoder's error behind [`ImageError::Encode`] (its text, once).
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// Writing the tar or the gzip stream.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// An OCI document or digest the spec types refused.
    #[error(transparent)]
    Spec(#[from] oci_spec::OciSpecError),
}

/// Why a push failed, with what to check; each cause printed once.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The reference is not REGISTRY/NAME:TAG.
    #[error("{0}: use REGISTRY/NAME:TAG, e.g. registry.example:5000/wirespeed:0.1.0")]
    Reference(oci_client::ParseError),
    /// The reference names a digest, not a tag.
    #[error("it names a digest: push to a tag (REGISTRY/NAME:TAG)")]
    Digest,
    /// The HTTP client's runtime could not start.
    #[error("{0}")]
    Runtime(std::io::Error),
    /// The registry refused or could not be reached.
    #[error(
        "{error} (over {}: check the registry address, --plain-http for a registry \
         without TLS, and --registry-user/--registry-password-file)",
        if *plain_http { "HTTP" } else { "HTTPS" }
    )]
    Registry {
        /// The registry client's error.
        error: oci_client::errors::OciDistributionError,
        /// Whether it was spoken to over plain HTTP.
        plain_http: bool,
    },
}

/// Why a binary cannot go into the image, with what to do; causes are
/// printed in the message, once.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// Not an ELF file at all.
    #[error("not an ELF executable ({0}): pass a wirespeed binary built for Linux with --binary")]
    NotElf(goblin::error::Error),
    /// An ELF file, but a library or object rather than a program.
    #[error("an ELF file but not an executable: pass the wirespeed binary")]
    NotExecutable,
    /// Built for another architecture than this wirespeed's.
    #[error(
        "built for ELF machine {machine} but this wirespeed builds {arch} images: \
         run `k8s image build` with a wirespeed built for the image's architecture"
    )]
    Machine {
        /// The binary's ELF machine.
        machine: u16,
        /// This build's architecture.
        arch: &'static str,
    },
    /// It names a library by path, which the image cannot resolve.
    #[error("needs library {0:?} by path; not supported")]
    LibraryByPath(String),
    /// A library it needs is found but cannot be read.
    #[error("read {}: {error}", path.display())]
    LibraryUnreadable {
        /// The library file.
        path: PathBuf,
        /// The I/O error (in the message, so not a `source`).
        error: std::io::Error,
    },
    /// A library it needs is in none of the loader's directories.
    #[error(
        "needs shared library {name}, found in none of {dirs:?}: build the image on the \
         machine the binary was built on, or pass a statically linked binary with --binary"
    )]
    LibraryMissing {
        /// The library's name.
        name: String,
        /// Where it was looked for.
        dirs: Vec<PathBuf>,
    },
}
