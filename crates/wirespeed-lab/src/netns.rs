//! The lab's syscalls. Link attributes that iproute2 on these machines
//! cannot set (gso_ipv4_max_size and gro_ipv4_max_size need iproute2 >=
//! 6.3): set over rtnetlink from a thread that enters the host's
//! namespace, through wirespeed-host's tuning code, which also reads each
//! value back. Threads that run inside a namespace ([`spawn_in`]). And
//! the processes left inside a namespace, killed before it is removed.

use crate::error::LabError;
use std::os::fd::AsRawFd;
use wirespeed_host::Fs;
use wirespeed_host::tune::{Host, Setting};

/// An IPv4 size command taken apart: namespace, device, (attribute, value) pairs.
type Ipv4Sizes<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>);

/// Whether `argv` is `ip -n NS link set dev DEV` followed only by IPv4
/// GSO/GRO sizes; if so returns (namespace, device, settings).
pub(crate) fn ipv4_sizes(argv: &[String]) -> Option<Ipv4Sizes<'_>> {
    let [ip, n, ns, link, set, dev_kw, dev, rest @ ..] = argv else {
        return None;
    };
    let head = [ip, n, link, set, dev_kw].map(String::as_str);
    if head != ["ip", "-n", "link", "set", "dev"] || rest.is_empty() || rest.len() % 2 != 0 {
        return None;
    }
    let pairs: Vec<(&str, &str)> = rest
        .chunks(2)
        .map(|c| (c[0].as_str(), c[1].as_str()))
        .collect();
    pairs
        .iter()
        .all(|(k, _)| matches!(*k, "gso_ipv4_max_size" | "gro_ipv4_max_size"))
        .then_some((ns.as_str(), dev.as_str(), pairs))
}

/// Sets IPv4 GSO/GRO sizes of `dev` in namespace `ns` over netlink.
pub(crate) fn set_ipv4_sizes(ns: &str, dev: &str, pairs: &[(&str, &str)]) -> Result<(), LabError> {
    let what = format!(
        "ip -n {ns} link set dev {dev} {}",
        pairs
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let dev = dev.to_string();
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let worker = spawn_in(ns, move || -> Result<(), String> {
        let mut host = Host::open(Fs::at("/")).map_err(|e| e.to_string())?;
        for (k, v) in &pairs {
            let s = if k == "gso_ipv4_max_size" {
                Setting::GsoIpv4MaxSize { dev: dev.clone() }
            } else {
                Setting::GroIpv4MaxSize { dev: dev.clone() }
            };
            host.set(&s, v).map_err(|e| e.to_string())?;
        }
        Ok(())
    })?;
    let fail = |stderr: String| LabError::Command {
        cmd: what.clone(),
        stderr,
    };
    match worker.join() {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(stderr))) => Err(fail(stderr)),
        Ok(Err(e)) => Err(fail(e.to_string())),
        Err(_) => Err(fail("the netlink thread panicked".into())),
    }
}

/// Runs `f` on a fresh thread inside the network namespace
/// `/run/netns/NS`: sockets and netlink sockets that `f` opens, and the
/// threads it starts, live in that namespace; the rest of the process
/// stays where it is. The thread's result is `Err` when it could not
/// enter the namespace (then `f` never ran). /sys is not remounted: code
/// that reads a namespace's devices under /sys needs `ip netns exec`.
pub fn spawn_in<T, F>(
    ns: &str,
    f: F,
) -> Result<std::thread::JoinHandle<Result<T, LabError>>, LabError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let path = std::path::Path::new("/run/netns").join(ns);
    let file = std::fs::File::open(&path)
        .map_err(|e| LabError::io(format!("open {}", path.display()), e))?;
    let name = format!("netns {ns}");
    // A thread of its own: setns(CLONE_NEWNET) changes only the calling
    // thread's namespace (and the threads it starts), never the caller's.
    std::thread::Builder::new()
        .name(name.chars().take(15).collect())
        .spawn(move || {
            // SAFETY: `file` is an open namespace file that outlives the
            // call; setns has no memory-safety preconditions.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            if rc != 0 {
                return Err(LabError::io(
                    format!("enter {name}"),
                    std::io::Error::last_os_error(),
                ));
            }
            drop(file);
            Ok(f())
        })
        .map_err(|e| LabError::io("start a thread", e))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &str) -> Vec<String> {
        x.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn only_ipv4_size_commands_go_over_netlink() {
        let c = v("ip -n l-a link set dev eth0 gso_ipv4_max_size 185000 gro_ipv4_max_size 185000");
        let (ns, dev, pairs) = ipv4_sizes(&c).unwrap();
        assert_eq!((ns, dev), ("l-a", "eth0"));
        assert_eq!(pairs[1], ("gro_ipv4_max_size", "185000"));
        assert!(ipv4_sizes(&v("ip -n l-a link set dev eth0 mtu 9000")).is_none());
        assert!(ipv4_sizes(&v("ip -n l-a link set dev eth0 gso_ipv4_max_size")).is_none());
        assert!(ipv4_sizes(&v("ip -n l-a link set dev eth0")).is_none());
    }
}
