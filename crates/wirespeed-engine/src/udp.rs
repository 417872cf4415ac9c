//! What the UDP workloads share: the header every datagram (and every GSO
//! segment) starts with, sequence and jitter bookkeeping, sockets, and the
//! registration that binds each flow's server socket to its client.
//!
//! Registration (docs/protocol.md, "UDP flows"): the server answers a
//! UDP spec with the port of a registration socket. Each client flow
//! sends a `register` datagram from its own socket carrying the test's
//! token and its flow id; the server checks the token, opens a socket for
//! the flow bound to the address the datagram was sent to (IP_PKTINFO),
//! connect()s it to the datagram's source and answers `registered` from
//! it. The client then connect()s its socket to that answer's source. From
//! then on the kernel delivers to each flow socket only datagrams from its
//! one peer address: anything else, from another host or port, never
//! reaches the test.

use crate::error::EngineError;
use crate::harness::{EV_TIMER, Status, ThreadState};
use crate::proto::TOKEN_LEN;
use crate::sockets::{LocalBind, ResolvedPath, apply_tos, bind_local, client_port};
use crate::spec::{FlowKind, FlowPlan, TestSpec, UDP_HEADER_LEN};
use crate::sys;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// First bytes of every wirespeed UDP datagram.
pub const UDP_MAGIC: [u8; 4] = *b"WSPU";
/// Header length, bytes (the spec's smallest datagram).
pub const HEADER: usize = UDP_HEADER_LEN as usize;
/// Most datagrams (or GSO buffers) per sendmmsg / recvmmsg call.
pub const BATCH: usize = 64;
/// Most segments in one GSO send (the kernel's UDP_MAX_SEGMENTS is 64 on
/// older kernels).
pub const GSO_SEGMENTS: usize = 64;
/// Largest payload of one GSO send, bytes.
pub const GSO_BYTES: usize = 63 * 1024;
/// Largest message GRO hands up, bytes.
pub const GRO_BYTES: usize = 65536;

/// What a datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// udp-stream data.
    Data = 1,
    /// udp-rr request.
    Request = 2,
    /// udp-rr response.
    Response = 3,
    /// Client: register this flow (carries the token).
    Register = 4,
    /// Server: flow registered (carries the token back).
    Registered = 5,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Data,
            2 => Kind::Request,
            3 => Kind::Response,
            4 => Kind::Register,
            5 => Kind::Registered,
            _ => return None,
        })
    }
}

/// The 28-byte header: magic, kind, 3 reserved bytes, flow id (u32),
/// sequence (u64), sender's clock in ns (u64), all big-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the datagram is.
    pub kind: Kind,
    /// Roster id.
    pub flow: u32,
    /// Sequence number within the flow, from 0.
    pub seq: u64,
    /// Send time on the sender's monotonic clock, ns (udp-rr responses
    /// echo the request's).
    pub sent_ns: u64,
}

impl Header {
    /// Writes the header into the first [`HEADER`] bytes of `b`.
    #[inline]
    pub fn write(&self, b: &mut [u8]) {
        b[..4].copy_from_slice(&UDP_MAGIC);
        b[4] = self.kind as u8;
        b[5..8].fill(0);
        b[8..12].copy_from_slice(&self.flow.to_be_bytes());
        b[12..20].copy_from_slice(&self.seq.to_be_bytes());
        b[20..28].copy_from_slice(&self.sent_ns.to_be_bytes());
    }

    /// Reads a header; None for anything that is not one.
    #[inline]
    pub fn read(b: &[u8]) -> Option<Header> {
        if b.len() < HEADER || b[..4] != UDP_MAGIC {
            return None;
        }
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Some(Header {
            kind: Kind::from_u8(b[4])?,
            flow: u32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
            seq: u64_at(12),
            sent_ns: u64_at(20),
        })
    }
}

/// Nanoseconds on this process's monotonic clock: only differences of
/// these mean anything, which is all jitter needs.
pub fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Length of a registration datagram: header and token.
pub const REGISTER_LEN: usize = HEADER + TOKEN_LEN;

/// A `register` or `registered` datagram for `flow` with `token`.
pub fn registration(kind: Kind, flow: u32, token: &[u8; TOKEN_LEN]) -> [u8; REGISTER_LEN] {
    let mut b = [0u8; REGISTER_LEN];
    Header {
        kind,
        flow,
        seq: 0,
        sent_ns: 0,
    }
    .write(&mut b);
    b[HEADER..].copy_from_slice(token);
    b
}

