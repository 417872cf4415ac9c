//! wirespeed's capacity model: what a machine should deliver, and why a
//! measured result falls short of it.
//!
//! A [`Profile`] holds one cloud's bandwidth rules as data (the built-in
//! ones are the TOML files of the repository's `profiles/` directory, each
//! figure with its source). [`ceilings`] turns a profile and a machine size
//! into per-flow, per-NIC and per-VM ceilings and the flows needed to reach
//! them; [`price_table`] prices sizes per delivered Gbit/s; [`explain`] sets
//! a [`TestResult`](wirespeed_types::TestResult) against the ceilings and
//! names the bottleneck with the numbers it rests on.
//!
//! Pure functions over data: this crate reads no files and touches no
//! host. Callers read profile files and results and hand over the text or
//! the values.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod bottleneck;
mod ceilings;
mod error;
mod explain;
mod explain_latency;
mod explain_udp;
pub mod optimize;
mod price;
mod profile;

pub use bottleneck::{
    ABOVE_CAP, AT_CAP, BUFFER_LIMITED, BUSY_THREAD_MIN, Bottleneck, BottleneckKind, CPU_BUSY_PCT,
    Evidence, ExplainReport, ExplainedResult, Explanation, FAIRNESS_MIN, Facts, IDLE,
    PATH_BALANCE_MIN, PercentOf, RETRANS_RATE,
};
pub use ceilings::{Ceilings, Query, ceilings, flows_needed};
pub use error::ModelError;
pub use explain::{encap_overhead, explain};
pub use price::{PriceInput, PriceRow, PriceTable, price_table};
pub use profile::{Instance, Profile, SCHEMA_VERSION, builtin, builtin_names};

use serde::{Deserialize, Serialize};

/// What `wirespeed model --json` prints: the ceilings, the flows a target
/// needs, and the price table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelReport {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The profile's description.
    pub description: String,
    /// Where the profile's figures come from.
    pub sources: Vec<String>,
    /// The ceilings of the machine asked about.
    pub ceilings: Ceilings,
    /// The bandwidth needed, bits per second, if given.
    pub target_bps: Option<f64>,
    /// Flows needed to carry the target under the per-flow cap.
    pub flows_for_target: Option<u32>,
    /// Sizes priced per delivered Gbit/s (empty rows when no prices are known).
    pub prices: PriceTable,
}

/// Ceilings, flows for the target and the price table in one call.
pub fn model(
    p: &Profile,
    q: &Query,
    prices: &[PriceInput],
    target_bps: Option<f64>,
) -> Result<ModelReport, ModelError> {
    let c = ceilings(p, q)?;
    let prices = price_table(p, q, prices, target_bps)?;
    let flows_for_target = match (target_bps, c.per_flow_bps) {
        (Some(t), Some(f)) => flows_needed(t, f),
        _ => None,
    };
    Ok(ModelReport {
        schema_version: SCHEMA_VERSION,
        description: p.description.clone(),
        sources: p.sources.clone(),
        ceilings: c,
        target_bps,
        flows_for_target,
        prices,
    })
}

/// A rate in Gbit/s with at most two decimals and no trailing zeros: `12`, `1.25`.
pub(crate) fn gbits(bps: f64) -> String {
    let s = format!("{:.2}", bps / 1e9);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
