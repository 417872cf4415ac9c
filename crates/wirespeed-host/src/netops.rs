//! Typed operations that build network topologies (what a lab is made
//! of): namespaces, veth pairs, vxlan overlays, addresses, routes
//! (multipath too), policy rules, link sizes, features, sysctls, qdiscs
//! MPTCP path managers (limits, endpoints) and firewall rule sets. Each [`Op`] displays as the `ip`/`tc`/`sysctl`/`ethtool`/`nft`
//! command a person would type; [`Op::apply`] does it over rtnetlink,
//! ethtool netlink and /proc/sys from a thread inside the namespace, with
//! the knobs tuning knows (sysctls, MTU, GSO/GRO sizes, features) written
//! through [`Host::set`], which reads each value back. Only qdiscs, classes
//! and filters run `tc` (see [`Op::Tc`]), and firewall rules `nft` or
//! `iptables-restore` (see [`Op::Firewall`]).

use crate::HostError;
use crate::fsroot::Fs;
use crate::mptcp::{EndpointKind, Limits, PathManager};
use crate::netns;
use crate::rtnl::{Rtnl, RuleSpec};
use crate::tune::{Host, Setting};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressScope,
};
use netlink_packet_route::link::{InfoData, InfoKind, InfoVeth, InfoVxlan, LinkAttribute};
use netlink_packet_route::link::{LinkInfo, LinkMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteNextHop, RouteProtocol,
    RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;

pub use crate::tune::LinkSize;

/// One step of building a topology; `ns` is the named namespace it acts in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `ip netns add NS`.
    NetnsAdd {
        /// The namespace.
        ns: String,
    },
    /// `ip -n NS link set dev DEV up`.
    Up {
        /// Namespace.
        ns: String,
        /// Device.
        dev: String,
    },
    /// `ip netns exec NS sysctl -q -w KEY=VALUE` (a /proc/sys write).
    Sysctl {
        /// Namespace.
        ns: String,
        /// Dotted sysctl name.
        key: String,
        /// Value.
        value: String,
    },
    /// `ip link add A netns NSA type veth peer name B netns NSB`.
    Veth {
        /// Namespace of the first end.
        ns_a: String,
        /// Its device name.
        dev_a: String,
        /// Namespace of the peer.
        ns_b: String,
        /// The peer's device name.
        dev_b: String,
    },
    /// `ip -n NS link set dev DEV mtu N gso_max_size N ...`, in order.
    LinkSet {
        /// Namespace.
        ns: String,
        /// Device.
        dev: String,
        /// The sizes and their values.
        sizes: Vec<(LinkSize, u32)>,
    },
    /// `ip netns exec NS ethtool -K DEV NAME on|off`.
    Feature {
        /// Namespace.
        ns: String,
        /// Device.
        dev: String,
        /// The name ethtool(8) takes (gro, gso, tso...).
        name: String,
        /// On or off.
        on: bool,
    },
    /// `ip -n NS addr add ADDR/LEN dev DEV [nodad]`.
    Addr {
        /// Namespace.
        ns: String,
        /// Device.
        dev: String,
        /// Address.
        addr: IpAddr,
        /// Prefix length.
        len: u8,
        /// Skip IPv6 duplicate address detection (usable at once).
        nodad: bool,
    },
    /// `ip -n NS link add DEV type vxlan id ID local L remote R dstport P dev UNDER`.
    Vxlan {
        /// Namespace.
        ns: String,
        /// The overlay device.
        dev: String,
        /// VNI.
        id: u32,
        /// Local underlay address.
        local: Ipv4Addr,
        /// The peer's underlay address.
        remote: Ipv4Addr,
        /// UDP port.
        port: u16,
        /// The underlay device.
        under: String,
    },
    /// `ip -n NS [-6] rule add from ADDR table T priority P`.
    Rule {
        /// Namespace.
        ns: String,
        /// Source address (a host route: /32 or /128).
        from: IpAddr,
        /// Routing table.
        table: u32,
        /// Priority.
        priority: u32,
    },
    /// `ip -n NS [-6] route add ...`: see [`Route`].
    Route(Route),
    /// `tc -n NS ARGS...`: a qdisc, class or filter.
    Tc {
        /// Namespace.
        ns: String,
        /// tc's arguments after `-n NS`.
        args: Vec<String>,
    },
    /// `ip -n NS mptcp limits set subflow N add_addr_accepted M`.
    MptcpLimits {
        /// Namespace.
        ns: String,
        /// The path manager's limits.
        limits: Limits,
    },
    /// `ip netns exec NS nft -f -` (or `iptables-restore --noflush`) fed
    /// a rule set: a firewall's rules, loaded in one transaction.
    Firewall {
        /// Namespace.
        ns: String,
        /// The program that loads them.
        tool: FirewallTool,
        /// What it reads on standard input.
        script: String,
    },
    /// `ip -n NS mptcp endpoint add ADDR dev DEV signal|subflow`.
    MptcpEndpoint {
        /// Namespace.
        ns: String,
        /// The endpoint's address (on `dev`).
        addr: IpAddr,
        /// Its device.
        dev: String,
        /// Announced to the peer or used for subflows from here.
        kind: EndpointKind,
    },
}