/// The flow id of a registration datagram of `kind` carrying `token`
/// (compared in constant time); None for anything else.
pub fn parse_registration(b: &[u8], kind: Kind, token: &[u8; TOKEN_LEN]) -> Option<u32> {
    if b.len() != REGISTER_LEN {
        return None;
    }
    let h = Header::read(b)?;
    if h.kind != kind {
        return None;
    }
    let diff = b[HEADER..]
        .iter()
        .zip(token)
        .fold(0u8, |d, (a, b)| d | (a ^ b));
    (diff == 0).then_some(h.flow)
}

/// Sequence numbers seen by a receiver: distinct datagrams, duplicates and
/// late arrivals, over a sliding window of the most recent 2^16 numbers.
#[derive(Debug, Clone)]
pub struct SeqTrack {
    /// One above the highest sequence number seen.
    next: u64,
    bits: Vec<u64>,
    /// Distinct datagrams.
    pub received: u64,
    /// Datagrams seen before.
    pub duplicates: u64,
    /// Datagrams that came after a higher number.
    pub out_of_order: u64,
}

const WINDOW: u64 = 1 << 16;

impl Default for SeqTrack {
    fn default() -> Self {
        SeqTrack {
            next: 0,
            bits: vec![0; (WINDOW / 64) as usize],
            received: 0,
            duplicates: 0,
            out_of_order: 0,
        }
    }
}

impl SeqTrack {
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let i = (seq % WINDOW) as usize;
        (&mut self.bits[i / 64], 1u64 << (i % 64))
    }

    /// Counts datagram `seq`; false when the number is absurd (more than
    /// 2^40 ahead) and the datagram was not counted.
    pub fn see(&mut self, seq: u64) -> bool {
        if seq >= self.next {
            if seq - self.next > 1 << 40 {
                return false;
            }
            if seq - self.next >= WINDOW {
                self.bits.fill(0);
            } else {
                for s in self.next..seq {
                    let (w, m) = self.bit(s);
                    *w &= !m;
                }
            }
            let (w, m) = self.bit(seq);
            *w |= m;
            self.next = seq + 1;
            self.received += 1;
        } else if self.next - seq > WINDOW {
            // Too old to tell a duplicate from a latecomer: a latecomer.
            self.out_of_order += 1;
            self.received += 1;
        } else {
            let (w, m) = self.bit(seq);
            if *w & m != 0 {
                self.duplicates += 1;
            } else {
                *w |= m;
                self.out_of_order += 1;
                self.received += 1;
            }
        }
        true
    }
}

/// Interarrival jitter as RFC 3550 (section 6.4.1) computes it, in ns.
#[derive(Debug, Clone, Default)]
pub struct Jitter {
    last_transit: Option<i64>,
    j: f64,
}

impl Jitter {
    /// Adds a datagram sent at `sent_ns` (sender's clock) and received at
    /// `arrived_ns` (ours).
    #[inline]
    pub fn add(&mut self, sent_ns: u64, arrived_ns: u64) {
        let transit = arrived_ns.wrapping_sub(sent_ns) as i64;
        if let Some(last) = self.last_transit {
            let d = transit.wrapping_sub(last).unsigned_abs() as f64;
            self.j += (d - self.j) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// The estimate, microseconds.
    pub fn us(&self) -> f64 {
        self.j / 1000.0
    }
}

/// How a receiving UDP flow ends: after the window it keeps reading until
/// nothing has come for a quiet spell, so datagrams still in flight count.
#[derive(Debug, Clone)]
pub struct QuietEnd {
    last: Instant,
    quiet: Duration,
    token: u64,
    stopping: bool,
}

impl QuietEnd {
    /// Ends after `quiet` without a datagram, once stopping.
    pub fn new(quiet: Duration) -> QuietEnd {
        QuietEnd {
            last: Instant::now(),
            quiet,
            token: 0,
            stopping: false,
        }
    }

    /// The flow's epoll token, for its wake-ups.
    pub fn set_token(&mut self, token: u64) {
        self.token = token;
    }

    /// A datagram came now.
    pub fn heard(&mut self) {
        self.last = Instant::now();
    }

    /// The window is over: wake the flow when the quiet spell would end.
    pub fn stop(&mut self, ts: &mut ThreadState) -> Status {
        self.stopping = true;
        ts.wake_at(self.token, Instant::now().max(self.last + self.quiet));
        Status::Active
    }

    /// On a timer event: Done once stopping and quiet long enough.
    pub fn on_timer(&mut self, ts: &mut ThreadState, events: u32) -> Status {
        if !self.stopping || events & EV_TIMER == 0 {
            return Status::Active;
        }
        let end = self.last + self.quiet;
        if Instant::now() >= end {
            return Status::Done;
        }
        ts.wake_at(self.token, end);
        Status::Active
    }
}

/// The address as the kernel would report it on a plain socket of its
/// family: IPv4-mapped IPv6 addresses become IPv4.
pub fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => a,
        },
        v4 => v4,
    }
}

