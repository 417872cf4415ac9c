//! How a request that starts traffic proves the fleet key.
//!
//! The caller sends three headers:
//!
//! - `x-wirespeed-date`: Unix time in seconds;
//! - `x-wirespeed-nonce`: 16 random bytes in hex, never reused;
//! - `x-wirespeed-signature`: hex HMAC-SHA256 under the key (the same
//!   key file as the engine server's `--key-file`) of
//!   `wirespeed-fleet-v1\n{METHOD}\n{PATH}\n{date}\n{nonce}\n{hex SHA-256 of the body}`.
//!
//! The agent accepts a request whose date is within [`MAX_SKEW`] of its
//! own clock and whose nonce it has not seen in that window; so a
//! captured request cannot be replayed, and the window bounds the nonces
//! it must remember ([`MAX_NONCES`]; when full it refuses new requests
//! until old ones age out rather than forget one). The key never crosses
//! the wire. Reads (`GET`) need no key.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Header with the request's Unix time, seconds.
pub const DATE: &str = "x-wirespeed-date";
/// Header with the request's nonce (32 hex digits).
pub const NONCE: &str = "x-wirespeed-nonce";
/// Header with the signature (64 hex digits).
pub const SIGNATURE: &str = "x-wirespeed-signature";
/// How far a request's date may be from the agent's clock.
pub const MAX_SKEW: Duration = Duration::from_secs(60);
/// Most nonces remembered at once.
pub const MAX_NONCES: usize = 100_000;

type HmacSha256 = Hmac<Sha256>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

