//! Named network namespaces, without iproute2: create one the way `ip
//! netns add` does (an nsfs bind mount at /run/netns/NAME), remove it the
//! way `ip netns del` does, and run code inside one on a thread of its own
//! (setns(CLONE_NEWNET) changes only the calling thread, which ends right
//! after). This is the crate's one syscall module: every `unsafe` is here.

use crate::HostError;
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

fn last_err(p: &Path) -> HostError {
    HostError::file(p, std::io::Error::last_os_error())
}

/// Makes /run/netns a shared mount point, so namespace mounts propagate
/// to other mount namespaces (what iproute2 does before the first add).
fn share_dir() -> Result<(), HostError> {
    let dir = Path::new(NETNS_DIR);
    std::fs::create_dir_all(dir).map_err(|e| HostError::file(dir, e))?;
    let c = cstr(dir)?;
    let none = c"none";
    let mut made_mount = false;
    loop {
        // SAFETY: every pointer is a NUL-terminated string that outlives the
        // call; a null data pointer is allowed for these flags.
        let rc = unsafe {
            libc::mount(
                c"".as_ptr(),
                c.as_ptr(),
                none.as_ptr(),
                libc::MS_SHARED | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) || made_mount {
            return Err(HostError::file(dir, e));
        }
        // Not a mount point yet: bind it onto itself, then share it.
        // SAFETY: as above.
        let rc = unsafe {
            libc::mount(
                c.as_ptr(),
                c.as_ptr(),
                none.as_ptr(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(last_err(dir));
        }
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
            // SAFETY: unshare takes no pointers; it changes only this
            // thread's network namespace (the thread ends after the mount).
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(last_err(Path::new("unshare(CLONE_NEWNET)")));
            }
            let me = c"/proc/thread-self/ns/net";
            // SAFETY: NUL-terminated strings that outlive the call.
            let rc = unsafe {
                libc::mount(
                    me.as_ptr(),
                    target.as_ptr(),
                    c"none".as_ptr(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            };
            if rc != 0 {
                return Err(last_err(&file));
            }
            Ok(())
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
    // SAFETY: a NUL-terminated string that outlives the call.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        let e = std::io::Error::last_os_error();
        // EINVAL: not mounted (a file a failed add left); still remove it.
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(HostError::file(&file, e));
        }
    }
    std::fs::remove_file(&file).map_err(|e| HostError::file(&file, e))
}

/// Runs `f` on a thread that has entered namespace `name`; the thread ends
/// when `f` returns, so no other code runs in the namespace by mistake.
pub fn run_in<T: Send>(
    name: &str,
    f: impl FnOnce() -> Result<T, HostError> + Send,
) -> Result<T, HostError> {
    let file = path(name)?;
    let ns = std::fs::File::open(&file).map_err(|e| HostError::file(&file, e))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: `ns` is an open namespace file that outlives the call;
            // setns has no memory-safety preconditions.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(HostError::file(
                    &file,
                    std::io::Error::other(format!(
                        "cannot enter the namespace: {}",
                        std::io::Error::last_os_error()
                    )),
                ));
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(HostError::State("the namespace thread panicked".into())))
    })
}
