//! The control protocol (docs/protocol.md): a 4-byte preamble, then frames of
//! a big-endian u32 length and a JSON message. Data connections start with a
//! 24-byte preamble naming the test's token and the flow id.

use crate::error::EngineError;
use crate::result::{CpuUsage, LatencySummary, TcpInfo};
use crate::spec::{Limits, TestSpec};
use crate::sys;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::io::{self, Read, Write};
use std::os::fd::BorrowedFd;
use std::time::Instant;

/// Newest version of the control protocol this build speaks (the hello
/// states it, the challenge states the one chosen).
pub const PROTOCOL_VERSION: u32 = 1;
/// Oldest version this build still speaks: a release speaks its own
/// version and its predecessor's, so a rolling upgrade works
/// ([`wirespeed_types::protocol::agree`]).
pub const MIN_PROTOCOL_VERSION: u32 = 1;
/// First bytes of a control connection.
pub const CONTROL_MAGIC: [u8; 4] = *b"WSPC";
/// First bytes of a data connection.
pub const DATA_MAGIC: [u8; 4] = *b"WSPD";
/// Largest control frame a server accepts from a client, bytes.
pub const MAX_FRAME: usize = 1 << 20;
/// Largest frame a client accepts from a server: a report of 20,000 flows
/// with TCP_INFO each is several MiB.
pub const MAX_REPORT_FRAME: usize = 64 << 20;
/// Length of a test's token, bytes.
pub const TOKEN_LEN: usize = 16;
/// Length of a data connection's preamble.
pub const DATA_PREAMBLE_LEN: usize = 24;
/// Domain separation for the authentication MAC.
const AUTH_CONTEXT: &[u8] = b"wirespeed-auth-v1";

/// Per-flow figures one side reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideFlow {
    /// Roster id.
    pub id: u32,
    /// Bytes sent inside the measured window.
    pub window_sent: u64,
    /// Bytes received inside the measured window.
    pub window_received: u64,
    /// Bytes sent over the flow's life.
    pub total_sent: u64,
    /// Bytes received over the flow's life.
    pub total_received: u64,
    /// Transactions completed inside the window.
    pub transactions: u64,
    /// TCP_INFO at the end of the window.
    pub tcp_info: Option<TcpInfo>,
    /// Datagram counts over the flow's life (UDP workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpFlowCounts>,
    /// Bytes this side received mapped and copied (`--rx-zerocopy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_zerocopy: Option<crate::result::RxZeroCopy>,
}

/// One side's datagram counts of a UDP flow, over the flow's whole life.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpFlowCounts {
    /// Datagrams sent (udp-rr: requests at the client, answers at the server).
    pub sent: u64,
    /// Distinct datagrams received (udp-rr client: answers in time).
    pub received: u64,
    /// Datagrams that came after a higher sequence number (udp-rr client:
    /// answers after their timeout).
    pub out_of_order: u64,
    /// Datagrams that came again.
    pub duplicates: u64,
    /// RFC 3550 interarrival jitter at the end, microseconds.
    pub jitter_us: f64,
    /// udp-rr client: requests whose answer did not come in time.
    pub timeouts: u64,
    /// Sends went out as GSO batches of more than one datagram.
    pub gso: bool,
    /// Datagrams arrived joined by GRO.
    pub gro: bool,
}

/// One side's figures for a finished test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideReport {
    /// Measured window at this side, seconds.
    pub window_s: f64,
    /// Per flow.
    pub flows: Vec<SideFlow>,
    /// CPU over the window.
    pub cpu: CpuUsage,
    /// Most tests running at once on this side during the test.
    pub concurrent_tests: u32,
    /// Latency of rr/crr transactions (client side only).
    pub latency: Option<LatencySummary>,
    /// Latency of the probe flow (client side only).
    pub probe_latency: Option<LatencySummary>,
    /// Remarks (fallbacks, forced closes).
    pub notes: Vec<String>,
    /// Congestion control of the first flow.
    pub congestion_control: String,
    /// Per-transaction timestamps by flow (rr with `--breakdown`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stamps: Vec<crate::stamps::FlowStamps>,
    /// The I/O engine this side's workers ran: io_uring only if every
    /// worker ran it (None from older peers: epoll).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_engine: Option<crate::spec::IoEngine>,
}

