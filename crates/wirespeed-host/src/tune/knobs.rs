//! Every kind of [`Setting`], defined once: how it is labelled, rendered
//! as the command a person would type, read, written, checked against a
//! snapshot, ordered, and which values the kernel changes with it. A
//! setting names its kind through [`Setting::knob`], the one place that
//! matches on the variants; the journal's JSON stays the enum's.

use super::{
    Host, LinkSize, Setting, dotted, netns_sysctl_refusal, norm, onoff, valid_sysctl_name,
};
use crate::HostError;
use crate::fsroot::{Fs, sysctl_path};
use crate::rtnl::{RouteSpec, RuleSpec};
use crate::snapshot::{Link, Snapshot};
use netlink_packet_route::link::LinkAttribute;
use std::net::IpAddr;
use wirespeed_types::host::tune::subnet_of;

/// What a check sees: the snapshot, the file system, and whether this is
/// the initial network namespace.
pub(crate) struct Cx<'a> {
    pub snap: &'a Snapshot,
    pub fs: &'a Fs,
    pub in_init_netns: bool,
}

impl Cx<'_> {
    fn link(&self, dev: &str) -> Result<&Link, HostError> {
        self.snap
            .link(dev)
            .ok_or_else(|| HostError::NoSuchLink(dev.into()))
    }
}

/// One kind of setting. `check` returns Ok(Some(reason)) when the action
/// cannot apply here (skipped), an error when the value is refused.
pub(crate) trait Knob {
    /// The setting this knob reads and writes.
    fn setting(&self) -> Setting;
    /// Its label ("mtu of eth1"), for messages.
    fn label(&self) -> String {
        self.setting().label()
    }
    /// Its current value, in the form `write` takes.
    fn read(&self, h: &mut Host) -> Result<String, HostError>;
    /// Writes `value` (no verification; [`Host::set`] reads it back).
    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError>;
    /// The safety rules for `value` against a snapshot.
    fn check(&self, value: &str, cx: &Cx) -> Result<Option<String>, HostError>;
    /// Settings the kernel may change when this one is set.
    fn side_effects(&self, _h: &mut Host) -> Vec<Setting> {
        Vec::new()
    }
    /// After its device has gone: removes what it leaves behind.
    fn clear_orphans(&self, _h: &mut Host, _old: &str) {}
}

/// The kind of setting `s` is, borrowing its fields.
pub(crate) fn knob(s: &Setting) -> Box<dyn Knob + '_> {
    match s {
        Setting::Sysctl { key } => Box::new(Sysctl { key }),
        Setting::Mtu { dev } => Box::new(Size(dev, LinkSize::Mtu)),
        Setting::GsoMaxSize { dev } => Box::new(Size(dev, LinkSize::GsoMaxSize)),
        Setting::GroMaxSize { dev } => Box::new(Size(dev, LinkSize::GroMaxSize)),
        Setting::GsoIpv4MaxSize { dev } => Box::new(Size(dev, LinkSize::GsoIpv4MaxSize)),
        Setting::GroIpv4MaxSize { dev } => Box::new(Size(dev, LinkSize::GroIpv4MaxSize)),
        Setting::GsoMaxSegs { dev } => Box::new(Size(dev, LinkSize::GsoMaxSegs)),
        Setting::Feature { dev, name } => Box::new(Feature { dev, name }),
        Setting::PrivateFlag { dev, flag } => Box::new(PrivateFlag { dev, flag }),
        Setting::RxRing { dev } => Box::new(RxRing { dev }),
        Setting::BondHashPolicy { dev } => Box::new(BondHashPolicy { dev }),
        Setting::SourceRoute {
            dev,
            addr,
            table,
            priority,
        } => Box::new(SourceRoute {
            dev,
            addr,
            table: *table,
            priority: *priority,
        }),
    }
}

fn num<T: std::str::FromStr>(label: &str, value: &str) -> Result<T, HostError> {
    value
        .parse::<T>()
        .map_err(|_| HostError::Refused(format!("{label} wants a number, not {value:?}")))
}

fn on(label: &str, value: &str) -> Result<bool, HostError> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(HostError::Refused(format!(
            "{label} wants on or off, not {value:?}"
        ))),
    }
}

fn link_name(l: &netlink_packet_route::link::LinkMessage) -> Option<String> {
    l.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.clone()),
        _ => None,
    })
}

/// A sysctl by dotted name, written under /proc/sys.
struct Sysctl<'a> {
    key: &'a str,
}

