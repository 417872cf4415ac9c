//! The controller: runs a [`Plan`] over a [`Fleet`] by asking each
//! client agent (HTTP, signed) to test its server agent, NIC pair by NIC
//! pair, workload by workload, round by round; an agent that stops
//! answering is marked down and the rest of the matrix goes on.

use crate::agent::{RunRecord, RunRequest, RunStarted, RunState};
use crate::analyze;
use crate::auth;
use crate::error::{FleetError, Result};
use crate::fleet::{AgentSpec, Fleet};
use crate::plan::{Job, Plan};
use crate::protocol;
use crate::transport::{
    AgentRequest, AgentResponse, AgentTransport, Direct, TransportError, TransportFactory,
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirespeed_types::fleet::{AgentStatus, FLEET_SCHEMA_VERSION, FleetResults, LinkTest};
use wirespeed_types::{PathSpec, TestSpec};

/// The largest fleet body sent in one `PUT /v1/fleet`: under the agent's
/// default 64 KiB body limit with room for headers; a larger fleet goes
/// in parts of at most this size.
pub const FLEET_BODY: usize = 48 * 1024;

/// Agents the controller checks, reads and sends the fleet to at once
/// before a run.
pub const SETUP_AT_ONCE: usize = 64;

/// One workload of a run: its label and spec (paths are set per NIC pair).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// Its label in results, e.g. `stream` or `rr-64k`.
    pub label: String,
    /// The test.
    pub spec: TestSpec,
}

/// Something that happened during a run, for a progress display.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A round began.
    Round {
        /// Its number, 0-based.
        round: usize,
        /// Rounds in the plan.
        of: usize,
        /// Jobs in it.
        jobs: usize,
    },
    /// A test ended (or was skipped).
    Test(Box<LinkTest>),
    /// An agent stopped answering.
    Down {
        /// The agent.
        agent: String,
        /// What failed.
        why: String,
    },
    /// An agent that went down was replaced ([`RunOptions::replace`]):
    /// tests go to its replacement from now on.
    Replaced {
        /// The agent (its fleet name, unchanged).
        agent: String,
        /// Where the replacement is reached, as its transport says.
        now: String,
    },
}

/// A progress callback.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Finds the replacement of an agent found down (on Kubernetes, the pod
/// its DaemonSet made again after the old one was deleted): its new entry
/// under the same name, or None when there is none in the finder's own
/// time bound.
pub type Replacer =
    Arc<dyn Fn(AgentSpec) -> crate::transport::BoxFuture<'static, Option<AgentSpec>> + Send + Sync>;

/// How a run goes.
#[derive(Clone)]
pub struct RunOptions {
    /// The workloads, each run over every NIC pair of every job.
    pub workloads: Vec<WorkloadSpec>,
    /// Repeats of each test; two or more measure the noise band.
    pub repeats: u32,
    /// The fleet key.
    pub key: Vec<u8>,
    /// Bound on each HTTP request to an agent.
    pub http_timeout: Duration,
    /// Time a test may take beyond its warm-up and duration.
    pub test_grace: Duration,
    /// Whether to send the fleet to each agent first (`PUT /v1/fleet`);
    /// agents pinned with `--fleet` keep their own.
    pub push_fleet: bool,
    /// Where progress goes.
    pub progress: Option<ProgressFn>,
    /// How each agent's HTTP API is reached; None: [`Direct`] HTTP to its
    /// `http` address.
    pub transport: Option<TransportFactory>,
    /// Tests measured by an earlier, interrupted run of the same plan
    /// (`--resume`): a test of the plan that one of these already
    /// measured (same workload, repeat, agents and NICs, no error) is
    /// taken from it, not measured again.
    pub earlier: Vec<LinkTest>,
    /// Asked once each time an agent goes down: when it finds a
    /// replacement, every agent is given the new fleet and the rest of
    /// the agent's tests go to it. None: a down agent stays down.
    pub replace: Option<Replacer>,
    /// How many times a contended test (an end's CPUs taken by other
    /// work) is measured again before it is kept as contended (0 by
    /// default; the CLI's `--retries` says 2).
    pub retries: u32,
}

