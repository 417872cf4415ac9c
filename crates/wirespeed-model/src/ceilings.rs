//! Ceilings: what a profile allows one flow, one NIC and one VM, for a
//! given size, and how many flows it takes to reach them.

use crate::error::ModelError;
use crate::profile::{Instance, Profile, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::gbits as g;

const GBIT: f64 = 1e9;

/// What the caller asks the model about: the machine's size and any caps
/// that override (or, for `lab` and `custom`, supply) the profile's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// vCPUs of the VM (required by per-vCPU profiles unless `instance` is given).
    pub vcpus: Option<u32>,
    /// NICs in use (default: the instance's, else the profile's).
    pub nics: Option<u32>,
    /// An instance size of the profile, by name.
    pub instance: Option<String>,
    /// Per-NIC cap, bits per second, replacing the profile's.
    pub nic_cap_bps: Option<f64>,
    /// Per-flow cap, bits per second, replacing the profile's.
    pub flow_cap_bps: Option<f64>,
    /// Per-VM cap, bits per second, replacing the profile's rule.
    pub vm_cap_bps: Option<f64>,
}

/// The ceilings of one machine under one profile, in bits per second.
/// `None` means the profile sets no such limit (or does not know it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Profile name.
    pub profile: String,
    /// The instance size used, if any.
    pub instance: Option<String>,
    /// vCPUs the figures are for.
    pub vcpus: Option<u32>,
    /// NICs the figures are for.
    pub nics: u32,
    /// One flow (5-tuple), one way.
    pub per_flow_bps: Option<f64>,
    /// One NIC, one way.
    pub per_nic_bps: Option<f64>,
    /// The VM's total before the network share (e.g. vCPUs x 2 Gbit/s, capped).
    pub vm_total_bps: Option<f64>,
    /// Share of the VM total that network traffic may use, 0..1.
    pub network_share: Option<f64>,
    /// The VM's network bandwidth: total x share.
    pub network_bps: Option<f64>,
    /// The VM, one way: the network bandwidth or the sum of its NICs, the lower.
    pub per_vm_one_way_bps: Option<f64>,
    /// The VM, both ways at once: each direction counts against its sender.
    pub per_vm_both_ways_bps: Option<f64>,
    /// Flows per NIC needed to reach the per-NIC ceiling: ceil(per NIC / per flow).
    pub flows_per_nic: Option<u32>,
    /// Flows needed to reach the one-way VM ceiling: ceil(per VM / per flow).
    pub flows_per_vm: Option<u32>,
    /// How each figure was reached, by name (`per_nic`, `per_vm_one_way`, ...).
    pub basis: BTreeMap<String, String>,
    /// The profile's remarks.
    pub notes: Vec<String>,
}

/// Flows needed to carry `target_bps` when one flow carries at most
/// `per_flow_bps`: ceil(target / per flow), at least 1.
pub fn flows_needed(target_bps: f64, per_flow_bps: f64) -> Option<u32> {
    if !(target_bps.is_finite() && per_flow_bps.is_finite() && per_flow_bps > 0.0) {
        return None;
    }
    // A hair of slack so that 25 / 5 is 5 flows, not 6 from rounding.
    let n = (target_bps / per_flow_bps - 1e-9).ceil();
    Some(n.clamp(1.0, u32::MAX as f64) as u32)
}

fn flag_rate(what: &str, v: Option<f64>) -> Result<Option<f64>, ModelError> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => Err(ModelError::Query(format!(
            "{what} must be a rate above 0, got {x} bit/s"
        ))),
        _ => Ok(v),
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// How each figure was reached, by name.
type Basis = BTreeMap<String, String>;

fn note(basis: &mut Basis, k: &str, v: String) {
    basis.insert(k.to_string(), v);
}

