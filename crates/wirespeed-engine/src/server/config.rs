//! How a server runs ([`ServerConfig`]), what it tells its log
//! ([`ServerEvent`]), and the default flow limit for a descriptor limit.

use crate::proto::printable;
use crate::spec::Limits;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::mpsc::Sender;
use std::time::Duration;

/// How the server runs. Every deadline and cap here is in
/// docs/protocol.md with what the peer sees when it strikes.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; `::` takes IPv4 and IPv6.
    pub bind: IpAddr,
    /// Control port (0 = any free port).
    pub port: u16,
    /// Bounds on what a client may ask for.
    pub limits: Limits,
    /// Tests that may run at once.
    pub max_tests: u32,
    /// Authenticated control connections at once; more are answered `busy`.
    pub max_connections: usize,
    /// Connections still in the handshake at once; when full, the oldest
    /// is dropped (answered `busy`) so the newest always gets its turn.
    /// [`Server::bind`](super::Server::bind) lowers it to
    /// `handshake_limit_for` the open-file limit.
    pub max_unauthenticated: usize,
    /// Control connections from one address (an IPv6 /64) at once,
    /// handshaking or not; a new one first displaces that address's oldest
    /// handshake, and is refused `busy` when all of them are authenticated.
    pub max_per_source: usize,
    /// Shared key clients must prove; None = anyone who reaches the port.
    pub key: Option<Vec<u8>>,
    /// Time from accepting a control connection to sending the welcome.
    pub handshake_timeout: Duration,
    /// How long a client may take over each whole message after the
    /// handshake (a spec, start, the next spec), and to read each answer.
    pub idle_timeout: Duration,
    /// How long a data connection may take to send its preamble.
    pub preamble_timeout: Duration,
    /// How long after a test's warm-up plus duration the server waits for
    /// the client's stop before it ends the test itself.
    pub stop_grace: Duration,
    /// Where to send a line per test started, finished or failed (the
    /// server's log); None = silent.
    pub events: Option<Sender<ServerEvent>>,
    /// Ports the tests' data listeners take, first free one first (a
    /// firewall, NetworkPolicy or Kubernetes Service can then name them);
    /// None = any free port.
    pub data_ports: Option<(u16, u16)>,
}

/// Something the server did, for its log. Text that came from the wire is
/// escaped and bounded ([`printable`]) before it gets here.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// A test began its traffic.
    Started {
        /// The test's number on this server.
        id: u64,
        /// The client's control address.
        peer: SocketAddr,
        /// The name the client gave in its hello, escaped.
        client: String,
        /// What runs, e.g. "stream forward, 4 flows, 2 threads, 10 s".
        summary: String,
    },
    /// A test ended and its report was sent.
    Finished {
        /// The test's number.
        id: u64,
        /// The client's control address.
        peer: SocketAddr,
        /// Bytes this side moved in the window.
        bytes: u64,
    },
    /// A control connection ended with an error (refused, aborted).
    Failed {
        /// The client's control address.
        peer: SocketAddr,
        /// What went wrong, escaped.
        error: String,
    },
}

impl std::fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerEvent::Started {
                id,
                peer,
                client,
                summary,
            } => {
                write!(f, "test {id} from {peer} ({client}) started: {summary}")
            }
            ServerEvent::Finished { id, peer, bytes } => {
                write!(
                    f,
                    "test {id} from {peer} finished: {bytes} bytes moved in the window"
                )
            }
            ServerEvent::Failed { peer, error } => write!(f, "client {peer}: {error}"),
        }
    }
}

/// Sends `ev` to the server's log, if it has one.
pub(super) fn emit(cfg: &ServerConfig, ev: ServerEvent) {
    if let Some(tx) = &cfg.events {
        let _ = tx.send(ev);
    }
}

/// Logs a failed control connection, its error escaped and bounded.
pub(super) fn emit_failed(cfg: &ServerConfig, peer: SocketAddr, error: &str) {
    emit(
        cfg,
        ServerEvent::Failed {
            peer,
            error: printable(error, MAX_LOGGED),
        },
    );
}

/// Most characters of wire-borne text in one log line.
const MAX_LOGGED: usize = 400;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            port: crate::client::DEFAULT_PORT,
            limits: Limits::default(),
            max_tests: 4,
            max_connections: 32,
            max_unauthenticated: 64,
            max_per_source: 8,
            key: None,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            preamble_timeout: Duration::from_secs(2),
            stop_grace: Duration::from_secs(3),
            events: None,
            data_ports: None,
        }
    }
}

/// The default `--max-flows` for a server whose open-file limit is
/// `nofile`: what is left after keeping a quarter of the limit (at least
/// 1024 descriptors) for everything else, never less than a quarter of
/// the limit, at most 20,000. So one client cannot exhaust the server's
/// descriptors alone, and a 10,000-flow test fits a limit of 20,000.
pub fn flow_limit_for(nofile: u64) -> u32 {
    let spare = nofile.saturating_sub((nofile / 4).max(1024));
    spare.max(nofile / 4).clamp(1, 20_000) as u32
}

/// The most handshakes a server whose open-file limit is `nofile` holds
/// at once: each takes two descriptors (the socket and the handle that
/// drops it to make room), and together they get an eighth of the limit
/// (a quarter of the descriptors), at least 1. So silent connections
/// cannot take the descriptors an authenticated client's test needs: the
/// oldest makes room instead. `nofile` 0 (unknown) sets no bound.
pub fn handshake_limit_for(nofile: u64) -> usize {
    match nofile {
        0 => usize::MAX,
        n => usize::try_from(n / 8).unwrap_or(usize::MAX).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshakes_get_a_quarter_of_the_descriptors() {
        assert_eq!(handshake_limit_for(128), 16);
        assert_eq!(handshake_limit_for(48), 6);
        assert_eq!(handshake_limit_for(1024), 128);
        assert_eq!(handshake_limit_for(4), 1);
        assert_eq!(handshake_limit_for(0), usize::MAX);
    }

    #[test]
    fn the_flow_limit_leaves_descriptors_to_spare() {
        assert_eq!(flow_limit_for(1 << 20), 20_000);
        assert_eq!(flow_limit_for(20_000), 15_000);
        assert_eq!(flow_limit_for(4096), 3072);
        assert_eq!(flow_limit_for(1024), 256);
        assert_eq!(flow_limit_for(48), 12);
        assert_eq!(flow_limit_for(0), 1);
    }
}
