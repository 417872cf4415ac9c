//! A cell: one test to run, typed. `wirespeed bench`'s flags are defined
//! here once ([`BenchArgs`]); the CLI parses them, and an experiment
//! builds each cell by layering argument lists through the same parser
//! ([`BenchArgs::layer`]): bench's defaults, then the runner's, then each
//! layer of the file, a later layer's flag replacing the same flag below.
//! Arguments are never merged by hand.

use crate::error::CellError;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches};
use serde::Serialize;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_engine::Family;
use wirespeed_engine::{ClientConfig, Reach};
use wirespeed_types::spec::{
    DEFAULT_DATAGRAM, IoEngine, UDP_HEADER_LEN, WORKLOADS, parse_cpus, parse_duration, parse_paths,
    parse_rate, parse_size, parse_sizes,
};
use wirespeed_types::{Direction, Invalid, TestSpec, Workload};

/// The flags of `wirespeed bench` (all but the server and the model
/// options): the one definition the CLI and experiment cells parse with.
#[derive(clap::Args, Debug, Clone, PartialEq, Serialize)]
pub struct BenchArgs {
    /// Control port when HOST names none.
    #[arg(short, long, default_value_t = wirespeed_engine::DEFAULT_PORT)]
    pub port: u16,
    /// Workload (each is one row of the engine's registry).
    #[arg(short, long, default_value = "stream", value_parser = workload_parser())]
    pub workload: Workload,
    /// Short for --workload udp-stream (iperf3's -u).
    #[arg(short = 'u', long, conflicts_with = "workload")]
    pub udp: bool,
    /// Stream direction: forward (client sends), reverse, bidir.
    #[arg(long, default_value = "forward", value_parser = named(&Direction::ALL, Direction::name))]
    pub direction: Direction,
    /// Short for --direction reverse.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Short for --direction bidir.
    #[arg(long)]
    pub bidir: bool,
    /// Measured time, e.g. 10s (-t as in iperf3; a bare number is seconds).
    #[arg(value_parser = checked(parse_duration),
        short,
        long,
        short_alias = 't',
        visible_alias = "time",
        default_value = "10s"
    )]
    pub duration: String,
    /// End after this many bytes moved in the window instead of after a
    /// time (iperf3's -n), e.g. 1G; with rr/crr requests and responses
    /// both count.
    #[arg(value_parser = checked(parse_size), short = 'n', long, conflicts_with_all = ["duration", "blocks"])]
    pub bytes: Option<String>,
    /// End after this many messages (-l each) instead of after a time
    /// (iperf3's -k).
    #[arg(value_parser = checked(parse_size),
        short = 'k',
        long,
        visible_alias = "blockcount",
        conflicts_with = "duration"
    )]
    pub blocks: Option<String>,
    /// Traffic before measuring, excluded from figures (iperf3's -O/--omit).
    #[arg(value_parser = checked(parse_duration), short = 'O', long, visible_alias = "omit", default_value = "1s")]
    pub warmup: String,
    /// Worker threads per side (each one event loop).
    #[arg(short = 'T', long, default_value_t = 1)]
    pub threads: u32,
    /// Flows per direction (stream) or concurrent transactions (rr, crr).
    #[arg(
        short = 'F',
        long,
        visible_alias = "parallel",
        short_alias = 'P',
        default_value_t = 1
    )]
    pub flows: u32,
    /// A path LOCAL=REMOTE (LOCAL an address or device); repeat for several NICs.
    #[arg(value_parser = checked(parse_paths), long = "path")]
    pub path: Vec<String>,
    /// Comma list of paths, e.g. 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2.
    #[arg(value_parser = checked(parse_paths), long)]
    pub paths: Option<String>,
    /// Bytes per send/recv call in stream tests (default 512k); the
    /// datagram size in udp-stream (default 1400).
    #[arg(value_parser = checked(parse_size), short = 'l', long, visible_alias = "length")]
    pub msg_size: Option<String>,
    /// udp-stream: target rate per flow, evenly paced, e.g. 1gbit; 0 (the
    /// default) sends as fast as the socket takes datagrams.
    #[arg(short = 'b', long, visible_alias = "rate")]
    pub bitrate: Option<String>,
    /// udp-stream: send without UDP GSO (one datagram per send).
    #[arg(long)]
    pub no_gso: bool,
    /// udp-stream: receive without UDP GRO.
    #[arg(long)]
    pub no_gro: bool,
    /// udp-rr: how long a request waits for its answer before it counts as
    /// lost and the next one goes (default 200ms).
    #[arg(value_parser = checked(parse_duration), long)]
    pub rr_timeout: Option<String>,
    /// rr/crr request and response size; a comma list runs a sweep.
    #[arg(value_parser = checked(parse_sizes), short, long)]
    pub size: Option<String>,
    /// rr/crr request size.
    #[arg(value_parser = checked(parse_size), long)]
    pub request: Option<String>,
    /// rr/crr response size.
    #[arg(value_parser = checked(parse_size), long)]
    pub response: Option<String>,
    /// SO_SNDBUF and SO_RCVBUF both (iperf3's --window).
    #[arg(value_parser = checked(parse_size), long, visible_alias = "window")]
    pub socket_buffer: Option<String>,
    /// SO_SNDBUF.
    #[arg(value_parser = checked(parse_size), long)]
    pub sndbuf: Option<String>,
    /// SO_RCVBUF.
    #[arg(value_parser = checked(parse_size), long)]
    pub rcvbuf: Option<String>,
    /// Congestion control, e.g. cubic or bbr.
    #[arg(long, visible_alias = "cc")]
    pub congestion: Option<String>,
    /// Force TCP_NODELAY on (default: on for rr/crr, off for stream).
    #[arg(long, visible_alias = "no-delay", conflicts_with = "no_nodelay")]
    pub nodelay: bool,
    /// Force TCP_NODELAY off.
    #[arg(long)]
    pub no_nodelay: bool,
    /// Send with MSG_ZEROCOPY (the kernel copies anyway over loopback and veth).
    #[arg(long)]
    pub zerocopy: bool,
    /// Receive with MSG_TRUNC: the kernel discards data instead of copying
    /// it. Saves receiver CPU (about 20% per Gbit/s here); raises the rate
    /// only where the receiver's CPU is what limits it, not a sender-bound
    /// flow (docs/benchmarks.md, "skip-rx").
    #[arg(long)]
    pub skip_rx_copy: bool,
    /// stream: the receiver maps received pages (TCP_ZEROCOPY_RECEIVE)
    /// instead of copying them and reports, per flow, the fraction of bytes
    /// mapped. The kernel maps only whole pages: it needs an MSS that is a
    /// multiple of 4096 (on a NIC, header split) and, over veth and
    /// loopback, a --zerocopy sender (docs/benchmarks.md).
    #[arg(long)]
    pub rx_zerocopy: bool,
    /// Busy polling for USECS microseconds on every data socket
    /// (SO_BUSY_POLL; SO_PREFER_BUSY_POLL stays off) and on each worker's epoll
    /// instance (EPIOCSPARAMS), both sides; 1-1000. Raising it needs
    /// CAP_NET_ADMIN; it acts only on NICs with NAPI (veth: with GRO on).
    #[arg(long, value_name = "USECS")]
    pub busy_poll: Option<u32>,
    /// I/O engine of both sides' workers: epoll (the default) or uring
    /// (io_uring: several sends in flight per flow, multishot receive into
    /// provided buffers, batched submissions; stream, rr and unpaced
    /// udp-stream only). A side whose kernel refuses io_uring (the
    /// io_uring_disabled sysctl, a container's seccomp profile) runs epoll
    /// and says why in the notes.
    #[arg(long, value_name = "ENGINE", default_value = "epoll", value_parser = named(&IoEngine::ALL, IoEngine::name))]
    pub io: IoEngine,
    /// rr, crr, udp-rr: timestamp a sample of transactions on both sides
    /// (kernel software timestamps) and report where the round trip is
    /// spent (docs/latency.md).
    #[arg(long)]
    pub breakdown: bool,
    /// IP TOS byte on every flow, both sides, e.g. 0x10 (IPV6_TCLASS on IPv6).
    #[arg(short = 'S', long, conflicts_with = "dscp")]
    pub tos: Option<String>,
    /// DSCP on every flow: a number 0-63 or a name (ef, af11..af43, cs0..cs7).
    #[arg(long)]
    pub dscp: Option<String>,
    /// MPTCP sockets (IPPROTO_MPTCP) on both sides; needs net.mptcp.enabled=1.
    #[arg(short = 'm', long)]
    pub mptcp: bool,
    /// stream: send with sendfile(2) from an in-memory file (iperf3's -Z).
    #[arg(short = 'Z', long)]
    pub sendfile: bool,
    /// UDP: set the IPv4 Don't Fragment bit (and IPv6's no-fragment option).
    #[arg(long)]
    pub dont_fragment: bool,
    /// Pace each flow at this rate (SO_MAX_PACING_RATE), e.g. 2gbit.
    #[arg(value_parser = checked(parse_rate), long)]
    pub pacing: Option<String>,
    /// Pin client worker threads to these CPUs, e.g. 0,1 or 0-3.
    #[arg(value_parser = checked(parse_cpus), long)]
    pub pin: Option<String>,
    /// Pin server worker threads to these CPUs.
    #[arg(value_parser = checked(parse_cpus), long)]
    pub remote_pin: Option<String>,
    /// Interval reports, e.g. 1s.
    #[arg(value_parser = checked(parse_duration), short, long)]
    pub interval: Option<String>,
    /// Measure 1-byte request/response latency beside a stream test.
    #[arg(long)]
    pub probe_rr: bool,
    /// Output: table, json, kv (neper-style key=value) or iperf3-json (iperf3 -J's document).
    #[arg(long, default_value = "table", value_parser = format_parser())]
    pub format: wirespeed_report::Format,
    /// Short for --format json.
    #[arg(long)]
    pub json: bool,
    /// Show every flow in the table.
    #[arg(long)]
    pub per_flow: bool,
    /// Key file for a server started with --key-file.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Timeout for connecting and for each control answer as a whole.
    #[arg(value_parser = checked(parse_duration), long, default_value = "10s")]
    pub timeout: String,
    /// Timeout for each TCP connect alone, control and data; a bare
    /// number is milliseconds, as in iperf3.
    #[arg(long)]
    pub connect_timeout: Option<String>,
    /// IPv4 only.
    #[arg(short = '4', long, visible_alias = "version4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long, visible_alias = "version6")]
    pub ipv6: bool,
    /// Client address to send from (control and data; iperf3's -B).
    #[arg(short = 'B', long, conflicts_with_all = ["path", "paths"])]
    pub bind: Option<String>,
    /// Client data port: flow N binds PORT + N (iperf3's --cport).
    #[arg(long)]
    pub cport: Option<u16>,
    /// Run this request/response test beside K loaders on the same server
    /// (report 3's interference): one stream of K flows on K threads,
    /// started first. In an experiment, sweep it (`arg = "--loaders"`).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub loaders: u32,
    /// Lab hosts the --loaders run from, K spread over them in turn
    /// (experiments only; default: the cell's own client host).
    #[arg(long, value_name = "HOST,HOST,...")]
    pub loaders_from: Option<String>,
}

