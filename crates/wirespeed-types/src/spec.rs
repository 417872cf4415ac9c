//! What a test is: the workload, its sizes, threads x flows x paths and the
//! socket knobs. A `TestSpec` crosses the wire, so both sides derive the same
//! flow roster from it.

use crate::error::Invalid;
pub use crate::units::{
    MAX_DURATION_S, MAX_RATE_BPS, MAX_SIZE, MIN_PACING_BPS, parse_cpus, parse_duration, parse_rate,
    parse_size, parse_sizes,
};
use serde::{Deserialize, Serialize};

/// The traffic pattern of a test. What each one is (its name, socket type,
/// the figure it is judged by) is in one table, [`WORKLOADS`]; the engine's
/// registry adds its flow constructors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Workload {
    /// Bulk TCP.
    #[serde(rename = "stream")]
    Stream,
    /// Request/response on persistent connections.
    #[serde(rename = "rr")]
    Rr,
    /// Connect, request, response, close.
    #[serde(rename = "crr")]
    Crr,
    /// Bulk UDP: numbered datagrams, paced to a rate or unlimited.
    #[serde(rename = "udp-stream")]
    UdpStream,
    /// Request/response over UDP, one datagram each way.
    #[serde(rename = "udp-rr")]
    UdpRr,
}

/// The socket type a workload's flows use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SocketType {
    /// SOCK_STREAM.
    Tcp,
    /// SOCK_DGRAM.
    Udp,
}

/// What a workload is, for everything that is not the data plane: the
/// CLI's `-w` values, renderers and experiment metrics read this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadInfo {
    /// The workload.
    pub workload: Workload,
    /// Its name on the command line and in JSON, e.g. `udp-stream`.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// TCP or UDP.
    pub socket: SocketType,
    /// Judged by transactions/s and latency (else by goodput, with a
    /// direction).
    pub transactional: bool,
}

/// Every workload, in the order `--help` lists them.
pub const WORKLOADS: &[WorkloadInfo] = &[
    WorkloadInfo {
        workload: Workload::Stream,
        name: "stream",
        about: "bulk TCP",
        socket: SocketType::Tcp,
        transactional: false,
    },
    WorkloadInfo {
        workload: Workload::Rr,
        name: "rr",
        about: "TCP request/response",
        socket: SocketType::Tcp,
        transactional: true,
    },
    WorkloadInfo {
        workload: Workload::Crr,
        name: "crr",
        about: "TCP connect/request/response/close",
        socket: SocketType::Tcp,
        transactional: true,
    },
    WorkloadInfo {
        workload: Workload::UdpStream,
        name: "udp-stream",
        about: "bulk UDP (loss, reordering, jitter)",
        socket: SocketType::Udp,
        transactional: false,
    },
    WorkloadInfo {
        workload: Workload::UdpRr,
        name: "udp-rr",
        about: "UDP request/response with a per-request timeout",
        socket: SocketType::Udp,
        transactional: true,
    },
];

impl Workload {
    /// Its row of [`WORKLOADS`].
    pub fn info(self) -> &'static WorkloadInfo {
        WORKLOADS
            .iter()
            .find(|i| i.workload == self)
            .expect("every workload has a row in WORKLOADS")
    }

    /// Its name, e.g. `udp-stream`.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The workload named `name`.
    pub fn from_name(name: &str) -> Option<Workload> {
        WORKLOADS
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.workload)
    }

    /// Every workload's name, for a CLI's value list.
    pub fn names() -> Vec<&'static str> {
        WORKLOADS.iter().map(|i| i.name).collect()
    }

    /// Moves bulk data one way or both (stream, udp-stream).
    pub fn is_bulk(self) -> bool {
        !self.info().transactional
    }

    /// Runs over UDP.
    pub fn is_udp(self) -> bool {
        self.info().socket == SocketType::Udp
    }
}

/// Which way bulk data flows in a stream test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The client sends.
    Forward,
    /// The server sends.
    Reverse,
    /// Both send, each direction on its own flows.
    Bidir,
}

impl Direction {
    /// Every direction, in the order the CLI lists them.
    pub const ALL: [Direction; 3] = [Direction::Forward, Direction::Reverse, Direction::Bidir];

    /// The name a user types (`--direction NAME`) and JSON carries.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
            Direction::Bidir => "bidir",
        }
    }
}

