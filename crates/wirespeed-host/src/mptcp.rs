//! The MPTCP in-kernel path manager (generic-netlink family `mptcp_pm`,
//! what `ip mptcp` speaks): set a namespace's limits, add an endpoint,
//! read both back. Written here beside ethtool's family because no
//! crate speaks it; constants are those of the kernel's uapi
//! `mptcp_pm.h`.

use crate::HostError;
use crate::ethtool::{Attr, Family, GenMsg, attrs_of, find, resolve_family, u32_of};
use crate::nl::Nl;
use netlink_packet_generic::GenlMessage;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;

const CMD_ADD_ADDR: u8 = 1;
const CMD_GET_ADDR: u8 = 3;
const CMD_SET_LIMITS: u8 = 5;
const CMD_GET_LIMITS: u8 = 6;

const A_ADDR: u16 = 1;
const A_RCV_ADD_ADDRS: u16 = 2;
const A_SUBFLOWS: u16 = 3;

const ADDR_FAMILY: u16 = 1;
const ADDR_ADDR4: u16 = 3;
const ADDR_ADDR6: u16 = 4;
const ADDR_FLAGS: u16 = 6;
const ADDR_IF_IDX: u16 = 7;

/// The most subflows and accepted announcements the kernel takes
/// (`MPTCP_PM_ADDR_MAX`).
pub const LIMIT_MAX: u32 = 8;

/// The `mptcp_pm` family.
#[derive(Debug, Clone)]
pub(crate) struct PmFamily;

impl Family for PmFamily {
    const NAME: &'static str = "mptcp_pm";
    const VERSION: u8 = 1;
}

/// What an endpoint is used for, as `ip mptcp endpoint add ... FLAG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointKind {
    /// Announced to the peer (ADD_ADDR), which opens subflows to it: the
    /// server side's extra addresses.
    Signal,
    /// Used to open subflows from here: the client side's extra addresses.
    Subflow,
}

impl EndpointKind {
    /// The kernel's flag bit.
    fn bit(self) -> u32 {
        match self {
            EndpointKind::Signal => 1,
            EndpointKind::Subflow => 2,
        }
    }

    /// The keyword `ip mptcp` takes.
    pub fn keyword(self) -> &'static str {
        match self {
            EndpointKind::Signal => "signal",
            EndpointKind::Subflow => "subflow",
        }
    }

    /// Parses `signal` or `subflow`.
    pub fn parse(s: &str) -> Option<EndpointKind> {
        match s {
            "signal" => Some(EndpointKind::Signal),
            "subflow" => Some(EndpointKind::Subflow),
            _ => None,
        }
    }
}

impl fmt::Display for EndpointKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// A namespace's path-manager limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Extra subflows per connection.
    pub subflows: u32,
    /// Addresses announced by the peer that are used.
    pub add_addr_accepted: u32,
}

/// An endpoint as the kernel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its address.
    pub addr: IpAddr,
    /// The flag bits (signal 1, subflow 2, backup 4, fullmesh 8).
    pub flags: u32,
    /// The device index, 0 when none was given.
    pub ifindex: u32,
}

/// Why this kernel cannot build MPTCP paths, or None when it can:
/// `/proc/sys/net/mptcp` (under `proc_sys`, normally `/proc/sys`) exists
/// only where the kernel has MPTCP (CONFIG_MPTCP, Linux 5.6 and later).
pub fn unsupported(proc_sys: &Path) -> Option<String> {
    let dir = proc_sys.join("net/mptcp");
    (!dir.join("enabled").exists()).then(|| {
        format!(
            "this kernel has no MPTCP ({} is missing: it needs CONFIG_MPTCP, Linux 5.6 or later)",
            dir.display()
        )
    })
}

/// One answer's attributes: (kind, value).
type Answer = Vec<(u16, Vec<u8>)>;

/// A path-manager socket in the calling thread's namespace.
pub struct PathManager {
    nl: Nl,
    family: u16,
}

impl PathManager {
    /// Opens the socket and resolves the family; an error naming MPTCP
    /// where the kernel lacks it.
    pub fn open() -> Result<PathManager, HostError> {
        let mut nl = Nl::open(netlink_sys::protocols::NETLINK_GENERIC)?;
        let family = resolve_family(&mut nl, PmFamily::NAME)?;
        Ok(PathManager { nl, family })
    }

    fn call(
        &mut self,
        cmd: u8,
        attrs: Vec<Attr>,
        dump: bool,
        what: &str,
    ) -> Result<Vec<Answer>, HostError> {
        let mut msg = GenlMessage::from_payload(GenMsg::<PmFamily>::new(cmd, attrs));
        msg.set_resolved_family_id(self.family);
        let answers = if dump {
            self.nl.dump(msg, what)?
        } else {
            self.nl.request(msg, 0, what)?
        };
        Ok(answers
            .into_iter()
            .map(|m| {
                m.payload
                    .attrs
                    .into_iter()
                    .map(|a| (a.kind, a.value))
                    .collect()
            })
            .collect())
    }

