//! Tuning: a [`Plan`] of [`Action`]s, each shown as the command a person
//! would type, applied through netlink, ethtool netlink and /proc/sys with
//! a journal of the old values written first, each value verified after
//! writing, everything rolled back when a step fails, on `rollback`, or
//! when a confirmation deadline passes.

use crate::HostError;

mod changes;
mod knobs;

use crate::ethtool::Ethtool;
use crate::fsroot::Fs;
use crate::rtnl::Rtnl;
use crate::snapshot::Snapshot;
pub(crate) use crate::sysctl_scope::dotted;
pub use crate::sysctl_scope::{
    HOST_WIDE_NET_SYSCTLS, netns_sysctl_refusal, sysctl_is_host_wide, valid_sysctl_name,
};
pub use changes::NsChanges;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Version of the plan and journal JSON.
pub const TUNE_SCHEMA: u32 = 1;

/// One knob that tuning can set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Setting {
    /// A sysctl by dotted name.
    Sysctl {
        /// e.g. net.ipv4.tcp_rmem.
        key: String,
    },
    /// A device's MTU.
    Mtu {
        /// Device.
        dev: String,
    },
    /// gso_max_size (IPv6 and, at or below 65536, IPv4 too).
    GsoMaxSize {
        /// Device.
        dev: String,
    },
    /// gro_max_size.
    GroMaxSize {
        /// Device.
        dev: String,
    },
    /// gso_ipv4_max_size.
    GsoIpv4MaxSize {
        /// Device.
        dev: String,
    },
    /// gro_ipv4_max_size.
    GroIpv4MaxSize {
        /// Device.
        dev: String,
    },
    /// gso_max_segs: the most segments in one GSO packet.
    GsoMaxSegs {
        /// Device.
        dev: String,
    },
    /// An ethtool feature by kernel name (rx-gro, tx-tcp-segmentation...).
    Feature {
        /// Device.
        dev: String,
        /// Kernel feature name.
        name: String,
    },
    /// A driver private flag.
    PrivateFlag {
        /// Device.
        dev: String,
        /// Flag name.
        flag: String,
    },
    /// RX ring size.
    RxRing {
        /// Device.
        dev: String,
    },
    /// A bond's xmit_hash_policy (sysfs bonding/xmit_hash_policy).
    BondHashPolicy {
        /// The bond.
        dev: String,
    },
    /// Per-NIC source routing: "from ADDR lookup TABLE" plus the subnet
    /// route via DEV in TABLE. Values: present / absent.
    SourceRoute {
        /// Device that holds the address.
        dev: String,
        /// The address in CIDR form (the subnet comes from its length).
        addr: String,
        /// Routing table.
        table: u32,
        /// Rule priority.
        priority: u32,
    },
}

/// A setting and the value to give it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// What is changed.
    pub setting: Setting,
    /// The new value (numbers and sysctl strings as written; on/off;
    /// present/absent).
    pub value: String,
}

/// An action with the value it replaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The action.
    pub action: Action,
    /// The value read now.
    pub current: String,
    /// The command a person would type.
    pub command: String,
    /// True when the current value already equals the new one.
    pub no_op: bool,
    /// True when the setting is not confined to a network namespace (a
    /// sysctl outside net.*, or one of the few host-wide net.* ones).
    #[serde(default)]
    pub host_wide: bool,
    /// Set when the step touches a device that carries the default route,
    /// the user's session or a control connection: what it carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier: Option<String>,
    /// Set when nothing measured shows the path takes the change (an MTU
    /// raise): why; `tune apply` needs `--force` for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<String>,
}

/// What tuning would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// [`TUNE_SCHEMA`].
    pub schema_version: u32,
    /// Where the plan came from (profile name, "doctor").
    pub source: String,
    /// The steps in apply order.
    pub steps: Vec<Step>,
    /// Actions left out, with the reason (not supported here, not writable).
    pub skipped: Vec<(Action, String)>,
}

/// One journaled change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The setting.
    pub setting: Setting,
    /// Its value before wirespeed first changed it.
    pub old: String,
    /// The value wirespeed set (for a side effect: the value read after
    /// the apply).
    pub new: String,
    /// When the kernel changes this value as a side effect of setting
    /// another one, that setting's label.
    #[serde(default)]
    pub side_effect_of: Option<String>,
}

