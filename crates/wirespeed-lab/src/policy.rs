//! A `[[policy]]` table as the rule set its enforcer loads: the nftables
//! ruleset `nft -f` reads, or the `iptables-restore` input. Rule `j`
//! accepts TCP from one address of 198.18.0.0/15 (the benchmarking range,
//! RFC 2544, which no lab uses) to one port: what a policy's peers and
//! ports become, and what the test's own traffic never matches, so every
//! packet that enters the chain walks all of it to the final accept.

use crate::spec::{Enforcer, Hook, Lookup, PolicySpec};
use std::fmt::Write;
use std::net::Ipv4Addr;
use wirespeed_host::Op;
use wirespeed_host::netops::FirewallTool;

/// The source address and destination port of rule `j`.
fn rule_peer(j: u32) -> (Ipv4Addr, u32) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    (Ipv4Addr::from(base + j), 1024 + j % 60_000)
}

/// The operation that loads policy number `i` on namespace `ns`.
pub fn policy_op(ns: &str, i: usize, p: &PolicySpec) -> Op {
    let (tool, script) = match p.enforcer {
        Enforcer::Nftables => (FirewallTool::Nft, nft_script(i, p)),
        Enforcer::IptablesLegacy => (FirewallTool::IptablesLegacy, iptables_script(i, p)),
        Enforcer::IptablesNft => (FirewallTool::IptablesNft, iptables_script(i, p)),
    };
    Op::Firewall {
        ns: ns.into(),
        tool,
        script,
    }
}

/// An nftables table of its own per policy: a base chain on the hook
/// that jumps to the rules (for `dst` only, when given).
fn nft_script(i: usize, p: &PolicySpec) -> String {
    let hook = match p.hook {
        Hook::Input => "input",
        Hook::Forward => "forward",
    };
    // IPv4 only, as the iptables variants: the rules match IPv4 peers.
    let only = p
        .dst
        .as_deref()
        .map(|d| format!("ip daddr {d} "))
        .unwrap_or_else(|| "meta nfproto ipv4 ".into());
    let mut s = format!("table inet wirespeed_p{i} {{\n");
    if p.lookup == Lookup::Set {
        s.push_str("\tset peers {\n\t\ttype ipv4_addr . inet_service\n");
        let peers: Vec<String> = (0..p.rules)
            .map(|j| {
                let (src, port) = rule_peer(j);
                format!("{src} . {port}")
            })
            .collect();
        if !peers.is_empty() {
            let _ = writeln!(s, "\t\telements = {{ {} }}", peers.join(", "));
        }
        s.push_str("\t}\n");
    }
    let _ = write!(
        s,
        "\tchain entry {{\n\t\ttype filter hook {hook} priority filter; policy accept;\n\t\t{only}jump walk\n\t}}\n\tchain walk {{\n"
    );
    if p.stateful {
        s.push_str("\t\tct state established,related accept\n");
    }
    match p.lookup {
        Lookup::Set => s.push_str("\t\tip saddr . tcp dport @peers accept\n"),
        Lookup::Linear => {
            for j in 0..p.rules {
                let (src, port) = rule_peer(j);
                let _ = writeln!(s, "\t\tip saddr {src} tcp dport {port} accept");
            }
        }
    }
    s.push_str("\t\taccept\n\t}\n}\n");
    s
}

