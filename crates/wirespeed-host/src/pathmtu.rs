//! Path-MTU probing, as tracepath does it: ICMP echo requests with the
//! don't-fragment bit, of chosen sizes, toward the default gateway and
//! the peers. A too-big answer from a hop (ICMP fragmentation needed /
//! packet too big) lowers the kernel's path-MTU cache, read back with
//! IP_MTU; a hop that drops large packets silently shows as silence above
//! a size where smaller packets are answered (a bounded binary search).
//!
//! A probe can never be larger than the MTU of the device it leaves by:
//! before an MTU is raised, nothing on this host can show that the path
//! carries the larger size. The measurement says so ([`PathMtu::exact`]),
//! and the check after a change ([`full_size_gets_through`]) closes it.

use crate::HostError;
use crate::rtnl::Rtnl;
use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// How long one probe waits for its answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// Most time one path's measurement takes.
pub const PATH_BUDGET: Duration = Duration::from_secs(5);
/// Most probes one path's measurement sends.
pub const MAX_PROBES: u32 = 24;

/// What the path toward one address carries, as measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathMtu {
    /// The address probed.
    pub target: String,
    /// Why it was probed: "gateway" or "peer".
    pub role: String,
    /// The device the route toward it leaves by.
    pub dev: Option<String>,
    /// The largest packet the kernel let a probe be (the route's MTU,
    /// lowered by its path-MTU cache).
    pub local_mtu: Option<u32>,
    /// The largest packet (IP header included) that got an answer; None
    /// when nothing answered.
    pub mtu: Option<u32>,
    /// True when `mtu` is the path's own limit (a hop answered too-big or
    /// dropped larger probes); false when it is only the local bound, so
    /// the path may carry more.
    pub exact: bool,
    /// How the figure was found, in words.
    pub how: String,
    /// Probes sent.
    pub probes: u32,
}

impl PathMtu {
    /// The line shown as evidence: "1400 bytes (ICMP ...)".
    pub fn summary(&self) -> String {
        match self.mtu {
            Some(m) if self.exact => format!("{m} bytes ({})", self.how),
            Some(m) => format!("at least {m} bytes ({})", self.how),
            None => format!("not measured ({})", self.how),
        }
    }
}

/// One probe's outcome.
#[derive(Debug)]
enum Probe {
    /// The echo reply came back.
    Answered,
    /// Too big: the kernel refused to send it or a hop answered so; the
    /// kernel's path MTU now.
    TooBig(Option<u32>),
    /// No answer within the timeout.
    Silent,
    /// The target cannot be reached at all (the kernel's answer).
    Unreachable(io::Error),
}

/// A connected ICMP echo socket with DF set: raw when allowed, else a
/// ping socket (net.ipv4.ping_group_range).
struct Pinger {
    sock: Socket,
    v6: bool,
    raw: bool,
    id: u16,
    seq: u16,
}

fn sock_err(what: &'static str, target: IpAddr, error: io::Error) -> HostError {
    HostError::Probe {
        what,
        target,
        error,
    }
}

impl Pinger {
    fn open(target: IpAddr) -> Result<Pinger, HostError> {
        let v6 = target.is_ipv6();
        let (domain, proto) = if v6 {
            (Domain::IPV6, Protocol::ICMPV6)
        } else {
            (Domain::IPV4, Protocol::ICMPV4)
        };
        let (sock, raw) = match Socket::new(domain, Type::RAW, Some(proto)) {
            Ok(s) => (s, true),
            Err(raw_err) => match Socket::new(domain, Type::DGRAM, Some(proto)) {
                Ok(s) => (s, false),
                Err(_) => {
                    return Err(sock_err(
                        "cannot open an ICMP socket (needs root/CAP_NET_RAW or net.ipv4.ping_group_range)",
                        target,
                        raw_err,
                    ));
                }
            },
        };
        crate::sys::set_pmtu_do(sock.as_raw_fd(), v6)
            .map_err(|e| sock_err("cannot set don't-fragment", target, e))?;
        sock.connect(&SockAddr::from(SocketAddr::new(target, 0)))
            .map_err(|e| sock_err("cannot route a probe", target, e))?;
        let id = (std::process::id() as u16) ^ 0x5753;
        Ok(Pinger {
            sock,
            v6,
            raw,
            id,
            seq: 0,
        })
    }

