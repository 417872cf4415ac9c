//! The engine in-process inside a lab's network namespaces: a server on
//! a thread that entered one host's namespace, and tests run from a
//! fresh thread that entered another's. Nothing is spawned and nothing
//! printed is parsed back; the engine's own types come back.

use crate::error::{ExperimentError, Result, failed};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use wirespeed_engine::{ClientConfig, Server, ServerConfig, TestResult, TestSpec, run_test};
use wirespeed_lab::Lab;

/// A wirespeed server serving inside one host of a lab, on a thread of
/// this process; stopped (and joined) on drop, and gone with the process
/// however it ends.
pub struct LabServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), wirespeed_lab::LabError>>>,
}

impl LabServer {
    /// Starts a server on `port` (all addresses) in `host`'s namespace,
    /// with `wirespeed serve`'s defaults, and returns once it listens.
    pub fn start(lab: &Lab, host: &str, port: u16) -> Result<LabServer> {
        let nofile = wirespeed_engine::sys::raise_fd_limit();
        let mut cfg = ServerConfig {
            port,
            ..ServerConfig::default()
        };
        cfg.limits.max_flows = wirespeed_engine::server::flow_limit_for(nofile);
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
