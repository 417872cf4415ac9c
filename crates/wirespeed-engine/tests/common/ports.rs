//! TCP ports a process listens on, found the way a port scan would find a
//! test's data port: /proc/net/tcp{,6} entries in state LISTEN whose
//! socket inode is one of the process's descriptors; and a port's open
//! connections the same way. Shared with the binary's tests (included
//! there by path).

/// Ports process `pid` ("self" for this one) listens on.
pub fn listening_ports(pid: &str) -> Vec<u16> {
    sockets(pid)
        .into_iter()
        .filter(|(_, state)| state == "0A")
        .map(|(port, _)| port)
        .collect()
}

/// Connections of process `pid` ("self" for this one) whose local port is
/// `port`, in any state but LISTEN: a server's accepted connections on
/// that port that it has not closed yet.
#[allow(dead_code)]
pub fn connections_on(pid: &str, port: u16) -> usize {
    sockets(pid)
        .into_iter()
        .filter(|(p, state)| *p == port && state != "0A")
        .count()
}

/// Process `pid`'s TCP sockets: (local port, state as /proc/net/tcp
/// writes it, "0A" for LISTEN).
fn sockets(pid: &str) -> Vec<(u16, String)> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().to_string();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let c: Vec<&str> = line.split_whitespace().collect();
            if c.len() > 9
                && inodes.iter().any(|i| i == c[9])
                && let Some(p) = c[1].rsplit(':').next()
                && let Ok(port) = u16::from_str_radix(p, 16)
            {
                out.push((port, c[3].to_string()));
            }
        }
    }
    out
}