/// The rollback journal: written before any change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// [`TUNE_SCHEMA`].
    pub schema_version: u32,
    /// When the first change was journaled (Unix seconds).
    pub created_unix: f64,
    /// Unix time after which a watchdog rolls back; None once confirmed.
    pub deadline_unix: Option<f64>,
    /// The boot the changes were made in (/proc/sys/kernel/random/boot_id):
    /// after a reboot the kernel has reset them, and the journal is stale.
    #[serde(default)]
    pub boot_id: Option<String>,
    /// The pid of the watchdog that rolls back at the deadline.
    #[serde(default)]
    pub watchdog_pid: Option<u32>,
    /// A systemd timer armed as a second way to roll back at the deadline.
    #[serde(default)]
    pub timer_unit: Option<String>,
    /// Changes in the order they were applied (a step's side effects
    /// before the step).
    pub entries: Vec<Entry>,
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Setting {
    /// The device this setting is on, if any.
    pub fn dev(&self) -> Option<&str> {
        match self {
            Setting::Sysctl { .. } => None,
            Setting::Mtu { dev }
            | Setting::GsoMaxSize { dev }
            | Setting::GroMaxSize { dev }
            | Setting::GsoIpv4MaxSize { dev }
            | Setting::GroIpv4MaxSize { dev }
            | Setting::GsoMaxSegs { dev }
            | Setting::Feature { dev, .. }
            | Setting::PrivateFlag { dev, .. }
            | Setting::RxRing { dev }
            | Setting::BondHashPolicy { dev }
            | Setting::SourceRoute { dev, .. } => Some(dev),
        }
    }

    /// Apply-order rank: MTU first, IPv6 GSO/GRO sizes before the IPv4
    /// ones (setting gso_max_size <= 65536 overwrites the IPv4 value).
    fn rank(&self) -> u8 {
        self.knob().rank()
    }

    /// A short label ("mtu of eth1").
    pub fn label(&self) -> String {
        self.knob().label()
    }
}

impl Action {
    /// A sysctl action.
    pub fn sysctl(key: &str, value: impl Into<String>) -> Action {
        Action {
            setting: Setting::Sysctl { key: key.into() },
            value: value.into(),
        }
    }

    /// The command a person would type for this action.
    pub fn command(&self) -> String {
        self.setting.knob().render(&self.value)
    }
}

/// Reads and writes settings on the running host.
pub struct Host {
    fs: Fs,
    rt: Rtnl,
    eth: Option<Ethtool>,
    in_init_netns: bool,
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn onoff(b: bool) -> String {
    if b { "on".into() } else { "off".into() }
}

impl Host {
    /// Opens netlink sockets on this namespace; `/proc` and `/sys` under `fs`.
    pub fn open(fs: Fs) -> Result<Host, HostError> {
        // The initial namespace has a fixed inode on recent kernels
        // (0xEFFFFFF9); otherwise compare with pid 1's, which is unreadable
        // from inside another namespace (and in some sandboxes).
        // thread-self: a thread that entered a lab's namespace is not
        // where the process is.
        let me = std::fs::read_link("/proc/thread-self/ns/net").ok();
        let in_init_netns = me
            .as_ref()
            .is_some_and(|m| m.as_os_str() == "net:[4026531833]")
            || match (&me, std::fs::read_link("/proc/1/ns/net")) {
                (Some(a), Ok(b)) => *a == b,
                _ => false,
            };
        Ok(Host {
            fs,
            rt: Rtnl::open()?,
            eth: Ethtool::open().ok(),
            in_init_netns,
        })
    }

    fn eth(&mut self) -> Result<&mut Ethtool, HostError> {
        self.eth.as_mut().ok_or_else(|| {
            HostError::Refused("the ethtool netlink family is not available on this kernel".into())
        })
    }

    fn index(&mut self, dev: &str) -> Result<u32, HostError> {
        Ok(self.rt.link(dev)?.header.index)
    }

    /// The current value of a setting, in the same form as [`Action::value`].
    pub fn read(&mut self, s: &Setting) -> Result<String, HostError> {
        s.knob().read(self)
    }

    /// Writes a setting (no verification; see [`Host::set`]).
    fn write(&mut self, s: &Setting, value: &str) -> Result<(), HostError> {
        s.knob().write(self, value)
    }

    /// Settings the kernel may change when `s` is set, beside `s` itself:
    /// the IPv4 GSO/GRO size with the IPv6 one (which overwrites it at or
    /// below 64 KiB); with a device's MTU its IPv6 MTU, its upper devices'
    /// MTU (vlan, macvlan follow a lower MTU down) and its master's (a
    /// bridge follows its ports); with the global forwarding flag every
    /// device's flag, `all.accept_redirects` and every device's LRO
    /// (forwarding turns it off). Those a host lacks fail to read and are
    /// left out by [`apply`].
    pub fn side_effects(&mut self, s: &Setting) -> Vec<Setting> {
        s.knob().side_effects(self)
    }

    /// After a journaled device has gone: removes what it leaves behind
    /// that still matters (the policy rule of its source routing; the
    /// route went with the device).
    fn clear_orphans(&mut self, s: &Setting, old: &str) {
        s.knob().clear_orphans(self, old)
    }

    /// Writes a setting and reads it back; an error when it differs.
    pub fn set(&mut self, s: &Setting, value: &str) -> Result<(), HostError> {
        self.write(s, value)?;
        let got = self.read(s)?;
        if norm(&got) != norm(value) {
            return Err(HostError::Verify {
                what: s.label(),
                wanted: value.into(),
                got,
            });
        }
        Ok(())
    }

    /// Checks an action against the host: refuses unsafe values, and says
    /// why an action cannot apply here (Ok(Some(reason)) means skip it).
    pub fn check(&mut self, a: &Action, snap: &Snapshot) -> Result<Option<String>, HostError> {
        check_action(a, snap, &self.fs, self.in_init_netns)
    }

