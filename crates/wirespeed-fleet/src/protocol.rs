//! The versions a fleet endpoint states. Every agent and watcher response
//! carries the [`HEADER`] (`wirespeed-protocol: fleet=2 control=1
//! release=0.1.0`), an agent's `/healthz` ends with the same words, and a
//! runner sends the header with each request. A runner reads the agent's
//! words in `/healthz` before it signs anything; an agent refuses a
//! request that states a fleet protocol it does not speak. Either way the
//! error names both sides' versions and releases and which side to
//! upgrade ([`wirespeed_types::protocol::agree`]). An endpoint that
//! states nothing predates the statements and spoke fleet 2, control 1.

use std::sync::LazyLock;
use wirespeed_types::protocol::{Disagreement, RELEASE, Speaks, agree, parse_range, range_text};

/// Newest fleet protocol this build speaks (the signed requests of
/// [`crate::auth`], whose first line is [`crate::auth::VERSION`], and
/// the API's bodies).
pub const FLEET_PROTOCOL: u32 = 2;
/// Oldest fleet protocol this build still speaks.
pub const MIN_FLEET_PROTOCOL: u32 = 2;
/// The header that states them, on requests and responses.
pub const HEADER: &str = "wirespeed-protocol";
/// The fleet protocol of an endpoint that states nothing.
const UNSTATED_FLEET: u32 = 2;

/// This build's statement: `fleet=2 control=1 release=0.1.0` (a range as
/// `2-3`), made once: every request and answer carries it.
pub fn statement() -> &'static str {
    static STATEMENT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "fleet={} control={} release={RELEASE}",
            range_text(MIN_FLEET_PROTOCOL, FLEET_PROTOCOL),
            range_text(
                wirespeed_engine::proto::MIN_PROTOCOL_VERSION,
                wirespeed_engine::proto::PROTOCOL_VERSION
            ),
        )
    });
    &STATEMENT
}

/// What the other side stated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stated {
    /// Its fleet protocol range.
    pub fleet: Option<(u32, u32)>,
    /// Its control protocol range.
    pub control: Option<(u32, u32)>,
    /// Its release.
    pub release: Option<String>,
}

impl Stated {
    /// Reads the `key=value` words of `text` (a header, or the rest of a
    /// `/healthz` line); other words are ignored, so later releases may
    /// add some.
    pub fn parse(text: &str) -> Stated {
        let mut s = Stated::default();
        for w in text.split(|c: char| c.is_whitespace() || c == ';' || c == ',') {
            match w.split_once('=') {
                Some(("fleet", v)) => s.fleet = parse_range(v),
                Some(("control", v)) => s.control = parse_range(v),
                // Printable only: a peer's words reach the user's terminal.
                Some(("release", v)) if !v.is_empty() => {
                    s.release = Some(v.chars().filter(char::is_ascii_graphic).take(40).collect())
                }
                _ => {}
            }
        }
        s
    }

    /// The fleet protocol it speaks, as `role`.
    fn fleet_side(&self, role: &str) -> Speaks {
        let (min, max) = self.fleet.unwrap_or((UNSTATED_FLEET, UNSTATED_FLEET));
        let release = match (&self.release, self.fleet) {
            (Some(r), _) => format!("wirespeed {r}"),
            (None, None) => "a release that states no version".into(),
            (None, Some(_)) => "an unnamed release".into(),
        };
        Speaks {
            role: role.into(),
            release,
            min,
            max,
        }
    }
}

/// The fleet protocol this build (as `ours`) and a side that stated
/// `theirs` (as `their_role`) agree on, or the error naming both.
pub fn agree_fleet(ours: &str, theirs: &Stated, their_role: &str) -> Result<u32, Disagreement> {
    let me = Speaks::this(ours, MIN_FLEET_PROTOCOL, FLEET_PROTOCOL);
    agree("fleet protocol", &me, &theirs.fleet_side(their_role))
}

/// Middleware of the agent's router (`stamp_as` as the agent).
pub async fn stamp(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    stamp_as("agent", req, next).await
}

/// Middleware of the watcher's router (`stamp_as` as the watcher).
pub async fn stamp_watcher(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    stamp_as("watcher", req, next).await
}

/// A request that states a fleet protocol this build does not speak gets
/// 400 naming both sides (this one as `role`); every response states this
/// build's versions.
async fn stamp_as(
    role: &str,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let stated = req
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .map(Stated::parse)
        .filter(|s| s.fleet.is_some());
    let mut resp = match stated.map(|s| agree_fleet(role, &s, "runner")) {
        Some(Err(why)) => {
            crate::agent::api::json_error(axum::http::StatusCode::BAD_REQUEST, why.to_string())
        }
        _ => next.run(req).await,
    };
    if let Ok(v) = axum::http::HeaderValue::from_str(statement()) {
        resp.headers_mut().insert(HEADER, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_build_states_what_it_speaks_and_reads_itself_back() {
        let s = Stated::parse(statement());
        assert_eq!(s.fleet, Some((MIN_FLEET_PROTOCOL, FLEET_PROTOCOL)));
        assert_eq!(s.release.as_deref(), Some(RELEASE));
        assert_eq!(agree_fleet("runner", &s, "agent"), Ok(FLEET_PROTOCOL));
    }

    #[test]
    fn an_endpoint_that_states_nothing_spoke_fleet_2() {
        let s = Stated::parse("");
        assert_eq!(agree_fleet("runner", &s, "agent"), Ok(2));
    }

    #[test]
    fn a_release_two_apart_is_named_with_what_to_upgrade() {
        let s = Stated::parse("fleet=7-8; control=5 release=0.9.0");
        let e = agree_fleet("runner", &s, "agent").unwrap_err().to_string();
        assert!(e.contains("agent (wirespeed 0.9.0) speaks 7-8"), "{e}");
        assert!(e.contains("upgrade the runner to wirespeed 0.9.0"), "{e}");
        assert!(e.contains(&format!("wirespeed {RELEASE}")), "{e}");
    }

    #[test]
    fn a_peers_release_reaches_the_terminal_printable_only() {
        let s = Stated::parse("fleet=7 release=9.0\u{1b}[2J\u{7}.0");
        assert_eq!(s.release.as_deref(), Some("9.0[2J.0"));
    }
}