    /// The kernel's path MTU toward the target now.
    fn kernel_mtu(&self) -> Option<u32> {
        crate::sys::path_mtu(self.sock.as_raw_fd(), self.v6)
            .ok()
            .filter(|m| *m > 0)
    }

    fn header(&self) -> u32 {
        if self.v6 { 48 } else { 28 }
    }

    /// Sends one echo request `size` bytes long (IP header included) and
    /// waits up to `timeout` for its reply.
    fn probe(&mut self, size: u32, timeout: Duration) -> Probe {
        self.seq = self.seq.wrapping_add(1);
        let payload = size.saturating_sub(self.header()) as usize;
        let mut pkt = vec![0u8; 8 + payload];
        pkt[0] = if self.v6 { 128 } else { 8 };
        pkt[4..6].copy_from_slice(&self.id.to_be_bytes());
        pkt[6..8].copy_from_slice(&self.seq.to_be_bytes());
        for (i, b) in pkt[8..].iter_mut().enumerate() {
            *b = i as u8;
        }
        if !self.v6 {
            let c = checksum(&pkt);
            pkt[2..4].copy_from_slice(&c.to_be_bytes());
        }
        // A too-big answer to an earlier probe may wait as the socket's error.
        let _ = self.sock.take_error();
        if let Err(e) = self.sock.send(&pkt) {
            return self.classify(e);
        }
        let until = Instant::now() + timeout;
        let mut buf = vec![0u8; 65536 + 128];
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Probe::Silent;
            }
            if self.sock.set_read_timeout(Some(left)).is_err() {
                return Probe::Silent;
            }
            match (&self.sock).read(&mut buf) {
                Ok(n) => {
                    if self.is_reply(&buf[..n]) {
                        return Probe::Answered;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Probe::Silent;
                    }
                }
                Err(e) => return self.classify(e),
            }
        }
    }

    fn classify(&self, e: io::Error) -> Probe {
        if e.raw_os_error() == Some(libc::EMSGSIZE) {
            Probe::TooBig(self.kernel_mtu())
        } else {
            Probe::Unreachable(e)
        }
    }

    fn is_reply(&self, b: &[u8]) -> bool {
        let b = if !self.v6 && self.raw {
            let ihl = b.first().map(|x| (x & 0x0f) as usize * 4).unwrap_or(0);
            b.get(ihl..).unwrap_or(&[])
        } else {
            b
        };
        if b.len() < 8 {
            return false;
        }
        let reply = if self.v6 { 129 } else { 0 };
        let id_ok = !self.raw || u16::from_be_bytes([b[4], b[5]]) == self.id;
        b[0] == reply && id_ok && u16::from_be_bytes([b[6], b[7]]) == self.seq
    }
}

/// The Internet checksum (RFC 1071).
fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in b.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += w as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The device the kernel routes `dst` by (None when unroutable).
pub fn route_dev(dst: IpAddr, snap: &Snapshot) -> Option<String> {
    let mut rt = Rtnl::open().ok()?;
    let index = rt.route_get(dst, None).ok().flatten()?;
    snap.links
        .iter()
        .find(|l| l.index == index)
        .map(|l| l.name.clone())
}

/// The gateways of the default routes in the main table (IPv4, and IPv6
/// ones that are not link-local: those need a scope this probe lacks).
pub fn gateways(snap: &Snapshot) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    for r in snap
        .routes
        .iter()
        .filter(|r| r.dst == "default" && r.table == 254)
    {
        let gws = r
            .gateway
            .iter()
            .chain(r.nexthops.iter().filter_map(|h| h.gateway.as_ref()));
        for g in gws {
            if let Ok(ip) = g.parse::<IpAddr>()
                && !out.contains(&ip)
                && !matches!(ip, IpAddr::V6(v) if (v.segments()[0] & 0xffc0) == 0xfe80)
            {
                out.push(ip);
            }
        }
    }
    out
}

