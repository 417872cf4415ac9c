//! The ethtool generic-netlink family, written here because no crate sets
//! features, rings or private flags: features, rings, channels, private
//! flags and link speed, read and written for one device at a time.
//! Constants are those of the kernel's uapi `ethtool_netlink.h`.

use crate::HostError;
use crate::nl::Nl;
use netlink_packet_core::{
    DecodeError, Emitable, Nla, NlaBuffer, NlasIterator, ParseableParametrized,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};
use std::collections::BTreeMap;
use std::io;

const MSG_LINKMODES_GET: u8 = 4;
const MSG_FEATURES_GET: u8 = 11;
const MSG_FEATURES_SET: u8 = 12;
const MSG_PRIVFLAGS_GET: u8 = 13;
const MSG_PRIVFLAGS_SET: u8 = 14;
const MSG_RINGS_GET: u8 = 15;
const MSG_RINGS_SET: u8 = 16;
const MSG_CHANNELS_GET: u8 = 17;
const MSG_TSINFO_GET: u8 = 25;

const A_HEADER: u16 = 1;
const A_HEADER_DEV_NAME: u16 = 2;
const A_LINKMODES_SPEED: u16 = 5;
const A_FEATURES_HW: u16 = 2;
const A_FEATURES_WANTED: u16 = 3;
const A_FEATURES_ACTIVE: u16 = 4;
const A_FEATURES_NOCHANGE: u16 = 5;
const A_PRIVFLAGS_FLAGS: u16 = 2;
const A_BITSET_NOMASK: u16 = 1;
const A_BITSET_BITS: u16 = 3;
const A_BITSET_BITS_BIT: u16 = 1;
const A_BIT_INDEX: u16 = 1;
const A_BIT_NAME: u16 = 2;
const A_BIT_VALUE: u16 = 3;
const A_RINGS_RX_MAX: u16 = 2;
const A_RINGS_TX_MAX: u16 = 5;
const A_RINGS_RX: u16 = 6;
const A_RINGS_TX: u16 = 9;
const A_CHANNELS_RX_MAX: u16 = 2;
const A_CHANNELS_TX_MAX: u16 = 3;
const A_CHANNELS_COMBINED_MAX: u16 = 5;
const A_CHANNELS_RX: u16 = 6;
const A_CHANNELS_TX: u16 = 7;
const A_CHANNELS_COMBINED: u16 = 9;
const A_TSINFO_TIMESTAMPING: u16 = 2;
const A_TSINFO_TX_TYPES: u16 = 3;
const A_TSINFO_RX_FILTERS: u16 = 4;
const A_TSINFO_PHC_INDEX: u16 = 5;

/// One netlink attribute, possibly nested.
#[derive(Debug, Clone)]
pub(crate) struct Attr {
    pub(crate) kind: u16,
    nested: bool,
    pub(crate) value: Vec<u8>,
}

impl Attr {
    /// An attribute holding `value` as it is (addresses in network order).
    pub(crate) fn bytes(kind: u16, value: Vec<u8>) -> Attr {
        Attr {
            kind,
            nested: false,
            value,
        }
    }
    pub(crate) fn u32(kind: u16, v: u32) -> Attr {
        Attr {
            kind,
            nested: false,
            value: v.to_ne_bytes().to_vec(),
        }
    }
    pub(crate) fn string(kind: u16, s: &str) -> Attr {
        let mut value = s.as_bytes().to_vec();
        value.push(0);
        Attr {
            kind,
            nested: false,
            value,
        }
    }
    pub(crate) fn flag(kind: u16) -> Attr {
        Attr {
            kind,
            nested: false,
            value: Vec::new(),
        }
    }
    pub(crate) fn nest(kind: u16, children: Vec<Attr>) -> Attr {
        let slice = children.as_slice();
        let mut value = vec![0u8; slice.buffer_len()];
        slice.emit(&mut value);
        Attr {
            kind,
            nested: true,
            value,
        }
    }
}

impl Nla for Attr {
    fn value_len(&self) -> usize {
        self.value.len()
    }
    fn kind(&self) -> u16 {
        self.kind
    }
    fn emit_value(&self, buffer: &mut [u8]) {
        buffer[..self.value.len()].copy_from_slice(&self.value);
    }
    fn is_nested(&self) -> bool {
        self.nested
    }
}

