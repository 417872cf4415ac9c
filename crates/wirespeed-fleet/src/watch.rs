//! `wirespeed fleet watch`: the fleet measuring itself on a schedule.
//!
//! The [`Schedule`] says what is due; each due test runs through the
//! agents as in a fleet run, its result goes to the history file at once
//! (one transaction each: a killed watcher loses only the tests it had in
//! flight), to Prometheus series and to the live state; each agent's facts
//! are read once a probe period and stored when they change. Each result
//! is judged against its series' own baseline ([`health`]); when a link's
//! health changes, the links that are not healthy are explained by the
//! smallest thing they share ([`localize`]) and incidents open and close
//! ([`incident`]), each transition an event with the facts that changed.
//! A link whose probes look suspect gets a bandwidth test out of turn
//! (at most one a probe period, backing off per pair while it stays
//! unhealthy).
//!
//! A restart opens the same history and takes the schedule from the
//! clock: nothing past is re-run; the recent tests are judged again to
//! rebuild each series' baseline, and the incidents left open are taken
//! back, not raised twice.

use crate::drift;
use crate::error::{FleetError, Result};
use crate::fleet::Fleet;
use crate::health::{self, Detector};
use crate::history::{History, Query};
use crate::incident;
use crate::localize::{self, Incidents, Topology, Transition};
use crate::plan::Job;
use crate::run::{
    AgentClient, RunOptions, WorkloadSpec, client_of, futures_join_bounded, run_job_now,
};
use crate::schedule::{Budget, Kind, Schedule};
use crate::watch_http::LinkKey;
pub use crate::watch_http::Live;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use wirespeed_types::fleet::{
    AgentStatus, DriftEvent, FLEET_SCHEMA_VERSION, FleetResults, HistoryRow, HostFacts, Incident,
    LinkTest, WatchState,
};
use wirespeed_types::host::tune::now_unix;

/// Rows of recent history the live state keeps.
const RECENT: usize = 2000;

/// Most rows a restart judges again to rebuild the baselines (30 probe
/// periods of 1,000 agents is about 700,000).
const REPLAY: usize = 1_000_000;

/// Called with each incident's transition as it is raised.
pub type EventFn = Arc<dyn Fn(&DriftEvent) + Send + Sync>;

