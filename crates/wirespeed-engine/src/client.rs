//! The client: handshake with a server, connect every flow over its path,
//! run the window with interval samples, and merge both sides' figures.

use crate::error::EngineError;
use crate::merge::merge;
use crate::proto::{
    CONTROL_MAGIC, FrameReader, MAX_FRAME, MAX_REPORT_FRAME, MIN_PROTOCOL_VERSION, Msg,
    PROTOCOL_VERSION, SideReport, auth_mac, data_preamble, encode, printable, read_msg_until,
    unhex, write_until,
};
use crate::result::{IntervalSample, TestResult};
use crate::side::{Side, SideSetup, Tick};
use crate::sockets::{
    ResolvedPath, congestion_of, connect_flow, resolve, resolve_path, split_host_port,
};
use crate::spec::{FlowKind, Limits, PathSpec, SocketType, TestSpec};
use crate::sys;
use crate::udp::register_flows;
use crate::workloads;
use socket2::{Domain, Socket, Type};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_types::protocol::{Speaks, agree};

/// Default control port of `wirespeed serve`.
pub const DEFAULT_PORT: u16 = 5300;

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `HOST`, `HOST:PORT` or `[IPV6]:PORT`.
    pub server: String,
    /// Port when `server` names none.
    pub port: u16,
    /// Shared key for the HMAC challenge, if the server wants one.
    pub key: Option<Vec<u8>>,
    /// Bound on connecting and on each control answer as a whole, however
    /// the server spaces its bytes (the report gets the drain time on top).
    pub timeout: Duration,
}

/// How the client reaches the server beyond [`ClientConfig`]: iperf3's
/// -4/-6, -B and --connect-timeout. The default changes nothing.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// Bound on each TCP connect alone, control and data (iperf3's
    /// --connect-timeout); None: the config's `timeout`.
    pub connect_timeout: Option<Duration>,
    /// Only this IP family (-4/-6); None: whatever the name resolves to.
    pub family: Option<Family>,
    /// Local address of the control connection and of the data flows
    /// when the test names no paths (-B/--bind).
    pub bind: Option<IpAddr>,
}

/// An IP family the client is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// IPv4 only (-4).
    V4,
    /// IPv6 only (-6).
    V6,
}

impl Family {
    /// Whether `ip` is of this family.
    pub fn holds(self, ip: IpAddr) -> bool {
        ip.is_ipv4() == (self == Family::V4)
    }

    /// Its flag, for messages.
    fn flag(self) -> &'static str {
        match self {
            Family::V4 => "-4",
            Family::V6 => "-6",
        }
    }

    /// The unspecified address of the family (what `resolve` prefers by).
    fn any(self) -> IpAddr {
        match self {
            Family::V4 => IpAddr::from([0u8; 4]),
            Family::V6 => IpAddr::from([0u16; 8]),
        }
    }
}

impl ClientConfig {
    /// A config for `server` with defaults.
    pub fn new(server: &str) -> ClientConfig {
        ClientConfig {
            server: server.to_string(),
            port: DEFAULT_PORT,
            key: None,
            timeout: Duration::from_secs(10),
        }
    }
}

impl Reach {
    /// The server's control address, held to -4/-6 and to the family of
    /// -B's address.
    fn control_addr(&self, cfg: &ClientConfig) -> Result<(String, SocketAddr), EngineError> {
        let (host, port) = split_host_port(&cfg.server, cfg.port)?;
        let family = self.family.or(self
            .bind
            .map(|b| if b.is_ipv4() { Family::V4 } else { Family::V6 }));
        let addr = resolve(&host, port, family.map(Family::any))?;
        if let Some(f) = family
            && !f.holds(addr.ip())
        {
            let why = match (self.family, self.bind) {
                (Some(_), _) => f.flag().to_string(),
                (None, Some(b)) => format!("-B {b}"),
                (None, None) => String::new(),
            };
            return Err(EngineError::Spec(format!(
                "{host} has no address of the family {why} asks for (it is {})",
                addr.ip()
            )));
        }
        Ok((host, addr))
    }

