//! Price per delivered Gbit/s across instance sizes: the choice of field
//! report 5, where the cheapest machine that meets the need is picked by
//! what it delivers, not by its list bandwidth.

use crate::ceilings::{Query, ceilings};
use crate::error::ModelError;
use crate::profile::{Profile, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

/// A price from the command line: `NAME=PRICE`, `VCPUS=PRICE` or a bare
/// `PRICE` for the size asked about.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceInput {
    /// An instance name of the profile, a vCPU count, or empty for the queried size.
    pub size: String,
    /// Price per hour, in the profile's currency.
    pub price_per_hour: f64,
}

impl std::str::FromStr for PriceInput {
    type Err = ModelError;

    /// Parses `NAME=PRICE`, `VCPUS=PRICE` or `PRICE` (e.g. `e2-standard-8=0.27`).
    fn from_str(s: &str) -> Result<PriceInput, ModelError> {
        let (size, price) = match s.rsplit_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => ("", s.trim()),
        };
        let v: f64 = price.trim_start_matches('$').parse().map_err(|_| {
            ModelError::Query(format!(
                "bad price {s:?}: use NAME=PRICE, VCPUS=PRICE or PRICE per hour, e.g. e2-standard-8=0.27"
            ))
        })?;
        if !(v.is_finite() && v > 0.0) {
            return Err(ModelError::Query(format!(
                "bad price {s:?}: a price must be above 0"
            )));
        }
        Ok(PriceInput {
            size: size.to_string(),
            price_per_hour: v,
        })
    }
}

/// One instance size with its price and what it delivers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceRow {
    /// Instance name, or `N vCPUs` for a size given by count.
    pub instance: String,
    /// vCPUs.
    pub vcpus: u32,
    /// NICs the figure assumes.
    pub nics: u32,
    /// Price per hour.
    pub price_per_hour: f64,
    /// The model's one-way VM ceiling for the size, bits per second.
    pub delivered_bps: Option<f64>,
    /// Price per hour divided by delivered Gbit/s.
    pub price_per_gbit_hour: Option<f64>,
    /// Whether it delivers the target (when one was given).
    pub meets_target: Option<bool>,
}

/// The price table and the choices it leads to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    /// See [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Currency of every price.
    pub currency: String,
    /// The bandwidth needed, bits per second, if given.
    pub target_bps: Option<f64>,
    /// Sizes, fewest vCPUs first.
    pub rows: Vec<PriceRow>,
    /// The size with the lowest price per delivered Gbit/s.
    pub best_value: Option<String>,
    /// The cheapest size per hour that delivers the target.
    pub cheapest_meeting_target: Option<String>,
}