/// A generic-netlink family this crate speaks: its name and version.
pub(crate) trait Family: std::fmt::Debug + Clone {
    /// The family's registered name.
    const NAME: &'static str;
    /// The version its messages carry.
    const VERSION: u8;
}

/// The ethtool family.
#[derive(Debug, Clone)]
pub(crate) struct EthtoolFamily;

impl Family for EthtoolFamily {
    const NAME: &'static str = "ethtool";
    const VERSION: u8 = 1;
}

/// A message of family `F`: a command and its attributes.
#[derive(Debug, Clone)]
pub(crate) struct GenMsg<F: Family> {
    pub(crate) cmd: u8,
    pub(crate) attrs: Vec<Attr>,
    family: std::marker::PhantomData<F>,
}

impl<F: Family> GenMsg<F> {
    /// A message for command `cmd` with `attrs`.
    pub(crate) fn new(cmd: u8, attrs: Vec<Attr>) -> Self {
        GenMsg {
            cmd,
            attrs,
            family: std::marker::PhantomData,
        }
    }
}

impl<F: Family> GenlFamily for GenMsg<F> {
    fn family_name() -> &'static str {
        F::NAME
    }
    fn command(&self) -> u8 {
        self.cmd
    }
    fn version(&self) -> u8 {
        F::VERSION
    }
}

impl<F: Family> Emitable for GenMsg<F> {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

impl<F: Family> ParseableParametrized<[u8], GenlHeader> for GenMsg<F> {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        let attrs = attrs_of(buf)?
            .into_iter()
            .map(|(kind, value)| Attr {
                kind,
                nested: false,
                value: value.to_vec(),
            })
            .collect();
        Ok(GenMsg::new(header.cmd, attrs))
    }
}

/// Splits a buffer into (kind without flags, value) pairs.
pub(crate) fn attrs_of(buf: &[u8]) -> Result<Vec<(u16, &[u8])>, DecodeError> {
    let mut out = Vec::new();
    for nla in NlasIterator::new(buf) {
        let nla: NlaBuffer<&[u8]> = nla?;
        let (kind, len) = (nla.kind(), nla.length() as usize);
        let inner: &[u8] = nla.into_inner();
        out.push((kind, inner.get(4..len).unwrap_or(&[])));
    }
    Ok(out)
}

