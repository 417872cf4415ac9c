//! The lab's syscalls: the processes left inside a namespace, found and
//! killed before it is removed. (Namespaces themselves are made, entered
//! and removed by wirespeed-host's netns module.)

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