/// The receive buffer a UDP socket asks for when the test sets none: the
/// kernel caps it at net.core.rmem_max; bursts beyond the default of
/// about 200 KB would otherwise be dropped at the socket.
const DEFAULT_UDP_RCVBUF: usize = 4 << 20;

/// A UDP socket of `ip`'s family with the test's buffer sizes.
pub fn udp_socket(ip: IpAddr, spec: &TestSpec) -> Result<Socket, EngineError> {
    let domain = if ip.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(domain, Type::DGRAM.cloexec(), Some(Protocol::UDP))
        .map_err(|e| EngineError::io("create a UDP socket", e))?;
    if let Some(b) = spec.sndbuf {
        s.set_send_buffer_size(b as usize)
            .map_err(|e| EngineError::io("set SO_SNDBUF", e))?;
    }
    match spec.rcvbuf {
        Some(b) => s
            .set_recv_buffer_size(b as usize)
            .map_err(|e| EngineError::io("set SO_RCVBUF", e))?,
        None => {
            let _ = s.set_recv_buffer_size(DEFAULT_UDP_RCVBUF);
        }
    }
    apply_tos(&s, spec)?;
    if spec.dont_fragment {
        sys::set_dont_fragment(s.as_fd(), ip.is_ipv6())
            .map_err(|e| EngineError::io("set Don't Fragment (IP_MTU_DISCOVER)", e))?;
    }
    Ok(s)
}

/// A client flow's UDP socket, bound as its path says (to --cport's
/// port plus the flow's id when the test names one).
fn client_socket(path: &ResolvedPath, spec: &TestSpec, id: u32) -> Result<Socket, EngineError> {
    let s = udp_socket(path.remote.ip(), spec)?;
    if let Some(port) = client_port(spec, id) {
        bind_local(&s, path, Some(port))?;
        return Ok(s);
    }
    match &path.local {
        LocalBind::Any => {}
        LocalBind::Addr(ip) => s
            .bind(&SockAddr::from(SocketAddr::new(*ip, 0)))
            .map_err(|e| EngineError::io(format!("bind to local address {ip}"), e))?,
        LocalBind::Device(dev) => s
            .bind_device(Some(dev.as_bytes()))
            .map_err(|e| EngineError::io(format!("bind to device {dev} (needs CAP_NET_RAW)"), e))?,
    }
    Ok(s)
}

/// How often a registration is sent again while unanswered.
const REGISTER_RETRY: Duration = Duration::from_millis(100);

