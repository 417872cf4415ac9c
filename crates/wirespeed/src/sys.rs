//! The binary's only unsafe code: detaching the rollback watchdog from
//! the terminal session, catching SIGINT/SIGTERM, and tying children's
//! lives to this process.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Makes the child that `cmd` spawns get SIGKILL when this process dies,
/// however it dies (PR_SET_PDEATHSIG). The setting survives the execs of
/// `ip netns exec` into the program it runs (not set-uid, no file
/// capabilities), so it reaches the server or client itself. It is tied
/// to the spawning THREAD: spawn from a thread that lives as long as the
/// child should (here always the main thread).
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (prctl, getppid), allocating
    // nothing but the error on failure.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before prctl: nothing would signal us.
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}
