//! The document `iperf3 -J` writes (iperf3 3.12's keys, checked against a
//! real run in tests/iperf3_live.rs), built from a wirespeed result so the
//! dashboards and scripts that parse iperf3 read it unchanged: `start`,
//! `intervals` (streams and sum) and `end` (streams, sum_sent,
//! sum_received, cpu_utilization_percent), for stream and udp-stream in
//! each direction. docs/iperf3.md says which figures wirespeed does not
//! sample per interval and writes as 0 there.

use crate::units::http_date;
use serde_json::{Map, Value, json};
use wirespeed_types::result::{FlowResult, IntervalSample, TcpInfo, TestResult, UdpStats};
use wirespeed_types::spec::{Direction, FlowKind, FlowPlan, TestSpec};

/// What iperf3's `start` block says that a result does not: the host and
/// the server as the user named it.
#[derive(Debug, Clone, Default)]
pub struct Iperf3Host {
    /// `uname -a`-like line of the client host.
    pub system_info: String,
    /// The server as typed (iperf3's `connecting_to.host`).
    pub host: String,
    /// The server's control port.
    pub port: u16,
}

impl Iperf3Host {
    /// The server as the result names it, with no host information.
    pub fn of(r: &TestResult) -> Iperf3Host {
        let (host, port) = match r.server.rsplit_once(':') {
            Some((h, p)) => (
                h.trim_matches(['[', ']']).to_string(),
                p.parse().unwrap_or(0),
            ),
            None => (r.server.clone(), 0),
        };
        Iperf3Host {
            system_info: String::new(),
            host,
            port,
        }
    }
}

/// A JSON object from key/value pairs.
fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The flows of a test that carry its data (not the latency probe).
fn data_flows(spec: &TestSpec) -> Vec<FlowPlan> {
    spec.roster()
        .into_iter()
        .filter(|p| matches!(p.kind, FlowKind::Forward | FlowKind::Reverse))
        .collect()
}

/// iperf3's "socket" of a flow: a small number per stream, as its fds are.
fn socket_of(id: u32) -> u32 {
    id + 5
}

/// The `start` block.
pub fn start(r: &TestResult, h: &Iperf3Host) -> Value {
    let s = &r.spec;
    let udp = s.workload.is_udp();
    let connected: Vec<Value> = data_flows(s)
        .iter()
        .map(|p| {
            json!({"socket": socket_of(p.id), "local_host": r.client, "local_port": 0,
                   "remote_host": h.host, "remote_port": h.port})
        })
        .collect();
    let rate = s.rate_bps.unwrap_or(0);
    let mut pairs = vec![
        ("connected", Value::Array(connected)),
        ("version", json!(format!("wirespeed {}", r.tool_version))),
        ("system_info", json!(h.system_info)),
        (
            "timestamp",
            json!({"time": http_date(r.started_unix), "timesecs": r.started_unix.floor() as u64}),
        ),
        ("connecting_to", json!({"host": h.host, "port": h.port})),
        ("cookie", json!(cookie(r.started_unix))),
    ];
    if !udp {
        let mss = r
            .flows
            .iter()
            .find_map(|f| f.tcp_info.as_ref())
            .map_or(0, |t| t.mss);
        pairs.push(("tcp_mss_default", json!(mss)));
    }
    pairs.extend([
        ("target_bitrate", json!(rate)),
        ("sock_bufsize", json!(s.sndbuf.or(s.rcvbuf).unwrap_or(0))),
        ("sndbuf_actual", json!(s.sndbuf.unwrap_or(0))),
        ("rcvbuf_actual", json!(s.rcvbuf.unwrap_or(0))),
        ("test_start", test_start(s)),
    ]);
    obj(pairs)
}

