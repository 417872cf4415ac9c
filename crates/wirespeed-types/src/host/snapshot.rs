//! The snapshot of a host's network knobs: plain serde types, the stable
//! JSON of `wirespeed inspect --json` (schema in docs/host.md). wirespeed-
//! host reads it (and re-exports it as `wirespeed_host::snapshot`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the snapshot JSON; raised when a field changes meaning.
pub const SNAPSHOT_SCHEMA: u32 = 1;

/// A value that was read, or the reason it could not be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Known<T> {
    /// The value read.
    Value(T),
    /// Why it is unknown (missing file, no permission, not supported).
    Unknown {
        /// The reason.
        unknown: String,
    },
}

impl<T> Known<T> {
    /// The value, if known.
    pub fn get(&self) -> Option<&T> {
        match self {
            Known::Value(v) => Some(v),
            Known::Unknown { .. } => None,
        }
    }

    /// An unknown value with its reason.
    pub fn unknown(reason: impl Into<String>) -> Self {
        Known::Unknown {
            unknown: reason.into(),
        }
    }

    /// From a result, keeping the error text as the reason.
    pub fn from_result<E: std::fmt::Display>(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Known::Value(v),
            Err(e) => Known::unknown(e.to_string()),
        }
    }
}

/// Everything wirespeed reads from one host (one network namespace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// [`SNAPSHOT_SCHEMA`].
    pub schema_version: u32,
    /// Host name.
    pub hostname: String,
    /// The named network namespace read, when not the initial one.
    pub netns: Option<String>,
    /// Kernel release (uname -r).
    pub kernel: String,
    /// Online CPUs.
    pub cpus: usize,
    /// MemTotal in bytes.
    pub mem_total_bytes: Known<u64>,
    /// Whether this kernel supports BIG TCP.
    pub big_tcp: BigTcpSupport,
    /// Network devices.
    pub links: Vec<Link>,
    /// Routes of every table but `local`.
    pub routes: Vec<Route>,
    /// Policy routing rules.
    pub rules: Vec<Rule>,
    /// Which device each local address leaves by (kernel route lookup).
    pub egress: Vec<Egress>,
    /// Sysctls by dotted name.
    pub sysctls: BTreeMap<String, Known<String>>,
    /// Sysctls of `sysctls` that cannot be written here (net.core.rmem_max
    /// inside a network namespace, say).
    #[serde(default)]
    pub sysctl_readonly: Vec<String>,
}

/// BIG TCP support by the running kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BigTcpSupport {
    /// IPv6 BIG TCP (kernel >= 5.19).
    pub ipv6: bool,
    /// IPv4 BIG TCP (kernel >= 6.3).
    pub ipv4: bool,
}

/// One network device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Interface index.
    pub index: u32,
    /// Name.
    pub name: String,
    /// physical, loopback, veth, bond, bridge, vxlan, vlan, macvlan, ... (the
    /// rtnetlink kind; "physical" when the device has none).
    pub kind: String,
    /// Driver (sysfs device/driver, or the kind for virtual devices).
    pub driver: Known<String>,
    /// Operational state (UP, DOWN, UNKNOWN...).
    pub state: String,
    /// Administratively up.
    pub up: bool,
    /// Link speed in Mbit/s.
    pub speed_mbps: Known<u32>,
    /// MTU.
    pub mtu: u32,
    /// Largest MTU the device accepts.
    pub max_mtu: Option<u32>,
    /// IFLA_GSO_MAX_SIZE.
    pub gso_max_size: Option<u32>,
    /// IFLA_GRO_MAX_SIZE.
    pub gro_max_size: Option<u32>,
    /// IFLA_GSO_IPV4_MAX_SIZE.
    pub gso_ipv4_max_size: Option<u32>,
    /// IFLA_GRO_IPV4_MAX_SIZE.
    pub gro_ipv4_max_size: Option<u32>,
    /// IFLA_TSO_MAX_SIZE: the driver's bound on GSO sizes.
    pub tso_max_size: Option<u32>,
    /// TX queues.
    pub tx_queues: Option<u32>,
    /// RX queues.
    pub rx_queues: Option<u32>,
    /// The root qdisc.
    pub qdisc: Option<String>,
    /// Summary of the offloads that matter (from `features`).
    pub offloads: Offloads,
    /// Every ethtool feature by kernel name.
    pub features: Known<BTreeMap<String, Feature>>,
    /// Ring sizes.
    pub rings: Known<Rings>,
    /// Channel counts.
    pub channels: Known<Channels>,
    /// Driver private flags (empty when the driver has none).
    pub private_flags: Known<BTreeMap<String, bool>>,
    /// Timestamping capabilities (`ethtool -T`).
    #[serde(default = "not_read_yet")]
    pub timestamping: Known<Timestamping>,
    /// Addresses in CIDR form.
    pub addresses: Vec<String>,
    /// The bond or bridge this device is enslaved to.
    pub master: Option<String>,
    /// Devices enslaved to this one.
    pub slaves: Vec<String>,
    /// The lower device (vlan, macvlan, vxlan underlay), when in this namespace.
    pub lower: Option<String>,
    /// Bond settings, for bonds.
    pub bond: Option<Bond>,
    /// VXLAN settings, for vxlan devices.
    pub vxlan: Option<Vxlan>,
}

