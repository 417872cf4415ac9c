//! The binary's only unsafe code: detaching the rollback watchdog from
//! the terminal session and holding signals back during an apply.

/// Starts a new session and ignores SIGHUP, so the watchdog outlives the
/// SSH session or terminal that ran `tune apply`; unblocks the signals
/// [`hold_signals`] blocked in the apply that started it.
pub fn detach() {
    // SAFETY: setsid and signal take no pointers; failure (already a
    // session leader) leaves the process as it was, which is harmless.
    // The sigset is a local, initialised by sigemptyset before use.
    unsafe {
        libc::setsid();
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

/// Signals held back while a [`SignalHold`] lives.
const HELD: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT until dropped; a signal
/// that came meanwhile then acts (by default: ends the process).
pub struct SignalHold {
    old: libc::sigset_t,
}

/// Holds the interrupting signals back for a section that must not be
/// cut in half (an apply between its journal and its watchdog).
pub fn hold_signals() -> SignalHold {
    // SAFETY: both sigsets are locals initialised by sigemptyset /
    // filled by pthread_sigmask before they are read.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in HELD {
            libc::sigaddset(&mut set, s);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        SignalHold { old }
    }
}

impl Drop for SignalHold {
    fn drop(&mut self) {
        // SAFETY: `old` is the mask pthread_sigmask returned.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}
