//! Whether a registry holds an image, asked before a run applies pods
//! that pull it: a registry that answers "manifest unknown" turns a
//! minute of ImagePullBackOff into an error before anything is applied.
//! Only that answer is news; a registry that cannot be reached from here,
//! asks for credentials or answers otherwise decides nothing (the nodes
//! may reach it, with their own pull secrets).

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use std::time::Duration;

/// What the registry said about an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    /// It has the manifest (its digest).
    Found(String),
    /// It answered that the manifest or repository is unknown (its words).
    Missing(String),
    /// Nothing decided: why not.
    Unknown(String),
}

/// Asks the registry of `reference` for its manifest, anonymously, over
/// HTTPS and then plain HTTP, each bounded by `limit`.
pub fn presence(reference: &str, limit: Duration) -> Presence {
    let r: Reference = match reference.parse() {
        Ok(r) => r,
        Err(e) => return Presence::Unknown(format!("not an image reference: {e}")),
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return Presence::Unknown(format!("no runtime for the HTTP client: {e}")),
    };
    let mut why = String::new();
    for protocol in [ClientProtocol::Https, ClientProtocol::Http] {
        let client = Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(limit),
            read_timeout: Some(limit),
            ..ClientConfig::default()
        });
        let ask = client.fetch_manifest_digest(&r, &RegistryAuth::Anonymous);
        let asked = rt.block_on(async { tokio::time::timeout(limit * 2, ask).await });
        match asked {
            Ok(Ok(digest)) => return Presence::Found(digest),
            Ok(Err(e)) => match missing(&e) {
                Some(words) => return Presence::Missing(words),
                None => why = e.to_string(),
            },
            Err(_) => why = format!("no answer within {} s", (limit * 2).as_secs()),
        }
    }
    Presence::Unknown(why)
}

/// The registry's words when `e` says the manifest or repository is
/// unknown (a 404), else None.
fn missing(e: &OciDistributionError) -> Option<String> {
    match e {
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|x| {
                matches!(
                    x.code,
                    OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
                )
            })
            .then(|| envelope.to_string()),
        OciDistributionError::ServerError { code: 404, .. }
        | OciDistributionError::ImageManifestNotFoundError(_) => Some(e.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_registry_decides_nothing() {
        // A closed port on loopback: refused at once over both protocols.
        let p = presence("127.0.0.1:9/wirespeed:dev", Duration::from_secs(2));
        assert!(matches!(p, Presence::Unknown(_)), "{p:?}");
        let p = presence("not a reference!", Duration::from_secs(2));
        assert!(
            matches!(p, Presence::Unknown(ref w) if w.contains("not an image reference")),
            "{p:?}"
        );
    }
}