/// A control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Msg {
    /// Client: first message, with its protocol versions.
    Hello {
        /// Newest protocol version the client speaks.
        version: u32,
        /// Oldest one it speaks (absent from releases that spoke only
        /// `version`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_version: Option<u32>,
        /// Free-form client name and version.
        client: String,
    },
    /// Server: a nonce to prove the key against.
    Challenge {
        /// 32 random bytes, hex.
        nonce: String,
        /// Whether the server requires a key.
        auth_required: bool,
        /// The protocol version the server chose (absent from releases
        /// that spoke only the client's exact version).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u32>,
        /// The server's name and release, e.g. `wirespeed 0.1.0`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
    },
    /// Client: the proof, HMAC-SHA256(key, context || nonce), hex.
    Auth {
        /// The MAC, or None without a key.
        mac: Option<String>,
    },
    /// Server: authenticated; here are my limits.
    Welcome {
        /// Server limits.
        limits: Limits,
    },
    /// Client: run this test.
    Spec {
        /// The test.
        spec: Box<TestSpec>,
    },
    /// Server: connect data flows to this port with this token.
    Accepted {
        /// 16 random bytes, hex.
        token: String,
        /// TCP port of the test's data listener.
        data_port: u16,
    },
    /// Client: all flows are connected; start.
    Start,
    /// Server: all flows accepted; the test runs.
    Started,
    /// Client: the window is over; stop and report.
    Stop,
    /// Server: its figures.
    Report {
        /// The figures.
        report: Box<SideReport>,
    },
    /// Either side: a failure, with a machine-readable code.
    Error {
        /// "version", "auth", "busy", "limits", "protocol", "timeout", "internal".
        code: String,
        /// Human-readable explanation.
        message: String,
    },
}

impl Msg {
    /// Builds an error message.
    pub fn error(code: &str, message: impl Into<String>) -> Msg {
        Msg::Error {
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// The message's `type` on the wire, e.g. "hello".
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "hello",
            Msg::Challenge { .. } => "challenge",
            Msg::Auth { .. } => "auth",
            Msg::Welcome { .. } => "welcome",
            Msg::Spec { .. } => "spec",
            Msg::Accepted { .. } => "accepted",
            Msg::Start => "start",
            Msg::Started => "started",
            Msg::Stop => "stop",
            Msg::Report { .. } => "report",
            Msg::Error { .. } => "error",
        }
    }
}