/// `-w`'s values: every workload's name, with its one-line description.
pub fn workload_parser() -> impl clap::builder::TypedValueParser<Value = Workload> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        WORKLOADS
            .iter()
            .map(|i| PossibleValue::new(i.name).help(i.about)),
    )
    .try_map(|s| Workload::from_name(&s).ok_or(format!("unknown workload {s:?}")))
}

/// A value checked at parse time but kept as the text given (for flags
/// whose text is passed on, layered or becomes a label): clap refuses,
/// naming the flag, a value `check` refuses.
pub fn checked<T: 'static, E>(
    check: fn(&str) -> std::result::Result<T, E>,
) -> impl clap::builder::TypedValueParser<Value = String>
where
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>> + 'static,
{
    use clap::builder::{NonEmptyStringValueParser, TypedValueParser};
    NonEmptyStringValueParser::new().try_map(move |s| check(s.trim()).map(|_| s.trim().to_string()))
}

/// A closed set's values by name, parsed to the value itself: `--help`
/// lists `all` in order and clap refuses any other name. The one
/// parser of bench's and the other commands' closed sets.
pub fn named<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(all.iter().map(|v| name(*v))).try_map(move |s| {
        all.iter()
            .copied()
            .find(|v| name(*v) == s)
            .ok_or(format!("unknown value {s:?}"))
    })
}

