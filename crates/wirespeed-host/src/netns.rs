//! Named network namespaces, without iproute2: create one the way `ip
//! netns add` does (an nsfs bind mount at /run/netns/NAME), remove it the
//! way `ip netns del` does, and run code inside one on a thread of its own
//! (setns(CLONE_NEWNET) changes only the calling thread, which ends right
//! after): [`run_in`] for a call, [`spawn_in`] for a thread that outlives
//! it, [`run_in_with_sys`] for code that also reads the namespace's
//! devices under /sys. The system calls are in the crate's `sys` module.

use crate::HostError;
use crate::sys;
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where named namespaces live (as iproute2 keeps them).
pub const NETNS_DIR: &str = "/run/netns";

/// The file of namespace `name`, after checking the name is one file name.
pub fn path(name: &str) -> Result<PathBuf, HostError> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.len() > 200 {
        return Err(HostError::Refused(format!(
            "bad network namespace name {name:?}"
        )));
    }
    Ok(Path::new(NETNS_DIR).join(name))
}

/// Whether namespace `name` exists.
pub fn exists(name: &str) -> bool {
    path(name).is_ok_and(|p| p.exists())
}

fn cstr(p: &Path) -> Result<CString, HostError> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| HostError::Refused(format!("path {} holds a NUL byte", p.display())))
}

/// Makes /run/netns a shared mount point, so namespace mounts propagate
/// to other mount namespaces (what iproute2 does before the first add).
fn share_dir() -> Result<(), HostError> {
    let dir = Path::new(NETNS_DIR);
    std::fs::create_dir_all(dir).map_err(|e| HostError::file(dir, e))?;
    let c = cstr(dir)?;
    let mut made_mount = false;
    loop {
        let e = match sys::mount(c"", &c, c"none", libc::MS_SHARED | libc::MS_REC) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if e.raw_os_error() != Some(libc::EINVAL) || made_mount {
            return Err(HostError::file(dir, e));
        }
        // Not a mount point yet: bind it onto itself, then share it.
        sys::mount(&c, &c, c"none", libc::MS_BIND | libc::MS_REC)
            .map_err(|e| HostError::file(dir, e))?;
        made_mount = true;
    }
}

/// Creates network namespace `name` (`ip netns add NAME`): a new namespace
/// made on a short-lived thread and bind-mounted at /run/netns/NAME. An
/// existing name is an error.
pub fn create(name: &str) -> Result<(), HostError> {
    let file = path(name)?;
    share_dir()?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o0)
        .open(&file)
        .map_err(|e| HostError::file(&file, e))?;
    let target = cstr(&file)?;
    let made = std::thread::scope(|s| {
        s.spawn(|| -> Result<(), HostError> {
            // This thread only; it ends after the mount.
            sys::unshare(libc::CLONE_NEWNET)
                .map_err(|e| HostError::file(Path::new("unshare(CLONE_NEWNET)"), e))?;
            sys::mount(c"/proc/thread-self/ns/net", &target, c"none", libc::MS_BIND)
                .map_err(|e| HostError::file(&file, e))
        })
        .join()
        .unwrap_or_else(|_| Err(HostError::State("the namespace thread panicked".into())))
    });
    if made.is_err() {
        let _ = std::fs::remove_file(&file);
    }
    made
}

/// Removes network namespace `name` (`ip netns del NAME`): unmounts and
/// deletes its file. The kernel frees the namespace, and the devices in
/// it, once no process or socket holds it.
pub fn remove(name: &str) -> Result<(), HostError> {
    let file = path(name)?;
    let c = cstr(&file)?;
    if let Err(e) = sys::umount2(&c, libc::MNT_DETACH) {
        // EINVAL: not mounted (a file a failed add left); still remove it.
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(HostError::file(&file, e));
        }
    }
    std::fs::remove_file(&file).map_err(|e| HostError::file(&file, e))
}

