//! What tuning changes: the [`Setting`]s it knows, an [`Action`] (a
//! setting and its new value), a planned [`Step`] and the [`Plan`], each
//! shown as the command a person would type; and the rollback [`Journal`]
//! with each [`Entry`]. Plain serde types: wirespeed-host plans, applies
//! and journals them (and re-exports them as `wirespeed_host::tune`); the
//! report renders them.

use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

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
    /// gso_max_segs: the most segments in one GSO packet.
    GsoMaxSegs {
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
    /// True when the setting is not confined to a network namespace (a
    /// sysctl outside net.*, or one of the few host-wide net.* ones).
    #[serde(default)]
    pub host_wide: bool,
    /// Set when the step touches a device that carries the default route,
    /// the user's session or a control connection: what it carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier: Option<String>,
    /// Set when nothing measured shows the path takes the change (an MTU
    /// raise): why; `tune apply` needs `--force` for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<String>,
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
            | Setting::GsoMaxSegs { dev }
            | Setting::Feature { dev, .. }
            | Setting::PrivateFlag { dev, .. }
            | Setting::RxRing { dev }
            | Setting::BondHashPolicy { dev }
            | Setting::SourceRoute { dev, .. } => Some(dev),
        }
    }

    /// Apply-order rank: sysctls, then MTU, then IPv6 GSO/GRO sizes
    /// before the IPv4 ones (setting gso_max_size <= 65536 overwrites the
    /// IPv4 value), then ethtool and bond settings, then source routing.
    pub fn rank(&self) -> u8 {
        match self {
            Setting::Sysctl { .. } => 0,
            Setting::Mtu { .. } => 1,
            Setting::GsoMaxSize { .. }
            | Setting::GroMaxSize { .. }
            | Setting::GsoMaxSegs { .. } => 2,
            Setting::GsoIpv4MaxSize { .. } | Setting::GroIpv4MaxSize { .. } => 3,
            Setting::Feature { .. }
            | Setting::PrivateFlag { .. }
            | Setting::RxRing { .. }
            | Setting::BondHashPolicy { .. } => 4,
            Setting::SourceRoute { .. } => 5,
        }
    }

    /// The link size this setting is, if it is one.
    pub fn link_size(&self) -> Option<(&str, LinkSize)> {
        let size = match self {
            Setting::Mtu { .. } => LinkSize::Mtu,
            Setting::GsoMaxSize { .. } => LinkSize::GsoMaxSize,
            Setting::GroMaxSize { .. } => LinkSize::GroMaxSize,
            Setting::GsoIpv4MaxSize { .. } => LinkSize::GsoIpv4MaxSize,
            Setting::GroIpv4MaxSize { .. } => LinkSize::GroIpv4MaxSize,
            Setting::GsoMaxSegs { .. } => LinkSize::GsoMaxSegs,
            _ => return None,
        };
        Some((self.dev()?, size))
    }

    /// A short label ("mtu of eth1").
    pub fn label(&self) -> String {
        if let Some((dev, size)) = self.link_size() {
            return format!("{} of {dev}", size.keyword());
        }
        match self {
            Setting::Sysctl { key } => key.clone(),
            Setting::Feature { dev, name } => format!("{name} of {dev}"),
            Setting::PrivateFlag { dev, flag } => format!("private flag {flag} of {dev}"),
            Setting::RxRing { dev } => format!("rx ring of {dev}"),
            Setting::BondHashPolicy { dev } => format!("xmit_hash_policy of {dev}"),
            Setting::SourceRoute {
                dev, addr, table, ..
            } => format!("source routing of {addr} via {dev} (table {table})"),
            _ => String::new(),
        }
    }

    /// The command a person would type to give it `v`.
    pub fn render(&self, v: &str) -> String {
        if let Some((dev, size)) = self.link_size() {
            return format!("ip link set dev {dev} {} {v}", size.keyword());
        }
        match self {
            Setting::Sysctl { key } => format!("sysctl -w {key}=\"{v}\""),
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
                let unspecified = IpAddr::from([0, 0, 0, 0]);
                let (ip, len, net) = subnet_of(addr).unwrap_or((unspecified, 0, unspecified));
                let host = if ip.is_ipv4() { 32 } else { 128 };
                let six = if ip.is_ipv6() { "-6 " } else { "" };
                let verb = if v == "absent" { "del" } else { "add" };
                format!(
                    "ip {six}rule {verb} from {ip}/{host} table {table} priority {priority} && ip {six}route {verb} {net}/{len} dev {dev} src {ip} table {table}"
                )
            }
            _ => String::new(),
        }
    }
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
        self.setting.render(&self.value)
    }
}

