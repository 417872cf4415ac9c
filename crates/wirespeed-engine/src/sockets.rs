//! Data sockets: resolving paths, binding to an address or device, and
//! applying the test's socket knobs the same way on both sides.

use crate::error::EngineError;
use crate::spec::{PathSpec, TestSpec};
use crate::sys;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::AsFd;
use std::time::Duration;

/// Where a path's flows bind locally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalBind {
    /// Let the routing table choose.
    Any,
    /// Bind this source address.
    Addr(IpAddr),
    /// SO_BINDTODEVICE this interface.
    Device(String),
}

/// A path with addresses resolved and the data port filled in.
#[derive(Debug, Clone)]
pub struct ResolvedPath {
    /// Local binding.
    pub local: LocalBind,
    /// Remote data address.
    pub remote: SocketAddr,
}

/// Splits `host`, `host:port`, `[v6]:port` or a bare IPv6 address.
pub fn split_host_port(s: &str, default_port: u16) -> Result<(String, u16), EngineError> {
    let s = s.trim();
    let bad = || {
        EngineError::Spec(format!(
            "bad address {s:?}: use HOST, HOST:PORT or [IPV6]:PORT"
        ))
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None if tail.is_empty() => default_port,
            None => return Err(bad()),
        };
        return Ok((host.to_string(), port));
    }
    if s.parse::<IpAddr>().is_ok() {
        return Ok((s.to_string(), default_port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => Ok((h.to_string(), p.parse().map_err(|_| bad())?)),
        Some(_) => Err(bad()),
        None if s.is_empty() => Err(bad()),
        None => Ok((s.to_string(), default_port)),
    }
}

/// Resolves a host and port to the first address of the wanted family
/// (any family when `family_of` is None).
pub fn resolve(
    host: &str,
    port: u16,
    family_of: Option<IpAddr>,
) -> Result<SocketAddr, EngineError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| EngineError::io(format!("resolve {host}"), e))?
        .collect();
    addrs
        .iter()
        .find(|a| family_of.is_none_or(|f| f.is_ipv4() == a.is_ipv4()))
        .or(addrs.first())
        .copied()
        .ok_or_else(|| EngineError::Spec(format!("{host} has no address")))
}

/// Resolves a path: local address or device, remote with the data port.
pub fn resolve_path(p: &PathSpec, data_port: u16) -> Result<ResolvedPath, EngineError> {
    let local = match p.local.as_deref() {
        None | Some("*") => LocalBind::Any,
        Some(l) => match l.trim_matches(|c| c == '[' || c == ']').parse::<IpAddr>() {
            Ok(ip) => LocalBind::Addr(ip),
            Err(_) => {
                if l.len() > 15 || l.contains(['/', ' ', ':']) {
                    return Err(EngineError::Spec(format!(
                        "path local side {l:?} is neither an IP address nor an interface name"
                    )));
                }
                LocalBind::Device(l.to_string())
            }
        },
    };
    let (host, _) = split_host_port(&p.remote, data_port)?;
    let family = match &local {
        LocalBind::Addr(ip) => Some(*ip),
        _ => None,
    };
    let remote = resolve(&host, data_port, family)?;
    if let LocalBind::Addr(ip) = &local
        && ip.is_ipv4() != remote.is_ipv4()
    {
        return Err(EngineError::Spec(format!(
            "path {}: local {ip} and remote {} are of different IP families",
            p.label(),
            remote.ip()
        )));
    }
    Ok(ResolvedPath { local, remote })
}

/// Options every data socket of the test gets, before connect or listen.
pub fn apply_common(sock: &Socket, spec: &TestSpec) -> Result<(), EngineError> {
    fn ctx(what: &'static str) -> impl Fn(std::io::Error) -> EngineError {
        move |e| EngineError::io(what, e)
    }
    if let Some(b) = spec.sndbuf {
        sock.set_send_buffer_size(b as usize)
            .map_err(ctx("set SO_SNDBUF"))?;
    }
    if let Some(b) = spec.rcvbuf {
        sock.set_recv_buffer_size(b as usize)
            .map_err(ctx("set SO_RCVBUF"))?;
    }
    if let Some(cc) = &spec.congestion {
        sock.set_tcp_congestion(cc.as_bytes()).map_err(|e| {
            EngineError::io(
                format!("set congestion control {cc:?} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"),
                e,
            )
        })?;
    }
    if spec.nodelay {
        sock.set_tcp_nodelay(true).map_err(ctx("set TCP_NODELAY"))?;
    }
    if let Some(bps) = spec.pacing_bps {
        sys::set_max_pacing_rate(sock.as_fd(), bps / 8).map_err(ctx("set SO_MAX_PACING_RATE"))?;
    }
    apply_tos(sock, spec)
}