fn message(method: &str, path: &str, date: u64, nonce: &str, body: &[u8]) -> Vec<u8> {
    format!(
        "wirespeed-fleet-v1\n{method}\n{path}\n{date}\n{nonce}\n{}",
        hex(&Sha256::digest(body))
    )
    .into_bytes()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The three headers that sign a request (name, value).
pub fn sign(key: &[u8], method: &str, path: &str, body: &[u8]) -> [(&'static str, String); 3] {
    let mut n = [0u8; 16];
    // A failing system RNG leaves a zero nonce: the agent then refuses
    // the second such request as a replay, which is safe.
    let _ = getrandom::fill(&mut n);
    sign_at(key, method, path, body, now(), &hex(&n))
}

/// [`sign`] with a given date and nonce (tests).
pub fn sign_at(
    key: &[u8],
    method: &str,
    path: &str,
    body: &[u8],
    date: u64,
    nonce: &str,
) -> [(&'static str, String); 3] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(&message(method, path, date, nonce, body));
    [
        (DATE, date.to_string()),
        (NONCE, nonce.to_string()),
        (SIGNATURE, hex(&mac.finalize().into_bytes())),
    ]
}

/// Checks signatures and remembers nonces.
#[derive(Debug)]
pub struct Verifier {
    key: Vec<u8>,
    seen: HashMap<String, u64>,
    order: VecDeque<(u64, String)>,
}

impl Verifier {
    /// A verifier for `key`.
    pub fn new(key: Vec<u8>) -> Verifier {
        Verifier {
            key,
            seen: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Checks a request; `header` looks a header up. Err is the reason,
    /// for the 401 answer (never the expected signature).
    pub fn verify(
        &mut self,
        method: &str,
        path: &str,
        header: impl Fn(&str) -> Option<String>,
        body: &[u8],
    ) -> Result<(), String> {
        self.verify_at(method, path, header, body, now())
    }

    /// [`Verifier::verify`] at a given time (tests).
    pub fn verify_at(
        &mut self,
        method: &str,
        path: &str,
        header: impl Fn(&str) -> Option<String>,
        body: &[u8],
        now: u64,
    ) -> Result<(), String> {
        let (Some(date), Some(nonce), Some(sig)) = (header(DATE), header(NONCE), header(SIGNATURE))
        else {
            return Err(format!(
                "this request starts traffic and must be signed with the fleet key (headers {DATE}, {NONCE}, {SIGNATURE}; see docs/fleet.md)"
            ));
        };
        let date: u64 = date
            .trim()
            .parse()
            .map_err(|_| format!("{DATE} is not a Unix time"))?;
        if date.abs_diff(now) > MAX_SKEW.as_secs() {
            return Err(format!(
                "{DATE} is {} s from this agent's clock (at most {} s): check the clocks",
                date.abs_diff(now),
                MAX_SKEW.as_secs()
            ));
        }
        if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{NONCE} must be 32 hex digits"));
        }
        let sig = unhex(sig.trim()).ok_or_else(|| format!("{SIGNATURE} is not hex"))?;
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(&message(method, path, date, &nonce, body));
        mac.verify_slice(&sig).map_err(|_| {
            "wrong signature: the request was not signed with this fleet's key".to_string()
        })?;
        // Forget nonces whose dates left the window.
        while let Some((d, _)) = self.order.front() {
            if d.saturating_add(2 * MAX_SKEW.as_secs()) >= now {
                break;
            }
            let (_, n) = self.order.pop_front().expect("front exists");
            self.seen.remove(&n);
        }
        if self.seen.contains_key(&nonce) {
            return Err(
                "this request was seen before (replay refused): sign each request anew".into(),
            );
        }
        if self.seen.len() >= MAX_NONCES {
            return Err("too many signed requests in the replay window: retry in a minute".into());
        }
        self.seen.insert(nonce.clone(), date);
        self.order.push_back((date, nonce));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123";
    const NONCE1: &str = "00112233445566778899aabbccddeeff";

    fn headers<'a>(h: &'a [(&'static str, String); 3]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| h.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn a_signed_request_passes_once() {
        let mut v = Verifier::new(KEY.to_vec());
        let h = sign_at(KEY, "POST", "/v1/run", b"{}", 1000, NONCE1);
        v.verify_at("POST", "/v1/run", headers(&h), b"{}", 1010)
            .unwrap();
        let again = v.verify_at("POST", "/v1/run", headers(&h), b"{}", 1011);
        assert!(again.unwrap_err().contains("replay"));
    }

    #[test]
    fn wrong_key_body_path_date_or_missing_headers_are_refused() {
        let mut v = Verifier::new(KEY.to_vec());
        let h = sign_at(
            b"another key entirely",
            "POST",
            "/v1/run",
            b"{}",
            1000,
            NONCE1,
        );
        assert!(
            v.verify_at("POST", "/v1/run", headers(&h), b"{}", 1000)
                .unwrap_err()
                .contains("wrong signature")
        );
        let h = sign_at(KEY, "POST", "/v1/run", b"{}", 1000, NONCE1);
        assert!(
            v.verify_at("POST", "/v1/run", headers(&h), b"{ }", 1000)
                .is_err()
        );
        assert!(
            v.verify_at("POST", "/v1/fleet", headers(&h), b"{}", 1000)
                .is_err()
        );
        assert!(
            v.verify_at("POST", "/v1/run", headers(&h), b"{}", 1000 + 61)
                .unwrap_err()
                .contains("clock")
        );
        assert!(
            v.verify_at("POST", "/v1/run", |_| None, b"{}", 1000)
                .unwrap_err()
                .contains("must be signed")
        );
    }

    #[test]
    fn old_nonces_are_forgotten_after_the_window() {
        let mut v = Verifier::new(KEY.to_vec());
        let h = sign_at(KEY, "POST", "/p", b"", 1000, NONCE1);
        v.verify_at("POST", "/p", headers(&h), b"", 1000).unwrap();
        let h2 = sign_at(
            KEY,
            "POST",
            "/p",
            b"",
            1200,
            "ffeeddccbbaa99887766554433221100",
        );
        v.verify_at("POST", "/p", headers(&h2), b"", 1200).unwrap();
        assert_eq!(v.seen.len(), 1);
    }
}
