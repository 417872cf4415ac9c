//! What the HTTP handlers share: the agent's identity and key, its fleet,
//! its tests' records, its metrics and the host's facts read last.

use super::api::RunRecord;
use super::config::AgentConfig;
use super::metrics::Metrics;
use crate::auth::Target;
use crate::auth::Verifier;
use crate::error::Result;
use crate::fleet::Fleet;
use crate::upload::Assembly;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The host's facts as last read, and when.
pub(super) struct Facts {
    pub(super) at: Option<Instant>,
    pub(super) json: Option<Result<Arc<serde_json::Value>, FactsError>>,
}

/// Why the host's facts could not be read; shared, as the cached answer
/// is served again until [`FACTS_TTL`] passes.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum FactsError {
    /// Reading the host failed.
    #[error("{0}")]
    Host(Arc<wirespeed_host::HostError>),
    /// The snapshot could not be encoded.
    #[error("{0}")]
    Encode(Arc<serde_json::Error>),
    /// The reading task ended without an answer.
    #[error("reading the host's facts failed")]
    Task(#[source] Arc<tokio::task::JoinError>),
}

/// Shared by the handlers.
pub(super) struct Shared {
    pub(super) name: String,
    pub(super) boot: String,
    pub(super) verifier: Mutex<Verifier>,
    pub(super) key: Vec<u8>,
    pub(super) fleet: RwLock<Option<Fleet>>,
    pub(super) pending: Mutex<Assembly>,
    pub(super) pinned: bool,
    pub(super) results: Mutex<BTreeMap<u64, RunRecord>>,
    pub(super) next_id: AtomicU64,
    pub(super) running: AtomicU64,
    pub(super) max_tests: usize,
    pub(super) test_timeout: Duration,
    pub(super) metrics: Metrics,
    pub(super) facts: tokio::sync::Mutex<Facts>,
    /// Set when the agent is stopping (a stop signal): `/healthz` answers
    /// 503 and no test is started; the engine server shares it.
    pub(super) stopping: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Probes (`POST /v1/probe`) in flight: at most
    /// [`super::probe::MAX_PROBES`], so probes to a silent peer cannot hold
    /// every request slot of the agent.
    pub(super) probes: AtomicU64,
}

/// How long read facts are served before they are read again.
pub(super) const FACTS_TTL: Duration = Duration::from_secs(5);

impl Shared {
    /// The handlers' state for an agent run with `cfg`, its boot id new.
    pub(super) fn new(cfg: &AgentConfig) -> Shared {
        let boot = crate::auth::new_boot_id();
        Shared {
            name: cfg.name.clone(),
            boot: boot.clone(),
            verifier: Mutex::new(Verifier::new(
                cfg.key.clone(),
                Target {
                    name: cfg.name.clone(),
                    boot,
                },
            )),
            key: cfg.key.clone(),
            pinned: cfg.fleet.is_some(),
            fleet: RwLock::new(cfg.fleet.clone()),
            pending: Mutex::new(Assembly::default()),
            results: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
            running: AtomicU64::new(0),
            max_tests: cfg.max_tests.max(1),
            test_timeout: cfg.test_timeout,
            metrics: Metrics::new(),
            facts: tokio::sync::Mutex::new(Facts {
                at: None,
                json: None,
            }),
            stopping: Default::default(),
            probes: AtomicU64::new(0),
        }
    }
}
