//! Which sysctls a network namespace has of its own, and from which
//! kernel: what a namespace (a lab host, a pod) may set without changing
//! the whole host. Knowledge only: nothing here reads or writes a host.

/// The net.* sysctls that are not per network namespace: absent from a
/// new namespace (they exist only in the initial one) or read-only there
/// (the global buffer limits). Checked on kernel 6.18; entries ending in
/// `_` or `.` are prefixes.
pub const HOST_WIDE_NET_SYSCTLS: &[&str] = &[
    "net.core.bpf_jit_",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.default_qdisc",
    "net.core.dev_weight",
    "net.core.devconf_inherit_init_net",
    "net.core.fb_tunnels_only_for_init_net",
    "net.core.flow_limit_",
    "net.core.gro_normal_batch",
    "net.core.high_order_alloc_disable",
    "net.core.max_skb_frags",
    "net.core.mem_pcpu_rsv",
    "net.core.message_",
    "net.core.netdev_budget",
    "net.core.netdev_max_backlog",
    "net.core.netdev_rss_key",
    "net.core.netdev_tstamp_prequeue",
    "net.core.netdev_unregister_timeout_secs",
    "net.core.rmem_default",
    "net.core.rmem_max",
    "net.core.rps_",
    "net.core.skb_defer_max",
    "net.core.warnings",
    "net.core.wmem_default",
    "net.core.wmem_max",
    "net.ipv4.cipso_",
    "net.ipv4.fib_sync_mem",
    "net.ipv4.inet_peer_",
    "net.ipv4.ipfrag_secret_interval",
    "net.ipv4.route.error_",
    "net.ipv4.route.gc_",
    "net.ipv4.route.max_size",
    "net.ipv4.route.redirect_",
    "net.ipv4.tcp_low_latency",
    "net.ipv4.tcp_max_orphans",
    "net.ipv4.tcp_mem",
    "net.ipv4.udp_mem",
    "net.ipv6.calipso_",
    "net.ipv6.ip6frag_secret_interval",
    "net.ipv6.mld_",
    "net.netfilter.nf_log_all_netns",
    "net.nf_conntrack_max",
];

/// A sysctl name in dotted form (sysctl(8) also takes `/` as separator
/// when the name holds no dot).
pub(crate) fn dotted(key: &str) -> String {
    if key.contains('.') {
        key.to_string()
    } else {
        key.replace('/', ".")
    }
}

/// Whether `key` is a plausible sysctl name: letters, digits, `_`, `-`,
/// `.` and `/` (a dot inside a device name), at least two parts, no empty part.
pub fn valid_sysctl_name(key: &str) -> bool {
    let d = dotted(key);
    d.len() <= 256
        && d.split('.').count() >= 2
        && d.split('.').all(|p| {
            !p.is_empty()
                && !p.starts_with('/')
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-/".contains(&b))
        })
}

/// Whether a sysctl acts on the whole host rather than on one network
/// namespace: everything outside net.*, and [`HOST_WIDE_NET_SYSCTLS`].
pub fn sysctl_is_host_wide(key: &str) -> bool {
    let d = dotted(key);
    if !d.starts_with("net.") {
        return true;
    }
    HOST_WIDE_NET_SYSCTLS.iter().any(|h| {
        if h.ends_with('_') || h.ends_with('.') {
            d.starts_with(h)
        } else {
            d == *h
        }
    })
}

/// Why `key` must not be written inside a network namespace (None when it
/// is per namespace): only net.* sysctls are per namespace, and a few of
/// those are host-wide too.
pub fn netns_sysctl_refusal(key: &str) -> Option<String> {
    if !sysctl_is_host_wide(key) {
        return None;
    }
    Some(if dotted(key).starts_with("net.") {
        format!(
            "{key} is host-wide: it exists only in the initial network namespace (or is read-only in others), so it cannot be set inside one"
        )
    } else {
        format!(
            "{key} is not per network namespace: written inside one it would change the whole host (only net.* sysctls are per namespace, and not all of them: {} are host-wide)",
            "net.core.rmem_max, wmem_max, netdev_max_backlog, net.ipv4.tcp_mem and others"
        )
    })
}

