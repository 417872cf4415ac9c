//! The harness's one unsafe module: reaping a child with its CPU time
//! (wait4), which std does not expose.

use std::io;

/// CPU seconds (user + system) a process used, read from /proc/PID/stat
/// (all its threads); None when the process is gone.
pub fn proc_cpu_s(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / clock_ticks())
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf reads a constant; no memory is touched.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// What a reaped child used.
pub struct Used {
    /// Its exit code, -1 when a signal ended it.
    pub code: i32,
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
}

/// Waits for child `pid`; returns its exit code and CPU time. (Not its
/// peak memory: a spawned child's ru_maxrss counts the spawning process's
/// memory at exec, so tools.rs samples VmHWM instead.)
pub fn wait_cpu(pid: u32) -> io::Result<Used> {
    let mut status = 0i32;
    // SAFETY: rusage is plain data the kernel fills.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to our status and rusage; pid is our child.
        let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut ru) };
        if r >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ok(Used {
        code,
        user_s: s(ru.ru_utime),
        sys_s: s(ru.ru_stime),
    })
}
