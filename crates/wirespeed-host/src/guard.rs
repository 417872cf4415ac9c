//! Tuning that cannot cut the host off: which devices carry the default
//! route, the user's own session (SSH) and wirespeed's control
//! connections ([`carriers`]); plan steps marked when they touch one of
//! them or when nothing measured shows that the path takes them
//! ([`mark`]); and the checks after an apply ([`Checks`]): the gateway
//! and peers still answer, and a full-size packet gets through after an
//! MTU change.

use crate::pathmtu::{self, CheckError, PathMtu};
use crate::snapshot::Snapshot;
use crate::tune::{Plan, Setting};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// The confirm deadline a plan that touches a carrier gets unless told
/// otherwise (netplan try's).
pub const DEFAULT_CONFIRM: Duration = Duration::from_secs(120);

/// A device that carries something this host must not lose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carrier {
    /// The device.
    pub dev: String,
    /// What it carries, in words ("the default route via 10.0.0.1").
    pub what: String,
}

/// One established TCP connection read from /proc/net/tcp{,6}.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Conn {
    local: IpAddr,
    local_port: u16,
    remote: IpAddr,
    remote_port: u16,
    inode: u64,
}

/// Decodes /proc/net/tcp's hex address (the kernel prints each 32-bit
/// word of the network-order address as a host-order integer).
fn proc_addr(hex: &str) -> Option<(IpAddr, u16)> {
    let (a, p) = hex.split_once(':')?;
    let port = u16::from_str_radix(p, 16).ok()?;
    let words: Vec<[u8; 4]> = (0..a.len() / 8)
        .map(|i| {
            u32::from_str_radix(a.get(i * 8..i * 8 + 8)?, 16)
                .ok()
                .map(u32::to_ne_bytes)
        })
        .collect::<Option<_>>()?;
    let ip = match words.len() {
        1 => IpAddr::V4(Ipv4Addr::from(words[0])),
        4 => {
            let mut b = [0u8; 16];
            for (i, w) in words.iter().enumerate() {
                b[i * 4..i * 4 + 4].copy_from_slice(w);
            }
            let v6 = Ipv6Addr::from(b);
            v6.to_ipv4_mapped()
                .map(IpAddr::V4)
                .unwrap_or(IpAddr::V6(v6))
        }
        _ => return None,
    };
    Some((ip, port))
}

/// Established TCP connections of this thread's network namespace
/// (thread-self: a thread that entered a lab's namespace is not where
/// the process is, and /proc/net is the process's).
fn established() -> Vec<Conn> {
    let mut out = Vec::new();
    for f in ["/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() < 10 || w[3] != "01" {
                continue;
            }
            let (Some((local, local_port)), Some((remote, remote_port)), Ok(inode)) =
                (proc_addr(w[1]), proc_addr(w[2]), w[9].parse::<u64>())
            else {
                continue;
            };
            out.push(Conn {
                local,
                local_port,
                remote,
                remote_port,
                inode,
            });
        }
    }
    out
}

/// This process and its ancestors (pid, command name), nearest first.
fn ancestry() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut pid = std::process::id();
    for _ in 0..64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.trim().to_string())
        };
        out.push((pid, field("Name:").unwrap_or_default()));
        match field("PPid:").and_then(|p| p.parse::<u32>().ok()) {
            Some(pp) if pp > 1 => pid = pp,
            _ => break,
        }
    }
    out
}