    /// Builds the plan: checks each action, reads its current value, orders
    /// the steps (IPv6 sizes before IPv4 ones), drops duplicates.
    pub fn plan(
        &mut self,
        source: &str,
        actions: Vec<Action>,
        snap: &Snapshot,
    ) -> Result<Plan, HostError> {
        let mut steps: Vec<Step> = Vec::new();
        let mut skipped = Vec::new();
        let mut actions = actions;
        actions.sort_by_key(|a| a.setting.rank());
        // Checks see the host as the earlier steps leave it (a vxlan's MTU
        // may rise with its underlay's in the same plan).
        let mut snap = snap.clone();
        let snap = &mut snap;
        for a in actions {
            if let Some(prev) = steps.iter().position(|s| s.action.setting == a.setting) {
                steps.remove(prev);
            }
            if let Some(why) = self.check(&a, snap)? {
                skipped.push((a, why));
                continue;
            }
            let current = self
                .read(&a.setting)
                .unwrap_or_else(|e| format!("unknown ({e})"));
            if current == "partial" {
                return Err(HostError::Refused(format!(
                    "{}: its table already has a route via the device or its rule exists alone; choose another table or remove them",
                    a.setting.label()
                )));
            }
            let no_op = norm(&current) == norm(&a.value);
            if let (Setting::Mtu { dev }, Ok(v)) = (&a.setting, a.value.parse::<u32>())
                && let Some(l) = snap.links.iter_mut().find(|l| &l.name == dev)
            {
                l.mtu = v;
            }
            let host_wide =
                matches!(&a.setting, Setting::Sysctl { key } if sysctl_is_host_wide(key));
            steps.push(Step {
                command: a.command(),
                current,
                no_op,
                host_wide,
                action: a,
                carrier: None,
                unverified: None,
            });
        }
        Ok(Plan {
            schema_version: TUNE_SCHEMA,
            source: source.into(),
            steps,
            skipped,
        })
    }
}

/// The safety rules of one action against a snapshot (pure but for the
/// sysctl file's mode).
pub fn check_action(
    a: &Action,
    snap: &Snapshot,
    fs: &Fs,
    in_init_netns: bool,
) -> Result<Option<String>, HostError> {
    let cx = knobs::Cx {
        snap,
        fs,
        in_init_netns,
    };
    a.setting.knob().check(&a.value, &cx)
}

/// How long a tune command waits for another one that holds the state
/// directory's lock, unless told otherwise.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Largest journal read back (a journal of every knob is a few hundred KiB).
const MAX_JOURNAL_BYTES: u64 = 16 << 20;

/// Where journals live: `dir/journal.json`, with `dir/lock` serialising
/// every command that reads and then writes it.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
    lock_wait: Duration,
}

/// The state directory's exclusive lock, released on drop (and by the
/// kernel when the holder dies, however it dies).
#[derive(Debug)]
pub struct StateLock {
    _file: std::fs::File,
}

/// The effective uid of this process, from /proc/self/status.
fn euid() -> Option<u32> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

static UNIQUE: AtomicU32 = AtomicU32::new(0);

/// A name part no other writer uses: pid, a per-process counter, nanoseconds.
fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

impl StateDir {
    /// A state directory (created on first write, mode 0700).
    pub fn new(dir: impl Into<PathBuf>) -> StateDir {
        StateDir {
            dir: dir.into(),
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

    /// The same directory, waiting at most `wait` for another command's lock.
    pub fn with_lock_wait(mut self, wait: Duration) -> StateDir {
        self.lock_wait = wait;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.json")
    }

    /// Refuses a directory another user could write to: anyone who can
    /// plant a journal there chooses what a rollback writes into the kernel.
    fn check_safe(&self) -> Result<(), HostError> {
        use std::os::unix::fs::MetadataExt;
        let shown = self.dir.display();
        let me = euid();
        let link =
            std::fs::symlink_metadata(&self.dir).map_err(|e| HostError::file(&self.dir, e))?;
        if link.file_type().is_symlink() && Some(link.uid()) != me && link.uid() != 0 {
            return Err(HostError::State(format!(
                "state directory {shown} is a symbolic link owned by uid {}: refused (use a directory of your own)",
                link.uid()
            )));
        }
        let m = std::fs::metadata(&self.dir).map_err(|e| HostError::file(&self.dir, e))?;
        if !m.is_dir() {
            return Err(HostError::State(format!("{shown} is not a directory")));
        }
        if Some(m.uid()) != me && m.uid() != 0 {
            return Err(HostError::State(format!(
                "state directory {shown} belongs to uid {}, not to this user: refused (a journal there decides what rollback writes)",
                m.uid()
            )));
        }
        if m.mode() & 0o022 != 0 {
            return Err(HostError::State(format!(
                "state directory {shown} is writable by other users (mode {:o}): refused, since a journal planted there decides what rollback writes; run `chmod go-w {shown}`",
                m.mode() & 0o7777
            )));
        }
        Ok(())
    }

    /// Creates the directory (0700) when missing and checks who can write it.
    fn ensure(&self) -> Result<(), HostError> {
        use std::os::unix::fs::DirBuilderExt;
        if !self.dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|e| HostError::file(&self.dir, e))?;
        }
        self.check_safe()
    }