/// One (local, remote) pair that flows are striped over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathSpec {
    /// Local address to bind, or a device name for SO_BINDTODEVICE; None = any.
    pub local: Option<String>,
    /// Remote address data connections go to.
    pub remote: String,
}

impl PathSpec {
    /// Parses `LOCAL=REMOTE` or a bare `REMOTE`.
    pub fn parse(s: &str) -> Result<PathSpec, Invalid> {
        let s = s.trim();
        let (local, remote) = match s.split_once('=') {
            Some((l, r)) => (Some(l.trim().to_string()), r.trim().to_string()),
            None => (None, s.to_string()),
        };
        if remote.is_empty() || local.as_deref() == Some("") {
            return Err(Invalid(format!(
                "bad path {s:?}: expected LOCAL=REMOTE (LOCAL an address or device name), e.g. 10.0.0.1=10.0.0.2"
            )));
        }
        Ok(PathSpec { local, remote })
    }

    /// The path as `LOCAL=REMOTE` text.
    pub fn label(&self) -> String {
        match &self.local {
            Some(l) => format!("{l}={}", self.remote),
            None => format!("*={}", self.remote),
        }
    }
}

/// Parses a comma list of paths.
pub fn parse_paths(s: &str) -> Result<Vec<PathSpec>, Invalid> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(PathSpec::parse)
        .collect()
}

/// Everything both sides need to run one test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    /// The workload.
    pub workload: Workload,
    /// Stream direction (ignored by rr and crr).
    pub direction: Direction,
    /// Seconds measured.
    pub duration_s: f64,
    /// Seconds of traffic before measuring starts.
    pub warmup_s: f64,
    /// Worker threads per side.
    pub threads: u32,
    /// Flows per direction (stream, udp-stream) or concurrent transactions
    /// (rr, crr, udp-rr).
    pub flows: u32,
    /// Paths flows are striped over, round-robin.
    pub paths: Vec<PathSpec>,
    /// Bytes per send/recv call in stream tests; the datagram size
    /// (payload, header included) in udp-stream.
    pub msg_size: u32,
    /// Request size in bytes (rr, crr).
    pub request_size: u32,
    /// Response size in bytes (rr, crr).
    pub response_size: u32,
    /// SO_SNDBUF to set, bytes.
    pub sndbuf: Option<u32>,
    /// SO_RCVBUF to set, bytes.
    pub rcvbuf: Option<u32>,
    /// Congestion control to set on every flow.
    pub congestion: Option<String>,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// MSG_ZEROCOPY on sends.
    pub zerocopy: bool,
    /// Receive with MSG_TRUNC: the kernel discards instead of copying.
    pub skip_rx_copy: bool,
    /// SO_MAX_PACING_RATE per flow, bits per second.
    pub pacing_bps: Option<u64>,
    /// CPUs the client's workers are pinned to, round-robin.
    pub client_cpus: Vec<usize>,
    /// CPUs the server's workers are pinned to, round-robin.
    pub server_cpus: Vec<usize>,
    /// Interval between progress samples, seconds (0 = none).
    pub interval_s: f64,
    /// Run a 1-byte request/response probe flow beside a stream test.
    pub probe_rr: bool,
    /// udp-stream: target rate per flow, bits per second, evenly paced;
    /// None = as fast as the socket takes datagrams.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// udp-stream: send with UDP GSO (UDP_SEGMENT) where the kernel has it.
    #[serde(default = "yes")]
    pub udp_gso: bool,
    /// udp-stream: receive with UDP GRO (UDP_GRO) where the kernel has it.
    #[serde(default = "yes")]
    pub udp_gro: bool,
    /// udp-rr: how long a request waits for its response before it counts
    /// as a lost transaction and the next one is sent, seconds.
    #[serde(default = "default_rr_timeout")]
    pub rr_timeout_s: f64,
    /// End the test once the client has moved this many bytes in the
    /// measured window (iperf3's -n/-k; for request/response workloads
    /// requests and responses both count, so a count of transactions is
    /// N x (request + response)); `duration_s` is then the upper bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// IP TOS byte (IPV6_TCLASS on IPv6) set on every data socket, both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
    /// TCP workloads over MPTCP sockets (IPPROTO_MPTCP), both sides.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mptcp: bool,
    /// stream: the sender sends with sendfile(2) from an in-memory file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sendfile: bool,
    /// UDP workloads: set the IPv4 Don't Fragment bit (IP_PMTUDISC_DO).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dont_fragment: bool,
    /// The client binds flow N's data socket to this port + N (iperf3's
    /// --cport); the server ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_port: Option<u16>,
    /// rr: timestamp every transaction on both sides and report where the
    /// round trip is spent (`--breakdown`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub breakdown: bool,
    /// stream: the receiver maps received pages into its address space
    /// (TCP_ZEROCOPY_RECEIVE) instead of copying them, and copies only
    /// what the kernel cannot map.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rx_zerocopy: bool,
    /// Busy polling on every data socket (SO_BUSY_POLL, microseconds, with
    /// SO_PREFER_BUSY_POLL) and on each worker's epoll instance
    /// (EPIOCSPARAMS), both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_us: Option<u32>,
    /// The I/O engine both sides' workers ask for (`--io`); a worker whose
    /// kernel refuses io_uring runs epoll and says why in its notes.
    /// Absent (epoll) in the specs of older peers.
    #[serde(default, skip_serializing_if = "IoEngine::is_epoll")]
    pub io: IoEngine,
}

