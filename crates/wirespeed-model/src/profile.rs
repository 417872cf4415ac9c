//! Cloud profiles: the bandwidth rules of one kind of machine, as data.
//! The built-in ones live in the repository's `profiles/` directory, one
//! TOML file each, every figure commented with its source.

use crate::error::ModelError;
use serde::{Deserialize, Serialize};

/// Version of the profile file format and of the model's output types.
pub const SCHEMA_VERSION: u32 = 1;

/// The built-in profiles: (name, TOML text).
const BUILTIN: &[(&str, &str)] = &[
    ("gce", include_str!("../../../profiles/gce.toml")),
    ("ibm-vpc", include_str!("../../../profiles/ibm-vpc.toml")),
    (
        "tpu-multinic",
        include_str!("../../../profiles/tpu-multinic.toml"),
    ),
    ("aws", include_str!("../../../profiles/aws.toml")),
    ("azure", include_str!("../../../profiles/azure.toml")),
    ("lab", include_str!("../../../profiles/lab.toml")),
    ("custom", include_str!("../../../profiles/custom.toml")),
];

/// One instance size a profile knows: its vCPUs, and where known its
/// per-VM bandwidth and its price.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// The provider's name for the size, e.g. `e2-standard-8`.
    pub name: String,
    /// vCPUs of the size.
    pub vcpus: u32,
    /// NICs it is usually run with (default: the profile's `default_nics`).
    #[serde(default)]
    pub nics: Option<u32>,
    /// Its own per-VM bandwidth, Gbit/s, where the provider lists one per size.
    #[serde(default)]
    pub vm_cap_gbit: Option<f64>,
    /// Price per hour, in the profile's currency.
    #[serde(default)]
    pub price_per_hour: Option<f64>,
}

/// The bandwidth rules of one kind of machine. Rates are in Gbit/s, as
/// providers publish them; every figure is optional where not known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Short name, e.g. `ibm-vpc`.
    pub name: String,
    /// One line saying what machine it describes.
    pub description: String,
    /// Where the figures come from, one line each.
    #[serde(default)]
    pub sources: Vec<String>,
    /// VM bandwidth per vCPU, Gbit/s (VM total = vCPUs x this, up to `vm_cap_gbit`).
    #[serde(default)]
    pub per_vcpu_gbit: Option<f64>,
    /// Per-VM cap, Gbit/s.
    #[serde(default)]
    pub vm_cap_gbit: Option<f64>,
    /// Share of the VM total that network traffic may use, 0..1 (default 1).
    #[serde(default)]
    pub network_share: Option<f64>,
    /// Per-NIC cap, Gbit/s, one way.
    #[serde(default)]
    pub nic_cap_gbit: Option<f64>,
    /// Whether the VM's network share is divided evenly over its NICs.
    #[serde(default)]
    pub split_over_nics: bool,
    /// NICs assumed when none are given.
    #[serde(default = "one")]
    pub default_nics: u32,
    /// Most NICs a VM of this kind has.
    #[serde(default)]
    pub max_nics: Option<u32>,
    /// Per-flow (5-tuple) cap, Gbit/s.
    #[serde(default)]
    pub flow_cap_gbit: Option<f64>,
    /// MTU of the profile's NICs, for information.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// The caps come from the command line (lab, custom): at least one is required.
    #[serde(default)]
    pub caps_from_flags: bool,
    /// Currency of the prices.
    #[serde(default = "usd")]
    pub currency: String,
    /// Remarks shown with the ceilings.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Instance sizes, with per-size bandwidth and prices where known.
    #[serde(default, rename = "instance")]
    pub instances: Vec<Instance>,
}

fn one() -> u32 {
    1
}

fn usd() -> String {
    "USD".into()
}

/// Checks a rate or price read from a file: finite and above zero.
fn positive(what: &str, v: Option<f64>) -> Result<(), ModelError> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => Err(ModelError::Profile(format!(
            "{what} must be a number above 0, got {x}"
        ))),
        _ => Ok(()),
    }
}