    /// Takes the directory's exclusive lock, waiting up to the lock wait
    /// for another command; then writes this process's pid in the lock file.
    pub fn lock(&self) -> Result<StateLock, HostError> {
        use std::io::{Read, Seek, Write};
        use std::os::unix::fs::OpenOptionsExt;
        self.ensure()?;
        let p = self.dir.join("lock");
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
            .map_err(|e| HostError::file(&p, e))?;
        let start = Instant::now();
        loop {
            match f.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if start.elapsed() >= self.lock_wait {
                        let mut text = String::new();
                        let _ = f.read_to_string(&mut text);
                        return Err(HostError::Busy {
                            dir: self.dir.display().to_string(),
                            holder: text.trim().parse().ok(),
                            waited_s: start.elapsed().as_secs_f64(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(HostError::file(&p, e)),
            }
        }
        let _ = f
            .set_len(0)
            .and_then(|_| f.rewind())
            .and_then(|_| writeln!(f, "{}", std::process::id()));
        Ok(StateLock { _file: f })
    }

    /// The journal, if any. A symbolic link or an oversized file is refused.
    pub fn load(&self) -> Result<Option<Journal>, HostError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let p = self.journal_path();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p);
        let f = match f {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(HostError::State(format!(
                    "{} is a symbolic link: refused (wirespeed writes its journal as a plain file; move the link away)",
                    p.display()
                )));
            }
            Err(e) => return Err(HostError::file(&p, e)),
        };
        let mut bytes = Vec::new();
        f.take(MAX_JOURNAL_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| HostError::file(&p, e))?;
        if bytes.len() as u64 > MAX_JOURNAL_BYTES {
            return Err(HostError::State(format!(
                "{} is larger than {} MiB: not a wirespeed journal",
                p.display(),
                MAX_JOURNAL_BYTES >> 20
            )));
        }
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            HostError::State(format!(
                "{} is not a wirespeed journal ({e}): wirespeed changes nothing here until it is repaired or moved away (`mv {0} {0}.bad`; the values it held must then be restored by hand)",
                p.display()
            ))
        })
    }

    /// Writes the journal atomically (a temporary file of its own, fsync,
    /// rename, fsync of the directory).
    pub fn save(&self, j: &Journal) -> Result<(), HostError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        self.ensure()?;
        let tmp = self
            .dir
            .join(format!("journal.json.tmp-{}", unique_suffix()));
        let data = serde_json::to_vec_pretty(j).map_err(|e| HostError::State(e.to_string()))?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&data).and_then(|_| f.sync_all()));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(HostError::file(&tmp, e));
        }
        if let Err(e) = std::fs::rename(&tmp, self.journal_path()) {
            let _ = std::fs::remove_file(&tmp);
            return Err(HostError::file(self.journal_path(), e));
        }
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Removes the journal (after a rollback), keeping a copy beside it.
    pub fn retire(&self) -> Result<(), HostError> {
        self.retire_as("rolled-back")
    }

    /// Moves the journal aside as `PREFIX-TIME-UNIQUE.json`.
    fn retire_as(&self, prefix: &str) -> Result<(), HostError> {
        let p = self.journal_path();
        if p.exists() {
            let done = self.dir.join(format!(
                "{prefix}-{}-{}.json",
                now_unix() as u64,
                unique_suffix()
            ));
            std::fs::rename(&p, &done).map_err(|e| HostError::file(&p, e))?;
        }
        Ok(())
    }
}

/// This boot's id (/proc/sys/kernel/random/boot_id), which changes at every boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl Journal {
    /// An empty journal of this boot.
    fn new() -> Journal {
        Journal {
            schema_version: TUNE_SCHEMA,
            created_unix: now_unix(),
            deadline_unix: None,
            boot_id: boot_id(),
            watchdog_pid: None,
            timer_unit: None,
            entries: Vec::new(),
        }
    }

    /// Seconds since the confirmation deadline passed, when it has and the
    /// journal is still unconfirmed.
    pub fn overdue_s(&self) -> Option<f64> {
        let now = now_unix();
        self.deadline_unix.filter(|d| now >= *d).map(|d| now - d)
    }

    /// True when the journal was written in an earlier boot: the kernel has
    /// reset every setting it lists since.
    pub fn from_earlier_boot(&self) -> bool {
        match (&self.boot_id, boot_id()) {
            (Some(then), Some(now)) => *then != now,
            _ => false,
        }
    }

    /// Whether the watchdog recorded in the journal still runs (None when
    /// none is recorded).
    pub fn watchdog_alive(&self) -> Option<bool> {
        let pid = self.watchdog_pid?;
        if self.from_earlier_boot() {
            return Some(false);
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The third field of stat; a zombie has exited.
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        Some(args.contains(&&b"watchdog"[..]) && args.contains(&&b"tune"[..]) && !zombie)
    }
}
/// What apply did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Settings changed now.
    pub changed: Vec<String>,
    /// Settings already at the wanted value.
    pub unchanged: Vec<String>,
    /// Values the kernel changed as a side effect of a step, as
    /// "label: old -> new" (journaled like the steps).
    #[serde(default)]
    pub side_effects: Vec<String>,
}

