//! TCP ports a process listens on, found the way a port scan would find a
//! test's data port: /proc/net/tcp{,6} entries in state LISTEN whose
//! socket inode is one of the process's descriptors. Shared with the
//! binary's tests (included there by path).

/// Ports process `pid` ("self" for this one) listens on.
pub fn listening_ports(pid: &str) -> Vec<u16> {
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
                && c[3] == "0A"
                && inodes.iter().any(|i| i == c[9])
                && let Some(p) = c[1].rsplit(':').next()
            {
                out.extend(u16::from_str_radix(p, 16).ok());
            }
        }
    }
    out
}