/// `start.test_start`: the test as iperf3 describes it.
fn test_start(s: &TestSpec) -> Value {
    json!({
        "protocol": if s.workload.is_udp() { "UDP" } else { "TCP" },
        "num_streams": s.flows,
        "blksize": s.msg_size,
        "omit": s.warmup_s,
        "duration": if s.bytes.is_some() { 0.0 } else { s.duration_s },
        "bytes": s.bytes.unwrap_or(0),
        "blocks": 0,
        "reverse": u8::from(s.direction == Direction::Reverse),
        "tos": s.tos.unwrap_or(0),
        "target_bitrate": s.rate_bps.unwrap_or(0),
    })
}

/// A 36-character test id in iperf3's cookie alphabet, from the start time.
fn cookie(started: f64) -> String {
    let mut x = (started * 1e6) as u64 | 1;
    (0..36)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b"abcdefghijklmnopqrstuvwxyz234567"[(x % 32) as usize] as char
        })
        .collect()
}

/// The common head of every stream and sum object.
fn head(
    socket: Option<u32>,
    from: f64,
    to: f64,
    bytes: u64,
    bps: f64,
) -> Vec<(&'static str, Value)> {
    let mut v = Vec::new();
    if let Some(s) = socket {
        v.push(("socket", json!(s)));
    }
    v.extend([
        ("start", json!(from)),
        ("end", json!(to)),
        ("seconds", json!(to - from)),
        ("bytes", json!(bytes)),
        ("bits_per_second", json!(bps)),
    ]);
    v
}

/// What one interval object adds after the head, by the client's role:
/// TCP sender figures, UDP sender or receiver counts.
fn interval_tail(
    udp: bool,
    sending: bool,
    sum: bool,
    packets: u64,
    info: Option<&TcpInfo>,
) -> Vec<(&'static str, Value)> {
    let t = info.cloned().unwrap_or_default();
    match (udp, sending, sum) {
        (false, true, false) => vec![
            ("retransmits", json!(0)),
            ("snd_cwnd", json!(t.cwnd * t.mss)),
            ("snd_wnd", json!(0)),
            ("rtt", json!(t.rtt_us)),
            ("rttvar", json!(t.rttvar_us)),
            ("pmtu", json!(t.pmtu)),
        ],
        (false, true, true) => vec![("retransmits", json!(0))],
        (false, false, _) => Vec::new(),
        (true, true, _) => vec![("packets", json!(packets))],
        (true, false, _) => vec![
            ("jitter_ms", json!(0.0)),
            ("lost_packets", json!(0)),
            ("packets", json!(packets)),
            ("lost_percent", json!(0.0)),
        ],
    }
}

/// One `intervals[]` element from a sample: a stream per data flow, the
/// sum of the flows the client sends on (reverse: receives on), and in
/// a bidir test the other direction's sum. `done` (the finished result)
/// lends each TCP stream its end-of-test TCP_INFO.
pub fn interval(spec: &TestSpec, s: &IntervalSample, done: Option<&TestResult>) -> Value {
    let udp = spec.workload.is_udp();
    let (from, to) = (s.t_s - s.len_s, s.t_s);
    let omitted = json!(s.t_s <= 0.0);
    let msg = u64::from(spec.msg_size.max(1));
    let mut streams = Vec::new();
    let mut sums = [(0u64, 0.0f64, 0u64); 2];
    for p in data_flows(spec) {
        let bps = s.flow_bps.get(p.id as usize).copied().unwrap_or(0.0);
        let bytes = (bps * s.len_s / 8.0).round() as u64;
        let sending = p.kind == FlowKind::Forward;
        let info = done
            .and_then(|r| r.flows.get(p.id as usize))
            .and_then(|f| f.tcp_info.as_ref());
        let mut o = head(Some(socket_of(p.id)), from, to, bytes, bps);
        o.extend(interval_tail(udp, sending, false, bytes / msg, info));
        o.extend([("omitted", omitted.clone()), ("sender", json!(sending))]);
        streams.push(obj(o));
        let k = usize::from(!sending);
        sums[k] = (sums[k].0 + bytes, sums[k].1 + bps, sums[k].2 + bytes / msg);
    }
    let sum = |k: usize| {
        let (bytes, bps, packets) = sums[k];
        let mut o = head(None, from, to, bytes, bps);
        o.extend(interval_tail(udp, k == 0, true, packets, None));
        o.extend([("omitted", omitted.clone()), ("sender", json!(k == 0))]);
        obj(o)
    };
    let mut out = vec![("streams", Value::Array(streams))];
    match spec.direction {
        Direction::Forward => out.push(("sum", sum(0))),
        Direction::Reverse => out.push(("sum", sum(1))),
        Direction::Bidir => out.extend([("sum", sum(0)), ("sum_bidir_reverse", sum(1))]),
    }
    obj(out)
}

