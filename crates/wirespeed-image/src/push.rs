//! Pushing the image to a registry over the OCI distribution API
//! (oci-client): the layer and config blobs, then the manifest exactly as
//! built, so the digest pushed is the digest printed.

use crate::{Image, ImageError, PushError};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use std::time::Duration;

/// How to reach the registry.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// Talk HTTP, not HTTPS (a local registry).
    pub plain_http: bool,
    /// Basic-auth user and password; anonymous when `None`.
    pub credentials: Option<(String, String)>,
}

/// Pushes `image` to `reference` (REGISTRY/REPO:TAG) and returns
/// `REFERENCE@sha256:...`, the name that pins exactly this image.
pub fn push(image: &Image, reference: &str, o: &PushOptions) -> Result<String, ImageError> {
    let fail = |step: &'static str, why: PushError| ImageError::Push {
        reference: reference.to_string(),
        step,
        why,
    };
    let r: Reference = reference
        .parse()
        .map_err(|e| fail("parse the reference", PushError::Reference(e)))?;
    if r.digest().is_some() {
        return Err(fail("parse the reference", PushError::Digest));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail("start the HTTP client's runtime", PushError::Runtime(e)))?;
    rt.block_on(upload(image, &r, o))
        .map_err(|(step, why)| fail(step, why))?;
    Ok(format!("{reference}@{}", image.manifest.digest()))
}

async fn upload(
    image: &Image,
    r: &Reference,
    o: &PushOptions,
) -> Result<(), (&'static str, PushError)> {
    let client = Client::new(ClientConfig {
        protocol: if o.plain_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        connect_timeout: Some(Duration::from_secs(15)),
        read_timeout: Some(Duration::from_secs(120)),
        ..ClientConfig::default()
    });
    let auth = match &o.credentials {
        Some((u, p)) => RegistryAuth::Basic(u.clone(), p.clone()),
        None => RegistryAuth::Anonymous,
    };
    let hint = |error: oci_client::errors::OciDistributionError| PushError::Registry {
        error,
        plain_http: o.plain_http,
    };
    client
        .auth(r, &auth, RegistryOperation::Push)
        .await
        .map_err(|e| ("authenticate", hint(e)))?;
    for (step, b) in [
        ("upload the layer", &image.layer),
        ("upload the config", &image.config),
    ] {
        client
            .push_blob(r, &b.data, &b.digest())
            .await
            .map_err(|e| (step, hint(e)))?;
    }
    let ct = http::HeaderValue::from_static("application/vnd.oci.image.manifest.v1+json");
    client
        .push_manifest_raw(r, image.manifest.data.clone(), ct)
        .await
        .map_err(|e| ("upload the manifest", hint(e)))?;
    Ok(())
}
