//! rtnetlink reads and writes: links, addresses, routes, rules, a route
//! lookup, and the link attributes that tuning changes.

use crate::HostError;
use crate::nl::Nl;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

/// A connection to rtnetlink.
pub(crate) struct Rtnl {
    nl: Nl,
}

fn family(ip: &IpAddr) -> AddressFamily {
    if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

fn route_addr(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(a) => RouteAddress::Inet(a),
        IpAddr::V6(a) => RouteAddress::Inet6(a),
    }
}

fn host_len(ip: &IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// A rule "from SRC lookup TABLE" at PRIORITY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleSpec {
    pub src: IpAddr,
    pub src_len: u8,
    pub table: u32,
    pub priority: u32,
}

/// A route "DST/LEN dev IFINDEX [src SRC] table TABLE".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RouteSpec {
    pub dst: IpAddr,
    pub dst_len: u8,
    pub oif: u32,
    pub src: Option<IpAddr>,
    pub table: u32,
}

impl Rtnl {
    /// Opens a NETLINK_ROUTE socket.
    pub(crate) fn open() -> Result<Rtnl, HostError> {
        Ok(Rtnl {
            nl: Nl::open(netlink_sys::protocols::NETLINK_ROUTE)?,
        })
    }

    /// Every link.
    pub(crate) fn links(&mut self) -> Result<Vec<LinkMessage>, HostError> {
        let got = self.nl.dump(
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            "list links",
        )?;
        Ok(got
            .into_iter()
            .filter_map(|m| {
                if let RouteNetlinkMessage::NewLink(l) = m {
                    Some(l)
                } else {
                    None
                }
            })
            .collect())
    }

    /// The name of the link with `index`.
    pub(crate) fn link_name(&mut self, index: u32) -> Result<String, HostError> {
        self.links()?
            .into_iter()
            .filter(|l| l.header.index == index)
            .flat_map(|l| l.attributes)
            .find_map(|a| match a {
                LinkAttribute::IfName(n) => Some(n),
                _ => None,
            })
            .ok_or_else(|| HostError::NoSuchLink(format!("index {index}")))
    }

    /// One link by name.
    pub(crate) fn link(&mut self, name: &str) -> Result<LinkMessage, HostError> {
        let mut ask = LinkMessage::default();
        ask.attributes.push(LinkAttribute::IfName(name.to_string()));
        let got = self.nl.request(
            RouteNetlinkMessage::GetLink(ask),
            0,
            &format!("read link {name}"),
        );
        let got = match got {
            Err(HostError::Netlink { error: source, .. })
                if source.raw_os_error() == Some(libc::ENODEV) =>
            {
                return Err(HostError::NoSuchLink(name.into()));
            }
            other => other?,
        };
        got.into_iter()
            .find_map(|m| {
                if let RouteNetlinkMessage::NewLink(l) = m {
                    Some(l)
                } else {
                    None
                }
            })
            .ok_or_else(|| HostError::NoSuchLink(name.into()))
    }

    /// Every address.
    pub(crate) fn addresses(&mut self) -> Result<Vec<AddressMessage>, HostError> {
        let got = self.nl.dump(
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            "list addresses",
        )?;
        Ok(got
            .into_iter()
            .filter_map(|m| {
                if let RouteNetlinkMessage::NewAddress(a) = m {
                    Some(a)
                } else {
                    None
                }
            })
            .collect())
    }

