//! The client: handshake with a server, connect every flow over its path,
//! run the window with interval samples, and merge both sides' figures.

use crate::error::EngineError;
use crate::merge::merge;
use crate::proto::{
    self, CONTROL_MAGIC, MAX_REPORT_FRAME, Msg, PROTOCOL_VERSION, SideReport, auth_mac,
    data_preamble, read_msg_max, unhex, write_msg,
};
use crate::result::{IntervalSample, TestResult};
use crate::side::{Side, SideSetup, Tick};
use crate::sockets::{
    ResolvedPath, congestion_of, connect_flow, resolve, resolve_path, split_host_port,
};
use crate::spec::{FlowKind, Limits, PathSpec, TestSpec};
use crate::sys;
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

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
    /// Timeout for connecting and for each control answer.
    pub timeout: Duration,
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

/// An authenticated control connection.
pub struct Control {
    stream: TcpStream,
    host: String,
    /// The server's limits.
    pub limits: Limits,
    timeout: Duration,
}

fn expect_error(m: Msg, what: &str) -> EngineError {
    match m {
        Msg::Error { code, message } => match code.as_str() {
            "busy" => EngineError::Busy(message),
            "auth" => EngineError::Auth(message),
            _ => EngineError::Refused(format!("{message} ({code})")),
        },
        other => EngineError::Protocol(format!("expected {what}, got {other:?}")),
    }
}

impl Control {
    /// Connects, says hello and proves the key.
    pub fn connect(cfg: &ClientConfig) -> Result<Control, EngineError> {
        let (host, port) = split_host_port(&cfg.server, cfg.port)?;
        let addr = resolve(&host, port, None)?;
        let stream = TcpStream::connect_timeout(&addr, cfg.timeout).map_err(|e| {
            EngineError::io(
                format!("connect to wirespeed server at {addr} (is `wirespeed serve` running?)"),
                e,
            )
        })?;
        stream.set_nodelay(true).ok();
        stream.set_read_timeout(Some(cfg.timeout)).ok();
        stream.set_write_timeout(Some(cfg.timeout)).ok();
        let mut c = Control {
            stream,
            host,
            limits: Limits::default(),
            timeout: cfg.timeout,
        };
        c.stream
            .write_all(&CONTROL_MAGIC)
            .map_err(|e| EngineError::io("send control preamble", e))?;
        c.send(&Msg::Hello {
            version: PROTOCOL_VERSION,
            client: format!("wirespeed {}", env!("CARGO_PKG_VERSION")),
        })?;
        let (nonce, required) = match c.recv()? {
            Msg::Challenge {
                nonce,
                auth_required,
            } => (nonce, auth_required),
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
        match c.recv()? {
            Msg::Welcome { limits } => c.limits = limits,
            m => return Err(expect_error(m, "welcome")),
        }
        Ok(c)
    }

    /// Sends a message.
    pub fn send(&mut self, m: &Msg) -> Result<(), EngineError> {
        write_msg(&mut self.stream, m)
    }

    /// Receives a message within the timeout.
    pub fn recv(&mut self) -> Result<Msg, EngineError> {
        read_msg_max(&mut self.stream, MAX_REPORT_FRAME)
    }

    fn recv_within(&mut self, t: Duration) -> Result<Msg, EngineError> {
        self.stream.set_read_timeout(Some(t)).ok();
        let r = self.recv();
        self.stream.set_read_timeout(Some(self.timeout)).ok();
        r
    }
}

/// Runs one test; `on_interval` sees each interval sample as it happens.
pub fn run_test(
    cfg: &ClientConfig,
    spec: &TestSpec,
    on_interval: &mut dyn FnMut(&IntervalSample),
) -> Result<TestResult, EngineError> {
    sys::raise_fd_limit();
    let mut ctrl = Control::connect(cfg)?;
    let mut spec = spec.clone();
    if spec.paths.is_empty() {
        spec.paths.push(PathSpec {
            local: None,
            remote: ctrl.host.clone(),
        });
    }
    spec.validate(&ctrl.limits)?;
    ctrl.send(&Msg::Spec {
        spec: Box::new(spec.clone()),
    })?;
    let (token, port) = match ctrl.recv()? {
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
    let roster = spec.roster();
    let mut socks = Vec::with_capacity(roster.len());
    let mut cc = String::new();
    for plan in &roster {
        if plan.kind == FlowKind::Crr {
            socks.push(None);
            continue;
        }
        let path = &paths[plan.path as usize];
        let s = connect_flow(path, &spec, &data_preamble(&token, plan.id), cfg.timeout).map_err(
            |e| {
                EngineError::Spec(format!(
                    "flow {} over path {}: {e}",
                    plan.id,
                    spec.paths[plan.path as usize].label()
                ))
            },
        )?;
        if plan.kind == FlowKind::Probe {
            s.set_tcp_nodelay(true).ok();
        }
        if cc.is_empty() {
            cc = congestion_of(&s);
        }
        socks.push(Some(s));
    }
    let connect_wait = cfg.timeout + Duration::from_millis(roster.len() as u64);
    ctrl.send(&Msg::Start)?;
    match ctrl.recv_within(connect_wait)? {
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
    };
    let side = Side::start(setup, drain_time(&spec))?;
    let ctl_fd = ctrl.stream.as_raw_fd();
    let mut intervals = Vec::new();
    let mut last = side.mark();
    let begin = last.at;
    let every = spec.interval_s;
    let mut server_error: Option<EngineError> = None;
    let window = side.run_window(&spec, |s, now| {
        if sys::poll_readable(ctl_fd, 0).unwrap_or(false) {
            // The server only speaks mid-test to report a failure.
            let m = proto::read_msg_max(&mut &ctrl.stream, MAX_REPORT_FRAME)
                .unwrap_or_else(|e| Msg::error("protocol", e.to_string()));
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
            drop(side);
            return Err(server_error.unwrap_or(e));
        }
    };
    // The window's last part, unless it is a sliver of an interval.
    if every > 0.0 && last.at.elapsed().as_secs_f64() >= every / 2.0 {
        let mark = side.mark();
        let sample = mark.since(&last, begin, spec.warmup_s);
        on_interval(&sample);
        intervals.push(sample);
    }
    ctrl.send(&Msg::Stop)?;
    let mut mine = side.finish(&window);
    mine.congestion_control = cc;
    let theirs: SideReport = match ctrl.recv_within(cfg.timeout + drain_time(&spec))? {
        Msg::Report { report } => *report,
        m => return Err(expect_error(m, "report")),
    };
    if theirs.flows.len() != roster.len() {
        return Err(EngineError::Protocol(format!(
            "server reported {} flows, the test has {}",
            theirs.flows.len(),
            roster.len()
        )));
    }
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
    Ok(res)
}

/// How long each side may drain after the window.
pub fn drain_time(spec: &TestSpec) -> Duration {
    Duration::from_secs(5) + Duration::from_millis(spec.connections())
}
