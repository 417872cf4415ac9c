//! What tuning changes: the [`Setting`]s it knows, an [`Action`] (a
//! setting and its new value), a planned [`Step`] and the [`Plan`], each
//! shown as the command a person would type.

use serde::{Deserialize, Serialize};

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

    /// Apply-order rank: MTU first, IPv6 GSO/GRO sizes before the IPv4
    /// ones (setting gso_max_size <= 65536 overwrites the IPv4 value).
    pub(super) fn rank(&self) -> u8 {
        self.knob().rank()
    }

    /// A short label ("mtu of eth1").
    pub fn label(&self) -> String {
        self.knob().label()
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
        self.setting.knob().render(&self.value)
    }
}

/// A link size that netops' `Op::LinkSet` sets (each one a tuning [`Setting`]).
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