impl RunOptions {
    /// Options for `workloads` with the key, one repeat.
    pub fn new(workloads: Vec<WorkloadSpec>, key: Vec<u8>) -> RunOptions {
        RunOptions {
            workloads,
            repeats: 1,
            key,
            http_timeout: Duration::from_secs(5),
            test_grace: Duration::from_secs(15),
            push_fleet: true,
            progress: None,
            transport: None,
            earlier: Vec::new(),
            replace: None,
            retries: 0,
        }
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("workloads", &self.workloads)
            .field("repeats", &self.repeats)
            .field("http_timeout", &self.http_timeout)
            .field("transport", &self.transport.as_ref().map(|_| "custom"))
            .finish_non_exhaustive()
    }
}

/// An agent's HTTP API, seen from the controller: each request is built
/// as the agent sees it (signed over the agent's path, for the agent's
/// name and boot id) and carried by an [`AgentTransport`], each bounded
/// by the client's timeout.
#[derive(Clone)]
pub struct AgentClient {
    transport: Arc<dyn AgentTransport>,
    name: String,
    signs_for: String,
    key: Vec<u8>,
    timeout: Duration,
    /// What `/healthz` told last: who to sign for.
    target: Arc<Mutex<Option<auth::Target>>>,
}

impl AgentClient {
    /// A client for `agent` over HTTP straight to its `http` address
    /// ([`Direct`]), signing with `key`; each request bounded by `timeout`.
    pub fn new(agent: &AgentSpec, key: &[u8], timeout: Duration) -> Result<AgentClient> {
        let direct = Arc::new(Direct::new(agent, timeout)?);
        Ok(AgentClient::with_transport(agent, key, timeout, direct))
    }

    /// A client for `agent` whose requests go through `transport`.
    pub fn with_transport(
        agent: &AgentSpec,
        key: &[u8],
        timeout: Duration,
        transport: Arc<dyn AgentTransport>,
    ) -> AgentClient {
        AgentClient {
            transport,
            name: agent.name.clone(),
            signs_for: agent.signs_for().to_string(),
            key: key.to_vec(),
            timeout,
            target: Arc::default(),
        }
    }

    fn err(&self, message: impl Into<String>) -> FleetError {
        FleetError::Agent {
            agent: self.name.clone(),
            message: message.into(),
        }
    }

    /// A body of ours could not be encoded.
    fn encode_err(&self, error: serde_json::Error) -> FleetError {
        FleetError::Encode {
            what: format!("a request to agent {}", self.name),
            error,
        }
    }

    /// The agent's boot id as this client last read it (no request).
    pub(crate) fn known_boot(&self) -> Option<String> {
        self.known_target().map(|t| t.boot)
    }

