//! The second module of this crate with `unsafe` (beside [`crate::sys`]):
//! kernel timestamping of a TCP or UDP socket for `--breakdown`.
//! SO_TIMESTAMPING takes a flag word, receive timestamps come as
//! SCM_TIMESTAMPING control messages on recvmsg, transmit timestamps are
//! asked for per send with a control message and come back on the
//! socket's error queue (read by [`crate::sys::drain_errqueue`], the
//! crate's one error-queue loop). No safe crate builds these control
//! messages, so they are here. Each block states why it is sound.
//! Sockets come in as [`BorrowedFd`]s, as in [`crate::sys`].

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, BorrowedFd};

/// Which transmit timestamp an error-queue entry carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxKind {
    /// SCM_TSTAMP_SCHED: the packet entered the device's queueing layer
    /// (dev_queue_xmit, before the qdisc).
    Sched,
    /// SCM_TSTAMP_SND: the driver handed the packet to the device
    /// (skb_tx_timestamp).
    Snd,
    /// SCM_TSTAMP_ACK: every byte up to the key was acknowledged.
    Ack,
}

/// One transmit timestamp from the error queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxStamp {
    /// The byte key: bytes sent since timestamping was enabled, less one,
    /// at the last byte of the send it belongs to (SOF_TIMESTAMPING_OPT_ID).
    pub key: u32,
    /// Which point of the transmit path.
    pub kind: TxKind,
    /// CLOCK_REALTIME, nanoseconds.
    pub ns: i64,
}

const SCM_TSTAMP_SND: u32 = 0;
const SCM_TSTAMP_SCHED: u32 = 1;
const SCM_TSTAMP_ACK: u32 = 2;

/// The socket's timestamping flags for `--breakdown`: receive timestamps,
/// software timestamps reported, a byte key per send (counted from this
/// call: OPT_ID_TCP), no payload copies on the error queue (OPT_TSONLY).
/// Transmit timestamps are asked for per send ([`send_stamped`]), only
/// for the sampled transactions.
const FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_RX_SOFTWARE
    | libc::SOF_TIMESTAMPING_SOFTWARE
    | libc::SOF_TIMESTAMPING_OPT_ID
    | libc::SOF_TIMESTAMPING_OPT_TSONLY;

fn set_flags(fd: BorrowedFd<'_>, flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: the option value is a c_uint we own, passed with its size.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&flags as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Turns on software timestamping of a socket: a connected (or
/// connecting) TCP socket, whose keys count from the bytes written so far
/// (OPT_ID_TCP, kernel 6.2; an older kernel counts from the bytes
/// acknowledged, the same on an idle connection), or a UDP socket, whose
/// sends carry their own key ([`send_stamped`]).
pub fn enable(fd: BorrowedFd<'_>, tcp: bool) -> io::Result<()> {
    if !tcp {
        return set_flags(fd, FLAGS);
    }
    match set_flags(fd, FLAGS | libc::SOF_TIMESTAMPING_OPT_ID_TCP) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => set_flags(fd, FLAGS),
        r => r,
    }
}

/// What [`send_stamped`] asks of the kernel for one send: SCHED and SND.
const TX_FLAGS: u32 = libc::SOF_TIMESTAMPING_TX_SCHED | libc::SOF_TIMESTAMPING_TX_SOFTWARE;

/// `SCM_TS_OPT_ID` (asm-generic/socket.h, Linux 6.13; libc lacks it): the
/// OPT_ID key of one datagram, set by the sender.
const SCM_TS_OPT_ID: libc::c_int = 81;

/// Sends like `sendmsg` over `bufs`; with `stamp`, asks for SCHED and SND
/// timestamps of this send's last byte (an SO_TIMESTAMPING control
/// message), and with `key` as well (a datagram socket) the timestamps
/// carry that key (SCM_TS_OPT_ID; a kernel before 6.13 refuses it with
/// EINVAL).
pub fn send_stamped(
    fd: BorrowedFd<'_>,
    bufs: &[IoSlice<'_>],
    wait: bool,
    stamp: bool,
    key: Option<u32>,
) -> io::Result<usize> {
    let mut flags = libc::MSG_NOSIGNAL;
    if !wait {
        flags |= libc::MSG_DONTWAIT;
    }
    // Two headers with a u32 each: 2 x CMSG_SPACE(4) = 48 bytes.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is ABI-compatible with iovec (std guarantees it on unix);
    // the kernel only reads through it.
    msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = bufs.len();
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is arithmetic; one or two headers with a u32
    // each (2 x 24 bytes) fit in the 64-byte buffer, which CMSG_FIRSTHDR
    // and CMSG_NXTHDR walk within msg_controllen; the kernel only reads
    // the payload through the iovecs.
    let ret = unsafe {
        if !stamp {
            msg.msg_control = std::ptr::null_mut();
            return cvt_size(libc::sendmsg(fd.as_raw_fd(), &msg, flags));
        }
        let space = libc::CMSG_SPACE(4) as usize;
        msg.msg_controllen = if key.is_some() { 2 * space } else { space };
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SO_TIMESTAMPING;
        (*cmsg).cmsg_len = libc::CMSG_LEN(4) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg) as *mut u32, TX_FLAGS);
        if let Some(k) = key {
            let next = libc::CMSG_NXTHDR(&msg, cmsg);
            (*next).cmsg_level = libc::SOL_SOCKET;
            (*next).cmsg_type = SCM_TS_OPT_ID;
            (*next).cmsg_len = libc::CMSG_LEN(4) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(next) as *mut u32, k);
        }
        libc::sendmsg(fd.as_raw_fd(), &msg, flags)
    };
    cvt_size(ret)
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Receives like `recv`, and returns the software receive timestamp
/// (CLOCK_REALTIME ns) of the last segment read, when the kernel gave one.
pub fn recv_stamped(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    discard: bool,
    wait: bool,
) -> io::Result<(usize, Option<i64>)> {
    let mut flags = 0;
    if !wait {
        flags |= libc::MSG_DONTWAIT;
    }
    if discard {
        flags |= libc::MSG_TRUNC;
    }
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at one iovec over `buf` (valid for its length)
    // and at our control buffer, both sized above.
    let ret = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: CMSG_* walk the control buffer the kernel just filled,
    // bounded by msg_controllen; the data is read unaligned.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPING
            {
                let ts =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const [libc::timespec; 3]);
                stamp = ns_of(&ts[0]);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((ret as usize, stamp))
}

fn ns_of(t: &libc::timespec) -> Option<i64> {
    let ns = t
        .tv_sec
        .checked_mul(1_000_000_000)?
        .checked_add(t.tv_nsec)?;
    (ns != 0).then_some(ns)
}

/// Reads every pending transmit timestamp from the error queue into `out`.
pub fn read_tx_stamps(fd: BorrowedFd<'_>, out: &mut Vec<TxStamp>) -> io::Result<()> {
    crate::sys::drain_errqueue(fd, |e| {
        let (Some(ee), Some(ts)) = (e.ee, e.stamps) else {
            return;
        };
        if ee.ee_origin != libc::SO_EE_ORIGIN_TIMESTAMPING || ee.ee_errno != libc::ENOMSG as u32 {
            return;
        }
        let kind = match ee.ee_info {
            SCM_TSTAMP_SCHED => TxKind::Sched,
            SCM_TSTAMP_SND => TxKind::Snd,
            SCM_TSTAMP_ACK => TxKind::Ack,
            _ => return,
        };
        if let Some(ns) = ns_of(&ts[0]) {
            out.push(TxStamp {
                key: ee.ee_data,
                kind,
                ns,
            });
        }
    })
}