/// The iptables-restore input: a chain of its own per policy, jumped to
/// from INPUT or FORWARD (for `dst` only, when given).
fn iptables_script(i: usize, p: &PolicySpec) -> String {
    let chain = format!("WS-POLICY-{i}");
    let hook = match p.hook {
        Hook::Input => "INPUT",
        Hook::Forward => "FORWARD",
    };
    let only = p
        .dst
        .as_deref()
        .map(|d| format!("-d {d} "))
        .unwrap_or_default();
    let mut s = format!("*filter\n:{chain} - [0:0]\n-A {hook} {only}-j {chain}\n");
    if p.stateful {
        let _ = writeln!(
            s,
            "-A {chain} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
        );
    }
    for j in 0..p.rules {
        let (src, port) = rule_peer(j);
        let _ = writeln!(
            s,
            "-A {chain} -s {src}/32 -p tcp -m tcp --dport {port} -j ACCEPT"
        );
    }
    let _ = writeln!(s, "-A {chain} -j ACCEPT\nCOMMIT");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(enforcer: Enforcer, rules: u32, stateful: bool) -> PolicySpec {
        PolicySpec {
            host: "b".into(),
            enforcer,
            rules,
            dst: Some("10.214.0.2/32".into()),
            stateful,
            hook: Hook::Input,
            lookup: Lookup::Linear,
        }
    }

    #[test]
    fn nftables_rules_read_as_nft_takes_them() {
        let op = policy_op("l-b", 3, &policy(Enforcer::Nftables, 2, true));
        assert_eq!(
            op.to_string(),
            "ip netns exec l-b nft -f - <<'EOF'\n\
             table inet wirespeed_p3 {\n\
             \tchain entry {\n\
             \t\ttype filter hook input priority filter; policy accept;\n\
             \t\tip daddr 10.214.0.2/32 jump walk\n\
             \t}\n\
             \tchain walk {\n\
             \t\tct state established,related accept\n\
             \t\tip saddr 198.18.0.0 tcp dport 1024 accept\n\
             \t\tip saddr 198.18.0.1 tcp dport 1025 accept\n\
             \t\taccept\n\
             \t}\n\
             }\n\
             EOF"
        );
    }

    #[test]
    fn iptables_rules_read_as_iptables_restore_takes_them() {
        let mut p = policy(Enforcer::IptablesLegacy, 1, false);
        p.hook = Hook::Forward;
        p.dst = None;
        let op = policy_op("l-r", 0, &p);
        assert_eq!(
            op.to_string(),
            "ip netns exec l-r iptables-legacy-restore --noflush <<'EOF'\n\
             *filter\n\
             :WS-POLICY-0 - [0:0]\n\
             -A FORWARD -j WS-POLICY-0\n\
             -A WS-POLICY-0 -s 198.18.0.0/32 -p tcp -m tcp --dport 1024 -j ACCEPT\n\
             -A WS-POLICY-0 -j ACCEPT\n\
             COMMIT\n\
             EOF"
        );
        let nft = policy_op("l-r", 0, &policy(Enforcer::IptablesNft, 0, true));
        assert!(
            nft.to_string()
                .starts_with("ip netns exec l-r iptables-nft-restore --noflush")
        );
        assert!(nft.to_string().contains("--ctstate RELATED,ESTABLISHED"));
    }

    #[test]
    fn a_set_lookup_is_one_rule_over_every_peer() {
        let mut p = policy(Enforcer::Nftables, 2, false);
        p.lookup = Lookup::Set;
        let s = policy_op("l-b", 0, &p).to_string();
        assert!(
            s.contains("\tset peers {\n\t\ttype ipv4_addr . inet_service\n\t\telements = { 198.18.0.0 . 1024, 198.18.0.1 . 1025 }\n\t}\n"),
            "{s}"
        );
        assert!(
            s.contains("\t\tip saddr . tcp dport @peers accept\n\t\taccept\n"),
            "{s}"
        );
        assert!(!s.contains("ct state"), "{s}");
        p.rules = 0;
        let empty = policy_op("l-b", 0, &p).to_string();
        assert!(!empty.contains("elements"), "{empty}");
    }

    #[test]
    fn without_dst_only_ipv4_walks_the_nftables_rules() {
        let mut p = policy(Enforcer::Nftables, 1, true);
        p.dst = None;
        let s = policy_op("l-b", 0, &p).to_string();
        assert!(s.contains("\t\tmeta nfproto ipv4 jump walk\n"), "{s}");
    }

    #[test]
    fn each_rule_names_a_peer_of_its_own_in_the_benchmarking_range() {
        let (first, last) = (rule_peer(0), rule_peer(crate::spec::MAX_POLICY_RULES - 1));
        assert_eq!(first, (Ipv4Addr::new(198, 18, 0, 0), 1024));
        assert!(last.0 < Ipv4Addr::new(198, 20, 0, 0), "{last:?}");
        assert!((1024..=65535).contains(&last.1));
    }
}