/// Applies a plan: journals the old value of every setting a step sets or
/// may change as a side effect, then sets and verifies each step, and on
/// any failure restores everything this call changed and returns the
/// error. `deadline` arms the automatic rollback. Holds the state
/// directory's lock throughout, so concurrent applies queue.
pub fn apply(
    host: &mut Host,
    state: &StateDir,
    plan: &Plan,
    deadline: Option<Duration>,
) -> Result<Applied, HostError> {
    let lock = state.lock()?;
    apply_locked(host, state, &lock, plan, deadline)
}

/// [`apply`] for a caller that holds the state directory's lock already
/// (to start and record the watchdog under the same lock).
pub fn apply_locked(
    host: &mut Host,
    state: &StateDir,
    _lock: &StateLock,
    plan: &Plan,
    deadline: Option<Duration>,
) -> Result<Applied, HostError> {
    let before = state.load()?;
    if let Some(j) = &before {
        if j.from_earlier_boot() {
            return Err(HostError::Refused(format!(
                "the journal in {} is from an earlier boot: `wirespeed tune rollback` retires it (the kernel reset its settings at boot)",
                state.dir().display()
            )));
        }
        if j.deadline_unix.is_some() {
            return Err(HostError::Refused(
                "an earlier apply is waiting for `wirespeed tune confirm` (or its rollback); confirm or roll back first".into(),
            ));
        }
    }
    let mut journal = before.clone().unwrap_or_else(Journal::new);
    let known = journal.entries.len();
    let todo: Vec<&Step> = plan.steps.iter().filter(|s| !s.no_op).collect();
    let unchanged = plan
        .steps
        .iter()
        .filter(|s| s.no_op)
        .map(|s| s.action.setting.label())
        .collect();
    if todo.is_empty() {
        return Ok(Applied {
            changed: vec![],
            unchanged,
            side_effects: vec![],
        });
    }
    // Every value this call may change, read now (not from the plan) and
    // journaled before any change: each step's side effects first, so that
    // a rollback (newest first) restores the cause before its effects.
    let mut fresh: Vec<(Setting, String)> = Vec::new();
    for s in &todo {
        let setting = &s.action.setting;
        for side in host.side_effects(setting) {
            if side == *setting || fresh.iter().any(|(x, _)| *x == side) {
                continue;
            }
            // A side effect this kernel or device does not have.
            let Ok(old) = host.read(&side) else { continue };
            if !journal.entries.iter().any(|e| e.setting == side) {
                journal.entries.push(Entry {
                    setting: side.clone(),
                    old: old.clone(),
                    new: old.clone(),
                    side_effect_of: Some(setting.label()),
                });
            }
            fresh.push((side, old));
        }
        let old = host.read(setting)?;
        match journal.entries.iter_mut().find(|e| e.setting == *setting) {
            Some(e) => {
                e.new = s.action.value.clone();
                e.side_effect_of = None;
            }
            None => journal.entries.push(Entry {
                setting: setting.clone(),
                old: old.clone(),
                new: s.action.value.clone(),
                side_effect_of: None,
            }),
        }
        if !fresh.iter().any(|(x, _)| x == setting) {
            fresh.push((setting.clone(), old));
        }
    }
    journal.deadline_unix = deadline.map(|d| now_unix() + d.as_secs_f64());
    journal.watchdog_pid = None;
    journal.timer_unit = None;
    state.save(&journal)?;
    for s in &todo {
        if let Err(e) = host.set(&s.action.setting, &s.action.value) {
            let restore = restore_all(host, &fresh);
            match &before {
                Some(j) => state.save(j)?,
                None => state.retire()?,
            }
            let tail = match restore {
                Ok(_) => "every value changed before it was restored".to_string(),
                Err(r) => format!("and restoring failed too: {r}"),
            };
            return Err(HostError::State(format!("{e}; {tail}")));
        }
    }
    // What the kernel changed beside the steps: recorded for status.
    let mut side_effects = Vec::new();
    for e in journal
        .entries
        .iter_mut()
        .filter(|e| e.side_effect_of.is_some())
    {
        if let Ok(now) = host.read(&e.setting) {
            if norm(&now) != norm(&e.new) {
                side_effects.push(format!("{}: {} -> {now}", e.setting.label(), e.new));
            }
            e.new = now;
        }
    }
    // Side effects journaled now that did not happen are not changes.
    let mut i = 0;
    journal.entries.retain(|e| {
        i += 1;
        i <= known || e.side_effect_of.is_none() || norm(&e.new) != norm(&e.old)
    });
    state.save(&journal)?;
    Ok(Applied {
        changed: todo.iter().map(|s| s.action.setting.label()).collect(),
        unchanged,
        side_effects,
    })
}

