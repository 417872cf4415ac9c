//! The wirespeed agent image, made without Docker or a base image: one
//! deterministic gzip'd tar layer (the binary, a non-root user, /tmp and,
//! for a dynamically linked binary, its loader and libraries from this
//! host), an OCI image config and manifest (oci-spec types), written as an
//! OCI image layout tar or pushed to a registry (oci-client); and whether
//! a registry holds an image ([`check`]), asked before a run pulls it.
//!
//! Not here: the CLI (`wirespeed k8s image build` in the binary) and
//! anything Kubernetes; the image is an ordinary OCI image.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod check;
mod error;
pub mod layout;
mod oci;
mod push;
mod rootfs;

/// The git commit the binary was built from ("unknown" outside git).
pub const GIT_COMMIT: &str = env!("WIRESPEED_GIT_COMMIT");

pub use error::{BinaryError, EncodeError, ImageError, PushError};
pub use oci::Blob;
pub use push::{PushOptions, push};

use flate2::Compression;
use flate2::write::GzEncoder;
use oci_spec::image::MediaType;
use std::io::Write;
use std::path::Path;

/// The image config's `org.opencontainers.image.*` labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    /// The wirespeed version.
    pub version: String,
    /// The git commit built from, or "unknown".
    pub revision: String,
    /// Where the source is, or "unknown".
    pub source: String,
}

impl Labels {
    /// The labels of the wirespeed this crate is built into.
    pub fn of_this_build() -> Labels {
        let source = env!("CARGO_PKG_REPOSITORY");
        Labels {
            version: env!("CARGO_PKG_VERSION").to_string(),
            revision: GIT_COMMIT.to_string(),
            source: if source.is_empty() { "unknown" } else { source }.to_string(),
        }
    }
}

/// A built image: its three blobs, and the host libraries it carries.
#[derive(Debug, Clone)]
pub struct Image {
    /// The gzip'd tar layer.
    pub layer: Blob,
    /// The image config (JSON).
    pub config: Blob,
    /// The image manifest (JSON); its digest names the image.
    pub manifest: Blob,
    /// Paths of the loader and shared libraries copied in (none for a
    /// static binary).
    pub libraries: Vec<String>,
}

impl Image {
    /// One line for the terminal: digest, platform, compressed size, the
    /// binary it was built from and the libraries taken from this host.
    pub fn summary(&self, binary: &std::path::Path) -> String {
        let mib = |n: u64| n as f64 / (1024.0 * 1024.0);
        let size = self.compressed_size();
        let bin = std::fs::metadata(binary).map(|m| m.len()).unwrap_or(0);
        let libs: Vec<&str> = self
            .libraries
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .collect();
        let libs = if libs.is_empty() {
            "static binary, no libraries".to_string()
        } else {
            format!("with {} from this host", libs.join(", "))
        };
        format!(
            "image {} ({}): {:.1} MiB compressed ({size} bytes); binary {} {:.1} MiB, {libs}",
            self.digest(),
            crate::platform(),
            mib(size),
            binary.display(),
            mib(bin),
        )
    }

    /// The manifest digest, `sha256:...`.
    pub fn digest(&self) -> String {
        self.manifest.digest()
    }

    /// Bytes a registry stores and a node pulls: layer, config, manifest.
    pub fn compressed_size(&self) -> u64 {
        [&self.layer, &self.config, &self.manifest]
            .iter()
            .map(|b| b.data.len() as u64)
            .sum()
    }
}

/// The image's platform in OCI (Go) names: `linux/amd64`, `linux/arm64`, ...
pub fn platform() -> String {
    format!("linux/{}", oci_spec::image::Arch::default())
}

/// Builds the image of the wirespeed binary at `binary` with `labels`.
/// The same binary and host libraries give the same digest.
pub fn build(binary: &Path, labels: &Labels) -> Result<Image, ImageError> {
    let bytes = std::fs::read(binary).map_err(|error| ImageError::Read {
        path: binary.to_path_buf(),
        error,
    })?;
    let libs = rootfs::libraries(binary, &bytes)?;
    let libraries = libs.iter().map(|(p, _)| p.clone()).collect();
    let tar = rootfs::Tree::new(bytes, libs).tar()?;
    let diff_id = oci::sha256_hex(&tar);
    let layer = Blob::new(MediaType::ImageLayerGzip, gzip(&tar)?);
    let config = oci::config(labels, &diff_id)?;
    let manifest = oci::manifest(&config, &layer)?;
    Ok(Image {
        layer,
        config,
        manifest,
        libraries,
    })
}

/// gzip at the best level; flate2's header has no mtime or name, so the
/// output depends on the input only.
fn gzip(data: &[u8]) -> Result<Vec<u8>, ImageError> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(data)
        .and_then(|_| gz.finish())
        .map_err(|e| ImageError::Encode {
            what: "the gzip'd layer",
            why: e.into(),
        })
}