/// Socket inodes a process holds open.
fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|t| {
            t.to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The remote ends this session depends on: SSH_CONNECTION's client, the
/// established connections held by this process's ancestors (the sshd
/// that serves the session), and wirespeed control connections on
/// `control_port`. (remote address, what in words).
pub fn session_peers(control_port: u16) -> Vec<(IpAddr, String)> {
    let mut out: Vec<(IpAddr, String)> = Vec::new();
    let mut add = |ip: IpAddr, what: String| {
        if !ip.is_loopback() && !ip.is_unspecified() && !out.iter().any(|(x, _)| *x == ip) {
            out.push((ip, what));
        }
    };
    if let Ok(v) = std::env::var("SSH_CONNECTION")
        && let Some(ip) = v
            .split_whitespace()
            .next()
            .and_then(|c| c.parse::<IpAddr>().ok())
    {
        add(ip, format!("your SSH session from {ip}"));
    }
    let conns = established();
    for (pid, name) in ancestry().into_iter().skip(1) {
        let inodes = socket_inodes(pid);
        for c in conns.iter().filter(|c| inodes.contains(&c.inode)) {
            add(
                c.remote,
                format!(
                    "the connection of {name} (pid {pid}, which runs this command) with {}",
                    c.remote
                ),
            );
        }
    }
    for c in conns
        .iter()
        .filter(|c| c.local_port == control_port || c.remote_port == control_port)
    {
        add(
            c.remote,
            format!(
                "a wirespeed control connection with {} (port {control_port})",
                c.remote
            ),
        );
    }
    out
}

/// The devices carrying the default route, the user's session and
/// wirespeed control connections (see [`session_peers`]), and the devices
/// below them (a VXLAN's underlay, a bond's slaves).
pub fn carriers(snap: &Snapshot, control_port: u16) -> Vec<Carrier> {
    let mut out: Vec<Carrier> = Vec::new();
    fn add(out: &mut Vec<Carrier>, dev: &str, what: String) {
        if !out.iter().any(|c| c.dev == dev) {
            out.push(Carrier {
                dev: dev.into(),
                what,
            });
        }
    }
    for r in snap
        .routes
        .iter()
        .filter(|r| r.dst == "default" && r.table == 254)
    {
        let via = |g: &Option<String>| g.as_ref().map(|g| format!(" via {g}")).unwrap_or_default();
        if let Some(d) = &r.dev {
            add(
                &mut out,
                d,
                format!("the IPv{} default route{}", r.family, via(&r.gateway)),
            );
        }
        for h in &r.nexthops {
            if let Some(d) = &h.dev {
                add(
                    &mut out,
                    d,
                    format!("the IPv{} default route{}", r.family, via(&h.gateway)),
                );
            }
        }
    }
    for (ip, what) in session_peers(control_port) {
        if let Some(d) = pathmtu::route_dev(ip, snap) {
            add(&mut out, &d, what);
        }
    }
    // What lies below a carrier carries it too.
    let mut i = 0;
    while i < out.len() && i < 64 {
        let c = out[i].clone();
        if let Some(l) = snap.link(&c.dev) {
            let below = l.lower.iter().cloned().chain(
                l.bond
                    .iter()
                    .flat_map(|b| b.slaves.iter().map(|s| s.name.clone())),
            );
            for d in below.collect::<Vec<_>>() {
                add(&mut out, &d, format!("{} (through {})", c.what, c.dev));
            }
        }
        i += 1;
    }
    out
}

/// Why raising `dev`'s MTU to `new` is not shown to be safe by the paths
/// measured (None when a measurement shows the path carries `new`).
pub fn mtu_doubt(dev: &str, new: u32, paths: &[PathMtu]) -> Option<String> {
    let via: Vec<&PathMtu> = paths
        .iter()
        .filter(|p| p.dev.as_deref() == Some(dev))
        .collect();
    if let Some((m, p)) = via
        .iter()
        .filter(|p| p.exact)
        .filter_map(|p| p.mtu.map(|m| (m, p)))
        .filter(|(m, _)| *m < new)
        .min_by_key(|(m, _)| *m)
    {
        return Some(format!(
            "the path toward {} ({}) carries {m} bytes at most (measured): MTU {new} would not get through",
            p.target, p.role
        ));
    }
    let measured: Vec<&&PathMtu> = via.iter().filter(|p| p.mtu.is_some()).collect();
    if measured.is_empty() {
        return Some(if via.is_empty() {
            format!(
                "no path by {dev} was measured (no default route or --peer by it): nothing shows the network carries {new} bytes"
            )
        } else {
            format!(
                "no path by {dev} could be measured ({}): nothing shows the network carries {new} bytes",
                via[0].how
            )
        });
    }
    if measured.iter().all(|p| p.mtu.is_some_and(|m| m >= new)) {
        return None;
    }
    Some(format!(
        "probes toward {} were answered up to {dev}'s own MTU; none can be larger before the change, so nothing shows the path carries {new} bytes",
        measured
            .iter()
            .map(|p| format!("{} ({})", p.target, p.role))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn carrier_of<'a>(s: &Setting, carriers: &'a [Carrier]) -> Option<&'a Carrier> {
    if let Some(d) = s.dev() {
        return carriers.iter().find(|c| c.dev == d);
    }
    let Setting::Sysctl { key } = s else {
        return None;
    };
    let key = key.replace('/', ".");
    carriers.iter().find(|c| {
        [".conf.", ".neigh."].iter().any(|mid| {
            key.contains(&format!("{mid}{}.", c.dev)) || key.contains(&format!("{mid}all."))
        })
    })
}

/// Marks each step of `plan` that touches a carrier (`Step::carrier`) and
/// each MTU increase that no measurement shows the path takes
/// (`Step::unverified`).
pub fn mark(plan: &mut Plan, carriers: &[Carrier], paths: &[PathMtu]) {
    for step in &mut plan.steps {
        step.carrier = carrier_of(&step.action.setting, carriers)
            .map(|c| format!("{} carries {}", c.dev, c.what));
        if let Setting::Mtu { dev } = &step.action.setting
            && let Ok(new) = step.action.value.parse::<u32>()
            && step.current.parse::<u32>().is_ok_and(|cur| new > cur)
        {
            step.unverified = mtu_doubt(dev, new, paths);
        }
    }
}

/// Whether any step that changes something touches a carrier.
pub fn touches_carrier(plan: &Plan) -> bool {
    plan.steps.iter().any(|s| !s.no_op && s.carrier.is_some())
}

/// The first check after an apply that failed, and toward whom.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailed {
    /// A gateway or peer that answered before the apply does not now.
    #[error("{role} {target}: {error}")]
    Silent {
        /// "gateway" or "peer".
        role: String,
        /// Its address.
        target: IpAddr,
        /// Why the check says no.
        error: CheckError,
    },
    /// A packet of a raised MTU does not get through to a target.
    #[error("full-size check toward {role} {target}: {error}")]
    FullSize {
        /// "gateway" or "peer".
        role: String,
        /// Its address.
        target: IpAddr,
        /// Why the check says no.
        error: CheckError,
    },
}

/// What is checked after an apply: the gateways and peers that answered
/// before it, with the device each is reached by.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    targets: Vec<(IpAddr, String, Option<String>)>,
    /// Targets that did not answer before the apply (not checked after).
    pub silent: Vec<String>,
}

