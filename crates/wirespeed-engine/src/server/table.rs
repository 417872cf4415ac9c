//! The per-source table of control connections: the handshake pool,
//! the authenticated pool and the per-address cap, checked under one lock.

use super::answer::{DISPLACED, OUT_OF_FDS};
use super::config::ServerConfig;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr, Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Why the table refuses a control connection (answered `busy`; the text
/// goes to the peer).
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// The address holds its whole share in authenticated connections.
    #[error("too many connections from your address: the server takes {max} per address at once")]
    PerSource {
        /// Connections the server takes per address.
        max: usize,
    },
    /// The process (or system) is out of file descriptors.
    #[error("{}", OUT_OF_FDS)]
    OutOfFds,
    /// A second handle on the connection could not be made (the error
    /// is in the text, so not a source).
    #[error("cannot take the connection: {0}")]
    Handle(std::io::Error),
    /// The connection was dropped from the handshake to make room.
    #[error("{}", DISPLACED)]
    Displaced,
    /// The authenticated pool is full.
    #[error("too many control connections at once (the server takes {max}); try again later")]
    Full {
        /// Control connections the server takes at once.
        max: usize,
    },
}

/// Control connections by state and source address: the caps of
/// [`ServerConfig`] are checked here, under one lock.
#[derive(Debug, Default)]
pub(super) struct Table {
    inner: Mutex<TableInner>,
}

#[derive(Debug, Default)]
struct TableInner {
    next: u64,
    /// Connections in the handshake, oldest first (ids only grow).
    handshaking: BTreeMap<u64, Handshaking>,
    authenticated: usize,
    per_source: HashMap<IpAddr, usize>,
}

/// The "address" a per-source cap counts: an IPv4 address, or the /64 an
/// IPv6 address is in (one host commonly holds a whole /64, so counting
/// single IPv6 addresses would cap nothing).
pub fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
        v4 => v4,
    }
}

#[derive(Debug)]
struct Handshaking {
    ip: IpAddr,
    /// A second handle on the socket, to shut its reading side when the
    /// connection is dropped to make room: its thread then wakes at once.
    kick: TcpStream,
    dropped: Arc<AtomicBool>,
}

impl TableInner {
    fn displace(&mut self, id: u64) {
        if let Some(h) = self.handshaking.remove(&id) {
            self.leave_source(h.ip);
            h.dropped.store(true, Ordering::SeqCst);
            let _ = h.kick.shutdown(Shutdown::Read);
        }
    }

    fn leave_source(&mut self, ip: IpAddr) {
        if let Some(n) = self.per_source.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&ip);
            }
        }
    }
}

/// A control connection's place in the [`Table`]; dropping it frees it.
pub(super) struct Ticket {
    table: Arc<Table>,
    id: u64,
    ip: IpAddr,
    dropped: Arc<AtomicBool>,
    pub(super) authenticated: bool,
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, TableInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a new connection in the handshake, displacing the oldest
    /// handshake of its address (at the per-source cap) or of all (at the
    /// handshake cap); Err(why) when the address holds its whole share in
    /// authenticated connections.
    pub(super) fn admit(
        self: &Arc<Self>,
        ip: IpAddr,
        stream: &TcpStream,
        cfg: &ServerConfig,
    ) -> Result<Ticket, Refusal> {
        let kick = self.kick_handle(stream)?;
        let mut t = self.lock();
        if t.per_source.get(&ip).copied().unwrap_or(0) >= cfg.max_per_source {
            let oldest = t
                .handshaking
                .iter()
                .find(|(_, h)| h.ip == ip)
                .map(|(id, _)| *id);
            match oldest {
                Some(id) => t.displace(id),
                None => {
                    return Err(Refusal::PerSource {
                        max: cfg.max_per_source,
                    });
                }
            }
        }
        if t.handshaking.len() >= cfg.max_unauthenticated
            && let Some(id) = t.handshaking.keys().next().copied()
        {
            t.displace(id);
        }
        let id = t.next;
        t.next += 1;
        let dropped = Arc::new(AtomicBool::new(false));
        t.handshaking.insert(
            id,
            Handshaking {
                ip,
                kick,
                dropped: dropped.clone(),
            },
        );
        *t.per_source.entry(ip).or_default() += 1;
        Ok(Ticket {
            table: self.clone(),
            id,
            ip,
            dropped,
            authenticated: false,
        })
    }

    /// Drops the oldest connection still in the handshake (answered
    /// `busy`) to free its descriptors; false when there is none.
    pub(super) fn displace_oldest(&self) -> bool {
        let mut t = self.lock();
        let Some(id) = t.handshaking.keys().next().copied() else {
            return false;
        };
        t.displace(id);
        true
    }

    /// A second handle on `stream`, for [`TableInner::displace`]; out of
    /// descriptors, the oldest handshake makes room for it first.
    fn kick_handle(&self, stream: &TcpStream) -> Result<TcpStream, Refusal> {
        let mut r = stream.try_clone();
        if r.as_ref().is_err_and(out_of_fds) && self.displace_oldest() {
            r = stream.try_clone();
        }
        r.map_err(|e| match out_of_fds(&e) {
            true => Refusal::OutOfFds,
            false => Refusal::Handle(e),
        })
    }
}