/// How the watcher runs.
#[derive(Clone)]
pub struct WatchOptions {
    /// Key, timeouts, transport and progress, as for a run (its
    /// workloads are not used).
    pub run: RunOptions,
    /// The light probes, run together on each probed pair.
    pub probes: Vec<WorkloadSpec>,
    /// The bandwidth test of the rotation.
    pub bandwidth: WorkloadSpec,
    /// The budget.
    pub budget: Budget,
    /// When a series counts as past its threshold, and for how long.
    pub rules: health::Rules,
    /// The history file.
    pub history: PathBuf,
    /// Stop after this long (None: until stopped).
    pub duration: Option<Duration>,
    /// Prune history older than this at start and hourly.
    pub retain: Option<Duration>,
    /// Called with each incident's transition as it is raised.
    pub on_event: Option<EventFn>,
    /// Set to end the watch: no new test starts, those in flight finish
    /// and are stored (the Kubernetes watcher sets it when its agents
    /// change, then watches the new set on the same history).
    pub stop: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Set to end the watch now (SIGTERM, Ctrl-C): no new test starts,
    /// those in flight get [`INTERRUPT_GRACE`] to finish and be stored,
    /// then the watch returns what it has (the agents end the rest on
    /// their side when the test's time is up).
    pub interrupt: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// How long an interrupted watch waits for its tests in flight: well
/// inside Kubernetes' 30 s grace and the 2 s a stopping pod should take.
pub const INTERRUPT_GRACE: Duration = Duration::from_millis(1200);

/// Whether an optional flag is set.
fn is_set(flag: &Option<Arc<std::sync::atomic::AtomicBool>>) -> bool {
    flag.as_ref()
        .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
}

/// Refuses a retention shorter than the probe period: it would prune
/// every earlier test at start, and each probe soon after it is stored.
fn check_retention(retain: Option<Duration>, probe_period_s: f64) -> Result<()> {
    match retain {
        Some(keep) if keep.as_secs_f64() < probe_period_s => Err(FleetError::Plan(format!(
            "--retain {:.0} s is shorter than the probe period ({probe_period_s:.0} s): it would delete the history as it is written; keep at least one period (hours or days are usual)",
            keep.as_secs_f64()
        ))),
        _ => Ok(()),
    }
}

/// What the loop keeps between ticks.
struct Loop {
    fleet: Arc<Fleet>,
    schedule: Schedule,
    history: History,
    clients: Vec<AgentClient>,
    facts: Vec<Option<HostFacts>>,
    /// Every series' health.
    detector: Detector,
    /// The links the schedule probes and their hosts' zones.
    topo: Topology,
    /// The open incidents.
    incidents: Incidents,
    /// The open incidents' records, by id.
    records: BTreeMap<u64, Incident>,
    /// Incidents closed in the last day, newest last.
    closed: Vec<Incident>,
    /// Agent index by name.
    index: HashMap<String, usize>,
    /// Each agent's newest CPU counters (its facts).
    cpu: Vec<Option<wirespeed_types::fleet::CpuTicks>>,
    /// A series changed health since the last localization.
    unexplained: bool,
    /// When the last localization ran.
    localized_at: f64,
    /// Bandwidth tests out of turn: the last start, and per pair how many
    /// since it was last healthy.
    extra: Extra,
    live: Arc<Live>,
    opts: WatchOptions,
    /// Tests that measured something since start.
    ok_tests: u64,
    /// Agents in a test now: one test per host at a time, probes too (a
    /// probe beside another test on the same link measures the other).
    busy: Vec<bool>,
    /// Due tests waiting for their hosts, with when they were due.
    waiting: std::collections::VecDeque<(f64, Kind, Job)>,
    /// Tests started and not yet back.
    in_flight: usize,
    /// When each pair's last probe started, by (lower, higher) index.
    probed: HashMap<(usize, usize), f64>,
    /// Whether each agent holds a fleet, and since which boot. An agent
    /// tests only peers of its fleet, so one that missed it at start (not
    /// yet reachable) or restarted in place since (a container restart
    /// keeps the pod's address) is sent it at the next facts round;
    /// otherwise every test it leads is refused for as long as it runs.
    held: Vec<Held>,
    /// Whether each agent answered the last facts round.
    answering: Vec<bool>,
}

/// An agent's fleet as the watcher knows it, with the boot id the agent
/// had then (a new boot id: it restarted and holds none).
#[derive(Debug, Clone, PartialEq)]
enum Held {
    /// Not known to hold one.
    No,
    /// It took this watcher's fleet.
    Took(String),
    /// It keeps its own (`--fleet` pins it): not sent again.
    Pinned(String),
}

impl Held {
    fn boot(&self) -> Option<&str> {
        match self {
            Held::No => None,
            Held::Took(b) | Held::Pinned(b) => Some(b),
        }
    }
}

/// Bandwidth tests out of turn.
#[derive(Debug, Default)]
struct Extra {
    /// When the last one started (the loop's clock).
    last: f64,
    /// Per pair (lower, higher index): how many ran since it was last
    /// healthy, and when the last one started.
    per_pair: HashMap<(usize, usize), (u32, f64)>,
}

/// Closed incidents the live state keeps (those of the last day).
const CLOSED_KEPT: usize = 200;

/// Least time between two localizations, seconds.
const LOCALIZE_EVERY_S: f64 = 1.0;

/// A finished job: what it was, and its tests.
type Done = (Job, Vec<LinkTest>);

/// Runs the watch (blocking; builds its own runtime), serving its HTTP
/// face on `http` (a bound listener and the page renderer) meanwhile.
pub fn run_blocking(
    fleet: &Fleet,
    opts: &WatchOptions,
    http: Option<(std::net::TcpListener, crate::watch_http::PageFn)>,
) -> Result<WatchState> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FleetError::io("start the watcher's runtime", e))?;
    rt.block_on(async {
        let live = Arc::new(Live::default());
        let stop = Arc::new(tokio::sync::Notify::new());
        if let Some((l, page)) = http {
            tokio::spawn(crate::watch_http::serve(
                l,
                live.clone(),
                page,
                stop.clone(),
            ));
        }
        let st = watch(fleet, opts, live).await;
        stop.notify_waiters();
        st
    })
}

/// Runs the watch until `opts.duration` passes (or forever); `live` is
/// updated as results come.
pub async fn watch(fleet: &Fleet, opts: &WatchOptions, live: Arc<Live>) -> Result<WatchState> {
    fleet.validate()?;
    if opts.probes.is_empty() {
        return Err(FleetError::Plan("watch: no probe workload".into()));
    }
    let mut budget = opts.budget.clone();
    budget.nic_pairs = fleet
        .agents
        .iter()
        .map(|a| a.nics.len().max(1))
        .max()
        .unwrap_or(1);
    let schedule = Schedule::new(fleet.agents.len(), &budget)?;
    check_retention(opts.retain, schedule.probe_period_s())?;
    let _lock = crate::history::lock_for_watch(&opts.history)?;
    let mut history = History::open(&opts.history)?;
    if let Some(keep) = opts.retain {
        history.prune(now_unix() - keep.as_secs_f64())?;
    }
    let clients = fleet
        .agents
        .iter()
        .map(|a| client_of(a, &opts.run))
        .collect::<Result<Vec<_>>>()?;
    let topo = topology(fleet, &schedule);
    let mut lp = Loop {
        fleet: Arc::new(fleet.clone()),
        schedule,
        history,
        clients,
        facts: vec![None; fleet.agents.len()],
        detector: Detector::new(opts.rules.clone()),
        topo,
        incidents: Incidents::new(1),
        records: BTreeMap::new(),
        closed: Vec::new(),
        index: fleet
            .agents
            .iter()
            .enumerate()
            .map(|(i, a)| (a.name.clone(), i))
            .collect(),
        cpu: vec![None; fleet.agents.len()],
        unexplained: false,
        localized_at: 0.0,
        extra: Extra::default(),
        live,
        opts: opts.clone(),
        ok_tests: 0,
        busy: vec![false; fleet.agents.len()],
        waiting: Default::default(),
        in_flight: 0,
        probed: HashMap::new(),
        held: vec![Held::No; fleet.agents.len()],
        answering: vec![false; fleet.agents.len()],
    };
    lp.resume()?;
    lp.setup().await;
    // The incidents a previous watcher left open, against the baselines
    // judged again: kept, grown or closed at once.
    lp.localize(now_unix()).await?;
    lp.run().await
}

