//! The vocabulary of explain: the thresholds its rules use, what the
//! caller knows about a path ([`Facts`]), the bottlenecks it names with
//! their evidence, the explanation of one result and of many, and the
//! small helpers every rule shares (explain's TCP rules and explain_udp's
//! UDP ones both build on this module, not on each other).

use crate::ceilings::Ceilings;
use serde::{Deserialize, Serialize};
use wirespeed_types::result::CpuUsage;

/// A core this busy (%) or more is the limit of its side.
pub const CPU_BUSY_PCT: f64 = 90.0;
/// With per-thread figures, the busiest worker must use this much (% of a
/// core) for a busy core to count against the test.
pub const BUSY_THREAD_MIN: f64 = 25.0;
/// At or above this fraction of a ceiling, the ceiling is reached.
pub const AT_CAP: f64 = 0.9;
/// Above this fraction of a ceiling, the ceiling does not hold: no rule
/// blames it, and a note says so.
pub const ABOVE_CAP: f64 = 1.1;
/// Below this fraction of its cap a NIC counts as idle.
pub const IDLE: f64 = 0.5;
/// Retransmitted segments over segments sent at or above which loss is named.
pub const RETRANS_RATE: f64 = 0.001;
/// Fraction of the flows' time limited by a buffer at or above which it is named.
pub const BUFFER_LIMITED: f64 = 0.2;
/// Weakest path over strongest below which paths are uneven.
pub const PATH_BALANCE_MIN: f64 = 0.7;
/// Jain's index over the flows of one path below which they are uneven.
pub const FAIRNESS_MIN: f64 = 0.8;

/// What the caller knows about the path that the result cannot show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// Encapsulation on the path, e.g. `vxlan`, `ipip`, `wireguard`.
    pub encapsulation: Option<String>,
    /// Cap of each path (NIC), bits per second, when known apart from the profile.
    pub path_cap_bps: Option<f64>,
}

/// One named number a finding rests on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What it is, e.g. `client_max_core_pct`.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its unit: `bit/s`, `%`, `bytes`, `us`, `flows`, `segments`, ...
    pub unit: String,
}

/// The kinds of bottleneck the rules name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BottleneckKind {
    /// A core of the sending side at >= 90%.
    SenderCpu,
    /// A core of the receiving side at >= 90%.
    ReceiverCpu,
    /// A core at >= 90% where each side both sends and receives (bidir, rr, crr).
    CpuCore,
    /// Every NIC at its cap: the NICs are the limit.
    NicCap,
    /// One NIC at its cap while another idles.
    NicImbalance,
    /// The VM's network bandwidth reached.
    VmCap,
    /// The per-flow cap binds: too few flows.
    PerFlowCap,
    /// Loss: retransmits above 0.1% of segments.
    Retransmits,
    /// Flows or traffic spread unevenly over paths or hashed links.
    HashImbalance,
    /// Socket buffers too small for the RTT.
    SmallBuffers,
    /// Encapsulation on the path.
    Encapsulation,
    /// UDP: datagrams lost (>= 1% of those sent), with where they were lost.
    DatagramLoss,
    /// UDP: a busy side sent or received without GSO/GRO.
    UdpNoOffload,
    /// rr with `--breakdown`: one segment takes most of the tail's round trip.
    LatencySegment,
}

impl BottleneckKind {
    /// The kind's name as in JSON, e.g. `sender_cpu`.
    pub fn name(self) -> &'static str {
        match self {
            BottleneckKind::SenderCpu => "sender_cpu",
            BottleneckKind::ReceiverCpu => "receiver_cpu",
            BottleneckKind::CpuCore => "cpu_core",
            BottleneckKind::NicCap => "nic_cap",
            BottleneckKind::NicImbalance => "nic_imbalance",
            BottleneckKind::VmCap => "vm_cap",
            BottleneckKind::PerFlowCap => "per_flow_cap",
            BottleneckKind::Retransmits => "retransmits",
            BottleneckKind::HashImbalance => "hash_imbalance",
            BottleneckKind::SmallBuffers => "small_buffers",
            BottleneckKind::Encapsulation => "encapsulation",
            BottleneckKind::DatagramLoss => "datagram_loss",
            BottleneckKind::UdpNoOffload => "udp_no_offload",
            BottleneckKind::LatencySegment => "latency_segment",
        }
    }
}

/// One finding: its kind, the numbers it rests on, and what it means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    /// The kind.
    pub kind: BottleneckKind,
    /// The numbers, named.
    pub evidence: Vec<Evidence>,
    /// What it means and what to do.
    pub message: String,
}

/// The measured rate as a percentage of one ceiling.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PercentOf {
    /// Which ceiling, e.g. `per_vm_one_way` or `per_nic path 0 (a=b)`.
    pub ceiling: String,
    /// The ceiling, bits per second.
    pub ceiling_bps: f64,
    /// What was measured against it, bits per second.
    pub measured_bps: f64,
    /// measured / ceiling x 100.
    pub percent: f64,
}

/// A result set against the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// See [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The faster direction's goodput, bits per second.
    pub measured_one_way_bps: f64,
    /// Goodput of both directions, bits per second.
    pub measured_both_ways_bps: f64,
    /// Measured as % of each known ceiling.
    pub percent_of: Vec<PercentOf>,
    /// What limits the result, each with its evidence.
    pub bottlenecks: Vec<Bottleneck>,
    /// One line: the findings, or that none was found.
    pub summary: String,
    /// Caveats, e.g. a measurement above a ceiling (the profile's figure does not hold).
    pub notes: Vec<String>,
}

/// One result with the ceilings it was set against and its explanation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplainedResult {
    /// The result's one-line heading (workload, server, flows, paths).
    pub heading: String,
    /// The ceilings used, when a profile was given.
    pub ceilings: Option<Ceilings>,
    /// The explanation.
    pub explanation: Explanation,
}

/// What `wirespeed explain --json` prints: one entry per result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplainReport {
    /// See [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The results, in file order.
    pub explanations: Vec<ExplainedResult>,
}

pub(crate) fn ev(name: impl Into<String>, value: f64, unit: &str) -> Evidence {
    Evidence {
        name: name.into(),
        value: wirespeed_types::result::finite(value),
        unit: unit.to_string(),
    }
}

/// Whether a side ran out of CPU: a core >= [`CPU_BUSY_PCT`] busy, and
/// (where per-thread figures exist) a worker on it >= [`BUSY_THREAD_MIN`]:
/// a busy core that none of the workers is on much is someone else's.
pub(crate) fn busy(cpu: &CpuUsage) -> bool {
    cpu.max_core_pct >= CPU_BUSY_PCT
        && (cpu.per_thread_pct.is_empty() || busiest_thread(cpu) >= BUSY_THREAD_MIN)
}

/// The busiest worker thread's CPU, % of one core (0 without figures).
pub(crate) fn busiest_thread(cpu: &CpuUsage) -> f64 {
    cpu.per_thread_pct.iter().cloned().fold(0.0, f64::max)
}