/// Text from the wire made safe to log or print: control characters (and
/// the invisible Unicode ones that reorder or break lines) escaped as
/// `\n`, `\u{202e}` and so on, and at most `max` characters kept.
pub fn printable(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max + 8));
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push_str("...");
            break;
        }
        let hidden = matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}');
        if c.is_control() || hidden {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Reads frames without blocking and without reading past the frame, so a
/// caller can give a whole message one deadline (a peer that trickles a
/// byte at a time cannot extend it) or poll for one between other work.
#[derive(Debug)]
pub struct FrameReader {
    max: usize,
    buf: Vec<u8>,
    need: usize,
}

impl FrameReader {
    /// A reader of frames of at most `max` bytes.
    pub fn new(max: usize) -> FrameReader {
        FrameReader {
            max,
            buf: Vec::new(),
            need: 4,
        }
    }

    /// Bytes of an unfinished frame read so far.
    pub fn partial(&self) -> usize {
        self.buf.len()
    }

    /// Reads what `fd` has now; a message once its frame is complete.
    /// `what` names the awaited message in errors. The peer closing is an
    /// [`EngineError::Io`] of kind `UnexpectedEof`.
    pub fn poll(&mut self, fd: BorrowedFd<'_>, what: &str) -> Result<Option<Msg>, EngineError> {
        loop {
            if self.buf.len() == self.need {
                if self.need == 4 {
                    let len =
                        u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                            as usize;
                    if len > self.max {
                        return Err(EngineError::Protocol(format!(
                            "frame length {len} exceeds the limit of {} bytes",
                            self.max
                        )));
                    }
                    self.need = 4 + len;
                    if len > 0 {
                        continue;
                    }
                }
                let m = decode(&self.buf[4..]);
                self.buf.clear();
                self.need = 4;
                return m.map(Some);
            }
            let mut tmp = [0u8; 16384];
            let want = (self.need - self.buf.len()).min(tmp.len());
            match recv_some(fd, &mut tmp[..want], what)? {
                Some(n) => self.buf.extend_from_slice(&tmp[..n]),
                None => return Ok(None),
            }
        }
    }

    /// Reads until a whole message is in or `deadline` passes.
    pub fn read_until(
        &mut self,
        fd: BorrowedFd<'_>,
        deadline: Instant,
        what: &str,
    ) -> Result<Msg, EngineError> {
        loop {
            if let Some(m) = self.poll(fd, what)? {
                return Ok(m);
            }
            wait_for(fd, libc::POLLIN, deadline, what)?;
        }
    }
}

/// Waits for `events` on `fd` until `deadline`; a Timeout naming `what`
/// once it has passed.
fn wait_for(
    fd: BorrowedFd<'_>,
    events: i16,
    deadline: Instant,
    what: &str,
) -> Result<(), EngineError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(EngineError::Timeout(format!("waiting for {what}")));
    }
    let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    sys::poll(&mut [sys::pollfd(fd, events)], ms)
        .map(drop)
        .map_err(|e| EngineError::io(format!("wait for {what}"), e))
}

/// Reads exactly `buf.len()` bytes by `deadline` (the control preamble).
pub fn read_exact_until(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    deadline: Instant,
    what: &str,
) -> Result<(), EngineError> {
    let mut got = 0;
    while got < buf.len() {
        match recv_some(fd, &mut buf[got..], what)? {
            Some(n) => got += n,
            None => wait_for(fd, libc::POLLIN, deadline, what)?,
        }
    }
    Ok(())
}

/// One non-blocking read: Some(bytes read), None when nothing is there
/// yet; the peer closing is an error of kind `UnexpectedEof`.
fn recv_some(fd: BorrowedFd<'_>, buf: &mut [u8], what: &str) -> Result<Option<usize>, EngineError> {
    loop {
        return match sys::recv(fd, buf, false) {
            Ok(0) => Err(EngineError::io(
                format!("read {what}"),
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection",
                ),
            )),
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(EngineError::io(format!("read {what}"), e)),
        };
    }
}

/// Reads one message of at most `max` bytes by `deadline`, however the
/// peer spaces its bytes.
pub fn read_msg_until(
    fd: BorrowedFd<'_>,
    max: usize,
    deadline: Instant,
    what: &str,
) -> Result<Msg, EngineError> {
    FrameReader::new(max).read_until(fd, deadline, what)
}

/// Writes one message by `deadline`: a peer that does not read cannot hold
/// the writer longer.
pub fn write_msg_until(
    fd: BorrowedFd<'_>,
    msg: &Msg,
    deadline: Instant,
) -> Result<(), EngineError> {
    write_until(fd, &encode(msg)?, deadline, msg.kind())
}

/// Writes `bytes` by `deadline`; `what` names them in errors.
pub fn write_until(
    fd: BorrowedFd<'_>,
    bytes: &[u8],
    deadline: Instant,
    what: &str,
) -> Result<(), EngineError> {
    let mut off = 0;
    while off < bytes.len() {
        match sys::send(fd, &bytes[off..], false) {
            Ok(n) => off += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_for(
                fd,
                libc::POLLOUT,
                deadline,
                &format!("the peer to read our {what}"),
            )?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(EngineError::io(format!("send {what}"), e)),
        }
    }
    Ok(())
}

