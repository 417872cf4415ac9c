//! Builds a [`Snapshot`] from rtnetlink, ethtool netlink, /proc and /sys.
//! Every read that fails becomes "unknown" with its reason.

use crate::ethtool::Ethtool;
use crate::rtnl::Rtnl;
use crate::snapshot::*;
use crate::{HostError, fsroot::Fs};
use netlink_packet_route::AddressFamily;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVxlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
use netlink_packet_route::rule::{RuleAttribute, RuleMessage};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The sysctls a snapshot reads (dotted names).
pub const SYSCTLS: &[&str] = &[
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.optmem_max",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_rto_min_us",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_notsent_lowat",
    "net.core.netdev_max_backlog",
    "net.core.default_qdisc",
    "net.ipv4.fib_multipath_hash_policy",
    "net.ipv4.fib_multipath_hash_fields",
    "net.ipv6.fib_multipath_hash_policy",
    "net.ipv4.tcp_fastopen",
    "net.core.somaxconn",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.core.busy_read",
    "net.core.busy_poll",
];

/// Kernel release as (major, minor).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// BIG TCP support from a kernel release.
pub fn big_tcp_support(release: &str) -> BigTcpSupport {
    let v = kernel_version(release).unwrap_or((0, 0));
    BigTcpSupport {
        ipv6: v >= (5, 19),
        ipv4: v >= (6, 3),
    }
}

fn link_name(links: &[LinkMessage], index: u32) -> Option<String> {
    links
        .iter()
        .find(|l| l.header.index == index)
        .and_then(|l| {
            l.attributes.iter().find_map(|a| {
                if let LinkAttribute::IfName(n) = a {
                    Some(n.clone())
                } else {
                    None
                }
            })
        })
}

fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v) => Some(IpAddr::V4(*v)),
        RouteAddress::Inet6(v) => Some(IpAddr::V6(*v)),
        _ => None,
    }
}

/// Reads the host. `fs` is where /proc and /sys are (the real root, or a
/// fixture tree in tests).
pub fn inspect(fs: &Fs) -> Result<Snapshot, HostError> {
    let mut rt = Rtnl::open()?;
    let links = rt.links()?;
    let addrs = rt.addresses()?;
    let routes = rt.routes()?;
    let rules = rt.rules()?;
    let mut eth = Ethtool::open().ok();
    let kernel = fs
        .read_trim("proc/sys/kernel/osrelease")
        .unwrap_or_default();
    let mut out_links: Vec<Link> = links
        .iter()
        .map(|l| link_of(l, &links, &addrs, fs, eth.as_mut()))
        .collect();
    for i in 0..out_links.len() {
        if let Some(m) = out_links[i].master.clone() {
            let name = out_links[i].name.clone();
            if let Some(master) = out_links.iter_mut().find(|x| x.name == m) {
                master.slaves.push(name);
            }
        }
    }
    let egress = egress_of(&mut rt, &out_links);
    Ok(Snapshot {
        schema_version: SNAPSHOT_SCHEMA,
        hostname: fs.read_trim("proc/sys/kernel/hostname").unwrap_or_default(),
        netns: None,
        big_tcp: big_tcp_support(&kernel),
        kernel,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        mem_total_bytes: Known::from_result(fs.mem_total()),
        links: out_links,
        routes: routes.iter().filter_map(|r| route_of(r, &links)).collect(),
        rules: rules.iter().map(rule_of).collect(),
        egress,
        sysctls: SYSCTLS
            .iter()
            .map(|k| (k.to_string(), Known::from_result(fs.sysctl(k))))
            .collect(),
        sysctl_readonly: SYSCTLS
            .iter()
            .filter(|k| !k.contains("available") && !fs.sysctl_writable(k))
            .map(|k| k.to_string())
            .collect(),
    })
}

fn link_of(
    l: &LinkMessage,
    all: &[LinkMessage],
    addrs: &[AddressMessage],
    fs: &Fs,
    eth: Option<&mut Ethtool>,
) -> Link {
    let kind = if l.header.flags.contains(LinkFlags::Loopback) {
        "loopback"
    } else {
        "physical"
    };
    let mut link = Link::new(l.header.index, "", kind);
    link.up = l.header.flags.contains(LinkFlags::Up);
    read_attributes(&mut link, l, all);
    link.addresses = addresses_of(l, addrs);
    link.driver = match fs.driver(&link.name) {
        Some(d) => Known::Value(d),
        None if link.kind != "physical" => Known::Value(link.kind.clone()),
        None => Known::unknown("no device/driver link in sysfs"),
    };
    if link.kind == "bond" {
        link.bond = crate::fsroot::read_bond(fs, &link.name).ok();
    }
    read_ethtool(&mut link, eth);
    link
}