/// `--format`'s values, parsed to the renderer's [`wirespeed_report::Format`].
fn format_parser() -> impl clap::builder::TypedValueParser<Value = wirespeed_report::Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(wirespeed_report::Format::NAMES)
        .try_map(|s| s.parse::<wirespeed_report::Format>())
}

/// Bench's flags as a clap command of their own (no program name, no
/// server, no `--help`): what a layer is parsed with.
fn command() -> clap::Command {
    BenchArgs::augment_args(
        clap::Command::new("bench")
            .no_binary_name(true)
            .disable_help_flag(true),
    )
}

/// Types of bench's flag values, for dropping the values clap filled in.
macro_rules! remove_default {
    ($m:expr, $id:expr, $($t:ty),+) => {
        false $(|| matches!($m.try_remove_many::<$t>($id), Ok(Some(_))))+
    };
}

/// Removes what clap filled in itself (defaults), so that updating from a
/// layer touches only the flags the layer names. Returns the ids it names.
fn keep_named(m: &mut ArgMatches) -> Vec<String> {
    let ids: Vec<String> = m.ids().map(|i| i.as_str().to_string()).collect();
    let mut named = Vec::new();
    for id in ids {
        match m.value_source(&id) {
            Some(ValueSource::CommandLine) => named.push(id),
            Some(_) => {
                let _ = remove_default!(
                    m,
                    &id,
                    String,
                    bool,
                    u32,
                    u16,
                    PathBuf,
                    wirespeed_report::Format,
                    Workload,
                    Direction,
                    IoEngine
                );
            }
            None => {}
        }
    }
    named
}

