//! Whether a test's figures can be trusted: did its ends have CPU to
//! spare? A test whose host had no idle CPU while other work ran, or
//! whose worker threads waited for a CPU that other work held, measured
//! the contention as much as the network (report 3's "cross-load
//! interference" seen from one test). [`judge`] reads what the engine
//! already records per side ([`CpuUsage`]); the verdict is kept in
//! [`crate::TestResult::contended`]. Waiting caused by the test's own
//! threads (more of them than cores) is not contention: other work must
//! have been there.

use crate::result::CpuUsage;

/// A worker thread that waited this much of the window (%) on a run
/// queue was starved: its peer's replies sat unread that long. A test's
/// own threads and softirq work make a worker wait too: up to 23% with
/// both ends of a stream on one 2-core host, measured on the project's
/// test cluster; a busy loop per core beside them made it 47-60%.
pub const STARVED_WAIT_PCT: f64 = 35.0;

/// ...when other work used at least this much of the host (% of one
/// core) at the time.
pub const STARVING_OTHERS_PCT: f64 = 50.0;

/// A host with less idle CPU than this (% of one core, summed over its
/// cores) had none to spare...
pub const IDLE_FLOOR_PCT: f64 = 25.0;

/// ...when other work than the test's own processes used at least this
/// much (% of one core). The test's own softirq work counts as other
/// work when ksoftirqd does it: up to 0.46 of a core on that cluster.
pub const OTHERS_FLOOR_PCT: f64 = 75.0;

/// Why a test with these ends' CPU figures is contended, or None when
/// neither end was. Ends with the same [`CpuUsage::host_id`] share one
/// host, so both processes count as the test's own work there.
pub fn judge(client: &CpuUsage, server: &CpuUsage) -> Option<String> {
    let shared = !client.host_id.is_empty() && client.host_id == server.host_id;
    let own = |c: &CpuUsage| {
        if shared {
            client.total_pct + server.total_pct
        } else {
            c.total_pct
        }
    };
    let mut why = Vec::new();
    for (end, c) in [("client", client), ("server", server)] {
        let Some((idle, others)) = load(c, own(c)) else {
            continue;
        };
        let worst = c.per_thread_wait_pct.iter().copied().fold(0.0, f64::max);
        if worst >= STARVED_WAIT_PCT && others >= STARVING_OTHERS_PCT {
            why.push(format!(
                "a {end} worker waited {worst:.0}% of the window for a CPU"
            ));
        }
        let host = match (shared, end) {
            (true, "server") => continue,
            (true, _) => "the host both ends share".to_string(),
            _ => format!("the {end}'s host"),
        };
        if idle < IDLE_FLOOR_PCT && others >= OTHERS_FLOOR_PCT {
            let n = c.per_core_pct.len();
            why.push(format!(
                "{host} had {:.2} of {n} cores idle while other work used {:.2}",
                idle / 100.0,
                others / 100.0
            ));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The idle CPU of a host over the window and what work other than `own`
/// (the test's, % of one core) used there, both % of one core; None
/// without per-core figures.
fn load(c: &CpuUsage, own: f64) -> Option<(f64, f64)> {
    let n = c.per_core_pct.len();
    if n == 0 {
        return None;
    }
    let busy: f64 = c.per_core_pct.iter().sum();
    Some(((n as f64 * 100.0 - busy).max(0.0), (busy - own).max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cores: &[f64], own: f64, host: &str) -> CpuUsage {
        CpuUsage {
            total_pct: own,
            per_core_pct: cores.to_vec(),
            host_id: host.into(),
            ..CpuUsage::default()
        }
    }

    #[test]
    fn a_busy_host_is_contended_only_when_the_work_is_not_the_test() {
        // Two cores full, the test's own process on one of them: contended.
        let why = judge(&cpu(&[100.0, 100.0], 100.0, "a"), &cpu(&[10.0], 5.0, "b"));
        let why = why.expect("contended");
        assert!(
            why.starts_with("the client's host had 0.00 of 2 cores idle"),
            "{why}"
        );
        assert!(why.contains("other work used 1.00"), "{why}");
        // Some other work, but less than the floor: not contended.
        let lighter = cpu(&[100.0, 100.0], 130.0, "a");
        assert_eq!(judge(&lighter, &cpu(&[10.0], 5.0, "b")), None);
        // Two cores full of the test itself: not contended.
        let own = cpu(&[100.0, 100.0], 190.0, "a");
        assert_eq!(judge(&own, &cpu(&[10.0], 5.0, "b")), None);
        // Idle CPU left: not contended, however much else ran.
        let idle = cpu(&[100.0, 50.0], 10.0, "a");
        assert_eq!(judge(&idle, &cpu(&[10.0], 5.0, "b")), None);
        // No per-core figures: nothing to judge.
        assert_eq!(judge(&cpu(&[], 10.0, "a"), &cpu(&[], 5.0, "b")), None);
    }

    #[test]
    fn ends_on_one_host_count_both_processes_as_the_test() {
        // Client 100% + server 90% on a full two-core host: the test itself.
        let (c, s) = (
            cpu(&[100.0, 100.0], 100.0, "h"),
            cpu(&[100.0, 100.0], 90.0, "h"),
        );
        assert_eq!(judge(&c, &s), None);
        // The same figures from two hosts: each sees the other's share.
        let s = cpu(&[100.0, 100.0], 90.0, "other");
        let why = judge(&c, &s).expect("contended");
        assert!(
            why.contains("client's host") && why.contains("server's host"),
            "{why}"
        );
        // Shared, with a third party: contended, named once.
        let (c, s) = (
            cpu(&[100.0, 100.0], 60.0, "h"),
            cpu(&[100.0, 100.0], 40.0, "h"),
        );
        let why = judge(&c, &s).expect("contended");
        assert!(why.starts_with("the host both ends share"), "{why}");
        assert_eq!(why.matches("the host").count(), 1, "{why}");
    }

    #[test]
    fn a_worker_starved_by_other_work_is_contended_but_not_by_its_own_test() {
        // Half a core idle, but 1.1 cores of other work and a worker that
        // waited 40% of the window.
        let mut s = cpu(&[80.0, 70.0], 40.0, "b");
        s.per_thread_wait_pct = vec![3.0, STARVED_WAIT_PCT + 5.0];
        let why = judge(&cpu(&[10.0], 5.0, "a"), &s).expect("contended");
        assert_eq!(why, "a server worker waited 40% of the window for a CPU");
        s.per_thread_wait_pct = vec![STARVED_WAIT_PCT - 1.0];
        assert_eq!(judge(&cpu(&[10.0], 5.0, "a"), &s), None);
        // More worker threads than cores: they wait for each other.
        let mut own = cpu(&[100.0, 100.0], 190.0, "b");
        own.per_thread_wait_pct = vec![50.0; 4];
        assert_eq!(judge(&cpu(&[10.0], 5.0, "a"), &own), None);
    }
}