/// Computes the ceilings of a machine under a profile.
///
/// VM total = vCPUs x per-vCPU rate, capped by the VM cap (or the
/// instance's own figure, or `--vm-cap`); network = total x share; per
/// NIC = the NIC cap, or network / NICs when the profile splits the share
/// evenly, the lower; one way = network or NICs x per NIC, the lower; both
/// ways = 2 x one way.
pub fn ceilings(p: &Profile, q: &Query) -> Result<Ceilings, ModelError> {
    let nic_flag = flag_rate("--nic-cap", q.nic_cap_bps)?;
    let flow_flag = flag_rate("--flow-cap", q.flow_cap_bps)?;
    let vm_flag = flag_rate("--vm-cap", q.vm_cap_bps)?;
    let inst = instance_of(p, q)?;
    let (vcpus, nics) = machine_of(p, q, inst)?;
    if p.caps_from_flags && nic_flag.is_none() && flow_flag.is_none() && vm_flag.is_none() {
        return Err(ModelError::Query(format!(
            "profile {} takes its caps from the command line: give at least one of --nic-cap, --flow-cap, --vm-cap (e.g. --nic-cap 1gbit)",
            p.name
        )));
    }
    let mut basis = BTreeMap::new();
    let vm_total = vm_total(p, inst, vcpus, vm_flag, &mut basis)?;
    let network = vm_total.map(|t| t * p.network_share.unwrap_or(1.0));
    if let (Some(n), Some(s)) = (network, p.network_share) {
        note(
            &mut basis,
            "network",
            format!("{} Gbit/s x network share {s} = {} Gbit/s", g(n / s), g(n)),
        );
    }
    let nics_text = format!("{nics} NIC{}", if nics == 1 { "" } else { "s" });
    let per_nic = per_nic(p, network, nics, &nics_text, nic_flag, &mut basis);
    let one_way = one_way(p, network, per_nic, nics, &nics_text, &mut basis);
    let both = one_way.map(|o| 2.0 * o);
    if let Some(b) = both {
        note(
            &mut basis,
            "per_vm_both_ways",
            format!(
                "2 x one way = {} Gbit/s (each direction counts against its sender)",
                g(b)
            ),
        );
    }
    let per_flow = flow_flag.or(p.flow_cap_gbit.map(|c| c * GBIT));
    match (per_flow, flow_flag) {
        (Some(f), Some(_)) => note(
            &mut basis,
            "per_flow",
            format!("--flow-cap {} Gbit/s", g(f)),
        ),
        (Some(f), None) => note(
            &mut basis,
            "per_flow",
            format!("profile's flow cap {} Gbit/s", g(f)),
        ),
        (None, _) => note(
            &mut basis,
            "per_flow",
            "no per-flow cap in this profile".into(),
        ),
    }
    let flows_per_nic = match (per_nic, per_flow) {
        (Some(n), Some(f)) => flows_needed(n, f),
        _ => None,
    };
    let flows_per_vm = match (one_way, per_flow) {
        (Some(v), Some(f)) => flows_needed(v, f),
        _ => None,
    };
    Ok(Ceilings {
        schema_version: SCHEMA_VERSION,
        profile: p.name.clone(),
        instance: inst.map(|i| i.name.clone()),
        vcpus,
        nics,
        per_flow_bps: per_flow,
        per_nic_bps: per_nic,
        vm_total_bps: vm_total,
        network_share: p.network_share,
        network_bps: network,
        per_vm_one_way_bps: one_way,
        per_vm_both_ways_bps: both,
        flows_per_nic,
        flows_per_vm,
        basis,
        notes: p.notes.clone(),
    })
}

/// The instance the query names, or (for a profile with no per-vCPU rule)
/// the one with its vCPU count; an error when the two disagree.
fn instance_of<'p>(p: &'p Profile, q: &Query) -> Result<Option<&'p Instance>, ModelError> {
    let inst = match &q.instance {
        Some(name) => Some(p.instance(name).ok_or_else(|| {
            let known: Vec<&str> = p.instances.iter().map(|i| i.name.as_str()).collect();
            ModelError::Query(format!(
                "profile {} has no instance {name:?}{}",
                p.name,
                if known.is_empty() {
                    String::new()
                } else {
                    format!(": it knows {}", known.join(", "))
                }
            ))
        })?),
        // A size without a rule of its own is looked up by vCPU count.
        None if p.per_vcpu_gbit.is_none() => q
            .vcpus
            .and_then(|v| p.instances.iter().find(|i| i.vcpus == v)),
        None => None,
    };
    if let (Some(i), Some(v)) = (inst, q.vcpus)
        && q.instance.is_some()
        && i.vcpus != v
    {
        return Err(ModelError::Query(format!(
            "instance {} has {} vCPUs, not {v}: give one of --instance and --vcpus",
            i.name, i.vcpus
        )));
    }
    Ok(inst)
}