impl Loop {
    /// Picks up where a previous watcher on this file stopped: its
    /// recent tests judged again (each series' baseline and health), its
    /// events, and the incidents it left open (taken back, not raised
    /// again; closed at the first look if they recovered meanwhile).
    fn resume(&mut self) -> Result<()> {
        let now = now_unix();
        let period = self.schedule.probe_period_s();
        let r = &self.opts.rules;
        let probes_since = now - (r.baseline + r.confirm + r.clear + 4) as f64 * period;
        let mut replay = self.history.tests(&Query {
            since_unix: probes_since,
            limit: REPLAY,
            ..Query::default()
        })?;
        let bw_since =
            now - (r.min_baseline_goodput + 1) as f64 * self.schedule.bandwidth_every_s();
        if bw_since < probes_since {
            replay.extend(self.history.tests(&Query {
                since_unix: bw_since,
                workload: Some(self.opts.bandwidth.label.clone()),
                limit: REPLAY,
                ..Query::default()
            })?);
            replay.retain(|x| x.at_unix >= probes_since || x.workload == self.opts.bandwidth.label);
            replay.sort_by(|a, b| a.at_unix.total_cmp(&b.at_unix));
            replay.dedup();
        }
        for job in health::jobs(&replay) {
            self.detector.observe_job(&job);
        }
        let recent: Vec<HistoryRow> = replay
            .iter()
            .filter(|x| x.at_unix >= now - self.quiet_s())
            .cloned()
            .collect();
        self.note_probed(&recent);
        let all = self.history.events(0.0)?;
        let next = all.iter().map(|e| e.incident).max().unwrap_or(0) + 1;
        self.incidents = Incidents::new(next);
        for e in incident::left_open(&all) {
            let Some(scope) = incident::scope_of(&e.scope, &e.subject) else {
                continue;
            };
            let o = localize::Open {
                id: e.incident,
                scope: scope.clone(),
                explanation: localize::Explanation {
                    scope,
                    bad: Vec::new(),
                    judged: 0,
                    evidence: e.evidence.clone(),
                },
                opened_unix: e.at_unix,
            };
            self.incidents.reopen(o);
        }
        let day = now - 24.0 * 3600.0;
        let told = incident::from_events(&all);
        self.records = told
            .iter()
            .filter(|i| i.closed_unix.is_none())
            .map(|i| (i.id, i.clone()))
            .collect();
        self.closed = told
            .into_iter()
            .filter(|i| i.closed_unix.is_some_and(|t| t >= day))
            .rev()
            .collect();
        let events: Vec<DriftEvent> = all.into_iter().filter(|e| e.at_unix >= day).collect();
        let mut st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
        *st = WatchState {
            schema_version: FLEET_SCHEMA_VERSION,
            started_unix: now,
            now_unix: now,
            agents: self.fleet.agents.iter().map(|a| a.name.clone()).collect(),
            probe_period_s: self.schedule.probe_period_s(),
            bandwidth_every_s: self.schedule.bandwidth_every_s(),
            latest: newest_of_each(&recent),
            recent,
            events,
            ..WatchState::default()
        };
        drop(st);
        self.publish();
        self.live.metrics.schedule(&self.schedule);
        Ok(())
    }

    /// Notes when each pair was last probed in `rows` (a previous
    /// watcher's), so a restart does not probe a pair again at once.
    fn note_probed(&mut self, rows: &[HistoryRow]) {
        let index = |name: &str| self.fleet.agents.iter().position(|a| a.name == name);
        let probe = |w: &str| self.opts.probes.iter().any(|p| p.label == w);
        for r in rows.iter().filter(|r| probe(&r.workload)) {
            let (Some(a), Some(b)) = (index(&r.client), index(&r.server)) else {
                continue;
            };
            let last = self.probed.entry((a.min(b), a.max(b))).or_insert(r.at_unix);
            *last = last.max(r.at_unix);
        }
    }

    /// The span of recent tests a restart shows and keeps probes apart
    /// by: twelve probe periods.
    fn quiet_s(&self) -> f64 {
        12.0 * self.schedule.probe_period_s()
    }

