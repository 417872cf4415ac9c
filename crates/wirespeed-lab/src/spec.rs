//! What a lab is: hosts, veth links between them (MTU, GSO/GRO sizes, rate
//! caps), VXLAN overlays on a link, static and ECMP multipath routes,
//! per-NIC source routing, sysctls, MPTCP path managers and firewall
//! rule sets (`[[policy]]`). Read from TOML (docs/lab-file.md) or
//! built in code; validated before anything touches the kernel.

use crate::error::LabError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use wirespeed_host::mptcp::{EndpointKind, LIMIT_MAX};

/// One emulated host: a network namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Short name; the namespace is `LAB-NAME`.
    pub name: String,
    /// Sysctls written in the namespace, e.g. `"net.ipv4.tcp_rmem" = "4096 131072 16777216"`.
    #[serde(default)]
    pub sysctl: BTreeMap<String, String>,
    /// Extra addresses on `lo` (service addresses reached over routes), e.g. `10.200.0.1/32`.
    #[serde(default)]
    pub loopback: Vec<String>,
    /// Per-NIC source routing: one policy table per link address, so
    /// traffic from a NIC's address leaves by that NIC.
    #[serde(default)]
    pub source_routing: bool,
}

/// How a link's rate cap is enforced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapKind {
    /// Token bucket filter at the root of each end.
    #[default]
    Tbf,
    /// One HTB class at the root of each end.
    Htb,
}

/// A veth pair joining two hosts: one NIC on each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Host at one end.
    pub a: String,
    /// Host at the other end.
    pub b: String,
    /// MTU of both ends (default 1500).
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Egress rate cap on each end, e.g. `1gbit` (None = uncapped).
    #[serde(default)]
    pub rate: Option<String>,
    /// The qdisc that enforces `rate`.
    #[serde(default)]
    pub cap: CapKind,
    /// IPv4 subnet, e.g. `10.61.0.0/24`; links naming the same subnet share
    /// it (ends numbered .1, .2, .3 ... in link order), as NICs in one VPC
    /// subnet do. Default: a /24 of its own.
    #[serde(default)]
    pub subnet: Option<String>,
    /// gso_max_size of both ends.
    #[serde(default)]
    pub gso_max_size: Option<u32>,
    /// gro_max_size of both ends.
    #[serde(default)]
    pub gro_max_size: Option<u32>,
    /// Turn GRO on (veth has it off by default).
    #[serde(default)]
    pub gro: Option<bool>,
    /// gso_ipv4_max_size of both ends (BIG TCP for IPv4), set over netlink.
    #[serde(default)]
    pub gso_ipv4_max_size: Option<u32>,
    /// gro_ipv4_max_size of both ends, set over netlink.
    #[serde(default)]
    pub gro_ipv4_max_size: Option<u32>,
    /// Per-flow egress cap on each end, e.g. `300mbit`: HTB with one class
    /// per hash bucket of the ports (TCP and UDP, IPv4 and IPv6), so each
    /// flow is capped alone.
    #[serde(default)]
    pub flow_rate: Option<String>,
    /// Hash buckets (classes) for `flow_rate`: a power of two, 2-256 (default 64).
    #[serde(default)]
    pub flows: Option<u32>,
    /// gso_max_segs of both ends: 1 makes the stack send wire-size packets,
    /// as a NIC without TSO does (and lets `packet_overhead` count packets).
    #[serde(default)]
    pub gso_max_segs: Option<u32>,
    /// Bytes the cap charges per packet beyond its length (tc's
    /// `overhead`): a path whose cost is per packet (a middlebox, a
    /// vSwitch), where the MTU matters. tc charges it per GSO packet, so
    /// pair it with `gso_max_segs = 1`.
    #[serde(default)]
    pub packet_overhead: Option<u32>,
}

/// Default number of per-flow buckets of a link with `flow_rate`.
pub const DEFAULT_FLOW_BUCKETS: u32 = 64;

/// A VXLAN overlay between the two ends of a link.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VxlanSpec {
    /// Device name on both hosts (default `vxN`).
    #[serde(default)]
    pub name: Option<String>,
    /// Index of the underlay link (0-based, in file order).
    pub link: usize,
    /// VXLAN network identifier.
    #[serde(default = "default_vni")]
    pub id: u32,
    /// UDP port.
    #[serde(default = "default_vxlan_port")]
    pub port: u16,
    /// MTU of the overlay (default: underlay MTU minus 50).
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Overlay IPv4 subnet (default: a /24 of its own).
    #[serde(default)]
    pub subnet: Option<String>,
}