/// Measures the path MTU toward `target`: one probe at the largest size
/// the kernel allows, and when that is not answered a binary search
/// below it, bounded by [`MAX_PROBES`] and [`PATH_BUDGET`].
pub fn measure(target: IpAddr, role: &str, snap: &Snapshot) -> PathMtu {
    let dev = route_dev(target, snap);
    let dev_mtu = dev.as_deref().and_then(|d| snap.link(d)).map(|l| l.mtu);
    let mut out = PathMtu {
        target: target.to_string(),
        role: role.into(),
        dev: dev.clone(),
        local_mtu: None,
        mtu: None,
        exact: false,
        how: String::new(),
        probes: 0,
    };
    let mut p = match Pinger::open(target) {
        Ok(p) => p,
        Err(e) => {
            out.how = format!("cannot probe: {e}");
            return out;
        }
    };
    let start = Instant::now();
    let local = p.kernel_mtu().unwrap_or(1500).min(65535);
    out.local_mtu = Some(local);
    let min = if p.v6 { 1280 } else { 576 }.min(local);
    let send = |p: &mut Pinger, size: u32, out: &mut PathMtu| {
        out.probes += 1;
        p.probe(size, PROBE_TIMEOUT)
    };
    let over = |out: &PathMtu| out.probes >= MAX_PROBES || start.elapsed() >= PATH_BUDGET;
    // The largest size first, lowered by every too-big answer.
    let mut hi = local;
    let mut icmp: Option<u32> = None;
    loop {
        match send(&mut p, hi, &mut out) {
            Probe::Answered => {
                out.mtu = Some(hi);
                let below_dev = dev_mtu.is_some_and(|d| hi < d);
                out.exact = icmp.is_some() || below_dev;
                out.how = match (icmp, below_dev) {
                    (Some(m), _) => format!(
                        "a hop answered \"fragmentation needed\": the kernel's path MTU is {m}"
                    ),
                    (None, true) => format!(
                        "the kernel's path-MTU cache holds {hi}, below {}'s MTU {}",
                        dev.as_deref().unwrap_or("?"),
                        dev_mtu.unwrap_or(0)
                    ),
                    (None, false) => format!(
                        "answered at {hi}, the largest probe {} lets out: larger sizes cannot be probed before the MTU is raised",
                        dev.as_deref()
                            .map(|d| format!("{d}'s MTU"))
                            .unwrap_or_else(|| "the route".into())
                    ),
                };
                return out;
            }
            Probe::TooBig(Some(m)) if m < hi && m >= 68 && !over(&out) => {
                icmp = Some(m);
                hi = m;
            }
            Probe::TooBig(m) => {
                out.how = format!(
                    "the kernel refuses {hi}-byte probes (path MTU {})",
                    m.map(|m| m.to_string()).unwrap_or_else(|| "unknown".into())
                );
                return out;
            }
            Probe::Unreachable(e) => {
                out.how = format!("unreachable: {e}");
                return out;
            }
            Probe::Silent if hi <= min => {
                out.how = "no answer to echo requests".into();
                return out;
            }
            Probe::Silent => break,
        }
    }
    // Silence at `hi`: does it answer at all?
    let mut good = None;
    for _ in 0..2 {
        if matches!(send(&mut p, min, &mut out), Probe::Answered) {
            good = Some(min);
            break;
        }
    }
    let Some(mut good) = good else {
        out.how = format!("no answer to echo requests (tried {hi} and {min} bytes)");
        return out;
    };
    let mut bad = hi;
    while bad - good > 1 && !over(&out) {
        let mid = good + (bad - good) / 2;
        match send(&mut p, mid, &mut out) {
            Probe::Answered => good = mid,
            Probe::TooBig(Some(m)) if m > good && m < mid => bad = m + 1,
            _ => bad = mid,
        }
    }
    out.mtu = Some(good);
    out.exact = true;
    out.how = if bad - good > 1 {
        format!(
            "answered at {good}, silence at {bad} and above; the search stopped at its limit of {} probes / {} s",
            MAX_PROBES,
            PATH_BUDGET.as_secs()
        )
    } else {
        format!("answered at {good}, no answer at {bad}: larger packets are dropped silently")
    };
    out
}

