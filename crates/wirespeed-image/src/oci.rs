//! The OCI documents (oci-spec types): the image config, the manifest and
//! a layout's index, each serialized as canonical JSON (sorted keys, no
//! spaces) so the same inputs give the same digests.

use crate::{EncodeError, ImageError, Labels, rootfs};
use oci_spec::image::{
    ANNOTATION_REF_NAME, ANNOTATION_REVISION, ANNOTATION_SOURCE, ANNOTATION_TITLE,
    ANNOTATION_VERSION, Arch, ConfigBuilder, Descriptor, ImageConfigurationBuilder,
    ImageIndexBuilder, ImageManifestBuilder, MediaType, Os, RootFsBuilder, Sha256Digest,
};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::str::FromStr;

/// A content-addressed blob: a layer, a config or a manifest.
#[derive(Debug, Clone)]
pub struct Blob {
    /// Its OCI media type.
    pub media_type: MediaType,
    /// The hex SHA-256 of `data` (without the `sha256:` prefix).
    pub hex: String,
    /// The bytes.
    pub data: Vec<u8>,
}

impl Blob {
    /// A blob of `data` with its digest.
    pub fn new(media_type: MediaType, data: Vec<u8>) -> Blob {
        Blob {
            media_type,
            hex: sha256_hex(&data),
            data,
        }
    }

    /// `sha256:HEX`.
    pub fn digest(&self) -> String {
        format!("sha256:{}", self.hex)
    }

    /// The blob's descriptor (media type, digest, size).
    pub fn descriptor(&self) -> Result<Descriptor, ImageError> {
        let d = Sha256Digest::from_str(&self.hex).map_err(|e| encode("a descriptor", e))?;
        Ok(Descriptor::new(
            self.media_type.clone(),
            self.data.len() as u64,
            d,
        ))
    }
}

/// Hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn encode(what: &'static str, e: impl Into<EncodeError>) -> ImageError {
    ImageError::Encode {
        what,
        why: e.into(),
    }
}

/// `value` as canonical JSON (olpc-cjson: sorted keys, no whitespace).
fn canonical(what: &'static str, value: &impl serde::Serialize) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, olpc_cjson::CanonicalFormatter::new());
    value.serialize(&mut ser).map_err(|e| encode(what, e))?;
    Ok(out)
}

/// The image config: this build's architecture, linux, the unprivileged
/// user, the binary as entrypoint, the labels and the layer's diff_id
/// (`diff_id_hex`: SHA-256 of the uncompressed tar).
pub fn config(labels: &Labels, diff_id_hex: &str) -> Result<Blob, ImageError> {
    let e = |e: oci_spec::OciSpecError| encode("the image config", e);
    let uid = rootfs::USER_ID;
    let run = ConfigBuilder::default()
        .user(format!("{uid}:{uid}"))
        .entrypoint(vec![rootfs::BINARY_PATH.to_string()])
        .cmd(vec!["agent".to_string(), "--help".to_string()])
        .env(vec![
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
        ])
        .labels(label_map(labels))
        .build()
        .map_err(e)?;
    let rootfs = RootFsBuilder::default()
        .typ("layers")
        .diff_ids(vec![format!("sha256:{diff_id_hex}")])
        .build()
        .map_err(e)?;
    let cfg = ImageConfigurationBuilder::default()
        .architecture(Arch::default())
        .os(Os::Linux)
        .config(run)
        .rootfs(rootfs)
        .build()
        .map_err(e)?;
    Ok(Blob::new(
        MediaType::ImageConfig,
        canonical("the image config", &cfg)?,
    ))
}

fn label_map(l: &Labels) -> HashMap<String, String> {
    HashMap::from([
        (ANNOTATION_TITLE.to_string(), "wirespeed".to_string()),
        (ANNOTATION_VERSION.to_string(), l.version.clone()),
        (ANNOTATION_SOURCE.to_string(), l.source.clone()),
        (ANNOTATION_REVISION.to_string(), l.revision.clone()),
    ])
}

/// The image manifest of `config` and one gzip'd `layer`.
pub fn manifest(config: &Blob, layer: &Blob) -> Result<Blob, ImageError> {
    let m = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(config.descriptor()?)
        .layers(vec![layer.descriptor()?])
        .build()
        .map_err(|e| encode("the image manifest", e))?;
    Ok(Blob::new(
        MediaType::ImageManifest,
        canonical("the image manifest", &m)?,
    ))
}

/// A layout's index.json: `manifest`, named `ref_name`.
pub fn index(manifest: &Blob, ref_name: &str) -> Result<Vec<u8>, ImageError> {
    let mut d = manifest.descriptor()?;
    d.set_annotations(Some(HashMap::from([(
        ANNOTATION_REF_NAME.to_string(),
        ref_name.to_string(),
    )])));
    let idx = ImageIndexBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![d])
        .build()
        .map_err(|e| encode("the layout's index.json", e))?;
    canonical("the layout's index.json", &idx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_json_is_canonical_and_names_the_user() {
        let l = Labels {
            version: "1.2.3".into(),
            revision: "abc".into(),
            source: "src".into(),
        };
        let a = config(&l, &"0".repeat(64)).unwrap();
        let b = config(&l, &"0".repeat(64)).unwrap();
        assert_eq!(a.hex, b.hex);
        let v: serde_json::Value = serde_json::from_slice(&a.data).unwrap();
        assert_eq!(v["config"]["User"], "65532:65532");
        assert_eq!(v["os"], "linux");
        assert_eq!(v["config"]["Labels"][ANNOTATION_VERSION], "1.2.3");
        assert_eq!(v["config"]["Labels"][ANNOTATION_REVISION], "abc");
        let text = String::from_utf8(a.data).unwrap();
        assert!(text.find("\"architecture\"") < text.find("\"config\""));
    }
}