fn default_vni() -> u32 {
    42
}

fn default_vxlan_port() -> u16 {
    4789
}

/// A static route on one host to a destination via one link or, with
/// several links, an ECMP multipath route (the stand-in for a bond).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The host the route is added on.
    pub host: String,
    /// Destination prefix, e.g. `10.200.0.2/32`.
    pub dst: String,
    /// Links to reach it by (indices); the next hop is the peer's address on each.
    pub links: Vec<usize>,
}

/// One host's MPTCP path manager: its limits and the NICs it uses as
/// endpoints (announced to the peer with `signal`, used to open subflows
/// with `subflow`), as `ip mptcp limits` and `ip mptcp endpoint add` set
/// them. Needs a kernel with MPTCP; the lab refuses to build without.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpSpec {
    /// The host.
    pub host: String,
    /// Links (indices) whose address on this host becomes an endpoint.
    #[serde(default)]
    pub endpoints: Vec<usize>,
    /// `signal` (default) or `subflow`.
    #[serde(default = "default_mptcp_kind")]
    pub kind: String,
    /// Extra subflows per connection (0-8, default 2).
    #[serde(default = "default_mptcp_limit")]
    pub subflows: u32,
    /// Peer announcements used (0-8, default 2).
    #[serde(default = "default_mptcp_limit")]
    pub add_addr_accepted: u32,
}

fn default_mptcp_kind() -> String {
    "signal".into()
}

fn default_mptcp_limit() -> u32 {
    2
}

/// The packet filter that walks a `[[policy]]`'s rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcer {
    /// nf_tables, loaded with `nft` (kube-network-policies, Cilium's
    /// host firewall without eBPF, firewalld).
    #[default]
    Nftables,
    /// x_tables, loaded with `iptables-legacy-restore` (kube-router, Calico
    /// and kube-proxy on older nodes).
    IptablesLegacy,
    /// iptables rules on nf_tables (`iptables-nft-restore`), what
    /// `iptables` is on current distributions.
    IptablesNft,
}

/// Where a `[[policy]]`'s rules sit on its host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hook {
    /// Packets to the host itself (a pod's own firewall).
    #[default]
    Input,
    /// Packets the host routes on (a node in front of its pods).
    Forward,
}

/// How a `[[policy]]`'s peers are matched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lookup {
    /// One rule per peer, walked in order (iptables' way, and a naive
    /// nftables translation): the cost grows with the rule count.
    #[default]
    Linear,
    /// One rule that looks the (address, port) up in an nftables set, a
    /// hash (kube-network-policies' way; eBPF enforcers use maps alike).
    Set,
}

/// A firewall rule set on one host, as a network policy enforcer
/// programs one: `rules` rules that the test's traffic does not match (a
/// source address and a destination port each, as a policy's peers and
/// ports become), then an accept. The packets they cost are those that
/// walk them: every packet, or with `stateful` only each connection's
/// first (established ones are accepted before the rules, as kube-router,
/// Calico and kube-network-policies do).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// The host whose firewall holds the rules.
    pub host: String,
    /// The packet filter.
    #[serde(default)]
    pub enforcer: Enforcer,
    /// How many rules (0-100,000; 0 leaves the hook and an empty chain).
    pub rules: u32,
    /// Only IPv4 packets to this prefix walk the rules (default: every
    /// IPv4 packet at the hook), so one lab can hold several rule sets
    /// side by side, each reached at its own address.
    #[serde(default)]
    pub dst: Option<String>,
    /// Accept established connections first (default true).
    #[serde(default = "yes")]
    pub stateful: bool,
    /// Input (default) or forward.
    #[serde(default)]
    pub hook: Hook,
    /// Linear rules (default) or one set lookup (nftables only).
    #[serde(default)]
    pub lookup: Lookup,
}

fn yes() -> bool {
    true
}

/// Most rules in one `[[policy]]`.
pub const MAX_POLICY_RULES: u32 = 100_000;

/// Most `[[policy]]` tables in one lab.
pub const MAX_POLICIES: usize = 32;

