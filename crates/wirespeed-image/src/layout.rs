//! The image as an OCI image layout in one tar (`oci-layout`, `index.json`,
//! `blobs/sha256/...`), what `ctr images import` and `skopeo copy oci-archive:`
//! read.

use crate::{EncodeError, Image, ImageError, oci};
use oci_spec::image::OciLayoutBuilder;
use std::path::Path;

/// The layout tar's bytes, the manifest named `ref_name` in index.json.
pub fn tar(image: &Image, ref_name: &str) -> Result<Vec<u8>, ImageError> {
    let layout = OciLayoutBuilder::default()
        .image_layout_version("1.0.0")
        .build()
        .map_err(enc)?;
    let layout = serde_json::to_vec(&layout).map_err(enc)?;
    let index = oci::index(&image.manifest, ref_name)?;
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |path: &str, data: &[u8]| {
        let mut h = tar::Header::new_ustar();
        h.set_mode(if path.ends_with('/') { 0o755 } else { 0o644 });
        h.set_mtime(0);
        h.set_size(data.len() as u64);
        let dir = path.ends_with('/');
        h.set_entry_type(if dir {
            tar::EntryType::Directory
        } else {
            tar::EntryType::Regular
        });
        b.append_data(&mut h, path, data).map_err(enc)
    };
    add("oci-layout", &layout)?;
    add("index.json", &index)?;
    add("blobs/", &[])?;
    add("blobs/sha256/", &[])?;
    for blob in [&image.layer, &image.config, &image.manifest] {
        add(&format!("blobs/sha256/{}", blob.hex), &blob.data)?;
    }
    b.into_inner().map_err(enc)
}

/// Writes the layout tar to `path`.
pub fn write(image: &Image, ref_name: &str, path: &Path) -> Result<(), ImageError> {
    let data = tar(image, ref_name)?;
    std::fs::write(path, data).map_err(|error| ImageError::Write {
        path: path.to_path_buf(),
        error,
    })
}

fn enc(why: impl Into<EncodeError>) -> ImageError {
    ImageError::Encode {
        what: "the OCI layout tar",
        why: why.into(),
    }
}
