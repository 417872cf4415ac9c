//! What a workload's data plane is made of: its flow constructors for each
//! side and, for a workload that serves from a listener of its own during
//! the test (crr), that listener's flow ([`WorkloadDef`]), and what a
//! constructor gets ([`FlowArgs`], [`ListenerArgs`]). Each workload file
//! builds one `WORKLOAD` of these; [`crate::workloads`] lists them.

use crate::error::EngineError;
use crate::harness::{Counters, Flow};
use crate::sockets::ResolvedPath;
use crate::spec::{FlowKind, FlowPlan, SocketType, TestSpec, Workload, WorkloadInfo};
use socket2::Socket;
use std::sync::Arc;
use std::time::Duration;

/// What a flow constructor gets.
pub struct FlowArgs<'a> {
    /// The flow's place in the roster.
    pub plan: FlowPlan,
    /// Its connected (TCP) or registered (UDP) socket; None for workloads
    /// that open their own (crr).
    pub sock: Option<Socket>,
    /// Its path, resolved (client side).
    pub path: Option<&'a ResolvedPath>,
    /// Its counters.
    pub counters: Arc<Counters>,
    /// The test.
    pub spec: &'a TestSpec,
    /// The test's token.
    pub token: [u8; 16],
    /// Client (true) or server.
    pub client: bool,
    /// Remarks for the side's report.
    pub notes: &'a mut Vec<String>,
}

impl FlowArgs<'_> {
    /// Whether this end sends the bulk data (forward at the client,
    /// reverse at the server).
    pub fn sender(&self) -> bool {
        (self.plan.kind == FlowKind::Forward) == self.client
    }
}

/// Takes a flow's socket; an error when the side has none for it.
pub fn take_sock(a: &mut FlowArgs) -> Result<Socket, EngineError> {
    a.sock
        .take()
        .ok_or_else(|| EngineError::Spec(format!("flow {} has no connection", a.plan.id)))
}

/// What a listener flow gets (one per server worker).
pub struct ListenerArgs {
    /// The test's data listener.
    pub listener: Arc<Socket>,
    /// The test's token.
    pub token: [u8; 16],
    /// Counters by roster id.
    pub counters: Arc<Vec<Arc<Counters>>>,
    /// How long a new connection may take to send its preamble.
    pub preamble_timeout: Duration,
    /// `--breakdown`: the server's timestamp records, shared by workers.
    pub stamps: Option<Arc<crate::timestamps::SharedStamps>>,
}

/// A client-side flow constructor.
pub type ClientFn = fn(FlowArgs) -> Result<Box<dyn Flow>, EngineError>;
/// A server-side flow constructor; Ok(None) when the listener serves.
pub type ServerFn = fn(FlowArgs) -> Result<Option<Box<dyn Flow>>, EngineError>;
/// A server worker's listener flow.
pub type ListenerFn = fn(ListenerArgs) -> Box<dyn Flow>;

/// One workload's data plane.
pub struct WorkloadDef {
    /// Which workload.
    pub workload: Workload,
    /// Builds a client flow.
    pub client: ClientFn,
    /// Builds a server flow.
    pub server: ServerFn,
    /// Set when the server keeps the test's data listener open for the
    /// whole test and serves from it (the client then connects during the
    /// test, not before the start).
    pub listener: Option<ListenerFn>,
}

impl WorkloadDef {
    /// The workload's description.
    pub fn info(&self) -> &'static WorkloadInfo {
        self.workload.info()
    }

    /// TCP or UDP.
    pub fn socket(&self) -> SocketType {
        self.info().socket
    }

    /// Whether each flow is connected (or registered) before the start.
    pub fn connects_up_front(&self) -> bool {
        self.listener.is_none()
    }
}