/// A whole lab.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSpec {
    /// Lab name: prefix of every namespace.
    #[serde(default)]
    pub name: String,
    /// Second octet of the default IPv4 subnets `10.N.x.0/24` (default from the name).
    #[serde(default)]
    pub subnet_base: Option<u8>,
    /// Hosts.
    #[serde(default, rename = "host")]
    pub hosts: Vec<HostSpec>,
    /// Links.
    #[serde(default, rename = "link")]
    pub links: Vec<LinkSpec>,
    /// Overlays.
    #[serde(default, rename = "vxlan")]
    pub vxlans: Vec<VxlanSpec>,
    /// Routes.
    #[serde(default, rename = "route")]
    pub routes: Vec<RouteSpec>,
    /// MPTCP path managers, one per host at most.
    #[serde(default)]
    pub mptcp: Vec<MptcpSpec>,
    /// Firewall rule sets.
    #[serde(default, rename = "policy")]
    pub policies: Vec<PolicySpec>,
}

/// The rates a lab cap takes, bits per second: tbf and htb need at least
/// 8 kbit/s, and 10 Tbit/s is beyond any veth.
pub const CAP_RATES: std::ops::RangeInclusive<u64> = 8_000..=10_000_000_000_000;

/// Parses a cap's rate such as `1gbit`, `500mbit`, `2.5g` into bits per
/// second (the one rate grammar of `wirespeed-types`), or says why not.
pub fn cap_rate(s: &str) -> Result<u64, RateError> {
    let bps = wirespeed_types::units::parse_rate(s)?;
    if !CAP_RATES.contains(&bps) {
        return Err(RateError::OutOfRange(s.to_string()));
    }
    Ok(bps)
}

/// Why [`cap_rate`] refuses a rate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    /// The text is not a rate.
    #[error(transparent)]
    Malformed(#[from] wirespeed_types::Invalid),
    /// A rate outside [`CAP_RATES`].
    #[error("rate {0:?} is outside what a tc cap takes: 8kbit to 10tbit")]
    OutOfRange(String),
}

/// Why [`check_lab_sysctl`] refuses a sysctl.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SysctlError {
    /// Not a sysctl name.
    #[error("bad sysctl name {0:?}")]
    BadName(String),
    /// An empty value, or one with control characters.
    #[error("bad value {value:?} for sysctl {key}")]
    BadValue {
        /// The sysctl.
        key: String,
        /// The value refused.
        value: String,
    },
    /// A sysctl that is not per network namespace; `why` is the host
    /// crate's reason.
    #[error(
        "{why}; a lab host is a network namespace, so only its per-namespace net.* sysctls can be set"
    )]
    HostWide {
        /// Why the key is host-wide.
        why: String,
    },
}

/// Parses a cap's rate, `None` when [`cap_rate`] refuses it.
pub fn parse_rate(s: &str) -> Option<u64> {
    cap_rate(s).ok()
}

/// Parses `A.B.C.D/LEN` into (network, prefix length).
pub fn parse_v4_prefix(s: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, l) = s.trim().split_once('/')?;
    let addr: Ipv4Addr = a.parse().ok()?;
    let len: u8 = l.parse().ok()?;
    if len > 32 {
        return None;
    }
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Some((Ipv4Addr::from(u32::from(addr) & mask), len))
}

/// Parses an address with a prefix length, IPv4 or IPv6.
pub fn parse_prefix(s: &str) -> Option<(std::net::IpAddr, u8)> {
    let (a, l) = s.trim().split_once('/')?;
    let addr: std::net::IpAddr = a.parse().ok()?;
    let len: u8 = l.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((addr, len))
}

fn valid_name(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && s.as_bytes()[0].is_ascii_alphanumeric()
}

/// The 1-based line of `field` inside the `index`-th `[[table]]` (or the
/// one `[table]`) of `text` (or of the table header, or of a top-level
/// field), for error messages.
pub fn locate(text: &str, table: Option<(&str, usize)>, field: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut start, end) = match table {
        None => (
            0,
            lines
                .iter()
                .position(|l| l.trim_start().starts_with('['))
                .unwrap_or(lines.len()),
        ),
        Some((name, idx)) => {
            let (header, single) = (format!("[[{name}]]"), format!("[{name}]"));
            let s = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.trim() == header || l.trim() == single)
                .nth(idx)?
                .0;
            let e = lines[s + 1..]
                .iter()
                .position(|l| l.trim_start().starts_with('['))
                .map(|p| s + 1 + p)
                .unwrap_or(lines.len());
            (s, e)
        }
    };
    let header_line = start;
    while start < end {
        let l = lines[start].trim_start();
        if let Some(rest) = l.strip_prefix(field)
            && rest.trim_start().starts_with('=')
        {
            return Some(start + 1);
        }
        start += 1;
    }
    table.map(|_| header_line + 1)
}

/// Most hosts (network namespaces) in one lab.
pub const MAX_HOSTS: usize = 250;