impl Knob for Sysctl<'_> {
    fn setting(&self) -> Setting {
        Setting::Sysctl {
            key: self.key.to_string(),
        }
    }

    fn read(&self, h: &mut Host) -> Result<String, HostError> {
        h.fs.sysctl(self.key).map(|v| norm(&v))
    }

    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError> {
        h.fs.write_sysctl(self.key, value)
    }

    fn check(&self, value: &str, cx: &Cx) -> Result<Option<String>, HostError> {
        let key = self.key;
        if !valid_sysctl_name(key) {
            return Err(HostError::Refused(format!("{key:?} is not a sysctl name")));
        }
        // Under --netns (or run inside any namespace) only per-namespace
        // keys: the others would change the whole host.
        let confined = !cx.in_init_netns || cx.snap.netns.is_some();
        let host_wide = netns_sysctl_refusal(key);
        if let (true, Some(why)) = (confined, &host_wide)
            && !dotted(key).starts_with("net.")
        {
            return Err(HostError::Refused(format!(
                "{why}; run tune without --netns to change the host"
            )));
        }
        let p = cx.fs.path(&sysctl_path(key));
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(_) => match (confined, host_wide) {
                (true, Some(why)) => return Ok(Some(why)),
                _ => {
                    return Err(HostError::Refused(format!(
                        "no sysctl {key} on this kernel"
                    )));
                }
            },
        };
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(HostError::Refused(format!(
                "{key}: the value {value:?} holds control characters"
            )));
        }
        if dotted(key).ends_with(".disable_ipv6")
            && value.trim() != "0"
            && cx.fs.sysctl(key).ok().as_deref() != Some(value.trim())
        {
            return Err(HostError::Refused(format!(
                "{key} = {value}: disabling IPv6 deletes the addresses of the devices it covers, which a rollback cannot bring back"
            )));
        }
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o200 == 0 {
            let where_ = if cx.in_init_netns {
                "here"
            } else {
                "inside a network namespace (set it in the initial namespace)"
            };
            return Ok(Some(format!("{key} is read-only {where_}")));
        }
        if key.ends_with("mem_max") || key.ends_with("tcp_rmem") || key.ends_with("tcp_wmem") {
            let biggest = value
                .split_whitespace()
                .filter_map(|w| w.parse::<u64>().ok())
                .max()
                .unwrap_or(0);
            if let Some(mem) = cx.snap.mem_total_bytes.get()
                && biggest > mem / 8
            {
                return Err(HostError::Refused(format!(
                    "{key} = {value} would let one socket take {} MiB, more than 1/8 of this host's {} MiB of memory",
                    biggest >> 20,
                    mem >> 20
                )));
            }
        }
        Ok(None)
    }

    /// With the global forwarding flag every device's flag,
    /// `all.accept_redirects` and every device's LRO (forwarding turns it
    /// off); with all.disable_ipv6 every device's.
    fn side_effects(&self, h: &mut Host) -> Vec<Setting> {
        let sysctl = |key: String| Setting::Sysctl { key };
        let k = dotted(self.key);
        let fam = match k.as_str() {
            "net.ipv4.ip_forward" | "net.ipv4.conf.all.forwarding" => "ipv4",
            "net.ipv6.conf.all.forwarding" => "ipv6",
            "net.ipv6.conf.all.disable_ipv6" => {
                return conf_devices(&h.fs, "ipv6")
                    .into_iter()
                    .map(|d| sysctl(format!("net.ipv6.conf.{d}.disable_ipv6")))
                    .collect();
            }
            _ => return vec![],
        };
        let mut out = Vec::new();
        if fam == "ipv4" {
            out.push(sysctl("net.ipv4.ip_forward".into()));
            out.push(sysctl("net.ipv4.conf.all.accept_redirects".into()));
        }
        for d in conf_devices(&h.fs, fam) {
            out.push(sysctl(format!("net.{fam}.conf.{d}.forwarding")));
        }
        if let Ok(links) = h.rt.links() {
            out.extend(
                links
                    .iter()
                    .filter_map(link_name)
                    .map(|dev| Setting::Feature {
                        dev,
                        name: "rx-lro".into(),
                    }),
            );
        }
        out.retain(|x| !matches!(x, Setting::Sysctl { key } if key == self.key));
        out
    }
}