/// Restores (setting, old value) pairs, newest first, then once more
/// whatever still differs (restoring an IPv6 GSO/GRO size <= 65536
/// overwrites the IPv4 one, so the IPv4 sizes come back last). A setting
/// whose device or /proc/sys file is gone is skipped and returned as
/// (label, reason).
fn restore_all(
    host: &mut Host,
    pairs: &[(Setting, String)],
) -> Result<Vec<(String, String)>, HostError> {
    let mut gone: Vec<(Setting, String)> = Vec::new();
    let mut last_err = None;
    for _pass in 0..2 {
        last_err = None;
        for (s, old) in pairs.iter().rev() {
            if gone.iter().any(|(g, _)| g == s) {
                continue;
            }
            let r = match host.read(s) {
                Ok(now) if norm(&now) == norm(old) => continue,
                Err(e) if e.is_gone() => Err(e),
                _ => host.set(s, old),
            };
            match r {
                Ok(()) => {}
                Err(e) if e.is_gone() => {
                    host.clear_orphans(s, old);
                    gone.push((s.clone(), e.to_string()));
                }
                Err(e) => last_err = Some(e),
            }
        }
        if last_err.is_none() {
            break;
        }
    }
    match last_err {
        Some(e) => Err(e),
        None => Ok(gone.into_iter().map(|(s, why)| (s.label(), why)).collect()),
    }
}

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolledBack {
    /// Settings restored (or found at their old value already).
    pub restored: Vec<String>,
    /// Settings skipped because their device or sysctl no longer exists,
    /// with the reason.
    pub skipped: Vec<(String, String)>,
    /// The journal came from an earlier boot: retired without touching
    /// the host (the kernel reset its settings at boot).
    #[serde(default)]
    pub stale_boot: bool,
}

/// Restores every journaled value and retires the journal, for a caller
/// that holds the state directory's lock.
pub fn rollback_locked(
    host: &mut Host,
    state: &StateDir,
    _lock: &StateLock,
) -> Result<RolledBack, HostError> {
    let Some(j) = state.load()? else {
        return Ok(RolledBack::default());
    };
    let pairs: Vec<(Setting, String)> = j
        .entries
        .iter()
        .map(|e| (e.setting.clone(), e.old.clone()))
        .collect();
    let skipped = restore_all(host, &pairs)?;
    state.retire()?;
    Ok(RolledBack {
        restored: pairs
            .iter()
            .map(|(s, _)| s.label())
            .filter(|l| !skipped.iter().any(|(g, _)| g == l))
            .collect(),
        skipped,
        stale_boot: false,
    })
}

/// Restores every journaled value and retires the journal. A journaled
/// device deleted since is skipped (and reported), not an error; a journal
/// from an earlier boot is retired without touching the host.
pub fn rollback(host: &mut Host, state: &StateDir) -> Result<RolledBack, HostError> {
    let lock = state.lock()?;
    if state.load()?.is_some_and(|j| j.from_earlier_boot()) {
        state.retire_as("stale-boot")?;
        return Ok(RolledBack {
            stale_boot: true,
            ..RolledBack::default()
        });
    }
    rollback_locked(host, state, &lock)
}

/// Like [`rollback`], but only when the journal is still unconfirmed and
/// its deadline has passed (what a second, independent timer runs).
pub fn rollback_if_overdue(
    host: &mut Host,
    state: &StateDir,
) -> Result<Option<RolledBack>, HostError> {
    let lock = state.lock()?;
    match state.load()? {
        Some(j) if j.overdue_s().is_some() && !j.from_earlier_boot() => {
            rollback_locked(host, state, &lock).map(Some)
        }
        _ => Ok(None),
    }
}

/// Cancels the automatic rollback; the journal stays for a later rollback.
/// Refused once the deadline has passed: by then the changes are due to be
/// rolled back (or were). Returns the journal as it was (None when there
/// is none).
pub fn confirm(state: &StateDir) -> Result<Option<Journal>, HostError> {
    let _lock = state.lock()?;
    let Some(mut j) = state.load()? else {
        return Ok(None);
    };
    if let Some(late) = j.overdue_s() {
        return Err(HostError::Refused(format!(
            "too late to confirm: the deadline passed {late:.0} s ago, so these changes are due to be rolled back; run `wirespeed tune rollback`, then apply again if you want them"
        )));
    }
    let was = j.clone();
    j.deadline_unix = None;
    j.watchdog_pid = None;
    j.timer_unit = None;
    state.save(&j)?;
    Ok(Some(was))
}

/// Records in the journal what will roll it back at the deadline: the
/// watchdog's pid and, when one was armed, a systemd timer unit (under
/// the lock the apply held).
pub fn record_guards(
    state: &StateDir,
    _lock: &StateLock,
    watchdog_pid: Option<u32>,
    timer_unit: Option<String>,
) -> Result<(), HostError> {
    let Some(mut j) = state.load()? else {
        return Ok(());
    };
    if j.deadline_unix.is_none() {
        return Ok(());
    }
    j.watchdog_pid = watchdog_pid;
    j.timer_unit = timer_unit;
    state.save(&j)
}

