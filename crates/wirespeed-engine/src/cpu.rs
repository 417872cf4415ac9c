//! CPU use over a window: the process (getrusage) and every core
//! (/proc/stat), so a saturated sender core is visible.

use crate::result::{CpuUsage, finite};
use crate::sys;
use std::time::Instant;

/// A point-in-time reading of process and per-core CPU counters.
#[derive(Debug, Clone)]
pub struct CpuSnapshot {
    at: Instant,
    user_us: u64,
    system_us: u64,
    /// (busy, total) jiffies per core.
    cores: Vec<(u64, u64)>,
}

/// Parses the per-core lines of /proc/stat into (busy, total) jiffies
/// (the fleet agent's facts sum them: how busy its host was between two
/// readings).
pub fn parse_proc_stat(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            let total: u64 = v.iter().take(8).sum();
            // idle (3) and iowait (4) are not busy.
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            (total.saturating_sub(idle), total)
        })
        .collect()
}

impl CpuSnapshot {
    /// Reads the counters now; missing /proc degrades to no per-core data.
    pub fn take() -> CpuSnapshot {
        let (user_us, system_us) = sys::process_cpu_us();
        let cores = std::fs::read_to_string("/proc/stat")
            .map(|t| parse_proc_stat(&t))
            .unwrap_or_default();
        CpuSnapshot {
            at: Instant::now(),
            user_us,
            system_us,
            cores,
        }
    }

    /// CPU use between `self` (earlier) and `later`.
    pub fn usage_until(&self, later: &CpuSnapshot) -> CpuUsage {
        let secs = later.at.duration_since(self.at).as_secs_f64();
        let pct = |us: u64| finite(us as f64 / 1e6 / secs * 100.0);
        let user_pct = pct(later.user_us.saturating_sub(self.user_us));
        let system_pct = pct(later.system_us.saturating_sub(self.system_us));
        let per_core_pct: Vec<f64> = self
            .cores
            .iter()
            .zip(&later.cores)
            .map(|(a, b)| {
                let busy = b.0.saturating_sub(a.0) as f64;
                let total = b.1.saturating_sub(a.1) as f64;
                finite(busy / total * 100.0).clamp(0.0, 100.0)
            })
            .collect();
        let max_core_pct = per_core_pct.iter().cloned().fold(0.0, f64::max);
        CpuUsage {
            user_pct,
            system_pct,
            total_pct: user_pct + system_pct,
            per_core_pct,
            max_core_pct,
            per_thread_pct: Vec::new(),
            per_thread_wait_pct: Vec::new(),
            host_id: host_id().to_string(),
        }
    }
}

/// The kernel's boot id (/proc/sys/kernel/random/boot_id), read once:
/// the same in every namespace and pod of one host. Empty when unreadable.
pub fn host_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
}

/// Nanoseconds the calling thread has waited on a run queue for a CPU
/// (the second field of /proc/thread-self/schedstat); None where the
/// kernel keeps no such count.
pub fn thread_run_wait_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_kernel_keeps_a_boot_id_and_run_queue_waits() {
        assert_eq!(super::host_id().len(), 36, "{}", super::host_id());
        assert!(super::thread_run_wait_ns().is_some());
    }

    use super::*;

    #[test]
    fn proc_stat_parses_cores_only() {
        let t = "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 30 10 0 0 0 0 0\nintr 1\n";
        let c = parse_proc_stat(t);
        assert_eq!(c, vec![(10, 50), (10, 50)]);
    }

    #[test]
    fn usage_is_finite_for_zero_window() {
        let a = CpuSnapshot::take();
        let u = a.usage_until(&a);
        assert!(u.total_pct.is_finite());
        assert!(u.per_core_pct.iter().all(|x| x.is_finite()));
    }
}