/// The entries of /proc/sys/net/FAMILY/conf (all, default and each
/// device), in sysctl form (a dot in a device name as `/`).
fn conf_devices(fs: &Fs, family: &str) -> Vec<String> {
    let dir = fs.path(&format!("proc/sys/net/{family}/conf"));
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().replace('.', "/"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// A link size over rtnetlink: MTU, GSO/GRO sizes (IPv6 and IPv4).
struct Size<'a>(&'a str, LinkSize);

impl Size<'_> {
    fn attr(&self, v: u32) -> LinkAttribute {
        match self.1 {
            LinkSize::Mtu => LinkAttribute::Mtu(v),
            LinkSize::GsoMaxSize => LinkAttribute::GsoMaxSize(v),
            LinkSize::GroMaxSize => LinkAttribute::GroMaxSize(v),
            LinkSize::GsoIpv4MaxSize => LinkAttribute::GsoIpv4MaxSize(v),
            LinkSize::GroIpv4MaxSize => LinkAttribute::GroIpv4MaxSize(v),
            LinkSize::GsoMaxSegs => LinkAttribute::GsoMaxSegs(v),
        }
    }

    fn value_of(&self, a: &LinkAttribute) -> Option<u32> {
        match (self.1, a) {
            (LinkSize::Mtu, LinkAttribute::Mtu(v))
            | (LinkSize::GsoMaxSize, LinkAttribute::GsoMaxSize(v))
            | (LinkSize::GroMaxSize, LinkAttribute::GroMaxSize(v))
            | (LinkSize::GsoIpv4MaxSize, LinkAttribute::GsoIpv4MaxSize(v))
            | (LinkSize::GroIpv4MaxSize, LinkAttribute::GroIpv4MaxSize(v))
            | (LinkSize::GsoMaxSegs, LinkAttribute::GsoMaxSegs(v)) => Some(*v),
            _ => None,
        }
    }

    fn ipv4(&self) -> bool {
        matches!(self.1, LinkSize::GsoIpv4MaxSize | LinkSize::GroIpv4MaxSize)
    }

    fn gso(&self) -> bool {
        matches!(self.1, LinkSize::GsoMaxSize | LinkSize::GsoIpv4MaxSize)
    }

    fn check_mtu(&self, mtu: u64, cx: &Cx) -> Result<Option<String>, HostError> {
        let dev = self.0;
        let l = cx.link(dev)?;
        if mtu < 68 {
            return Err(HostError::Refused(format!(
                "MTU {mtu} on {dev} is below the IPv4 minimum of 68"
            )));
        }
        let v6: Vec<&String> = l
            .addresses
            .iter()
            .filter(|a| a.contains(':') && !a.to_ascii_lowercase().starts_with("fe80:"))
            .collect();
        if mtu < 1280 && !v6.is_empty() {
            return Err(HostError::Refused(format!(
                "MTU {mtu} on {dev} is below IPv6's minimum of 1280: the kernel would delete its IPv6 addresses ({}), which a rollback cannot bring back",
                v6.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        if let Some(max) = l.max_mtu.filter(|m| *m > 0)
            && mtu > max as u64
        {
            return Err(HostError::Refused(format!(
                "MTU {mtu} on {dev} is above the device's maximum of {max}"
            )));
        }
        if let Some(lower) = l.lower.as_deref().and_then(|n| cx.snap.link(n)) {
            let overhead = if l.kind == "vxlan" { 50 } else { 0 };
            if mtu + overhead > lower.mtu as u64 {
                return Err(HostError::Refused(format!(
                    "MTU {mtu} on {dev} is larger than its lower link {} allows ({} minus {overhead} bytes of {} header)",
                    lower.name, lower.mtu, l.kind
                )));
            }
        }
        Ok(None)
    }

    fn check_size(&self, v: u64, cx: &Cx) -> Result<Option<String>, HostError> {
        let (dev, label, ipv4) = (self.0, self.label(), self.ipv4());
        let l = cx.link(dev)?;
        if v > 65536 {
            let (ok, need) = if ipv4 {
                (cx.snap.big_tcp.ipv4, "6.3")
            } else {
                (cx.snap.big_tcp.ipv6, "5.19")
            };
            if !ok {
                return Err(HostError::Refused(format!(
                    "{label} {v}: BIG TCP over IPv{} needs kernel {need} or later, this is {}",
                    if ipv4 { 4 } else { 6 },
                    cx.snap.kernel
                )));
            }
        }
        if self.gso()
            && let Some(tso) = l.tso_max_size
            && v > tso as u64
        {
            return Err(HostError::Refused(format!(
                "{label} {v} is above the driver's tso_max_size of {tso}"
            )));
        }
        if ipv4 && l.gso_ipv4_max_size.is_none() {
            return Ok(Some(format!("this kernel has no {label} on {dev}")));
        }
        if v > 524288 {
            return Err(HostError::Refused(format!(
                "{label} {v} is above the kernel's limit of 524288"
            )));
        }
        Ok(None)
    }
}

impl Knob for Size<'_> {
    fn setting(&self) -> Setting {
        self.1.setting(self.0)
    }

    fn read(&self, h: &mut Host) -> Result<String, HostError> {
        let l = h.rt.link(self.0)?;
        l.attributes
            .iter()
            .find_map(|a| self.value_of(a))
            .map(|v| v.to_string())
            .ok_or_else(|| {
                HostError::Refused(format!("{} does not report {}", self.0, self.label()))
            })
    }

    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError> {
        let i = h.index(self.0)?;
        let v = num::<u32>(&self.label(), value)?;
        let what = format!("set {} to {value}", self.label());
        h.rt.set_link(i, vec![self.attr(v)], &what)
    }

    fn check(&self, value: &str, cx: &Cx) -> Result<Option<String>, HostError> {
        cx.link(self.0)?;
        let v = value.parse::<u64>().map_err(|_| {
            HostError::Refused(format!("{}: {value:?} is not a number", self.label()))
        })?;
        match self.1 {
            LinkSize::Mtu => self.check_mtu(v, cx),
            // The kernel's GSO_MAX_SEGS.
            LinkSize::GsoMaxSegs if !(1..=65535).contains(&v) => Err(HostError::Refused(format!(
                "{} {v} is outside 1-65535",
                self.label()
            ))),
            LinkSize::GsoMaxSegs => Ok(None),
            _ => self.check_size(v, cx),
        }
    }

    /// The IPv4 GSO/GRO size with the IPv6 one (which overwrites it at or
    /// below 64 KiB); with a device's MTU its IPv6 MTU, its upper
    /// devices' MTU (vlan, macvlan follow a lower MTU down) and its
    /// master's (a bridge follows its ports). Those a host lacks fail to
    /// read and are left out by `apply`.
    fn side_effects(&self, h: &mut Host) -> Vec<Setting> {
        let dev = self.0.to_string();
        match self.1 {
            LinkSize::GsoMaxSize => vec![Setting::GsoIpv4MaxSize { dev }],
            LinkSize::GroMaxSize => vec![Setting::GroIpv4MaxSize { dev }],
            LinkSize::Mtu => {
                let mut out = vec![Setting::Sysctl {
                    key: format!("net.ipv6.conf.{}.mtu", dev.replace('.', "/")),
                }];
                let (Ok(me), Ok(links)) = (h.rt.link(&dev), h.rt.links()) else {
                    return out;
                };
                let index = me.header.index;
                let master = me.attributes.iter().find_map(|a| match a {
                    LinkAttribute::Controller(m) => Some(*m),
                    _ => None,
                });
                for l in &links {
                    let here = !l
                        .attributes
                        .iter()
                        .any(|a| matches!(a, LinkAttribute::LinkNetNsId(_)));
                    let upper = here && l.attributes.contains(&LinkAttribute::Link(index));
                    if (upper || Some(l.header.index) == master)
                        && l.header.index != index
                        && let Some(name) = link_name(l)
                    {
                        out.push(Setting::Mtu { dev: name });
                    }
                }
                out
            }
            _ => vec![],
        }
    }
}

/// An ethtool feature by kernel name (rx-gro, tx-tcp-segmentation...).
struct Feature<'a> {
    dev: &'a str,
    name: &'a str,
}

impl Knob for Feature<'_> {
    fn setting(&self) -> Setting {
        Setting::Feature {
            dev: self.dev.to_string(),
            name: self.name.to_string(),
        }
    }

    fn read(&self, h: &mut Host) -> Result<String, HostError> {
        let (dev, name) = (self.dev, self.name);
        let f = h.eth()?.features(dev)?;
        f.get(name)
            .map(|x| onoff(x.on))
            .ok_or_else(|| HostError::Refused(format!("{dev} has no feature {name:?}")))
    }

    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError> {
        let v = on(&self.label(), value)?;
        h.eth()?.set_features(self.dev, &[(self.name, v)])
    }

    /// Every other feature of the device the kernel lets change: it
    /// recomputes them all when one is set (scatter-gather off takes
    /// GSO and TSO with it), so each is journaled before the change and
    /// kept when it was read back changed after it.
    fn side_effects(&self, h: &mut Host) -> Vec<Setting> {
        let Ok(features) = h.eth().and_then(|e| e.features(self.dev)) else {
            return vec![];
        };
        features
            .into_iter()
            .filter(|(name, f)| !f.fixed && name != self.name)
            .map(|(name, _)| Setting::Feature {
                dev: self.dev.to_string(),
                name,
            })
            .collect()
    }

    fn check(&self, value: &str, cx: &Cx) -> Result<Option<String>, HostError> {
        let (dev, name) = (self.dev, self.name);
        let l = cx.link(dev)?;
        if let Some(f) = l.features.get() {
            match f.get(name) {
                None => return Ok(Some(format!("{dev} has no feature {name}"))),
                Some(x) if x.fixed && onoff(x.on) != value => {
                    return Ok(Some(format!("{name} is fixed on {dev}")));
                }
                _ => {}
            }
        }
        Ok(None)
    }
}

/// A driver private flag (ethtool --set-priv-flags).
struct PrivateFlag<'a> {
    dev: &'a str,
    flag: &'a str,
}

