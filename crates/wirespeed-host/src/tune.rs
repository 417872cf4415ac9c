//! Tuning: a [`Plan`] of [`Action`]s, each shown as the command a person
//! would type, applied through netlink, ethtool netlink and /proc/sys with
//! a journal of the old values written first, each value verified after
//! writing, everything rolled back when a step fails, on `rollback`, or
//! when a confirmation deadline passes.

use crate::HostError;
use crate::ethtool::Ethtool;
use crate::fsroot::{Fs, sysctl_path};
use crate::inspect::{network, parse_cidr};
use crate::rtnl::{RouteSpec, Rtnl, RuleSpec};
use crate::snapshot::Snapshot;
use netlink_packet_route::link::LinkAttribute;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Version of the plan and journal JSON.
pub const TUNE_SCHEMA: u32 = 1;

/// One knob that tuning can set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Setting {
    /// A sysctl by dotted name.
    Sysctl {
        /// e.g. net.ipv4.tcp_rmem.
        key: String,
    },
    /// A device's MTU.
    Mtu {
        /// Device.
        dev: String,
    },
    /// gso_max_size (IPv6 and, at or below 65536, IPv4 too).
    GsoMaxSize {
        /// Device.
        dev: String,
    },
    /// gro_max_size.
    GroMaxSize {
        /// Device.
        dev: String,
    },
    /// gso_ipv4_max_size.
    GsoIpv4MaxSize {
        /// Device.
        dev: String,
    },
    /// gro_ipv4_max_size.
    GroIpv4MaxSize {
        /// Device.
        dev: String,
    },
    /// An ethtool feature by kernel name (rx-gro, tx-tcp-segmentation...).
    Feature {
        /// Device.
        dev: String,
        /// Kernel feature name.
        name: String,
    },
    /// A driver private flag.
    PrivateFlag {
        /// Device.
        dev: String,
        /// Flag name.
        flag: String,
    },
    /// RX ring size.
    RxRing {
        /// Device.
        dev: String,
    },
    /// A bond's xmit_hash_policy (sysfs bonding/xmit_hash_policy).
    BondHashPolicy {
        /// The bond.
        dev: String,
    },
    /// Per-NIC source routing: "from ADDR lookup TABLE" plus the subnet
    /// route via DEV in TABLE. Values: present / absent.
    SourceRoute {
        /// Device that holds the address.
        dev: String,
        /// The address in CIDR form (the subnet comes from its length).
        addr: String,
        /// Routing table.
        table: u32,
        /// Rule priority.
        priority: u32,
    },
}

/// A setting and the value to give it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// What is changed.
    pub setting: Setting,
    /// The new value (numbers and sysctl strings as written; on/off;
    /// present/absent).
    pub value: String,
}

/// An action with the value it replaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The action.
    pub action: Action,
    /// The value read now.
    pub current: String,
    /// The command a person would type.
    pub command: String,
    /// True when the current value already equals the new one.
    pub no_op: bool,
}

/// What tuning would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// [`TUNE_SCHEMA`].
    pub schema_version: u32,
    /// Where the plan came from (profile name, "doctor").
    pub source: String,
    /// The steps in apply order.
    pub steps: Vec<Step>,
    /// Actions left out, with the reason (not supported here, not writable).
    pub skipped: Vec<(Action, String)>,
}

/// One journaled change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The setting.
    pub setting: Setting,
    /// Its value before wirespeed first changed it.
    pub old: String,
    /// The value wirespeed set.
    pub new: String,
}