    fn known_target(&self) -> Option<auth::Target> {
        self.target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sends one request as it is. Any answer is Ok, whatever its status.
    async fn send(
        &self,
        what: &'static str,
        method: &str,
        path: &str,
        mut headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<AgentResponse> {
        headers.push((protocol::HEADER.to_string(), protocol::statement().into()));
        let req = AgentRequest {
            method: method.to_string(),
            path: path.to_string(),
            headers,
            body,
        };
        let error = match tokio::time::timeout(self.timeout, self.transport.send(req)).await {
            Ok(Ok(r)) => return Ok(r),
            Ok(Err(error)) => error,
            Err(_) => TransportError::TimedOut {
                after: self.timeout,
            },
        };
        Err(FleetError::Unreachable {
            agent: self.name.clone(),
            what,
            at: self.transport.describe(),
            error: Box::new(error),
        })
    }

    /// Sends one request signed with the fleet key for the agent (its
    /// name and boot id from `/healthz`, read first when not yet known),
    /// over all of `path` as sent (a `?query` in it included).
    /// A 401 may mean the agent restarted: its boot id is read again and,
    /// when it changed, the request is signed anew and sent once more.
    /// Any answer is Ok, whatever its status.
    async fn call(
        &self,
        what: &'static str,
        method: &str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<AgentResponse> {
        let mut retried = false;
        loop {
            let target = match self.known_target() {
                Some(t) => t,
                None => self.health().await?,
            };
            let mut headers = Vec::new();
            if !body.is_empty() {
                headers.push(("content-type".to_string(), "application/json".to_string()));
            }
            for (k, v) in auth::sign(&self.key, &target, method, path, &body) {
                headers.push((k.to_string(), v));
            }
            let r = self.send(what, method, path, headers, body.clone()).await?;
            if r.status != 401 || retried {
                return Ok(r);
            }
            retried = true;
            match self.health().await {
                Ok(now) if now != target => continue,
                _ => return Ok(r),
            }
        }
    }

    fn answer<T: serde::de::DeserializeOwned>(
        &self,
        what: &'static str,
        r: AgentResponse,
    ) -> Result<T> {
        if !(200..300).contains(&r.status) {
            let msg = serde_json::from_slice::<crate::agent::ErrorBody>(&r.body)
                .map(|b| b.error)
                .unwrap_or_else(|_| {
                    String::from_utf8_lossy(&r.body[..r.body.len().min(200)]).into_owned()
                });
            return Err(FleetError::Status {
                agent: self.name.clone(),
                what,
                status: r.status,
                said: Some(msg),
            });
        }
        serde_json::from_slice(&r.body).map_err(|error| FleetError::Unreadable {
            agent: self.name.clone(),
            what,
            error,
        })
    }

    /// `GET /healthz`: the agent's name and boot id, which signed
    /// requests name. Through a transport that does not vouch for the
    /// agent ([`AgentTransport::vouches_for_agent`]) the name must be the
    /// fleet entry's [`AgentSpec::signs_for`].
    pub async fn health(&self) -> Result<auth::Target> {
        let r = self
            .send("health check", "GET", "/healthz", Vec::new(), Vec::new())
            .await?;
        if r.status == 503 && r.body.starts_with(b"stopping ") {
            return Err(FleetError::Stopping {
                agent: self.name.clone(),
            });
        }
        if !(200..300).contains(&r.status) {
            return Err(FleetError::Status {
                agent: self.name.clone(),
                what: "health check",
                status: r.status,
                said: None,
            });
        }
        let text = String::from_utf8_lossy(&r.body[..r.body.len().min(400)]).into_owned();
        let mut words = text.split_whitespace();
        let (Some("ok"), Some(name), Some(boot)) = (words.next(), words.next(), words.next())
        else {
            return Err(self.err(format!(
                "health check: {:?} is not `ok NAME BOOT`: is this a wirespeed agent?",
                text.trim()
            )));
        };
        let stated = protocol::Stated::parse(&words.collect::<Vec<_>>().join(" "));
        protocol::agree_fleet("runner", &stated, "agent").map_err(|error| FleetError::Version {
            agent: self.name.clone(),
            error,
        })?;
        if !self.transport.vouches_for_agent() && name != self.signs_for {
            return Err(self.err(format!(
                "the agent at {} runs as {:?} (its --name), not {:?}: start it with --name {} or set agent_name = {:?} in the fleet file",
                self.transport.describe(),
                name,
                self.signs_for,
                self.signs_for,
                name
            )));
        }
        let t = auth::Target {
            name: name.to_string(),
            boot: boot.to_string(),
        };
        *self.target.lock().unwrap_or_else(|p| p.into_inner()) = Some(t.clone());
        Ok(t)
    }

    /// `GET /v1/facts`: the agent's host snapshot.
    pub async fn facts(&self) -> Result<wirespeed_host::Snapshot> {
        Ok(self.facts_with_cpu().await?.0)
    }

    /// `GET /v1/facts`: the agent's host snapshot and its CPU counters
    /// read now (None from an agent of an earlier release).
    pub async fn facts_with_cpu(
        &self,
    ) -> Result<(
        wirespeed_host::Snapshot,
        Option<wirespeed_types::fleet::CpuTicks>,
    )> {
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(flatten)]
            snapshot: wirespeed_host::Snapshot,
            #[serde(default)]
            cpu_ticks: Option<wirespeed_types::fleet::CpuTicks>,
        }
        let r = self
            .call("read facts", "GET", "/v1/facts", Vec::new())
            .await?;
        let a: Answer = self.answer("read facts", r)?;
        Ok((a.snapshot, a.cpu_ticks))
    }

    /// `POST /v1/probe`: whether this agent reaches `peer`'s HTTP port
    /// (waiting at most `wait`).
    pub async fn probe(&self, peer: &str, wait: Duration) -> Result<crate::agent::ProbeAnswer> {
        let req = crate::agent::ProbeRequest {
            peer: peer.to_string(),
            wait_ms: Some(wait.as_millis().clamp(1, u128::from(u64::MAX)) as u64),
        };
        let body = serde_json::to_vec(&req).map_err(|e| self.encode_err(e))?;
        let r = self.call("probe", "POST", "/v1/probe", body).await?;
        self.answer("probe", r)
    }

    /// `PUT /v1/fleet`, or `PUT /v1/fleet/part` for each part of a fleet
    /// over [`FLEET_BODY`] bytes ([`crate::upload`]); Ok(false) when
    /// the agent's fleet is pinned.
    pub async fn push_fleet(&self, fleet: &Fleet) -> Result<bool> {
        let body = serde_json::to_vec(fleet).map_err(|e| self.encode_err(e))?;
        if body.len() <= FLEET_BODY {
            let r = self.call("/v1/fleet", "PUT", "/v1/fleet", body).await?;
            return self.fleet_answer(r);
        }
        let parts = crate::upload::split(fleet, FLEET_BODY).map_err(|error| FleetError::Parts {
            agent: self.name.clone(),
            error,
        })?;
        let count = parts.len();
        for (i, p) in parts.into_iter().enumerate() {
            let body = serde_json::to_vec(&p).map_err(|e| self.encode_err(e))?;
            let r = self
                .call("/v1/fleet", "PUT", "/v1/fleet/part", body)
                .await?;
            // The last part installs the fleet (204); 202 there means another
            // upload replaced this one on the agent half-way.
            if i + 1 == count && r.status == 202 {
                return Err(self.err(
                    "set the fleet: another upload replaced this one on the agent before its last part: run again",
                ));
            }
            if !self.fleet_answer(r)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Ok(false) on 409 (pinned), Ok(true) on success, else the error.
    fn fleet_answer(&self, r: AgentResponse) -> Result<bool> {
        match r.status {
            409 => Ok(false),
            200..300 => Ok(true),
            _ => self
                .answer::<serde_json::Value>("set the fleet", r)
                .map(|_| true),
        }
    }

    /// `POST /v1/run`: starts a test; its id.
    pub async fn start(&self, req: &RunRequest) -> Result<u64> {
        let body = serde_json::to_vec(req).map_err(|e| self.encode_err(e))?;
        let r = self.call("/v1/run", "POST", "/v1/run", body).await?;
        Ok(self.answer::<RunStarted>("start a test", r)?.id)
    }

    /// `GET /v1/results/{id}`.
    pub async fn record(&self, id: u64) -> Result<RunRecord> {
        let path = format!("/v1/results/{id}");
        let r = self.call("read a result", "GET", &path, Vec::new()).await?;
        self.answer("read a result", r)
    }
}

/// Where agents stand during a run.
struct Board {
    down: Vec<Option<String>>,
    /// Replacements of agents that went down: their entry and client.
    now: Vec<Option<(AgentSpec, AgentClient)>>,
    /// Whether a replacement was looked for since the agent last went down.
    sought: Vec<bool>,
    /// Why the way to the agents (a relay) is out for good, once it is.
    relay: Option<Arc<TransportError>>,
    /// What happened that the results should say.
    notes: Vec<String>,
}

impl Board {
    fn new(n: usize) -> Board {
        Board {
            down: vec![None; n],
            now: vec![None; n],
            sought: vec![false; n],
            relay: None,
            notes: Vec::new(),
        }
    }
}

struct Ctx<'a> {
    fleet: &'a Fleet,
    clients: Vec<AgentClient>,
    opts: &'a RunOptions,
    board: Mutex<Board>,
    /// One replacement at a time.
    reviving: tokio::sync::Mutex<()>,
}

impl Ctx<'_> {
    fn new<'a>(fleet: &'a Fleet, clients: Vec<AgentClient>, opts: &'a RunOptions) -> Ctx<'a> {
        Ctx {
            fleet,
            clients,
            opts,
            board: Mutex::new(Board::new(fleet.agents.len())),
            reviving: tokio::sync::Mutex::new(()),
        }
    }

    fn board(&self) -> std::sync::MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Agent `i`'s entry now: its replacement's, if it was replaced.
    fn spec(&self, i: usize) -> AgentSpec {
        match &self.board().now[i] {
            Some((a, _)) => a.clone(),
            None => self.fleet.agents[i].clone(),
        }
    }

    /// The client of agent `i` now.
    fn client(&self, i: usize) -> AgentClient {
        match &self.board().now[i] {
            Some((_, c)) => c.clone(),
            None => self.clients[i].clone(),
        }
    }

    /// Agent `i` is down: asks [`RunOptions::replace`] (once since it went
    /// down) for its replacement and, when one answers, gives every agent
    /// the new fleet and tests against it from now on. Whether `i` is up.
    async fn revive(&self, i: usize) -> bool {
        let Some(replace) = &self.opts.replace else {
            return false;
        };
        let _one = self.reviving.lock().await;
        {
            let mut b = self.board();
            if b.down[i].is_none() {
                return true;
            }
            if std::mem::replace(&mut b.sought[i], true) {
                return false;
            }
        }
        let old = self.spec(i);
        let Some(spec) = replace(old.clone()).await else {
            return false;
        };
        let Ok(client) = client_of(&spec, self.opts) else {
            return false;
        };
        if client.health().await.is_err() {
            return false;
        }
        if self.opts.push_fleet {
            self.push_fleet_with(i, &spec, &client).await;
        }
        let now = client.transport.describe();
        let name = self.fleet.agents[i].name.clone();
        let how = if old.labels == spec.labels && old.http == spec.http {
            "came back"
        } else {
            "was replaced"
        };
        {
            let mut b = self.board();
            let why = b.down[i].clone().unwrap_or_default();
            b.notes
                .push(format!("agent {name} went down ({why}) and {how}: {now}"));
            b.now[i] = Some((spec, client));
            b.down[i] = None;
            b.sought[i] = false;
        }
        if let Some(p) = &self.opts.progress {
            p(&Progress::Replaced { agent: name, now });
        }
        true
    }

    /// Gives every agent the fleet with agent `i` as `spec` (reached by
    /// `client`): the others find it by name at its new address.
    async fn push_fleet_with(&self, i: usize, spec: &AgentSpec, client: &AgentClient) {
        let fleet = Fleet {
            agents: (0..self.fleet.agents.len())
                .map(|j| if j == i { spec.clone() } else { self.spec(j) })
                .collect(),
        };
        for j in 0..fleet.agents.len() {
            let c = if j == i {
                client.clone()
            } else {
                self.client(j)
            };
            let _ = c.push_fleet(&fleet).await;
        }
    }

    /// After a failed request to agent `i`: whether the relay that reaches
    /// it was out (then the failure is not the agent's), and how long it
    /// was; Err when the relay stayed out past its bound (recorded: the
    /// rest of the run is skipped).
    async fn relay_was_out(&self, i: usize) -> Result<Duration, Arc<TransportError>> {
        match self.client(i).transport.wait_relay().await {
            Ok(w) => Ok(w),
            Err(why) => Err(self.board().relay.get_or_insert(Arc::new(why)).clone()),
        }
    }

    /// Why tests cannot go on at all (the relay is out for good).
    fn relay_out(&self) -> Option<Arc<TransportError>> {
        self.board().relay.clone()
    }
    fn down_reason(&self, i: usize) -> Option<String> {
        self.board().down[i].clone()
    }

    fn mark_down(&self, i: usize, why: String) {
        let mut b = self.board();
        if b.down[i].is_none() {
            b.down[i] = Some(why.clone());
            drop(b);
            if let Some(p) = &self.opts.progress {
                p(&Progress::Down {
                    agent: self.fleet.agents[i].name.clone(),
                    why,
                });
            }
        }
    }

    fn report(&self, t: &LinkTest) {
        if let Some(p) = &self.opts.progress {
            p(&Progress::Test(Box::new(t.clone())));
        }
    }
}

/// Runs `plan` over `fleet` (blocking; builds its own runtime). From async
/// code, use [`run_async`].
pub fn run(fleet: &Fleet, plan: &Plan, opts: &RunOptions) -> Result<FleetResults> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FleetError::io("start the controller's runtime", e))?;
    rt.block_on(run_async(fleet, plan, opts))
}