/// Measures the path toward every default gateway and every peer, in
/// parallel (each bounded by [`PATH_BUDGET`]).
pub fn measure_all(snap: &Snapshot, peers: &[IpAddr]) -> Vec<PathMtu> {
    let mut targets: Vec<(IpAddr, &str)> = Vec::new();
    for (ip, role) in gateways(snap)
        .into_iter()
        .map(|g| (g, "gateway"))
        .chain(peers.iter().map(|p| (*p, "peer")))
    {
        if !targets.iter().any(|(t, _)| *t == ip) {
            targets.push((ip, role));
        }
    }
    std::thread::scope(|sc| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(ip, role)| sc.spawn(move || measure(*ip, role, snap)))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// Why [`answers`] or [`full_size_gets_through`] says no.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// No probe could be sent (no ICMP socket, no route).
    #[error(transparent)]
    Open(Box<HostError>),
    /// No answer to small echo requests within the window.
    #[error(
        "{target} does not answer echo requests any more ({}, for {window_s:.0} s)",
        last.as_ref().map_or_else(|| "no answer".to_string(), |e| e.to_string())
    )]
    Silent {
        /// The target.
        target: IpAddr,
        /// The kernel's answer to the last probe, when not silence.
        last: Option<io::Error>,
        /// How long it was retried, seconds.
        window_s: f64,
    },
    /// A full-size packet is too big for the path.
    #[error(
        "a {size}-byte packet (don't fragment) toward {target} is too big: {}",
        match path_mtu {
            Some(m) => format!("the path carries {m} bytes at most"),
            None => "the kernel refuses it".into(),
        }
    )]
    TooBig {
        /// The packet's size, bytes.
        size: u32,
        /// The target.
        target: IpAddr,
        /// The kernel's path MTU, when it has one.
        path_mtu: Option<u32>,
    },
    /// The kernel says the target cannot be reached.
    #[error("{target} is unreachable: {error}")]
    Unreachable {
        /// The target.
        target: IpAddr,
        /// The kernel's answer.
        error: io::Error,
    },
    /// No answer to a full-size packet within the window.
    #[error(
        "no answer to a {size}-byte packet (don't fragment) toward {target} within {window_s:.0} s; {}",
        if *small_answered { "small ones are answered" } else { "small ones are not answered either" }
    )]
    FullSizeSilent {
        /// The packet's size, bytes.
        size: u32,
        /// The target.
        target: IpAddr,
        /// How long it was retried, seconds.
        window_s: f64,
        /// Whether a small echo request was answered after.
        small_answered: bool,
    },
}

/// Whether `target` answers a small echo request within `window`
/// (retried every [`PROBE_TIMEOUT`]).
pub fn answers(target: IpAddr, window: Duration) -> Result<(), CheckError> {
    let mut p = Pinger::open(target).map_err(|e| CheckError::Open(Box::new(e)))?;
    let start = Instant::now();
    loop {
        let last = match p.probe(p.header() + 56, PROBE_TIMEOUT) {
            Probe::Answered => return Ok(()),
            Probe::Unreachable(e) => Some(e),
            _ => None,
        };
        if start.elapsed() >= window {
            return Err(CheckError::Silent {
                target,
                last,
                window_s: window.as_secs_f64(),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a `size`-byte packet with DF set gets through to `target` and
/// back within `window`. A too-big answer fails at once (the path cannot
/// carry it); silence is retried until the window ends (a NIC whose MTU
/// changed may take a moment to come back up).
pub fn full_size_gets_through(
    target: IpAddr,
    size: u32,
    window: Duration,
) -> Result<(), CheckError> {
    let mut p = Pinger::open(target).map_err(|e| CheckError::Open(Box::new(e)))?;
    let start = Instant::now();
    loop {
        match p.probe(size, PROBE_TIMEOUT) {
            Probe::Answered => return Ok(()),
            Probe::TooBig(path_mtu) => {
                return Err(CheckError::TooBig {
                    size,
                    target,
                    path_mtu,
                });
            }
            Probe::Unreachable(error) if start.elapsed() >= window => {
                return Err(CheckError::Unreachable { target, error });
            }
            _ if start.elapsed() >= window => {
                let small_answered =
                    matches!(p.probe(p.header() + 56, PROBE_TIMEOUT), Probe::Answered);
                return Err(CheckError::FullSizeSilent {
                    size,
                    target,
                    window_s: window.as_secs_f64(),
                    small_answered,
                });
            }
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071's example words sum to 0xddf2 (before the complement).
        let b = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&b), !0xddf2);
        // An odd length pads with a zero byte.
        assert_eq!(checksum(&[0xff]), !0xff00);
    }

    #[test]
    fn summaries_say_whether_the_figure_is_the_paths_own() {
        let mut p = PathMtu {
            target: "10.0.0.1".into(),
            role: "gateway".into(),
            dev: Some("eth0".into()),
            local_mtu: Some(1500),
            mtu: Some(1400),
            exact: true,
            how: "icmp".into(),
            probes: 2,
        };
        assert_eq!(p.summary(), "1400 bytes (icmp)");
        p.exact = false;
        assert!(p.summary().starts_with("at least 1400"));
        p.mtu = None;
        assert!(p.summary().starts_with("not measured"));
    }
}
