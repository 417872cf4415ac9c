//! Protocol versions, and the one rule for two releases that meet: each
//! side states the range of versions it speaks (its own and, so that a
//! rolling upgrade works, its predecessor's); they talk in the newest
//! version both speak, or fail naming both sides' versions and releases
//! and which side to upgrade.

/// This build's release, e.g. `0.1.0`.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");
/// This build as a peer names it, e.g. `wirespeed 0.1.0`.
pub const RELEASE_NAME: &str = concat!("wirespeed ", env!("CARGO_PKG_VERSION"));

/// Versions `min..=max` as a person reads them: `2`, or `2-3`.
pub fn range_text(min: u32, max: u32) -> String {
    if min >= max {
        max.to_string()
    } else {
        format!("{min}-{max}")
    }
}

/// What one side speaks of one protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speaks {
    /// The side's role as users read it: `runner`, `agent`, `server`.
    pub role: String,
    /// Its release, e.g. `wirespeed 0.1.0`, or what it said of itself.
    pub release: String,
    /// Oldest version it speaks.
    pub min: u32,
    /// Newest version it speaks.
    pub max: u32,
}

impl Speaks {
    /// This build in `role`, speaking `min..=max`.
    pub fn this(role: &str, min: u32, max: u32) -> Speaks {
        Speaks {
            role: role.to_string(),
            release: RELEASE_NAME.into(),
            min,
            max,
        }
    }

    /// The versions as a person reads them: `2`, or `2-3`.
    pub fn range(&self) -> String {
        range_text(self.min, self.max)
    }
}

/// Two sides that share no version of a protocol: both sides' ranges and
/// releases. Its text names which side is older and must be upgraded to
/// the other's release ([`Disagreement::older`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {} ({}) speaks {protocol} {} and the {} ({}) speaks {}: upgrade the {} to {} (a release speaks its own version and the one before)",
    .ours.role,
    .ours.release,
    .ours.range(),
    .theirs.role,
    .theirs.release,
    .theirs.range(),
    self.older().role,
    self.newer().release
)]
pub struct Disagreement {
    /// The protocol, e.g. "fleet protocol".
    pub protocol: &'static str,
    /// This side.
    pub ours: Box<Speaks>,
    /// The other side.
    pub theirs: Box<Speaks>,
}

impl Disagreement {
    /// The side whose versions are all older than the other's: the one
    /// to upgrade.
    pub fn older(&self) -> &Speaks {
        if self.theirs.max < self.ours.min {
            &self.theirs
        } else {
            &self.ours
        }
    }

    /// The side to upgrade to.
    pub fn newer(&self) -> &Speaks {
        if self.theirs.max < self.ours.min {
            &self.ours
        } else {
            &self.theirs
        }
    }
}

/// The newest version of `protocol` (e.g. "fleet protocol") both sides
/// speak, or why there is none: both ranges and releases, and which side
/// is older and must be upgraded to the other's release.
pub fn agree(protocol: &'static str, ours: &Speaks, theirs: &Speaks) -> Result<u32, Disagreement> {
    let v = ours.max.min(theirs.max);
    if v >= ours.min.max(theirs.min) {
        return Ok(v);
    }
    Err(Disagreement {
        protocol,
        ours: Box::new(ours.clone()),
        theirs: Box::new(theirs.clone()),
    })
}

/// Parses `min-max` or `v` (a stated range).
pub fn parse_range(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a <= b).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(role: &str, release: &str, min: u32, max: u32) -> Speaks {
        Speaks {
            role: role.into(),
            release: release.into(),
            min,
            max,
        }
    }

    #[test]
    fn the_newest_shared_version_wins() {
        let a = side("runner", "wirespeed 0.2.0", 2, 3);
        let b = side("agent", "wirespeed 0.1.0", 2, 2);
        assert_eq!(agree("fleet protocol", &a, &b), Ok(2));
        assert_eq!(agree("fleet protocol", &b, &a), Ok(2));
        let c = side("agent", "wirespeed 0.3.0", 3, 4);
        assert_eq!(agree("fleet protocol", &a, &c), Ok(3));
    }

    #[test]
    fn two_releases_apart_fail_naming_both_and_the_older_side() {
        let runner = side("runner", "wirespeed 0.3.0", 3, 4);
        let agent = side("agent", "wirespeed 0.1.0", 2, 2);
        let e = agree("fleet protocol", &runner, &agent).unwrap_err();
        assert_eq!(e.older().role, "agent");
        let e = e.to_string();
        assert!(
            e.contains("runner (wirespeed 0.3.0) speaks fleet protocol 3-4"),
            "{e}"
        );
        assert!(e.contains("agent (wirespeed 0.1.0) speaks 2"), "{e}");
        assert!(e.contains("upgrade the agent to wirespeed 0.3.0"), "{e}");
        let e = agree("fleet protocol", &agent, &runner).unwrap_err();
        assert_eq!(e.newer().release, "wirespeed 0.3.0");
        let e = e.to_string();
        assert!(e.contains("upgrade the agent to wirespeed 0.3.0"), "{e}");
    }

    #[test]
    fn ranges_parse_or_are_refused() {
        assert_eq!(parse_range("2"), Some((2, 2)));
        assert_eq!(parse_range("1-3"), Some((1, 3)));
        assert_eq!(parse_range("3-1"), None);
        assert_eq!(parse_range("x"), None);
        assert_eq!(parse_range(""), None);
    }
}