/// A link size (a lab's and netops' `Op::LinkSet` set them too) (each one a tuning [`Setting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkSize {
    /// mtu.
    Mtu,
    /// gso_max_size (IPv6, and IPv4 too at or below 64 KiB).
    GsoMaxSize,
    /// gro_max_size.
    GroMaxSize,
    /// gso_ipv4_max_size.
    GsoIpv4MaxSize,
    /// gro_ipv4_max_size.
    GroIpv4MaxSize,
    /// gso_max_segs: segments in one GSO packet (1 = the stack sends wire-size packets).
    GsoMaxSegs,
}

impl LinkSize {
    /// The `ip link set` keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            LinkSize::Mtu => "mtu",
            LinkSize::GsoMaxSize => "gso_max_size",
            LinkSize::GroMaxSize => "gro_max_size",
            LinkSize::GsoIpv4MaxSize => "gso_ipv4_max_size",
            LinkSize::GroIpv4MaxSize => "gro_ipv4_max_size",
            LinkSize::GsoMaxSegs => "gso_max_segs",
        }
    }

    /// The tuning setting of this size on `dev`.
    pub fn setting(self, dev: &str) -> Setting {
        let dev = dev.to_string();
        match self {
            LinkSize::Mtu => Setting::Mtu { dev },
            LinkSize::GsoMaxSize => Setting::GsoMaxSize { dev },
            LinkSize::GroMaxSize => Setting::GroMaxSize { dev },
            LinkSize::GsoIpv4MaxSize => Setting::GsoIpv4MaxSize { dev },
            LinkSize::GroIpv4MaxSize => Setting::GroIpv4MaxSize { dev },
            LinkSize::GsoMaxSegs => Setting::GsoMaxSegs { dev },
        }
    }
}

/// One journaled change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The setting.
    pub setting: Setting,
    /// Its value before wirespeed first changed it.
    pub old: String,
    /// The value wirespeed set (for a side effect: the value read after
    /// the apply).
    pub new: String,
    /// When the kernel changes this value as a side effect of setting
    /// another one, that setting's label.
    #[serde(default)]
    pub side_effect_of: Option<String>,
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
    /// The boot the changes were made in (/proc/sys/kernel/random/boot_id):
    /// after a reboot the kernel has reset them, and the journal is stale.
    #[serde(default)]
    pub boot_id: Option<String>,
    /// The pid of the watchdog that rolls back at the deadline.
    #[serde(default)]
    pub watchdog_pid: Option<u32>,
    /// A systemd timer armed as a second way to roll back at the deadline.
    #[serde(default)]
    pub timer_unit: Option<String>,
    /// Changes in the order they were applied (a step's side effects
    /// before the step).
    pub entries: Vec<Entry>,
}

/// Now, in Unix seconds.
pub fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Journal {
    /// Seconds since the confirmation deadline passed, when it has and the
    /// journal is still unconfirmed.
    pub fn overdue_s(&self) -> Option<f64> {
        let now = now_unix();
        self.deadline_unix.filter(|d| now >= *d).map(|d| now - d)
    }
}

/// Splits "addr/len".
pub fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (a, l) = s.split_once('/')?;
    Some((a.parse().ok()?, l.parse().ok()?))
}

/// The network address of `ip` with prefix length `len`.
pub fn network(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(len.min(32)))
                .unwrap_or(0);
            IpAddr::V4((u32::from(a) & mask).into())
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(len.min(128)))
                .unwrap_or(0);
            IpAddr::V6((u128::from(a) & mask).into())
        }
    }
}

/// A CIDR as (address, prefix length, network address).
pub fn subnet_of(cidr: &str) -> Option<(IpAddr, u8, IpAddr)> {
    let (ip, len) = parse_cidr(cidr)?;
    Some((ip, len, network(ip, len)))
}