/// The offloads that decide bulk throughput; None when not reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Offloads {
    /// TCP segmentation offload (tx-tcp-segmentation).
    pub tso: Option<bool>,
    /// Generic segmentation offload (tx-generic-segmentation).
    pub gso: Option<bool>,
    /// Generic receive offload (rx-gro).
    pub gro: Option<bool>,
    /// Large receive offload (rx-lro).
    pub lro: Option<bool>,
    /// RX checksumming (rx-checksum).
    pub rx_checksum: Option<bool>,
    /// TX checksumming (any tx-checksum-*).
    pub tx_checksum: Option<bool>,
}

/// Bond settings (sysfs and /proc/net/bonding).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bond {
    /// Mode name: balance-rr, active-backup, balance-xor, 802.3ad, ...
    pub mode: String,
    /// xmit_hash_policy name: layer2, layer2+3, layer3+4, encap2+3, encap3+4, vlan+srcmac.
    pub xmit_hash_policy: String,
    /// MII polling interval in ms.
    pub miimon: Option<u32>,
    /// Slaves and their state.
    pub slaves: Vec<BondSlave>,
}

/// One bond slave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BondSlave {
    /// Device name.
    pub name: String,
    /// MII status (up/down).
    pub mii_status: String,
    /// Speed in Mbit/s, when reported.
    pub speed_mbps: Option<u32>,
}

/// VXLAN settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vxlan {
    /// VNI.
    pub id: Option<u32>,
    /// UDP destination port.
    pub port: Option<u16>,
    /// Local tunnel address.
    pub local: Option<String>,
    /// Remote or multicast group address.
    pub remote: Option<String>,
    /// The underlay device.
    pub underlay: Option<String>,
}

/// One route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// 4 or 6.
    pub family: u8,
    /// Routing table id (254 = main).
    pub table: u32,
    /// Destination in CIDR form, or "default".
    pub dst: String,
    /// Output device (single-path routes).
    pub dev: Option<String>,
    /// Gateway.
    pub gateway: Option<String>,
    /// Preferred source address.
    pub src: Option<String>,
    /// Route metric.
    pub metric: Option<u32>,
    /// Next hops of a multipath route (empty otherwise).
    pub nexthops: Vec<NextHop>,
}

/// One next hop of a multipath route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextHop {
    /// Output device.
    pub dev: Option<String>,
    /// Gateway.
    pub gateway: Option<String>,
    /// Weight (hops + 1).
    pub weight: u32,
}

/// One policy routing rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// 4 or 6.
    pub family: u8,
    /// Priority.
    pub priority: u32,
    /// Source selector (CIDR).
    pub src: Option<String>,
    /// Destination selector (CIDR).
    pub dst: Option<String>,
    /// Input interface.
    pub iif: Option<String>,
    /// Output interface.
    pub oif: Option<String>,
    /// Table looked up.
    pub table: u32,
}

/// Where traffic from one local address goes out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Egress {
    /// The local address.
    pub address: String,
    /// The device that holds it.
    pub dev: String,
    /// The device the kernel sends from it by, toward its own subnet.
    pub leaves_by: Option<String>,
}

