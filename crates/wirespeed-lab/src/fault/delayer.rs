//! The delay fault's delayer: the process that holds each packet of an
//! NFQUEUE the delay before accepting it ([`run_delayer`], run as the
//! hidden `wirespeed lab delayer` inside a host's namespace), and its
//! start and stop from the planting process. They speak over the
//! delayer's standard streams: it prints `ready` once its queue is bound,
//! says why it failed on stderr, and stops at SIGTERM or when its
//! standard input closes.

use crate::build::ns_command;
use crate::error::LabError;
use crate::fault::FaultKind;
use crate::sys;
use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, Read, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most packets the kernel keeps queued for one delayer; beyond it they
/// pass undelayed (fail-open). 4096 packets are 2 ms of about 24 Gbit/s
/// in 1500-byte packets (GSO packets count one each), thousands of times
/// what probes send.
pub const QUEUE_MAX_LEN: u32 = 4096;

/// The line a delayer prints on standard output once its queue is bound.
const READY: &str = "ready";

/// What a delayer's error says when its queue number has a reader
/// already (then planting tries the next number).
const TAKEN: &str = "has a reader already";

/// A running delayer: `ip netns exec NS wirespeed lab delayer ...`.
#[derive(Debug)]
pub(crate) struct DelayerProc {
    pub(crate) child: Child,
    pub(crate) queue: u16,
    pub(crate) shown: String,
}

impl DelayerProc {
    /// What it wrote on stderr (read once it has exited).
    pub(crate) fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        s.trim().to_string()
    }

    /// Stops it: closes its standard input and sends SIGTERM (it then
    /// accepts what it holds and exits), waiting up to 3 s before SIGKILL.
    /// A delayer that had exited already is not an error.
    pub(crate) fn stop(mut self) -> Result<(), LabError> {
        drop(self.child.stdin.take());
        let pid = self.child.id();
        if matches!(self.child.try_wait(), Ok(None)) {
            sys::signal(pid, libc::SIGTERM);
        }
        let end = Instant::now() + Duration::from_secs(3);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(LabError::Run {
                        cmd: self.shown,
                        detail: format!(
                            "the delayer (pid {pid}) did not exit within 3 s of SIGTERM; killed"
                        ),
                    });
                }
                Err(e) => return Err(LabError::io(format!("wait for `{}`", self.shown), e)),
            }
        }
    }
}

/// The wirespeed binary's arguments that run a delayer of `queue`
/// holding packets `ms` milliseconds, stopping when its standard input
/// closes: `lab delayer --queue N --delay-ms X --exit-on-eof` (spelled
/// here only; the binary's tests parse it).
pub fn delayer_args(queue: u16, ms: f64) -> Vec<String> {
    let (q, d) = (queue.to_string(), ms.to_string());
    [
        "lab",
        "delayer",
        "--queue",
        &q,
        "--delay-ms",
        &d,
        "--exit-on-eof",
    ]
    .map(String::from)
    .to_vec()
}

/// Why a delayer did not start.
pub(crate) enum StartError {
    /// Its queue number has a reader already: try another.
    Taken,
    /// Anything else.
    Failed(LabError),
}

/// Starts `WIRESPEED lab delayer` for `queue` in namespace `ns` and waits
/// up to 10 s for its ready line.
pub(crate) fn start_delayer(
    ns: &str,
    wirespeed: &str,
    queue: u16,
    ms: f64,
) -> Result<DelayerProc, StartError> {
    let args = delayer_args(queue, ms);
    let shown = format!("ip netns exec {ns} {wirespeed} {}", args.join(" "));
    let mut child = ns_command(ns, wirespeed)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            StartError::Failed(LabError::io(
                format!("run `{shown}` (is iproute2 installed?)"),
                e,
            ))
        })?;
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
    }
    let mut d = DelayerProc {
        child,
        queue,
        shown,
    };
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(line) if line.trim() == READY => Ok(d),
        Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            let st = d.child.wait().map(|s| s.to_string()).unwrap_or_default();
            let err = d.stderr();
            if err.contains(TAKEN) {
                return Err(StartError::Taken);
            }
            Err(StartError::Failed(LabError::Run {
                cmd: d.shown,
                detail: format!(
                    "the delayer exited before its queue was ready ({st}): {err} \
                     (the program must be a wirespeed binary with `lab delayer`)"
                ),
            }))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            let _ = d.child.kill();
            let _ = d.child.wait();
            Err(StartError::Failed(LabError::Run {
                cmd: d.shown,
                detail: "the delayer did not say it was ready within 10 s; killed".into(),
            }))
        }
    }
}

/// What `wirespeed lab delayer` is told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayerOpts {
    /// The NFQUEUE number to read.
    pub queue: u16,
    /// How long each packet is held, in milliseconds, in (0, 10000].
    pub delay_ms: f64,
    /// Stop when standard input closes (the planting process holds it
    /// open: if it dies, the delayer goes too).
    pub exit_on_eof: bool,
}

/// What a delayer did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DelayerStats {
    /// Packets held and accepted.
    pub packets: u64,
    /// Most packets held at once.
    pub most_held: usize,
}

