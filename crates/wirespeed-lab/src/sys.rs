//! The lab's syscalls: threads that run inside a namespace
//! ([`spawn_in`], wirespeed-host's runner), and the processes left inside
//! a namespace, found and killed before it is removed. (Namespaces
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