/// The rollback journal: written before any change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// [`TUNE_SCHEMA`].
    pub schema_version: u32,
    /// When the first change was journaled (Unix seconds).
    pub created_unix: f64,
    /// Unix time after which a watchdog rolls back; None once confirmed.
    pub deadline_unix: Option<f64>,
    /// Changes in the order they were applied.
    pub entries: Vec<Entry>,
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Setting {
    /// The device this setting is on, if any.
    pub fn dev(&self) -> Option<&str> {
        match self {
            Setting::Sysctl { .. } => None,
            Setting::Mtu { dev }
            | Setting::GsoMaxSize { dev }
            | Setting::GroMaxSize { dev }
            | Setting::GsoIpv4MaxSize { dev }
            | Setting::GroIpv4MaxSize { dev }
            | Setting::Feature { dev, .. }
            | Setting::PrivateFlag { dev, .. }
            | Setting::RxRing { dev }
            | Setting::BondHashPolicy { dev }
            | Setting::SourceRoute { dev, .. } => Some(dev),
        }
    }

    /// Apply-order rank: MTU first, IPv6 GSO/GRO sizes before the IPv4
    /// ones (setting gso_max_size <= 65536 overwrites the IPv4 value).
    fn rank(&self) -> u8 {
        match self {
            Setting::Sysctl { .. } => 0,
            Setting::Mtu { .. } => 1,
            Setting::GsoMaxSize { .. } | Setting::GroMaxSize { .. } => 2,
            Setting::GsoIpv4MaxSize { .. } | Setting::GroIpv4MaxSize { .. } => 3,
            Setting::Feature { .. }
            | Setting::PrivateFlag { .. }
            | Setting::RxRing { .. }
            | Setting::BondHashPolicy { .. } => 4,
            Setting::SourceRoute { .. } => 5,
        }
    }

    /// A short label ("mtu of eth1").
    pub fn label(&self) -> String {
        match self {
            Setting::Sysctl { key } => key.clone(),
            Setting::Mtu { dev } => format!("mtu of {dev}"),
            Setting::GsoMaxSize { dev } => format!("gso_max_size of {dev}"),
            Setting::GroMaxSize { dev } => format!("gro_max_size of {dev}"),
            Setting::GsoIpv4MaxSize { dev } => format!("gso_ipv4_max_size of {dev}"),
            Setting::GroIpv4MaxSize { dev } => format!("gro_ipv4_max_size of {dev}"),
            Setting::Feature { dev, name } => format!("{name} of {dev}"),
            Setting::PrivateFlag { dev, flag } => format!("private flag {flag} of {dev}"),
            Setting::RxRing { dev } => format!("rx ring of {dev}"),
            Setting::BondHashPolicy { dev } => format!("xmit_hash_policy of {dev}"),
            Setting::SourceRoute {
                dev, addr, table, ..
            } => format!("source routing of {addr} via {dev} (table {table})"),
        }
    }
}

/// A CIDR as (address, prefix length, network address).
fn subnet_of(cidr: &str) -> Option<(IpAddr, u8, IpAddr)> {
    let (ip, len) = parse_cidr(cidr)?;
    Some((ip, len, network(ip, len)))
}

impl Action {
    /// A sysctl action.
    pub fn sysctl(key: &str, value: impl Into<String>) -> Action {
        Action {
            setting: Setting::Sysctl { key: key.into() },
            value: value.into(),
        }
    }

    /// The command a person would type for this action.
    pub fn command(&self) -> String {
        let v = &self.value;
        match &self.setting {
            Setting::Sysctl { key } => format!("sysctl -w {key}=\"{v}\""),
            Setting::Mtu { dev } => format!("ip link set dev {dev} mtu {v}"),
            Setting::GsoMaxSize { dev } => format!("ip link set dev {dev} gso_max_size {v}"),
            Setting::GroMaxSize { dev } => format!("ip link set dev {dev} gro_max_size {v}"),
            Setting::GsoIpv4MaxSize { dev } => {
                format!("ip link set dev {dev} gso_ipv4_max_size {v}")
            }
            Setting::GroIpv4MaxSize { dev } => {
                format!("ip link set dev {dev} gro_ipv4_max_size {v}")
            }
            Setting::Feature { dev, name } => format!("ethtool -K {dev} {name} {v}"),
            Setting::PrivateFlag { dev, flag } => {
                format!("ethtool --set-priv-flags {dev} {flag} {v}")
            }
            Setting::RxRing { dev } => format!("ethtool -G {dev} rx {v}"),
            Setting::BondHashPolicy { dev } => {
                format!("ip link set dev {dev} type bond xmit_hash_policy {v}")
            }
            Setting::SourceRoute {
                dev,
                addr,
                table,
                priority,
            } => {
                let (ip, len, net) = subnet_of(addr).unwrap_or((
                    IpAddr::from([0, 0, 0, 0]),
                    0,
                    IpAddr::from([0, 0, 0, 0]),
                ));
                let host = if ip.is_ipv4() { 32 } else { 128 };
                let six = if ip.is_ipv6() { "-6 " } else { "" };
                let verb = if v == "absent" { "del" } else { "add" };
                format!(
                    "ip {six}rule {verb} from {ip}/{host} table {table} priority {priority} && ip {six}route {verb} {net}/{len} dev {dev} src {ip} table {table}"
                )
            }
        }
    }
}

/// Builds a link attribute from its value.
type AttrCtor = fn(u32) -> LinkAttribute;