    /// Checks each agent and sends it the fleet, as a run does; an agent
    /// that does not take it is tried again at each facts round
    /// ([`Loop::push_fleet_again`]).
    async fn setup(&mut self) {
        let all: Vec<usize> = (0..self.clients.len()).collect();
        self.push_fleet_to(&all).await;
    }

    /// Sends the fleet to agents `which` (a health check first, which
    /// reads each one's boot id); notes which took it or keep their own.
    async fn push_fleet_to(&mut self, which: &[usize]) {
        if !self.opts.run.push_fleet || which.is_empty() {
            return;
        }
        let fleet = self.fleet.clone();
        let set = futures_join_bounded(
            crate::run::SETUP_AT_ONCE,
            which.iter().map(|&i| {
                let (c, fleet) = (&self.clients[i], fleet.clone());
                async move {
                    let t = c.health().await?;
                    let took = c.push_fleet(&fleet).await?;
                    Ok::<_, FleetError>(if took {
                        Held::Took(t.boot)
                    } else {
                        Held::Pinned(t.boot)
                    })
                }
            }),
        )
        .await;
        for (&i, r) in which.iter().zip(set) {
            if let Ok(h) = r {
                self.held[i] = h;
            }
        }
        let n = self
            .held
            .iter()
            .filter(|h| matches!(h, Held::Took(_)))
            .count();
        self.live
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .agents_with_fleet = n as u64;
    }

    /// After a facts round (whose signed requests read each agent's boot
    /// id anew when it restarted): sends the fleet to the agents that
    /// answered and have not taken it, or restarted since they did. One
    /// that did not answer waits for a round it does.
    async fn push_fleet_again(&mut self) {
        let stale: Vec<usize> = (0..self.clients.len())
            .filter(|&i| self.answering[i])
            .filter(|&i| {
                let held = self.held[i].boot();
                held.is_none() || self.clients[i].known_boot().as_deref() != held
            })
            .collect();
        self.push_fleet_to(&stale).await;
    }

    async fn run(mut self) -> Result<WatchState> {
        let start = now_unix();
        let end = self.opts.duration.map(|d| start + d.as_secs_f64());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Done>();
        let mut cursor = start;
        let mut next_facts = start;
        let mut next_prune = start + 3600.0;
        let mut interrupted: Option<std::time::Instant> = None;
        loop {
            let now = now_unix();
            if is_set(&self.opts.interrupt) {
                let at = *interrupted.get_or_insert_with(std::time::Instant::now);
                if self.in_flight == 0 || at.elapsed() >= INTERRUPT_GRACE {
                    break;
                }
            }
            let stopping =
                end.is_some_and(|e| now >= e) || is_set(&self.opts.stop) || interrupted.is_some();
            if stopping && self.in_flight == 0 {
                break;
            }
            if !stopping {
                if now >= next_facts {
                    let answered = self.read_facts(now).await?;
                    if answered == 0 && next_facts == start {
                        return Err(FleetError::Fleet(format!(
                            "watch: none of the {} agents answers (their facts could not be read): check --agents, --key-file and that the agents run",
                            self.fleet.agents.len()
                        )));
                    }
                    self.push_fleet_again().await;
                    next_facts = now + self.schedule.probe_period_s();
                }
                for d in self.schedule.due(cursor, now) {
                    let job = Job {
                        client: d.client,
                        server: d.server,
                    };
                    self.waiting.push_back((d.at, d.kind, job));
                }
                cursor = now;
                self.localize_if_due(now).await?;
                self.extra_bandwidth(now);
                self.start_ready(now, &tx);
                if now >= next_prune {
                    if let Some(keep) = self.opts.retain {
                        self.history.prune(now - keep.as_secs_f64())?;
                    }
                    next_prune = now + 3600.0;
                }
            }
            // Results as they come, or the next look at the clock.
            if let Ok(Some((job, tests))) =
                tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
            {
                self.in_flight -= 1;
                self.busy[job.client] = false;
                self.busy[job.server] = false;
                self.store(tests).await?;
            }
        }
        // A watch ended early (interrupted, or stopped for a new agent
        // set) may well have measured nothing yet: that is not a failure.
        if self.ok_tests == 0 && interrupted.is_none() && !is_set(&self.opts.stop) {
            return Err(FleetError::Fleet(
                "watch: no test succeeded (each failed, or none was due before the end: watch for longer than a probe period)".into(),
            ));
        }
        let st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
        Ok(st.clone())
    }

    /// Starts the waiting tests whose hosts are free, in the order they
    /// fell due; one that waited a whole probe period is dropped (its
    /// next turn comes). A probe waits, too, until half a period has
    /// passed since its pair's last one started (a late probe and the
    /// next on time would otherwise come as a burst).
    fn start_ready(&mut self, now: f64, tx: &tokio::sync::mpsc::UnboundedSender<Done>) {
        let period = self.schedule.probe_period_s();
        self.waiting.retain(|(at, _, _)| now - at < period);
        let mut i = 0;
        while i < self.waiting.len() {
            let (_, kind, job) = self.waiting[i];
            let pair = (job.client.min(job.server), job.client.max(job.server));
            let soon = kind == Kind::Probe
                && self
                    .probed
                    .get(&pair)
                    .is_some_and(|&t| now - t < period / 2.0);
            if soon || self.busy[job.client] || self.busy[job.server] {
                i += 1;
                continue;
            }
            self.waiting.remove(i);
            if kind == Kind::Probe {
                self.probed.insert(pair, now);
            }
            self.busy[job.client] = true;
            self.busy[job.server] = true;
            self.in_flight += 1;
            self.launch(kind, job, tx.clone());
        }
    }