/// How a worker thread drives its sockets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// One epoll instance per worker, non-blocking send/recv (the default).
    #[default]
    Epoll,
    /// One io_uring per worker: several sends in flight per flow,
    /// multishot receive into provided buffers, batched submissions.
    Uring,
}

impl IoEngine {
    /// Every engine, in the order the CLI lists them.
    pub const ALL: [IoEngine; 2] = [IoEngine::Epoll, IoEngine::Uring];

    /// The name a user types (`--io NAME`) and reports print.
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Epoll => "epoll",
            IoEngine::Uring => "uring",
        }
    }

    /// The engine named `s` (`epoll` or `uring`).
    pub fn from_name(s: &str) -> Option<IoEngine> {
        IoEngine::ALL.into_iter().find(|e| e.name() == s)
    }

    /// Whether this is epoll (serde skips the default).
    pub fn is_epoll(&self) -> bool {
        *self == IoEngine::Epoll
    }
}

fn yes() -> bool {
    true
}

fn default_rr_timeout() -> f64 {
    DEFAULT_RR_TIMEOUT_S
}

/// The default per-request timeout of udp-rr, seconds.
pub const DEFAULT_RR_TIMEOUT_S: f64 = 0.2;

/// The longest busy poll `--busy-poll` takes, microseconds: past a
/// millisecond a spinning receiver only burns the CPU its peer needs.
pub const MAX_BUSY_POLL_US: u32 = 1000;

/// Bytes of wirespeed's header at the start of every UDP datagram (and of
/// every GSO segment): the smallest datagram a UDP workload sends.
pub const UDP_HEADER_LEN: u32 = 28;

/// The largest UDP payload (IPv4's limit, the smaller of the two families).
pub const MAX_DATAGRAM: u32 = 65507;

/// The default datagram size of UDP workloads: fits a 1500-byte MTU with
/// IPv6, and a VXLAN overlay's 1450.
pub const DEFAULT_DATAGRAM: u32 = 1400;

impl Default for TestSpec {
    fn default() -> Self {
        TestSpec {
            workload: Workload::Stream,
            direction: Direction::Forward,
            duration_s: 10.0,
            warmup_s: 1.0,
            threads: 1,
            flows: 1,
            paths: Vec::new(),
            msg_size: 512 * 1024,
            request_size: 1,
            response_size: 1,
            sndbuf: None,
            rcvbuf: None,
            congestion: None,
            nodelay: false,
            zerocopy: false,
            skip_rx_copy: false,
            pacing_bps: None,
            client_cpus: Vec::new(),
            server_cpus: Vec::new(),
            interval_s: 0.0,
            probe_rr: false,
            rate_bps: None,
            udp_gso: true,
            udp_gro: true,
            rr_timeout_s: DEFAULT_RR_TIMEOUT_S,
            bytes: None,
            tos: None,
            mptcp: false,
            sendfile: false,
            dont_fragment: false,
            client_port: None,
            breakdown: false,
            rx_zerocopy: false,
            busy_poll_us: None,
            io: IoEngine::Epoll,
        }
    }
}