/// A message as one frame: length, then JSON.
pub fn encode(msg: &Msg) -> Result<Vec<u8>, EngineError> {
    let body =
        serde_json::to_vec(msg).map_err(|e| EngineError::Protocol(format!("encode: {e}")))?;
    if body.len() > MAX_REPORT_FRAME {
        return Err(EngineError::Protocol(format!(
            "message of {} bytes exceeds {MAX_REPORT_FRAME}",
            body.len()
        )));
    }
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    Ok(frame)
}

/// Writes one frame.
pub fn write_msg(w: &mut impl Write, msg: &Msg) -> Result<(), EngineError> {
    let frame = encode(msg)?;
    w.write_all(&frame)
        .map_err(|e| EngineError::io("send control message", e))?;
    w.flush()
        .map_err(|e| EngineError::io("send control message", e))
}

/// Reads one frame of at most [`MAX_FRAME`] bytes (what a server reads).
pub fn read_msg(r: &mut impl Read) -> Result<Msg, EngineError> {
    read_msg_max(r, MAX_FRAME)
}

/// Reads one frame of at most `max` bytes; rejects oversized lengths
/// before allocating.
pub fn read_msg_max(r: &mut impl Read, max: usize) -> Result<Msg, EngineError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|e| EngineError::io("read control message", e))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(EngineError::Protocol(format!(
            "frame length {len} exceeds the limit of {max} bytes"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)
        .map_err(|e| EngineError::io("read control message", e))?;
    decode(&body)
}

/// Decodes a frame body.
pub fn decode(body: &[u8]) -> Result<Msg, EngineError> {
    serde_json::from_slice(body)
        .map_err(|e| EngineError::Protocol(format!("unreadable control message: {e}")))
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses lower- or upper-case hex.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Fills a buffer with random bytes from the OS.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], EngineError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b)
        .map_err(|e| EngineError::Protocol(format!("no randomness from the OS: {e}")))?;
    Ok(b)
}

/// The MAC a client sends for `nonce` with `key`.
pub fn auth_mac(key: &[u8], nonce: &[u8]) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(AUTH_CONTEXT);
    m.update(nonce);
    hex(&m.finalize().into_bytes())
}

/// Checks a client's MAC in constant time.
pub fn auth_verify(key: &[u8], nonce: &[u8], mac_hex: &str) -> bool {
    let Some(mac) = unhex(mac_hex) else {
        return false;
    };
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(AUTH_CONTEXT);
    m.update(nonce);
    m.verify_slice(&mac).is_ok()
}

/// Builds a data connection's preamble.
pub fn data_preamble(token: &[u8; 16], flow: u32) -> [u8; DATA_PREAMBLE_LEN] {
    let mut p = [0u8; DATA_PREAMBLE_LEN];
    p[..4].copy_from_slice(&DATA_MAGIC);
    p[4..20].copy_from_slice(token);
    p[20..].copy_from_slice(&flow.to_be_bytes());
    p
}