    /// Starts one due test in its own task; its tests come back on `tx`.
    fn launch(&self, kind: Kind, job: Job, tx: tokio::sync::mpsc::UnboundedSender<Done>) {
        let mut opts = self.opts.run.clone();
        opts.workloads = match kind {
            Kind::Probe => self.opts.probes.clone(),
            Kind::Bandwidth => vec![self.opts.bandwidth.clone()],
        };
        let (fleet, clients) = (self.fleet.clone(), self.clients.clone());
        tokio::spawn(async move {
            let tests = run_job_now(&fleet, clients, &opts, job).await;
            let _ = tx.send((job, tests));
        });
    }

    /// Reads every agent's facts; stores those that changed. How many
    /// agents answered.
    async fn read_facts(&mut self, now: f64) -> Result<usize> {
        let all: Vec<usize> = (0..self.clients.len()).collect();
        self.read_facts_of(now, &all).await
    }

    /// Reads the facts of agents `which` (indices); stores those that
    /// changed. How many answered.
    async fn read_facts_of(&mut self, now: f64, which: &[usize]) -> Result<usize> {
        let got = futures_join_bounded(
            crate::run::SETUP_AT_ONCE,
            which.iter().map(|&i| {
                let c = &self.clients[i];
                async move { c.facts_with_cpu().await.ok() }
            }),
        )
        .await;
        let mut agents = Vec::new();
        let answered = got.iter().filter(|s| s.is_some()).count();
        for (&i, got) in which.iter().zip(got) {
            self.answering[i] = got.is_some();
            let Some((snap, ticks)) = got else { continue };
            self.note_cpu(i, ticks);
            let f = crate::analyze::host_facts(&self.fleet.agents[i], &snap);
            if self.facts[i].as_ref() != Some(&f) {
                agents.push(AgentStatus {
                    name: self.fleet.agents[i].name.clone(),
                    up: true,
                    facts: Some(f.clone()),
                    ..AgentStatus::default()
                });
                self.facts[i] = Some(f);
            }
        }
        if !agents.is_empty() {
            self.history
                .record("watch-facts", &results(now, agents, Vec::new()))?;
        }
        Ok(answered)
    }

    /// Notes agent `i`'s CPU counters: with its previous reading, how
    /// idle its host was meanwhile (the detector does not judge a busy
    /// host's tests).
    fn note_cpu(&mut self, i: usize, ticks: Option<wirespeed_types::fleet::CpuTicks>) {
        let Some(t) = ticks else { return };
        if let Some(idle) = self.cpu[i].and_then(|p| t.idle_pct_since(&p)) {
            let name = self.fleet.agents[i].name.clone();
            self.detector.busy.set_host(&name, idle);
        }
        self.cpu[i] = Some(t);
    }

    /// Stores a job's tests, judges each against its series, and
    /// explains the links that are not healthy when any changed.
    async fn store(&mut self, tests: Vec<LinkTest>) -> Result<()> {
        let now = now_unix();
        self.ok_tests += tests.iter().filter(|t| t.error.is_none()).count() as u64;
        self.live.metrics.tests(&tests);
        self.history
            .record("watch", &results(now, Vec::new(), tests.clone()))?;
        let rows = remember(&self.live, &tests, now);
        self.live
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tests_stored += rows.len() as u64;
        let changed = self.detector.observe_job(&rows);
        for c in &changed {
            self.live
                .metrics
                .series_health(&self.detector.states_of(&c.key.link), &c.key.workload);
        }
        self.unexplained |= !changed.is_empty();
        self.localize_if_due(now).await
    }

    /// Localizes when a series changed health since the last time, and
    /// publishes the live state, at most every [`LOCALIZE_EVERY_S`]: with
    /// thousands of links unhealthy (a zone of 1,000 agents) one pass
    /// costs about 40 ms of CPU, and the results of a period come by the
    /// thousand.
    async fn localize_if_due(&mut self, now: f64) -> Result<()> {
        if now - self.localized_at < LOCALIZE_EVERY_S {
            return Ok(());
        }
        self.localized_at = now;
        if std::mem::take(&mut self.unexplained) {
            self.localize(now).await?;
        }
        // The live state's health, busy hosts and incidents too: with
        // every host busy, every series is in it.
        self.publish();
        Ok(())
    }

