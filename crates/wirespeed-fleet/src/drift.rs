//! Drift of a host's facts: what changed in its kernel, settings and
//! NICs between two readings, named one line each. An incident says it
//! ([`crate::incident`]): an MTU that went from 9000 to 1500 with the
//! latency floor is the cause, not a coincidence.

use std::collections::BTreeMap;
use wirespeed_types::fleet::HostFacts;

/// The facts of `host` that differ between `before` and `after`, one
/// line each: `c kernel: 6.1 -> 6.12`, `c net.core.rmem_max: ...`,
/// `c/eth0 mtu: 9000 -> 1500`.
pub fn facts_changed(host: &str, before: &HostFacts, after: &HostFacts) -> Vec<String> {
    let mut out = Vec::new();
    if before.kernel != after.kernel {
        out.push(format!(
            "{host} kernel: {} -> {}",
            before.kernel, after.kernel
        ));
    }
    diff_map(host, &before.settings, &after.settings, &mut out);
    for n in &after.nics {
        let empty = BTreeMap::new();
        let old = before
            .nics
            .iter()
            .find(|o| o.name == n.name)
            .map(|o| &o.settings)
            .unwrap_or(&empty);
        diff_map(&format!("{host}/{}", n.name), old, &n.settings, &mut out);
    }
    out
}

fn diff_map(
    who: &str,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
    out: &mut Vec<String>,
) {
    let none = String::from("(none)");
    for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
        let (x, y) = (a.get(k).unwrap_or(&none), b.get(k).unwrap_or(&none));
        if x != y {
            out.push(format!("{who} {k}: {x} -> {y}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_types::fleet::NicFacts;

    #[test]
    fn the_facts_that_changed_are_named() {
        let nic = |mtu: &str| NicFacts {
            name: "eth0".into(),
            device: Some("veth1".into()),
            settings: [("mtu".to_string(), mtu.to_string())].into(),
        };
        let before = HostFacts {
            kernel: "6.12".into(),
            nics: vec![nic("9000")],
            ..HostFacts::default()
        };
        let mut after = before.clone();
        after.nics = vec![nic("1500")];
        after
            .settings
            .insert("net.core.rmem_max".into(), "212992".into());
        assert_eq!(
            facts_changed("c", &before, &after),
            vec![
                "c net.core.rmem_max: (none) -> 212992".to_string(),
                "c/eth0 mtu: 9000 -> 1500".to_string()
            ]
        );
        assert!(facts_changed("c", &before, &before).is_empty());
    }
}