/// Client: registers every flow of the roster (each from its own socket
/// over its path) with the server's registration port, by `deadline`;
/// returns the flows' sockets, each connected to its server socket.
pub fn register_flows(
    roster: &[FlowPlan],
    paths: &[ResolvedPath],
    port: u16,
    token: &[u8; TOKEN_LEN],
    spec: &TestSpec,
    deadline: Instant,
) -> Result<Vec<Option<Socket>>, EngineError> {
    struct Waiting {
        id: u32,
        sock: UdpSocket,
        to: SocketAddr,
        sent: Option<Instant>,
    }
    let mut out: Vec<Option<Socket>> = (0..roster.len()).map(|_| None).collect();
    let mut waiting = Vec::with_capacity(roster.len());
    for plan in roster {
        let path = paths.get(plan.path as usize).ok_or_else(|| {
            EngineError::Spec(format!(
                "flow {} names path {} that does not exist",
                plan.id, plan.path
            ))
        })?;
        let to = SocketAddr::new(path.remote.ip(), port);
        let sock = client_socket(path, spec, plan.id)?;
        sock.set_nonblocking(true)
            .map_err(|e| EngineError::io("make a UDP socket non-blocking", e))?;
        waiting.push(Waiting {
            id: plan.id,
            sock: sock.into(),
            to,
            sent: None,
        });
    }
    let mut buf = [0u8; 512];
    let mut fds = Vec::new();
    while !waiting.is_empty() {
        let now = Instant::now();
        if now >= deadline {
            return Err(EngineError::Timeout(format!(
                "registering UDP flows: {} of {} unanswered (is UDP to port {port} blocked?)",
                waiting.len(),
                roster.len()
            )));
        }
        for w in &mut waiting {
            if w.sent
                .is_none_or(|t| now.duration_since(t) >= REGISTER_RETRY)
            {
                let d = registration(Kind::Register, w.id, token);
                match w.sock.send_to(&d, w.to) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // An ICMP error from an earlier try: try again later.
                    Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
                    Err(e) => {
                        return Err(EngineError::io(
                            format!("register UDP flow {} with {}", w.id, w.to),
                            e,
                        ));
                    }
                }
                w.sent = Some(now);
            }
        }
        fds.clear();
        fds.extend(
            waiting
                .iter()
                .map(|w| sys::pollfd(w.sock.as_fd(), libc::POLLIN)),
        );
        sys::poll(&mut fds, 20).map_err(|e| EngineError::io("poll UDP registrations", e))?;
        let mut done = Vec::new();
        for (i, w) in waiting.iter().enumerate() {
            if fds[i].revents == 0 {
                continue;
            }
            while let Ok((n, from)) = w.sock.recv_from(&mut buf) {
                let from = unmap(from);
                if from.ip() != unmap(w.to).ip() {
                    continue;
                }
                if parse_registration(&buf[..n], Kind::Registered, token) == Some(w.id) {
                    w.sock.connect(from).map_err(|e| {
                        EngineError::io(format!("connect UDP flow {} to {from}", w.id), e)
                    })?;
                    done.push(i);
                    break;
                }
            }
        }
        // Highest first, so each swap_remove moves an entry already seen.
        for i in done.into_iter().rev() {
            let w = waiting.swap_remove(i);
            out[w.id as usize] = Some(Socket::from(w.sock));
        }
    }
    Ok(out)
}

/// Server: the test's registration socket on `addr` (port 0: any), with
/// packet info on so each flow's socket can bind the address its client
/// sent to.
pub fn bind_registration(addr: SocketAddr) -> Result<Socket, EngineError> {
    let s = Socket::new(
        Domain::for_address(addr),
        Type::DGRAM.cloexec(),
        Some(Protocol::UDP),
    )
    .map_err(|e| EngineError::io("create the UDP registration socket", e))?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    sys::set_pktinfo(&s, addr.is_ipv6())
        .map_err(|e| EngineError::io("ask for UDP packet info", e))?;
    s.bind(&SockAddr::from(addr))
        .map_err(|e| EngineError::io(format!("bind the UDP registration socket to {addr}"), e))?;
    s.set_nonblocking(true)
        .map_err(|e| EngineError::io("configure the UDP registration socket", e))?;
    Ok(s)
}

/// Server: the registrations so far of one test.
pub struct Registrar<'a> {
    roster: &'a [FlowPlan],
    token: [u8; TOKEN_LEN],
    spec: &'a TestSpec,
    /// Each flow's socket and its client's address, once registered.
    flows: Vec<Option<(Socket, SocketAddr)>>,
    /// Flows registered.
    pub got: usize,
}

impl<'a> Registrar<'a> {
    /// Registrations for `roster` with `token`.
    pub fn new(roster: &'a [FlowPlan], token: [u8; TOKEN_LEN], spec: &'a TestSpec) -> Self {
        Registrar {
            roster,
            token,
            spec,
            flows: (0..roster.len()).map(|_| None).collect(),
            got: 0,
        }
    }

    /// Reads what the registration socket holds (at most 1024 datagrams):
    /// a `register` with the token for a flow not yet taken gets its own
    /// socket, connected to the sender, and an answer from it; a repeat
    /// from the same sender is answered again; anything else is dropped.
    /// Err only for a local failure (out of descriptors).
    pub fn serve(&mut self, reg: &Socket) -> Result<(), EngineError> {
        let mut buf = [0u8; 512];
        for _ in 0..1024 {
            let d = match sys::recv_from_to(reg.as_fd(), &mut buf) {
                Ok(d) => d,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // ICMP errors and the like: the next datagram may be fine.
                Err(_) => continue,
            };
            let Some(id) = parse_registration(&buf[..d.len], Kind::Register, &self.token) else {
                continue;
            };
            let Some(plan) = self.roster.get(id as usize) else {
                continue;
            };
            if plan.kind == FlowKind::Crr {
                continue;
            }
            let from = unmap(d.from);
            let answer = registration(Kind::Registered, id, &self.token);
            match &self.flows[id as usize] {
                Some((s, peer)) if *peer == from => {
                    let _ = s.send(&answer);
                }
                Some(_) => {}
                None => {
                    let s = self.flow_socket(from, d.to)?;
                    let _ = s.send(&answer);
                    self.flows[id as usize] = Some((s, from));
                    self.got += 1;
                }
            }
        }
        Ok(())
    }