    /// Connects the control connection, from -B's address if given.
    fn connect_control(&self, cfg: &ClientConfig, addr: SocketAddr) -> std::io::Result<TcpStream> {
        let wait = self.connect_timeout.unwrap_or(cfg.timeout);
        let Some(b) = self.bind else {
            return TcpStream::connect_timeout(&addr, wait);
        };
        let s = Socket::new(Domain::for_address(addr), Type::STREAM.cloexec(), None)?;
        s.bind(&SocketAddr::new(b, 0).into())?;
        s.connect_timeout(&addr.into(), wait)?;
        Ok(s.into())
    }
}

/// An authenticated control connection.
pub struct Control {
    stream: TcpStream,
    host: String,
    /// The server's limits.
    pub limits: Limits,
    timeout: Duration,
}

/// How long a client whose test ended early waits for the server's
/// reason on the control connection (a dead server's closed connection
/// answers at once).
const SERVER_WHY: Duration = Duration::from_millis(500);

/// Most characters of a server's error text the client repeats.
const MAX_SERVER_TEXT: usize = 500;

fn expect_error(m: Msg, what: &str) -> EngineError {
    match m {
        Msg::Error { code, message } => {
            // The server's words, escaped: they reach the user's terminal.
            let message = printable(&message, MAX_SERVER_TEXT);
            match code.as_str() {
                "busy" => EngineError::Busy(message),
                "auth" => EngineError::Auth(message),
                "interrupted" => EngineError::Interrupted(message),
                _ => EngineError::Refused(format!("{message} ({})", printable(&code, 32))),
            }
        }
        other => EngineError::Protocol(format!("expected {what}, got {}", other.kind())),
    }
}

/// Checks the version a server chose in its challenge (None: a release
/// that spoke only the client's exact version, which it then accepted).
fn check_chosen(version: Option<u32>, server: Option<String>) -> Result<(), EngineError> {
    let Some(v) = version else { return Ok(()) };
    if (MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&v) {
        return Ok(());
    }
    let ours = Speaks::this("client", MIN_PROTOCOL_VERSION, PROTOCOL_VERSION);
    let theirs = Speaks {
        role: "server".into(),
        release: printable(server.as_deref().unwrap_or("an unnamed release"), 64),
        min: v,
        max: v,
    };
    let why = agree("control protocol", &ours, &theirs)
        .err()
        .map(|d| d.to_string())
        .unwrap_or_else(|| {
            format!("the server chose control protocol {v}, which this client does not speak")
        });
    Err(EngineError::Refused(format!("{why} (version)")))
}

fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

impl Control {
    /// Connects, says hello and proves the key.
    pub fn connect(cfg: &ClientConfig) -> Result<Control, EngineError> {
        Control::connect_via(cfg, &Reach::default())
    }

    /// [`Control::connect`] as `reach` says (family, source, connect bound).
    pub fn connect_via(cfg: &ClientConfig, reach: &Reach) -> Result<Control, EngineError> {
        let (host, addr) = reach.control_addr(cfg)?;
        let stream = reach.connect_control(cfg, addr).map_err(|e| {
            EngineError::io(
                format!("connect to wirespeed server at {addr} (is `wirespeed serve` running?)"),
                e,
            )
        })?;
        stream.set_nodelay(true).ok();
        let mut c = Control {
            stream,
            host,
            limits: Limits::default(),
            timeout: cfg.timeout,
        };
        // Preamble and hello in one write.
        let mut first = CONTROL_MAGIC.to_vec();
        first.extend(encode(&Msg::Hello {
            version: PROTOCOL_VERSION,
            min_version: Some(MIN_PROTOCOL_VERSION),
            client: wirespeed_types::protocol::RELEASE_NAME.into(),
        })?);
        c.send_bytes(&first, "hello")?;
        let (nonce, required) = match c.recv("the server's challenge")? {
            Msg::Challenge {
                nonce,
                auth_required,
                version,
                server,
            } => {
                check_chosen(version, server)?;
                (nonce, auth_required)
            }
            m => return Err(expect_error(m, "challenge")),
        };
        let nonce =
            unhex(&nonce).ok_or_else(|| EngineError::Protocol("server sent a bad nonce".into()))?;
        let mac = match (&cfg.key, required) {
            (Some(k), _) => Some(auth_mac(k, &nonce)),
            (None, true) => {
                return Err(EngineError::Auth(
                    "the server requires a key: pass the same --key-file as the server".into(),
                ));
            }
            (None, false) => None,
        };
        c.send(&Msg::Auth { mac })?;
        match c.recv("the server's welcome")? {
            Msg::Welcome { limits } => c.limits = limits,
            m => return Err(expect_error(m, "welcome")),
        }
        Ok(c)
    }