/// Sets the test's TOS byte (--tos/--dscp) and busy polling (--busy-poll)
/// on any data socket, TCP or UDP.
pub fn apply_tos(sock: &Socket, spec: &TestSpec) -> Result<(), EngineError> {
    if let Some(us) = spec.busy_poll_us {
        // SO_PREFER_BUSY_POLL is left off: without the device's
        // napi_defer_hard_irqs and gro_flush_timeout it makes the NAPI
        // softirq back off for a poller that may not come.
        sys::set_busy_poll(sock.as_fd(), us).map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::EPERM) {
                ": raising it needs CAP_NET_ADMIN (run as root, or set net.core.busy_read instead)"
            } else {
                ""
            };
            EngineError::io(format!("set SO_BUSY_POLL to {us} us{hint}"), e)
        })?;
    }
    if let Some(tos) = spec.tos {
        let v6 = sock.domain().is_ok_and(|d| d == Domain::IPV6);
        sys::set_tos(sock.as_fd(), v6, tos)
            .map_err(|e| EngineError::io(format!("set TOS 0x{tos:02x} (IP_TOS)"), e))?;
    }
    Ok(())
}

/// A new TCP socket of `domain`: MPTCP when the test asks (-m), with the
/// reason when the kernel refuses.
pub fn tcp_socket(domain: Domain, spec: &TestSpec) -> Result<Socket, EngineError> {
    if !spec.mptcp {
        return Socket::new(domain, Type::STREAM.cloexec(), Some(Protocol::TCP))
            .map_err(|e| EngineError::io("create a TCP socket", e));
    }
    Socket::new(
        domain,
        Type::STREAM.cloexec(),
        Some(Protocol::from(sys::IPPROTO_MPTCP)),
    )
    .map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::ENOPROTOOPT) => {
                "MPTCP is off here: set net.mptcp.enabled=1 (sysctl) or drop -m"
            }
            Some(libc::EPROTONOSUPPORT) | Some(libc::EINVAL) => {
                "this kernel has no MPTCP (CONFIG_MPTCP): drop -m"
            }
            _ => "MPTCP socket refused",
        };
        EngineError::Spec(format!("create an MPTCP socket: {why} ({e})"))
    })
}

/// Enables MSG_ZEROCOPY on a sending socket; returns a note when it cannot.
pub fn enable_zerocopy(sock: &Socket) -> Option<String> {
    sys::set_zerocopy(sock.as_fd())
        .err()
        .map(|e| format!("zerocopy unavailable ({e}): sends are copied"))
}

/// A new TCP socket for `remote`, bound per `local` (to `port` if given).
pub fn data_socket(
    path: &ResolvedPath,
    spec: &TestSpec,
    port: Option<u16>,
) -> Result<Socket, EngineError> {
    let domain = if path.remote.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let sock = tcp_socket(domain, spec)?;
    apply_common(&sock, spec)?;
    bind_local(&sock, path, port)?;
    Ok(sock)
}