    fn flow_socket(&self, peer: SocketAddr, local: Option<IpAddr>) -> Result<Socket, EngineError> {
        let s = udp_socket(peer.ip(), self.spec)?;
        let local = local
            .filter(|l| l.is_ipv4() == peer.is_ipv4())
            .unwrap_or(if peer.is_ipv4() {
                IpAddr::from([0u8; 4])
            } else {
                IpAddr::from([0u16; 8])
            });
        s.bind(&SockAddr::from(SocketAddr::new(local, 0)))
            .map_err(|e| EngineError::io(format!("bind a UDP flow socket to {local}"), e))?;
        s.connect(&SockAddr::from(peer))
            .map_err(|e| EngineError::io(format!("connect a UDP flow socket to {peer}"), e))?;
        s.set_nonblocking(true)
            .map_err(|e| EngineError::io("make a UDP socket non-blocking", e))?;
        Ok(s)
    }

    /// The flows' sockets by roster id.
    pub fn into_sockets(self) -> Vec<Option<Socket>> {
        self.flows.into_iter().map(|f| f.map(|(s, _)| s)).collect()
    }
}

/// Whether a send or receive error on a connected UDP socket loses only
/// this datagram: an ICMP error from an earlier one (the peer's port
/// closed for a moment), no route for a while (a blackhole or unreachable
/// route answers EINVAL or EHOSTUNREACH), a firewall, a full device queue.
/// The flow goes on, as UDP does; the datagram counts as lost.
pub fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNREFUSED)
            | Some(libc::EHOSTUNREACH)
            | Some(libc::ENETUNREACH)
            | Some(libc::EINVAL)
            | Some(libc::EPERM)
            | Some(libc::EACCES)
            | Some(libc::ENOBUFS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn headers_round_trip() {
        let h = Header {
            kind: Kind::Request,
            flow: 7,
            seq: u64::MAX - 1,
            sent_ns: 12345,
        };
        let mut b = [0u8; HEADER];
        h.write(&mut b);
        assert_eq!(Header::read(&b), Some(h));
        b[0] = b'X';
        assert_eq!(Header::read(&b), None);
    }

    #[test]
    fn registrations_need_the_token() {
        let t = [3u8; TOKEN_LEN];
        let r = registration(Kind::Register, 9, &t);
        assert_eq!(parse_registration(&r, Kind::Register, &t), Some(9));
        assert_eq!(
            parse_registration(&r, Kind::Register, &[4u8; TOKEN_LEN]),
            None
        );
        assert_eq!(parse_registration(&r, Kind::Registered, &t), None);
        assert_eq!(
            parse_registration(&r[..REGISTER_LEN - 1], Kind::Register, &t),
            None
        );
    }

    #[test]
    fn sequence_tracking_counts_loss_reordering_and_duplicates() {
        let mut t = SeqTrack::default();
        for s in [0, 1, 3, 2, 2, 5, 4, 9] {
            t.see(s);
        }
        // 0..=9 sent: 6, 7 and 8 lost; 2 and 4 late; 2 twice.
        assert_eq!(t.received, 7);
        assert_eq!(t.out_of_order, 2);
        assert_eq!(t.duplicates, 1);
        // A jump past the window forgets the old numbers.
        assert!(t.see(9 + 2 * WINDOW));
        assert!(!t.see(u64::MAX));
        assert_eq!(t.received, 8);
    }

    #[test]
    fn jitter_follows_rfc_3550() {
        let mut j = Jitter::default();
        // Transit 100, 110, 100 ns: D = 10 twice: J = 10/16, then
        // J + (10 - J)/16.
        j.add(0, 100);
        j.add(1000, 1110);
        j.add(2000, 2100);
        let want = 10.0 / 16.0 + (10.0 - 10.0 / 16.0) / 16.0;
        assert!((j.us() * 1000.0 - want).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn garbage_is_never_a_header_or_registration(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let t = [0u8; TOKEN_LEN];
            let _ = Header::read(&b);
            let _ = parse_registration(&b, Kind::Register, &t);
        }
    }
}