/// Bytes and rate of a flow at its sender and at its receiver.
fn ends(f: &FlowResult) -> ((u64, f64), (u64, f64)) {
    let local = (f.local_bytes, f.local_bps);
    let remote = (f.remote_bytes, f.remote_bps);
    if f.kind == Some(FlowKind::Reverse) {
        (remote, local)
    } else {
        (local, remote)
    }
}

/// The TCP sender figures of an `end.streams[].sender` object.
fn tcp_end(t: Option<&TcpInfo>) -> Vec<(&'static str, Value)> {
    let t = t.cloned().unwrap_or_default();
    vec![
        ("retransmits", json!(t.retransmits)),
        ("max_snd_cwnd", json!(t.cwnd * t.mss)),
        ("max_snd_wnd", json!(0)),
        ("max_rtt", json!(t.rtt_us)),
        ("min_rtt", json!(t.min_rtt_us)),
        ("mean_rtt", json!(t.rtt_us)),
    ]
}

/// The UDP figures iperf3 puts after the head of an end object.
fn udp_figures(u: &UdpStats, with_order: bool) -> Vec<(&'static str, Value)> {
    let mut v = vec![
        ("jitter_ms", json!(u.jitter_us / 1000.0)),
        ("lost_packets", json!(u.lost)),
        ("packets", json!(u.datagrams_sent)),
        ("lost_percent", json!(u.loss_pct)),
    ];
    if with_order {
        v.push(("out_of_order", json!(u.out_of_order)));
    }
    v
}

/// One `end.streams[]` element.
fn end_stream(f: &FlowResult, w: f64, udp: bool) -> Value {
    let sending = f.kind == Some(FlowKind::Forward);
    let ((sb, sbps), (rb, rbps)) = ends(f);
    let socket = Some(socket_of(f.id));
    if udp {
        let mut o = head(socket, 0.0, w, sb, sbps);
        o.extend(udp_figures(&f.udp.clone().unwrap_or_default(), true));
        o.push(("sender", json!(sending)));
        return json!({"udp": obj(o)});
    }
    let mut snd = head(socket, 0.0, w, sb, sbps);
    snd.extend(tcp_end(f.tcp_info.as_ref()));
    snd.push(("sender", json!(sending)));
    let mut rcv = head(socket, 0.0, w, rb, rbps);
    rcv.push(("sender", json!(sending)));
    json!({"sender": obj(snd), "receiver": obj(rcv)})
}

/// The sums of one direction: (sum_sent, sum_received, UDP's sum).
fn end_sums(flows: &[&FlowResult], w: f64, udp: bool, sending: bool) -> (Value, Value, Value) {
    let (mut sb, mut sbps, mut rb, mut rbps, mut retr) = (0, 0.0, 0, 0.0, 0);
    let mut u = UdpStats::default();
    for f in flows {
        let ((b1, r1), (b2, r2)) = ends(f);
        (sb, sbps, rb, rbps) = (sb + b1, sbps + r1, rb + b2, rbps + r2);
        retr += f.tcp_info.as_ref().map_or(0, |t| t.retransmits);
        if let Some(x) = &f.udp {
            u.add(x);
        }
    }
    let make = |bytes, bps, tail: Vec<(&'static str, Value)>| {
        let mut o = head(None, 0.0, w, bytes, bps);
        o.extend(tail);
        o.push(("sender", json!(sending)));
        obj(o)
    };
    if udp {
        let f = udp_figures(&u, false);
        return (
            make(sb, sbps, f.clone()),
            make(rb, rbps, f.clone()),
            make(sb, rbps, f),
        );
    }
    let sent = make(sb, sbps, vec![("retransmits", json!(retr))]);
    (sent, make(rb, rbps, Vec::new()), Value::Null)
}