/// What [`recover`] found and did.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovered {
    /// Nothing to do: no journal, or one that is confirmed or not yet due.
    Nothing,
    /// The journal was unconfirmed past its deadline: rolled back now.
    RolledBack {
        /// Seconds past the deadline.
        overdue_s: f64,
        /// The watchdog that should have done it, if one was recorded.
        watchdog_pid: Option<u32>,
        /// What was restored.
        result: RolledBack,
    },
    /// The journal came from an earlier boot: retired, host untouched.
    StaleBoot {
        /// Its boot id.
        boot_id: String,
    },
}

/// Settles a journal the next command must not build on: rolls back an
/// unconfirmed journal whose deadline has passed (its watchdog died, or
/// the host rebooted... ) and retires one from an earlier boot. Cheap
/// when there is nothing to do (no lock, nothing created).
pub fn recover(host: &mut Host, state: &StateDir) -> Result<Recovered, HostError> {
    let needs = |j: &Journal| j.from_earlier_boot() || j.overdue_s().is_some();
    if !state.load()?.is_some_and(|j| needs(&j)) {
        return Ok(Recovered::Nothing);
    }
    let lock = state.lock()?;
    let Some(j) = state.load()? else {
        return Ok(Recovered::Nothing);
    };
    if j.from_earlier_boot() {
        state.retire_as("stale-boot")?;
        return Ok(Recovered::StaleBoot {
            boot_id: j.boot_id.unwrap_or_default(),
        });
    }
    let Some(overdue_s) = j.overdue_s() else {
        return Ok(Recovered::Nothing);
    };
    let result = rollback_locked(host, state, &lock)?;
    Ok(Recovered::RolledBack {
        overdue_s,
        watchdog_pid: j.watchdog_pid,
        result,
    })
}

/// What the watchdog did.
#[derive(Debug, Clone, PartialEq)]
pub enum Watched {
    /// Confirmed, or rolled back by someone else: nothing to do.
    Nothing,
    /// The deadline passed unconfirmed: rolled back.
    RolledBack(RolledBack),
}

