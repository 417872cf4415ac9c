//! How an agent runs: its names, key, ports, limits on tests and on the
//! HTTP side.

use crate::fleet::Fleet;
use std::net::SocketAddr;
use std::time::Duration;
use wirespeed_engine::ServerConfig;

/// Default port of the agent's HTTP API.
pub const DEFAULT_HTTP_PORT: u16 = 5380;
/// Results an agent keeps (the oldest go first).
pub const MAX_RESULTS: usize = 1000;

/// Bounds on the HTTP side.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Connections at once; a new one beyond displaces the oldest idle or
    /// slow one of the source holding the most, or is closed at once when
    /// every one is handling a request.
    pub max_connections: usize,
    /// Connections from one address (an IPv6 /64) at once; a new one
    /// beyond displaces that address's oldest idle or slow one.
    pub max_per_source: usize,
    /// Time for a request's headers to arrive (trickling cannot extend it).
    pub header_timeout: Duration,
    /// Time for a whole request, body and answer included.
    pub request_timeout: Duration,
    /// Longest life of one connection, however busy.
    pub connection_lifetime: Duration,
    /// Largest request body, bytes.
    pub max_body: usize,
    /// Requests handled at once; more are answered 503.
    pub max_in_flight: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 256,
            max_per_source: 16,
            header_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            connection_lifetime: Duration::from_secs(60),
            max_body: 64 * 1024,
            max_in_flight: 64,
        }
    }
}

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Its name (as in the fleet file).
    pub name: String,
    /// The engine server (its `key` is set from `key` below).
    pub server: ServerConfig,
    /// Where the HTTP API listens.
    pub http: SocketAddr,
    /// The fleet key: signs requests that start traffic, and is the
    /// engine server's key.
    pub key: Vec<u8>,
    /// The fleet from `--fleet FILE`: pinned, the controller cannot change it.
    pub fleet: Option<Fleet>,
    /// Tests this agent runs as a client at once; more are answered 429.
    pub max_tests: usize,
    /// Bound on connecting and each control answer of a test it runs.
    pub test_timeout: Duration,
    /// HTTP bounds.
    pub limits: HttpLimits,
    /// Serve `/metrics` without the key (`--metrics-open`).
    pub metrics_open: bool,
}

impl AgentConfig {
    /// An agent named `name` with the key, on the default ports.
    pub fn new(name: &str, key: Vec<u8>) -> AgentConfig {
        AgentConfig {
            name: name.to_string(),
            server: ServerConfig::default(),
            http: SocketAddr::from(([0u16; 8], DEFAULT_HTTP_PORT)),
            key,
            fleet: None,
            max_tests: 4,
            test_timeout: Duration::from_secs(10),
            limits: HttpLimits::default(),
            metrics_open: false,
        }
    }
}