pub(crate) fn find<'a>(attrs: &'a [(u16, &'a [u8])], kind: u16) -> Option<&'a [u8]> {
    attrs.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
}

pub(crate) fn u32_of(v: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
}

pub use wirespeed_types::breakdown::DeviceClock;
pub use wirespeed_types::host::snapshot::{Channels, Feature, Rings, Timestamping};

/// The timestamping of the device the kernel routes `dst` by (in this
/// network namespace), as `ethtool -T DEV` shows it: what a breakdown
/// toward `dst` could use.
pub fn device_clock(dst: std::net::IpAddr) -> Result<DeviceClock, HostError> {
    let mut rt = crate::rtnl::Rtnl::open()?;
    let index = rt.route_get(dst, None)?.ok_or_else(|| HostError::Decode {
        what: format!("route get {dst}"),
        detail: "no output device".into(),
    })?;
    let device = rt.link_name(index)?;
    let t = Ethtool::open()?.timestamping(&device)?;
    Ok(DeviceClock {
        device,
        available: t.best().into(),
        phc_index: t.phc_index,
        capabilities: t.capabilities,
    })
}

/// Adds to a breakdown the timestamping of the client's device toward the
/// server (`server` is the result's "address:port"), and says which clock
/// the breakdown used beside which the device offers. A device that
/// cannot be read is a note, not an error.
pub fn add_device_clock(b: &mut wirespeed_types::breakdown::Breakdown, server: &str) {
    let host = server
        .rsplit_once(':')
        .map_or(server, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let Ok(dst) = host.parse::<std::net::IpAddr>() else {
        return;
    };
    match device_clock(dst) {
        Ok(d) => {
            b.notes.push(match d.available.as_str() {
                "hardware" => format!(
                    "{} can timestamp in hardware (PHC {}); this breakdown uses the kernel's software timestamps on both sides",
                    d.device,
                    d.phc_index.map_or("none".into(), |i| i.to_string())
                ),
                "software" => format!(
                    "{} has software timestamps only (no hardware clock): the breakdown's clock is software",
                    d.device
                ),
                _ => format!("{} reports no timestamping capabilities", d.device),
            });
            b.device = Some(d);
        }
        Err(e) => b
            .notes
            .push(format!("the device's timestamping could not be read: {e}")),
    }
}

/// A connection to the ethtool family.
/// The id of the generic-netlink family `name` (ethtool, mptcp_pm), asked
/// of the kernel's controller; an error when the kernel lacks it.
pub(crate) fn resolve_family(nl: &mut Nl, name: &str) -> Result<u16, HostError> {
    let what = format!("resolve the {name} netlink family");
    let ask = GenlMessage::from_payload(GenlCtrl {
        cmd: GenlCtrlCmd::GetFamily,
        nlas: vec![GenlCtrlAttrs::FamilyName(name.into())],
    });
    let answers = nl.request(ask, 0, &what)?;
    answers
        .iter()
        .flat_map(|m| m.payload.nlas.iter())
        .find_map(|a| match a {
            GenlCtrlAttrs::FamilyId(id) => Some(*id),
            _ => None,
        })
        .ok_or_else(|| HostError::netlink(what.as_str(), io::Error::other("no family id")))
}

pub(crate) struct Ethtool {
    nl: Nl,
    family: u16,
}

/// Reads a verbose bitset into name -> on. `nomask` bitsets list only the
/// bits that are set; others carry a VALUE flag on the set bits.
fn bitset(buf: &[u8]) -> Result<BTreeMap<String, bool>, DecodeError> {
    let top = attrs_of(buf)?;
    let nomask = find(&top, A_BITSET_NOMASK).is_some();
    let mut out = BTreeMap::new();
    if let Some(bits) = find(&top, A_BITSET_BITS) {
        for (kind, bit) in attrs_of(bits)? {
            if kind != A_BITSET_BITS_BIT {
                continue;
            }
            let b = attrs_of(bit)?;
            let name = match find(&b, A_BIT_NAME) {
                Some(n) => String::from_utf8_lossy(n)
                    .trim_end_matches('\0')
                    .to_string(),
                None => format!("bit{}", find(&b, A_BIT_INDEX).and_then(u32_of).unwrap_or(0)),
            };
            out.insert(name, nomask || find(&b, A_BIT_VALUE).is_some());
        }
    }
    Ok(out)
}

/// A verbose bitset that changes only the named bits.
fn bitset_change(bits: &[(&str, bool)]) -> Vec<Attr> {
    let list = bits
        .iter()
        .map(|(name, on)| {
            let mut b = vec![Attr::string(A_BIT_NAME, name)];
            if *on {
                b.push(Attr::flag(A_BIT_VALUE));
            }
            Attr::nest(A_BITSET_BITS_BIT, b)
        })
        .collect();
    vec![Attr::nest(A_BITSET_BITS, list)]
}

impl Ethtool {
    /// Opens a generic-netlink socket and resolves the ethtool family.
    pub(crate) fn open() -> Result<Ethtool, HostError> {
        let mut nl = Nl::open(netlink_sys::protocols::NETLINK_GENERIC)?;
        let family = resolve_family(&mut nl, "ethtool")?;
        Ok(Ethtool { nl, family })
    }

    fn call(
        &mut self,
        cmd: u8,
        dev: &str,
        mut attrs: Vec<Attr>,
        what: &str,
    ) -> Result<Vec<(u16, Vec<u8>)>, HostError> {
        attrs.insert(
            0,
            Attr::nest(A_HEADER, vec![Attr::string(A_HEADER_DEV_NAME, dev)]),
        );
        let mut msg = GenlMessage::from_payload(GenMsg::<EthtoolFamily>::new(cmd, attrs));
        msg.set_resolved_family_id(self.family);
        let what = format!("ethtool {what} of {dev}");
        let answers = self.nl.request(msg, 0, &what)?;
        Ok(answers
            .into_iter()
            .flat_map(|m| m.payload.attrs.into_iter().map(|a| (a.kind, a.value)))
            .collect())
    }

    fn decode<T>(what: &str, dev: &str, r: Result<T, DecodeError>) -> Result<T, HostError> {
        r.map_err(|e| HostError::Decode {
            what: format!("ethtool {what} of {dev}"),
            detail: e.to_string(),
        })
    }

    /// Features by kernel name (tx-tcp-segmentation, rx-gro...).
    pub(crate) fn features(&mut self, dev: &str) -> Result<BTreeMap<String, Feature>, HostError> {
        let got = self.call(MSG_FEATURES_GET, dev, vec![], "features")?;
        let get = |k: u16| -> Result<BTreeMap<String, bool>, HostError> {
            match got.iter().find(|(kind, _)| *kind == k) {
                Some((_, v)) => Self::decode("features", dev, bitset(v)),
                None => Ok(BTreeMap::new()),
            }
        };
        let (hw, active, nochange) = (
            get(A_FEATURES_HW)?,
            get(A_FEATURES_ACTIVE)?,
            get(A_FEATURES_NOCHANGE)?,
        );
        // ACTIVE and HW come without a mask: they list only the bits set.
        let names: std::collections::BTreeSet<&String> = hw
            .keys()
            .chain(active.keys())
            .chain(nochange.keys())
            .collect();
        Ok(names
            .into_iter()
            .map(|name| {
                let on = active.get(name).copied().unwrap_or(false);
                let fixed = nochange.get(name).copied().unwrap_or(false)
                    || !hw.get(name).copied().unwrap_or(false);
                (name.clone(), Feature { on, fixed })
            })
            .collect())
    }

    /// Sets features by kernel name; the kernel answers with what it could not set.
    pub(crate) fn set_features(
        &mut self,
        dev: &str,
        bits: &[(&str, bool)],
    ) -> Result<(), HostError> {
        let wanted = Attr::nest(A_FEATURES_WANTED, bitset_change(bits));
        self.call(MSG_FEATURES_SET, dev, vec![wanted], "set features")?;
        Ok(())
    }

    /// Private flags by name (empty when the driver has none).
    pub(crate) fn private_flags(&mut self, dev: &str) -> Result<BTreeMap<String, bool>, HostError> {
        let got = self.call(MSG_PRIVFLAGS_GET, dev, vec![], "private flags")?;
        match got.iter().find(|(k, _)| *k == A_PRIVFLAGS_FLAGS) {
            Some((_, v)) => Self::decode("private flags", dev, bitset(v)),
            None => Ok(BTreeMap::new()),
        }
    }

    /// Sets one private flag.
    pub(crate) fn set_private_flag(
        &mut self,
        dev: &str,
        flag: &str,
        on: bool,
    ) -> Result<(), HostError> {
        let flags = Attr::nest(A_PRIVFLAGS_FLAGS, bitset_change(&[(flag, on)]));
        self.call(MSG_PRIVFLAGS_SET, dev, vec![flags], "set private flags")?;
        Ok(())
    }

    /// Ring sizes.
    pub(crate) fn rings(&mut self, dev: &str) -> Result<Rings, HostError> {
        let got = self.call(MSG_RINGS_GET, dev, vec![], "rings")?;
        let v = |k| {
            got.iter()
                .find(|(kind, _)| *kind == k)
                .and_then(|(_, v)| u32_of(v))
                .unwrap_or(0)
        };
        Ok(Rings {
            rx: v(A_RINGS_RX),
            rx_max: v(A_RINGS_RX_MAX),
            tx: v(A_RINGS_TX),
            tx_max: v(A_RINGS_TX_MAX),
        })
    }

    /// Sets the RX and/or TX ring size.
    pub(crate) fn set_rings(
        &mut self,
        dev: &str,
        rx: Option<u32>,
        tx: Option<u32>,
    ) -> Result<(), HostError> {
        let mut attrs = Vec::new();
        if let Some(rx) = rx {
            attrs.push(Attr::u32(A_RINGS_RX, rx));
        }
        if let Some(tx) = tx {
            attrs.push(Attr::u32(A_RINGS_TX, tx));
        }
        self.call(MSG_RINGS_SET, dev, attrs, "set rings")?;
        Ok(())
    }

    /// Channel counts.
    pub(crate) fn channels(&mut self, dev: &str) -> Result<Channels, HostError> {
        let got = self.call(MSG_CHANNELS_GET, dev, vec![], "channels")?;
        let v = |k| {
            got.iter()
                .find(|(kind, _)| *kind == k)
                .and_then(|(_, v)| u32_of(v))
                .unwrap_or(0)
        };
        Ok(Channels {
            rx: v(A_CHANNELS_RX),
            tx: v(A_CHANNELS_TX),
            combined: v(A_CHANNELS_COMBINED),
            rx_max: v(A_CHANNELS_RX_MAX),
            tx_max: v(A_CHANNELS_TX_MAX),
            combined_max: v(A_CHANNELS_COMBINED_MAX),
        })
    }

    /// Timestamping capabilities, as `ethtool -T` reads them: the bits
    /// set in each bitset (a bitset the kernel leaves out is empty).
    pub(crate) fn timestamping(&mut self, dev: &str) -> Result<Timestamping, HostError> {
        let got = self.call(MSG_TSINFO_GET, dev, vec![], "timestamping")?;
        let set = |k: u16| -> Result<Vec<String>, HostError> {
            match got.iter().find(|(kind, _)| *kind == k) {
                Some((_, v)) => Ok(Self::decode("timestamping", dev, bitset(v))?
                    .into_iter()
                    .filter_map(|(name, on)| on.then_some(name))
                    .collect()),
                None => Ok(Vec::new()),
            }
        };
        Ok(Timestamping {
            capabilities: set(A_TSINFO_TIMESTAMPING)?,
            tx_types: set(A_TSINFO_TX_TYPES)?,
            rx_filters: set(A_TSINFO_RX_FILTERS)?,
            phc_index: got
                .iter()
                .find(|(k, _)| *k == A_TSINFO_PHC_INDEX)
                .and_then(|(_, v)| u32_of(v)),
        })
    }

    /// Link speed in Mbit/s; None when the driver does not know it.
    pub(crate) fn speed(&mut self, dev: &str) -> Result<Option<u32>, HostError> {
        let got = self.call(MSG_LINKMODES_GET, dev, vec![], "link modes")?;
        Ok(got
            .iter()
            .find(|(k, _)| *k == A_LINKMODES_SPEED)
            .and_then(|(_, v)| u32_of(v))
            .filter(|s| *s != 0 && *s != u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::NLA_F_NESTED;

    #[test]
    fn nested_attributes_carry_the_nested_flag_and_parse_back() {
        let a = Attr::nest(3, vec![Attr::u32(1, 7), Attr::string(2, "rx-gro")]);
        let mut buf = vec![0u8; [a.clone()].as_slice().buffer_len()];
        [a].as_slice().emit(&mut buf);
        let kind_raw = u16::from_ne_bytes([buf[2], buf[3]]);
        assert_eq!(kind_raw, 3 | NLA_F_NESTED);
        let top = attrs_of(&buf).unwrap();
        let inner = attrs_of(top[0].1).unwrap();
        assert_eq!(u32_of(inner[0].1), Some(7));
        assert_eq!(inner[1].1, b"rx-gro\0");
    }

    #[test]
    fn bitsets_read_masked_and_unmasked_forms() {
        let bits = |list: Vec<(&str, bool)>| {
            Attr::nest(
                A_BITSET_BITS,
                list.into_iter()
                    .map(|(n, v)| {
                        let mut b = vec![Attr::string(A_BIT_NAME, n)];
                        if v {
                            b.push(Attr::flag(A_BIT_VALUE));
                        }
                        Attr::nest(A_BITSET_BITS_BIT, b)
                    })
                    .collect(),
            )
        };
        let emit = |attrs: Vec<Attr>| {
            let mut buf = vec![0u8; attrs.as_slice().buffer_len()];
            attrs.as_slice().emit(&mut buf);
            buf
        };
        let masked = emit(vec![bits(vec![("rx-gro", true), ("rx-lro", false)])]);
        let m = bitset(&masked).unwrap();
        assert_eq!(m.get("rx-gro"), Some(&true));
        assert_eq!(m.get("rx-lro"), Some(&false));
        let nomask = emit(vec![
            Attr::flag(A_BITSET_NOMASK),
            bits(vec![("tx-generic-segmentation", false)]),
        ]);
        assert_eq!(
            bitset(&nomask).unwrap().get("tx-generic-segmentation"),
            Some(&true)
        );
    }

    #[test]
    fn garbage_bitsets_are_errors_not_panics() {
        assert!(bitset(&[5, 0, 3, 0, 1]).is_err() || bitset(&[5, 0, 3, 0, 1]).unwrap().is_empty());
        assert!(u32_of(&[1, 2]).is_none());
    }
}
