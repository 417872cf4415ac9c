//! Settings changed inside named network namespaces for a while (an
//! experiment's `lab_set`): each through [`Host::set`] (written, read
//! back), its old value and those of the values the kernel changes with
//! it recorded before the write, and everything restored newest first by
//! [`NsChanges::undo`] or on drop. The record lives in memory: the
//! namespaces are a lab's, and a lab that outlives a crash is removed
//! whole (`lab down`), which takes these changes with it.

use super::apply::restore_all;
use super::{Host, Setting};
use crate::HostError;
use crate::fsroot::Fs;
use crate::netns;

/// Changes made in namespaces, undone newest first on [`NsChanges::undo`]
/// or drop.
#[derive(Debug, Default)]
pub struct NsChanges {
    /// (namespace, setting, old value), in the order they were recorded.
    entries: Vec<(String, Setting, String)>,
}

impl NsChanges {
    /// Nothing changed yet.
    pub fn new() -> NsChanges {
        NsChanges::default()
    }

    /// Sets `s` to `value` in namespace `ns` and reads it back. The old
    /// values (the setting's and its side effects') are recorded first,
    /// so even a write that fails half-way is undone.
    pub fn set(&mut self, ns: &str, s: &Setting, value: &str) -> Result<(), HostError> {
        let (olds, done) = netns::run_in(ns, || {
            let mut h = Host::open(Fs::at("/"))?;
            let mut olds: Vec<(Setting, String)> = h
                .side_effects(s)
                .into_iter()
                .filter_map(|x| h.read(&x).ok().map(|v| (x, v)))
                .collect();
            olds.push((s.clone(), h.read(s)?));
            let done = h.set(s, value);
            Ok((olds, done))
        })?;
        self.entries
            .extend(olds.into_iter().map(|(x, v)| (ns.to_string(), x, v)));
        done
    }

    /// Restores every recorded value, newest first, namespace by
    /// namespace; a namespace or device gone since is skipped. Returns the
    /// first error after trying everything.
    pub fn undo(&mut self) -> Result<(), HostError> {
        let mut first = None;
        while let Some((ns, _, _)) = self.entries.last() {
            let ns = ns.clone();
            // The newest run of entries of one namespace.
            let from = self
                .entries
                .iter()
                .rposition(|(n, _, _)| *n != ns)
                .map_or(0, |i| i + 1);
            let pairs: Vec<(Setting, String)> =
                self.entries.drain(from..).map(|(_, s, v)| (s, v)).collect();
            if !netns::exists(&ns) {
                continue;
            }
            let r = netns::run_in(&ns, || {
                let mut h = Host::open(Fs::at("/"))?;
                restore_all(&mut h, &pairs).map(|_| ())
            });
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for NsChanges {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}