/// The machine's vCPUs (when known) and NICs, checked against the profile.
fn machine_of(
    p: &Profile,
    q: &Query,
    inst: Option<&Instance>,
) -> Result<(Option<u32>, u32), ModelError> {
    let vcpus = q.vcpus.or(inst.map(|i| i.vcpus));
    if vcpus == Some(0) {
        return Err(ModelError::Query("--vcpus must be at least 1".into()));
    }
    let nics = q
        .nics
        .or(inst.and_then(|i| i.nics))
        .unwrap_or(p.default_nics);
    if nics == 0 {
        return Err(ModelError::Query("--nics must be at least 1".into()));
    }
    if let Some(m) = p.max_nics
        && nics > m
    {
        return Err(ModelError::Query(format!(
            "profile {} allows at most {m} NICs, asked for {nics}",
            p.name
        )));
    }
    Ok((vcpus, nics))
}

/// The VM's total bandwidth: `--vm-cap`, the instance's figure, vCPUs x
/// the per-vCPU rate (capped), or the profile's VM cap.
fn vm_total(
    p: &Profile,
    inst: Option<&Instance>,
    vcpus: Option<u32>,
    vm_flag: Option<f64>,
    basis: &mut Basis,
) -> Result<Option<f64>, ModelError> {
    Ok(if let Some(v) = vm_flag {
        note(basis, "vm_total", format!("--vm-cap {} Gbit/s", g(v)));
        Some(v)
    } else if let Some(c) = inst.and_then(|i| i.vm_cap_gbit) {
        let name = inst.map(|i| i.name.as_str()).unwrap_or_default();
        note(basis, "vm_total", format!("{name}: {c} Gbit/s per VM"));
        Some(c * GBIT)
    } else if let Some(per) = p.per_vcpu_gbit {
        let Some(v) = vcpus else {
            return Err(ModelError::Query(format!(
                "profile {} counts bandwidth per vCPU: give --vcpus N (or --instance NAME)",
                p.name
            )));
        };
        let raw = v as f64 * per;
        match p.vm_cap_gbit {
            Some(cap) if raw > cap => {
                note(
                    basis,
                    "vm_total",
                    format!(
                        "{v} vCPUs x {per} Gbit/s = {} Gbit/s, capped at {cap}",
                        g(raw * GBIT)
                    ),
                );
                Some(cap * GBIT)
            }
            _ => {
                note(
                    basis,
                    "vm_total",
                    format!("{v} vCPUs x {per} Gbit/s = {} Gbit/s", g(raw * GBIT)),
                );
                Some(raw * GBIT)
            }
        }
    } else if let Some(cap) = p.vm_cap_gbit {
        note(basis, "vm_total", format!("profile's VM cap {cap} Gbit/s"));
        Some(cap * GBIT)
    } else {
        None
    })
}

/// One NIC's ceiling: the NIC cap (`--nic-cap` or the profile's), or the
/// network share split over the NICs, the lower.
fn per_nic(
    p: &Profile,
    network: Option<f64>,
    nics: u32,
    nics_text: &str,
    nic_flag: Option<f64>,
    basis: &mut Basis,
) -> Option<f64> {
    let nic_cap = nic_flag.or(p.nic_cap_gbit.map(|c| c * GBIT));
    let split = if p.split_over_nics {
        network.map(|n| n / nics as f64)
    } else {
        None
    };
    let per_nic = min_opt(nic_cap, split);
    let why = match (nic_cap, split) {
        (Some(c), Some(s)) => format!(
            "min(NIC cap {}, network {} / {} = {}) Gbit/s",
            g(c),
            g(network.unwrap_or(0.0)),
            nics_text,
            g(s)
        ),
        (Some(c), None) => format!(
            "NIC cap {} Gbit/s{}",
            g(c),
            if nic_flag.is_some() {
                " (--nic-cap)"
            } else {
                ""
            }
        ),
        (None, Some(s)) => format!(
            "network {} / {} = {} Gbit/s",
            g(network.unwrap_or(0.0)),
            nics_text,
            g(s)
        ),
        (None, None) => "no per-NIC cap in this profile".into(),
    };
    note(basis, "per_nic", why);
    per_nic
}