impl Profile {
    /// Parses and validates a profile from TOML text.
    pub fn from_toml_str(text: &str) -> Result<Profile, ModelError> {
        let p: Profile = toml::from_str(text).map_err(|e| {
            ModelError::Profile(
                e.to_string()
                    .trim_end()
                    .replace("TOML parse error", "profile file"),
            )
        })?;
        p.validate()?;
        Ok(p)
    }

    /// Checks the figures: rates and prices above 0, a share in (0, 1],
    /// at least one NIC, instance names unique.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |m: String| Err(ModelError::Profile(m));
        if self.schema_version != SCHEMA_VERSION {
            return bad(format!(
                "schema_version {} is not supported (this wirespeed reads {SCHEMA_VERSION})",
                self.schema_version
            ));
        }
        if self.name.trim().is_empty() {
            return bad("`name` must not be empty".into());
        }
        positive("per_vcpu_gbit", self.per_vcpu_gbit)?;
        positive("vm_cap_gbit", self.vm_cap_gbit)?;
        positive("nic_cap_gbit", self.nic_cap_gbit)?;
        positive("flow_cap_gbit", self.flow_cap_gbit)?;
        if let Some(s) = self.network_share
            && !(s.is_finite() && s > 0.0 && s <= 1.0)
        {
            return bad(format!("network_share must be in (0, 1], got {s}"));
        }
        if self.default_nics == 0 || self.max_nics == Some(0) {
            return bad("default_nics and max_nics must be at least 1".into());
        }
        if let Some(m) = self.max_nics
            && self.default_nics > m
        {
            return bad(format!(
                "default_nics {} exceeds max_nics {m}",
                self.default_nics
            ));
        }
        for (i, inst) in self.instances.iter().enumerate() {
            let at = format!("[[instance]] #{} ({:?})", i + 1, inst.name);
            if inst.name.trim().is_empty() || inst.vcpus == 0 || inst.nics == Some(0) {
                return bad(format!("{at}: needs a name, vcpus >= 1 and nics >= 1"));
            }
            positive(&format!("{at} vm_cap_gbit"), inst.vm_cap_gbit)?;
            positive(&format!("{at} price_per_hour"), inst.price_per_hour)?;
            if self.instances[..i].iter().any(|o| o.name == inst.name) {
                return bad(format!("{at}: the name appears twice"));
            }
        }
        Ok(())
    }

    /// The instance size of that name.
    pub fn instance(&self, name: &str) -> Option<&Instance> {
        self.instances.iter().find(|i| i.name == name)
    }
}

/// Names of the built-in profiles.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

/// A built-in profile by name.
pub fn builtin(name: &str) -> Result<Profile, ModelError> {
    match BUILTIN.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => Profile::from_toml_str(text)
            .map_err(|e| ModelError::Profile(format!("built-in {name}: {e}"))),
        None => Err(ModelError::UnknownProfile {
            name: name.to_string(),
            known: builtin_names().join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_is_named_after_its_file() {
        for n in builtin_names() {
            let p = builtin(n).unwrap();
            assert_eq!(p.name, n);
            assert!(!p.sources.is_empty(), "{n} names no source");
        }
        assert!(matches!(
            builtin("nope"),
            Err(ModelError::UnknownProfile { .. })
        ));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let base = "schema_version = 1\nname = \"x\"\ndescription = \"d\"\n";
        let err = |extra: &str| {
            Profile::from_toml_str(&format!("{base}{extra}"))
                .unwrap_err()
                .to_string()
        };
        assert!(err("network_share = 1.5").contains("network_share"));
        assert!(err("nic_cap_gbit = -3").contains("nic_cap_gbit"));
        assert!(err("default_nics = 0").contains("default_nics"));
        assert!(err("bogus = 1").contains("bogus"));
        assert!(err("[[instance]]\nname = \"a\"\nvcpus = 0\n").contains("vcpus"));
        assert!(
            err("[[instance]]\nname = \"a\"\nvcpus = 1\n[[instance]]\nname = \"a\"\nvcpus = 2\n")
                .contains("twice")
        );
        let e = Profile::from_toml_str("schema_version = 2\nname = \"x\"\ndescription = \"\"")
            .unwrap_err();
        assert!(e.to_string().contains("schema_version 2"));
        assert!(Profile::from_toml_str("not toml [").is_err());
    }
}
