//! `--perf`: where the CPU goes in a stream run, from a one-second
//! system-wide `perf record` (cpu-clock, call graphs) in the middle of the
//! run, each sample sorted by the process it ran in (client, server, idle,
//! other) and the kernel path it sits on (copy in, copy out, data
//! arriving, ACKs, the pacing timer, ...). perf's own report works per
//! symbol; this sorting is what the comparison of two tools needs, and it
//! is a few string matches on `perf script` output.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Sample counts by (role, path), over one or more runs.
#[derive(Default, Clone)]
pub struct Profile {
    counts: BTreeMap<(&'static str, &'static str), u64>,
    total: u64,
}

/// Whether `perf record` works here (installed, and allowed to sample).
pub fn available() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["record", "-q", "-a", "-e", "cpu-clock", "-o", "/dev/null"])
        .args(["--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("perf: {e} (apt-get install -y linux-perf)"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "perf record failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Sleeps `at`, records every CPU for one second and sorts the samples;
/// `servers` are the server processes' pids.
pub fn record(at: Duration, servers: &[u32]) -> Result<Profile, String> {
    std::thread::sleep(at);
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let file = format!(
        "/tmp/wirespeed-bench-perf-{}-{}.data",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let run = |args: &[&str]| {
        Command::new("perf")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("perf {}: {e}", args[0]))
            .and_then(|o| {
                o.status
                    .success()
                    .then_some(o.stdout)
                    .ok_or_else(|| format!("perf {} failed ({})", args[0], o.status))
            })
    };
    let rec = ["record", "-q", "-a", "-g", "-e", "cpu-clock", "-F", "999"];
    let script = run(&[&rec[..], &["-o", &file, "--", "sleep", "1"]].concat())
        .and_then(|_| run(&["script", "-i", &file, "-F", "comm,pid,ip,sym"]));
    let _ = std::fs::remove_file(&file);
    Ok(parse(&String::from_utf8_lossy(&script?), servers))
}

/// Sorts `perf script -F comm,pid,ip,sym` output.
pub fn parse(script: &str, servers: &[u32]) -> Profile {
    let mut p = Profile::default();
    for block in script.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.trim().is_empty());
        let Some(head) = lines.next() else { continue };
        let mut words = head.split_whitespace();
        let comm = words.next().unwrap_or("");
        let Some(pid) = words.next_back().and_then(|w| w.parse::<u32>().ok()) else {
            continue;
        };
        let frames: Vec<&str> = lines
            .map(|l| {
                let l = l.trim();
                l.split_once(char::is_whitespace).map_or(l, |x| x.1).trim()
            })
            .collect();
        let role = if servers.contains(&pid) {
            "server"
        } else if comm == "swapper" {
            "idle"
        } else if ["ws-", "wirespeed", "iperf", "sockperf"]
            .iter()
            .any(|t| comm.starts_with(t))
        {
            "client"
        } else {
            "other"
        };
        *p.counts.entry((role, path(&frames))).or_default() += 1;
        p.total += 1;
    }
    p
}

/// The kernel path a sample's call chain (leaf first) sits on.
fn path(frames: &[&str]) -> &'static str {
    let leaf = frames.first().copied().unwrap_or("");
    let has = |f: &str| frames.iter().any(|x| x.starts_with(f));
    if leaf.contains("safe_halt") || leaf.contains("cpuidle") || has("do_idle") {
        "idle"
    } else if leaf == "_copy_from_iter" {
        "copy-in"
    } else if leaf == "_copy_to_iter" {
        "copy-out"
    } else if has("tcp_pace_kick") || has("hrtimer_run_softirq") {
        "pacing-timer"
    } else if has("tcp_data_queue") {
        "rx-data"
    } else if has("tcp_ack") {
        "ack"
    } else if has("tcp_sendmsg") {
        "send"
    } else if has("tcp_recvmsg") {
        "recv"
    } else if has("do_epoll_wait") || has("do_select") || has("do_sys_poll") {
        "wait"
    } else {
        "other"
    }
}

impl Profile {
    /// Adds another run's samples.
    pub fn add(&mut self, o: &Profile) {
        for (k, v) in &o.counts {
            *self.counts.entry(*k).or_default() += v;
        }
        self.total += o.total;
    }

    /// Percent of all samples per role and path, largest first per role.
    pub fn shares(&self) -> Vec<(&'static str, &'static str, f64)> {
        let mut v: Vec<_> = self
            .counts
            .iter()
            .map(|(&(r, k), &n)| (r, k, n as f64 * 100.0 / self.total.max(1) as f64))
            .collect();
        let order = |r: &str| {
            ["client", "server", "idle", "other"]
                .iter()
                .position(|x| *x == r)
        };
        v.sort_by(|a, b| order(a.0).cmp(&order(b.0)).then(b.2.total_cmp(&a.2)));
        v
    }

    /// One line per role, paths at >= 0.5% of all samples.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut last = "";
        let shares = self.shares();
        for &(r, k, pct) in &shares {
            if r != last {
                let role_total: f64 = shares.iter().filter(|x| x.0 == r).map(|x| x.2).sum();
                out.push_str(&format!("\n      {r:<6} {role_total:>5.1}%:"));
                last = r;
            }
            if pct >= 0.5 {
                out.push_str(&format!(" {k} {pct:.1}"));
            }
        }
        out
    }

    /// The shares as JSON ("role/path": percent).
    pub fn json(&self) -> serde_json::Value {
        self.shares()
            .into_iter()
            .map(|(r, k, p)| {
                (
                    format!("{r}/{k}"),
                    serde_json::json!((p * 10.0).round() / 10.0),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_sorted_by_role_and_path() {
        let script = "\
iperf3 100 
\tffffffff81000001 _copy_from_iter
\tffffffff81000002 tcp_sendmsg_locked
\tffffffff81000003 tcp_sendmsg

iperf3 200 
\tffffffff81000001 _copy_to_iter
\tffffffff81000002 tcp_recvmsg

ws-client-0 300 
\tffffffff81000001 _raw_spin_unlock_irqrestore
\tffffffff81000002 tcp_pace_kick
\tffffffff81000003 hrtimer_run_softirq

swapper 0 
\tffffffff81000001 pv_native_safe_halt

kworker/u4:1-ev 42 
\tffffffff81000001 tcp_data_queue
";
        let p = parse(script, &[200]);
        let s = p.shares();
        let get = |r: &str, k: &str| {
            s.iter()
                .find(|x| x.0 == r && x.1 == k)
                .map(|x| x.2)
                .unwrap_or(0.0)
        };
        assert_eq!(p.total, 5);
        assert_eq!(get("client", "copy-in"), 20.0);
        assert_eq!(get("server", "copy-out"), 20.0);
        assert_eq!(get("client", "pacing-timer"), 20.0);
        assert_eq!(get("idle", "idle"), 20.0);
        assert_eq!(get("other", "rx-data"), 20.0);
        assert!(p.render().contains("server  20.0%: copy-out 20.0"));
    }
}