/// The server's bounds on what a client may ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Longest warm-up plus duration, seconds.
    pub max_duration_s: f64,
    /// Most flows (connections) in one test.
    pub max_flows: u32,
    /// Most worker threads in one test.
    pub max_threads: u32,
    /// Largest message, request or response, bytes.
    pub max_msg_size: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_duration_s: 3600.0,
            max_flows: 20_000,
            max_threads: 256,
            max_msg_size: 64 << 20,
        }
    }
}

/// The role of one flow in the roster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// Client sends bulk data.
    Forward,
    /// Server sends bulk data.
    Reverse,
    /// Request/response.
    Rr,
    /// Connect/request/response slot.
    Crr,
    /// 1-byte request/response probe beside a stream test.
    Probe,
}

impl FlowKind {
    /// Its name in JSON and tables: `forward`, `reverse`, `rr`, `crr`, `probe`.
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Forward => "forward",
            FlowKind::Reverse => "reverse",
            FlowKind::Rr => "rr",
            FlowKind::Crr => "crr",
            FlowKind::Probe => "probe",
        }
    }
}

/// One flow as both sides plan it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowPlan {
    /// Index in the roster; the wire identifies a flow by it.
    pub id: u32,
    /// Index into `TestSpec::paths` (or 0 with no paths).
    pub path: u32,
    /// Worker thread owning it; the probe gets a thread of its own.
    pub thread: u32,
    /// Its role.
    pub kind: FlowKind,
}

impl TestSpec {
    /// Checks the spec against hard sanity bounds and the server's limits.
    pub fn validate(&self, limits: &Limits) -> Result<(), Invalid> {
        let bad = |m: String| Err(Invalid(m));
        if !(self.duration_s.is_finite() && self.duration_s > 0.0) {
            return bad(format!("duration must be > 0 s, got {}", self.duration_s));
        }
        if !(self.warmup_s.is_finite() && self.warmup_s >= 0.0) {
            return bad(format!("warmup must be >= 0 s, got {}", self.warmup_s));
        }
        if !(self.interval_s.is_finite() && self.interval_s >= 0.0) {
            return bad(format!("interval must be >= 0 s, got {}", self.interval_s));
        }
        if self.duration_s + self.warmup_s > MAX_DURATION_S || self.interval_s > MAX_DURATION_S {
            return bad(format!(
                "warmup, duration and interval must each be at most {MAX_DURATION_S} s (365 days)"
            ));
        }
        if self.duration_s + self.warmup_s > limits.max_duration_s {
            return bad(format!(
                "warmup + duration {} s exceeds the server's limit of {} s",
                self.duration_s + self.warmup_s,
                limits.max_duration_s
            ));
        }
        if self.threads == 0 || self.flows == 0 {
            return bad("threads and flows must be at least 1".into());
        }
        if self.threads > limits.max_threads {
            return bad(format!(
                "{} threads exceed the limit of {}",
                self.threads, limits.max_threads
            ));
        }
        if self.connections() > limits.max_flows as u64 {
            return bad(format!(
                "{} connections exceed the limit of {} flows",
                self.connections(),
                limits.max_flows
            ));
        }
        for (what, v) in [
            ("message size", self.msg_size),
            ("request size", self.request_size),
            ("response size", self.response_size),
        ] {
            if v == 0 || v > limits.max_msg_size {
                return bad(format!(
                    "{what} {v} must be between 1 and {} bytes",
                    limits.max_msg_size
                ));
            }
        }
        if let Some(cc) = &self.congestion
            && (cc.is_empty()
                || cc.len() > 15
                || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            return bad(format!("bad congestion control name {cc:?}"));
        }
        if let Some(p) = self.pacing_bps
            && p < MIN_PACING_BPS
        {
            return bad(format!(
                "pacing of {p} bit/s is below {MIN_PACING_BPS} bit/s (1 byte/s), the lowest rate the kernel paces at; leave pacing out for none"
            ));
        }
        if self.workload.is_udp() {
            self.validate_udp()?;
        }
        self.validate_iperf3_knobs()?;
        self.validate_copy_knobs()?;
        self.validate_io()?;
        if self.paths.len() > 4096 {
            return bad(format!(
                "{} paths are too many (max 4096)",
                self.paths.len()
            ));
        }
        Ok(())
    }