    /// Explains the links that are not healthy; opens, updates and
    /// closes incidents.
    async fn localize(&mut self, now: f64) -> Result<()> {
        let found = localize::explain(&self.topo, self.detector.links(), self.detector.bad_links());
        let moves = self
            .incidents
            .update(&self.topo, found, self.detector.links(), now);
        for t in moves {
            self.report(t, now).await?;
        }
        Ok(())
    }

    /// Records an incident's transition: an event (history, stdout, the
    /// metrics, the state) when it opens or closes; its record when its
    /// explanation changes.
    async fn report(&mut self, t: Transition, now: f64) -> Result<()> {
        let (o, transition, outcome) = match t {
            Transition::Opened(o) => (o, "opened", None),
            Transition::Updated(o) => {
                let prev = self.records.get(&o.id).cloned();
                let changed = prev.as_ref().map(|p| p.changed.clone()).unwrap_or_default();
                let now_rec = incident::record(&o, &self.detector, changed, None);
                self.records
                    .insert(o.id, incident::keep_worst(prev.as_ref(), now_rec));
                return Ok(());
            }
            Transition::Closed(o, by) => {
                let why = by.map_or_else(
                    || "recovered".to_string(),
                    |s| {
                        let (scope, subject) = s.scope_and_subject();
                        format!("{scope} {subject}")
                    },
                );
                (o, "closed", Some(why))
            }
        };
        let inc = match outcome {
            None => {
                let changed = self.facts_changed(&o.scope, now).await?;
                let rec = incident::record(&o, &self.detector, changed, None);
                self.records.insert(o.id, rec.clone());
                rec
            }
            Some(why) => {
                let prev = self.records.remove(&o.id);
                let rec = incident::record(&o, &self.detector, Vec::new(), None);
                let mut rec = incident::keep_worst(prev.as_ref(), rec);
                rec.closed_unix = Some(now);
                rec.outcome = Some(why);
                rec.message = incident::message(&rec);
                self.closed.push(rec.clone());
                let day = now - 24.0 * 3600.0;
                self.closed
                    .retain(|i| i.closed_unix.is_some_and(|t| t >= day));
                let over = self.closed.len().saturating_sub(CLOSED_KEPT);
                self.closed.drain(..over);
                rec
            }
        };
        let e = incident::event(&inc, transition, now);
        self.history.record_event(&e)?;
        self.live.metrics.incident(&inc);
        if let Some(f) = &self.opts.on_event {
            f(&e);
        }
        self.live
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .events
            .push(e);
        // Transitions are rare: the page shows each at once.
        self.publish();
        Ok(())
    }

    /// The facts of the hosts `scope` names that changed since its
    /// incident began, read now (the CPUs of busy ones among them).
    async fn facts_changed(&mut self, scope: &localize::Scope, now: f64) -> Result<Vec<String>> {
        use localize::Scope as S;
        let names: Vec<String> = match scope {
            S::Host(h) => vec![h.clone()],
            S::Nic(e) => vec![e.host.clone()],
            S::Pair(a, b) => vec![a.clone(), b.clone()],
            S::Link(l) => vec![l.0.host.clone(), l.1.host.clone()],
            S::Zone(_) | S::Fabric(_) => Vec::new(),
        };
        let hosts: Vec<usize> = names
            .iter()
            .filter_map(|n| self.index.get(n).copied())
            .collect();
        let since = self
            .detector
            .not_healthy()
            .iter()
            .filter(|s| names.iter().any(|n| s.a == *n || s.b == *n))
            .filter_map(|s| s.since_unix)
            .fold(now, f64::min);
        self.read_facts_of(now, &hosts).await?;
        let mut changed = Vec::new();
        for (h, &i) in names.iter().zip(&hosts) {
            let before = self.history.facts_at(h, since - 1.0)?;
            if let (Some(before), Some(after)) = (before, self.facts[i].clone()) {
                changed.extend(drift::facts_changed(h, &before, &after));
            }
            if let Some(idle) = self.detector.busy.idle(h)
                && self.detector.busy.busy(h, self.detector.rules())
            {
                changed.push(format!(
                    "{h} CPUs idle: {idle:.0}% (mean over its newest tests)"
                ));
            }
        }
        Ok(changed)
    }

    /// Puts each series that is not healthy, the busy hosts and the
    /// incidents (open, then closed in the last day) in the live state.
    fn publish(&self) {
        let health = self.detector.not_healthy();
        let rules = self.detector.rules();
        let busy = self.detector.busy.all_busy(rules);
        self.live.metrics.busy_hosts(
            &busy,
            &self
                .fleet
                .agents
                .iter()
                .map(|a| a.name.clone())
                .collect::<Vec<_>>(),
        );
        let mut incidents: Vec<Incident> = self.records.values().rev().cloned().collect();
        incidents.extend(self.closed.iter().rev().cloned());
        let mut st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
        st.health = health;
        st.busy_hosts = busy;
        st.incidents = incidents;
    }