impl Knob for PrivateFlag<'_> {
    fn setting(&self) -> Setting {
        Setting::PrivateFlag {
            dev: self.dev.to_string(),
            flag: self.flag.to_string(),
        }
    }

    fn read(&self, h: &mut Host) -> Result<String, HostError> {
        let (dev, flag) = (self.dev, self.flag);
        let f = h.eth()?.private_flags(dev)?;
        f.get(flag)
            .map(|on| onoff(*on))
            .ok_or_else(|| HostError::Refused(format!("{dev} has no private flag {flag:?}")))
    }

    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError> {
        let v = on(&self.label(), value)?;
        h.eth()?.set_private_flag(self.dev, self.flag, v)
    }

    fn check(&self, _value: &str, cx: &Cx) -> Result<Option<String>, HostError> {
        let (dev, flag) = (self.dev, self.flag);
        let l = cx.link(dev)?;
        match l.private_flags.get() {
            Some(f) if f.contains_key(flag) => Ok(None),
            _ => Ok(Some(format!(
                "the {} driver of {dev} has no private flag {flag}",
                l.driver.get().map(|s| s.as_str()).unwrap_or("unknown")
            ))),
        }
    }
}

/// The RX ring size (ethtool -G).
struct RxRing<'a> {
    dev: &'a str,
}