    /// The rules only UDP workloads have: datagram sizes between the
    /// header and the largest UDP payload, a sane rate and timeout.
    /// `--rx-zerocopy` and `--busy-poll`.
    fn validate_copy_knobs(&self) -> Result<(), Invalid> {
        let bad = |m: String| Err(Invalid(m));
        if self.rx_zerocopy {
            if self.workload != Workload::Stream {
                return bad(format!(
                    "--rx-zerocopy covers the stream workload only (not {})",
                    self.workload.name()
                ));
            }
            if self.skip_rx_copy {
                return bad(
                    "--rx-zerocopy and --skip-rx-copy both replace the receive copy; choose one"
                        .into(),
                );
            }
            if self.mptcp {
                return bad(
                    "--rx-zerocopy needs TCP sockets: MPTCP sockets cannot be mapped".into(),
                );
            }
        }
        if let Some(us) = self.busy_poll_us
            && !(1..=MAX_BUSY_POLL_US).contains(&us)
        {
            return bad(format!(
                "busy poll of {us} us must be between 1 and {MAX_BUSY_POLL_US} us"
            ));
        }
        Ok(())
    }

    /// What the io_uring path (`--io uring`) covers: stream, rr and
    /// udp-stream with plain sends and receives; the rest is refused here
    /// rather than run on epoll behind the user's back.
    fn validate_io(&self) -> Result<(), Invalid> {
        if self.io != IoEngine::Uring {
            return Ok(());
        }
        let refuse = |what: &str| {
            Err(Invalid(format!(
                "--io uring does not cover {what} yet; leave --io out (epoll) for it"
            )))
        };
        match self.workload {
            Workload::Stream | Workload::Rr | Workload::UdpStream => {}
            w => return refuse(&format!("the {} workload", w.name())),
        }
        for (on, what) in [
            (self.breakdown, "--breakdown"),
            (self.rx_zerocopy, "--rx-zerocopy"),
            (self.zerocopy, "--zerocopy"),
            (self.sendfile, "--sendfile"),
            (self.skip_rx_copy, "--skip-rx-copy"),
            (self.rate_bps.is_some(), "paced UDP (--rate)"),
            (self.busy_poll_us.is_some(), "--busy-poll"),
        ] {
            if on {
                return refuse(what);
            }
        }
        Ok(())
    }

    fn validate_udp(&self) -> Result<(), Invalid> {
        let bad = |m: String| Err(Invalid(m));
        let sizes: &[(&str, u32)] = if self.workload.is_bulk() {
            &[("datagram size (-l)", self.msg_size)]
        } else {
            &[
                ("request size", self.request_size),
                ("response size", self.response_size),
            ]
        };
        for &(what, v) in sizes {
            if !(UDP_HEADER_LEN..=MAX_DATAGRAM).contains(&v) {
                return bad(format!(
                    "{what} {v} must be between {UDP_HEADER_LEN} (wirespeed's header) and {MAX_DATAGRAM} bytes for {}",
                    self.workload.name()
                ));
            }
        }
        if let Some(r) = self.rate_bps
            && r < MIN_PACING_BPS
        {
            return bad(format!(
                "a rate of {r} bit/s is below {MIN_PACING_BPS} bit/s; use 0 for unlimited"
            ));
        }
        if !(self.rr_timeout_s.is_finite() && (0.001..=60.0).contains(&self.rr_timeout_s)) {
            return bad(format!(
                "the request timeout must be between 1 ms and 60 s, got {} s",
                self.rr_timeout_s
            ));
        }
        if self.probe_rr {
            return bad("--probe-rr runs beside TCP stream tests only".into());
        }
        Ok(())
    }