/// The VM's one-way ceiling: the network share, or all NICs at their
/// ceiling, the lower.
fn one_way(
    p: &Profile,
    network: Option<f64>,
    per_nic: Option<f64>,
    nics: u32,
    nics_text: &str,
    basis: &mut Basis,
) -> Option<f64> {
    let all_nics = per_nic.map(|c| c * nics as f64);
    let one_way = min_opt(network, all_nics);
    let why = match (network, all_nics) {
        (Some(n), Some(a)) if a < n => format!(
            "{} x {} = {} Gbit/s (below the network's {})",
            nics_text,
            g(a / nics as f64),
            g(a),
            g(n)
        ),
        (Some(n), _) if p.network_share.is_some() => format!("network {} Gbit/s", g(n)),
        (Some(n), _) => format!("VM total {} Gbit/s", g(n)),
        (None, Some(a)) => format!("{nics_text} x {} = {} Gbit/s", g(a / nics as f64), g(a)),
        (None, None) => "no VM or NIC cap in this profile".into(),
    };
    note(basis, "per_vm_one_way", why);
    one_way
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::profile::builtin;

    fn gb(x: Option<f64>) -> Option<f64> {
        x.map(|v| (v / GBIT * 1000.0).round() / 1000.0)
    }

    fn ask(profile: &str, vcpus: u32, nics: u32) -> Ceilings {
        let p = builtin(profile).unwrap();
        ceilings(
            &p,
            &Query {
                vcpus: Some(vcpus),
                nics: Some(nics),
                ..Query::default()
            },
        )
        .unwrap()
    }

    /// The ceilings of a named instance size of a built-in profile.
    pub(crate) fn of_instance(profile: &str, name: &str) -> Ceilings {
        let q = Query {
            instance: Some(name.into()),
            ..Query::default()
        };
        ceilings(&builtin(profile).unwrap(), &q).unwrap()
    }

    #[test]
    fn report2_8_vcpus_1_nic() {
        // Hand-computed: 8 x 2 = 16 total, x 0.75 = 12 network, one NIC
        // gets min(16, 12 / 1) = 12; both ways 24.
        let c = ask("ibm-vpc", 8, 1);
        assert_eq!(gb(c.vm_total_bps), Some(16.0));
        assert_eq!(gb(c.network_bps), Some(12.0));
        assert_eq!(gb(c.per_nic_bps), Some(12.0));
        assert_eq!(gb(c.per_vm_one_way_bps), Some(12.0));
        assert_eq!(gb(c.per_vm_both_ways_bps), Some(24.0));
        assert_eq!(c.per_flow_bps, None);
        assert_eq!(c.flows_per_nic, None);
    }

    #[test]
    fn report2_32_vcpus_2_nics() {
        // Hand-computed: 32 x 2 = 64 total, 48 network, 48 / 2 = 24 per
        // NIC capped at 16: 16 per NIC, 32 one way, 64 both ways, the
        // figures report 2 states.
        let c = ask("ibm-vpc", 32, 2);
        assert_eq!(gb(c.vm_total_bps), Some(64.0));
        assert_eq!(gb(c.network_bps), Some(48.0));
        assert_eq!(gb(c.per_nic_bps), Some(16.0));
        assert_eq!(gb(c.per_vm_one_way_bps), Some(32.0));
        assert_eq!(gb(c.per_vm_both_ways_bps), Some(64.0));
    }

    #[test]
    fn report2_vm_cap_at_80_and_split_over_nics() {
        // 64 vCPUs: 128 capped at 80, network 60; 4 NICs: 60 / 4 = 15 each.
        let c = ask("ibm-vpc", 64, 4);
        assert_eq!(gb(c.vm_total_bps), Some(80.0));
        assert_eq!(gb(c.network_bps), Some(60.0));
        assert_eq!(gb(c.per_nic_bps), Some(15.0));
        assert_eq!(gb(c.per_vm_one_way_bps), Some(60.0));
        assert!(c.basis["vm_total"].contains("capped at 80"));
    }

    #[test]
    fn report5_rises_with_cores_and_flattens_at_16() {
        let curve: Vec<f64> = [1, 2, 4, 6, 8, 12, 16, 32]
            .iter()
            .map(|&v| gb(ask("gce", v, 1).per_vm_one_way_bps).unwrap())
            .collect();
        assert_eq!(curve, vec![2.0, 4.0, 8.0, 12.0, 16.0, 16.0, 16.0, 16.0]);
        // GCE counts per VM: a second NIC adds nothing.
        let two = ask("gce", 16, 2);
        assert_eq!(gb(two.per_vm_one_way_bps), Some(16.0));
        assert_eq!(two.per_nic_bps, None);
    }

    #[test]
    fn report5_about_8_flows_to_pass_10_gbit() {
        let c = ask("gce", 8, 1);
        let per_flow = c.per_flow_bps.unwrap();
        assert_eq!(flows_needed(10e9, per_flow), Some(8));
        // And 13 flows to fill the 16 Gbit/s VM.
        assert_eq!(c.flows_per_vm, Some(13));
    }

    #[test]
    fn custom_from_flags() {
        let p = builtin("custom").unwrap();
        let c = ceilings(
            &p,
            &Query {
                nics: Some(2),
                nic_cap_bps: Some(25e9),
                flow_cap_bps: Some(5e9),
                ..Query::default()
            },
        )
        .unwrap();
        assert_eq!(gb(c.per_nic_bps), Some(25.0));
        assert_eq!(gb(c.per_vm_one_way_bps), Some(50.0));
        assert_eq!(gb(c.per_vm_both_ways_bps), Some(100.0));
        assert_eq!(c.flows_per_nic, Some(5));
        assert_eq!(c.flows_per_vm, Some(10));
        // Without any cap it says which flags it needs.
        let e = ceilings(&p, &Query::default()).unwrap_err().to_string();
        assert!(e.contains("--nic-cap"), "{e}");
    }

    #[test]
    fn tpu_and_instances() {
        let c = ask("tpu-multinic", 8, 2);
        assert_eq!(gb(c.per_vm_one_way_bps), Some(360.0));
        let c = of_instance("aws", "c5n.18xlarge");
        assert_eq!(gb(c.per_vm_one_way_bps), Some(100.0));
        assert_eq!(c.flows_per_vm, Some(20));
        // By vCPU count, for a profile without a per-vCPU rule.
        let c = ask("azure", 32, 1);
        assert_eq!(c.instance.as_deref(), Some("Standard_D32s_v5"));
        assert_eq!(gb(c.per_vm_one_way_bps), Some(16.0));
    }

    #[test]
    fn bad_queries_are_errors_not_panics() {
        let p = builtin("ibm-vpc").unwrap();
        let q = |vcpus, nics| Query {
            vcpus,
            nics,
            ..Query::default()
        };
        for (query, needle) in [
            (q(Some(0), None), "--vcpus"),
            (q(Some(8), Some(0)), "--nics"),
            (q(None, None), "--vcpus"),
            (
                Query {
                    vcpus: Some(8),
                    nic_cap_bps: Some(f64::NAN),
                    ..Query::default()
                },
                "--nic-cap",
            ),
            (
                Query {
                    instance: Some("bx2-8x32".into()),
                    vcpus: Some(4),
                    ..Query::default()
                },
                "8 vCPUs",
            ),
            (
                Query {
                    instance: Some("huge".into()),
                    ..Query::default()
                },
                "no instance",
            ),
        ] {
            let e = ceilings(&p, &query).unwrap_err().to_string();
            assert!(e.contains(needle), "{query:?}: {e}");
        }
        let tpu = builtin("tpu-multinic").unwrap();
        assert!(ceilings(&tpu, &q(None, Some(3))).is_err());
        assert_eq!(flows_needed(1e9, 0.0), None);
        assert_eq!(flows_needed(0.0, 1e9), Some(1));
    }
}
