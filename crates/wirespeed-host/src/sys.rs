//! The host crate's only unsafe code: the two socket options that
//! path-MTU probing needs and no socket crate wraps (IP_MTU_DISCOVER to
//! send with DF and learn from ICMP, IP_MTU to read the kernel's path-MTU
//! cache on a connected socket), for IPv4 and IPv6; the namespace calls
//! [`crate::netns`] makes (mount, umount2, unshare, setns); and the
//! signal handling of a tune session (holding signals during an apply,
//! detaching the watchdog).

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

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

/// Starts a new session and ignores SIGHUP, so the watchdog outlives the
/// SSH session or terminal that ran `tune apply`; unblocks the signals
/// [`hold_signals`] blocked in the apply that started it.
pub(crate) fn detach() {
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

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT on this thread until
/// dropped; a signal that came meanwhile then acts (by default: ends the
/// process).
pub(crate) struct SignalHold {
    old: libc::sigset_t,
}

/// Holds the interrupting signals back for a section that must not be
/// cut in half (an apply between its journal and its watchdog).
pub(crate) fn hold_signals() -> SignalHold {
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