impl BenchArgs {
    /// Bench's defaults: what `wirespeed bench HOST` runs.
    pub fn defaults() -> BenchArgs {
        let m = command()
            .try_get_matches_from(Vec::<String>::new())
            .expect("bench's flags all have defaults or are optional");
        BenchArgs::from_arg_matches(&m).expect("defaults match their own definition")
    }

    /// Applies one layer of arguments, parsed by bench's own parser: each
    /// flag it names (any spelling) replaces that flag's value below; a
    /// flag repeated within the layer (`--path A --path B`) keeps every
    /// value. Returns the long names of the flags it named.
    pub fn layer(&mut self, args: &[String]) -> Result<Vec<String>, CellError> {
        let mut m = command()
            .try_get_matches_from(args)
            .map_err(CellError::Clap)?;
        let named = keep_named(&mut m);
        self.update_from_arg_matches(&m).map_err(CellError::Clap)?;
        let cmd = command();
        Ok(named
            .iter()
            .filter_map(|id| cmd.get_arguments().find(|a| a.get_id() == id.as_str()))
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect())
    }

    /// Whether `flag` (any spelling) is a bench flag that takes a value.
    pub fn takes_value(flag: &str) -> bool {
        match command().try_get_matches_from([flag]) {
            Ok(_) => false,
            Err(e) => e.kind() != clap::error::ErrorKind::UnknownArgument,
        }
    }

    /// The arguments that turn `base` into `self`, long flags in bench's
    /// order (a rendering for people and result files, read back by
    /// [`BenchArgs::layer`]).
    pub fn argv_from(&self, base: &BenchArgs) -> Vec<String> {
        use serde_json::Value;
        let (me, old) = (
            serde_json::to_value(self).unwrap_or_default(),
            serde_json::to_value(base).unwrap_or_default(),
        );
        let mut v = Vec::new();
        for a in command().get_arguments() {
            let (Some(long), id) = (a.get_long(), a.get_id().as_str()) else {
                continue;
            };
            if me[id] == old[id] {
                continue;
            }
            let flag = format!("--{long}");
            match &me[id] {
                Value::Bool(true) => v.push(flag),
                Value::String(s) => v.extend([flag, s.clone()]),
                Value::Number(n) => v.extend([flag, n.to_string()]),
                Value::Array(xs) => {
                    for x in xs {
                        let x = x
                            .as_str()
                            .map(String::from)
                            .unwrap_or_else(|| x.to_string());
                        v.extend([flag.clone(), x]);
                    }
                }
                _ => {}
            }
        }
        v
    }

    /// How to reach the server: -4/-6, -B and --connect-timeout.
    pub fn reach(&self) -> Result<Reach, CellError> {
        let mut r = Reach::default();
        if let Some(c) = &self.connect_timeout {
            r.connect_timeout = Some(connect_timeout(c)?);
        }
        r.family = match (self.ipv4, self.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        };
        if let Some(b) = &self.bind {
            let ip: IpAddr = b.parse().map_err(|_| CellError::Bind(b.clone()))?;
            if r.family.is_some_and(|f| !f.holds(ip)) {
                return Err(CellError::BindFamily(ip));
            }
            r.bind = Some(ip);
        }
        Ok(r)
    }

    /// The lab hosts `--loaders-from` names, trimmed (None without it).
    pub fn loader_hosts(&self) -> Option<Vec<String>> {
        let l = self.loaders_from.as_ref()?;
        Some(l.split(',').map(|h| h.trim().to_string()).collect())
    }

    /// The client's settings against `host`: port, timeout and key (with
    /// the key file's warning, if any).
    pub fn client(&self, host: &str) -> Result<(ClientConfig, Option<String>), CellError> {
        let mut cfg = ClientConfig::new(host);
        cfg.port = self.port;
        let t = parse_duration(&self.timeout).map_err(flag("--timeout"))?;
        cfg.timeout = Duration::from_secs_f64(t.max(0.1));
        let mut warning = None;
        if let Some(p) = &self.key_file {
            let k = wirespeed_engine::read_key_file(p).map_err(CellError::KeyFile)?;
            warning = k.warning;
            cfg.key = Some(k.key);
        }
        Ok((cfg, warning))
    }
}