impl Knob for RxRing<'_> {
    fn setting(&self) -> Setting {
        Setting::RxRing {
            dev: self.dev.to_string(),
        }
    }

    fn read(&self, h: &mut Host) -> Result<String, HostError> {
        Ok(h.eth()?.rings(self.dev)?.rx.to_string())
    }

    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError> {
        let v = num::<u32>(&self.label(), value)?;
        h.eth()?.set_rings(self.dev, Some(v), None)
    }

    fn check(&self, value: &str, cx: &Cx) -> Result<Option<String>, HostError> {
        let dev = self.dev;
        let l = cx.link(dev)?;
        let v = value.parse::<u64>().map_err(|_| {
            HostError::Refused(format!("{}: {value:?} is not a number", self.label()))
        })?;
        match l.rings.get() {
            Some(r) if r.rx_max > 0 => {
                if v > r.rx_max as u64 {
                    return Err(HostError::Refused(format!(
                        "rx ring {v} on {dev} is above its maximum of {}",
                        r.rx_max
                    )));
                }
                Ok(None)
            }
            _ => Ok(Some(format!("{dev} does not report ring sizes"))),
        }
    }
}

/// A bond's xmit_hash_policy (sysfs bonding/xmit_hash_policy).
struct BondHashPolicy<'a> {
    dev: &'a str,
}

impl BondHashPolicy<'_> {
    fn file(&self) -> String {
        format!("sys/class/net/{}/bonding/xmit_hash_policy", self.dev)
    }
}

impl Knob for BondHashPolicy<'_> {
    fn setting(&self) -> Setting {
        Setting::BondHashPolicy {
            dev: self.dev.to_string(),
        }
    }

    fn read(&self, h: &mut Host) -> Result<String, HostError> {
        let v = h.fs.read_trim(&self.file())?;
        Ok(v.split_whitespace().next().unwrap_or("").to_string())
    }

    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError> {
        let p = h.fs.path(&self.file());
        std::fs::write(&p, value).map_err(|e| HostError::file(&p, e))
    }

    fn check(&self, value: &str, cx: &Cx) -> Result<Option<String>, HostError> {
        let dev = self.dev;
        if cx.link(dev)?.bond.is_none() {
            return Err(HostError::Refused(format!("{dev} is not a bond")));
        }
        const POLICIES: [&str; 6] = [
            "layer2",
            "layer2+3",
            "layer3+4",
            "encap2+3",
            "encap3+4",
            "vlan+srcmac",
        ];
        if !POLICIES.contains(&value) {
            return Err(HostError::Refused(format!(
                "{value:?} is not a bond hash policy (one of {})",
                POLICIES.join(", ")
            )));
        }
        Ok(None)
    }
}