/// Checks a data preamble against the test's token; returns the flow id.
pub fn parse_data_preamble(p: &[u8; DATA_PREAMBLE_LEN], token: &[u8; 16]) -> Option<u32> {
    if p[..4] != DATA_MAGIC {
        return None;
    }
    let mut diff = 0u8;
    for (a, b) in p[4..20].iter().zip(token) {
        diff |= a ^ b;
    }
    if diff != 0 {
        return None;
    }
    Some(u32::from_be_bytes([p[20], p[21], p[22], p[23]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        let m = Msg::Hello {
            version: 1,
            min_version: None,
            client: "x".into(),
        };
        write_msg(&mut buf, &m).unwrap();
        assert_eq!(read_msg(&mut buf.as_slice()).unwrap(), m);
    }

    #[test]
    fn huge_length_is_rejected_without_allocating() {
        let buf = [0xffu8, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_msg(&mut buf.as_slice()),
            Err(EngineError::Protocol(_))
        ));
    }

    #[test]
    fn auth_checks_key() {
        let mac = auth_mac(b"secret", b"nonce");
        assert!(auth_verify(b"secret", b"nonce", &mac));
        assert!(!auth_verify(b"other", b"nonce", &mac));
        assert!(!auth_verify(b"secret", b"nonce", "zz"));
    }

    #[test]
    fn preamble_checks_token() {
        let t = [7u8; 16];
        let p = data_preamble(&t, 42);
        assert_eq!(parse_data_preamble(&p, &t), Some(42));
        assert_eq!(parse_data_preamble(&p, &[8u8; 16]), None);
    }

    #[test]
    fn printable_escapes_what_could_forge_a_line() {
        assert_eq!(printable("a\nb\r\x1b[2J", 100), "a\\nb\\r\\u{1b}[2J");
        assert_eq!(printable("x\u{202e}y", 100), "x\\u{202e}y");
        assert_eq!(printable("héllo", 100), "héllo");
        assert_eq!(printable("abcdef", 3), "abc...");
    }

    #[test]
    fn frames_read_in_pieces_and_within_one_deadline() {
        use std::os::fd::AsFd;
        use std::os::unix::net::UnixStream;
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut frame = Vec::new();
        write_msg(&mut frame, &Msg::Stop).unwrap();
        let mut r = FrameReader::new(MAX_FRAME);
        for byte in &frame[..frame.len() - 1] {
            a.write_all(&[*byte]).unwrap();
            assert_eq!(r.poll(b.as_fd(), "stop").unwrap(), None);
        }
        assert!(r.partial() > 0);
        // Bytes that keep coming do not extend the deadline.
        let t0 = Instant::now();
        let e = r
            .read_until(
                b.as_fd(),
                t0 + std::time::Duration::from_millis(100),
                "stop",
            )
            .unwrap_err();
        assert!(matches!(e, EngineError::Timeout(_)), "{e}");
        a.write_all(&frame[frame.len() - 1..]).unwrap();
        assert_eq!(r.poll(b.as_fd(), "stop").unwrap(), Some(Msg::Stop));
        assert_eq!(r.partial(), 0);
        // A closed peer is an UnexpectedEof, a huge length a protocol error.
        a.write_all(&[0xff; 4]).unwrap();
        assert!(matches!(
            r.poll(b.as_fd(), "x"),
            Err(EngineError::Protocol(_))
        ));
        drop(a);
        let mut r = FrameReader::new(MAX_FRAME);
        match r.poll(b.as_fd(), "x") {
            Err(EngineError::Io { error, .. }) => {
                assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reader_that_trickles_cannot_hold_a_writer_past_its_deadline() {
        use std::os::fd::AsFd;
        use std::os::unix::net::UnixStream;
        use std::time::Duration;
        let (a, mut b) = UnixStream::pair().unwrap();
        // A report of some MiB: far more than the socket buffers.
        let big = Msg::Report {
            report: Box::new(SideReport {
                notes: vec!["x".repeat(1 << 20); 4],
                ..SideReport::default()
            }),
        };
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            for _ in 0..40 {
                if !matches!(b.read(&mut buf), Ok(n) if n > 0) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        let t0 = Instant::now();
        let e = write_msg_until(a.as_fd(), &big, t0 + Duration::from_millis(300)).unwrap_err();
        let took = t0.elapsed();
        assert!(matches!(e, EngineError::Timeout(_)), "{e}");
        assert!(took < Duration::from_millis(600), "{took:?}");
        drop(a);
        reader.join().unwrap();
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = read_msg(&mut bytes.as_slice());
            let _ = decode(&bytes);
        }
    }
}
