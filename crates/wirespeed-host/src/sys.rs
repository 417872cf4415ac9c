//! The host crate's only unsafe code: the two socket options that
//! path-MTU probing needs and no socket crate wraps (IP_MTU_DISCOVER to
//! send with DF and learn from ICMP, IP_MTU to read the kernel's path-MTU
//! cache on a connected socket), for IPv4 and IPv6; the namespace calls
//! [`crate::netns`] makes (mount, umount2, unshare, setns); and the
//! signal handling of a tune session (holding signals during an apply,
//! starting the watchdog in a session of its own, and the watchdog's
//! wait for a signal that tells it to stop).

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;
use std::process::Command;
use std::time::Duration;

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// mount(2) with no data.
pub(crate) fn mount(
    src: &CStr,
    target: &CStr,
    fstype: &CStr,
    flags: libc::c_ulong,
) -> io::Result<()> {
    // SAFETY: every pointer is a NUL-terminated string that outlives the
    // call; a null data pointer is allowed for every filesystem we mount.
    check(unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            std::ptr::null(),
        )
    })
}

/// umount2(2).
pub(crate) fn umount2(target: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: a NUL-terminated string that outlives the call.
    check(unsafe { libc::umount2(target.as_ptr(), flags) })
}

/// unshare(2) of the calling thread.
pub(crate) fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes no pointers; it changes only the calling
    // thread's namespaces (the callers run it on a thread of their own).
    check(unsafe { libc::unshare(flags) })
}

/// setns(2) of the calling thread into the namespace open as `fd`.
pub(crate) fn setns(fd: RawFd, nstype: libc::c_int) -> io::Result<()> {
    // SAFETY: `fd` is an open namespace file the caller holds for the
    // call; setns has no memory-safety preconditions.
    check(unsafe { libc::setns(fd, nstype) })
}

/// The interrupting signals: held back while a [`SignalHold`] lives, and
/// the ones that tell the watchdog to roll back at once and stop.
const HELD: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The set of [`HELD`].
fn held_set() -> libc::sigset_t {
    // SAFETY: the sigset is a local, initialised by sigemptyset before
    // sigaddset reads it; the signal numbers are valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in HELD {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Starts `cmd`'s process (the watchdog) as the leader of a session of
/// its own, so that no terminal's Ctrl-C or hangup reaches it (only a
/// signal sent to it), with the [`HELD`] signals blocked from its first
/// instruction: one sent before the watchdog waits for it stays pending
/// and is acted on (see [`detach`]), instead of ending the process
/// without a rollback.
pub(crate) fn new_session(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let set = held_set();
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe functions may be called: setsid and
    // sigprocmask are, and it reads only its own copy of `set`, made
    // before the fork. Failure of either leaves the child as Command
    // would have started it, which detach() then repairs or tolerates.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
}

/// The watchdog's start: a new session (when [`new_session`] did not make
/// one already), so it outlives the SSH session or terminal that ran
/// `tune apply`, and exactly the [`HELD`] signals blocked, whatever mask
/// it was started with: they then arrive only through [`wait_stop`],
/// between two looks at the journal, never in the middle of a rollback.
pub(crate) fn detach() {
    let set = held_set();
    // SAFETY: setsid takes no pointers; failure (already a session
    // leader) leaves the process as it was, which is harmless. `set` is
    // a live local sigset.
    unsafe {
        libc::setsid();
        libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// Waits up to `timeout` for one of the [`HELD`] signals (blocked by
/// [`detach`]) and takes it: its name (`SIGTERM`, ...), or None when
/// none came in time.
pub(crate) fn wait_stop(timeout: Duration) -> Option<&'static str> {
    let set = held_set();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // SAFETY: `set` and `ts` are live locals the kernel only reads; a
    // null siginfo pointer is allowed. An error (timeout, EINTR) is -1.
    let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    match sig {
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGINT => Some("SIGINT"),
        libc::SIGHUP => Some("SIGHUP"),
        libc::SIGQUIT => Some("SIGQUIT"),
        _ => None,
    }
}

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT on this thread until
/// dropped; a signal that came meanwhile then acts (by default: ends the
/// process).
pub(crate) struct SignalHold {
    old: libc::sigset_t,
}

/// Holds the interrupting signals back for a section that must not be
/// cut in half (an apply between its journal and its watchdog).
pub(crate) fn hold_signals() -> SignalHold {
    let set = held_set();
    // SAFETY: `set` is a live local; `old` is filled by pthread_sigmask
    // before it is read.
    unsafe {
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

/// Sets "do path-MTU discovery" (DF on every packet, no local
/// fragmentation, ICMP too-big answers update the kernel's cache and are
/// reported as EMSGSIZE on the socket).
pub(crate) fn set_pmtu_do(fd: RawFd, v6: bool) -> io::Result<()> {
    let (level, name, val) = if v6 {
        (
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )
    } else {
        (
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DO,
        )
    };
    // SAFETY: `val` is a live c_int for the duration of the call and the
    // length passed is its size; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&val as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The kernel's path MTU toward a connected socket's peer: the route's
/// MTU, lowered by what ICMP too-big answers taught it.
pub(crate) fn path_mtu(fd: RawFd, v6: bool) -> io::Result<u32> {
    let (level, name) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    let mut val: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `val` and `len` are live locals; the kernel writes at most
    // `len` bytes into `val` and the new length into `len`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut val as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        Ok(val.max(0) as u32)
    } else {
        Err(io::Error::last_os_error())
    }
}