    /// The knobs iperf3 users bring (-n, -m, -Z, --dont-fragment,
    /// --cport): each where it makes sense, a clear error elsewhere.
    fn validate_iperf3_knobs(&self) -> Result<(), Invalid> {
        let w = self.workload;
        let bad = |m: String| Err(Invalid(m));
        if self.bytes == Some(0) {
            return bad("a byte count (-n/-k) must be above 0".into());
        }
        if self.mptcp && w.is_udp() {
            return bad(format!("-m/--mptcp runs TCP workloads, not {}", w.name()));
        }
        if self.sendfile && w != Workload::Stream {
            return bad(format!(
                "-Z/--sendfile sends TCP stream data, not {}",
                w.name()
            ));
        }
        if self.sendfile && self.zerocopy {
            return bad("use either -Z/--sendfile or --zerocopy".into());
        }
        if self.dont_fragment && !w.is_udp() {
            return bad(
                "--dont-fragment sets DF on UDP datagrams; TCP sets it on every segment already"
                    .into(),
            );
        }
        if let Some(p) = self.client_port
            && (p == 0 || u32::from(p) + self.connections() as u32 > 65536)
        {
            return bad(format!(
                "--cport {p}: the {} flows take ports {p} up; they must fit below 65536 and start above 0",
                self.connections()
            ));
        }
        Ok(())
    }

    /// A one-line description: "stream forward, 4 flows, 2 threads, 10 s".
    pub fn summary(&self) -> String {
        let name = self.workload.name();
        let what = if self.workload.is_bulk() {
            format!("{name} {}", format!("{:?}", self.direction).to_lowercase())
        } else {
            format!("{name} {}/{} bytes", self.request_size, self.response_size)
        };
        let n = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        format!(
            "{what}, {}, {}, {}, {} s",
            n(u64::from(self.flows), "flow"),
            n(u64::from(self.threads), "thread"),
            n(self.paths.len().max(1) as u64, "path"),
            self.duration_s
        )
    }

    /// Persistent connections the test opens (crr slots count once).
    pub fn connections(&self) -> u64 {
        let per_dir = self.flows as u64;
        let main = if self.workload.is_bulk() && self.direction == Direction::Bidir {
            2 * per_dir
        } else {
            per_dir
        };
        main + u64::from(self.has_probe())
    }

    /// Whether a latency probe flow runs beside the main flows.
    pub fn has_probe(&self) -> bool {
        self.probe_rr && self.workload == Workload::Stream
    }

    /// Worker threads including the probe's own.
    pub fn total_threads(&self) -> u32 {
        self.threads.min(self.flows.max(1)) + u32::from(self.has_probe())
    }

