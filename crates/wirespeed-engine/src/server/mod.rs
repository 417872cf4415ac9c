//! The server: one thread per control connection, a fresh data listener per
//! test that only takes connections carrying that test's token, limits on
//! what a client may ask for, and a count of tests sharing the machine.
//!
//! By concern: `config` (the settings and the log's events), `table`
//! (control connections by state and source), `admission` (tests at
//! once), `control` (one control connection's handshake and specs),
//! `run` (one test), `flows` and `data_port` (taking a test's flows),
//! `key_file` (the shared key), `answer` (what a refused client is told). This file holds the accept loop.

use crate::error::EngineError;
use crate::sys;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod admission;
mod answer;
mod config;
mod control;
mod data_port;
mod flows;
mod key_file;
mod run;
mod table;

pub use config::{ServerConfig, ServerEvent, flow_limit_for, handshake_limit_for};
pub use key_file::{KeyFile, read_key_file};
pub use table::source_of;

use admission::Registry;
use answer::{OUT_OF_FDS, refuse};
use config::emit_failed;
use control::handle_control;
use table::Table;

/// A bound server, ready to serve.
pub struct Server {
    listener: TcpListener,
    cfg: Arc<ServerConfig>,
    registry: Arc<Registry>,
    table: Arc<Table>,
}

/// The control listener on `addr` (dual stack on `::`).
fn listen_socket(addr: SocketAddr, backlog: i32) -> std::io::Result<Socket> {
    let s = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.cloexec(),
        Some(Protocol::TCP),
    )?;
    if addr.is_ipv6() {
        // Dual stack on `::`, so IPv4 clients reach it too.
        let _ = s.set_only_v6(false);
    }
    s.set_reuse_address(true)?;
    s.bind(&SockAddr::from(addr))?;
    s.listen(backlog)?;
    Ok(s)
}

/// A descriptor kept open so that, out of descriptors, the server can
/// still close it, accept one client, tell it why, and reopen it.
fn reserve_fd() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

/// How long a stopped server waits for its tests in flight to end.
pub const STOP_DRAIN: Duration = Duration::from_millis(1500);

impl Server {
    /// Binds the control port; falls back from `::` to 0.0.0.0 without IPv6.
    /// Handshakes are held to their share of the open-file limit
    /// (`handshake_limit_for`).
    pub fn bind(mut cfg: ServerConfig) -> Result<Server, EngineError> {
        let nofile = sys::raise_fd_limit();
        cfg.max_connections = cfg.max_connections.max(1);
        cfg.max_unauthenticated = cfg
            .max_unauthenticated
            .clamp(1, handshake_limit_for(nofile));
        cfg.max_per_source = cfg.max_per_source.max(1);
        let addr = SocketAddr::new(cfg.bind, cfg.port);
        let sock = match listen_socket(addr, 128) {
            Err(e)
                if cfg.bind == IpAddr::V6(Ipv6Addr::UNSPECIFIED)
                    && e.raw_os_error() == Some(libc::EAFNOSUPPORT) =>
            {
                listen_socket(SocketAddr::new(IpAddr::from([0, 0, 0, 0]), cfg.port), 128)
            }
            r => r,
        }
        .map_err(|e| {
            EngineError::io(
                format!("listen on {addr} (is another server on that port?)"),
                e,
            )
        })?;
        Ok(Server {
            listener: sock.into(),
            cfg: Arc::new(cfg),
            registry: Arc::default(),
            table: Arc::default(),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, EngineError> {
        self.listener
            .local_addr()
            .map_err(|e| EngineError::io("read the listening address", e))
    }

    /// Serves until `stop` becomes true (checked at least every 200 ms),
    /// then ends the tests in flight (each client is told it was
    /// interrupted) and returns once they have ended, within
    /// `STOP_DRAIN`.
    pub fn serve(self, stop: Arc<AtomicBool>) -> Result<(), EngineError> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| EngineError::io("configure the listener", e))?;
        let fd = self.listener.as_fd();
        let mut reserve = reserve_fd();
        let quiet = Arc::new(QuietLog::default());
        while !stop.load(Ordering::Relaxed) {
            if !sys::poll_readable(fd, 200).unwrap_or(false) {
                continue;
            }
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if table::out_of_fds(&e) => {
                    // A handshake is the cheapest thing to give up: the
                    // oldest one makes room (one of its two descriptors
                    // is freed at once, the other as its thread wakes),
                    // so no silent client keeps out one that
                    // authenticates.
                    if self.table.displace_oldest() {
                        continue;
                    }
                    // Nothing to give up: answer one waiting client with
                    // the reserve descriptor, then back off: the listener
                    // stays readable until descriptors free up, and must
                    // not spin.
                    drop(reserve.take());
                    if let Ok((s, peer)) = self.listener.accept() {
                        refuse(s, "busy", OUT_OF_FDS);
                        quiet.note(&self.cfg, peer, &format!("refused: {OUT_OF_FDS}"));
                    }
                    reserve = reserve_fd();
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                Err(_) => continue,
            };
            let ticket = match self.table.admit(source_of(peer.ip()), &stream, &self.cfg) {
                Ok(t) => t,
                Err(why) => {
                    refuse(stream, "busy", &why.to_string());
                    quiet.note(&self.cfg, peer, &format!("refused: {why}"));
                    continue;
                }
            };
            let slot = Arc::new(Mutex::new(Some(stream)));
            let (cfg, reg, s2) = (self.cfg.clone(), self.registry.clone(), slot.clone());
            let q2 = quiet.clone();
            let mut ticket = ticket;
            let spawned = std::thread::Builder::new()
                .name("ws-control".into())
                .spawn(move || {
                    let stream = s2.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if let Some(stream) = stream
                        && let Err(e) = handle_control(stream, peer, &cfg, &reg, &mut ticket)
                    {
                        // Before authentication anyone can cause a failure:
                        // those lines are rationed like refusals.
                        if ticket.authenticated {
                            emit_failed(&cfg, peer, &e.to_string());
                        } else {
                            q2.note(&cfg, peer, &e.to_string());
                        }
                    }
                });
            if let Err(e) = spawned {
                let stream = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(s) = stream {
                    let why = format!("the server cannot start a thread ({e}); try again later");
                    refuse(s, "busy", &why);
                    quiet.note(&self.cfg, peer, &format!("refused: {why}"));
                }
            }
        }
        // Stopped: the tests in flight end at their next tick and tell
        // their clients they were interrupted; wait for that (bounded)
        // so the process does not exit under them.
        self.registry.stop();
        self.registry.drain(STOP_DRAIN);
        Ok(())
    }
}

/// What unauthenticated peers cause (refusals at accept, failed
/// handshakes) goes to the log at most once a second, with a count of the
/// lines left out: a flood must not flood the log too.
#[derive(Default)]
struct QuietLog {
    inner: Mutex<(Option<Instant>, u64)>,
}

impl QuietLog {
    fn note(&self, cfg: &ServerConfig, peer: SocketAddr, what: &str) {
        let now = Instant::now();
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (last, left_out) = &mut *g;
        if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            *left_out += 1;
            return;
        }
        let more = match std::mem::take(left_out) {
            0 => String::new(),
            n => format!(" ({n} more like it from unauthenticated clients since the last line)"),
        };
        *last = Some(now);
        drop(g);
        emit_failed(cfg, peer, &format!("{what}{more}"));
    }
}