    /// Sends a message within the timeout.
    pub fn send(&mut self, m: &Msg) -> Result<(), EngineError> {
        self.send_bytes(&encode(m)?, m.kind())
    }

    /// Sends bytes within the timeout. If the server closed the connection
    /// (a write fails with EPIPE or ECONNRESET), it may have said why
    /// first, e.g. `busy` before reading our hello: that answer is the
    /// error, not the broken pipe.
    fn send_bytes(&mut self, bytes: &[u8], what: &str) -> Result<(), EngineError> {
        let fd = self.stream.as_fd();
        match write_until(fd, bytes, Instant::now() + self.timeout, what) {
            Err(EngineError::Io { what, error })
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                ) =>
            {
                match self.pending_answer() {
                    Some(m @ Msg::Error { .. }) => Err(expect_error(m, "")),
                    _ => Err(EngineError::Io { what, error }),
                }
            }
            r => r,
        }
    }

    /// A message the server sent unasked (an error before it closed), if
    /// one arrives within a second.
    fn pending_answer(&mut self) -> Option<Msg> {
        let wait = Instant::now() + self.timeout.min(Duration::from_secs(1));
        read_msg_until(self.stream.as_fd(), MAX_FRAME, wait, "the server's answer").ok()
    }

    /// Receives a message within the timeout as a whole; `what` names it
    /// in errors, e.g. "the server's challenge".
    pub fn recv(&mut self, what: &str) -> Result<Msg, EngineError> {
        self.recv_within(self.timeout, what)
    }

    fn recv_within(&mut self, t: Duration, what: &str) -> Result<Msg, EngineError> {
        // Only a report may be large.
        let max = if what.contains("report") {
            MAX_REPORT_FRAME
        } else {
            MAX_FRAME
        };
        read_msg_until(
            self.stream.as_fd(),
            max,
            Instant::now() + t,
            &format!("{what} (timeout {})", secs(t)),
        )
    }
}

/// Runs one test; `on_interval` sees each interval sample as it happens.
pub fn run_test(
    cfg: &ClientConfig,
    spec: &TestSpec,
    on_interval: &mut dyn FnMut(&IntervalSample),
) -> Result<TestResult, EngineError> {
    run_test_via(cfg, &Reach::default(), spec, on_interval)
}