/// net.* sysctls that became per network namespace (and writable there)
/// later than namespaces themselves: (name or `_`-ending prefix, first
/// kernel). The first matching entry wins, so specific names come before
/// prefixes. Sources: the kernel commits that namespaced them (tcp_rmem
/// and tcp_wmem in 4.15, as the kubelet's safe list also says; the
/// keepalive knobs in 4.5, tcp_fin_timeout in 4.6; optmem_max in 6.8;
/// tcp_rto_min_us was added in 6.11, per namespace from the start).
pub const NETNS_SINCE: &[(&str, (u32, u32))] = &[
    ("net.core.optmem_max", (6, 8)),
    ("net.ipv4.tcp_rto_min_us", (6, 11)),
    ("net.ipv4.tcp_keepalive_", (4, 5)),
    ("net.ipv4.tcp_fin_timeout", (4, 6)),
    ("net.ipv4.ip_local_reserved_ports", (3, 16)),
    ("net.ipv4.fib_multipath_hash_", (4, 12)),
    ("net.ipv4.tcp_", (4, 15)),
];

/// The first kernel (major, minor) on which `key` is per network
/// namespace; None when it has always been (or never is: see
/// [`sysctl_is_host_wide`]).
pub fn netns_since(key: &str) -> Option<(u32, u32)> {
    let d = dotted(key);
    NETNS_SINCE
        .iter()
        .find(|(k, _)| {
            if k.ends_with('_') {
                d.starts_with(k)
            } else {
                d == *k
            }
        })
        .map(|(_, v)| *v)
}

/// Why `key` cannot be set inside a network namespace on a kernel of
/// `release` (e.g. "6.1.0-13-amd64"); None when it can. An unreadable
/// release counts as too old for a sysctl that needs a given kernel.
pub fn netns_sysctl_refusal_on(key: &str, release: &str) -> Option<String> {
    if let Some(why) = netns_sysctl_refusal(key) {
        return Some(why);
    }
    let need = netns_since(key)?;
    match crate::inspect::kernel_version(release) {
        Some(v) if v >= need => None,
        Some(_) => Some(format!(
            "{key} is per network namespace only from kernel {}.{}; this kernel is {release}, which keeps it per host",
            need.0, need.1
        )),
        None => Some(format!(
            "{key} is per network namespace only from kernel {}.{}, and the kernel release {release:?} does not read as a version",
            need.0, need.1
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_namespaced_sysctls_depend_on_the_kernel() {
        assert_eq!(netns_since("net.core.optmem_max"), Some((6, 8)));
        assert_eq!(netns_since("net/ipv4/tcp_rmem"), Some((4, 15)));
        assert_eq!(netns_since("net.ipv4.tcp_keepalive_time"), Some((4, 5)));
        assert_eq!(netns_since("net.core.somaxconn"), None);
        let old = netns_sysctl_refusal_on("net.core.optmem_max", "6.1.0-13-amd64").unwrap();
        assert!(
            old.contains("6.8") && old.contains("6.1.0-13-amd64"),
            "{old}"
        );
        assert!(netns_sysctl_refusal_on("net.core.optmem_max", "6.8.0").is_none());
        assert!(netns_sysctl_refusal_on("net.ipv4.tcp_rto_min_us", "6.10.3").is_some());
        assert!(netns_sysctl_refusal_on("net.ipv4.tcp_rto_min_us", "6.18.44-fc").is_none());
        assert!(netns_sysctl_refusal_on("net.core.somaxconn", "garbage").is_none());
        assert!(netns_sysctl_refusal_on("net.ipv4.tcp_rmem", "garbage").is_some());
        let host = netns_sysctl_refusal_on("net.core.rmem_max", "6.18.0").unwrap();
        assert!(host.contains("host-wide"), "{host}");
    }
}