/// The program that loads an [`Op::Firewall`] rule set: the kernel's two
/// packet filters (nf_tables, and x_tables behind iptables-legacy), and
/// iptables' nf_tables backend, which most distributions ship as `iptables`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirewallTool {
    /// `nft -f -`: an nftables ruleset.
    Nft,
    /// `iptables-legacy-restore --noflush`: x_tables.
    IptablesLegacy,
    /// `iptables-nft-restore --noflush`: iptables rules on nf_tables.
    IptablesNft,
}

impl FirewallTool {
    /// The program and its arguments.
    pub fn argv(self) -> &'static [&'static str] {
        match self {
            FirewallTool::Nft => &["nft", "-f", "-"],
            FirewallTool::IptablesLegacy => &["iptables-legacy-restore", "--noflush"],
            FirewallTool::IptablesNft => &["iptables-nft-restore", "--noflush"],
        }
    }

    /// The Debian package that ships the program.
    pub fn package(self) -> &'static str {
        match self {
            FirewallTool::Nft => "nftables",
            _ => "iptables",
        }
    }
}

/// `ip -n NS [-6] route add DST/LEN [via GW dev DEV | nexthop via GW dev
/// DEV ... | dev DEV] [src SRC] [table T]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Namespace.
    pub ns: String,
    /// Destination.
    pub dst: IpAddr,
    /// Its prefix length.
    pub len: u8,
    /// Gateways and their devices: one is a plain route, more are an
    /// ECMP multipath route.
    pub via: Vec<(IpAddr, String)>,
    /// The device of a route without gateway.
    pub dev: Option<String>,
    /// Preferred source address.
    pub src: Option<IpAddr>,
    /// Routing table (main when None).
    pub table: Option<u32>,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ns, dst, len) = (&self.ns, &self.dst, self.len);
        write!(f, "ip -n {ns} {}route add {dst}/{len}", six(dst))?;
        match self.via.as_slice() {
            [(gw, d)] => write!(f, " via {gw} dev {d}")?,
            hops => {
                for (gw, d) in hops {
                    write!(f, " nexthop via {gw} dev {d}")?;
                }
            }
        }
        if let Some(d) = &self.dev {
            write!(f, " dev {d}")?;
        }
        if let Some(s) = self.src {
            write!(f, " src {s}")?;
        }
        if let Some(t) = self.table {
            write!(f, " table {t}")?;
        }
        Ok(())
    }
}