impl Link {
    /// A link with nothing read yet: every optional field empty, every
    /// ethtool value unknown.
    pub fn new(index: u32, name: &str, kind: &str) -> Link {
        fn not_read<T>() -> Known<T> {
            Known::unknown("not read")
        }
        Link {
            index,
            name: name.into(),
            kind: kind.into(),
            driver: not_read(),
            state: "UNKNOWN".into(),
            up: false,
            speed_mbps: not_read(),
            mtu: 0,
            max_mtu: None,
            gso_max_size: None,
            gro_max_size: None,
            gso_ipv4_max_size: None,
            gro_ipv4_max_size: None,
            tso_max_size: None,
            tx_queues: None,
            rx_queues: None,
            qdisc: None,
            offloads: Offloads::default(),
            features: not_read(),
            rings: not_read(),
            channels: not_read(),
            private_flags: not_read(),
            timestamping: not_read(),
            addresses: Vec::new(),
            master: None,
            slaves: Vec::new(),
            lower: None,
            bond: None,
            vxlan: None,
        }
    }
}

impl Snapshot {
    /// The link of that name.
    pub fn link(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }

    /// A sysctl's value, if read.
    pub fn sysctl(&self, key: &str) -> Option<&str> {
        self.sysctls
            .get(key)
            .and_then(|k| k.get())
            .map(|s| s.as_str())
    }

    /// Whether a sysctl can be written here.
    pub fn writable(&self, key: &str) -> bool {
        !self.sysctl_readonly.iter().any(|k| k == key)
    }

    /// A sysctl as whitespace-separated integers (tcp_rmem's three values).
    pub fn sysctl_ints(&self, key: &str) -> Option<Vec<u64>> {
        self.sysctl(key)?
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect()
    }
}

fn not_read_yet<T>() -> Known<T> {
    Known::unknown("not read")
}

/// A device's timestamping capabilities, as `ethtool -T` shows them (the
/// ethtool netlink TSINFO message): kernel names of the bits set.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Timestamping {
    /// SOF_TIMESTAMPING_* capabilities, e.g. `software-transmit`,
    /// `software-receive`, `software-system-clock`, `hardware-transmit`,
    /// `hardware-receive`, `hardware-raw-clock`.
    pub capabilities: Vec<String>,
    /// Hardware transmit timestamp modes (HWTSTAMP_TX_*: `off`, `on`...).
    pub tx_types: Vec<String>,
    /// Hardware receive filters (HWTSTAMP_FILTER_*: `none`, `all`...).
    pub rx_filters: Vec<String>,
    /// The PTP hardware clock (/dev/ptpN), when the device has one.
    pub phc_index: Option<u32>,
}

impl Timestamping {
    /// The device stamps packets in hardware both ways, on a clock of its
    /// own (what a hardware breakdown would need).
    pub fn hardware(&self) -> bool {
        [
            "hardware-transmit",
            "hardware-receive",
            "hardware-raw-clock",
        ]
        .iter()
        .all(|c| self.capabilities.iter().any(|h| h == c))
    }

    /// The kernel stamps the device's packets in software both ways.
    pub fn software(&self) -> bool {
        ["software-transmit", "software-receive"]
            .iter()
            .all(|c| self.capabilities.iter().any(|h| h == c))
    }

    /// "hardware", "software" or "none": the best clock the device offers.
    pub fn best(&self) -> &'static str {
        if self.hardware() {
            "hardware"
        } else if self.software() {
            "software"
        } else {
            "none"
        }
    }
}

/// A feature as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Active now.
    pub on: bool,
    /// The driver does not let the user change it.
    pub fixed: bool,
}

/// Ring sizes: current and maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Rings {
    /// RX ring entries.
    pub rx: u32,
    /// Largest RX ring.
    pub rx_max: u32,
    /// TX ring entries.
    pub tx: u32,
    /// Largest TX ring.
    pub tx_max: u32,
}

/// Channel (queue) counts: current and maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Channels {
    /// RX-only channels.
    pub rx: u32,
    /// TX-only channels.
    pub tx: u32,
    /// Combined channels.
    pub combined: u32,
    /// Largest RX count.
    pub rx_max: u32,
    /// Largest TX count.
    pub tx_max: u32,
    /// Largest combined count.
    pub combined_max: u32,
}
