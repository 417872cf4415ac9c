//! A test's data port: the listener (TCP) or registration socket (UDP),
//! on a free port of `--data-ports` or any.

use super::answer::fail;
use super::config::ServerConfig;
use crate::error::EngineError;
use crate::sockets::{apply_common, tcp_socket};
use crate::spec::{SocketType, TestSpec};
use crate::udp::bind_registration;
use crate::workloads;
use socket2::{Domain, SockAddr, Socket};
use std::net::{IpAddr, SocketAddr, TcpStream};

/// Opens a test's data port: a listener for TCP, a registration socket
/// for UDP, on the control connection's address (or the bound one);
/// returns them and the port.
pub(super) fn open_data_port(
    stream: &TcpStream,
    cfg: &ServerConfig,
    spec: &TestSpec,
    persistent: usize,
) -> Result<(Option<Socket>, Option<Socket>, u16), EngineError> {
    let local = stream
        .local_addr()
        .map_err(|e| EngineError::io("read control address", e))?;
    let any = match local.ip() {
        IpAddr::V4(_) if cfg.bind.is_unspecified() && cfg.bind.is_ipv4() => {
            IpAddr::from([0, 0, 0, 0])
        }
        _ if cfg.bind.is_unspecified() => cfg.bind,
        ip => ip,
    };
    let udp = workloads::def(spec.workload).socket() == SocketType::Udp;
    let backlog = persistent.clamp(128, 65535) as i32;
    let open_fail = |e: EngineError, what: &str| {
        let code = if is_out_of_fds(&e) || matches!(e, EngineError::Busy(_)) {
            "busy"
        } else {
            "internal"
        };
        fail(stream, code, format!("cannot open {what}: {e}"))
    };
    let v4_any = SocketAddr::new(IpAddr::from([0, 0, 0, 0]), 0);
    let (listener, registration) = if udp {
        let r = on_data_port(cfg, |p| {
            bind_registration(SocketAddr::new(any, p))
                .or_else(|_| bind_registration(SocketAddr::new(v4_any.ip(), p)))
        })
        .map_err(|e| open_fail(e, "a UDP registration socket"))?;
        (None, Some(r))
    } else {
        let l = on_data_port(cfg, |p| {
            listen_data(SocketAddr::new(any, p), backlog, spec)
                .or_else(|_| listen_data(SocketAddr::new(v4_any.ip(), p), backlog, spec))
        })
        .map_err(|e| open_fail(e, "a data listener"))?;
        (Some(l), None)
    };
    let port = listener
        .as_ref()
        .or(registration.as_ref())
        .and_then(|l| l.local_addr().ok())
        .and_then(|a| a.as_socket())
        .map(|a| a.port())
        .unwrap_or(0);
    Ok((listener, registration, port))
}

/// Whether `e` is the process (or system) out of file descriptors.
pub(super) fn is_out_of_fds(e: &EngineError) -> bool {
    matches!(e, EngineError::Io { error, .. } if super::table::out_of_fds(error))
}

/// A test's TCP data listener on `addr`, with the spec's socket options.
fn listen_data(addr: SocketAddr, backlog: i32, spec: &TestSpec) -> Result<Socket, EngineError> {
    // An MPTCP test needs an MPTCP listener: a TCP one would make every
    // flow fall back to plain TCP.
    let s = tcp_socket(Domain::for_address(addr), spec)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    // Buffer sizes and congestion control set here are inherited by every
    // accepted flow, in time for the handshake's window scale.
    apply_common(&s, spec)?;
    if addr.port() != 0 {
        // A fixed data port is taken again by the next test while the
        // last one's connections sit in TIME_WAIT.
        let _ = s.set_reuse_address(true);
    }
    s.bind(&SockAddr::from(addr))
        .map_err(|e| EngineError::io(format!("bind the data listener to {addr}"), e))?;
    s.listen(backlog)
        .map_err(|e| EngineError::io("listen for data flows", e))?;
    Ok(s)
}

/// Opens a test's data socket with `open` on a port of `cfg.data_ports`
/// (the first one free), or on any port when no range is set.
fn on_data_port<T>(
    cfg: &ServerConfig,
    open: impl Fn(u16) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let Some((lo, hi)) = cfg.data_ports else {
        return open(0);
    };
    let mut last = None;
    for p in lo..=hi {
        match open(p) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => EngineError::Busy(format!(
            "every data port {lo}-{hi} is taken (last: {e}); widen --data-ports or lower --max-tests"
        )),
        None => EngineError::Busy(format!("empty data port range {lo}-{hi}")),
    })
}