fn six(ip: &IpAddr) -> &'static str {
    if ip.is_ipv6() { "-6 " } else { "" }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::NetnsAdd { ns } => write!(f, "ip netns add {ns}"),
            Op::Up { ns, dev } if dev == "lo" => write!(f, "ip -n {ns} link set lo up"),
            Op::Up { ns, dev } => write!(f, "ip -n {ns} link set dev {dev} up"),
            Op::Sysctl { ns, key, value } => {
                write!(f, "ip netns exec {ns} sysctl -q -w {key}={value}")
            }
            Op::Veth {
                ns_a,
                dev_a,
                ns_b,
                dev_b,
            } => write!(
                f,
                "ip link add {dev_a} netns {ns_a} type veth peer name {dev_b} netns {ns_b}"
            ),
            Op::LinkSet { ns, dev, sizes } => {
                write!(f, "ip -n {ns} link set dev {dev}")?;
                for (k, v) in sizes {
                    write!(f, " {} {v}", k.keyword())?;
                }
                Ok(())
            }
            Op::Feature { ns, dev, name, on } => write!(
                f,
                "ip netns exec {ns} ethtool -K {dev} {name} {}",
                if *on { "on" } else { "off" }
            ),
            Op::Addr {
                ns,
                dev,
                addr,
                len,
                nodad,
            } => {
                write!(f, "ip -n {ns} addr add {addr}/{len} dev {dev}")?;
                if *nodad {
                    write!(f, " nodad")?;
                }
                Ok(())
            }
            Op::Vxlan {
                ns,
                dev,
                id,
                local,
                remote,
                port,
                under,
            } => write!(
                f,
                "ip -n {ns} link add {dev} type vxlan id {id} local {local} remote {remote} dstport {port} dev {under}"
            ),
            Op::Rule {
                ns,
                from,
                table,
                priority,
            } => write!(
                f,
                "ip -n {ns} {}rule add from {from} table {table} priority {priority}",
                six(from)
            ),
            Op::Route(r) => r.fmt(f),
            Op::MptcpLimits { ns, limits } => write!(
                f,
                "ip -n {ns} mptcp limits set subflow {} add_addr_accepted {}",
                limits.subflows, limits.add_addr_accepted
            ),
            Op::MptcpEndpoint {
                ns,
                addr,
                dev,
                kind,
            } => write!(f, "ip -n {ns} mptcp endpoint add {addr} dev {dev} {kind}"),
            Op::Firewall { ns, tool, script } => {
                let cmd = tool.argv().join(" ");
                write!(f, "ip netns exec {ns} {cmd} <<'EOF'\n{script}EOF")
            }
            Op::Tc { ns, args } => {
                write!(f, "tc -n {ns}")?;
                // An argument with spaces (a cBPF program) in quotes, as
                // a shell takes it.
                for a in args {
                    if a.contains(' ') {
                        write!(f, " '{a}'")?;
                    } else {
                        write!(f, " {a}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// The kernel's feature name behind an ethtool(8) `-K` keyword.
fn kernel_feature(name: &str) -> &str {
    match name {
        "gro" => "rx-gro",
        "lro" => "rx-lro",
        "gso" => "tx-generic-segmentation",
        "tso" => "tx-tcp-segmentation",
        "rx" => "rx-checksum",
        other => other,
    }
}

fn route_addr(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(a) => RouteAddress::Inet(a),
        IpAddr::V6(a) => RouteAddress::Inet6(a),
    }
}

fn family(ip: &IpAddr) -> AddressFamily {
    if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

fn index(rt: &mut Rtnl, dev: &str) -> Result<u32, HostError> {
    Ok(rt.link(dev)?.header.index)
}

impl Op {
    /// The namespace the operation acts in (for a veth pair, the first end's).
    pub fn ns(&self) -> &str {
        match self {
            Op::NetnsAdd { ns }
            | Op::Up { ns, .. }
            | Op::Sysctl { ns, .. }
            | Op::LinkSet { ns, .. }
            | Op::Feature { ns, .. }
            | Op::Addr { ns, .. }
            | Op::Vxlan { ns, .. }
            | Op::Rule { ns, .. }
            | Op::Route(Route { ns, .. })
            | Op::Tc { ns, .. }
            | Op::Firewall { ns, .. }
            | Op::MptcpLimits { ns, .. }
            | Op::MptcpEndpoint { ns, .. } => ns,
            Op::Veth { ns_a, .. } => ns_a,
        }
    }

    /// Does the operation. Sysctls and link sizes are read back and an
    /// error when they differ from what was written.
    pub fn apply(&self) -> Result<(), HostError> {
        match self {
            Op::NetnsAdd { ns } => netns::create(ns),
            Op::Veth {
                ns_a,
                dev_a,
                ns_b,
                dev_b,
            } => {
                // Sent from the caller's namespace: each end's namespace is
                // named by an open file (IFLA_NET_NS_FD), so the devices are
                // made right there and their names never meet here.
                let open = |ns: &str| {
                    let p = netns::path(ns)?;
                    std::fs::File::open(&p).map_err(|e| HostError::file(&p, e))
                };
                let (fa, fb) = (open(ns_a)?, open(ns_b)?);
                let mut peer = LinkMessage::default();
                peer.attributes.push(LinkAttribute::IfName(dev_b.clone()));
                peer.attributes.push(LinkAttribute::NetNsFd(fb.as_raw_fd()));
                let mut msg = LinkMessage::default();
                msg.attributes.push(LinkAttribute::IfName(dev_a.clone()));
                msg.attributes.push(LinkAttribute::NetNsFd(fa.as_raw_fd()));
                msg.attributes.push(LinkAttribute::LinkInfo(vec![
                    LinkInfo::Kind(InfoKind::Veth),
                    LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
                ]));
                Rtnl::open()?.create(RouteNetlinkMessage::NewLink(msg), &self.to_string())
            }
            Op::Tc { ns, args } => run_tc(ns, args, &self.to_string()),
            Op::Firewall { ns, tool, script } => load_firewall(ns, *tool, script),
            _ => netns::run_in(self.ns(), || self.apply_here()),
        }
    }

    /// The operations that act inside the namespace, on this thread.
    fn apply_here(&self) -> Result<(), HostError> {
        let what = self.to_string();
        match self {
            Op::Sysctl { key, value, .. } => {
                let s = Setting::Sysctl { key: key.clone() };
                Host::open(Fs::at("/"))?.set(&s, value)
            }
            Op::LinkSet { dev, sizes, .. } => {
                let mut host = Host::open(Fs::at("/"))?;
                for (k, v) in sizes {
                    host.set(&k.setting(dev), &v.to_string())?;
                }
                Ok(())
            }
            Op::Feature { dev, name, on, .. } => {
                let s = Setting::Feature {
                    dev: dev.clone(),
                    name: kernel_feature(name).into(),
                };
                Host::open(Fs::at("/"))?.set(&s, if *on { "on" } else { "off" })
            }
            Op::MptcpLimits { limits, .. } => set_mptcp_limits(limits, what),
            Op::MptcpEndpoint {
                addr, dev, kind, ..
            } => add_mptcp_endpoint(*addr, dev, *kind, what),
            Op::Up { dev, .. } => {
                let mut rt = Rtnl::open()?;
                let i = index(&mut rt, dev)?;
                rt.set_up(i, &what)
            }
            Op::Addr {
                dev,
                addr,
                len,
                nodad,
                ..
            } => add_addr(dev, *addr, *len, *nodad, &what),
            Op::Vxlan {
                dev,
                id,
                local,
                remote,
                port,
                under,
                ..
            } => add_vxlan(dev, *id, *local, *remote, *port, under, &what),
            Op::Rule {
                from,
                table,
                priority,
                ..
            } => Rtnl::open()?.add_rule(&RuleSpec {
                src: *from,
                src_len: if from.is_ipv4() { 32 } else { 128 },
                table: *table,
                priority: *priority,
            }),
            Op::Route(r) => {
                let mut rt = Rtnl::open()?;
                let msg = route_msg(&mut rt, r)?;
                rt.create(RouteNetlinkMessage::NewRoute(msg), &what)
            }
            Op::NetnsAdd { .. } | Op::Veth { .. } | Op::Tc { .. } | Op::Firewall { .. } => Err(
                HostError::State(format!("{what}: not an operation inside a namespace")),
            ),
        }
    }
}

/// `ip link add DEV type vxlan id ID local LOCAL remote REMOTE dstport
/// PORT dev UNDER`.
fn add_vxlan(
    dev: &str,
    id: u32,
    local: Ipv4Addr,
    remote: Ipv4Addr,
    port: u16,
    under: &str,
    what: &str,
) -> Result<(), HostError> {
    let mut rt = Rtnl::open()?;
    let link = index(&mut rt, under)?;
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::IfName(dev.to_string()));
    msg.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Vxlan),
        LinkInfo::Data(InfoData::Vxlan(vec![
            InfoVxlan::Id(id),
            InfoVxlan::Local(local),
            InfoVxlan::Group(remote),
            InfoVxlan::Port(port),
            InfoVxlan::Link(link),
        ])),
    ]));
    rt.create(RouteNetlinkMessage::NewLink(msg), what)
}

