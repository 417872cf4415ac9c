//! Shared by the engine's integration tests: an in-process server.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use wirespeed_engine::result::TestResult;
use wirespeed_engine::{ClientConfig, EngineError, Server, ServerConfig, TestSpec, run_test};

/// A server on 127.0.0.1 with a free port, stopped on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(cfg: ServerConfig) -> TestServer {
        let server = Server::bind(ServerConfig {
            bind: "127.0.0.1".parse().unwrap(),
            port: 0,
            ..cfg
        })
        .unwrap();
        let addr = server.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let handle = Some(std::thread::spawn(move || server.serve(s2).unwrap()));
        TestServer { addr, stop, handle }
    }

    pub fn client(&self) -> ClientConfig {
        ClientConfig::new(&self.addr.to_string())
    }

    pub fn run(&self, spec: &TestSpec) -> Result<TestResult, EngineError> {
        run_test(&self.client(), spec, &mut |_| {})
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
