//! The host crate's only unsafe code: the two socket options that
//! path-MTU probing needs and no socket crate wraps (IP_MTU_DISCOVER to
//! send with DF and learn from ICMP, IP_MTU to read the kernel's path-MTU
//! cache on a connected socket), for IPv4 and IPv6.

use std::io;
use std::os::fd::RawFd;

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