    /// Sets the limits (`ip mptcp limits set subflow N add_addr_accepted M`).
    pub fn set_limits(&mut self, l: Limits) -> Result<(), HostError> {
        let attrs = vec![
            Attr::u32(A_RCV_ADD_ADDRS, l.add_addr_accepted),
            Attr::u32(A_SUBFLOWS, l.subflows),
        ];
        self.call(CMD_SET_LIMITS, attrs, false, "set the MPTCP limits")?;
        Ok(())
    }

    /// Reads the limits.
    pub fn limits(&mut self) -> Result<Limits, HostError> {
        let got = self.call(CMD_GET_LIMITS, vec![], false, "read the MPTCP limits")?;
        let v = |k| {
            got.iter()
                .flatten()
                .find(|(kind, _)| *kind == k)
                .and_then(|(_, v)| u32_of(v))
                .unwrap_or(0)
        };
        Ok(Limits {
            subflows: v(A_SUBFLOWS),
            add_addr_accepted: v(A_RCV_ADD_ADDRS),
        })
    }

    /// Adds an endpoint on device index `ifindex`.
    pub fn add_endpoint(
        &mut self,
        addr: IpAddr,
        ifindex: u32,
        kind: EndpointKind,
    ) -> Result<(), HostError> {
        let (family, a) = match addr {
            IpAddr::V4(a) => (
                libc::AF_INET as u16,
                Attr::bytes(ADDR_ADDR4, a.octets().to_vec()),
            ),
            IpAddr::V6(a) => (
                libc::AF_INET6 as u16,
                Attr::bytes(ADDR_ADDR6, a.octets().to_vec()),
            ),
        };
        let nest = Attr::nest(
            A_ADDR,
            vec![
                Attr::bytes(ADDR_FAMILY, family.to_ne_bytes().to_vec()),
                a,
                Attr::u32(ADDR_FLAGS, kind.bit()),
                Attr::u32(ADDR_IF_IDX, ifindex),
            ],
        );
        let what = format!("add MPTCP endpoint {addr} {kind}");
        self.call(CMD_ADD_ADDR, vec![nest], false, &what)?;
        Ok(())
    }

    /// Lists the endpoints.
    pub fn endpoints(&mut self) -> Result<Vec<Endpoint>, HostError> {
        let got = self.call(CMD_GET_ADDR, vec![], true, "list the MPTCP endpoints")?;
        let mut out = Vec::new();
        for msg in got {
            for (_, nest) in msg.iter().filter(|(k, _)| *k == A_ADDR) {
                let inner = attrs_of(nest).map_err(|e| HostError::Decode {
                    what: "an MPTCP endpoint".into(),
                    detail: e.to_string(),
                })?;
                if let Some(ep) = endpoint_of(&inner) {
                    out.push(ep);
                }
            }
        }
        Ok(out)
    }
}

/// An endpoint from its nested attributes.
fn endpoint_of(a: &[(u16, &[u8])]) -> Option<Endpoint> {
    let addr = if let Some(v4) = find(a, ADDR_ADDR4) {
        IpAddr::from(<[u8; 4]>::try_from(v4.get(..4)?).ok()?)
    } else {
        IpAddr::from(<[u8; 16]>::try_from(find(a, ADDR_ADDR6)?.get(..16)?).ok()?)
    };
    Some(Endpoint {
        addr,
        flags: find(a, ADDR_FLAGS).and_then(u32_of).unwrap_or(0),
        ifindex: find(a, ADDR_IF_IDX).and_then(u32_of).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_mptcp_is_named() {
        let dir = std::env::temp_dir().join(format!("ws-mptcp-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("net")).unwrap();
        let why = unsupported(&dir).expect("no net/mptcp: unsupported");
        assert!(why.contains("CONFIG_MPTCP"), "{why}");
        std::fs::create_dir_all(dir.join("net/mptcp")).unwrap();
        std::fs::write(dir.join("net/mptcp/enabled"), "1\n").unwrap();
        assert_eq!(unsupported(&dir), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn endpoints_decode_from_their_attributes() {
        let four = [10u8, 1, 2, 3];
        let flags = 1u32.to_ne_bytes();
        let idx = 7u32.to_ne_bytes();
        let a: Vec<(u16, &[u8])> = vec![
            (ADDR_ADDR4, &four),
            (ADDR_FLAGS, &flags),
            (ADDR_IF_IDX, &idx),
        ];
        let ep = endpoint_of(&a).unwrap();
        assert_eq!(ep.addr, "10.1.2.3".parse::<IpAddr>().unwrap());
        assert_eq!((ep.flags, ep.ifindex), (1, 7));
        assert_eq!(EndpointKind::parse("subflow"), Some(EndpointKind::Subflow));
        assert_eq!(EndpointKind::parse("backup"), None);
    }
}