/// Sets the MPTCP path manager's limits and checks the kernel kept them.
fn set_mptcp_limits(limits: &Limits, what: String) -> Result<(), HostError> {
    let mut pm = PathManager::open()?;
    pm.set_limits(*limits)?;
    let got = pm.limits()?;
    if got != *limits {
        return Err(HostError::Command {
            cmd: what,
            stderr: format!("the kernel kept {got:?}"),
        });
    }
    Ok(())
}

/// Adds an MPTCP endpoint on `dev` and checks it is listed.
fn add_mptcp_endpoint(
    addr: IpAddr,
    dev: &str,
    kind: EndpointKind,
    what: String,
) -> Result<(), HostError> {
    let i = index(&mut Rtnl::open()?, dev)?;
    let mut pm = PathManager::open()?;
    pm.add_endpoint(addr, i, kind)?;
    if !pm.endpoints()?.iter().any(|e| e.addr == addr) {
        return Err(HostError::Command {
            cmd: what,
            stderr: "the endpoint is not listed after adding it".into(),
        });
    }
    Ok(())
}

/// `ip addr add ADDR/LEN dev DEV [nodad]`: host scope on loopback.
fn add_addr(dev: &str, addr: IpAddr, len: u8, nodad: bool, what: &str) -> Result<(), HostError> {
    let mut rt = Rtnl::open()?;
    let mut m = AddressMessage::default();
    m.header.family = family(&addr);
    m.header.prefix_len = len;
    m.header.index = index(&mut rt, dev)?;
    m.header.scope = if addr.is_loopback() {
        AddressScope::Host
    } else {
        AddressScope::Universe
    };
    m.attributes.push(AddressAttribute::Local(addr));
    m.attributes.push(AddressAttribute::Address(addr));
    if nodad {
        m.header.flags = AddressHeaderFlags::Nodad;
        m.attributes
            .push(AddressAttribute::Flags(AddressFlags::Nodad));
    }
    rt.create(RouteNetlinkMessage::NewAddress(m), what)
}