/// Binds a client socket as its path says, to `port` when one is given
/// (--cport), else to an ephemeral port chosen at connect.
pub fn bind_local(
    sock: &Socket,
    path: &ResolvedPath,
    port: Option<u16>,
) -> Result<(), EngineError> {
    if let Some(port) = port {
        let ip = match &path.local {
            LocalBind::Addr(ip) => *ip,
            _ if path.remote.is_ipv4() => IpAddr::from([0u8; 4]),
            _ => IpAddr::from([0u16; 8]),
        };
        if let LocalBind::Device(dev) = &path.local {
            sock.bind_device(Some(dev.as_bytes())).map_err(|e| {
                EngineError::io(format!("bind to device {dev} (needs CAP_NET_RAW)"), e)
            })?;
        }
        sock.set_reuse_address(true)
            .map_err(|e| EngineError::io("set SO_REUSEADDR", e))?;
        return sock
            .bind(&SockAddr::from(SocketAddr::new(ip, port)))
            .map_err(|e| EngineError::io(format!("bind to client port {port} (--cport)"), e));
    }
    match &path.local {
        LocalBind::Any => {}
        LocalBind::Addr(ip) => {
            // Defer the port choice to connect(): with many flows from one
            // address, bind() alone would exhaust the ephemeral ports.
            sys::set_bind_address_no_port(sock.as_fd())
                .map_err(|e| EngineError::io("set IP_BIND_ADDRESS_NO_PORT", e))?;
            sock.bind(&SockAddr::from(SocketAddr::new(*ip, 0)))
                .map_err(|e| EngineError::io(format!("bind to local address {ip}"), e))?;
        }
        LocalBind::Device(dev) => {
            sock.bind_device(Some(dev.as_bytes())).map_err(|e| {
                EngineError::io(format!("bind to device {dev} (needs CAP_NET_RAW)"), e)
            })?;
        }
    }
    Ok(())
}

/// The client port of flow `id` under --cport: the base port plus the id.
pub fn client_port(spec: &TestSpec, id: u32) -> Option<u16> {
    spec.client_port
        .and_then(|p| u16::try_from(u32::from(p) + id).ok())
}

/// Connects data flow `id`, blocking up to `timeout`, and sends its preamble.
pub fn connect_flow(
    path: &ResolvedPath,
    spec: &TestSpec,
    id: u32,
    preamble: &[u8],
    timeout: Duration,
) -> Result<Socket, EngineError> {
    let sock = data_socket(path, spec, client_port(spec, id))?;
    sock.connect_timeout(&SockAddr::from(path.remote), timeout)
        .map_err(|e| EngineError::io(format!("connect a data flow to {}", path.remote), e))?;
    let mut sent = 0;
    while sent < preamble.len() {
        sent += sock
            .send(&preamble[sent..])
            .map_err(|e| EngineError::io(format!("send a data preamble to {}", path.remote), e))?;
    }
    sock.set_nonblocking(true)
        .map_err(|e| EngineError::io("make a data socket non-blocking", e))?;
    Ok(sock)
}

/// The congestion control a socket uses.
pub fn congestion_of(sock: &Socket) -> String {
    sock.tcp_congestion()
        .map(|v| {
            String::from_utf8_lossy(&v)
                .trim_end_matches('\0')
                .to_string()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(split_host_port("h", 1).unwrap(), ("h".into(), 1));
        assert_eq!(split_host_port("h:5", 1).unwrap(), ("h".into(), 5));
        assert_eq!(split_host_port("[::1]:5", 1).unwrap(), ("::1".into(), 5));
        assert_eq!(
            split_host_port("fd00::2", 1).unwrap(),
            ("fd00::2".into(), 1)
        );
        assert!(split_host_port("h:x", 1).is_err());
        assert!(split_host_port("", 1).is_err());
        assert!(split_host_port("[::1", 1).is_err());
    }

    #[test]
    fn pacing_above_34_gbit_is_not_cut_to_32_bits() {
        for bps in [200_000_000u64, 50_000_000_000, 400_000_000_000] {
            let spec = TestSpec {
                pacing_bps: Some(bps),
                ..TestSpec::default()
            };
            let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
            apply_common(&s, &spec).unwrap();
            let info = sys::tcp_info(s.as_fd()).unwrap();
            assert_eq!(info.max_pacing_rate, bps / 8, "{bps}");
        }
    }

    #[test]
    fn path_families_must_match() {
        let p = PathSpec::parse("127.0.0.1=::1").unwrap();
        assert!(resolve_path(&p, 1).is_err());
        let p = PathSpec::parse("lo=127.0.0.1").unwrap();
        assert_eq!(
            resolve_path(&p, 1).unwrap().local,
            LocalBind::Device("lo".into())
        );
    }
}
