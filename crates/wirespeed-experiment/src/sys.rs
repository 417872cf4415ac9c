//! The crate's only unsafe code: catching SIGINT/SIGTERM so a run can
//! stop cleanly, and tying a spawned child's life to this process.

use std::process::Command;
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