    /// Every route of both families and all tables.
    pub(crate) fn routes(&mut self) -> Result<Vec<RouteMessage>, HostError> {
        let mut out = Vec::new();
        for fam in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut ask = RouteMessage::default();
            ask.header.address_family = fam;
            let got = self
                .nl
                .dump(RouteNetlinkMessage::GetRoute(ask), "list routes")?;
            out.extend(got.into_iter().filter_map(|m| {
                if let RouteNetlinkMessage::NewRoute(r) = m {
                    Some(r)
                } else {
                    None
                }
            }));
        }
        Ok(out)
    }

    /// Every policy rule of both families.
    pub(crate) fn rules(&mut self) -> Result<Vec<RuleMessage>, HostError> {
        let mut out = Vec::new();
        for fam in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut ask = RuleMessage::default();
            ask.header.family = fam;
            let got = self
                .nl
                .dump(RouteNetlinkMessage::GetRule(ask), "list rules")?;
            out.extend(got.into_iter().filter_map(|m| {
                if let RouteNetlinkMessage::NewRule(r) = m {
                    Some(r)
                } else {
                    None
                }
            }));
        }
        Ok(out)
    }

    /// The output interface the kernel picks for DST (from SRC, if given).
    pub(crate) fn route_get(
        &mut self,
        dst: IpAddr,
        src: Option<IpAddr>,
    ) -> Result<Option<u32>, HostError> {
        let mut ask = RouteMessage::default();
        ask.header.address_family = family(&dst);
        ask.header.destination_prefix_length = host_len(&dst);
        ask.attributes
            .push(RouteAttribute::Destination(route_addr(dst)));
        if let Some(src) = src {
            ask.header.source_prefix_length = host_len(&src);
            ask.attributes.push(RouteAttribute::Source(route_addr(src)));
        }
        let got = self.nl.request(
            RouteNetlinkMessage::GetRoute(ask),
            0,
            &format!("route get {dst}"),
        )?;
        Ok(got.iter().find_map(|m| match m {
            RouteNetlinkMessage::NewRoute(r) => r.attributes.iter().find_map(|a| match a {
                RouteAttribute::Oif(i) => Some(*i),
                _ => None,
            }),
            _ => None,
        }))
    }

    /// Sets link attributes (MTU, GSO/GRO sizes) on one device.
    pub(crate) fn set_link(
        &mut self,
        index: u32,
        attrs: Vec<LinkAttribute>,
        what: &str,
    ) -> Result<(), HostError> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        msg.attributes = attrs;
        self.nl
            .request(RouteNetlinkMessage::SetLink(msg), 0, what)?;
        Ok(())
    }

    /// Sends a request that creates an object (a link, an address, a
    /// route), refusing to replace one that exists.
    pub(crate) fn create(&mut self, msg: RouteNetlinkMessage, what: &str) -> Result<(), HostError> {
        self.nl.request(msg, NLM_F_CREATE | NLM_F_EXCL, what)?;
        Ok(())
    }

    /// Sets a link administratively up (`ip link set dev DEV up`).
    pub(crate) fn set_up(&mut self, index: u32, what: &str) -> Result<(), HostError> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        msg.header.flags = LinkFlags::Up;
        msg.header.change_mask = LinkFlags::Up;
        self.nl
            .request(RouteNetlinkMessage::SetLink(msg), 0, what)?;
        Ok(())
    }

    fn rule_msg(r: &RuleSpec) -> RuleMessage {
        let mut m = RuleMessage::default();
        m.header.family = family(&r.src);
        m.header.src_len = r.src_len;
        m.header.action = RuleAction::ToTable;
        m.header.table = if r.table < 256 { r.table as u8 } else { 252 };
        m.attributes.push(RuleAttribute::Source(r.src));
        m.attributes.push(RuleAttribute::Table(r.table));
        m.attributes.push(RuleAttribute::Priority(r.priority));
        m
    }

    /// Adds a policy rule.
    pub(crate) fn add_rule(&mut self, r: &RuleSpec) -> Result<(), HostError> {
        let what = format!("add rule from {}/{} table {}", r.src, r.src_len, r.table);
        self.nl.request(
            RouteNetlinkMessage::NewRule(Self::rule_msg(r)),
            NLM_F_CREATE | NLM_F_EXCL,
            &what,
        )?;
        Ok(())
    }

    /// Deletes a policy rule.
    pub(crate) fn del_rule(&mut self, r: &RuleSpec) -> Result<(), HostError> {
        let what = format!("delete rule from {}/{} table {}", r.src, r.src_len, r.table);
        self.nl
            .request(RouteNetlinkMessage::DelRule(Self::rule_msg(r)), 0, &what)?;
        Ok(())
    }

    fn route_msg(r: &RouteSpec) -> RouteMessage {
        let mut m = RouteMessage::default();
        m.header.address_family = family(&r.dst);
        m.header.destination_prefix_length = r.dst_len;
        m.header.table = if r.table < 256 { r.table as u8 } else { 252 };
        m.header.protocol = RouteProtocol::Static;
        m.header.scope = RouteScope::Link;
        m.header.kind = RouteType::Unicast;
        m.attributes
            .push(RouteAttribute::Destination(route_addr(r.dst)));
        m.attributes.push(RouteAttribute::Oif(r.oif));
        m.attributes.push(RouteAttribute::Table(r.table));
        if let Some(src) = r.src {
            m.attributes
                .push(RouteAttribute::PrefSource(route_addr(src)));
        }
        m
    }

    /// Adds a route.
    pub(crate) fn add_route(&mut self, r: &RouteSpec) -> Result<(), HostError> {
        let what = format!("add route {}/{} table {}", r.dst, r.dst_len, r.table);
        self.nl.request(
            RouteNetlinkMessage::NewRoute(Self::route_msg(r)),
            NLM_F_CREATE | NLM_F_EXCL,
            &what,
        )?;
        Ok(())
    }

    /// Deletes a route.
    pub(crate) fn del_route(&mut self, r: &RouteSpec) -> Result<(), HostError> {
        let what = format!("delete route {}/{} table {}", r.dst, r.dst_len, r.table);
        self.nl
            .request(RouteNetlinkMessage::DelRoute(Self::route_msg(r)), 0, &what)?;
        Ok(())
    }
}