/// Runs `plan` over `fleet`.
pub async fn run_async(fleet: &Fleet, plan: &Plan, opts: &RunOptions) -> Result<FleetResults> {
    fleet.validate()?;
    plan.check()?;
    if plan.agents != fleet.agents.len() {
        return Err(FleetError::Plan(format!(
            "the plan is for {} agents, the fleet has {}",
            plan.agents,
            fleet.agents.len()
        )));
    }
    if opts.workloads.is_empty() {
        return Err(FleetError::Plan("no workload to run".into()));
    }
    let started = Instant::now();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let clients = fleet
        .agents
        .iter()
        .map(|a| client_of(a, opts))
        .collect::<Result<Vec<_>>>()?;
    let ctx = Ctx::new(fleet, clients, opts);
    let mut notes = Vec::new();
    // Health, facts and the fleet, SETUP_AT_ONCE agents at a time.
    let first = futures_join_bounded(
        SETUP_AT_ONCE,
        ctx.clients.iter().map(|c| async {
            c.health().await?;
            let facts = c.facts().await.ok();
            let pushed = if opts.push_fleet {
                Some(c.push_fleet(fleet).await?)
            } else {
                None
            };
            Ok::<_, FleetError>((facts, pushed))
        }),
    )
    .await;
    let mut snapshots = Vec::new();
    for (i, r) in first.into_iter().enumerate() {
        match r {
            Ok((facts, pushed)) => {
                if pushed == Some(false) {
                    notes.push(format!(
                        "agent {} keeps the fleet it was started with (--fleet)",
                        fleet.agents[i].name
                    ));
                }
                snapshots.push(facts);
            }
            Err(e) => {
                ctx.mark_down(i, e.to_string());
                snapshots.push(None);
            }
        }
    }
    let mut tests = Vec::new();
    for (ri, round) in plan.rounds.iter().enumerate() {
        if let Some(p) = &opts.progress {
            p(&Progress::Round {
                round: ri,
                of: plan.rounds.len(),
                jobs: round.jobs.len(),
            });
        }
        let done = futures_join(round.jobs.iter().map(|j| run_job(&ctx, ri, *j))).await;
        tests.extend(done.into_iter().flatten());
    }
    let board = ctx.board.into_inner().unwrap_or_else(|p| p.into_inner());
    notes.extend(board.notes.iter().cloned());
    let agents: Vec<AgentStatus> = fleet
        .agents
        .iter()
        .zip(&board.down)
        .zip(&snapshots)
        .map(|((a, down), snap)| AgentStatus {
            name: a.name.clone(),
            up: down.is_none(),
            error: down.clone(),
            facts: snap.as_ref().map(|s| analyze::host_facts(a, s)),
        })
        .collect();
    let mut out = FleetResults {
        schema_version: FLEET_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        pattern: plan.pattern.name().to_string(),
        concurrent: plan.concurrent,
        rounds: plan.rounds.len() as u32,
        repeats: opts.repeats.max(1),
        started_unix,
        elapsed_s: 0.0,
        agents,
        tests,
        matrices: Vec::new(),
        outliers: Vec::new(),
        verdict: None,
        notes,
        partial: false,
    };
    let snaps: Vec<(String, wirespeed_host::Snapshot)> = fleet
        .agents
        .iter()
        .zip(snapshots)
        .filter_map(|(a, s)| s.map(|s| (a.name.clone(), s)))
        .collect();
    analyze::analyze(&mut out, &snaps);
    out.elapsed_s = started.elapsed().as_secs_f64();
    Ok(out)
}