    /// The flow roster both sides derive: ids, paths, threads and roles.
    pub fn roster(&self) -> Vec<FlowPlan> {
        let paths = self.paths.len().max(1) as u32;
        let threads = self.threads.min(self.flows.max(1)).max(1);
        let kinds: Vec<FlowKind> = match (self.workload, self.direction) {
            (Workload::Crr, _) => vec![FlowKind::Crr],
            (w, _) if !w.is_bulk() => vec![FlowKind::Rr],
            (_, Direction::Forward) => vec![FlowKind::Forward],
            (_, Direction::Reverse) => vec![FlowKind::Reverse],
            (_, Direction::Bidir) => vec![FlowKind::Forward, FlowKind::Reverse],
        };
        let mut out = Vec::with_capacity(self.connections() as usize);
        let mut id = 0u32;
        for i in 0..self.flows {
            for &kind in &kinds {
                out.push(FlowPlan {
                    id,
                    path: i % paths,
                    thread: i % threads,
                    kind,
                });
                id += 1;
            }
        }
        if self.has_probe() {
            out.push(FlowPlan {
                id,
                path: 0,
                thread: threads,
                kind: FlowKind::Probe,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse() {
        let p = parse_paths("10.0.0.1=10.0.0.2, eth1=10.0.1.2").unwrap();
        assert_eq!(p[1].local.as_deref(), Some("eth1"));
        assert_eq!(p[1].remote, "10.0.1.2");
        assert!(PathSpec::parse("=1.2.3.4").is_err());
        assert!(PathSpec::parse("a=").is_err());
    }

    #[test]
    fn roster_stripes_flows_over_paths_and_threads() {
        let spec = TestSpec {
            flows: 4,
            threads: 2,
            direction: Direction::Bidir,
            paths: parse_paths("a=b,c=d").unwrap(),
            probe_rr: true,
            ..TestSpec::default()
        };
        let r = spec.roster();
        assert_eq!(r.len(), 9);
        assert_eq!(spec.connections(), 9);
        assert_eq!(r.iter().filter(|f| f.kind == FlowKind::Reverse).count(), 4);
        assert_eq!(r.iter().filter(|f| f.path == 1).count(), 4);
        assert_eq!(r.last().unwrap().kind, FlowKind::Probe);
        assert_eq!(r.last().unwrap().thread, 2);
        assert!(r.iter().enumerate().all(|(i, f)| f.id == i as u32));
    }

    #[test]
    fn workloads_have_one_row_each_and_round_trip_by_name() {
        for i in WORKLOADS {
            assert_eq!(i.workload.info(), i);
            assert_eq!(Workload::from_name(i.name), Some(i.workload));
            let json = serde_json::to_string(&i.workload).unwrap();
            assert_eq!(json, format!("\"{}\"", i.name));
        }
        assert_eq!(Workload::from_name("udp"), None);
    }

    #[test]
    fn udp_specs_are_checked() {
        let lim = Limits::default();
        let udp = |f: fn(&mut TestSpec)| {
            let mut s = TestSpec {
                workload: Workload::UdpStream,
                msg_size: DEFAULT_DATAGRAM,
                ..TestSpec::default()
            };
            f(&mut s);
            s.validate(&lim)
        };
        assert!(udp(|_| {}).is_ok());
        assert!(udp(|s| s.msg_size = 65_508).is_err());
        assert!(udp(|s| s.msg_size = UDP_HEADER_LEN - 1).is_err());
        assert!(udp(|s| s.rr_timeout_s = 0.0).is_err());
        assert!(udp(|s| s.rate_bps = Some(1)).is_err());
        assert!(
            udp(|s| {
                s.workload = Workload::UdpRr;
                s.request_size = 10;
            })
            .is_err()
        );
        let s = TestSpec {
            workload: Workload::UdpStream,
            direction: Direction::Bidir,
            flows: 2,
            ..TestSpec::default()
        };
        assert_eq!(s.connections(), 4);
        assert!(!s.has_probe());
    }

    #[test]
    fn specs_of_older_versions_still_load() {
        let mut v = serde_json::to_value(TestSpec::default()).unwrap();
        for k in ["rate_bps", "udp_gso", "udp_gro", "rr_timeout_s"] {
            v.as_object_mut().unwrap().remove(k);
        }
        let s: TestSpec = serde_json::from_value(v).unwrap();
        assert_eq!(s, TestSpec::default());
    }

    #[test]
    fn rx_zerocopy_and_busy_poll_round_trip_and_are_checked() {
        let spec = TestSpec {
            rx_zerocopy: true,
            busy_poll_us: Some(50),
            ..TestSpec::default()
        };
        let back: TestSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        assert!(spec.validate(&Limits::default()).is_ok());
        // The server checks a client's spec the same way.
        for bad in [
            TestSpec {
                workload: Workload::Rr,
                ..spec.clone()
            },
            TestSpec {
                skip_rx_copy: true,
                ..spec.clone()
            },
            TestSpec {
                mptcp: true,
                ..spec.clone()
            },
            TestSpec {
                busy_poll_us: Some(0),
                ..spec.clone()
            },
            TestSpec {
                busy_poll_us: Some(MAX_BUSY_POLL_US + 1),
                ..spec.clone()
            },
        ] {
            assert!(bad.validate(&Limits::default()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn limits_are_enforced() {
        let lim = Limits {
            max_flows: 10,
            ..Limits::default()
        };
        let spec = TestSpec {
            flows: 11,
            ..TestSpec::default()
        };
        assert!(spec.validate(&lim).is_err());
        let spec = TestSpec {
            duration_s: f64::NAN,
            ..TestSpec::default()
        };
        assert!(spec.validate(&lim).is_err());
        assert!(TestSpec::default().validate(&lim).is_ok());
        // Whatever the server's limit, nothing Duration cannot hold.
        let spec = TestSpec {
            duration_s: 1e300,
            ..TestSpec::default()
        };
        let unbounded = Limits {
            max_duration_s: f64::INFINITY,
            ..Limits::default()
        };
        assert!(spec.validate(&unbounded).is_err());
        for (bps, ok) in [(0, false), (7, false), (8, true)] {
            let spec = TestSpec {
                pacing_bps: Some(bps),
                ..TestSpec::default()
            };
            assert_eq!(spec.validate(&lim).is_ok(), ok, "{bps}");
        }
    }
}