/// [`run_test`], reaching the server as `reach` says.
pub fn run_test_via(
    cfg: &ClientConfig,
    reach: &Reach,
    spec: &TestSpec,
    on_interval: &mut dyn FnMut(&IntervalSample),
) -> Result<TestResult, EngineError> {
    sys::raise_fd_limit();
    let mut ctrl = Control::connect_via(cfg, reach)?;
    let spec = spec_for(spec, reach, &ctrl)?;
    ctrl.send(&Msg::Spec {
        spec: Box::new(spec.clone()),
    })?;
    let (token, port) = match ctrl.recv("the server's accepted")? {
        Msg::Accepted { token, data_port } => (token, data_port),
        m => return Err(expect_error(m, "accepted")),
    };
    let token: [u8; 16] = unhex(&token)
        .and_then(|t| t.try_into().ok())
        .ok_or_else(|| EngineError::Protocol("server sent a bad token".into()))?;
    let paths: Vec<ResolvedPath> = spec
        .paths
        .iter()
        .map(|p| resolve_path(p, port))
        .collect::<Result<_, _>>()?;
    let (socks, cc, connect_wait) = open_flows(cfg, reach, &mut ctrl, &spec, &paths, port, &token)?;
    ctrl.send(&Msg::Start)?;
    match ctrl.recv_within(connect_wait, "the server's started")? {
        Msg::Started => {}
        m => return Err(expect_error(m, "started")),
    }
    let spec = Arc::new(spec);
    let setup = SideSetup {
        spec: spec.clone(),
        client: true,
        socks,
        paths,
        listener: None,
        token,
        preamble_timeout: Duration::ZERO,
    };
    let side = Side::start(setup, drain_time(&spec))?;
    let (window, intervals) = match watch_window(&side, &spec, &ctrl, on_interval) {
        Ok(w) => w,
        Err(e) => {
            drop(side);
            return Err(e);
        }
    };
    side.ending();
    ctrl.send(&Msg::Stop)?;
    let mut mine = side.finish(&window);
    mine.congestion_control = cc;
    let mut theirs: SideReport =
        match ctrl.recv_within(cfg.timeout + drain_time(&spec), "the server's report")? {
            Msg::Report { report } => *report,
            m => return Err(expect_error(m, "report")),
        };
    check_report(&mut theirs, &spec)?;
    let server = format!(
        "{}:{}",
        ctrl.host,
        split_host_port(&cfg.server, cfg.port)?.1
    );
    let mut res = merge(
        &spec,
        &server,
        &mine,
        &theirs,
        intervals,
        window.started_unix,
    );
    if let Ok(a) = ctrl.stream.local_addr() {
        res.client = a.ip().to_string();
    }
    annotate(&mut res, &spec, &mine, &theirs);
    Ok(res)
}

/// Connects the test's data flows (registers them, for UDP), by one
/// deadline for all; returns their sockets, the first TCP flow's
/// congestion control, and the time they were given.
fn open_flows(
    cfg: &ClientConfig,
    reach: &Reach,
    ctrl: &mut Control,
    spec: &TestSpec,
    paths: &[ResolvedPath],
    port: u16,
    token: &[u8; 16],
) -> Result<(Vec<Option<Socket>>, String, Duration), EngineError> {
    let roster = spec.roster();
    // One deadline for all flows (the server's accept deadline is as
    // long): a data port that drops SYNs must not cost a timeout per flow.
    let connect_wait = cfg.timeout + Duration::from_millis(roster.len() as u64);
    let connect_by = Instant::now() + connect_wait;
    let (socks, cc) = if workloads::def(spec.workload).socket() == SocketType::Udp {
        match register_flows(&roster, paths, port, token, spec, connect_by) {
            Ok(s) => (s, String::new()),
            Err(e) => {
                if let Some(m) = ctrl.pending_answer() {
                    return Err(expect_error(m, "nothing while flows register"));
                }
                return Err(e);
            }
        }
    } else {
        let flows = Flows {
            roster: &roster,
            paths,
            token,
            spec,
        };
        flows.connect(ctrl, reach, connect_by, connect_wait)?
    };
    Ok((socks, cc, connect_wait))
}

/// The spec as sent: a default path when it names none, a test ended by
/// bytes bounded by the server's longest; checked against its limits.
fn spec_for(spec: &TestSpec, reach: &Reach, ctrl: &Control) -> Result<TestSpec, EngineError> {
    let mut spec = spec.clone();
    if spec.paths.is_empty() {
        spec.paths.push(default_path(reach, ctrl)?);
    }
    if spec.bytes.is_some() {
        // Ended by bytes: the duration is only the bound, the server's.
        let most = ctrl.limits.max_duration_s - spec.warmup_s;
        if most > 0.0 {
            spec.duration_s = spec.duration_s.min(most);
        }
    }
    spec.validate(&ctrl.limits)?;
    Ok(spec)
}

/// A TCP test's data flows to connect.
struct Flows<'a> {
    roster: &'a [crate::spec::FlowPlan],
    paths: &'a [ResolvedPath],
    token: &'a [u8; 16],
    spec: &'a TestSpec,
}

