//! The engine in-process inside a lab's network namespaces: a server on
//! a thread that entered one host's namespace, and tests run from a
//! fresh thread that entered another's. Nothing is spawned and nothing
//! printed is parsed back; the engine's own types come back.

use crate::error::{ExperimentError, Result, failed};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use wirespeed_engine::{ClientConfig, Server, ServerConfig, run_test};
use wirespeed_lab::Lab;
use wirespeed_types::{TestResult, TestSpec};

/// A wirespeed server serving inside one host of a lab, on a thread of
/// this process; stopped (and joined) on drop, and gone with the process
/// however it ends.
pub struct LabServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), wirespeed_lab::LabError>>>,
}

/// Tests a lab's server runs at once: a victim and a loader test from
/// each of up to 63 other lab hosts.
const LAB_MAX_TESTS: u32 = 64;

impl LabServer {
    /// Starts a server on `port` (all addresses) in `host`'s namespace,
    /// with `wirespeed serve`'s defaults but room for a test beside one
    /// loader test per lab host (`--loaders-from`), and returns once it
    /// listens.
    pub fn start(lab: &Lab, host: &str, port: u16) -> Result<LabServer> {
        let nofile = wirespeed_engine::raise_fd_limit();
        let mut cfg = ServerConfig {
            port,
            max_tests: LAB_MAX_TESTS,
            ..ServerConfig::default()
        };
        cfg.limits.max_flows = wirespeed_engine::flow_limit_for(nofile);
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let s2 = stop.clone();
        let thread = wirespeed_lab::spawn_in(&lab.ns(host), move || {
            let server = match Server::bind(cfg) {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            // Errors after the start end this server only; the tests
            // against it then fail with the reason on their side.
            let _ = server.serve(s2);
        })?;
        let mut srv = LabServer {
            stop,
            thread: Some(thread),
        };
        let what = || format!("start the server on host {host}");
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(srv),
            Ok(Err(e)) => Err(failed(what(), e)),
            // The thread ended before binding: it could not enter the namespace.
            Err(_) => match srv.thread.take().map(JoinHandle::join) {
                Some(Ok(Err(e))) => Err(failed(what(), e)),
                _ => Err(failed(what(), "the server thread ended")),
            },
        }
    }
}

impl Drop for LabServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs `f` to its end on a fresh thread inside `host`'s namespace.
pub fn run_in<T: Send + 'static>(
    lab: &Lab,
    host: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    let t = wirespeed_lab::spawn_in(&lab.ns(host), f)?;
    match t.join() {
        Ok(r) => Ok(r?),
        Err(_) => Err(failed(
            format!("a test on host {host}"),
            "its thread panicked",
        )),
    }
}

/// Runs one test from `host`'s namespace.
pub fn test_in(lab: &Lab, host: &str, cfg: &ClientConfig, spec: &TestSpec) -> Result<TestResult> {
    let (cfg, spec) = (cfg.clone(), spec.clone());
    run_in(lab, host, move || run_test(&cfg, &spec, &mut |_| {}))?.map_err(ExperimentError::from)
}

/// Runs one test from `host`'s namespace beside `k` loaders (report 3's
/// interference): the loaders are stream tests against the same server
/// from the hosts `from` (their K flows spread over them in turn, one test
/// per host, a thread per flow), started first; the test starts once
/// every loader has reported a sample, and its result notes the loaders'
/// goodput. A loader that fails fails the test.
pub fn test_beside_loaders(
    lab: &Lab,
    host: &str,
    cfg: &ClientConfig,
    spec: &TestSpec,
    k: u32,
    from: &[String],
) -> Result<TestResult> {
    use wirespeed_engine::interference;
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    let mut loaders = Vec::new();
    for (h, n) in shares(k, from) {
        let mut ls = interference::loaders_beside(spec, wirespeed_types::Workload::Stream, n);
        ls.paths.clear();
        let (cfg, tx, i) = (cfg.clone(), tx.clone(), loaders.len());
        let t = wirespeed_lab::spawn_in(&lab.ns(h), move || {
            run_test(&cfg, &ls, &mut |_| {
                let _ = tx.send(i);
            })
        })?;
        loaders.push((h, t));
    }
    drop(tx);
    let started = interference::all_started(&rx, loaders.len(), interference::start_within(cfg));
    let victim = started.then(|| test_in(lab, host, cfg, spec));
    let mut bps = 0.0;
    for (h, t) in loaders {
        let what = format!("the {k} loaders' test from {h}");
        match t.join() {
            Ok(Ok(Ok(r))) => bps += r.throughput_bps,
            Ok(Ok(Err(e))) => return Err(failed(what, interference::loader_error(k, e))),
            Ok(Err(e)) => return Err(failed(what, e)),
            Err(_) => return Err(failed(what, "its thread panicked")),
        }
    }
    let Some(victim) = victim else {
        return Err(failed(format!("the {k} loaders"), "did not start"));
    };
    let mut v = victim?;
    v.notes.push(format!(
        "beside {k} loaders from {}: {:.2} Gbit/s together",
        from.join(","),
        bps / 1e9
    ));
    Ok(v)
}

/// `k` loaders over `hosts` in turn: each host with its count, those with
/// none left out.
fn shares(k: u32, hosts: &[String]) -> Vec<(&str, u32)> {
    let n = hosts.len().max(1) as u32;
    hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), k / n + u32::from((i as u32) < k % n)))
        .filter(|(_, c)| *c > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaders_are_spread_over_their_hosts_in_turn() {
        let hosts: Vec<String> = ["c2", "c3", "c4"].map(String::from).to_vec();
        assert_eq!(shares(4, &hosts), [("c2", 2), ("c3", 1), ("c4", 1)]);
        assert_eq!(shares(2, &hosts), [("c2", 1), ("c3", 1)]);
        assert_eq!(shares(0, &hosts), []);
    }
}