/// The `end` block.
pub fn end(r: &TestResult) -> Value {
    let udp = r.spec.workload.is_udp();
    let w = r.window_s;
    let data: Vec<&FlowResult> = r
        .flows
        .iter()
        .filter(|f| matches!(f.kind, Some(FlowKind::Forward | FlowKind::Reverse)))
        .collect();
    let mut e = Map::new();
    e.insert(
        "streams".into(),
        data.iter().map(|f| end_stream(f, w, udp)).collect(),
    );
    let dir = |k: FlowKind| -> Vec<&FlowResult> {
        data.iter().copied().filter(|f| f.kind == Some(k)).collect()
    };
    let (main, other) = match r.spec.direction {
        Direction::Reverse => (dir(FlowKind::Reverse), None),
        Direction::Forward => (dir(FlowKind::Forward), None),
        Direction::Bidir => (dir(FlowKind::Forward), Some(dir(FlowKind::Reverse))),
    };
    let sending = r.spec.direction != Direction::Reverse;
    let (sent, received, sum) = end_sums(&main, w, udp, sending);
    if udp {
        e.insert("sum".into(), sum);
    }
    e.insert("sum_sent".into(), sent);
    e.insert("sum_received".into(), received);
    if let Some(o) = other {
        let (sent, received, sum) = end_sums(&o, w, udp, false);
        if udp {
            e.insert("sum_bidir_reverse".into(), sum);
        }
        e.insert("sum_sent_bidir_reverse".into(), sent);
        e.insert("sum_received_bidir_reverse".into(), received);
    }
    let (l, rm) = (&r.local_cpu, &r.remote_cpu);
    e.insert(
        "cpu_utilization_percent".into(),
        json!({"host_total": l.total_pct, "host_user": l.user_pct, "host_system": l.system_pct,
               "remote_total": rm.total_pct, "remote_user": rm.user_pct, "remote_system": rm.system_pct}),
    );
    if !udp {
        e.insert("sender_tcp_congestion".into(), json!(r.congestion_control));
        e.insert(
            "receiver_tcp_congestion".into(),
            json!(r.congestion_control),
        );
    }
    Value::Object(e)
}

/// The whole document of one test, as `iperf3 -J` prints it.
pub fn document(r: &TestResult, h: &Iperf3Host) -> Value {
    let intervals: Vec<Value> = r
        .intervals
        .iter()
        .map(|s| interval(&r.spec, s, Some(r)))
        .collect();
    json!({"start": start(r, h), "intervals": intervals, "end": end(r)})
}

/// The document `iperf3 -J` writes when a test fails (a refused
/// connection, a server gone mid-test): a `start` with no connection and
/// the version and host, no intervals, an empty `end` and the `error`.
/// `version` is wirespeed's.
pub fn error_document(h: &Iperf3Host, version: &str, error: &str) -> Value {
    let start = json!({
        "connected": [],
        "version": format!("wirespeed {version}"),
        "system_info": h.system_info,
    });
    json!({"start": start, "intervals": [], "end": {}, "error": error})
}

/// One line of iperf3's `--json-stream` (3.17+): `{"event": .., "data": ..}`.
pub fn stream_event(event: &str, data: Value) -> String {
    json!({"event": event, "data": data}).to_string()
}
