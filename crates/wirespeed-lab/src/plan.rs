//! Addressing: which device and which addresses every host gets on every
//! link and overlay. Pure: computed from the spec before anything is built,
//! so tests and `lab up` print the same plan.

use crate::spec::{LabSpec, parse_v4_prefix};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One end of a link or overlay on one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nic {
    /// Device name inside the host's namespace.
    pub dev: String,
    /// IPv4 address.
    pub addr4: Ipv4Addr,
    /// IPv4 prefix length.
    pub len4: u8,
    /// IPv6 address (fd00:O1:O2:O3::O4 of the IPv4 one).
    pub addr6: Ipv6Addr,
    /// The IPv4 subnet.
    pub subnet4: Ipv4Addr,
}

impl Nic {
    /// The network address of the IPv6 /64 this NIC's address sits in.
    pub fn net6(&self) -> Ipv6Addr {
        let s = self.addr6.segments();
        Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0)
    }

    /// The IPv6 /64 this NIC's address sits in, as text.
    pub fn subnet6(&self) -> String {
        let s = self.addr6.segments();
        format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
    }
}

/// Both ends of one link (`a` end first) or overlay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// Host at the `a` end.
    pub host_a: String,
    /// Its NIC.
    pub a: Nic,
    /// Host at the `b` end.
    pub host_b: String,
    /// Its NIC.
    pub b: Nic,
}

impl Pair {
    /// The NIC of `host` on this pair, if it is an end.
    pub fn end(&self, host: &str) -> Option<&Nic> {
        if self.host_a == host {
            Some(&self.a)
        } else if self.host_b == host {
            Some(&self.b)
        } else {
            None
        }
    }

    /// The NIC at the other end from `host`.
    pub fn peer_of(&self, host: &str) -> Option<&Nic> {
        if self.host_a == host {
            Some(&self.b)
        } else if self.host_b == host {
            Some(&self.a)
        } else {
            None
        }
    }
}

/// Why a lab cannot be addressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// A subnet has no host number left for another end.
    #[error("subnet {net}/{len} has no room for another address")]
    SubnetFull {
        /// The subnet's network address.
        net: Ipv4Addr,
        /// Its prefix length.
        len: u8,
    },
    /// A link's or overlay's `subnet` is not an IPv4 prefix.
    #[error("bad subnet {0:?}")]
    BadSubnet(String),
    /// An overlay names a link the lab does not have.
    #[error("vxlan {vxlan}: link {link} does not exist")]
    NoLink {
        /// The overlay's index.
        vxlan: usize,
        /// The link it names.
        link: usize,
    },
}

/// The whole lab's addressing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Addressing {
    /// Per link, in spec order.
    pub links: Vec<Pair>,
    /// Per overlay, in spec order.
    pub vxlans: Vec<Pair>,
}

/// The IPv6 twin of an IPv4 address: 10.61.0.3 -> fd00:10:61:0::3.
pub fn v6_of(a: Ipv4Addr) -> Ipv6Addr {
    let o = a.octets();
    let g = |x: u8| u16::from_str_radix(&x.to_string(), 16).unwrap_or(0);
    Ipv6Addr::new(0xfd00, g(o[0]), g(o[1]), g(o[2]), 0, 0, 0, g(o[3]))
}

/// Hands out host numbers inside each subnet in order.
#[derive(Default)]
struct Numbering {
    next: HashMap<(Ipv4Addr, u8), u32>,
}

impl Numbering {
    fn take(&mut self, net: Ipv4Addr, len: u8) -> Result<Ipv4Addr, AddressError> {
        let n = self.next.entry((net, len)).or_insert(1);
        let size = 1u64 << (32 - len as u32);
        if u64::from(*n) >= size - 1 {
            return Err(AddressError::SubnetFull { net, len });
        }
        let a = Ipv4Addr::from(u32::from(net) + *n);
        *n += 1;
        Ok(a)
    }
}