/// --connect-timeout: a bare number is milliseconds (iperf3's unit),
/// else a duration such as 2s.
fn connect_timeout(s: &str) -> Result<Duration, CellError> {
    let secs = match s.trim().parse::<f64>() {
        Ok(ms) => ms / 1000.0,
        Err(_) => parse_duration(s).map_err(|error| CellError::ConnectTimeout {
            value: s.to_string(),
            error,
        })?,
    };
    if !(secs.is_finite() && secs >= 0.001) {
        return Err(CellError::ConnectTimeoutShort(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs.min(3600.0)))
}

/// A TOS byte as iperf3 reads it: decimal, 0x hex or 0-led octal, 0-255.
fn parse_tos(s: &str) -> Result<u8, CellError> {
    let t = s.trim();
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u32::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    v.ok()
        .and_then(|v| u8::try_from(v).ok())
        .ok_or_else(|| CellError::Tos(s.to_string()))
}

/// A DSCP as a TOS byte: a number 0-63 or a standard name.
fn parse_dscp(s: &str) -> Result<u8, CellError> {
    let t = s.trim().to_ascii_lowercase();
    let named = match t.as_str() {
        "ef" => Some(46),
        "va" => Some(44),
        "le" => Some(1),
        _ => dscp_class(&t),
    };
    let v = match named {
        Some(v) => v,
        None => parse_tos(&t).map_or(255, u32::from),
    };
    if v > 63 {
        return Err(CellError::Dscp(s.to_string()));
    }
    Ok((v as u8) << 2)
}

/// afXY (X 1-4, Y 1-3) and csX (X 0-7) to their DSCP values.
fn dscp_class(t: &str) -> Option<u32> {
    let digits = |p: &str| {
        t.strip_prefix(p).map(|r| {
            r.chars()
                .filter_map(|c| c.to_digit(10))
                .collect::<Vec<u32>>()
        })
    };
    match (digits("af"), digits("cs")) {
        (Some(d), _) if d.len() == 2 && (1..=4).contains(&d[0]) && (1..=3).contains(&d[1]) => {
            Some(d[0] * 8 + d[1] * 2)
        }
        (_, Some(d)) if d.len() == 1 && d[0] <= 7 && t.len() == 3 => Some(d[0] * 8),
        _ => None,
    }
}

/// -n or -k as bytes: -k counts messages of `msg_size` bytes.
fn byte_count(a: &BenchArgs, msg_size: u32) -> Result<Option<u64>, CellError> {
    if let Some(n) = &a.bytes {
        return Ok(Some(parse_size(n).map_err(flag("-n/--bytes"))?));
    }
    let Some(k) = &a.blocks else { return Ok(None) };
    let k = parse_size(k).map_err(flag("-k/--blocks"))?;
    Ok(Some(k.saturating_mul(u64::from(msg_size))))
}

fn opt_size(s: &Option<String>) -> Result<Option<u32>, CellError> {
    s.as_deref().map(size32).transpose()
}

fn size32(s: &str) -> Result<u32, CellError> {
    let v = parse_size(s).map_err(CellError::Value)?;
    u32::try_from(v).map_err(|_| CellError::TooLarge(s.to_string()))
}

/// Names the flag whose value did not parse.
fn flag(flag: &'static str) -> impl FnOnce(Invalid) -> CellError {
    move |error| CellError::Flag { flag, error }
}

/// Builds the spec (and a size sweep's sizes) from the flags.
pub fn spec_from(a: &BenchArgs) -> Result<(TestSpec, Vec<(u32, u32)>), CellError> {
    let mut spec = base_spec(a)?;
    let workload = spec.workload;
    if a.breakdown && !matches!(workload, Workload::Rr | Workload::Crr | Workload::UdpRr) {
        return Err(CellError::BreakdownWorkload(workload));
    }
    if a.breakdown && a.zerocopy {
        return Err(CellError::BreakdownZerocopy);
    }
    if a.probe_rr && workload != Workload::Stream {
        return Err(CellError::ProbeRr);
    }
    if a.loaders > 0 && workload.is_bulk() {
        return Err(CellError::LoadersBulk(workload));
    }
    let max = wirespeed_engine::interference::MAX_LOADERS;
    if a.loaders > max {
        return Err(CellError::TooManyLoaders {
            loaders: a.loaders,
            max,
        });
    }
    let sizes = rr_sizes(a, workload)?;
    spec.request_size = sizes[0].0;
    spec.response_size = sizes[0].1;
    spec.validate(&wirespeed_types::Limits::default())
        .map_err(CellError::Spec)?;
    Ok((spec, sizes))
}

/// The workload the flags name (`--udp` is udp-stream).
fn workload_of(a: &BenchArgs) -> Workload {
    if a.udp {
        Workload::UdpStream
    } else {
        a.workload
    }
}

/// The spec the flags give, but for the request and response sizes.
fn base_spec(a: &BenchArgs) -> Result<TestSpec, CellError> {
    let workload = workload_of(a);
    let udp = workload.is_udp();
    let msg_size = match &a.msg_size {
        Some(s) => size32(s)?,
        None if udp => DEFAULT_DATAGRAM,
        None => 512 << 10,
    };
    let direction = match (a.reverse, a.bidir) {
        (true, _) => Direction::Reverse,
        (_, true) => Direction::Bidir,
        _ => a.direction,
    };
    let mut paths = Vec::new();
    for p in &a.path {
        paths.extend(parse_paths(p).map_err(CellError::Value)?);
    }
    if let Some(p) = &a.paths {
        paths.extend(parse_paths(p).map_err(CellError::Value)?);
    }
    let buf = opt_size(&a.socket_buffer)?;
    let (bytes, warmup_s, duration_s) = test_end(a, msg_size)?;
    let tos = match (&a.tos, &a.dscp) {
        (Some(t), _) => Some(parse_tos(t)?),
        (_, Some(d)) => Some(parse_dscp(d)?),
        _ => None,
    };
    Ok(TestSpec {
        workload,
        direction,
        duration_s,
        warmup_s,
        bytes,
        tos,
        mptcp: a.mptcp,
        sendfile: a.sendfile,
        dont_fragment: a.dont_fragment,
        client_port: a.cport,
        threads: a.threads,
        flows: a.flows,
        paths,
        msg_size,
        rate_bps: match a.bitrate.as_deref() {
            None | Some("0") => None,
            Some(b) => Some(parse_rate(b).map_err(flag("--bitrate"))?),
        },
        udp_gso: !a.no_gso,
        udp_gro: !a.no_gro,
        rr_timeout_s: match a.rr_timeout.as_deref() {
            Some(t) => parse_duration(t).map_err(flag("--rr-timeout"))?,
            None => wirespeed_types::spec::DEFAULT_RR_TIMEOUT_S,
        },
        sndbuf: opt_size(&a.sndbuf)?.or(buf),
        rcvbuf: opt_size(&a.rcvbuf)?.or(buf),
        congestion: a.congestion.clone(),
        nodelay: if a.nodelay {
            true
        } else if a.no_nodelay {
            false
        } else {
            workload.info().transactional
        },
        zerocopy: a.zerocopy,
        skip_rx_copy: a.skip_rx_copy,
        pacing_bps: a
            .pacing
            .as_deref()
            .map(parse_rate)
            .transpose()
            .map_err(flag("--pacing"))?,
        client_cpus: opt_cpus(a.pin.as_deref())?,
        server_cpus: opt_cpus(a.remote_pin.as_deref())?,
        interval_s: a
            .interval
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(CellError::Value)?
            .unwrap_or(0.0),
        probe_rr: a.probe_rr,
        breakdown: a.breakdown,
        rx_zerocopy: a.rx_zerocopy,
        busy_poll_us: a.busy_poll,
        io: a.io,
        ..TestSpec::default()
    })
}

/// How the test ends: by a byte count (the duration then only its
/// bound), or after its duration; and its warm-up.
fn test_end(a: &BenchArgs, msg_size: u32) -> Result<(Option<u64>, f64, f64), CellError> {
    let bytes = byte_count(a, msg_size)?;
    let warmup_s = parse_duration(&a.warmup).map_err(CellError::Value)?;
    let duration_s = match bytes {
        // Ended by bytes: the duration is the bound (the client lowers it
        // to the server's limit).
        Some(_) => wirespeed_types::Limits::default().max_duration_s - warmup_s,
        None => parse_duration(&a.duration).map_err(CellError::Value)?,
    };
    Ok((bytes, warmup_s, duration_s))
}

/// The CPUs a `--pin` list names; none without one.
fn opt_cpus(s: Option<&str>) -> Result<Vec<usize>, CellError> {
    Ok(s.map(parse_cpus)
        .transpose()
        .map_err(CellError::Value)?
        .unwrap_or_default())
}

/// The request and response sizes: a `--size` sweep's, or `--request`
/// and `--response` (each at least wirespeed's UDP header for UDP).
fn rr_sizes(a: &BenchArgs, workload: Workload) -> Result<Vec<(u32, u32)>, CellError> {
    let mut sizes = Vec::new();
    if let Some(s) = &a.size {
        if workload.is_bulk() {
            return Err(CellError::SizeBulk(workload));
        }
        for v in parse_sizes(s).map_err(CellError::Value)? {
            let v = u32::try_from(v).map_err(|_| CellError::SweepTooLarge(v))?;
            sizes.push((v, v));
        }
    }
    let req = opt_size(&a.request)?;
    let resp = opt_size(&a.response)?;
    if sizes.is_empty() {
        // UDP requests carry wirespeed's header: their smallest size.
        let least = if workload.is_udp() { UDP_HEADER_LEN } else { 1 };
        sizes.push((req.unwrap_or(least), resp.unwrap_or(least)));
    } else if req.is_some() || resp.is_some() {
        return Err(CellError::SizeAndRequest);
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    fn layered(layers: &[&[&str]]) -> Result<BenchArgs, CellError> {
        let mut a = BenchArgs::defaults();
        for l in layers {
            a.layer(&v(l))?;
        }
        Ok(a)
    }

    /// The message a refused layer prints.
    fn refused(layers: &[&[&str]]) -> String {
        layered(layers).map(|_| ()).unwrap_err().to_string()
    }

    /// The message `spec_from` prints for `args`.
    fn spec_refused(args: &[&str]) -> String {
        let a = layered(&[args]).unwrap();
        spec_from(&a).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn a_repeated_path_keeps_every_path() {
        let a = layered(&[&[
            "--path",
            "10.0.0.1=10.0.0.2",
            "--path",
            "10.0.1.1=10.0.1.2",
            "-F",
            "4",
        ]])
        .unwrap();
        assert_eq!(a.path, v(&["10.0.0.1=10.0.0.2", "10.0.1.1=10.0.1.2"]));
        assert_eq!(a.flows, 4);
        let (spec, _) = spec_from(&a).unwrap();
        assert_eq!(spec.paths.len(), 2);
        assert_eq!(spec.flows, 4);
    }

    #[test]
    fn a_later_layer_replaces_a_flag_and_keeps_the_rest() {
        let a = layered(&[
            &["--paths", "x=y", "-F", "1", "--zerocopy", "-d", "5s"],
            &["--flows", "4", "--paths=p=q"],
        ])
        .unwrap();
        assert_eq!(a.paths.as_deref(), Some("p=q"));
        assert_eq!(a.flows, 4);
        assert!(a.zerocopy, "a flag the later layer does not name stays");
        assert_eq!(
            a.duration, "5s",
            "a value the later layer does not name stays"
        );
        // A layer replaces a repeated flag as a whole.
        let a = layered(&[&["--path", "a=b", "--path", "c=d"], &["--path", "e=f"]]).unwrap();
        assert_eq!(a.path, v(&["e=f"]));
        // Aliases and shorts are one flag.
        let a = layered(&[&["-P", "2"], &["--parallel", "3"], &["--cc", "cubic", "-R"]]).unwrap();
        assert_eq!(
            (a.flows, a.congestion.as_deref(), a.reverse),
            (3, Some("cubic"), true)
        );
    }

    #[test]
    fn an_unknown_flag_is_named_as_unknown() {
        for bad in [
            &["--bogus", "1"][..],
            &["--flows", "2", "--zerocopyy"],
            &["-Q"],
        ] {
            let e = refused(&[bad]);
            assert!(e.contains("unknown bench flag"), "{bad:?}: {e}");
            assert!(!e.contains("value"), "{bad:?}: {e}");
        }
        let e = refused(&[&["--flowz", "4"]]);
        assert!(e.starts_with("unknown bench flag --flowz"), "{e}");
        assert!(refused(&[&["10.0.0.1"]]).contains("not a flag"));
        let e = refused(&[&["-d"]]);
        assert!(
            e.contains("value is required") && e.contains("--duration"),
            "{e}"
        );
        assert!(refused(&[&["-F", "many"]]).contains("many"));
        assert!(matches!(layered(&[&["-Q"]]), Err(CellError::Clap(_))));
    }

    #[test]
    fn refused_flags_say_what_bench_says() {
        // Values of the units are refused by clap, naming the flag.
        for (args, flag) in [
            (&["--timeout", "x"][..], "'--timeout"),
            (&["-n", "1Q"], "'--bytes"),
        ] {
            let e = layered(&[args]).unwrap_err().to_string();
            assert!(
                e.starts_with("invalid value") && e.contains(flag),
                "{args:?}: {e}"
            );
        }
        for (args, text) in [
            (
                &["--tos", "256"][..],
                "--tos \"256\": use a byte 0-255, e.g. 0x10 or 16",
            ),
            (&["--dscp", "af14"], "--dscp \"af14\": use 0-63 or a name"),
            (&["-l", "5G"], "size 5G must be below 4 GiB"),
            (
                &["-w", "rr", "--breakdown", "--zerocopy"],
                "--breakdown and --zerocopy both use the socket's error queue; choose one",
            ),
            (
                &["--breakdown"],
                "--breakdown cuts request/response transactions (rr, crr, udp-rr), not stream",
            ),
            (&["--loaders", "2"], "--loaders loads the server beside"),
            (
                &["--size", "1k"],
                "--size applies to the request/response workloads (rr, ",
            ),
            (
                &["-w", "rr", "--size", "1k", "--request", "1"],
                "use either --size or --request/--response",
            ),
            (&["-w", "rr", "--size", "5G"], "size must be below 4 GiB"),
        ] {
            let a = layered(&[args]).unwrap();
            let e = match spec_from(&a) {
                Err(e) => e.to_string(),
                Ok(_) => a.client("h").map(|_| ()).unwrap_err().to_string(),
            };
            assert!(e.starts_with(text), "{args:?}: {e}");
        }
        assert!(spec_refused(&["--size", "1k"]).ends_with("use --msg-size for stream"));
        let bind = |args: &[&str]| layered(&[args]).unwrap().reach().unwrap_err();
        assert!(matches!(bind(&["-B", "eth0"]), CellError::Bind(_)));
        assert_eq!(
            bind(&["-4", "-B", "::1"]).to_string(),
            "-B ::1 is not of the family -4/-6 asks for"
        );
        assert_eq!(
            bind(&["--connect-timeout", "0"]).to_string(),
            "--connect-timeout \"0\": must be at least 1 ms"
        );
    }

    #[test]
    fn a_layer_names_its_flags_by_long_name() {
        let mut a = BenchArgs::defaults();
        let named = a.layer(&v(&["-F", "2", "--cc", "bbr", "--json"])).unwrap();
        assert_eq!(named, v(&["--flows", "--congestion", "--json"]));
        assert!(BenchArgs::takes_value("--size") && BenchArgs::takes_value("-F"));
        assert!(!BenchArgs::takes_value("--zerocopy") && !BenchArgs::takes_value("--nope"));
    }

    #[test]
    fn the_rendered_arguments_read_back_to_the_same_cell() {
        let base = layered(&[&["-d", "3s", "--warmup", "0.5s"]]).unwrap();
        let a = layered(&[
            &["-d", "3s", "--warmup", "0.5s"],
            &[
                "--path",
                "a=b",
                "--path",
                "c=d",
                "-F",
                "8",
                "-w",
                "rr",
                "--zerocopy",
            ],
            &["--key-file", "/k", "--size", "1k,4k"],
        ])
        .unwrap();
        let argv = a.argv_from(&base);
        assert_eq!(
            argv,
            v(&[
                "--workload",
                "rr",
                "--flows",
                "8",
                "--path",
                "a=b",
                "--path",
                "c=d",
                "--size",
                "1k,4k",
                "--zerocopy",
                "--key-file",
                "/k"
            ])
        );
        let mut back = base.clone();
        back.layer(&argv).unwrap();
        assert_eq!(back, a);
        assert!(base.argv_from(&base).is_empty());
    }

    #[test]
    fn iperf3_flags_make_the_spec_iperf3_means() {
        let spec = |args: &[&str]| spec_from(&layered(&[args]).unwrap()).map(|s| s.0);
        for (t, tos) in [
            ("0x10", 16),
            ("16", 16),
            ("020", 16),
            ("0", 0),
            ("255", 255),
        ] {
            assert_eq!(spec(&["--tos", t]).unwrap().tos, Some(tos), "{t}");
        }
        for (d, tos) in [
            ("ef", 184),
            ("af11", 40),
            ("af43", 152),
            ("cs7", 224),
            ("46", 184),
        ] {
            assert_eq!(spec(&["--dscp", d]).unwrap().tos, Some(tos), "{d}");
        }
        for bad in ["256", "1000", "0x", "x"] {
            assert!(spec(&["--tos", bad]).is_err(), "{bad}");
        }
        for bad in ["64", "af14", "af51", "cs8", "efx"] {
            assert!(spec(&["--dscp", bad]).is_err(), "{bad}");
        }
        let s = spec(&["-n", "1G"]).unwrap();
        assert_eq!(s.bytes, Some(1 << 30));
        assert!(s.duration_s > 3000.0, "-n leaves the duration as a bound");
        assert_eq!(spec(&["-k", "10", "-l", "1k"]).unwrap().bytes, Some(10240));
        let s = spec(&["-u", "-t", "5", "-O", "0", "-m"]);
        assert!(s.is_err(), "-m is TCP only");
        let s = spec(&["-u", "-t", "5", "-O", "0"]).unwrap();
        assert_eq!(
            (s.workload, s.duration_s, s.warmup_s),
            (Workload::UdpStream, 5.0, 0.0)
        );
        let r = layered(&[&["-6", "--connect-timeout", "250"]])
            .unwrap()
            .reach()
            .unwrap();
        assert_eq!(r.family, Some(Family::V6));
        assert_eq!(r.connect_timeout, Some(Duration::from_millis(250)));
    }

    #[test]
    fn every_default_is_dropped_from_a_layer() {
        let mut m = command()
            .try_get_matches_from(Vec::<String>::new())
            .unwrap();
        assert!(keep_named(&mut m).is_empty());
        for a in command().get_arguments() {
            assert!(!m.contains_id(a.get_id().as_str()), "{:?} kept", a.get_id());
        }
    }
}