/// The rtnetlink attribute behind a numeric link setting, and its device.
fn link_attr(s: &Setting) -> Option<(&str, AttrCtor)> {
    match s {
        Setting::Mtu { dev } => Some((dev, LinkAttribute::Mtu)),
        Setting::GsoMaxSize { dev } => Some((dev, LinkAttribute::GsoMaxSize)),
        Setting::GroMaxSize { dev } => Some((dev, LinkAttribute::GroMaxSize)),
        Setting::GsoIpv4MaxSize { dev } => Some((dev, LinkAttribute::GsoIpv4MaxSize)),
        Setting::GroIpv4MaxSize { dev } => Some((dev, LinkAttribute::GroIpv4MaxSize)),
        _ => None,
    }
}

/// The value of one of the attributes [`link_attr`] names.
fn attr_u32(a: &LinkAttribute) -> Option<u32> {
    match a {
        LinkAttribute::Mtu(v)
        | LinkAttribute::GsoMaxSize(v)
        | LinkAttribute::GroMaxSize(v)
        | LinkAttribute::GsoIpv4MaxSize(v)
        | LinkAttribute::GroIpv4MaxSize(v) => Some(*v),
        _ => None,
    }
}

/// Reads and writes settings on the running host.
pub struct Host {
    fs: Fs,
    rt: Rtnl,
    eth: Option<Ethtool>,
    in_init_netns: bool,
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn onoff(b: bool) -> String {
    if b { "on".into() } else { "off".into() }
}

impl Host {
    /// Opens netlink sockets on this namespace; `/proc` and `/sys` under `fs`.
    pub fn open(fs: Fs) -> Result<Host, HostError> {
        let in_init_netns = match (
            std::fs::read_link("/proc/self/ns/net"),
            std::fs::read_link("/proc/1/ns/net"),
        ) {
            (Ok(a), Ok(b)) => a == b,
            // pid 1's namespace is unreadable from inside another one.
            _ => false,
        };
        Ok(Host {
            fs,
            rt: Rtnl::open()?,
            eth: Ethtool::open().ok(),
            in_init_netns,
        })
    }

    fn eth(&mut self) -> Result<&mut Ethtool, HostError> {
        self.eth.as_mut().ok_or_else(|| {
            HostError::Refused("the ethtool netlink family is not available on this kernel".into())
        })
    }

    fn index(&mut self, dev: &str) -> Result<u32, HostError> {
        Ok(self.rt.link(dev)?.header.index)
    }

    /// The current value of a setting, in the same form as [`Action::value`].
    pub fn read(&mut self, s: &Setting) -> Result<String, HostError> {
        match s {
            Setting::Sysctl { key } => self.fs.sysctl(key).map(|v| norm(&v)),
            Setting::Mtu { .. }
            | Setting::GsoMaxSize { .. }
            | Setting::GroMaxSize { .. }
            | Setting::GsoIpv4MaxSize { .. }
            | Setting::GroIpv4MaxSize { .. } => {
                let (dev, ctor) = link_attr(s).expect("a link size setting");
                let want = std::mem::discriminant(&ctor(0));
                let l = self.rt.link(dev)?;
                l.attributes
                    .iter()
                    .find(|a| std::mem::discriminant(*a) == want)
                    .and_then(attr_u32)
                    .map(|v| v.to_string())
                    .ok_or_else(|| {
                        HostError::Refused(format!("{dev} does not report {}", s.label()))
                    })
            }
            Setting::Feature { dev, name } => {
                let f = self.eth()?.features(dev)?;
                f.get(name)
                    .map(|x| onoff(x.on))
                    .ok_or_else(|| HostError::Refused(format!("{dev} has no feature {name:?}")))
            }
            Setting::PrivateFlag { dev, flag } => {
                let f = self.eth()?.private_flags(dev)?;
                f.get(flag).map(|on| onoff(*on)).ok_or_else(|| {
                    HostError::Refused(format!("{dev} has no private flag {flag:?}"))
                })
            }
            Setting::RxRing { dev } => Ok(self.eth()?.rings(dev)?.rx.to_string()),
            Setting::BondHashPolicy { dev } => {
                let v = self
                    .fs
                    .read_trim(&format!("sys/class/net/{dev}/bonding/xmit_hash_policy"))?;
                Ok(v.split_whitespace().next().unwrap_or("").to_string())
            }
            Setting::SourceRoute {
                dev,
                addr,
                table,
                priority,
            } => {
                let (ip, _, _) = subnet_of(addr)
                    .ok_or_else(|| HostError::Refused(format!("bad address {addr:?}")))?;
                let index = self.index(dev)?;
                let rules = self.rt.rules()?;
                let has_rule = rules.iter().any(|r| {
                    use netlink_packet_route::rule::RuleAttribute as A;
                    r.attributes.contains(&A::Source(ip))
                        && r.attributes.contains(&A::Table(*table))
                        && r.attributes.contains(&A::Priority(*priority))
                });
                let routes = self.rt.routes()?;
                let has_route = routes.iter().any(|r| {
                    use netlink_packet_route::route::RouteAttribute as A;
                    r.attributes.contains(&A::Table(*table))
                        && r.attributes.contains(&A::Oif(index))
                });
                Ok(if has_rule && has_route {
                    "present".into()
                } else if !has_rule && !has_route {
                    "absent".into()
                } else {
                    "partial".into()
                })
            }
        }
    }