/// Per-NIC source routing: "from ADDR lookup TABLE" plus the subnet route
/// via DEV in TABLE. Values: present / absent (read may say partial).
struct SourceRoute<'a> {
    dev: &'a str,
    addr: &'a str,
    table: u32,
    priority: u32,
}

impl SourceRoute<'_> {
    fn subnet(&self) -> Result<(IpAddr, u8, IpAddr), HostError> {
        subnet_of(self.addr)
            .ok_or_else(|| HostError::Refused(format!("bad address {:?}", self.addr)))
    }

    fn rule(&self, ip: IpAddr) -> RuleSpec {
        RuleSpec {
            src: ip,
            src_len: if ip.is_ipv4() { 32 } else { 128 },
            table: self.table,
            priority: self.priority,
        }
    }
}

impl Knob for SourceRoute<'_> {
    fn setting(&self) -> Setting {
        Setting::SourceRoute {
            dev: self.dev.to_string(),
            addr: self.addr.to_string(),
            table: self.table,
            priority: self.priority,
        }
    }

    fn read(&self, h: &mut Host) -> Result<String, HostError> {
        let (ip, _, _) = self.subnet()?;
        let index = h.index(self.dev)?;
        let rules = h.rt.rules()?;
        let has_rule = rules.iter().any(|r| {
            use netlink_packet_route::rule::RuleAttribute as A;
            r.attributes.contains(&A::Source(ip))
                && r.attributes.contains(&A::Table(self.table))
                && r.attributes.contains(&A::Priority(self.priority))
        });
        let routes = h.rt.routes()?;
        let has_route = routes.iter().any(|r| {
            use netlink_packet_route::route::RouteAttribute as A;
            r.attributes.contains(&A::Table(self.table)) && r.attributes.contains(&A::Oif(index))
        });
        Ok(match (has_rule, has_route) {
            (true, true) => "present".into(),
            (false, false) => "absent".into(),
            _ => "partial".into(),
        })
    }

    fn write(&self, h: &mut Host, value: &str) -> Result<(), HostError> {
        let (ip, len, net) = self.subnet()?;
        let rule = self.rule(ip);
        let route = RouteSpec {
            dst: net,
            dst_len: len,
            oif: h.index(self.dev)?,
            src: Some(ip),
            table: self.table,
        };
        let now = self.read(h)?;
        match value {
            "present" if now == "present" => Ok(()),
            "present" => {
                if now == "partial" {
                    return Err(HostError::Refused(format!(
                        "{}: table {} or a rule from {ip} already exists; choose another table",
                        self.label(),
                        self.table
                    )));
                }
                h.rt.add_route(&route)?;
                if let Err(e) = h.rt.add_rule(&rule) {
                    let _ = h.rt.del_route(&route);
                    return Err(e);
                }
                Ok(())
            }
            "absent" => {
                if now != "absent" {
                    let _ = h.rt.del_rule(&rule);
                    let _ = h.rt.del_route(&route);
                }
                Ok(())
            }
            _ => Err(HostError::Refused(format!(
                "{} wants present or absent, not {value:?}",
                self.label()
            ))),
        }
    }

    fn check(&self, _value: &str, cx: &Cx) -> Result<Option<String>, HostError> {
        let (dev, addr, table) = (self.dev, self.addr, self.table);
        if !cx.link(dev)?.addresses.iter().any(|x| x == addr) {
            return Err(HostError::Refused(format!("{dev} does not hold {addr}")));
        }
        if matches!(table, 0 | 253..=255) {
            return Err(HostError::Refused(format!(
                "table {table} is reserved (default/main/local)"
            )));
        }
        Ok(None)
    }

    /// The route went with the device; the policy rule stays: remove it
    /// when it was absent before.
    fn clear_orphans(&self, h: &mut Host, old: &str) {
        if old != "absent" {
            return;
        }
        if let Ok((ip, _, _)) = self.subnet() {
            let _ = h.rt.del_rule(&self.rule(ip));
        }
    }
}