impl Flows<'_> {
    /// Connects every flow that connects up front by `connect_by`; returns
    /// the sockets (None for the others) and the congestion control of
    /// the first.
    fn connect(
        &self,
        ctrl: &mut Control,
        reach: &Reach,
        connect_by: Instant,
        connect_wait: Duration,
    ) -> Result<(Vec<Option<Socket>>, String), EngineError> {
        let (roster, spec) = (self.roster, self.spec);
        let mut socks = Vec::with_capacity(roster.len());
        let mut cc = String::new();
        for plan in roster {
            if !workloads::def_for(spec.workload, plan).connects_up_front() {
                socks.push(None);
                continue;
            }
            let path = &self.paths[plan.path as usize];
            let left = connect_by.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(EngineError::Timeout(format!(
                    "connecting data flows: {} of {} connected within {}",
                    socks.len(),
                    roster.len(),
                    secs(connect_wait)
                )));
            }
            let wait = reach.connect_timeout.map_or(left, |c| c.min(left));
            let preamble = data_preamble(self.token, plan.id);
            let s = match connect_flow(path, spec, plan.id, &preamble, wait) {
                Ok(s) => s,
                Err(e) => return Err(self.flow_error(ctrl, plan, e)),
            };
            if plan.kind == FlowKind::Probe {
                s.set_tcp_nodelay(true).ok();
            }
            if cc.is_empty() {
                cc = congestion_of(&s);
            }
            socks.push(Some(s));
        }
        Ok((socks, cc))
    }

    /// Why flow `plan` did not connect: the server's answer if it gave up
    /// on the test, else `e` naming the flow and its path.
    fn flow_error(
        &self,
        ctrl: &mut Control,
        plan: &crate::spec::FlowPlan,
        e: EngineError,
    ) -> EngineError {
        // The server may have given up on the test (out of
        // descriptors, say) and closed its data port: its answer
        // on the control connection is the news.
        if let Some(m) = ctrl.pending_answer() {
            return expect_error(m, "nothing while flows connect");
        }
        let on = format!(
            "flow {} over path {}",
            plan.id,
            self.spec.paths[plan.path as usize].label()
        );
        match e {
            EngineError::Io { what, error } => EngineError::Io {
                what: format!("{on}: {what}"),
                error,
            },
            EngineError::Timeout(what) => EngineError::Timeout(format!("{on}: {what}")),
            e => EngineError::Spec(format!("{on}: {e}")),
        }
    }
}

/// Runs the test's window, sampling intervals for `on_interval` and
/// watching the control connection for the server's news; returns the
/// window and the intervals.
fn watch_window(
    side: &Side,
    spec: &TestSpec,
    ctrl: &Control,
    on_interval: &mut dyn FnMut(&IntervalSample),
) -> Result<(crate::side::Window, Vec<IntervalSample>), EngineError> {
    let ctl_fd = ctrl.stream.as_fd();
    let mut intervals = Vec::new();
    let mut last = side.mark();
    let begin = last.at;
    let every = spec.interval_s;
    let mut server_error: Option<EngineError> = None;
    let mut frames = FrameReader::new(MAX_FRAME);
    let window = side.run_window(spec, |s, now| {
        // The server only speaks mid-test to report a failure; read it
        // without blocking, however it is spaced.
        let m = match frames.poll(ctl_fd, "the server's message") {
            Ok(None) => None,
            Ok(Some(m)) => Some(m),
            Err(e) => Some(Msg::error("protocol", e.to_string())),
        };
        if let Some(m) = m {
            server_error = Some(expect_error(m, "nothing during the test"));
            return Err(EngineError::Protocol(
                "the server ended the test early".into(),
            ));
        }
        if every > 0.0 && now.duration_since(last.at).as_secs_f64() >= every {
            let mark = s.mark();
            let sample = mark.since(&last, begin, spec.warmup_s);
            on_interval(&sample);
            intervals.push(sample);
            last = mark;
        }
        Ok(Tick::Continue)
    });
    let window = match window {
        Ok(w) => w,
        Err(e) => {
            // The server closes a test's flows as it tells why (a stop
            // signal, a fault): the flows' end may be seen first.
            let why = server_error.or_else(|| {
                let by = Instant::now() + SERVER_WHY;
                let m = frames.read_until(ctl_fd, by, "the server's reason").ok()?;
                Some(expect_error(m, "nothing during the test"))
            });
            return Err(why.unwrap_or(e));
        }
    };
    if frames.partial() > 0 {
        return Err(EngineError::Protocol(
            "the server sent part of a message during the test".into(),
        ));
    }
    // The window's last part, unless it is a sliver of an interval.
    if every > 0.0 && last.at.elapsed().as_secs_f64() >= every / 2.0 {
        let mark = side.mark();
        let sample = mark.since(&last, begin, spec.warmup_s);
        on_interval(&sample);
        intervals.push(sample);
    }
    Ok((window, intervals))
}

