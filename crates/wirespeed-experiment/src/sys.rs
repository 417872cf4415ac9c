//! The crate's only unsafe code: catching SIGINT/SIGTERM so a run can
//! stop cleanly.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGINT/SIGTERM after [`catch_stop_signals`].
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM set a flag ([`stop_requested`]) instead of killing
/// the process, so it can finish cleanly.
pub fn catch_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; `signal` has no other preconditions.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// Whether SIGINT or SIGTERM asked to stop.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