/// The watchdog's loop: waits until the deadline (checking the journal
/// every 100 ms), then rolls back unless confirmed.
pub fn watch(host: &mut Host, state: &StateDir) -> Result<Watched, HostError> {
    loop {
        let Some(j) = state.load()? else {
            return Ok(Watched::Nothing);
        };
        let Some(deadline) = j.deadline_unix else {
            return Ok(Watched::Nothing);
        };
        if now_unix() >= deadline {
            return Ok(match rollback_if_overdue(host, state)? {
                Some(r) => Watched::RolledBack(r),
                None => Watched::Nothing,
            });
        }
        // try_: a hand-edited journal's absurd deadline must not panic.
        let left = Duration::try_from_secs_f64(deadline - now_unix()).unwrap_or_default();
        std::thread::sleep(left.clamp(Duration::from_millis(1), Duration::from_millis(100)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsroot::sysctl_path;

    #[test]
    fn a_plan_and_a_journal_written_before_the_settings_were_one_table_still_read() {
        // Recorded with the code of commit d4efe41 (one match per method).
        let plan: Plan =
            serde_json::from_str(include_str!("../tests/fixtures/plan-v1.json")).unwrap();
        assert_eq!(plan.steps.len(), 11, "one step per kind of setting");
        for s in &plan.steps {
            assert_eq!(s.action.command(), s.command, "{:?}", s.action.setting);
        }
        let j: Journal =
            serde_json::from_str(include_str!("../tests/fixtures/journal-v1.json")).unwrap();
        let labels: Vec<String> = j.entries.iter().map(|e| e.setting.label()).collect();
        assert_eq!(labels[1], "mtu of j0");
        assert_eq!(labels[6], "rx-gro of j0");
        assert_eq!(
            labels[10],
            "source routing of 10.9.9.1/24 via j0 (table 190)"
        );
        let steps: Vec<Setting> = plan
            .steps
            .iter()
            .map(|s| s.action.setting.clone())
            .collect();
        let entries: Vec<Setting> = j.entries.iter().map(|e| e.setting.clone()).collect();
        assert_eq!(steps, entries);
    }

    #[test]
    fn commands_read_like_what_people_type() {
        let a = Action::sysctl("net.ipv4.tcp_rmem", "4096 131072 16777216");
        assert_eq!(
            a.command(),
            "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 16777216\""
        );
        let m = Action {
            setting: Setting::Mtu { dev: "eth1".into() },
            value: "9000".into(),
        };
        assert_eq!(m.command(), "ip link set dev eth1 mtu 9000");
        let g = Action {
            setting: Setting::GsoIpv4MaxSize { dev: "eth1".into() },
            value: "185000".into(),
        };
        assert_eq!(g.command(), "ip link set dev eth1 gso_ipv4_max_size 185000");
        let s = Action {
            setting: Setting::SourceRoute {
                dev: "eth1".into(),
                addr: "10.0.0.3/24".into(),
                table: 101,
                priority: 1001,
            },
            value: "present".into(),
        };
        assert_eq!(
            s.command(),
            "ip rule add from 10.0.0.3/32 table 101 priority 1001 && ip route add 10.0.0.0/24 dev eth1 src 10.0.0.3 table 101"
        );
    }

    #[test]
    fn ipv6_sizes_rank_before_ipv4_ones() {
        let s = |setting| Action {
            setting,
            value: "1".into(),
        };
        let mut v = [
            s(Setting::GsoIpv4MaxSize { dev: "a".into() }),
            s(Setting::GsoMaxSize { dev: "a".into() }),
            s(Setting::Mtu { dev: "a".into() }),
        ];
        v.sort_by_key(|a| a.setting.rank());
        assert!(matches!(v[0].setting, Setting::Mtu { .. }));
        assert!(matches!(v[1].setting, Setting::GsoMaxSize { .. }));
    }

    fn temp_state(tag: &str) -> (PathBuf, StateDir) {
        let dir = std::env::temp_dir().join(format!("ws-journal-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (dir.clone(), StateDir::new(&dir))
    }

    fn journal(deadline: Option<f64>) -> Journal {
        Journal {
            created_unix: 1.0,
            deadline_unix: deadline,
            entries: vec![Entry {
                setting: Setting::Sysctl { key: "k.k".into() },
                old: "1".into(),
                new: "0".into(),
                side_effect_of: None,
            }],
            ..Journal::new()
        }
    }

    #[test]
    fn journals_round_trip_and_confirm_clears_the_deadline() {
        let (dir, st) = temp_state("rt");
        assert!(st.load().unwrap().is_none());
        let j = journal(Some((now_unix() + 3600.0).floor()));
        st.save(&j).unwrap();
        assert_eq!(st.load().unwrap(), Some(j));
        assert!(confirm(&st).unwrap().unwrap().deadline_unix.is_some());
        assert_eq!(st.load().unwrap().unwrap().deadline_unix, None);
        // No temporary file is left beside the journal.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("tmp")), "{names:?}");
        std::fs::write(dir.join("journal.json"), b"{not json").unwrap();
        let e = st.load().unwrap_err().to_string();
        assert!(
            e.contains("not a wirespeed journal") && e.contains("mv "),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_late_confirm_is_refused_and_the_journal_is_overdue() {
        let (dir, st) = temp_state("late");
        st.save(&journal(Some(now_unix() - 5.0))).unwrap();
        let j = st.load().unwrap().unwrap();
        assert!(j.overdue_s().is_some_and(|s| s >= 5.0));
        let e = confirm(&st).unwrap_err().to_string();
        assert!(
            e.contains("too late to confirm") && e.contains("rollback"),
            "{e}"
        );
        assert!(st.load().unwrap().unwrap().deadline_unix.is_some());
        // A journal of another boot is stale; one of this boot is not.
        assert!(!j.from_earlier_boot());
        let old = Journal {
            boot_id: Some("00000000-0000-0000-0000-000000000000".into()),
            ..j
        };
        assert!(old.from_earlier_boot() == boot_id().is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_lock_is_exclusive_and_a_waiter_names_the_holder() {
        let (dir, st) = temp_state("lock");
        let held = st.lock().unwrap();
        let short = st.clone().with_lock_wait(Duration::from_millis(200));
        let t = Instant::now();
        let e = short.lock().unwrap_err().to_string();
        assert!(t.elapsed() >= Duration::from_millis(200));
        assert!(
            e.contains("another wirespeed tune holds the lock")
                && e.contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
        drop(held);
        short.lock().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unsafe_state_dirs_and_symlinked_journals_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, st) = temp_state("unsafe");
        st.save(&journal(None)).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "created 0700");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = st.lock().unwrap_err().to_string();
        assert!(e.contains("writable by other users"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let target = dir.join("elsewhere.json");
        std::fs::rename(dir.join("journal.json"), &target).unwrap();
        std::os::unix::fs::symlink(&target, dir.join("journal.json")).unwrap();
        let e = st.load().unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_net_sysctls_are_per_namespace() {
        for k in [
            "net.ipv4.tcp_rmem",
            "net.ipv4.conf.eth0.rp_filter",
            "net/ipv4/tcp_wmem",
        ] {
            assert!(!sysctl_is_host_wide(k), "{k}");
            assert!(netns_sysctl_refusal(k).is_none(), "{k}");
        }
        for k in [
            "kernel.hostname",
            "vm.swappiness",
            "fs.file-max",
            "kernel/hostname",
            "net.core.rmem_max",
            "net.core.netdev_max_backlog",
            "net.ipv4.tcp_mem",
        ] {
            assert!(sysctl_is_host_wide(k), "{k}");
            let why = netns_sysctl_refusal(k).unwrap();
            assert!(why.contains(k) && why.contains("host"), "{why}");
        }
        assert!(valid_sysctl_name("net.ipv4.conf.eth0/100.rp_filter"));
        for bad in ["", "net", "net..x", ".net.x", "net.x y", "net./x", "a\nb.c"] {
            assert!(!valid_sysctl_name(bad), "{bad:?}");
        }
        assert_eq!(
            sysctl_path("net.ipv4.conf.eth0/100.rp_filter"),
            "proc/sys/net/ipv4/conf/eth0.100/rp_filter"
        );
        assert_eq!(
            sysctl_path("net/ipv4/tcp_rmem"),
            "proc/sys/net/ipv4/tcp_rmem"
        );
    }
}