    /// Writes a setting (no verification; see [`Host::set`]).
    fn write(&mut self, s: &Setting, value: &str) -> Result<(), HostError> {
        let num = || {
            value.parse::<u32>().map_err(|_| {
                HostError::Refused(format!("{} wants a number, not {value:?}", s.label()))
            })
        };
        let on = || match value {
            "on" => Ok(true),
            "off" => Ok(false),
            _ => Err(HostError::Refused(format!(
                "{} wants on or off, not {value:?}",
                s.label()
            ))),
        };
        let what = format!("set {} to {value}", s.label());
        match s {
            Setting::Sysctl { key } => self.fs.write_sysctl(key, value),
            Setting::Mtu { .. }
            | Setting::GsoMaxSize { .. }
            | Setting::GroMaxSize { .. }
            | Setting::GsoIpv4MaxSize { .. }
            | Setting::GroIpv4MaxSize { .. } => {
                let (dev, ctor) = link_attr(s).expect("a link size setting");
                let (i, v) = (self.index(dev)?, num()?);
                self.rt.set_link(i, vec![ctor(v)], &what)
            }
            Setting::Feature { dev, name } => {
                let v = on()?;
                self.eth()?.set_features(dev, &[(name, v)])
            }
            Setting::PrivateFlag { dev, flag } => {
                let v = on()?;
                self.eth()?.set_private_flag(dev, flag, v)
            }
            Setting::RxRing { dev } => {
                let v = num()?;
                self.eth()?.set_rings(dev, Some(v), None)
            }
            Setting::BondHashPolicy { dev } => {
                let p = self
                    .fs
                    .path(&format!("sys/class/net/{dev}/bonding/xmit_hash_policy"));
                std::fs::write(&p, value).map_err(|e| HostError::file(&p, e))
            }
            Setting::SourceRoute {
                dev,
                addr,
                table,
                priority,
            } => {
                let (ip, len, net) = subnet_of(addr)
                    .ok_or_else(|| HostError::Refused(format!("bad address {addr:?}")))?;
                let oif = self.index(dev)?;
                let rule = RuleSpec {
                    src: ip,
                    src_len: if ip.is_ipv4() { 32 } else { 128 },
                    table: *table,
                    priority: *priority,
                };
                let route = RouteSpec {
                    dst: net,
                    dst_len: len,
                    oif,
                    src: Some(ip),
                    table: *table,
                };
                let now = self.read(s)?;
                match value {
                    "present" if now == "present" => Ok(()),
                    "present" => {
                        if now == "partial" {
                            return Err(HostError::Refused(format!(
                                "{}: table {table} or a rule from {ip} already exists; choose another table",
                                s.label()
                            )));
                        }
                        self.rt.add_route(&route)?;
                        if let Err(e) = self.rt.add_rule(&rule) {
                            let _ = self.rt.del_route(&route);
                            return Err(e);
                        }
                        Ok(())
                    }
                    "absent" => {
                        if now != "absent" {
                            self.remove_source_route(&rule, &route);
                        }
                        Ok(())
                    }
                    _ => Err(HostError::Refused(format!(
                        "{} wants present or absent, not {value:?}",
                        s.label()
                    ))),
                }
            }
        }
    }

    fn remove_source_route(&mut self, rule: &RuleSpec, route: &RouteSpec) {
        let _ = self.rt.del_rule(rule);
        let _ = self.rt.del_route(route);
    }

    /// Writes a setting and reads it back; an error when it differs.
    pub fn set(&mut self, s: &Setting, value: &str) -> Result<(), HostError> {
        self.write(s, value)?;
        let got = self.read(s)?;
        if norm(&got) != norm(value) {
            return Err(HostError::Verify {
                what: s.label(),
                wanted: value.into(),
                got,
            });
        }
        Ok(())
    }