/// Whether `e` is the process (or system) out of file descriptors.
pub(super) fn out_of_fds(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

impl Ticket {
    /// Whether the connection was dropped to make room.
    pub(super) fn displaced(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Moves the connection from the handshake to the authenticated pool.
    pub(super) fn authenticate(&mut self, max: usize) -> Result<(), Refusal> {
        let mut t = self.table.lock();
        if !t.handshaking.contains_key(&self.id) {
            return Err(Refusal::Displaced);
        }
        if t.authenticated >= max {
            return Err(Refusal::Full { max });
        }
        t.handshaking.remove(&self.id);
        t.authenticated += 1;
        self.authenticated = true;
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut t = self.table.lock();
        if self.authenticated {
            t.authenticated -= 1;
            t.leave_source(self.ip);
        } else if t.handshaking.remove(&self.id).is_some() {
            t.leave_source(self.ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, SockAddr, Socket, Type};
    use std::net::{SocketAddr, TcpListener};

    #[test]
    fn a_source_is_an_ipv4_address_or_an_ipv6_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(source_of(a), source_of(b));
        assert_ne!(source_of(a), source_of(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(source_of(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
        let v4: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(source_of(v4), v4);
    }

    /// A connected loopback pair: (the server's end, the client's end).
    fn pair(l: &TcpListener, from: &str) -> (TcpStream, TcpStream) {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.bind(&SockAddr::from(SocketAddr::new(from.parse().unwrap(), 0)))
            .unwrap();
        s.connect(&SockAddr::from(l.local_addr().unwrap())).unwrap();
        (l.accept().unwrap().0, s.into())
    }

    #[test]
    fn handshakes_make_room_and_never_take_authenticated_places() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let cfg = ServerConfig {
            max_connections: 2,
            max_unauthenticated: 3,
            max_per_source: 2,
            ..ServerConfig::default()
        };
        let table = Arc::new(Table::default());
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let mut keep = Vec::new();
        let mut admit = |ip: IpAddr| {
            let (srv, cli) = pair(&l, &ip.to_string());
            let t = table.admit(ip, &srv, &cfg);
            keep.push((srv, cli));
            t
        };
        // Two from a: the per-source cap; a third displaces a's oldest.
        let a1 = admit(a).unwrap();
        let mut a2 = admit(a).unwrap();
        let a3 = admit(a).unwrap();
        assert!(a1.displaced() && !a2.displaced() && !a3.displaced());
        // b's first fills the pool of 3 handshakes; its second displaces
        // the oldest of all (a2).
        let b1 = admit(b).unwrap();
        let mut b2 = admit(b).unwrap();
        assert!(a2.displaced() && !b1.displaced());
        assert!(a2.authenticate(cfg.max_connections).is_err());
        // Authenticated places are only for the authenticated.
        b2.authenticate(cfg.max_connections).unwrap();
        let mut a3 = a3;
        a3.authenticate(cfg.max_connections).unwrap();
        let mut b1 = b1;
        let e = b1.authenticate(cfg.max_connections).unwrap_err();
        assert!(matches!(e, Refusal::Full { max: 2 }), "{e}");
        assert!(
            e.to_string().contains("too many control connections"),
            "{e}"
        );
        // A new one from a displaces a's other handshake, not a3.
        let a4 = admit(a).unwrap();
        let mut a5 = admit(a).unwrap();
        assert!(a4.displaced() && !a5.displaced());
        // With both of a's places authenticated, a is refused outright.
        drop(b2);
        a5.authenticate(cfg.max_connections).unwrap();
        let e = admit(a).map(|_| ()).unwrap_err();
        assert!(matches!(e, Refusal::PerSource { .. }), "{e}");
        assert!(e.to_string().contains("per address"), "{e}");
        drop((a1, a2, a3, a4, a5, b1));
        let t = table.lock();
        assert!(t.handshaking.is_empty() && t.authenticated == 0 && t.per_source.is_empty());
    }

    #[test]
    fn out_of_descriptors_the_oldest_handshake_makes_room() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let cfg = ServerConfig::default();
        let table = Arc::new(Table::default());
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let (s1, _c1) = pair(&l, "127.0.0.1");
        let (s2, _c2) = pair(&l, "127.0.0.1");
        let (s3, _c3) = pair(&l, "127.0.0.1");
        let mut authed = table.admit(ip, &s1, &cfg).unwrap();
        authed.authenticate(cfg.max_connections).unwrap();
        let old = table.admit(ip, &s2, &cfg).unwrap();
        let new = table.admit(ip, &s3, &cfg).unwrap();
        assert!(table.displace_oldest());
        assert!(old.displaced() && !new.displaced() && !authed.displaced());
        assert!(table.displace_oldest() && new.displaced());
        // Authenticated connections are never given up.
        assert!(!table.displace_oldest());
        assert_eq!(table.lock().authenticated, 1);
    }
}