/// The link's netlink attributes: name, sizes, queues, state, kind, its
/// controller and the device below it.
fn read_attributes(link: &mut Link, l: &LinkMessage, all: &[LinkMessage]) {
    for a in &l.attributes {
        match a {
            LinkAttribute::IfName(n) => link.name = n.clone(),
            LinkAttribute::Mtu(v) => link.mtu = *v,
            LinkAttribute::MaxMtu(v) => link.max_mtu = Some(*v),
            LinkAttribute::GsoMaxSize(v) => link.gso_max_size = Some(*v),
            LinkAttribute::GroMaxSize(v) => link.gro_max_size = Some(*v),
            LinkAttribute::GsoIpv4MaxSize(v) => link.gso_ipv4_max_size = Some(*v),
            LinkAttribute::GroIpv4MaxSize(v) => link.gro_ipv4_max_size = Some(*v),
            LinkAttribute::TsoMaxSize(v) => link.tso_max_size = Some(*v),
            LinkAttribute::NumTxQueues(v) => link.tx_queues = Some(*v),
            LinkAttribute::NumRxQueues(v) => link.rx_queues = Some(*v),
            LinkAttribute::Qdisc(q) => link.qdisc = Some(q.clone()),
            LinkAttribute::OperState(s) => link.state = s.to_string(),
            LinkAttribute::Controller(m) => link.master = link_name(all, *m),
            LinkAttribute::LinkInfo(infos) => {
                for i in infos {
                    match i {
                        LinkInfo::Kind(k) => link.kind = kind_name(k),
                        LinkInfo::Data(InfoData::Vxlan(v)) => link.vxlan = Some(vxlan_of(v, all)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if link.kind != "veth" {
        // For a veth IFLA_LINK names the peer, often in another namespace.
        link.lower = l
            .attributes
            .iter()
            .find_map(|a| {
                if let LinkAttribute::Link(i) = a {
                    Some(*i)
                } else {
                    None
                }
            })
            .filter(|i| *i != l.header.index)
            .and_then(|i| link_name(all, i));
    }
    if let Some(v) = &link.vxlan
        && link.lower.is_none()
    {
        link.lower = v.underlay.clone();
    }
}

/// The link's addresses with their prefix lengths (the local address, or
/// the address when there is none).
fn addresses_of(l: &LinkMessage, addrs: &[AddressMessage]) -> Vec<String> {
    addrs
        .iter()
        .filter(|a| a.header.index == l.header.index)
        .filter_map(|a| {
            let ip = a.attributes.iter().find_map(|x| match x {
                AddressAttribute::Local(ip) => Some(*ip),
                _ => None,
            });
            let ip = ip.or_else(|| {
                a.attributes.iter().find_map(|x| {
                    if let AddressAttribute::Address(ip) = x {
                        Some(*ip)
                    } else {
                        None
                    }
                })
            })?;
            Some(format!("{ip}/{}", a.header.prefix_len))
        })
        .collect()
}

/// What ethtool tells of the link: speed, features, rings, channels,
/// flags and timestamping (only timestamping on loopback); unknown
/// without ethtool.
fn read_ethtool(link: &mut Link, eth: Option<&mut Ethtool>) {
    match eth {
        Some(e) if link.kind != "loopback" => {
            let name = link.name.clone();
            link.speed_mbps = match e.speed(&name) {
                Ok(Some(s)) => Known::Value(s),
                Ok(None) => Known::unknown("the driver reports no speed"),
                Err(err) => Known::unknown(err.to_string()),
            };
            link.features = Known::from_result(e.features(&name));
            if let Some(f) = link.features.get() {
                link.offloads = offloads_of(f);
            }
            link.rings = Known::from_result(e.rings(&name));
            link.channels = Known::from_result(e.channels(&name));
            link.private_flags = Known::from_result(e.private_flags(&name));
            link.timestamping = Known::from_result(e.timestamping(&name));
        }
        Some(e) => {
            // Loopback has no speed, rings or features worth reading, but
            // it stamps in software like any device.
            link.timestamping = Known::from_result(e.timestamping(&link.name));
        }
        None => {
            let why = "the ethtool netlink family is not available";
            link.speed_mbps = Known::unknown(why);
            link.features = Known::unknown(why);
            link.rings = Known::unknown(why);
            link.channels = Known::unknown(why);
            link.private_flags = Known::unknown(why);
            link.timestamping = Known::unknown(why);
        }
    }
}

fn kind_name(k: &InfoKind) -> String {
    match k {
        InfoKind::MacVlan => "macvlan".into(),
        InfoKind::IpVlan => "ipvlan".into(),
        other => other.to_string().to_lowercase(),
    }
}

fn vxlan_of(v: &[InfoVxlan], all: &[LinkMessage]) -> Vxlan {
    let mut x = Vxlan {
        id: None,
        port: None,
        local: None,
        remote: None,
        underlay: None,
    };
    for a in v {
        match a {
            InfoVxlan::Id(i) => x.id = Some(*i),
            InfoVxlan::Port(p) => x.port = Some(*p),
            InfoVxlan::Local(a) => x.local = Some(a.to_string()),
            InfoVxlan::Local6(a) => x.local = Some(a.to_string()),
            InfoVxlan::Group(a) => x.remote = Some(a.to_string()),
            InfoVxlan::Group6(a) => x.remote = Some(a.to_string()),
            InfoVxlan::Link(i) => x.underlay = link_name(all, *i),
            _ => {}
        }
    }
    x
}

/// The offload summary from the feature map.
pub fn offloads_of(f: &BTreeMap<String, crate::ethtool::Feature>) -> Offloads {
    let on = |n: &str| f.get(n).map(|x| x.on);
    let tx_csum = f
        .iter()
        .filter(|(k, _)| k.starts_with("tx-checksum"))
        .map(|(_, v)| v.on)
        .reduce(|a, b| a || b);
    Offloads {
        tso: on("tx-tcp-segmentation"),
        gso: on("tx-generic-segmentation"),
        gro: on("rx-gro"),
        lro: on("rx-lro"),
        rx_checksum: on("rx-checksum"),
        tx_checksum: tx_csum,
    }
}

fn route_of(r: &RouteMessage, links: &[LinkMessage]) -> Option<Route> {
    let table = r
        .attributes
        .iter()
        .find_map(|a| {
            if let RouteAttribute::Table(t) = a {
                Some(*t)
            } else {
                None
            }
        })
        .unwrap_or(r.header.table as u32);
    if table == 255 {
        return None;
    }
    let fam = if r.header.address_family == AddressFamily::Inet6 {
        6
    } else {
        4
    };
    let mut out = Route {
        family: fam,
        table,
        dst: "default".into(),
        dev: None,
        gateway: None,
        src: None,
        metric: None,
        nexthops: Vec::new(),
    };
    for a in &r.attributes {
        match a {
            RouteAttribute::Destination(d) => {
                if let Some(ip) = ip_of(d) {
                    out.dst = format!("{ip}/{}", r.header.destination_prefix_length);
                }
            }
            RouteAttribute::Oif(i) => out.dev = link_name(links, *i),
            RouteAttribute::Gateway(g) => out.gateway = ip_of(g).map(|i| i.to_string()),
            RouteAttribute::PrefSource(s) => out.src = ip_of(s).map(|i| i.to_string()),
            RouteAttribute::Priority(m) => out.metric = Some(*m),
            RouteAttribute::MultiPath(hops) => {
                out.nexthops = hops
                    .iter()
                    .map(|h| NextHop {
                        dev: link_name(links, h.interface_index),
                        gateway: h.attributes.iter().find_map(|a| {
                            if let RouteAttribute::Gateway(g) = a {
                                ip_of(g).map(|i| i.to_string())
                            } else {
                                None
                            }
                        }),
                        weight: h.hops as u32 + 1,
                    })
                    .collect()
            }
            _ => {}
        }
    }
    Some(out)
}

fn rule_of(r: &RuleMessage) -> Rule {
    let fam = if r.header.family == AddressFamily::Inet6 {
        6
    } else {
        4
    };
    let mut out = Rule {
        family: fam,
        priority: 0,
        src: None,
        dst: None,
        iif: None,
        oif: None,
        table: r.header.table as u32,
    };
    for a in &r.attributes {
        match a {
            RuleAttribute::Priority(p) => out.priority = *p,
            RuleAttribute::Source(s) => out.src = Some(format!("{s}/{}", r.header.src_len)),
            RuleAttribute::Destination(d) => out.dst = Some(format!("{d}/{}", r.header.dst_len)),
            RuleAttribute::Iifname(n) => out.iif = Some(n.clone()),
            RuleAttribute::Oifname(n) => out.oif = Some(n.clone()),
            RuleAttribute::Table(t) => out.table = *t,
            _ => {}
        }
    }
    out
}

/// An address in the same subnet as `ip/len` that is not local (counting
/// down from the top of the subnet), to ask the kernel which device
/// traffic from `ip` toward its own subnet takes.
pub fn subnet_neighbour(ip: IpAddr, len: u8, local: &[IpAddr]) -> Option<IpAddr> {
    let (top, bits): (u128, u32) = match ip {
        IpAddr::V4(a) if len <= 30 => (u32::from(a) as u128, 32),
        IpAddr::V6(a) if len <= 126 && (a.segments()[0] & 0xffc0) != 0xfe80 => (u128::from(a), 128),
        _ => return None,
    };
    let host_bits = bits - len as u32;
    let net = top & !((1u128 << host_bits) - 1);
    let last = net + (1u128 << host_bits) - 2;
    (0..16u128)
        .filter_map(|i| last.checked_sub(i))
        .filter(|c| *c > net)
        .find_map(|c| {
            let cand = if bits == 32 {
                IpAddr::V4((c as u32).into())
            } else {
                IpAddr::V6(c.into())
            };
            (!local.contains(&cand)).then_some(cand)
        })
}

fn egress_of(rt: &mut Rtnl, links: &[Link]) -> Vec<Egress> {
    let mut out = Vec::new();
    let local: Vec<IpAddr> = links
        .iter()
        .flat_map(|l| l.addresses.iter())
        .filter_map(|c| parse_cidr(c).map(|x| x.0))
        .collect();
    for l in links.iter().filter(|l| l.kind != "loopback") {
        for cidr in &l.addresses {
            let Some((ip, len)) = parse_cidr(cidr) else {
                continue;
            };
            let Some(dst) = subnet_neighbour(ip, len, &local) else {
                continue;
            };
            let leaves_by = rt
                .route_get(dst, Some(ip))
                .ok()
                .flatten()
                .and_then(|i| links.iter().find(|x| x.index == i).map(|x| x.name.clone()));
            out.push(Egress {
                address: ip.to_string(),
                dev: l.name.clone(),
                leaves_by,
            });
        }
    }
    out
}

pub use wirespeed_types::host::tune::{network, parse_cidr};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_gate_big_tcp() {
        assert_eq!(kernel_version("6.18.0-1-amd64"), Some((6, 18)));
        assert_eq!(
            big_tcp_support("5.19.0"),
            BigTcpSupport {
                ipv6: true,
                ipv4: false
            }
        );
        assert_eq!(
            big_tcp_support("6.3.1"),
            BigTcpSupport {
                ipv6: true,
                ipv4: true
            }
        );
        assert_eq!(
            big_tcp_support("5.15.0"),
            BigTcpSupport {
                ipv6: false,
                ipv4: false
            }
        );
        assert_eq!(
            big_tcp_support("garbage"),
            BigTcpSupport {
                ipv6: false,
                ipv4: false
            }
        );
    }

    #[test]
    fn subnet_neighbours_stay_in_the_subnet_and_differ() {
        let local: Vec<IpAddr> = vec!["10.0.0.254".parse().unwrap()];
        let n = |s: &str, l| subnet_neighbour(s.parse().unwrap(), l, &local).map(|i| i.to_string());
        assert_eq!(n("10.0.0.1", 24).as_deref(), Some("10.0.0.253"));
        assert_eq!(n("10.0.1.7", 24).as_deref(), Some("10.0.1.254"));
        assert_eq!(n("10.0.0.5", 30).as_deref(), Some("10.0.0.6"));
        assert_eq!(n("10.0.0.7", 32), None);
        assert_eq!(
            n("fd00::1", 64).as_deref(),
            Some("fd00::ffff:ffff:ffff:fffe")
        );
        assert_eq!(n("fe80::1", 64), None);
    }

    #[test]
    fn networks_mask_the_host_bits() {
        let net = |s: &str, l| network(s.parse().unwrap(), l).to_string();
        assert_eq!(net("10.1.2.3", 24), "10.1.2.0");
        assert_eq!(net("10.1.2.3", 0), "0.0.0.0");
        assert_eq!(net("10.1.2.3", 32), "10.1.2.3");
        assert_eq!(net("10.1.2.3", 40), "10.1.2.3");
        assert_eq!(net("fd00:1::7", 64), "fd00:1::");
    }
}