    /// Queues a bandwidth test out of turn for a pair with a series that
    /// is not healthy: at most one a probe period over the fleet, and
    /// per pair after 1, 3, 9 then every 27 probe periods while it stays
    /// unhealthy (the first two confirm a suspect link, the later ones
    /// see a degraded goodput recover).
    fn extra_bandwidth(&mut self, now: f64) {
        // Each pair with a series not healthy, and whether a probe's is
        // (else only its goodput is: test soon, to see it recover).
        let mut bad: BTreeMap<(usize, usize), bool> = BTreeMap::new();
        for (k, _) in self.detector.unhealthy() {
            let (Some(&a), Some(&b)) = (
                self.index.get(&k.link.0.host),
                self.index.get(&k.link.1.host),
            ) else {
                continue;
            };
            let probes = k.metric != health::Metric::Goodput;
            *bad.entry((a.min(b), a.max(b))).or_default() |= probes;
        }
        self.extra.per_pair.retain(|p, _| bad.contains_key(p));
        let period = self.schedule.probe_period_s();
        if now - self.extra.last < period {
            return;
        }
        for (p, probes) in bad {
            let (n, last) = self.extra.per_pair.get(&p).copied().unwrap_or((0, 0.0));
            let backoff = period
                * 3f64
                    .powi(i32::try_from(n.min(4)).unwrap_or(4) - 1)
                    .min(27.0);
            let wait = if probes { backoff } else { period };
            let waiting = self.waiting.iter().any(|w| {
                w.1 == Kind::Bandwidth
                    && (w.2.client.min(w.2.server), w.2.client.max(w.2.server)) == p
            });
            if waiting || (n > 0 && now - last < wait) {
                continue;
            }
            self.extra.per_pair.insert(p, (n + 1, now));
            self.extra.last = now;
            self.live
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extra_bandwidth_tests += 1;
            let job = Job {
                client: p.0,
                server: p.1,
            };
            self.waiting.push_back((now, Kind::Bandwidth, job));
            return;
        }
    }
}

/// The links the schedule probes (each NIC pair of each probed pair) and
/// each host's zone (its `zone` label, or Kubernetes'
/// `topology.kubernetes.io/zone`).
pub fn topology(fleet: &Fleet, s: &Schedule) -> Topology {
    let mut links = Vec::new();
    for &(a, b) in s.pairs() {
        let (x, y) = (&fleet.agents[a], &fleet.agents[b]);
        for (cn, sn) in x.nic_pairs(y) {
            let row = HistoryRow {
                client: x.name.clone(),
                server: y.name.clone(),
                client_nic: cn.map(|n| n.name.clone()).unwrap_or_default(),
                server_nic: sn.map(|n| n.name.clone()).unwrap_or_default(),
                ..HistoryRow::default()
            };
            links.push(health::Link::of(&row));
        }
    }
    let zones = fleet
        .agents
        .iter()
        .filter_map(|a| zone_of(&a.labels).map(|z| (a.name.clone(), z)))
        .collect();
    Topology::new(links, zones)
}

/// A host's zone from its labels: `zone`, else `topology.kubernetes.io/zone`.
pub fn zone_of(labels: &BTreeMap<String, String>) -> Option<String> {
    labels
        .get("zone")
        .or_else(|| labels.get("topology.kubernetes.io/zone"))
        .filter(|z| !z.is_empty())
        .cloned()
}

/// The newest row of each series in `rows` (oldest first): what a
/// restarted watch shows of each link until it is measured again, a
/// link marked down among them.
fn newest_of_each(rows: &[HistoryRow]) -> Vec<HistoryRow> {
    let mut by: BTreeMap<(health::Link, String), &HistoryRow> = BTreeMap::new();
    for r in rows {
        by.insert((health::Link::of(r), r.workload.clone()), r);
    }
    let mut out: Vec<HistoryRow> = by.into_values().cloned().collect();
    out.sort_by(|a, b| a.at_unix.total_cmp(&b.at_unix));
    out
}

/// Puts `tests` in the live state as its newest rows; returns them.
fn remember(live: &Live, tests: &[LinkTest], now: f64) -> Vec<HistoryRow> {
    let rows: Vec<HistoryRow> = tests.iter().map(|t| crate::history::row(t, now)).collect();
    let mut st = live.state.lock().unwrap_or_else(|p| p.into_inner());
    st.now_unix = now;
    for r in &rows {
        let key = (health::Link::of(r), r.workload.as_str());
        st.latest
            .retain(|x| (health::Link::of(x), x.workload.as_str()) != key);
        st.latest.push(r.clone());
    }
    st.recent.extend(rows.iter().cloned());
    let over = st.recent.len().saturating_sub(RECENT);
    st.recent.drain(..over);
    rows
}