/// The client of `agent`, through `opts.transport` when set.
pub fn client_of(agent: &AgentSpec, opts: &RunOptions) -> Result<AgentClient> {
    match &opts.transport {
        Some(make) => Ok(AgentClient::with_transport(
            agent,
            &opts.key,
            opts.http_timeout,
            make(agent)?,
        )),
        None => AgentClient::new(agent, &opts.key, opts.http_timeout),
    }
}

/// Runs one job now, outside a plan (the watcher's unit): every workload
/// of `opts` over each NIC pair; an agent found down is down for this
/// job only.
pub(crate) async fn run_job_now(
    fleet: &Fleet,
    clients: Vec<AgentClient>,
    opts: &RunOptions,
    job: Job,
) -> Vec<LinkTest> {
    let ctx = Ctx::new(fleet, clients, opts);
    run_job(&ctx, 0, job).await
}

/// Joins futures, keeping their order.
async fn futures_join<F: std::future::Future>(fs: impl Iterator<Item = F>) -> Vec<F::Output> {
    futures_join_bounded(usize::MAX, fs).await
}

/// Joins futures, keeping their order, with at most `limit` started and
/// unfinished at once (a future does nothing until first polled): the
/// controller talks to a thousand agents without a thousand connections.
pub(crate) async fn futures_join_bounded<F: std::future::Future>(
    limit: usize,
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    // Every future is polled by this task: no 'static bound, no spawn.
    let mut fs: Vec<_> = fs.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = fs.iter().map(|_| None).collect();
    let mut started = vec![false; fs.len()];
    let mut active = 0usize;
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for ((f, o), s) in fs.iter_mut().zip(out.iter_mut()).zip(started.iter_mut()) {
            if o.is_some() {
                continue;
            }
            if !*s {
                if active >= limit {
                    pending = true;
                    continue;
                }
                *s = true;
                active += 1;
            }
            match f.as_mut().poll(cx) {
                std::task::Poll::Ready(v) => {
                    *o = Some(v);
                    active -= 1;
                }
                std::task::Poll::Pending => pending = true,
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}

/// Runs one job: every workload, repeat and NIC pair, in turn.
async fn run_job(ctx: &Ctx<'_>, round: usize, job: Job) -> Vec<LinkTest> {
    let mut out = Vec::new();
    // Names and NIC names: a replaced agent keeps them; the addresses are
    // read as each test starts ([`path_now`]).
    let (ca, sa) = (ctx.spec(job.client), ctx.spec(job.server));
    for w in &ctx.opts.workloads {
        for repeat in 0..ctx.opts.repeats.max(1) {
            for (cn, sn) in ca.nic_pairs(&sa) {
                let mut t = LinkTest {
                    workload: w.label.clone(),
                    round: round as u32,
                    repeat,
                    client: ca.name.clone(),
                    server: sa.name.clone(),
                    client_nic: cn.map(|n| n.name.clone()).unwrap_or_default(),
                    server_nic: sn.map(|n| n.name.clone()).unwrap_or_default(),
                    ..LinkTest::default()
                };
                if let Some(e) = ctx.opts.earlier.iter().find(|e| same_case(e, &t)) {
                    let e = LinkTest {
                        round: t.round,
                        ..e.clone()
                    };
                    ctx.report(&e);
                    out.push(e);
                    continue;
                }
                if let Some(why) = skip_reason(ctx, job).await {
                    t.error = Some(why);
                    ctx.report(&t);
                    out.push(t);
                    continue;
                }
                measure(ctx, job, w, (cn, sn), &mut t).await;
                ctx.report(&t);
                out.push(t);
            }
        }
    }
    out
}

/// Measures `t` (workload `w` over the NIC pair `nics`) into it; a
/// contended result ([`wirespeed_types::contention`]) is measured again,
/// up to [`RunOptions::retries`] times, and the last one kept says in how
/// many tries it was contended.
async fn measure(
    ctx: &Ctx<'_>,
    job: Job,
    w: &WorkloadSpec,
    nics: (
        Option<&crate::fleet::NicSpec>,
        Option<&crate::fleet::NicSpec>,
    ),
    t: &mut LinkTest,
) {
    let tries = ctx.opts.retries.saturating_add(1);
    for attempt in 1..=tries {
        let mut spec = w.spec.clone();
        spec.paths = path_now(ctx, job, nics.0, nics.1);
        let req = RunRequest {
            peer: ctx.spec(job.server).name.clone(),
            spec,
            label: Some(w.label.clone()),
        };
        let rec = match one_test(ctx, job, &req).await {
            Ok(rec) => rec,
            Err(e) => {
                t.error = Some(e.to_string());
                return;
            }
        };
        t.concurrent_with = rec.concurrent_with;
        let Some(mut r) = rec.result else {
            return;
        };
        t.throughput_bps = r.throughput_bps;
        t.transactions_per_s = r.transactions_per_s;
        t.p50_us = r.latency.as_ref().map(|l| l.p50_us);
        t.p99_us = r.latency.as_ref().map(|l| l.p99_us);
        let again = r.contended.is_some() && attempt < tries;
        if attempt > 1
            && let Some(why) = &mut r.contended
        {
            why.push_str(&format!(" (contended in each of {attempt} tries)"));
        }
        t.result = Some(r);
        if !again {
            return;
        }
    }
}

/// The path of the NIC pair `cn`, `sn` as the agents of `job` are now
/// (a replaced agent has new addresses under the same NIC names).
fn path_now(
    ctx: &Ctx<'_>,
    job: Job,
    cn: Option<&crate::fleet::NicSpec>,
    sn: Option<&crate::fleet::NicSpec>,
) -> Vec<PathSpec> {
    let (c, s) = (ctx.spec(job.client), ctx.spec(job.server));
    let addr = |a: &AgentSpec, n: Option<&crate::fleet::NicSpec>| {
        let n = n?;
        a.nics.iter().find(|x| x.name == n.name).map(|x| x.address)
    };
    match (addr(&c, cn), addr(&s, sn)) {
        (Some(c), Some(s)) => vec![PathSpec {
            local: Some(c.to_string()),
            remote: s.to_string(),
        }],
        _ => Vec::new(),
    }
}

/// Why the next test of `job` cannot run: the relay is out for good, or
/// one of its agents is down and has no replacement; None to run it.
async fn skip_reason(ctx: &Ctx<'_>, job: Job) -> Option<String> {
    if let Some(why) = ctx.relay_out() {
        return Some(format!("skipped: {why}"));
    }
    for i in [job.client, job.server] {
        if ctx.down_reason(i).is_some() && !ctx.revive(i).await {
            return Some(format!(
                "skipped: agent {} is down",
                ctx.fleet.agents[i].name
            ));
        }
    }
    None
}

/// Whether `earlier` measured the test `planned` stands for: the same
/// workload, repeat, agents and NICs, and no error.
pub fn same_case(earlier: &LinkTest, planned: &LinkTest) -> bool {
    earlier.error.is_none()
        && earlier.workload == planned.workload
        && earlier.repeat == planned.repeat
        && earlier.client == planned.client
        && earlier.server == planned.server
        && earlier.client_nic == planned.client_nic
        && earlier.server_nic == planned.server_nic
}

/// Why a test of a run has no result (its text goes in the results).
#[derive(Debug, thiserror::Error)]
enum TestError {
    /// The test could not be started on the client agent.
    #[error("{0}")]
    Start(FleetError),
    /// The relay to the agents stayed out: the rest of the run is skipped.
    #[error("{0}")]
    Relay(Arc<TransportError>),
    /// The client agent stopped answering mid-test.
    #[error("interrupted: agent {agent} went away mid-test ({error})")]
    WentAway {
        /// The client agent.
        agent: String,
        /// Its last failed request.
        error: FleetError,
    },
    /// The test did not end in time.
    #[error("agent {agent}: test {id} did not end in time")]
    Late {
        /// The client agent.
        agent: String,
        /// The test's id on it.
        id: u64,
    },
    /// The test failed: what the client agent's record says.
    #[error("agent {agent}: {said}")]
    Failed {
        /// The client agent.
        agent: String,
        /// Its record's error.
        said: String,
    },
}

/// Starts a test on the client agent and waits for its record; on
/// failure finds out which agent is gone and marks it down. A relay's
/// outage (the API server restarting) is waited out, not held against
/// the agents.
async fn one_test(ctx: &Ctx<'_>, job: Job, req: &RunRequest) -> Result<RunRecord, TestError> {
    let client = ctx.client(job.client);
    let agent = ctx.fleet.agents[job.client].name.clone();
    let id = start_test(ctx, job, &client, req).await?;
    let s = &req.spec;
    let mut deadline =
        Instant::now() + Duration::from_secs_f64(s.duration_s + s.warmup_s) + ctx.opts.test_grace;
    let mut misses = 0;
    let rec = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        match client.record(id).await {
            Ok(r) if r.state != RunState::Running => break r,
            Ok(_) => misses = 0,
            Err(error) => match ctx
                .relay_was_out(job.client)
                .await
                .map_err(TestError::Relay)?
            {
                w if !w.is_zero() => deadline += w,
                _ => {
                    misses += 1;
                    if misses >= 3 {
                        ctx.mark_down(job.client, error.to_string());
                        return Err(TestError::WentAway { agent, error });
                    }
                }
            },
        }
        if Instant::now() > deadline {
            let e = TestError::Late { agent, id };
            check_server(ctx, job, &format!("test {id} did not end in time")).await?;
            return Err(e);
        }
    };
    if rec.state == RunState::Failed {
        let said = rec.error.clone().unwrap_or_else(|| "failed".into());
        check_server(ctx, job, &said).await?;
        return Err(TestError::Failed { agent, said });
    }
    Ok(rec)
}

/// A test of `job` failed with `e`: the server agent is marked down when
/// it does not answer (and the relay was not out).
async fn check_server(ctx: &Ctx<'_>, job: Job, e: &str) -> Result<(), TestError> {
    if ctx.client(job.server).health().await.is_err()
        && ctx
            .relay_was_out(job.server)
            .await
            .map_err(TestError::Relay)?
            .is_zero()
    {
        ctx.mark_down(job.server, e.to_string());
    }
    Ok(())
}

/// `POST /v1/run` on the client agent; its test id. When the relay was
/// out, the start is sent once more (signed anew) after it is back: a
/// relay that refused connections never passed the first one on. One
/// that died after passing it on leaves the agent running a test nobody
/// reads; the retried test's record then names it in `concurrent_with`.
async fn start_test(
    ctx: &Ctx<'_>,
    job: Job,
    client: &AgentClient,
    req: &RunRequest,
) -> Result<u64, TestError> {
    let e = match client.start(req).await {
        Ok(id) => return Ok(id),
        Err(e) => e,
    };
    if !ctx
        .relay_was_out(job.client)
        .await
        .map_err(TestError::Relay)?
        .is_zero()
    {
        return client.start(req).await.map_err(TestError::Start);
    }
    if client.health().await.is_err() {
        ctx.mark_down(job.client, e.to_string());
    }
    Err(TestError::Start(e))
}