/// Adds to a merged result what needs both sides' reports: the latency
/// breakdown, and a note on MPTCP with bbr.
fn annotate(res: &mut TestResult, spec: &TestSpec, mine: &SideReport, theirs: &SideReport) {
    if spec.breakdown {
        let p50 = res.latency.as_ref().map(|l| l.p50_us);
        let which: &[usize] = if spec.workload == crate::spec::Workload::Crr {
            &wirespeed_types::breakdown::CRR_SEGMENTS
        } else {
            &wirespeed_types::breakdown::RR_SEGMENTS
        };
        res.breakdown =
            crate::breakdown::combine(&mine.stamps, &theirs.stamps, which, p50, &mut res.notes);
    }
    if spec.mptcp && res.congestion_control == "bbr" {
        // Measured on kernel 6.18 veth: 0.22 Gbit/s with bbr, 48 with
        // cubic, a plain MPTCP socket alike (docs/iperf3.md).
        res.notes.push(
            "MPTCP with bbr: subflows may be paced far below the link (0.2 against 48 Gbit/s with cubic on kernel 6.18); try --cc cubic".into(),
        );
    }
}

/// The one path of a test that names none: to the server's name, or,
/// under -4/-6/-B, to the address the control connection reached (the
/// name could resolve to the other family), from -B's address.
fn default_path(reach: &Reach, ctrl: &Control) -> Result<PathSpec, EngineError> {
    if reach.family.is_none() && reach.bind.is_none() {
        return Ok(PathSpec {
            local: None,
            remote: ctrl.host.clone(),
        });
    }
    let peer = ctrl
        .stream
        .peer_addr()
        .map_err(|e| EngineError::io("read the control connection's peer", e))?;
    Ok(PathSpec {
        local: reach.bind.map(|b| b.to_string()),
        remote: peer.ip().to_string(),
    })
}

/// The most a whole test may plausibly move, bits per second (no host
/// moves 100 Tbit/s): a report above it is a lie or a bug.
const MAX_PLAUSIBLE_BPS: f64 = 1e14;

