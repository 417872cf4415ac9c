//! [`Host`]: reads and writes each setting on the running host (through
//! the knobs), checks actions against a snapshot and builds plans.

use super::knobs::{self, knob};
use super::{Action, Plan, Setting, Step, TUNE_SCHEMA, sysctl_is_host_wide};
use crate::HostError;
use crate::ethtool::Ethtool;
use crate::fsroot::Fs;
use crate::rtnl::Rtnl;
use crate::snapshot::Snapshot;

/// Reads and writes settings on the running host.
pub struct Host {
    pub(super) fs: Fs,
    pub(super) rt: Rtnl,
    pub(super) eth: Option<Ethtool>,
    pub(super) in_init_netns: bool,
}

pub(crate) fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn onoff(b: bool) -> String {
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

    pub(super) fn eth(&mut self) -> Result<&mut Ethtool, HostError> {
        self.eth.as_mut().ok_or_else(|| {
            HostError::Refused("the ethtool netlink family is not available on this kernel".into())
        })
    }

    pub(super) fn index(&mut self, dev: &str) -> Result<u32, HostError> {
        Ok(self.rt.link(dev)?.header.index)
    }

    /// The current value of a setting, in the same form as [`Action::value`].
    pub fn read(&mut self, s: &Setting) -> Result<String, HostError> {
        knob(s).read(self)
    }

    /// Writes a setting (no verification; see [`Host::set`]).
    pub(super) fn write(&mut self, s: &Setting, value: &str) -> Result<(), HostError> {
        knob(s).write(self, value)
    }

    /// Settings the kernel may change when `s` is set, beside `s` itself:
    /// the IPv4 GSO/GRO size with the IPv6 one (which overwrites it at or
    /// below 64 KiB); with a device's MTU its IPv6 MTU, its upper devices'
    /// MTU (vlan, macvlan follow a lower MTU down) and its master's (a
    /// bridge follows its ports); with the global forwarding flag every
    /// device's flag, `all.accept_redirects` and every device's LRO
    /// (forwarding turns it off); with an ethtool feature every other
    /// changeable feature of its device (the kernel recomputes them
    /// together). Those a host lacks fail to read and are left out by
    /// [`apply`](crate::tune::apply::apply), and those read back unchanged after it are dropped.
    pub fn side_effects(&mut self, s: &Setting) -> Vec<Setting> {
        knob(s).side_effects(self)
    }

    /// After a journaled device has gone: removes what it leaves behind
    /// that still matters (the policy rule of its source routing; the
    /// route went with the device).
    pub(super) fn clear_orphans(&mut self, s: &Setting, old: &str) {
        knob(s).clear_orphans(self, old)
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
    knob(&a.setting).check(&a.value, &cx)
}