/// The RTM_NEWROUTE message of `ip route add` with these arguments, with
/// iproute2's defaults: protocol boot, link scope for an IPv4 route
/// without gateway, universe otherwise.
fn route_msg(rt: &mut Rtnl, r: &Route) -> Result<RouteMessage, HostError> {
    let (dst, len, via) = (r.dst, r.len, r.via.as_slice());
    let (dev, src, table) = (r.dev.as_deref(), r.src, r.table);
    let table = table.unwrap_or(u32::from(RouteHeader::RT_TABLE_MAIN));
    let mut m = RouteMessage::default();
    m.header.address_family = family(&dst);
    m.header.destination_prefix_length = len;
    m.header.table = u8::try_from(table).unwrap_or(252);
    m.header.protocol = RouteProtocol::Boot;
    m.header.kind = RouteType::Unicast;
    m.header.scope = if dst.is_ipv4() && via.is_empty() {
        RouteScope::Link
    } else {
        RouteScope::Universe
    };
    m.attributes
        .push(RouteAttribute::Destination(route_addr(dst)));
    m.attributes.push(RouteAttribute::Table(table));
    match via {
        [] => {}
        [(gw, d)] => {
            m.attributes.push(RouteAttribute::Gateway(route_addr(*gw)));
            m.attributes.push(RouteAttribute::Oif(index(rt, d)?));
        }
        hops => {
            let mut nh = Vec::new();
            for (gw, d) in hops {
                let mut h = RouteNextHop::default();
                h.interface_index = index(rt, d)?;
                h.attributes.push(RouteAttribute::Gateway(route_addr(*gw)));
                nh.push(h);
            }
            m.attributes.push(RouteAttribute::MultiPath(nh));
        }
    }
    if let Some(d) = dev {
        m.attributes.push(RouteAttribute::Oif(index(rt, d)?));
    }
    if let Some(s) = src {
        m.attributes.push(RouteAttribute::PrefSource(route_addr(s)));
    }
    Ok(m)
}