/// Reads NFQUEUE `o.queue` in this process's network namespace and holds
/// each packet `o.delay_ms` before accepting it, in arrival order (one
/// thread: a FIFO of due times, a wait on the socket until the next one
/// is due). The queue keeps up to [`QUEUE_MAX_LEN`] packets, fail-open,
/// copies no payload and takes GSO packets whole. Prints `ready` on
/// standard output once bound. Returns when `stop` is set (SIGTERM) or
/// standard input closes (with `exit_on_eof`), accepting what it holds at
/// once; an error when the queue fails. For a process of its own (the
/// socket is found among the process's files).
pub fn run_delayer(o: &DelayerOpts, stop: &AtomicBool) -> Result<DelayerStats, LabError> {
    FaultKind::Delay { ms: o.delay_ms }.validate()?;
    let delay = Duration::from_secs_f64(o.delay_ms / 1000.0);
    let (mut q, fd) = open_queue(o.queue)?;
    println!("{READY}");
    let _ = std::io::stdout().flush();
    let mut held: VecDeque<(Instant, nfq::Message)> = VecDeque::new();
    let mut stats = DelayerStats::default();
    let r = delay_loop(&mut q, fd, o, delay, stop, &mut held, &mut stats);
    // Stopped or failed: what is held goes on now rather than be dropped
    // with the socket.
    while let Some((_, m)) = held.pop_front() {
        let _ = q.verdict(m);
    }
    r.map(|()| stats)
}

/// Opens, binds and configures NFQUEUE `queue`; also returns its socket.
fn open_queue(queue: u16) -> Result<(nfq::Queue, i32), LabError> {
    let what = |step: &str| format!("NFQUEUE {queue}: {step}");
    let before: HashSet<u64> = sys::open_sockets().into_iter().map(|s| s.1).collect();
    let mut q = nfq::Queue::open().map_err(|e| {
        LabError::io(
            what("open a netfilter netlink socket (is NETFILTER_NETLINK_QUEUE built?)"),
            e,
        )
    })?;
    let fd = queue_socket(&before).ok_or_else(|| {
        LabError::Fault(what("cannot find its socket among this process's files"))
    })?;
    q.bind(queue).map_err(|e| {
        if e.raw_os_error() == Some(libc::EPERM) {
            LabError::io(what(&format!("bind: it {TAKEN}; choose another number")), e)
        } else {
            LabError::io(what("bind"), e)
        }
    })?;
    q.set_copy_range(queue, 0)
        .map_err(|e| LabError::io(what("copy no payload"), e))?;
    q.set_queue_max_len(queue, QUEUE_MAX_LEN)
        .map_err(|e| LabError::io(what("set the queue length"), e))?;
    q.set_fail_open(queue, true)
        .map_err(|e| LabError::io(what("set fail-open"), e))?;
    q.set_recv_gso(queue, true)
        .map_err(|e| LabError::io(what("take GSO packets whole"), e))?;
    q.set_nonblocking(true);
    Ok((q, fd))
}

/// The netfilter netlink socket opened since `before` (the sockets' inodes
/// then): the nfq crate does not expose its descriptor.
fn queue_socket(before: &HashSet<u64>) -> Option<i32> {
    const NETLINK_NETFILTER: &str = "12";
    let table = std::fs::read_to_string("/proc/self/net/netlink").ok()?;
    let netfilter: HashSet<u64> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1) == Some(&NETLINK_NETFILTER)).then(|| f.last()?.parse().ok())?
        })
        .collect();
    let mut new = sys::open_sockets()
        .into_iter()
        .filter(|(_, ino)| !before.contains(ino) && netfilter.contains(ino));
    match (new.next(), new.next()) {
        (Some((fd, _)), None) => Some(fd),
        _ => None,
    }
}

/// The delayer's loop; see [`run_delayer`].
fn delay_loop(
    q: &mut nfq::Queue,
    fd: i32,
    o: &DelayerOpts,
    delay: Duration,
    stop: &AtomicBool,
    held: &mut VecDeque<(Instant, nfq::Message)>,
    stats: &mut DelayerStats,
) -> Result<(), LabError> {
    /// Longest wait without a packet due: how soon a stop is seen.
    const IDLE: Duration = Duration::from_millis(100);
    /// Most packets taken in one go before releasing due ones.
    const BATCH: usize = 1024;
    let failed = |step: &str, e| LabError::io(format!("NFQUEUE {}: {step}", o.queue), e);
    let fds: Vec<i32> = if o.exit_on_eof { vec![fd, 0] } else { vec![fd] };
    loop {
        let mut taken = 0;
        while taken < BATCH {
            match q.recv() {
                Ok(m) => {
                    held.push_back((Instant::now() + delay, m));
                    taken += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => break,
                Err(e) => return Err(failed("read a packet", e)),
            }
        }
        stats.packets += taken as u64;
        stats.most_held = stats.most_held.max(held.len());
        let now = Instant::now();
        while held.front().is_some_and(|(due, _)| *due <= now) {
            if let Some((_, m)) = held.pop_front() {
                q.verdict(m).map_err(|e| failed("accept a packet", e))?;
            }
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if taken == BATCH {
            continue;
        }
        let wait = held
            .front()
            .map_or(IDLE, |(due, _)| due.saturating_duration_since(now))
            .min(IDLE);
        let ready = sys::wait_readable(&fds, wait).map_err(|e| failed("wait", e))?;
        if o.exit_on_eof && ready.get(1) == Some(&true) && stdin_closed() {
            return Ok(());
        }
    }
}

/// Reads what standard input has (it is readable): true at its end.
fn stdin_closed() -> bool {
    let mut buf = [0u8; 256];
    !matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0)
}
