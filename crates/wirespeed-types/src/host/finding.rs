//! Doctor's findings: what limits bandwidth or latency, the values read as
//! evidence, the reason and the fix (wirespeed-host's doctor makes them;
//! it re-exports them as `wirespeed_host::doctor`).

use super::tune::Action;
use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; may cost a little.
    Info,
    /// Likely limits throughput or latency.
    Warn,
    /// Certainly limits it (a NIC never used, a hash that cannot spread).
    Critical,
}

/// One named value the finding rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// What was read (e.g. "eth1 mtu").
    pub name: String,
    /// Its value.
    pub value: String,
}

/// One diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier (jumbo-frames, socket-buffers, big-tcp, ...).
    pub id: String,
    /// Severity.
    pub severity: Severity,
    /// One line.
    pub title: String,
    /// The values it rests on.
    pub evidence: Vec<Evidence>,
    /// Why it limits bandwidth or latency.
    pub why: String,
    /// The host changes that fix it (empty when the fix is elsewhere).
    pub actions: Vec<Action>,
    /// Bench flags that use what the host has (e.g. more flows, all paths).
    pub bench_flags: Option<String>,
    /// Set when nothing measured shows the fix is safe (an MTU raise the
    /// path may not carry): why. `tune apply` applies it only with --force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<String>,
}
