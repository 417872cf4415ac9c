//! Tests running at once: a test's admission under `--max-tests`, the
//! most tests each one saw sharing the machine, and the server's stop
//! (no test admitted after it; those running end at their next tick).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Tests running now, and the most each has seen at once.
#[derive(Debug, Default)]
pub(super) struct Registry {
    running: Mutex<HashMap<u64, u32>>,
    next: AtomicUsize,
    stopping: AtomicBool,
}

/// A test's place in the registry; leaving frees it.
pub(super) struct Admission<'a> {
    reg: &'a Registry,
    pub(super) id: u64,
}

impl Registry {
    /// The server stops: no test is admitted any more, and the running
    /// ones end at their next tick ([`Registry::stopping`]).
    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// Whether the server stops.
    pub(super) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Waits until no test runs (each has told its client how it ended)
    /// or `limit` passes; whether none runs.
    pub(super) fn drain(&self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        loop {
            let n = self.running.lock().unwrap_or_else(|p| p.into_inner()).len();
            if n == 0 {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub(super) fn admit(&self, max: u32) -> Option<Admission<'_>> {
        let mut r = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() as u32 >= max {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        r.insert(id, 0);
        let n = r.len() as u32;
        for peak in r.values_mut() {
            *peak = (*peak).max(n);
        }
        Some(Admission { reg: self, id })
    }
}

impl Admission<'_> {
    pub(super) fn peak(&self) -> u32 {
        let r = self.reg.running.lock().unwrap_or_else(|p| p.into_inner());
        r.get(&self.id).copied().unwrap_or(1).max(1)
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.reg
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}
