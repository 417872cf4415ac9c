//! The lab's syscalls: threads that run inside a namespace
//! ([`spawn_in`], wirespeed-host's runner), the processes left inside
//! a namespace, found and killed before it is removed, and what a fault's
//! delayer needs: a signal to stop it, and a wait on the NFQUEUE socket
//! (which the nfq crate does not expose) with a timeout. (Namespaces
//! themselves are made and removed by wirespeed-host's netns module.)

use crate::error::LabError;

/// Runs `f` on a fresh thread inside the network namespace
/// `/run/netns/NS` (wirespeed-host's [`wirespeed_host::netns::spawn_in`]):
/// sockets and netlink sockets that `f` opens, and the threads it starts,
/// live in that namespace; the rest of the process stays where it is.
/// The thread's result is `Err` when it could not enter the namespace
/// (then `f` never ran). /sys is not remounted: code that reads a
/// namespace's devices under /sys runs under
/// [`wirespeed_host::netns::run_in_with_sys`].
pub fn spawn_in<T, F>(
    ns: &str,
    f: F,
) -> Result<std::thread::JoinHandle<Result<T, LabError>>, LabError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    wirespeed_host::netns::spawn_in(ns, f, LabError::io)
}

/// The pids of the processes whose network namespace is `/run/netns/NS`
/// (what `ip netns pids` lists), this process excepted.
pub(crate) fn pids_in(ns: &str) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(std::path::Path::new("/run/netns").join(ns)) else {
        return Vec::new();
    };
    let want = format!("net:[{}]", meta.ino());
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|l| l.as_os_str() == want.as_str())
        })
        .collect()
}

/// Whether process `pid` runs (exists and is not a zombie).
pub(crate) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// SIGKILLs every process inside namespace `ns` (servers and clients a
/// killed lab user left running) and waits up to 2 s for them to exit.
/// Returns how many there were.
pub(crate) fn kill_processes_in(ns: &str) -> usize {
    let pids = pids_in(ns);
    for &pid in &pids {
        // SAFETY: kill takes no pointers; a pid that has exited meanwhile
        // gives ESRCH, which is harmless.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    pids.len()
}

/// Sends signal `sig` to process `pid`; false when there is no such process.
pub(crate) fn signal(pid: u32, sig: libc::c_int) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill takes no pointers; a pid that has exited meanwhile
    // gives ESRCH, reported as false.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// The sockets among this process's open files: (fd, socket inode).
pub(crate) fn open_sockets() -> Vec<(i32, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let fd: i32 = e.file_name().to_str()?.parse().ok()?;
            let link = std::fs::read_link(e.path()).ok()?;
            let ino = link
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            Some((fd, ino))
        })
        .collect()
}

/// Waits until one of `fds` is readable or hung up, or `timeout` passes,
/// with microsecond resolution (ppoll; poll counts milliseconds, too
/// coarse for a 2 ms delay). Returns which are ready; a signal ends the
/// wait early with none ready.
pub(crate) fn wait_readable(
    fds: &[i32],
    timeout: std::time::Duration,
) -> std::io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(3600) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: `p` is a live array of `p.len()` pollfd structs that ppoll
    // writes revents into, `ts` a live timespec it only reads; no signal
    // mask is passed. The fds are the caller's open files.
    let n = unsafe {
        libc::ppoll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    let ready = libc::POLLIN | libc::POLLHUP | libc::POLLERR;
    Ok(p.iter().map(|x| x.revents & ready != 0).collect())
}
