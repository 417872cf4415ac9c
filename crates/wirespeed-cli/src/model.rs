//! The flags of `wirespeed model` and `wirespeed explain`, and the machine
//! and rates they name.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use wirespeed_model::{Profile, Query, builtin, builtin_names};
use wirespeed_types::spec::parse_rate;

/// The machine: a profile, its size and caps that override the profile's.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProfileArgs {
    /// Cloud profile: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file's path.
    #[arg(long)]
    pub profile: Option<String>,
    /// vCPUs of the VM.
    #[arg(long, requires = "profile")]
    pub vcpus: Option<u32>,
    /// NICs in use (explain: default the result's path count).
    #[arg(long, requires = "profile")]
    pub nics: Option<u32>,
    /// An instance size listed in the profile, e.g. e2-standard-8.
    #[arg(long, requires = "profile")]
    pub instance: Option<String>,
    /// Per-NIC cap, e.g. 25gbit (overrides the profile's).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long, requires = "profile")]
    pub nic_cap: Option<String>,
    /// Per-flow cap, e.g. 5gbit (overrides the profile's).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long, requires = "profile")]
    pub flow_cap: Option<String>,
    /// Per-VM cap, e.g. 100gbit (overrides the profile's rule).
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long, requires = "profile")]
    pub vm_cap: Option<String>,
}

/// What explain needs beyond the machine: facts about the path.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExplainOpts {
    /// The machine and its profile.
    #[command(flatten)]
    pub machine: ProfileArgs,
    /// Encapsulation on the path: vxlan, ipip, wireguard, ...
    #[arg(long)]
    pub encap: Option<String>,
    /// Cap of each path when known apart from the profile, e.g. a lab link's 1gbit.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long)]
    pub path_cap: Option<String>,
}

/// Options of `wirespeed model`.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// The machine and its profile.
    #[command(flatten)]
    pub machine: ProfileArgs,
    /// A price per hour: NAME=PRICE, VCPUS=PRICE, or PRICE for the size asked about; repeat or comma-separate.
    #[arg(long)]
    pub price: Vec<String>,
    /// Bandwidth needed, e.g. 10gbit: flows it takes, and the cheapest size that delivers it.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long)]
    pub target: Option<String>,
    /// List the built-in profiles.
    #[arg(long)]
    pub list: bool,
    /// Output: table or json.
    #[arg(long, value_enum, default_value_t = TableOrJson::Table)]
    pub format: TableOrJson,
    /// Short for --format json.
    #[arg(long)]
    pub json: bool,
}

/// Options of `wirespeed explain`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExplainArgs {
    /// A results file written by `wirespeed bench --json`.
    pub results: PathBuf,
    /// The machine, its profile and facts about the path.
    #[command(flatten)]
    pub opts: ExplainOpts,
    /// Output: table or json.
    #[arg(long, value_enum, default_value_t = TableOrJson::Table)]
    pub format: TableOrJson,
    /// Short for --format json.
    #[arg(long)]
    pub json: bool,
}

/// A built-in profile by name, else a profile file at that path.
pub fn load_profile(name: &str) -> Result<Profile> {
    if builtin_names().contains(&name) {
        return Ok(builtin(name)?);
    }
    let path = Path::new(name);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("read profile file {}", path.display()))?;
        return Profile::from_toml_str(&text).with_context(|| format!("in {}", path.display()));
    }
    // Neither: the error lists the built-in names.
    Ok(builtin(name)?)
}

/// An optional rate flag, in bits/s.
pub fn rate(flag: &str, s: &Option<String>) -> Result<Option<f64>> {
    s.as_deref()
        .map(|v| {
            parse_rate(v)
                .map(|b| b as f64)
                .map_err(|e| anyhow::anyhow!("{flag}: {e}"))
        })
        .transpose()
}

/// The profile named by the flags (None without --profile) and the query.
pub fn machine(a: &ProfileArgs, default_nics: Option<u32>) -> Result<Option<(Profile, Query)>> {
    let Some(name) = &a.profile else {
        return Ok(None);
    };
    let p = load_profile(name)?;
    let q = Query {
        vcpus: a.vcpus,
        nics: a.nics.or(default_nics),
        instance: a.instance.clone(),
        nic_cap_bps: rate("--nic-cap", &a.nic_cap)?,
        flow_cap_bps: rate("--flow-cap", &a.flow_cap)?,
        vm_cap_bps: rate("--vm-cap", &a.vm_cap)?,
    };
    Ok(Some((p, q)))
}

/// Whether any model flag asks for an explanation after a bench.
pub fn wants_explain(o: &ExplainOpts) -> bool {
    o.machine.profile.is_some() || o.encap.is_some() || o.path_cap.is_some()
}

/// Output of `model` and `explain`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableOrJson {
    /// Tables for people.
    Table,
    /// The result as JSON.
    Json,
}