impl Checks {
    /// Probes the default gateways and `peers` now; those that answer are
    /// checked after the apply.
    pub fn before(snap: &Snapshot, peers: &[IpAddr]) -> Checks {
        let mut c = Checks::default();
        let all = pathmtu::gateways(snap)
            .into_iter()
            .map(|g| (g, "gateway"))
            .chain(peers.iter().map(|p| (*p, "peer")));
        for (ip, role) in all {
            if c.targets.iter().any(|(t, _, _)| *t == ip) {
                continue;
            }
            match pathmtu::answers(ip, Duration::from_secs(1)) {
                Ok(()) => c
                    .targets
                    .push((ip, role.into(), pathmtu::route_dev(ip, snap))),
                Err(e) => c.silent.push(format!("{role} {ip}: {e}")),
            }
        }
        c
    }

    /// Runs the checks after `plan` was applied: every target still
    /// answers, and for each MTU raised, a packet of the new MTU with DF
    /// set gets through to every target reached by that device. Ok with
    /// what passed, or Err with the first check that failed. `window`
    /// bounds how long a silent target is retried.
    pub fn after(&self, plan: &Plan, window: Duration) -> Result<Vec<String>, CheckFailed> {
        let mut passed = Vec::new();
        for (ip, role, _) in &self.targets {
            pathmtu::answers(*ip, window).map_err(|error| CheckFailed::Silent {
                role: role.clone(),
                target: *ip,
                error,
            })?;
            passed.push(format!("{role} {ip} answers"));
        }
        for s in plan.steps.iter().filter(|s| !s.no_op) {
            let (Setting::Mtu { dev }, Ok(new)) =
                (&s.action.setting, s.action.value.parse::<u32>())
            else {
                continue;
            };
            let via: Vec<_> = self
                .targets
                .iter()
                .filter(|(_, _, d)| d.as_deref() == Some(dev.as_str()))
                .collect();
            if via.is_empty() {
                passed.push(format!(
                    "no answering gateway or peer is reached by {dev}: a {new}-byte packet could not be checked"
                ));
            }
            for (ip, role, _) in via {
                pathmtu::full_size_gets_through(*ip, new, window).map_err(|error| {
                    CheckFailed::FullSize {
                        role: role.clone(),
                        target: *ip,
                        error,
                    }
                })?;
                passed.push(format!(
                    "a {new}-byte packet (don't fragment) gets through to {role} {ip}"
                ));
            }
        }
        Ok(passed)
    }

    /// Whether there is anything to check.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_tcp_addresses_decode() {
        // 127.0.0.1:8080 as the kernel prints it on a little-endian host.
        let (ip, port) = proc_addr("0100007F:1F90").unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        assert_eq!(port, 8080);
        // ::ffff:10.1.2.3 shows as the IPv4 address.
        let (ip, _) = proc_addr("0000000000000000FFFF00000302010A:0016").unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(ip, "10.1.2.3".parse::<IpAddr>().unwrap());
        }
        assert!(proc_addr("zz:1").is_none());
        assert!(proc_addr("0100007F").is_none());
    }

    fn path(dev: &str, mtu: Option<u32>, exact: bool) -> PathMtu {
        PathMtu {
            target: "10.0.0.1".into(),
            role: "gateway".into(),
            dev: Some(dev.into()),
            local_mtu: Some(1500),
            mtu,
            exact,
            how: "test".into(),
            probes: 1,
        }
    }

    #[test]
    fn an_mtu_raise_is_doubted_unless_measured() {
        let measured_low = [path("eth0", Some(1400), true)];
        let d = mtu_doubt("eth0", 9000, &measured_low).unwrap();
        assert!(d.contains("carries 1400 bytes at most"), "{d}");
        let bounded = [path("eth0", Some(1500), false)];
        let d = mtu_doubt("eth0", 9000, &bounded).unwrap();
        assert!(d.contains("own MTU"), "{d}");
        let d = mtu_doubt("eth1", 9000, &bounded).unwrap();
        assert!(d.contains("no path by eth1 was measured"), "{d}");
        let silent = [path("eth0", None, false)];
        assert!(
            mtu_doubt("eth0", 9000, &silent)
                .unwrap()
                .contains("could be measured")
        );
        let big = [path("eth0", Some(9000), false)];
        assert_eq!(mtu_doubt("eth0", 9000, &big), None);
    }
}