/// Every link (directed, per workload) the live state or the metrics
/// know, as tests with no figures: both directions of a pair, though
/// the state's newest rows keep one per pair.
fn known_links(live: &Live) -> Vec<LinkTest> {
    let mut keys: std::collections::BTreeSet<LinkKey> = live.metrics.links().into_iter().collect();
    let st = live.state.lock().unwrap_or_else(|p| p.into_inner());
    keys.extend(st.latest.iter().chain(&st.recent).map(|r| {
        [
            r.client.clone(),
            r.server.clone(),
            r.client_nic.clone(),
            r.server_nic.clone(),
            r.workload.clone(),
        ]
    }));
    keys.into_iter()
        .map(
            |[client, server, client_nic, server_nic, workload]| LinkTest {
                workload,
                client,
                server,
                client_nic,
                server_nic,
                ..LinkTest::default()
            },
        )
        .collect()
}

/// Marks the links of hosts that left the watched set as down, between
/// two watches on `history` (none may run): each link of theirs that the
/// live state or the metrics know (`known_links`) gets an error row,
/// `gone`'s reason for its host, stored in the history and the live
/// state, and its figures leave the metrics. Drift is judged on measured rows only, so a link
/// whose end is gone raises no event. How many links were marked.
pub fn mark_gone(
    history: &std::path::Path,
    live: &Live,
    gone: &[(String, String)],
) -> Result<usize> {
    let why = |h: &str| gone.iter().find(|(g, _)| g == h).map(|(_, w)| w.clone());
    let links: Vec<LinkTest> = known_links(live)
        .into_iter()
        .filter_map(|t| {
            let error = Some(why(&t.client).or_else(|| why(&t.server))?);
            Some(LinkTest { error, ..t })
        })
        .collect();
    if links.is_empty() {
        return Ok(0);
    }
    let now = now_unix();
    let _lock = crate::history::lock_for_watch(history)?;
    History::open(history)?.record("watch", &results(now, Vec::new(), links.clone()))?;
    remember(live, &links, now);
    live.metrics.gone(&links);
    Ok(links.len())
}

/// A batch of tests or facts as the history stores it.
fn results(now: f64, agents: Vec<AgentStatus>, tests: Vec<LinkTest>) -> FleetResults {
    FleetResults {
        schema_version: FLEET_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        pattern: "watch".into(),
        started_unix: now,
        agents,
        tests,
        ..FleetResults::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(client: &str, server: &str, workload: &str) -> LinkTest {
        LinkTest {
            workload: workload.into(),
            client: client.into(),
            server: server.into(),
            transactions_per_s: 1000.0,
            ..LinkTest::default()
        }
    }

    #[test]
    fn a_host_that_left_has_its_links_marked_down_in_history_state_and_metrics() {
        let dir = std::env::temp_dir().join(format!("ws-gone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("h.db");
        let live = Live::default();
        let tests = [
            measured("a", "b", "rr"),
            measured("b", "c", "rr"),
            measured("c", "b", "rr"),
            measured("c", "a", "stream"),
        ];
        remember(&live, &tests, now_unix());
        live.metrics.tests(&tests);
        let gone = [("c".to_string(), "node c left".to_string())];
        // Both directions of b - c (the state's newest rows keep one).
        assert_eq!(mark_gone(&file, &live, &gone).unwrap(), 3);
        let st = live.state.lock().unwrap().clone();
        let down: Vec<_> = st.latest.iter().filter(|r| r.error.is_some()).collect();
        assert_eq!(down.len(), 2, "{:?}", st.latest);
        assert!(
            down.iter()
                .all(|r| r.error.as_deref() == Some("node c left"))
        );
        assert!(
            st.latest
                .iter()
                .any(|r| r.client == "a" && r.error.is_none())
        );
        let stored = History::open(&file)
            .unwrap()
            .tests(&Query::default())
            .unwrap();
        assert_eq!(stored.len(), 3);
        let m = live.metrics.encode().unwrap();
        let line = |needle: &str| {
            m.lines()
                .filter(|l| l.contains(needle) && !l.starts_with('#'))
                .count()
        };
        assert_eq!(line("link_up{"), 4, "{m}");
        assert!(m.contains("server=\"c\"") || m.contains("client=\"c\""));
        let up_c: Vec<&str> = m
            .lines()
            .filter(|l| l.starts_with("wirespeed_watch_link_up") && l.contains("\"c\""))
            .collect();
        assert!(up_c.iter().all(|l| l.ends_with(" 0")), "{up_c:?}");
        // The figures of c's links are withdrawn; a's to b stays.
        let tps: Vec<&str> = m
            .lines()
            .filter(|l| l.starts_with("wirespeed_watch_goodput"))
            .collect();
        assert!(tps.iter().all(|l| !l.contains("\"c\"")), "{tps:?}");
        // Nothing left: nothing marked, nothing written.
        assert_eq!(mark_gone(&file, &live, &[]).unwrap(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_retention_shorter_than_a_probe_period_is_refused() {
        let e = check_retention(Some(Duration::ZERO), 30.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--retain 0 s") && e.contains("30 s"), "{e}");
        assert!(check_retention(Some(Duration::from_secs(29)), 30.0).is_err());
        assert!(check_retention(Some(Duration::from_secs(30)), 30.0).is_ok());
        assert!(check_retention(None, 30.0).is_ok());
    }
}