/// Most sysctls, and most loopback addresses, on one host.
const MAX_PER_HOST: usize = 256;

/// Checks a sysctl set inside a lab host's namespace: a sysctl name, a
/// value on one line, and a key that is per network namespace (any other
/// would change the machine running the lab, and `lab down` would not
/// undo it).
pub fn check_lab_sysctl(key: &str, value: &str) -> Result<(), SysctlError> {
    use wirespeed_host::tune::{netns_sysctl_refusal, valid_sysctl_name};
    if !valid_sysctl_name(key) {
        return Err(SysctlError::BadName(key.to_string()));
    }
    if value.trim().is_empty() || value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(SysctlError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
        });
    }
    if let Some(why) = netns_sysctl_refusal(key) {
        return Err(SysctlError::HostWide { why });
    }
    Ok(())
}

/// Where a validation error sits: a table entry and a field.
struct At<'a> {
    table: Option<(&'a str, usize)>,
    field: &'a str,
}

/// A field at the top level of a lab file.
fn top(field: &'static str) -> At<'static> {
    At { table: None, field }
}

/// Link `i`'s segmentation limits and the per-packet overhead its caps
/// charge.
fn check_link_offloads(i: usize, l: &LinkSpec) -> Result<(), (At<'static>, String)> {
    let at = |field| At {
        table: Some(("link", i)),
        field,
    };
    if let Some(n) = l.gso_max_segs
        && !(1..=65535).contains(&n)
    {
        return Err((
            at("gso_max_segs"),
            format!("{n} must be between 1 and 65535"),
        ));
    }
    if let Some(o) = l.packet_overhead {
        if l.rate.is_none() && l.flow_rate.is_none() {
            return Err((
                at("packet_overhead"),
                "`packet_overhead` is charged by the cap: give a rate or flow_rate too".into(),
            ));
        }
        if o > 65535 {
            return Err((
                at("packet_overhead"),
                format!("{o} bytes per packet: at most 65535"),
            ));
        }
    }
    for (field, v) in [
        ("gso_max_size", l.gso_max_size),
        ("gro_max_size", l.gro_max_size),
        ("gso_ipv4_max_size", l.gso_ipv4_max_size),
        ("gro_ipv4_max_size", l.gro_ipv4_max_size),
    ] {
        if let Some(v) = v
            && !(1024..=524_280).contains(&v)
        {
            return Err((
                at(field),
                format!("{v} must be between 1024 and 524280 (veth's tso_max_size)"),
            ));
        }
    }
    Ok(())
}

impl LabSpec {
    /// Parses and validates a lab file; errors name the line and the field.
    pub fn from_toml_str(text: &str) -> Result<LabSpec, LabError> {
        let spec: LabSpec = toml::from_str(text).map_err(|e| {
            LabError::Spec(
                e.to_string()
                    .trim_end()
                    .replace("TOML parse error", "lab file"),
            )
        })?;
        spec.check().map_err(|(at, msg)| {
            let what = match at.table {
                Some((t, i)) => format!("[[{t}]] #{} field `{}`", i + 1, at.field),
                None => format!("field `{}`", at.field),
            };
            match locate(text, at.table, at.field) {
                Some(line) => LabError::Spec(format!("line {line}, {what}: {msg}")),
                None => LabError::Spec(format!("{what}: {msg}")),
            }
        })?;
        Ok(spec)
    }

    /// Validates a spec built in code.
    pub fn validate(&self) -> Result<(), LabError> {
        self.check().map_err(|(at, msg)| {
            let what = match at.table {
                Some((t, i)) => format!("{t} #{} field `{}`", i + 1, at.field),
                None => format!("field `{}`", at.field),
            };
            LabError::Spec(format!("{what}: {msg}"))
        })
    }

    fn check(&self) -> Result<(), (At<'static>, String)> {
        self.check_counts()?;
        self.check_hosts()?;
        if self.links.len() > 200 {
            return Err((top("link"), "at most 200 links".into()));
        }
        for (i, l) in self.links.iter().enumerate() {
            self.check_link(i, l)?;
            check_link_offloads(i, l)?;
        }
        self.check_vxlans()?;
        self.check_routes()?;
        self.check_mptcp()?;
        self.check_policies()
    }

    /// The lab's name, and how many hosts, overlays and routes it has.
    fn check_counts(&self) -> Result<(), (At<'static>, String)> {
        if !valid_name(&self.name, 40) {
            return Err((
                top("name"),
                format!(
                    "lab name {:?} must be 1-40 letters, digits, - or _",
                    self.name
                ),
            ));
        }
        if self.hosts.is_empty() {
            return Err((top("host"), "a lab needs at least one [[host]]".into()));
        }
        if self.hosts.len() > MAX_HOSTS {
            return Err((
                top("host"),
                format!(
                    "{} hosts: at most {MAX_HOSTS} (each is a network namespace)",
                    self.hosts.len()
                ),
            ));
        }
        if self.vxlans.len() > 200 {
            return Err((top("vxlan"), "at most 200 overlays".into()));
        }
        if self.routes.len() > 1000 {
            return Err((top("route"), "at most 1000 routes".into()));
        }
        Ok(())
    }

    /// The `[[host]]` tables: unique valid names, sysctls the lab may
    /// set, loopback addresses with prefixes.
    fn check_hosts(&self) -> Result<(), (At<'static>, String)> {
        let mut seen = std::collections::HashSet::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let at = |field| At {
                table: Some(("host", i)),
                field,
            };
            if !valid_name(&h.name, 15) {
                return Err((
                    at("name"),
                    format!(
                        "host name {:?} must be 1-15 letters, digits, - or _",
                        h.name
                    ),
                ));
            }
            if !seen.insert(h.name.as_str()) {
                return Err((at("name"), format!("host {:?} is defined twice", h.name)));
            }
            if h.sysctl.len() > MAX_PER_HOST || h.loopback.len() > MAX_PER_HOST {
                return Err((
                    at("sysctl"),
                    format!(
                        "at most {MAX_PER_HOST} sysctls and {MAX_PER_HOST} loopback addresses per host"
                    ),
                ));
            }
            for (k, v) in &h.sysctl {
                check_lab_sysctl(k, v).map_err(|e| (at("sysctl"), e.to_string()))?;
            }
            for a in &h.loopback {
                if parse_prefix(a).is_none() {
                    return Err((
                        at("loopback"),
                        format!("{a:?} is not an address with a prefix length, e.g. 10.200.0.1/32"),
                    ));
                }
            }
        }
        Ok(())
    }

    fn host_ok(&self, n: &str) -> bool {
        self.hosts.iter().any(|h| h.name == n)
    }

    /// Link `i`'s ends, MTU, caps and subnet.
    fn check_link(&self, i: usize, l: &LinkSpec) -> Result<(), (At<'static>, String)> {
        let at = |field| At {
            table: Some(("link", i)),
            field,
        };
        for (field, h) in [("a", &l.a), ("b", &l.b)] {
            if !self.host_ok(h) {
                return Err((at(field), format!("no host named {h:?}")));
            }
        }
        if l.a == l.b {
            return Err((at("b"), "a link joins two different hosts".into()));
        }
        if let Some(m) = l.mtu
            && !(68..=65535).contains(&m)
        {
            return Err((at("mtu"), format!("MTU {m} must be between 68 and 65535")));
        }
        if let Some(Err(e)) = l.rate.as_deref().map(cap_rate) {
            return Err((at("rate"), e.to_string()));
        }
        if let Some(s) = &l.subnet {
            match parse_v4_prefix(s) {
                Some((_, len)) if (8..=30).contains(&len) => {}
                _ => {
                    return Err((
                        at("subnet"),
                        format!(
                            "bad subnet {s:?}: use an IPv4 prefix from /8 to /30, e.g. 10.61.0.0/24"
                        ),
                    ));
                }
            }
        }
        if let Some(Err(e)) = l.flow_rate.as_deref().map(cap_rate) {
            return Err((at("flow_rate"), e.to_string()));
        }
        if let Some(n) = l.flows {
            if l.flow_rate.is_none() {
                return Err((
                    at("flows"),
                    "`flows` sets the buckets of `flow_rate`: give a flow_rate too".into(),
                ));
            }
            if !(2..=256).contains(&n) || !n.is_power_of_two() {
                return Err((
                    at("flows"),
                    format!("{n} buckets: use a power of two from 2 to 256"),
                ));
            }
        }
        Ok(())
    }

    /// The `[[vxlan]]` tables: an existing link under each, a valid name,
    /// VNI, MTU and subnet, and no VNI and port twice on one host.
    fn check_vxlans(&self) -> Result<(), (At<'static>, String)> {
        for (i, v) in self.vxlans.iter().enumerate() {
            let at = |field| At {
                table: Some(("vxlan", i)),
                field,
            };
            if v.link >= self.links.len() {
                return Err((
                    at("link"),
                    format!(
                        "link {} does not exist (there are {})",
                        v.link,
                        self.links.len()
                    ),
                ));
            }
            if let Some(n) = &v.name
                && !valid_name(n, 15)
            {
                return Err((at("name"), format!("bad device name {n:?}")));
            }
            if v.id == 0 || v.id >= 1 << 24 {
                return Err((at("id"), format!("VNI {} must be 1..16777215", v.id)));
            }
            if let Some(m) = v.mtu
                && !(68..=65485).contains(&m)
            {
                return Err((at("mtu"), format!("MTU {m} out of range")));
            }
            if let Some(s) = &v.subnet
                && parse_v4_prefix(s).is_none()
            {
                return Err((at("subnet"), format!("bad subnet {s:?}")));
            }
            let under = &self.links[v.link];
            let clash = self.vxlans[..i].iter().position(|w| {
                let other = &self.links[w.link];
                let shared = [&other.a, &other.b]
                    .iter()
                    .any(|h| **h == under.a || **h == under.b);
                shared && w.id == v.id && w.port == v.port
            });
            if let Some(j) = clash {
                return Err((
                    at("id"),
                    format!(
                        "VNI {} on port {} is taken by [[vxlan]] #{} on the same host: give each overlay its own id",
                        v.id,
                        v.port,
                        j + 1
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The `[[route]]` tables: a host of the lab, a destination prefix,
    /// existing links that touch the host.
    fn check_routes(&self) -> Result<(), (At<'static>, String)> {
        for (i, r) in self.routes.iter().enumerate() {
            let at = |field| At {
                table: Some(("route", i)),
                field,
            };
            if !self.host_ok(&r.host) {
                return Err((at("host"), format!("no host named {:?}", r.host)));
            }
            if parse_prefix(&r.dst).is_none() {
                return Err((at("dst"), format!("bad destination {:?}", r.dst)));
            }
            if r.links.is_empty() {
                return Err((at("links"), "name at least one link".into()));
            }
            for &k in &r.links {
                let Some(l) = self.links.get(k) else {
                    return Err((at("links"), format!("link {k} does not exist")));
                };
                if l.a != r.host && l.b != r.host {
                    return Err((
                        at("links"),
                        format!("link {k} does not touch host {:?}", r.host),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `[[mptcp]]` tables: a host of the lab, at most one table per
    /// host, links that touch it, limits the kernel takes.
    fn check_mptcp(&self) -> Result<(), (At<'static>, String)> {
        for (i, m) in self.mptcp.iter().enumerate() {
            let at = |field| At {
                table: Some(("mptcp", i)),
                field,
            };
            if !self.hosts.iter().any(|h| h.name == m.host) {
                return Err((at("host"), format!("no host named {:?}", m.host)));
            }
            if self.mptcp[..i].iter().any(|o| o.host == m.host) {
                return Err((
                    at("host"),
                    format!("host {:?} has an [[mptcp]] table already", m.host),
                ));
            }
            for &k in &m.endpoints {
                match self.links.get(k) {
                    None => return Err((at("endpoints"), format!("link {k} does not exist"))),
                    Some(l) if l.a != m.host && l.b != m.host => {
                        return Err((
                            at("endpoints"),
                            format!("link {k} does not touch host {:?}", m.host),
                        ));
                    }
                    Some(_) => {}
                }
            }
            if EndpointKind::parse(&m.kind).is_none() {
                return Err((at("kind"), format!("{:?}: signal or subflow", m.kind)));
            }
            for (field, v) in [
                ("subflows", m.subflows),
                ("add_addr_accepted", m.add_addr_accepted),
            ] {
                if v > LIMIT_MAX {
                    return Err((at(field), format!("{v}: the kernel takes 0-{LIMIT_MAX}")));
                }
            }
        }
        Ok(())
    }

    /// The `[[policy]]` tables: a host of the lab, a rule count the
    /// loaders take in one go, an IPv4 prefix.
    fn check_policies(&self) -> Result<(), (At<'static>, String)> {
        if self.policies.len() > MAX_POLICIES {
            return Err((
                top("policy"),
                format!("at most {MAX_POLICIES} [[policy]] tables"),
            ));
        }
        for (i, p) in self.policies.iter().enumerate() {
            let at = |field| At {
                table: Some(("policy", i)),
                field,
            };
            if !self.host_ok(&p.host) {
                return Err((at("host"), format!("no host named {:?}", p.host)));
            }
            if p.rules > MAX_POLICY_RULES {
                return Err((
                    at("rules"),
                    format!("{}: at most {MAX_POLICY_RULES}", p.rules),
                ));
            }
            if p.lookup == Lookup::Set && p.enforcer != Enforcer::Nftables {
                return Err((
                    at("lookup"),
                    "a set lookup is an nftables set: use enforcer = \"nftables\" (iptables would need ipset)".into(),
                ));
            }
            if let Some(d) = &p.dst
                && parse_v4_prefix(d).is_none()
            {
                return Err((
                    at("dst"),
                    format!("{d:?} is not an IPv4 prefix such as 10.214.0.2/32"),
                ));
            }
        }
        Ok(())
    }

    /// Two hosts `a` and `b` joined by `nics` links, each capped at `rate`.
    pub fn two_hosts(name: &str, nics: usize, rate: Option<&str>) -> LabSpec {
        LabSpec {
            name: name.to_string(),
            hosts: vec![
                HostSpec {
                    name: "a".into(),
                    ..HostSpec::default()
                },
                HostSpec {
                    name: "b".into(),
                    ..HostSpec::default()
                },
            ],
            links: (0..nics)
                .map(|_| LinkSpec {
                    a: "a".into(),
                    b: "b".into(),
                    rate: rate.map(str::to_string),
                    ..LinkSpec::default()
                })
                .collect(),
            ..LabSpec::default()
        }
    }

    /// The second octet of default subnets: given, or derived from the name.
    pub fn base(&self) -> u8 {
        self.subnet_base.unwrap_or_else(|| {
            let h = self
                .name
                .bytes()
                .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
            (h % 200) as u8 + 20
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t1"

[[host]]
name = "a"
sysctl = { "net.ipv4.tcp_rmem" = "4096 131072 16777216" }
loopback = ["10.200.0.1/32"]

[[host]]
name = "b"
source_routing = true

[[link]]
a = "a"
b = "b"
rate = "1gbit"
mtu = 9000

[[link]]
a = "a"
b = "b"
subnet = "10.61.0.0/24"

[[vxlan]]
link = 0

[[route]]
host = "a"
dst = "10.200.0.2/32"
links = [0, 1]
"#;

    #[test]
    fn a_good_file_parses() {
        let s = LabSpec::from_toml_str(GOOD).unwrap();
        assert_eq!(s.hosts.len(), 2);
        assert_eq!(s.links[0].mtu, Some(9000));
        assert_eq!(s.vxlans[0].id, 42);
        assert_eq!(s.routes[0].links, vec![0, 1]);
    }

    fn err(text: &str) -> String {
        LabSpec::from_toml_str(text).unwrap_err().to_string()
    }

    #[test]
    fn bad_files_name_the_line_and_field() {
        let e = err(&GOOD.replace("mtu = 9000", "mtu = 99999"));
        assert!(e.contains("line 17") && e.contains("`mtu`"), "{e}");
        let e = err(&GOOD.replace("rate = \"1gbit\"", "rate = \"fast\""));
        assert!(e.contains("line 16") && e.contains("`rate`"), "{e}");
        let e = err(&GOOD.replace("b = \"b\"\nsubnet", "b = \"c\"\nsubnet"));
        assert!(
            e.contains("line 21") && e.contains("no host named \"c\""),
            "{e}"
        );
        let e = err(&GOOD.replace("mtu = 9000", "mtux = 9000"));
        assert!(e.contains("line 17") && e.contains("mtux"), "{e}");
        let e = err(&GOOD.replace("links = [0, 1]", "links = [0, 7]"));
        assert!(e.contains("line 30") && e.contains("link 7"), "{e}");
        let e = err(&GOOD.replace("mtu = 9000", "flow_rate = \"slow\""));
        assert!(e.contains("line 17") && e.contains("`flow_rate`"), "{e}");
        let e = err(&GOOD.replace("mtu = 9000", "flow_rate = \"300mbit\"\nflows = 12"));
        assert!(e.contains("line 18") && e.contains("power of two"), "{e}");
        let e = err(&GOOD.replace("mtu = 9000", "flows = 16"));
        assert!(
            e.contains("line 17") && e.contains("give a flow_rate"),
            "{e}"
        );
        let e = err(&GOOD.replace("mtu = 9000", "gso_ipv4_max_size = 600000"));
        assert!(
            e.contains("line 17") && e.contains("`gso_ipv4_max_size`"),
            "{e}"
        );
        let e = err(&GOOD.replace(
            "[[vxlan]]\nlink = 0",
            "[[vxlan]]\nlink = 0\n\n[[vxlan]]\nlink = 1",
        ));
        assert!(
            e.contains("[[vxlan]] #2 field `id`") && e.contains("line 27"),
            "{e}"
        );
        let e = err(&GOOD.replace("mtu = 9000", "mtu = \"big\""));
        assert!(e.contains("line 17"), "{e}");
        assert!(err("name = \"x y\"\n[[host]]\nname=\"a\"").contains("line 1"));
    }

    #[test]
    fn every_shipped_lab_file_is_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let f = e.unwrap().path().join("lab.toml");
            if let Ok(text) = std::fs::read_to_string(&f) {
                LabSpec::from_toml_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                n += 1;
            }
        }
        assert!(n >= 9, "{n} lab files in {}", dir.display());
    }

    #[test]
    fn policy_tables_are_checked() {
        let with = |t: &str| format!("{GOOD}\n[[policy]]\n{t}\n");
        let s = LabSpec::from_toml_str(&with("host = \"b\"\nrules = 100")).unwrap();
        let p = &s.policies[0];
        assert_eq!(
            (p.enforcer, p.hook, p.lookup),
            (Enforcer::Nftables, Hook::Input, Lookup::Linear)
        );
        assert!(p.stateful && p.dst.is_none());
        for (t, want) in [
            ("host = \"c\"\nrules = 1", "no host named \"c\""),
            ("host = \"b\"\nrules = 100001", "at most 100000"),
            (
                "host = \"b\"\nrules = 1\ndst = \"fd00::1/128\"",
                "not an IPv4 prefix",
            ),
            (
                "host = \"b\"\nrules = 1\nenforcer = \"iptables-legacy\"\nlookup = \"set\"",
                "iptables would need ipset",
            ),
            (
                "host = \"b\"\nrules = 1\nenforcer = \"ebpf\"",
                "iptables-legacy",
            ),
        ] {
            let e = err(&with(t));
            assert!(e.contains(want) && e.contains("line 3"), "{t}: {e}");
        }
    }

    #[test]
    fn mptcp_tables_are_checked() {
        let with = |t: &str| format!("{GOOD}\n[[mptcp]]\n{t}\n");
        let s = LabSpec::from_toml_str(&with("host = \"b\"\nendpoints = [1]")).unwrap();
        assert_eq!(s.mptcp[0].kind, "signal");
        assert_eq!((s.mptcp[0].subflows, s.mptcp[0].add_addr_accepted), (2, 2));
        for (t, want) in [
            ("host = \"c\"", "no host named \"c\""),
            ("host = \"b\"\nendpoints = [5]", "link 5 does not exist"),
            ("host = \"b\"\nkind = \"backup\"", "signal or subflow"),
            ("host = \"b\"\nsubflows = 9", "0-8"),
            (
                "host = \"b\"\n[[mptcp]]\nhost = \"b\"",
                "has an [[mptcp]] table already",
            ),
        ] {
            let e = err(&with(t));
            assert!(e.contains("[[mptcp]]") || e.contains("mptcp #"), "{e}");
            assert!(e.contains(want), "{t}: {e}");
        }
    }

    #[test]
    fn host_wide_sysctls_and_absurd_sizes_are_refused() {
        for k in [
            "kernel.hostname",
            "vm.swappiness",
            "fs.file-max",
            "net.core.rmem_max",
        ] {
            let e = err(&GOOD.replace("net.ipv4.tcp_rmem", k));
            assert!(
                e.contains("line 6")
                    && e.contains("`sysctl`")
                    && e.contains(k)
                    && e.contains("host"),
                "{e}"
            );
        }
        let e = err(&GOOD.replace("\"4096 131072 16777216\"", "\"1\\nkernel.x=1\""));
        assert!(e.contains("bad value"), "{e}");
        let mut many = String::from("name = \"big\"\n");
        for i in 0..10_000 {
            many.push_str(&format!("[[host]]\nname = \"h{i}\"\n"));
        }
        let e = err(&many);
        assert!(e.contains("10000 hosts: at most 250"), "{e}");
    }

    #[test]
    fn rates_and_prefixes() {
        assert_eq!(parse_rate("1gbit"), Some(1_000_000_000));
        assert_eq!(parse_rate("2.5g"), Some(2_500_000_000));
        assert_eq!(parse_rate("x"), None);
        assert_eq!(
            parse_v4_prefix("10.61.0.7/24"),
            Some(("10.61.0.0".parse().unwrap(), 24))
        );
        assert!(parse_v4_prefix("10.61.0.0/33").is_none());
    }
}
