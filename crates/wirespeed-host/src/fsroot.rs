//! /proc and /sys under a root directory: the real "/" on a host, a
//! recorded tree in tests (bonds cannot be created on the test kernel).

use crate::HostError;
use crate::snapshot::{Bond, BondSlave};
use std::path::{Path, PathBuf};

/// Where /proc and /sys are.
#[derive(Debug, Clone)]
pub struct Fs {
    root: PathBuf,
}

impl Default for Fs {
    fn default() -> Self {
        Fs {
            root: PathBuf::from("/"),
        }
    }
}

/// The /proc/sys path of a sysctl name. As in sysctl(8), a dotted name
/// writes a dot inside a part (a device such as eth0.100) as `/`; a name
/// without dots is taken as a path.
pub fn sysctl_path(key: &str) -> String {
    let rel: String = if key.contains('.') {
        key.chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect()
    } else {
        key.to_string()
    };
    format!("proc/sys/{rel}")
}

impl Fs {
    /// /proc and /sys under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Fs {
        Fs { root: root.into() }
    }

    /// The absolute path of `rel` under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// A file's content with surrounding whitespace removed.
    pub fn read_trim(&self, rel: &str) -> Result<String, HostError> {
        let p = self.path(rel);
        std::fs::read_to_string(&p)
            .map(|s| s.trim().to_string())
            .map_err(|e| HostError::file(&p, e))
    }

    /// A sysctl's value, tabs folded to single spaces.
    pub fn sysctl(&self, key: &str) -> Result<String, HostError> {
        Ok(self
            .read_trim(&sysctl_path(key))?
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "))
    }

    /// Whether a sysctl's file lets its owner write (false inside a
    /// namespace for global knobs such as net.core.rmem_max).
    pub fn sysctl_writable(&self, key: &str) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(self.path(&sysctl_path(key)))
            .map(|m| m.permissions().mode() & 0o200 != 0)
            .unwrap_or(false)
    }

    /// Writes a sysctl.
    pub fn write_sysctl(&self, key: &str, value: &str) -> Result<(), HostError> {
        let p = self.path(&sysctl_path(key));
        std::fs::write(&p, value).map_err(|e| HostError::file(&p, e))
    }

    /// MemTotal in bytes from /proc/meminfo.
    pub fn mem_total(&self) -> Result<u64, HostError> {
        let text = self.read_trim("proc/meminfo")?;
        text.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .ok_or_else(|| HostError::State("/proc/meminfo has no MemTotal line".into()))
    }

    /// The driver bound to a device (sysfs device/driver link).
    pub fn driver(&self, dev: &str) -> Option<String> {
        let link =
            std::fs::read_link(self.path(&format!("sys/class/net/{dev}/device/driver"))).ok()?;
        Some(link.file_name()?.to_string_lossy().into_owned())
    }
}

/// The first word of a sysfs bonding value ("802.3ad 4" -> "802.3ad").
fn first_word(s: &str) -> String {
    s.split_whitespace().next().unwrap_or("").to_string()
}

/// Reads a bond from sysfs bonding/ and /proc/net/bonding/NAME.
pub fn read_bond(fs: &Fs, name: &str) -> Result<Bond, HostError> {
    let dir = format!("sys/class/net/{name}/bonding");
    // thread-self first: a thread in a lab's namespace reads its own
    // (recorded trees have only proc/net).
    let proc_text = fs
        .read_trim(&format!("proc/thread-self/net/bonding/{name}"))
        .or_else(|_| fs.read_trim(&format!("proc/net/bonding/{name}")))
        .ok();
    let from_proc = proc_text.as_deref().map(parse_proc_bonding);
    let mode = fs.read_trim(&format!("{dir}/mode")).map(|s| first_word(&s));
    let policy = fs
        .read_trim(&format!("{dir}/xmit_hash_policy"))
        .map(|s| first_word(&s));
    let (mode, policy) = match (mode, policy, &from_proc) {
        (Ok(m), Ok(p), _) => (m, p),
        (m, p, Some(b)) => (
            m.unwrap_or_else(|_| b.mode.clone()),
            p.unwrap_or_else(|_| b.xmit_hash_policy.clone()),
        ),
        (Err(e), _, None) | (_, Err(e), None) => return Err(e),
    };
    let miimon = fs
        .read_trim(&format!("{dir}/miimon"))
        .ok()
        .and_then(|s| s.parse().ok())
        .or(from_proc.as_ref().and_then(|b| b.miimon));
    let mut slaves = from_proc.map(|b| b.slaves).unwrap_or_default();
    if slaves.is_empty()
        && let Ok(list) = fs.read_trim(&format!("{dir}/slaves"))
    {
        slaves = list
            .split_whitespace()
            .map(|s| BondSlave {
                name: s.into(),
                mii_status: "unknown".into(),
                speed_mbps: None,
            })
            .collect();
    }
    Ok(Bond {
        mode,
        xmit_hash_policy: policy,
        miimon,
        slaves,
    })
}

/// Bond mode names as /proc/net/bonding spells them, mapped to sysfs names.
fn mode_from_text(t: &str) -> String {
    let t = t.to_ascii_lowercase();
    let m = if t.contains("802.3ad") {
        "802.3ad"
    } else if t.contains("round-robin") {
        "balance-rr"
    } else if t.contains("active-backup") {
        "active-backup"
    } else if t.contains("xor") {
        "balance-xor"
    } else if t.contains("broadcast") {
        "broadcast"
    } else if t.contains("transmit load") {
        "balance-tlb"
    } else if t.contains("adaptive load") {
        "balance-alb"
    } else {
        return t;
    };
    m.into()
}

/// Parses /proc/net/bonding/NAME.
pub fn parse_proc_bonding(text: &str) -> Bond {
    let mut b = Bond {
        mode: String::new(),
        xmit_hash_policy: "layer2".into(),
        miimon: None,
        slaves: Vec::new(),
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "Bonding Mode" => b.mode = mode_from_text(v),
            "Transmit Hash Policy" => b.xmit_hash_policy = first_word(v),
            "MII Polling Interval (ms)" => b.miimon = v.parse().ok(),
            "Slave Interface" => b.slaves.push(BondSlave {
                name: v.into(),
                mii_status: "unknown".into(),
                speed_mbps: None,
            }),
            "MII Status" => {
                if let Some(s) = b.slaves.last_mut() {
                    s.mii_status = v.into();
                }
            }
            "Speed" => {
                if let Some(s) = b.slaves.last_mut() {
                    s.speed_mbps = first_word(v).parse().ok();
                }
            }
            _ => {}
        }
    }
    b
}

/// Largest description file (profile, lab, experiment) read: 1 MiB.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Reads a description file a user names, refusing what is not a regular
/// file (a FIFO would block, /dev/zero never end) or is larger than
/// [`MAX_FILE_BYTES`].
pub fn read_text_file(path: impl AsRef<Path>) -> std::io::Result<String> {
    use std::io::Read;
    let path = path.as_ref();
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} KiB", MAX_FILE_BYTES >> 10),
        ));
    }
    Ok(text)
}

/// True when `p` exists under the root.
pub fn exists(fs: &Fs, rel: &str) -> bool {
    Path::new(&fs.path(rel)).exists()
}