    /// Checks an action against the host: refuses unsafe values, and says
    /// why an action cannot apply here (Ok(Some(reason)) means skip it).
    pub fn check(&mut self, a: &Action, snap: &Snapshot) -> Result<Option<String>, HostError> {
        check_action(a, snap, &self.fs, self.in_init_netns)
    }

    /// Builds the plan: checks each action, reads its current value, orders
    /// the steps (IPv6 sizes before IPv4 ones), drops duplicates.
    pub fn plan(
        &mut self,
        source: &str,
        actions: Vec<Action>,
        snap: &Snapshot,
    ) -> Result<Plan, HostError> {
        let mut steps: Vec<Step> = Vec::new();
        let mut skipped = Vec::new();
        let mut actions = actions;
        actions.sort_by_key(|a| a.setting.rank());
        // Checks see the host as the earlier steps leave it (a vxlan's MTU
        // may rise with its underlay's in the same plan).
        let mut snap = snap.clone();
        let snap = &mut snap;
        for a in actions {
            if let Some(prev) = steps.iter().position(|s| s.action.setting == a.setting) {
                steps.remove(prev);
            }
            if let Some(why) = self.check(&a, snap)? {
                skipped.push((a, why));
                continue;
            }
            let current = self
                .read(&a.setting)
                .unwrap_or_else(|e| format!("unknown ({e})"));
            if current == "partial" {
                return Err(HostError::Refused(format!(
                    "{}: its table already has a route via the device or its rule exists alone; choose another table or remove them",
                    a.setting.label()
                )));
            }
            let no_op = norm(&current) == norm(&a.value);
            if let (Setting::Mtu { dev }, Ok(v)) = (&a.setting, a.value.parse::<u32>()) {
                if let Some(l) = snap.links.iter_mut().find(|l| &l.name == dev) {
                    l.mtu = v;
                }
            }
            steps.push(Step {
                command: a.command(),
                current,
                no_op,
                action: a,
            });
        }
        Ok(Plan {
            schema_version: TUNE_SCHEMA,
            source: source.into(),
            steps,
            skipped,
        })
    }
}

/// The safety rules of one action against a snapshot (pure but for the
/// sysctl file's mode).
pub fn check_action(
    a: &Action,
    snap: &Snapshot,
    fs: &Fs,
    in_init_netns: bool,
) -> Result<Option<String>, HostError> {
    let link = |dev: &str| {
        snap.link(dev)
            .ok_or_else(|| HostError::NoSuchLink(dev.into()))
    };
    let num = || {
        a.value.parse::<u64>().map_err(|_| {
            HostError::Refused(format!(
                "{}: {:?} is not a number",
                a.setting.label(),
                a.value
            ))
        })
    };
    match &a.setting {
        Setting::Sysctl { key } => {
            let p = fs.path(&sysctl_path(key));
            let meta = std::fs::metadata(&p)
                .map_err(|_| HostError::Refused(format!("no sysctl {key} on this kernel")))?;
            use std::os::unix::fs::PermissionsExt;
            if meta.permissions().mode() & 0o200 == 0 {
                let where_ = if in_init_netns {
                    "here"
                } else {
                    "inside a network namespace (set it in the initial namespace)"
                };
                return Ok(Some(format!("{key} is read-only {where_}")));
            }
            if key.ends_with("mem_max") || key.ends_with("tcp_rmem") || key.ends_with("tcp_wmem") {
                let biggest = a
                    .value
                    .split_whitespace()
                    .filter_map(|w| w.parse::<u64>().ok())
                    .max()
                    .unwrap_or(0);
                if let Some(mem) = snap.mem_total_bytes.get() {
                    if biggest > mem / 8 {
                        return Err(HostError::Refused(format!(
                            "{key} = {} would let one socket take {} MiB, more than 1/8 of this host's {} MiB of memory",
                            a.value,
                            biggest >> 20,
                            mem >> 20
                        )));
                    }
                }
            }
        }
        Setting::Mtu { dev } => {
            let l = link(dev)?;
            let mtu = num()?;
            if mtu < 68 {
                return Err(HostError::Refused(format!(
                    "MTU {mtu} on {dev} is below the IPv4 minimum of 68"
                )));
            }
            if let Some(max) = l.max_mtu.filter(|m| *m > 0) {
                if mtu > max as u64 {
                    return Err(HostError::Refused(format!(
                        "MTU {mtu} on {dev} is above the device's maximum of {max}"
                    )));
                }
            }
            if let Some(lower) = l.lower.as_deref().and_then(|n| snap.link(n)) {
                let overhead = if l.kind == "vxlan" { 50 } else { 0 };
                if mtu + overhead > lower.mtu as u64 {
                    return Err(HostError::Refused(format!(
                        "MTU {mtu} on {dev} is larger than its lower link {} allows ({} minus {overhead} bytes of {} header)",
                        lower.name, lower.mtu, l.kind
                    )));
                }
            }
        }
        Setting::GsoMaxSize { dev }
        | Setting::GroMaxSize { dev }
        | Setting::GsoIpv4MaxSize { dev }
        | Setting::GroIpv4MaxSize { dev } => {
            let l = link(dev)?;
            let v = num()?;
            let ipv4 = matches!(
                a.setting,
                Setting::GsoIpv4MaxSize { .. } | Setting::GroIpv4MaxSize { .. }
            );
            let gso = matches!(
                a.setting,
                Setting::GsoMaxSize { .. } | Setting::GsoIpv4MaxSize { .. }
            );
            if v > 65536 {
                let (ok, need) = if ipv4 {
                    (snap.big_tcp.ipv4, "6.3")
                } else {
                    (snap.big_tcp.ipv6, "5.19")
                };
                if !ok {
                    return Err(HostError::Refused(format!(
                        "{} {v}: BIG TCP over IPv{} needs kernel {need} or later, this is {}",
                        a.setting.label(),
                        if ipv4 { 4 } else { 6 },
                        snap.kernel
                    )));
                }
            }
            if gso {
                if let Some(tso) = l.tso_max_size {
                    if v > tso as u64 {
                        return Err(HostError::Refused(format!(
                            "{} {v} is above the driver's tso_max_size of {tso}",
                            a.setting.label()
                        )));
                    }
                }
            }
            if ipv4 && l.gso_ipv4_max_size.is_none() {
                return Ok(Some(format!(
                    "this kernel has no {} on {dev}",
                    a.setting.label()
                )));
            }
            if v > 524288 {
                return Err(HostError::Refused(format!(
                    "{} {v} is above the kernel's limit of 524288",
                    a.setting.label()
                )));
            }
        }
        Setting::Feature { dev, name } => {
            let l = link(dev)?;
            if let Some(f) = l.features.get() {
                match f.get(name) {
                    None => return Ok(Some(format!("{dev} has no feature {name}"))),
                    Some(x) if x.fixed && onoff(x.on) != a.value => {
                        return Ok(Some(format!("{name} is fixed on {dev}")));
                    }
                    _ => {}
                }
            }
        }
        Setting::PrivateFlag { dev, flag } => {
            let l = link(dev)?;
            match l.private_flags.get() {
                Some(f) if f.contains_key(flag) => {}
                _ => {
                    return Ok(Some(format!(
                        "the {} driver of {dev} has no private flag {flag}",
                        l.driver.get().map(|s| s.as_str()).unwrap_or("unknown")
                    )));
                }
            }
        }
        Setting::RxRing { dev } => {
            let l = link(dev)?;
            let v = num()?;
            match l.rings.get() {
                Some(r) if r.rx_max > 0 => {
                    if v > r.rx_max as u64 {
                        return Err(HostError::Refused(format!(
                            "rx ring {v} on {dev} is above its maximum of {}",
                            r.rx_max
                        )));
                    }
                }
                _ => return Ok(Some(format!("{dev} does not report ring sizes"))),
            }
        }
        Setting::BondHashPolicy { dev } => {
            let l = link(dev)?;
            if l.bond.is_none() {
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
            if !POLICIES.contains(&a.value.as_str()) {
                return Err(HostError::Refused(format!(
                    "{:?} is not a bond hash policy (one of {})",
                    a.value,
                    POLICIES.join(", ")
                )));
            }
        }
        Setting::SourceRoute {
            dev, addr, table, ..
        } => {
            let l = link(dev)?;
            if !l.addresses.iter().any(|x| x == addr) {
                return Err(HostError::Refused(format!("{dev} does not hold {addr}")));
            }
            if matches!(*table, 0 | 253..=255) {
                return Err(HostError::Refused(format!(
                    "table {table} is reserved (default/main/local)"
                )));
            }
        }
    }
    Ok(None)
}

/// Where journals live: `dir/journal.json`.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// A state directory (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> StateDir {
        StateDir { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.json")
    }

    /// The journal, if any.
    pub fn load(&self) -> Result<Option<Journal>, HostError> {
        let p = self.journal_path();
        match std::fs::read(&p) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                HostError::State(format!("{}: not a wirespeed journal: {e}", p.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HostError::file(&p, e)),
        }
    }

    /// Writes the journal atomically (temp file, fsync, rename).
    pub fn save(&self, j: &Journal) -> Result<(), HostError> {
        use std::io::Write;
        std::fs::create_dir_all(&self.dir).map_err(|e| HostError::file(&self.dir, e))?;
        let tmp = self.dir.join("journal.json.tmp");
        let data = serde_json::to_vec_pretty(j).map_err(|e| HostError::State(e.to_string()))?;
        let mut f = std::fs::File::create(&tmp).map_err(|e| HostError::file(&tmp, e))?;
        f.write_all(&data)
            .and_then(|_| f.sync_all())
            .map_err(|e| HostError::file(&tmp, e))?;
        std::fs::rename(&tmp, self.journal_path())
            .map_err(|e| HostError::file(self.journal_path(), e))
    }

    /// Removes the journal (after a rollback), keeping a copy beside it.
    pub fn retire(&self) -> Result<(), HostError> {
        let p = self.journal_path();
        if p.exists() {
            let done = self
                .dir
                .join(format!("rolled-back-{}.json", now_unix() as u64));
            std::fs::rename(&p, &done).map_err(|e| HostError::file(&p, e))?;
        }
        Ok(())
    }
}

/// What apply did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Settings changed now.
    pub changed: Vec<String>,
    /// Settings already at the wanted value.
    pub unchanged: Vec<String>,
}