/// The open file of namespace `name`.
fn open(name: &str) -> Result<(PathBuf, std::fs::File), HostError> {
    let file = path(name)?;
    let ns = std::fs::File::open(&file).map_err(|e| HostError::file(&file, e))?;
    Ok((file, ns))
}

/// Moves the calling thread into the namespace open as `ns`.
fn enter(file: &Path, ns: &std::fs::File) -> Result<(), HostError> {
    sys::setns(ns.as_raw_fd(), libc::CLONE_NEWNET).map_err(|e| {
        HostError::file(
            file,
            std::io::Error::other(format!("cannot enter the namespace: {e}")),
        )
    })
}

/// Gives the calling thread (already in a named namespace) a mount
/// namespace of its own with that namespace's sysfs on /sys, as `ip
/// netns exec` does for a process: /sys/class/net then lists the
/// namespace's devices. Nothing propagates back to the host's mounts.
fn mount_own_sys() -> Result<(), HostError> {
    let what = |step: &str, e| HostError::file(Path::new(step), e);
    sys::unshare(libc::CLONE_NEWNS).map_err(|e| what("unshare(CLONE_NEWNS)", e))?;
    sys::mount(c"", c"/", c"none", libc::MS_SLAVE | libc::MS_REC)
        .map_err(|e| what("make / a slave mount", e))?;
    // As iproute2: no sysfs there to unmount is fine; the new one covers it.
    let _ = sys::umount2(c"/sys", libc::MNT_DETACH);
    sys::mount(c"sysfs", c"/sys", c"sysfs", 0).map_err(|e| what("mount sysfs on /sys", e))
}

/// Runs `f` on a thread that entered namespace `name`, and, when
/// `own_sys`, a mount namespace of its own with the namespace's /sys.
fn run_on_thread<T: Send>(
    name: &str,
    own_sys: bool,
    f: impl FnOnce() -> Result<T, HostError> + Send,
) -> Result<T, HostError> {
    let (file, ns) = open(name)?;
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(&file, &ns)?;
            if own_sys {
                mount_own_sys()?;
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(HostError::State("the namespace thread panicked".into())))
    })
}

/// Runs `f` on a thread that has entered namespace `name`; the thread ends
/// when `f` returns, so no other code runs in the namespace by mistake.
/// /sys is the process's: see [`run_in_with_sys`].
pub fn run_in<T: Send>(
    name: &str,
    f: impl FnOnce() -> Result<T, HostError> + Send,
) -> Result<T, HostError> {
    run_on_thread(name, false, f)
}

/// [`run_in`], with the namespace's own /sys (device speeds, drivers,
/// queues) mounted for that thread alone: what a tune session or doctor
/// needs inside a lab host, in-process. The threads `f` starts share it.
pub fn run_in_with_sys<T: Send>(
    name: &str,
    f: impl FnOnce() -> Result<T, HostError> + Send,
) -> Result<T, HostError> {
    run_on_thread(name, true, f)
}

/// Runs `f` on a fresh thread inside namespace `name`, returning its
/// handle: sockets and netlink sockets that `f` opens, and the threads
/// it starts, live in that namespace; the rest of the process stays
/// where it is. The thread's result is `Err` (made by `err` from what
/// was being done and the OS error) when it could not enter the
/// namespace; then `f` never ran. /sys is not remounted.
pub fn spawn_in<T, E, F>(
    name: &str,
    f: F,
    err: fn(String, std::io::Error) -> E,
) -> Result<std::thread::JoinHandle<Result<T, E>>, E>
where
    T: Send + 'static,
    E: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let p = Path::new(NETNS_DIR).join(name);
    let file = std::fs::File::open(&p).map_err(|e| err(format!("open {}", p.display()), e))?;
    let label = format!("netns {name}");
    std::thread::Builder::new()
        .name(label.chars().take(15).collect())
        .spawn(move || {
            sys::setns(file.as_raw_fd(), libc::CLONE_NEWNET)
                .map_err(|e| err(format!("enter {label}"), e))?;
            drop(file);
            Ok(f())
        })
        .map_err(|e| err("start a thread".into(), e))
}