/// Runs `tc -n NS ARGS`. A command, not netlink: netlink-packet-route
/// 0.34 models only the fq_codel and ingress qdiscs, and tbf and htb
/// (rate tables, bursts, classes) and u32 hash tables as tc(8) builds them
/// would be hand-encoded kernel structures here.
fn run_tc(ns: &str, args: &[String], what: &str) -> Result<(), HostError> {
    netns::path(ns)?;
    let out = std::process::Command::new("tc")
        .args(["-n", ns])
        .args(args)
        .output()
        .map_err(|e| {
            HostError::file(
                "tc",
                std::io::Error::new(e.kind(), format!("{e} (is iproute2 installed?)")),
            )
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(HostError::Command {
            cmd: what.into(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Feeds `script` to the firewall's loader inside namespace `ns` (`ip
/// netns exec`, as a person would). A command, not netlink: nf_tables'
/// and x_tables' rule encodings are the loaders' own, and no maintained
/// crate writes them without linking libnftnl or libiptc.
fn load_firewall(ns: &str, tool: FirewallTool, script: &str) -> Result<(), HostError> {
    use std::io::Write;
    netns::path(ns)?;
    let argv = tool.argv();
    let what = format!("ip netns exec {ns} {}", argv.join(" "));
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| HostError::file("ip", e))?;
    let fed = child
        .stdin
        .take()
        .map(|mut i| i.write_all(script.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| HostError::file("ip", e))?;
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if out.status.success() && !matches!(fed, Some(Err(_))) {
        return Ok(());
    }
    let missing = stderr.contains("No such file") || stderr.contains("not found");
    Err(HostError::Command {
        cmd: what,
        stderr: if missing {
            format!(
                "{stderr} (is {} installed? apt install {})",
                argv[0],
                tool.package()
            )
        } else {
            stderr
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_read_like_the_commands_people_type() {
        let r = Route {
            ns: "l-b".into(),
            dst: "10.200.0.1".parse().unwrap(),
            len: 32,
            via: vec![
                ("10.61.0.1".parse().unwrap(), "eth0".into()),
                ("10.61.1.1".parse().unwrap(), "eth1".into()),
            ],
            dev: None,
            src: None,
            table: None,
        };
        assert_eq!(
            r.to_string(),
            "ip -n l-b route add 10.200.0.1/32 nexthop via 10.61.0.1 dev eth0 nexthop via 10.61.1.1 dev eth1"
        );
        let r6 = Route {
            ns: "l-a".into(),
            dst: "fd00:10:61::".parse().unwrap(),
            len: 64,
            via: vec![],
            dev: Some("eth0".into()),
            src: None,
            table: Some(100),
        };
        assert_eq!(
            r6.to_string(),
            "ip -n l-a -6 route add fd00:10:61::/64 dev eth0 table 100"
        );
        let l = Op::LinkSet {
            ns: "l-a".into(),
            dev: "eth0".into(),
            sizes: vec![(LinkSize::Mtu, 9000), (LinkSize::GsoMaxSize, 185000)],
        };
        assert_eq!(
            l.to_string(),
            "ip -n l-a link set dev eth0 mtu 9000 gso_max_size 185000"
        );
        assert_eq!(kernel_feature("gro"), "rx-gro");
        assert_eq!(
            Op::Up {
                ns: "l-a".into(),
                dev: "lo".into()
            }
            .to_string(),
            "ip -n l-a link set lo up"
        );
        let bpf = Op::Tc {
            ns: "l-a".into(),
            args: [
                "filter",
                "add",
                "dev",
                "eth0",
                "bpf",
                "bytecode",
                "1,6 0 0 0",
            ]
            .map(String::from)
            .to_vec(),
        };
        assert_eq!(
            bpf.to_string(),
            "tc -n l-a filter add dev eth0 bpf bytecode '1,6 0 0 0'"
        );
    }
}