/// Applies a plan: journals old values first, sets and verifies each
/// step, and on any failure restores everything this call changed and
/// returns the error. `deadline` arms the automatic rollback.
pub fn apply(
    host: &mut Host,
    state: &StateDir,
    plan: &Plan,
    deadline: Option<Duration>,
) -> Result<Applied, HostError> {
    let before = state.load()?;
    if let Some(j) = &before {
        if j.deadline_unix.is_some() {
            return Err(HostError::Refused(
                "an earlier apply is waiting for `wirespeed tune confirm` (or its rollback); confirm or roll back first".into(),
            ));
        }
    }
    let mut journal = before.clone().unwrap_or(Journal {
        schema_version: TUNE_SCHEMA,
        created_unix: now_unix(),
        deadline_unix: None,
        entries: Vec::new(),
    });
    let todo: Vec<&Step> = plan.steps.iter().filter(|s| !s.no_op).collect();
    let unchanged = plan
        .steps
        .iter()
        .filter(|s| s.no_op)
        .map(|s| s.action.setting.label())
        .collect();
    if todo.is_empty() {
        return Ok(Applied {
            changed: vec![],
            unchanged,
        });
    }
    // Journal the old values (read again now, not from the plan) before any change.
    let mut fresh = Vec::new();
    for s in &todo {
        let old = host.read(&s.action.setting)?;
        fresh.push((s, old));
    }
    for (s, old) in &fresh {
        match journal
            .entries
            .iter_mut()
            .find(|e| e.setting == s.action.setting)
        {
            Some(e) => e.new = s.action.value.clone(),
            None => journal.entries.push(Entry {
                setting: s.action.setting.clone(),
                old: old.clone(),
                new: s.action.value.clone(),
            }),
        }
    }
    journal.deadline_unix = deadline.map(|d| now_unix() + d.as_secs_f64());
    state.save(&journal)?;
    let mut done: Vec<(Setting, String)> = Vec::new();
    for (s, old) in &fresh {
        if let Err(e) = host.set(&s.action.setting, &s.action.value) {
            done.push((s.action.setting.clone(), old.clone()));
            let restore = restore_all(host, &done);
            match &before {
                Some(j) => state.save(j)?,
                None => state.retire()?,
            }
            let tail = match restore {
                Ok(()) => "every value changed before it was restored".to_string(),
                Err(r) => format!("and restoring failed too: {r}"),
            };
            return Err(HostError::State(format!("{e}; {tail}")));
        }
        done.push((s.action.setting.clone(), old.clone()));
    }
    Ok(Applied {
        changed: done.iter().map(|(s, _)| s.label()).collect(),
        unchanged,
    })
}

