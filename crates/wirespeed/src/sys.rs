//! The binary's only unsafe code: detaching the rollback watchdog from
//! the terminal session.

/// Starts a new session and ignores SIGHUP, so the watchdog outlives the
/// SSH session or terminal that ran `tune apply`.
pub fn detach() {
    // SAFETY: setsid and signal take no pointers; failure (already a
    // session leader) leaves the process as it was, which is harmless.
    unsafe {
        libc::setsid();
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
}