/// Checks the server's report before anything is computed from it: every
/// float finite and non-negative, a window near the spec's duration, the
/// roster's flow ids in order, window counts within totals, a plausible
/// rate, ordered percentiles; and escapes its free text.
pub fn check_report(r: &mut SideReport, spec: &TestSpec) -> Result<(), EngineError> {
    let bad = |m: String| Err(EngineError::Protocol(format!("the server's report {m}")));
    let d = spec.duration_s;
    // The server's window ends at its own clock or at our stop, which comes
    // after our window; a factor of 4 either way (plus scheduling slack)
    // is far beyond any honest difference.
    if !(r.window_s.is_finite() && r.window_s > 0.0) {
        return bad(format!("has a window of {} s", r.window_s));
    }
    // A byte-count end (-n/-k) may stop the window long before `d`.
    let too_short = spec.bytes.is_none() && r.window_s < d / 4.0;
    if too_short || r.window_s > d * 4.0 + 10.0 {
        return bad(format!(
            "has a window of {} s for a test of {d} s",
            r.window_s
        ));
    }
    let roster = spec.roster();
    if r.flows.len() != roster.len() {
        return bad(format!(
            "names {} flows, the test has {}",
            r.flows.len(),
            roster.len()
        ));
    }
    let mut window_bytes: u64 = 0;
    for (i, f) in r.flows.iter().enumerate() {
        if f.id as usize != i {
            return bad(format!("names flow {} where flow {i} belongs", f.id));
        }
        if f.window_sent > f.total_sent || f.window_received > f.total_received {
            return bad(format!(
                "counts more bytes in the window than in total on flow {i}"
            ));
        }
        if let Some(u) = &f.udp
            && !(u.jitter_us.is_finite() && (0.0..=1e12).contains(&u.jitter_us))
        {
            return bad(format!("has a jitter of {} us on flow {i}", u.jitter_us));
        }
        window_bytes = window_bytes
            .checked_add(f.window_sent)
            .and_then(|b| b.checked_add(f.window_received))
            .ok_or_else(|| EngineError::Protocol("the server's report overflows".into()))?;
        f.total_sent
            .checked_add(f.total_received)
            .ok_or_else(|| EngineError::Protocol("the server's report overflows".into()))?;
    }
    if window_bytes as f64 * 8.0 / r.window_s > MAX_PLAUSIBLE_BPS {
        return bad(format!(
            "claims {window_bytes} bytes in {} s, beyond 100 Tbit/s",
            r.window_s
        ));
    }
    let c = &r.cpu;
    let cpu = [c.user_pct, c.system_pct, c.total_pct, c.max_core_pct]
        .into_iter()
        .chain(c.per_core_pct.iter().copied())
        .chain(c.per_thread_pct.iter().copied())
        .chain(c.per_thread_wait_pct.iter().copied());
    for v in cpu {
        if !(v.is_finite() && v >= 0.0) {
            return bad(format!("has a CPU figure of {v}"));
        }
    }
    let most = [&c.per_core_pct, &c.per_thread_pct, &c.per_thread_wait_pct];
    if most.iter().any(|v| v.len() > 65536) || c.host_id.len() > 64 {
        return bad("has too many CPU figures".into());
    }
    for l in [&r.latency, &r.probe_latency].into_iter().flatten() {
        let p = [l.min_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us];
        let ok = p.iter().all(|v| v.is_finite() && *v >= 0.0)
            && p.windows(2).all(|w| w[0] <= w[1])
            && [l.mean_us, l.stddev_us]
                .iter()
                .all(|v| v.is_finite() && *v >= 0.0);
        if !ok {
            return bad(format!(
                "has latency percentiles out of order or invalid: {l:?}"
            ));
        }
    }
    crate::breakdown::check(&r.stamps, roster.len())
        .map_err(|m| EngineError::Protocol(format!("the server's report {m}")))?;
    r.notes.truncate(32);
    for n in &mut r.notes {
        *n = printable(n, MAX_SERVER_TEXT);
    }
    r.congestion_control = printable(&r.congestion_control, 16);
    Ok(())
}

/// How long each side may drain after the window.
pub fn drain_time(spec: &TestSpec) -> Duration {
    Duration::from_secs(5) + Duration::from_millis(spec.connections())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::SideFlow;

    /// A server report that passes the checks for `spec`.
    fn honest(spec: &TestSpec) -> SideReport {
        SideReport {
            window_s: spec.duration_s,
            flows: (0..spec.roster().len() as u32)
                .map(|id| SideFlow {
                    id,
                    ..SideFlow::default()
                })
                .collect(),
            ..SideReport::default()
        }
    }

    #[test]
    fn a_server_lying_about_its_waits_or_host_is_refused() {
        let spec = TestSpec::default();
        assert!(check_report(&mut honest(&spec), &spec).is_ok());
        let lies: [fn(&mut SideReport); 4] = [
            |r| r.cpu.per_thread_wait_pct = vec![f64::NAN],
            |r| r.cpu.per_thread_wait_pct = vec![-1.0],
            |r| r.cpu.per_thread_wait_pct = vec![1.0; 65537],
            |r| r.cpu.host_id = "x".repeat(65),
        ];
        for lie in lies {
            let mut r = honest(&spec);
            lie(&mut r);
            let e = check_report(&mut r, &spec).unwrap_err().to_string();
            assert!(e.contains("the server's report"), "{e}");
        }
    }
}
