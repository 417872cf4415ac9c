//! The third module of this crate with `unsafe` (beside [`crate::sys`] and
//! [`crate::sys_ts`]): one io_uring per worker thread for `--io uring`.
//! Pushing a submission is `unsafe` in the io-uring crate because the
//! kernel reads or writes the entry's buffer after the call returns; here
//! every buffer an entry names belongs to the [`Ring`] itself (its send
//! source, its receive sink, its datagram slots, its provided buffers),
//! allocated once and never resized, and the ring is torn down before
//! them, after every counted operation has completed (or the memory is
//! leaked when one will not). Callers therefore only name buffers by
//! index, and every function here is safe to call. Each block states why
//! it is sound.

use io_uring::types::{BufRingEntry, CancelBuilder, SubmitArgs, Timespec};
use io_uring::{IoUring, cqueue, opcode, squeue, types};
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Page size the kernel wants the provided-buffer ring aligned to.
const PAGE: usize = 4096;

/// Zeroed memory that starts on a page boundary and never moves.
struct Pages {
    mem: Vec<u8>,
    start: usize,
    len: usize,
}

impl Pages {
    fn new(len: usize) -> Pages {
        let mem = vec![0u8; len + PAGE];
        let start = (PAGE - mem.as_ptr() as usize % PAGE) % PAGE;
        Pages { mem, start, len }
    }

    fn ptr(&self) -> *const u8 {
        self.mem[self.start..].as_ptr()
    }

    fn ptr_mut(&mut self) -> *mut u8 {
        self.mem[self.start..].as_mut_ptr()
    }

    fn slice(&self, off: usize, len: usize) -> &[u8] {
        &self.mem[self.start + off..self.start + off + len]
    }

    fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        &mut self.mem[self.start + off..self.start + off + len]
    }
}

/// IORING_RECVSEND_POLL_FIRST (the io-uring crate keeps its constants private).
const RECVSEND_POLL_FIRST: u16 = 1;

/// The buffer group of the provided-buffer ring.
const BGID: u16 = 0;

/// A provided-buffer ring (IORING_REGISTER_PBUF_RING): `entries` buffers
/// of `size` bytes that multishot receives fill, handed back one by one.
struct BufRing {
    ring: Pages,
    bufs: Pages,
    entries: u16,
    size: usize,
    tail: u16,
}

