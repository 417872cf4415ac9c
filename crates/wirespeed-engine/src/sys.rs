//! The one module of this crate with `unsafe`: thin wrappers over the
//! socket and scheduler syscalls that no safe crate covers (epoll, TCP_INFO,
//! MSG_ZEROCOPY and its error queue, MSG_TRUNC receive, integer socket
//! options, CPU affinity). Each block states why it is sound.
//!
//! A function on a socket takes it as a [`BorrowedFd`], never a raw
//! number: a caller cannot hand it a closed or made-up descriptor without
//! `unsafe` of its own. (The io_uring plans of [`crate::uring`] name
//! sockets by number, as the ring does; they do not come here.)

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `SO_EE_ORIGIN_ZEROCOPY` from linux/errqueue.h (libc lacks it).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED`: the kernel copied instead of pinning pages.
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
/// `SO_ZEROCOPY` socket option (linux/socket.h).
const SO_ZEROCOPY: libc::c_int = 60;
/// `SO_MAX_PACING_RATE` socket option (asm-generic/socket.h).
const SO_MAX_PACING_RATE: libc::c_int = 47;

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Sets an integer socket option.
pub fn set_int_opt(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: i32,
) -> io::Result<()> {
    // SAFETY: the pointer and length describe a live i32 on our stack; the
    // kernel only reads it.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    cvt(ret).map(drop)
}

/// Lets `bind` to an address with port 0 defer the port choice to `connect`,
/// so that many flows from one address do not exhaust ephemeral ports.
pub fn set_bind_address_no_port(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_int_opt(fd, libc::SOL_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)
}

/// `IPPROTO_MPTCP` (linux/in.h): a TCP-like socket that runs MPTCP.
pub const IPPROTO_MPTCP: libc::c_int = 262;

/// Sets the TOS byte of a socket's packets: IP_TOS, and on an IPv6
/// socket IPV6_TCLASS too (a dual-stack socket sends both kinds).
pub fn set_tos(fd: BorrowedFd<'_>, ipv6: bool, tos: u8) -> io::Result<()> {
    let v = i32::from(tos);
    if ipv6 {
        set_int_opt(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, v)?;
        // IPv4-mapped peers of a dual-stack socket take IP_TOS; a
        // v6-only socket refuses it, which is fine.
        let _ = set_int_opt(fd, libc::SOL_IP, libc::IP_TOS, v);
        return Ok(());
    }
    set_int_opt(fd, libc::SOL_IP, libc::IP_TOS, v)
}

/// Sets the Don't Fragment bit on a UDP socket's datagrams (path MTU
/// discovery "do": too large a datagram fails with EMSGSIZE).
pub fn set_dont_fragment(fd: BorrowedFd<'_>, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        let _ = set_int_opt(
            fd,
            libc::SOL_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DO,
        );
        return set_int_opt(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        );
    }
    set_int_opt(
        fd,
        libc::SOL_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO,
    )
}

/// An anonymous in-memory file holding `data`: what sendfile(2) sends from.
pub fn memfd_with(data: &[u8]) -> io::Result<std::fs::File> {
    use std::io::Write;
    // SAFETY: the name is a NUL-terminated literal; the returned fd is
    // fresh and owned by the File from here on.
    let fd = cvt(unsafe { libc::memfd_create(c"wirespeed-sendfile".as_ptr(), libc::MFD_CLOEXEC) })?;
    // SAFETY: fd was just created and nobody else owns it.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    f.write_all(data)?;
    Ok(f)
}

/// sendfile(2): sends `len` bytes of `file` from offset 0 to socket `fd`.
pub fn sendfile(fd: BorrowedFd<'_>, file: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    let mut off: libc::off_t = 0;
    // SAFETY: both are open descriptors and `off` is a live local the
    // kernel updates.
    cvt_size(unsafe { libc::sendfile(fd.as_raw_fd(), file.as_raw_fd(), &mut off, len) })
}

/// Enables MSG_ZEROCOPY sends on the socket.
pub fn set_zerocopy(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_int_opt(fd, libc::SOL_SOCKET, SO_ZEROCOPY, 1)
}

/// Caps the socket's pacing rate, in bytes per second. Rates that do not
/// fit the option's historic 32 bits (above 34 Gbit/s) go as 64 bits,
/// which kernels since 4.20 take; an older kernel's refusal is an error,
/// not a silently lower rate.
pub fn set_max_pacing_rate(fd: BorrowedFd<'_>, bytes_per_sec: u64) -> io::Result<()> {
    if bytes_per_sec < u32::MAX as u64 {
        // The kernel reads the int as u32 (~0U means unlimited).
        return set_int_opt(
            fd,
            libc::SOL_SOCKET,
            SO_MAX_PACING_RATE,
            bytes_per_sec as u32 as i32,
        );
    }
    // SAFETY: the pointer and length describe a live u64 on our stack; the
    // kernel only reads it.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MAX_PACING_RATE,
            (&bytes_per_sec as *const u64).cast(),
            std::mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    cvt(ret).map(drop)
}

/// Accepts a connection on the listener `fd`, the new socket already
/// non-blocking and close-on-exec: one call where accept and fcntl make
/// three.
pub fn accept_nonblocking(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: null address pointers are allowed (the peer's address is
    // not wanted); a bad fd is an error.
    let s = cvt(unsafe {
        libc::accept4(
            fd.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            flags,
        )
    })?;
    // SAFETY: accept4 returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(s) })
}

/// Shuts the write side of the socket `fd` (the peer reads end of file).
pub fn shutdown_write(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: shutdown takes no pointers; a bad fd is an error, not UB.
    cvt(unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) }).map(drop)
}

/// Sends without blocking; with `zerocopy` the pages are pinned, not copied.
pub fn send(fd: BorrowedFd<'_>, buf: &[u8], zerocopy: bool) -> io::Result<usize> {
    send_flags(fd, buf, zerocopy, false)
}

/// Sends; with `wait` the call blocks (up to the socket's SO_SNDTIMEO) when
/// the socket is in blocking mode, otherwise it never blocks.
pub fn send_flags(fd: BorrowedFd<'_>, buf: &[u8], zerocopy: bool, wait: bool) -> io::Result<usize> {
    let mut flags = libc::MSG_NOSIGNAL;
    if !wait {
        flags |= libc::MSG_DONTWAIT;
    }
    if zerocopy {
        flags |= libc::MSG_ZEROCOPY;
    }
    // SAFETY: buf is a valid readable slice for its length.
    cvt_size(unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) })
}

/// Receives without blocking; with `discard` (MSG_TRUNC) TCP drops the
/// bytes in the kernel instead of copying them, and returns their count.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], discard: bool) -> io::Result<usize> {
    recv_flags(fd, buf, discard, false)
}

/// Receives; with `wait` the call blocks (up to the socket's SO_RCVTIMEO)
/// when the socket is in blocking mode, otherwise it never blocks.
pub fn recv_flags(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    discard: bool,
    wait: bool,
) -> io::Result<usize> {
    let mut flags = 0;
    if !wait {
        flags |= libc::MSG_DONTWAIT;
    }
    if discard {
        flags |= libc::MSG_TRUNC;
    }
    // SAFETY: buf is a valid writable slice for its length; with MSG_TRUNC
    // the kernel writes nothing but still bounds the count by len.
    cvt_size(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) })
}

/// Peeks without blocking whether a byte is queued: Ok(0) at the peer's
/// close, WouldBlock when nothing is.
pub fn peek(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut b = [0u8; 1];
    // SAFETY: b is a valid writable byte on our stack.
    cvt_size(unsafe {
        libc::recv(
            fd.as_raw_fd(),
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    })
}

/// Outcome of draining a socket's zerocopy completion notifications.
#[derive(Debug, Default, Clone, Copy)]
pub struct ZcDrain {
    /// Completion notifications read.
    pub completions: u64,
    /// Of those, ones where the kernel fell back to copying.
    pub copied: u64,
}

/// One entry of a socket's error queue, as plain data: its extended error
/// (IP_RECVERR / IPV6_RECVERR) and, for a transmit timestamp, the three
/// timespecs of its SCM_TIMESTAMPING (software, legacy, hardware).
#[derive(Clone, Copy)]
pub struct ErrEntry {
    /// The `sock_extended_err`, when the entry has one.
    pub ee: Option<libc::sock_extended_err>,
    /// The SCM_TIMESTAMPING timespecs, when the entry has them.
    pub stamps: Option<[libc::timespec; 3]>,
}

/// Reads every entry queued on the socket's error queue (MSG_ERRQUEUE,
/// without blocking) and hands each to `each`: the one error-queue loop of
/// the crate, for MSG_ZEROCOPY completions and for `--breakdown`'s
/// transmit timestamps. Entries carry no payload (zerocopy completions
/// have none; timestamps are asked for with OPT_TSONLY).
pub fn drain_errqueue(fd: BorrowedFd<'_>, mut each: impl FnMut(&ErrEntry)) -> io::Result<()> {
    loop {
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: msg points at our control buffer, sized above; no iovecs.
        let ret = unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if ret < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(());
            }
            return Err(e);
        }
        let mut entry = ErrEntry {
            ee: None,
            stamps: None,
        };
        // SAFETY: CMSG_* walk the control buffer the kernel just filled,
        // bounded by msg_controllen; the payloads are plain-data structs
        // read unaligned.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
                if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                    || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR)
                {
                    entry.ee = Some(std::ptr::read_unaligned(
                        libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err
                    ));
                } else if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPING {
                    entry.stamps = Some(std::ptr::read_unaligned(
                        libc::CMSG_DATA(cmsg) as *const [libc::timespec; 3]
                    ));
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        each(&entry);
    }
}

/// Reads every pending MSG_ZEROCOPY completion from the error queue.
pub fn drain_zerocopy(fd: BorrowedFd<'_>) -> io::Result<ZcDrain> {
    let mut out = ZcDrain::default();
    drain_errqueue(fd, |e| {
        let Some(ee) = e.ee else { return };
        if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY && ee.ee_errno == 0 {
            // ee_info..ee_data is an inclusive range of sends.
            let n = ee.ee_data.wrapping_sub(ee.ee_info) as u64 + 1;
            out.completions += n;
            if ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0 {
                out.copied += n;
            }
        }
    })?;
    Ok(out)
}

/// The kernel's `struct tcp_info` (linux/tcp.h) up to `tcpi_snd_wnd`; each
/// field is the `tcpi_` field of the same name, documented there.
#[allow(missing_docs)]
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct RawTcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub app_limited: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
}

/// Reads TCP_INFO; fields the kernel does not fill stay zero.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<RawTcpInfo> {
    let mut info = RawTcpInfo::default();
    let mut len = std::mem::size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: info is a repr(C) plain-data struct of `len` bytes; the kernel
    // writes at most len bytes and updates len.
    let ret = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    cvt(ret).map(|_| info)
}

/// An epoll instance (level-triggered), owning its descriptor.
pub struct Epoll {
    fd: OwnedFd,
}

/// Readable interest.
pub const EV_IN: u32 = libc::EPOLLIN as u32;
/// Writable interest.
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
/// Error condition (always reported).
pub const EV_ERR: u32 = libc::EPOLLERR as u32;
/// Hang-up (always reported).
pub const EV_HUP: u32 = libc::EPOLLHUP as u32;

impl Epoll {
    /// Creates an epoll instance with close-on-exec.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; the returned fd is owned by us from here.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(Epoll {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    fn ctl(&self, op: libc::c_int, fd: BorrowedFd<'_>, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev is a valid epoll_event on our stack.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) }).map(drop)
    }

    /// Registers `fd` for `events`, reported with `token`.
    pub fn add(&self, fd: BorrowedFd<'_>, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    /// Changes the interest of a registered `fd`.
    pub fn modify(&self, fd: BorrowedFd<'_>, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    /// Removes `fd` from the set.
    pub fn delete(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Busy polls this epoll instance for `usecs` with a NAPI budget of
    /// `budget` and SO_PREFER_BUSY_POLL's preference (EPIOCSPARAMS, Linux
    /// 6.9+). ENOTTY: the kernel has no such ioctl; EPERM: a budget past
    /// NAPI_POLL_WEIGHT without CAP_NET_ADMIN.
    pub fn set_busy_poll(&self, usecs: u32, budget: u16, prefer: bool) -> io::Result<()> {
        let p = EpollParams {
            busy_poll_usecs: usecs,
            busy_poll_budget: budget,
            prefer_busy_poll: u8::from(prefer),
            pad: 0,
        };
        // SAFETY: EPIOCSPARAMS reads one struct epoll_params (8 bytes, the
        // layout above) from the pointer, which is live on our stack.
        cvt(unsafe { libc::ioctl(self.fd.as_raw_fd(), EPIOCSPARAMS, &p as *const EpollParams) })
            .map(drop)
    }

    /// Waits up to `timeout_ms`; fills `out` with (events, token) pairs.
    pub fn wait(&self, buf: &mut Vec<libc::epoll_event>, timeout_ms: i32) -> io::Result<usize> {
        let cap = buf.capacity().max(1);
        buf.clear();
        // SAFETY: the kernel writes at most `cap` events into the vector's
        // spare capacity; we set the length to what it reports.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr(),
                cap as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(e);
        }
        // SAFETY: n <= cap entries were initialised by the kernel.
        unsafe { buf.set_len(n as usize) };
        Ok(n as usize)
    }
}

/// `struct epoll_params` (linux/eventpoll.h).
#[repr(C)]
struct EpollParams {
    busy_poll_usecs: u32,
    busy_poll_budget: u16,
    prefer_busy_poll: u8,
    pad: u8,
}

/// `EPIOCSPARAMS`: _IOW(0x8A, 0x01, struct epoll_params).
const EPIOCSPARAMS: libc::c_ulong = 0x4008_8a01;
/// `SO_BUSY_POLL` (asm-generic/socket.h).
const SO_BUSY_POLL: libc::c_int = 46;

/// Busy polls a socket's NAPI context for `usecs` on blocking reads and
/// polls (SO_BUSY_POLL). EPERM: raising it without CAP_NET_ADMIN.
pub fn set_busy_poll(fd: BorrowedFd<'_>, usecs: u32) -> io::Result<()> {
    set_int_opt(
        fd,
        libc::SOL_SOCKET,
        SO_BUSY_POLL,
        i32::try_from(usecs).unwrap_or(i32::MAX),
    )
}

/// `TCP_ZEROCOPY_RECEIVE` (linux/tcp.h).
const TCP_ZEROCOPY_RECEIVE: libc::c_int = 35;

/// `struct tcp_zerocopy_receive` (linux/tcp.h, Linux 5.11+ layout).
#[repr(C)]
#[derive(Default)]
struct TcpZerocopyReceive {
    address: u64,
    length: u32,
    recv_skip_hint: u32,
    inq: u32,
    err: i32,
    copybuf_address: u64,
    copybuf_len: i32,
    flags: u32,
    msg_control: u64,
    msg_controllen: u64,
    msg_flags: u32,
    reserved: u32,
}

/// What one TCP_ZEROCOPY_RECEIVE call did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZcReceived {
    /// Bytes mapped at the start of the window.
    pub mapped: usize,
    /// Bytes after them the kernel could not map: read them with recv.
    pub skip: usize,
}

/// A read-only shared mapping of a TCP socket: the window
/// TCP_ZEROCOPY_RECEIVE maps received pages into. Unmapped on drop.
pub struct RxMap {
    addr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; nothing in it is
// thread-bound (the flow that owns it may move to its worker thread).
unsafe impl Send for RxMap {}

impl RxMap {
    /// Maps `len` bytes (rounded up to whole pages) of the TCP socket `fd`.
    pub fn new(fd: BorrowedFd<'_>, len: usize) -> io::Result<RxMap> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = len.max(1).div_ceil(page) * page;
        // SAFETY: a fresh mapping chosen by the kernel (no address given);
        // a TCP socket accepts only PROT_READ + MAP_SHARED mappings, which
        // nothing aliases; we unmap it exactly once, on drop.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RxMap { addr, len })
    }

    /// Maps up to the window's length of `fd`'s received bytes into it
    /// (TCP_ZEROCOPY_RECEIVE); pages mapped before are unmapped first.
    pub fn receive(&mut self, fd: BorrowedFd<'_>) -> io::Result<ZcReceived> {
        let mut z = TcpZerocopyReceive {
            address: self.addr as u64,
            length: u32::try_from(self.len).unwrap_or(u32::MAX),
            ..TcpZerocopyReceive::default()
        };
        let mut optlen = std::mem::size_of::<TcpZerocopyReceive>() as libc::socklen_t;
        // SAFETY: the kernel reads and writes at most `optlen` bytes of the
        // struct, which lives on our stack; the address it maps into is
        // our own socket mapping of `len` bytes.
        let ret = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::IPPROTO_TCP,
                TCP_ZEROCOPY_RECEIVE,
                (&mut z as *mut TcpZerocopyReceive).cast(),
                &mut optlen,
            )
        };
        cvt(ret)?;
        if z.err != 0 {
            return Err(io::Error::from_raw_os_error(z.err));
        }
        Ok(ZcReceived {
            mapped: z.length as usize,
            skip: z.recv_skip_hint as usize,
        })
    }
}

impl Drop for RxMap {
    fn drop(&mut self) {
        // SAFETY: addr/len are the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// Pins the calling thread to one CPU.
pub fn pin_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against its size
    // only by our check below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cpu index out of range",
            ));
        }
        libc::CPU_SET(cpu, &mut set);
        cvt(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))
        .map(drop)
    }
}

/// CPU time (user, system) of the whole process, in microseconds.
pub fn process_cpu_us() -> (u64, u64) {
    // SAFETY: rusage is plain data written by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to our rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0, 0);
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// CPU time (user + system) of the calling thread, in microseconds.
pub fn thread_cpu_us() -> u64 {
    // SAFETY: rusage is plain data written by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to our rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// Number of open file descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Waits up to `timeout_ms` for `fd` to be readable (or closed).
pub fn poll_readable(fd: BorrowedFd<'_>, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd on our stack.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(n > 0)
}

/// Waits up to `timeout_ms` for events on several descriptors; returns how
/// many have `revents` set (0 on timeout or EINTR).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: the pointer and count describe the caller's live slice of
    // pollfd; the kernel writes only their revents fields.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

/// A pollfd asking for `events` on `fd`.
pub fn pollfd(fd: BorrowedFd<'_>, events: i16) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }
}

/// Raises the open-file limit as far as allowed (10,000 flows need 10,000
/// descriptors per side): to 1 Mi with CAP_SYS_RESOURCE, else to the hard
/// limit. Returns the soft limit now in force.
pub fn raise_fd_limit() -> u64 {
    // SAFETY: rlimit is plain data; get/setrlimit read or write only it.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        for want in [1 << 20, r.rlim_max] {
            if want <= r.rlim_cur {
                break;
            }
            let lim = libc::rlimit {
                rlim_cur: want,
                rlim_max: want.max(r.rlim_max),
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                return want;
            }
        }
        r.rlim_cur
    }
}

// ---- UDP: GSO, GRO, batched sends and receives, packet info ----------
//
// These go through nix (sockopt::UdpGsoSegment / UdpGroSegment,
// sendmmsg / recvmmsg with preallocated headers, ControlMessageOwned::
// UdpGroSegments and the packet-info messages), so they need no unsafe of
// their own; they live here beside the other socket syscalls.

use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrLike, SockaddrStorage, recvmmsg, recvmsg,
    sendmmsg, setsockopt, sockopt,
};
use std::io::{IoSlice, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;

fn nix_err(e: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// Sets the socket's UDP GSO segment size (UDP_SEGMENT): every send of
/// more than `size` bytes then leaves as segments of `size`; 0 turns it off.
pub fn set_udp_gso(fd: &impl AsFd, size: u16) -> io::Result<()> {
    setsockopt(fd, sockopt::UdpGsoSegment, &i32::from(size)).map_err(nix_err)
}

/// Turns UDP GRO (UDP_GRO) on or off for received datagrams.
pub fn set_udp_gro(fd: &impl AsFd, on: bool) -> io::Result<()> {
    setsockopt(fd, sockopt::UdpGroSegment, &on).map_err(nix_err)
}

/// Asks for the destination address of each received datagram (IP_PKTINFO
/// and, on IPv6 sockets, IPV6_RECVPKTINFO).
pub fn set_pktinfo(fd: &impl AsFd, v6: bool) -> io::Result<()> {
    setsockopt(fd, sockopt::Ipv4PacketInfo, &true).map_err(nix_err)?;
    if v6 {
        setsockopt(fd, sockopt::Ipv6RecvPacketInfo, &true).map_err(nix_err)?;
    }
    Ok(())
}

/// Preallocated headers for [`send_batch`].
pub struct SendBatch {
    hdrs: MultiHeaders<()>,
    addrs: Vec<Option<()>>,
}

// SAFETY: the raw pointers inside MultiHeaders point only into heap
// buffers the struct owns (its address slots and control-message space,
// boxed so they do not move with it) or are rewritten before each call;
// nothing is shared, so the struct may move to another thread. It is not
// Sync and is used by one thread at a time.
unsafe impl Send for SendBatch {}

impl SendBatch {
    /// Room for `n` datagrams (or GSO buffers) per call.
    pub fn new(n: usize) -> SendBatch {
        SendBatch {
            hdrs: MultiHeaders::preallocate(n.max(1), None),
            addrs: vec![None; n.max(1)],
        }
    }

    /// Messages it holds per call.
    pub fn capacity(&self) -> usize {
        self.addrs.len()
    }
}

/// Sends `msgs` on a connected socket in one sendmmsg call, without
/// blocking; returns how many went (a prefix).
pub fn send_batch(fd: BorrowedFd<'_>, b: &mut SendBatch, msgs: &[&[u8]]) -> io::Result<usize> {
    let n = msgs.len().min(b.addrs.len());
    let iovs: Vec<[IoSlice<'_>; 1]> = msgs[..n].iter().map(|m| [IoSlice::new(m)]).collect();
    let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
    let r =
        sendmmsg(fd.as_raw_fd(), &mut b.hdrs, &iovs, &b.addrs[..n], [], flags).map_err(nix_err)?;
    Ok(r.count())
}

/// Preallocated headers for [`recv_batch`], with room for a GRO
/// segment-size message each.
pub struct RecvBatch {
    hdrs: MultiHeaders<()>,
    n: usize,
}

// SAFETY: as for SendBatch: owned heap buffers only, used by one thread.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    /// Room for `n` datagrams per call.
    pub fn new(n: usize) -> RecvBatch {
        RecvBatch {
            hdrs: MultiHeaders::preallocate(n.max(1), Some(nix::cmsg_space!(i32))),
            n: n.max(1),
        }
    }
}

/// One message [`recv_batch`] read: its length and, when GRO joined
/// several datagrams, their size (all but the last are that long).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Bytes in the buffer.
    pub len: usize,
    /// GRO segment size, if the kernel coalesced.
    pub segment: Option<usize>,
}

/// Receives up to one message per buffer in `bufs` without blocking (one
/// recvmmsg call); Err(WouldBlock) when none is queued.
pub fn recv_batch(
    fd: BorrowedFd<'_>,
    b: &mut RecvBatch,
    bufs: &mut [&mut [u8]],
    out: &mut Vec<Received>,
) -> io::Result<()> {
    out.clear();
    let n = bufs.len().min(b.n);
    let mut iovs: Vec<[IoSliceMut<'_>; 1]> =
        bufs[..n].iter_mut().map(|x| [IoSliceMut::new(x)]).collect();
    let res = recvmmsg(
        fd.as_raw_fd(),
        &mut b.hdrs,
        iovs.iter_mut(),
        MsgFlags::MSG_DONTWAIT,
        None,
    )
    .map_err(nix_err)?;
    for m in res {
        let mut segment = None;
        if let Ok(cmsgs) = m.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::UdpGroSegments(s) = c
                    && s > 0
                {
                    segment = Some(s as usize);
                }
            }
        }
        out.push(Received {
            len: m.bytes,
            segment,
        });
    }
    Ok(())
}

/// A datagram read with [`recv_from_to`]: its length, where it came from
/// and which local address it was sent to.
#[derive(Debug, Clone, Copy)]
pub struct FromTo {
    /// Bytes read.
    pub len: usize,
    /// The sender.
    pub from: SocketAddr,
    /// The local address it arrived on (from IP_PKTINFO), if known.
    pub to: Option<IpAddr>,
}

/// Reads one datagram without blocking on a socket with [`set_pktinfo`]:
/// its sender and the local address it was sent to.
pub fn recv_from_to(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<FromTo> {
    let mut iov = [IoSliceMut::new(buf)];
    let mut space = nix::cmsg_space!(libc::in6_pktinfo, libc::in_pktinfo);
    let m = recvmsg::<SockaddrStorage>(
        fd.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_DONTWAIT,
    )
    .map_err(nix_err)?;
    let from = m
        .address
        .and_then(|a| storage_to_std(&a))
        .ok_or_else(|| io::Error::other("a datagram without a sender address"))?;
    let mut to = None;
    if let Ok(cmsgs) = m.cmsgs() {
        for c in cmsgs {
            match c {
                ControlMessageOwned::Ipv4PacketInfo(i) => {
                    to = Some(IpAddr::from(u32::from_be(i.ipi_addr.s_addr).to_be_bytes()));
                }
                ControlMessageOwned::Ipv6PacketInfo(i) => {
                    let v6 = std::net::Ipv6Addr::from(i.ipi6_addr.s6_addr);
                    to = Some(match v6.to_ipv4_mapped() {
                        Some(v4) => IpAddr::V4(v4),
                        None => IpAddr::V6(v6),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(FromTo {
        len: m.bytes,
        from,
        to,
    })
}

fn storage_to_std(a: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(SocketAddr::from((v4.ip(), v4.port())));
    }
    let v6 = a.as_sockaddr_in6()?;
    let ip = match v6.ip().to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6.ip()),
    };
    let _ = a.len();
    Some(SocketAddr::new(ip, v6.port()))
}

/// Lets the calling thread's timers fire within `ns` of their time (the
/// default slack is 50 us): what even pacing of datagrams needs.
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long by value and
    // touches no memory of ours.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) }).map(drop)
}

impl Epoll {
    /// Like [`Epoll::wait`] with a timeout to the microsecond
    /// (epoll_pwait2, Linux 5.11); falls back to whole milliseconds.
    pub fn wait_precise(
        &self,
        buf: &mut Vec<libc::epoll_event>,
        timeout: std::time::Duration,
    ) -> io::Result<usize> {
        let cap = buf.capacity().max(1);
        buf.clear();
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: as in `wait`: the kernel writes at most `cap` events into
        // the vector's spare capacity; `ts` lives on our stack for the call
        // and a null sigmask means "leave it alone".
        let n = unsafe {
            libc::epoll_pwait2(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr(),
                cap as i32,
                &ts,
                std::ptr::null(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINTR) => Ok(0),
                Some(libc::ENOSYS) => {
                    self.wait(buf, timeout.as_micros().div_ceil(1000).min(1000) as i32)
                }
                _ => Err(e),
            };
        }
        // SAFETY: n <= cap entries were initialised by the kernel.
        unsafe { buf.set_len(n as usize) };
        Ok(n as usize)
    }
}