/// Restores (setting, old value) pairs: in reverse order, then the IPv4
/// GSO/GRO sizes once more (restoring an IPv6 size <= 65536 overwrites them).
fn restore_all(host: &mut Host, done: &[(Setting, String)]) -> Result<(), HostError> {
    let mut first_err = None;
    for (s, old) in done.iter().rev() {
        if host.read(s).is_ok_and(|now| norm(&now) == norm(old)) {
            continue;
        }
        if let Err(e) = host.set(s, old) {
            first_err.get_or_insert(e);
        }
    }
    for (s, old) in done.iter().filter(|(s, _)| s.rank() == 3) {
        if let Err(e) = host.set(s, old) {
            first_err.get_or_insert(e);
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// Restores every journaled value and retires the journal. Returns the
/// settings restored.
pub fn rollback(host: &mut Host, state: &StateDir) -> Result<Vec<String>, HostError> {
    let Some(j) = state.load()? else {
        return Ok(vec![]);
    };
    let pairs: Vec<(Setting, String)> = j
        .entries
        .iter()
        .map(|e| (e.setting.clone(), e.old.clone()))
        .collect();
    restore_all(host, &pairs)?;
    state.retire()?;
    Ok(pairs.iter().map(|(s, _)| s.label()).collect())
}

/// Cancels the automatic rollback; the journal stays for a later rollback.
pub fn confirm(state: &StateDir) -> Result<bool, HostError> {
    let Some(mut j) = state.load()? else {
        return Ok(false);
    };
    let was = j.deadline_unix.take().is_some();
    state.save(&j)?;
    Ok(was)
}

/// The watchdog's loop: waits until the deadline (checking the journal
/// every 100 ms), then rolls back unless confirmed. Returns true when it
/// rolled back.
pub fn watch(host: &mut Host, state: &StateDir) -> Result<bool, HostError> {
    loop {
        let Some(j) = state.load()? else {
            return Ok(false);
        };
        let Some(deadline) = j.deadline_unix else {
            return Ok(false);
        };
        if now_unix() >= deadline {
            rollback(host, state)?;
            return Ok(true);
        }
        // try_: a hand-edited journal's absurd deadline must not panic.
        let left = Duration::try_from_secs_f64(deadline - now_unix()).unwrap_or_default();
        std::thread::sleep(left.clamp(Duration::from_millis(1), Duration::from_millis(100)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_like_what_people_type() {
        let a = Action::sysctl("net.ipv4.tcp_rmem", "4096 131072 16777216");
        assert_eq!(
            a.command(),
            "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 16777216\""
        );
        let m = Action {
            setting: Setting::Mtu { dev: "eth1".into() },
            value: "9000".into(),
        };
        assert_eq!(m.command(), "ip link set dev eth1 mtu 9000");
        let g = Action {
            setting: Setting::GsoIpv4MaxSize { dev: "eth1".into() },
            value: "185000".into(),
        };
        assert_eq!(g.command(), "ip link set dev eth1 gso_ipv4_max_size 185000");
        let s = Action {
            setting: Setting::SourceRoute {
                dev: "eth1".into(),
                addr: "10.0.0.3/24".into(),
                table: 101,
                priority: 1001,
            },
            value: "present".into(),
        };
        assert_eq!(
            s.command(),
            "ip rule add from 10.0.0.3/32 table 101 priority 1001 && ip route add 10.0.0.0/24 dev eth1 src 10.0.0.3 table 101"
        );
    }

    #[test]
    fn ipv6_sizes_rank_before_ipv4_ones() {
        let s = |setting| Action {
            setting,
            value: "1".into(),
        };
        let mut v = [
            s(Setting::GsoIpv4MaxSize { dev: "a".into() }),
            s(Setting::GsoMaxSize { dev: "a".into() }),
            s(Setting::Mtu { dev: "a".into() }),
        ];
        v.sort_by_key(|a| a.setting.rank());
        assert!(matches!(v[0].setting, Setting::Mtu { .. }));
        assert!(matches!(v[1].setting, Setting::GsoMaxSize { .. }));
    }

    #[test]
    fn journals_round_trip_and_confirm_clears_the_deadline() {
        let dir = std::env::temp_dir().join(format!("ws-journal-{}", std::process::id()));
        let st = StateDir::new(&dir);
        assert!(st.load().unwrap().is_none());
        let j = Journal {
            schema_version: TUNE_SCHEMA,
            created_unix: 1.0,
            deadline_unix: Some(5.0),
            entries: vec![Entry {
                setting: Setting::Sysctl { key: "k".into() },
                old: "1".into(),
                new: "0".into(),
            }],
        };
        st.save(&j).unwrap();
        assert_eq!(st.load().unwrap(), Some(j));
        assert!(confirm(&st).unwrap());
        assert_eq!(st.load().unwrap().unwrap().deadline_unix, None);
        std::fs::write(dir.join("journal.json"), b"{not json").unwrap();
        assert!(st.load().is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