impl BufRing {
    /// Puts buffer `bid` back at the tail (published by [`BufRing::publish`]).
    fn add(&mut self, bid: u16) {
        let mask = self.entries - 1;
        let at = (self.tail & mask) as usize;
        let addr = self.bufs.ptr() as u64 + bid as u64 * self.size as u64;
        let base = self.ring.ptr_mut() as *mut BufRingEntry;
        // SAFETY: `at` < entries, and the ring memory holds `entries`
        // entries (allocated in `Ring::with_buf_ring`); the kernel only
        // reads entries between its head and the published tail, and this
        // one is past the tail until `publish`.
        let e = unsafe { &mut *base.add(at) };
        e.set_addr(addr);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the buffers added so far visible to the kernel.
    fn publish(&mut self) {
        let base = self.ring.ptr() as *const BufRingEntry;
        // SAFETY: the tail lives in the first entry's reserved field
        // (io_uring_buf_ring), inside the ring memory; the kernel reads it
        // with acquire ordering, so a release store publishes the entries.
        unsafe {
            let tail = BufRingEntry::tail(base) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }
}

/// One completion: the user data, the result, the flags.
#[derive(Debug, Clone, Copy)]
pub struct Done {
    /// What the submission carried.
    pub user_data: u64,
    /// Bytes moved, or a negative errno.
    pub res: i32,
    /// IORING_CQE_F_* bits.
    pub flags: u32,
}

impl Done {
    /// Whether more completions of this (multishot) submission follow.
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The provided buffer a receive filled.
    pub fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// What a worker's ring holds: its size and the buffers its entries name.
#[derive(Debug, Clone, Copy)]
pub struct RingSize {
    /// Submission queue entries.
    pub entries: u32,
    /// Bytes of the zeroed send source and of the receive sink.
    pub io_len: usize,
    /// Datagram slots (UDP senders) and the bytes of each.
    pub slots: (usize, usize),
    /// Provided buffers for multishot receives (a power of two, or 0 for
    /// none) and the bytes of each.
    pub provided: (u16, usize),
}

/// One worker's io_uring and every buffer its submissions name.
pub struct Ring {
    // Field order matters: the ring is dropped (closed) before its memory.
    ring: IoUring,
    tx: Pages,
    sink: Pages,
    slots: Pages,
    slot_len: usize,
    provided: Option<BufRing>,
    /// Counted operations not yet completed.
    inflight: usize,
}

/// Why io_uring cannot run here, from the io_uring_disabled sysctl.
pub fn disabled_by_sysctl() -> Option<String> {
    let v = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok()?;
    match v.trim() {
        "2" => Some("kernel.io_uring_disabled is 2 (io_uring is off for every process)".into()),
        "1" if !in_io_uring_group() => Some(
            "kernel.io_uring_disabled is 1 and this process is neither privileged nor in kernel.io_uring_group".into(),
        ),
        _ => None,
    }
}

/// Whether the process may use io_uring under io_uring_disabled=1: root
/// (CAP_SYS_ADMIN, approximated by euid 0) or in the sysctl's group.
fn in_io_uring_group() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let Ok(g) = std::fs::read_to_string("/proc/sys/kernel/io_uring_group") else {
        return false;
    };
    let Ok(gid) = g.trim().parse::<i64>() else {
        return false;
    };
    // SAFETY: getegid has no preconditions and cannot fail.
    gid >= 0 && unsafe { libc::getegid() } as i64 == gid
}

impl Ring {
    /// A ring of `size`: io_uring_setup, the buffers, and when asked the
    /// provided-buffer ring. The error says which step the kernel refused.
    pub fn new(size: RingSize) -> io::Result<Ring> {
        // One thread submits and reaps: completions' task work then runs
        // only when it waits (DEFER_TASKRUN, Linux 6.1+), not by
        // interrupting it; older kernels get a plain ring.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(size.entries)
            .or_else(|_| IoUring::new(size.entries))?;
        let mut r = Ring {
            ring,
            tx: Pages::new(size.io_len),
            sink: Pages::new(size.io_len),
            slots: Pages::new(size.slots.0 * size.slots.1),
            slot_len: size.slots.1,
            provided: None,
            inflight: 0,
        };
        if size.provided.0 > 0 {
            r.with_buf_ring(size.provided.0, size.provided.1)?;
        }
        Ok(r)
    }

    fn with_buf_ring(&mut self, entries: u16, buf: usize) -> io::Result<()> {
        let ring = Pages::new(entries as usize * std::mem::size_of::<BufRingEntry>());
        // SAFETY: the ring memory is page-aligned, holds `entries` entries
        // and lives in `self.provided` until the ring is dropped (the
        // field order drops the ring first).
        unsafe {
            self.ring.submitter().register_buf_ring_with_flags(
                ring.ptr() as u64,
                entries,
                BGID,
                0,
            )?
        };
        let mut b = BufRing {
            ring,
            bufs: Pages::new(entries as usize * buf),
            entries,
            size: buf,
            tail: 0,
        };
        for bid in 0..entries {
            b.add(bid);
        }
        b.publish();
        self.provided = Some(b);
        Ok(())
    }

    /// Pushes `e`, submitting first when the queue is full.
    fn push(&mut self, e: squeue::Entry, counted: bool) -> io::Result<()> {
        loop {
            // SAFETY: every buffer `e` names is one of this ring's own
            // (see the module doc): it outlives the operation.
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                break;
            }
            self.ring.submit()?;
        }
        if counted {
            self.inflight += 1;
        }
        Ok(())
    }

    /// Sends `len` bytes of the zeroed source on `fd`. With `all` the
    /// kernel sends them all (MSG_WAITALL) and posts no completion unless
    /// it fails (the send is then not counted in flight).
    pub fn send_zeros(
        &mut self,
        fd: RawFd,
        len: usize,
        user_data: u64,
        all: bool,
    ) -> io::Result<()> {
        let len = len.min(self.tx.len);
        let mut flags = libc::MSG_NOSIGNAL;
        let mut e = opcode::Send::new(types::Fd(fd), self.tx.ptr(), len as u32);
        if all {
            flags |= libc::MSG_WAITALL;
        }
        e = e.flags(flags);
        let mut e = e.build().user_data(user_data);
        if all {
            e = e
                .flags(squeue::Flags::SKIP_SUCCESS)
                .user_data(user_data | UNCOUNTED);
        }
        self.push(e, !all)
    }

    /// Sends the first `len` bytes of datagram slot `slot` on `fd`.
    pub fn send_slot(
        &mut self,
        fd: RawFd,
        slot: usize,
        len: usize,
        user_data: u64,
    ) -> io::Result<()> {
        let len = len.min(self.slot_len);
        let p = self.slots.slice(slot * self.slot_len, len).as_ptr();
        let e = opcode::Send::new(types::Fd(fd), p, len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data);
        self.push(e, true)
    }

    /// Datagram slot `slot`, to write what it will send.
    pub fn slot_mut(&mut self, slot: usize) -> &mut [u8] {
        let n = self.slot_len;
        self.slots.slice_mut(slot * n, n)
    }

    /// Receives up to `len` bytes on `fd` into the sink (the bytes are
    /// counted, not read); with `all`, waits for all of them (MSG_WAITALL).
    pub fn recv_sink(
        &mut self,
        fd: RawFd,
        len: usize,
        user_data: u64,
        all: bool,
    ) -> io::Result<()> {
        let len = len.min(self.sink.len);
        let flags = if all { libc::MSG_WAITALL } else { 0 };
        // A whole message is awaited: its bytes are rarely there yet, so
        // the kernel waits for them before trying (POLL_FIRST).
        let prio = if all { RECVSEND_POLL_FIRST } else { 0 };
        let e = opcode::Recv::new(types::Fd(fd), self.sink.ptr_mut(), len as u32)
            .flags(flags)
            .ioprio(prio)
            .build()
            .user_data(user_data);
        self.push(e, true)
    }

    /// A multishot receive on `fd` into the provided buffers: one
    /// completion per filled buffer until it ends (no `more` flag).
    pub fn recv_multi(&mut self, fd: RawFd, user_data: u64) -> io::Result<()> {
        let e = opcode::RecvMulti::new(types::Fd(fd), BGID)
            .build()
            .user_data(user_data);
        self.push(e, true)
    }

    /// The first `len` bytes of provided buffer `bid`.
    pub fn provided(&mut self, bid: u16, len: usize) -> &mut [u8] {
        match self.provided.as_mut() {
            Some(b) => {
                let n = len.min(b.size);
                b.bufs.slice_mut(bid as usize * b.size, n)
            }
            None => &mut [],
        }
    }

    /// Hands provided buffer `bid` back to the kernel.
    pub fn recycle(&mut self, bid: u16) {
        if let Some(b) = self.provided.as_mut() {
            b.add(bid);
            b.publish();
        }
    }

    /// Submits what was pushed and waits up to `timeout` for at least one
    /// completion.
    pub fn submit_and_wait(&mut self, timeout: Duration) -> io::Result<()> {
        let ts = Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let args = SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => Ok(()),
            // EBUSY: completions are waiting to be read first.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Moves every completion waiting into `out` (cleared first).
    pub fn completions(&mut self, out: &mut Vec<Done>) {
        out.clear();
        for c in self.ring.completion() {
            let d = Done {
                user_data: c.user_data(),
                res: c.result(),
                flags: c.flags(),
            };
            out.push(d);
        }
        for d in out.iter() {
            if !d.more() && d.user_data & UNCOUNTED == 0 {
                self.inflight = self.inflight.saturating_sub(1);
            }
        }
    }

    /// Cancels every operation and waits up to `limit` for them to end.
    fn cancel_all(&mut self, limit: Duration) -> bool {
        let e = opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(UNCOUNTED);
        if self.push(e, false).is_err() {
            return false;
        }
        let until = Instant::now() + limit;
        let mut out = Vec::new();
        while self.inflight > 0 && Instant::now() < until {
            if self.submit_and_wait(Duration::from_millis(10)).is_err() {
                return false;
            }
            self.completions(&mut out);
        }
        self.inflight == 0
    }
}

/// A bit of user data that marks a completion not counted in flight
/// (a failed MSG_WAITALL send, the cancel itself). Callers keep it clear.
pub const UNCOUNTED: u64 = 1 << 63;

impl Drop for Ring {
    fn drop(&mut self) {
        if !self.cancel_all(Duration::from_secs(1)) {
            // An operation may still write into this memory: keep it.
            let mem = (
                std::mem::replace(&mut self.tx, Pages::new(0)),
                std::mem::replace(&mut self.sink, Pages::new(0)),
                std::mem::replace(&mut self.slots, Pages::new(0)),
                self.provided.take(),
            );
            std::mem::forget(mem);
        }
    }
}

/// Makes io_uring_setup fail with EPERM on the calling thread and on the
/// threads it starts from now on, as container runtimes' seccomp profiles
/// do (Docker's default refuses io_uring); other threads are untouched
/// (no SECCOMP_FILTER_FLAG_TSYNC). For tests of the fallback to epoll.
/// It sets PR_SET_NO_NEW_PRIVS on the thread first, which seccomp needs
/// without CAP_SYS_ADMIN. The filter matches the system call number of
/// this build's architecture.
pub fn deny_io_uring_on_this_thread() -> io::Result<()> {
    let nr = libc::SYS_io_uring_setup as u32;
    let errno = libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA);
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let filter = [
        // A = seccomp_data.nr (offset 0)
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, nr, 0, 1),
        stmt(libc::BPF_RET | libc::BPF_K, errno),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: prctl with integer arguments; no memory is passed.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `prog` points at `filter`, both alive for the call; the
    // kernel copies the program.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Clears O_NONBLOCK on `fd`: io_uring waits for a blocking socket itself
/// (it tries without blocking, then polls) and never blocks the thread.
pub fn set_blocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller's flow owns; integer flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