/// Computes devices and addresses for every link and overlay.
pub fn address(spec: &LabSpec) -> Result<Addressing, AddressError> {
    let base = spec.base();
    let mut num = Numbering::default();
    let mut devs: HashMap<&str, usize> = HashMap::new();
    let mut links = Vec::new();
    for (i, l) in spec.links.iter().enumerate() {
        let (net, len) = match &l.subnet {
            Some(s) => parse_v4_prefix(s).ok_or_else(|| AddressError::BadSubnet(s.clone()))?,
            None => (Ipv4Addr::new(10, base, i as u8, 0), 24),
        };
        let mut end = |host: &str| -> Result<Nic, AddressError> {
            let k = devs.entry(spec_host(spec, host)).or_insert(0);
            let dev = format!("eth{k}");
            *k += 1;
            let addr4 = num.take(net, len)?;
            Ok(Nic {
                dev,
                addr4,
                len4: len,
                addr6: v6_of(addr4),
                subnet4: net,
            })
        };
        let a = end(&l.a)?;
        let b = end(&l.b)?;
        links.push(Pair {
            host_a: l.a.clone(),
            a,
            host_b: l.b.clone(),
            b,
        });
    }
    let mut vxlans = Vec::new();
    for (j, v) in spec.vxlans.iter().enumerate() {
        let under = links.get(v.link).ok_or(AddressError::NoLink {
            vxlan: j,
            link: v.link,
        })?;
        let (net, len) = match &v.subnet {
            Some(s) => parse_v4_prefix(s).ok_or_else(|| AddressError::BadSubnet(s.clone()))?,
            None => (Ipv4Addr::new(10, base, 200u8.wrapping_add(j as u8), 0), 24),
        };
        let dev = v.name.clone().unwrap_or_else(|| format!("vx{j}"));
        let mut end = || -> Result<Nic, AddressError> {
            let addr4 = num.take(net, len)?;
            Ok(Nic {
                dev: dev.clone(),
                addr4,
                len4: len,
                addr6: v6_of(addr4),
                subnet4: net,
            })
        };
        let a = end()?;
        let b = end()?;
        vxlans.push(Pair {
            host_a: under.host_a.clone(),
            a,
            host_b: under.host_b.clone(),
            b,
        });
    }
    Ok(Addressing { links, vxlans })
}

fn spec_host<'a>(spec: &'a LabSpec, name: &str) -> &'a str {
    spec.hosts
        .iter()
        .find(|h| h.name == name)
        .map(|h| h.name.as_str())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::LinkSpec;

    #[test]
    fn links_get_their_own_subnets_unless_shared() {
        let mut s = LabSpec::two_hosts("x", 2, None);
        s.subnet_base = Some(61);
        let a = address(&s).unwrap();
        assert_eq!(a.links[0].a.addr4, Ipv4Addr::new(10, 61, 0, 1));
        assert_eq!(a.links[1].b.addr4, Ipv4Addr::new(10, 61, 1, 2));
        assert_eq!(a.links[1].a.dev, "eth1");
        assert_eq!(
            a.links[0].a.addr6.to_string(),
            "fd00:10:61:0:0:0:0:1"
                .parse::<Ipv6Addr>()
                .unwrap()
                .to_string()
        );
        for l in &mut s.links {
            l.subnet = Some("10.9.0.0/24".into());
        }
        let a = address(&s).unwrap();
        let got: Vec<_> = a
            .links
            .iter()
            .flat_map(|p| [p.a.addr4, p.b.addr4])
            .collect();
        assert_eq!(
            got,
            ["10.9.0.1", "10.9.0.2", "10.9.0.3", "10.9.0.4"]
                .map(|x| x.parse::<Ipv4Addr>().unwrap())
        );
        assert_eq!(a.links[1].a.subnet6(), "fd00:10:9:0::/64");
    }

    #[test]
    fn a_full_subnet_is_an_error() {
        let mut s = LabSpec::two_hosts("x", 2, None);
        s.links = vec![
            LinkSpec {
                a: "a".into(),
                b: "b".into(),
                subnet: Some("10.1.1.0/30".into()),
                ..LinkSpec::default()
            };
            2
        ];
        let e = address(&s).unwrap_err();
        assert_eq!(
            e,
            AddressError::SubnetFull {
                net: Ipv4Addr::new(10, 1, 1, 0),
                len: 30
            }
        );
        assert!(e.to_string().contains("no room"), "{e}");
    }
}