/// Prices each size the profile prices (and those given in `extra`,
/// which override the profile's) by delivered Gbit/s, under the caps of
/// `q` (its vCPUs and instance are replaced per row).
pub fn price_table(
    p: &Profile,
    q: &Query,
    extra: &[PriceInput],
    target_bps: Option<f64>,
) -> Result<PriceTable, ModelError> {
    if let Some(t) = target_bps
        && !(t.is_finite() && t > 0.0)
    {
        return Err(ModelError::Query(format!(
            "--target must be a rate above 0, got {t}"
        )));
    }
    // (name, vcpus, from the profile's table, price)
    let mut sizes: Vec<(String, u32, bool, f64)> = p
        .instances
        .iter()
        .filter_map(|i| {
            i.price_per_hour
                .map(|pr| (i.name.clone(), i.vcpus, true, pr))
        })
        .collect();
    for e in extra {
        let key = if e.size.is_empty() {
            match (&q.instance, q.vcpus) {
                (Some(n), _) => n.clone(),
                (None, Some(v)) => v.to_string(),
                (None, None) => {
                    return Err(ModelError::Query(
                        "a bare --price needs --vcpus or --instance to say which size it is for"
                            .into(),
                    ));
                }
            }
        } else {
            e.size.clone()
        };
        let entry = if let Some(i) = p.instance(&key) {
            (i.name.clone(), i.vcpus, true, e.price_per_hour)
        } else if let Ok(v) = key.trim_end_matches("vcpu").parse::<u32>() {
            if v == 0 {
                return Err(ModelError::Query(
                    "a price's vCPU count must be at least 1".into(),
                ));
            }
            (format!("{v} vCPUs"), v, false, e.price_per_hour)
        } else {
            return Err(ModelError::Query(format!(
                "--price {key}=...: profile {} has no instance {key:?}; use one of its names or a vCPU count",
                p.name
            )));
        };
        sizes.retain(|s| s.0 != entry.0);
        sizes.push(entry);
    }
    sizes.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let mut rows = Vec::new();
    for (name, vcpus, named, price) in sizes {
        let row_q = Query {
            vcpus: if named { None } else { Some(vcpus) },
            instance: if named { Some(name.clone()) } else { None },
            ..q.clone()
        };
        let c = ceilings(p, &row_q)?;
        let delivered = c.per_vm_one_way_bps;
        rows.push(PriceRow {
            instance: name,
            vcpus,
            nics: c.nics,
            price_per_hour: price,
            delivered_bps: delivered,
            price_per_gbit_hour: delivered.map(|d| price / (d / 1e9)),
            meets_target: target_bps.map(|t| delivered.is_some_and(|d| d >= t)),
        });
    }
    let best_value = rows
        .iter()
        .filter_map(|r| r.price_per_gbit_hour.map(|v| (v, r)))
        // Ties (same price per Gbit/s) go to the smaller machine: rows are
        // in vCPU order and min_by keeps the first.
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| r.instance.clone());
    let cheapest_meeting_target = rows
        .iter()
        .filter(|r| r.meets_target == Some(true))
        .min_by(|a, b| a.price_per_hour.total_cmp(&b.price_per_hour))
        .map(|r| r.instance.clone());
    Ok(PriceTable {
        schema_version: SCHEMA_VERSION,
        currency: p.currency.clone(),
        target_bps,
        rows,
        best_value,
        cheapest_meeting_target,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::builtin;

    #[test]
    fn report5_choice_by_price_per_delivered_gbit() {
        let p = builtin("gce").unwrap();
        let t = price_table(&p, &Query::default(), &[], Some(10e9)).unwrap();
        assert_eq!(t.rows.len(), 5);
        // Bandwidth grows with vCPUs up to 8, so does the price: the price
        // per Gbit/s is flat to 8 vCPUs and rises after, where the 16 Gbit/s
        // cap flattens what a larger machine delivers.
        let per: Vec<f64> = t
            .rows
            .iter()
            .map(|r| r.price_per_gbit_hour.unwrap())
            .collect();
        assert!((per[0] - per[2]).abs() < 0.001, "{per:?}");
        assert!(per[3] > 1.9 * per[2] && per[4] > 3.9 * per[2], "{per:?}");
        // 10 Gbit/s needs 5 vCPUs or more: the 8-vCPU machine is the cheapest
        // that meets it, and the best value among those.
        assert_eq!(t.cheapest_meeting_target.as_deref(), Some("e2-standard-8"));
        assert_eq!(t.rows[1].meets_target, Some(false));
    }

    #[test]
    fn prices_from_the_command_line() {
        let p = builtin("ibm-vpc").unwrap();
        let q = Query {
            vcpus: Some(8),
            ..Query::default()
        };
        // Profile has no prices: the table is empty until some are given.
        assert!(price_table(&p, &q, &[], None).unwrap().rows.is_empty());
        let extra: Vec<PriceInput> = ["bx2-16x64=0.80", "0.40", "4=0.20"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let t = price_table(&p, &q, &extra, None).unwrap();
        let names: Vec<&str> = t.rows.iter().map(|r| r.instance.as_str()).collect();
        assert_eq!(names, vec!["4 vCPUs", "8 vCPUs", "bx2-16x64"]);
        // 4 vCPUs: 8 x 0.75 = 6 Gbit/s for 0.20; 8: 12 for 0.40; 16: 16 (NIC cap) for 0.80.
        let d: Vec<f64> = t
            .rows
            .iter()
            .map(|r| r.delivered_bps.unwrap() / 1e9)
            .collect();
        assert_eq!(d, vec![6.0, 12.0, 16.0]);
        assert_eq!(t.best_value.as_deref(), Some("4 vCPUs"));
        for bad in ["x=abc", "=-1", "0", "e2=nan"] {
            assert!(bad.parse::<PriceInput>().is_err(), "{bad}");
        }
        let e = price_table(&p, &q, &["nosuch=1".parse().unwrap()], None).unwrap_err();
        assert!(e.to_string().contains("no instance"));
        let e = price_table(&p, &Query::default(), &["1".parse().unwrap()], None).unwrap_err();
        assert!(e.to_string().contains("--vcpus"));
    }
}
