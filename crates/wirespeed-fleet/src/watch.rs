//! `wirespeed fleet watch`: the fleet measuring itself on a schedule.
//!
//! The [`Schedule`] says what is due; each due test runs through the
//! agents as in a fleet run, its result goes to the history file at once
//! (one transaction each: a killed watcher loses only the tests it had in
//! flight), to Prometheus series and to the live state; each agent's facts
//! are read once a probe period and stored when they change. After each
//! result the link's series is checked for a change point ([`drift`]);
//! a host or pair that moved becomes an event with the facts that changed
//! with it.
//!
//! A restart opens the same history and takes the schedule from the
//! clock: nothing past is re-run, and the events of the last minutes are
//! not raised twice.

use crate::drift::{self, Change, Rules, Subject};
use crate::error::{FleetError, Result};
use crate::fleet::Fleet;
use crate::history::{History, Query};
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
    AgentStatus, DriftEvent, FLEET_SCHEMA_VERSION, FleetResults, HistoryRow, HostFacts, LinkTest,
    WatchState,
};
use wirespeed_types::host::tune::now_unix;

/// Rows of recent history the live state keeps.
const RECENT: usize = 2000;

/// Called with each drift event as it is raised.
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
    /// When a link counts as moved.
    pub rules: Rules,
    /// The history file.
    pub history: PathBuf,
    /// Stop after this long (None: until stopped).
    pub duration: Option<Duration>,
    /// Prune history older than this at start and hourly.
    pub retain: Option<Duration>,
    /// Called with each drift event as it is raised.
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
    /// Links that moved now, by (link, workload), and when each was
    /// first found.
    changes: BTreeMap<(String, String), (Change, f64)>,
    /// Subjects raised, until when they stay quiet.
    raised: HashMap<(Subject, String), f64>,
    /// Pairs each host is probed in.
    pairs_of: HashMap<String, usize>,
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

/// Whether `subject` is a host raised in any workload and not yet quiet.
/// A host is one cause, raised once per quiet span whatever workload
/// moved: its MTU moves every rr probe alike, and each probe's move came
/// as an event of its own before (2 events for one plant in CI).
fn host_raised(raised: &HashMap<(Subject, String), f64>, subject: &Subject, now: f64) -> bool {
    matches!(subject, Subject::Host(_))
        && raised
            .iter()
            .any(|((s, _), until)| s == subject && *until >= now)
}

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
    let mut pairs_of: HashMap<String, usize> = HashMap::new();
    for &(a, b) in schedule.pairs() {
        *pairs_of.entry(fleet.agents[a].name.clone()).or_default() += 1;
        *pairs_of.entry(fleet.agents[b].name.clone()).or_default() += 1;
    }
    let mut lp = Loop {
        fleet: Arc::new(fleet.clone()),
        schedule,
        history,
        clients,
        facts: vec![None; fleet.agents.len()],
        changes: BTreeMap::new(),
        raised: HashMap::new(),
        pairs_of,
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
    lp.run().await
}

impl Loop {
    /// Picks up where a previous watcher on this file stopped: its
    /// recent tests and events (so they are not raised again).
    fn resume(&mut self) -> Result<()> {
        let now = now_unix();
        let quiet = self.quiet_s();
        for e in self.history.events(now - quiet)? {
            let subject = match e.scope.as_str() {
                "host" => Subject::Host(e.subject.clone()),
                _ => match e.subject.split_once(',') {
                    Some((a, b)) => Subject::Pair(a.into(), b.into()),
                    None => continue,
                },
            };
            self.raised
                .insert((subject, e.workload.clone()), e.at_unix + quiet);
        }
        let recent = self.history.tests(&Query {
            since_unix: now - quiet,
            limit: RECENT,
            ..Query::default()
        })?;
        self.note_probed(&recent);
        let events = self.history.events(now - 24.0 * 3600.0)?;
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

    /// How long a raised subject stays quiet: its baseline's span.
    fn quiet_s(&self) -> f64 {
        let r = &self.opts.rules;
        (r.baseline + r.confirm) as f64 * self.schedule.probe_period_s()
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
                async move { c.facts().await.ok() }
            }),
        )
        .await;
        let mut agents = Vec::new();
        let answered = got.iter().filter(|s| s.is_some()).count();
        for (&i, snap) in which.iter().zip(got) {
            self.answering[i] = snap.is_some();
            let Some(snap) = snap else { continue };
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

    /// Stores a job's tests, updates the series and looks for drift.
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
        for r in rows.iter().filter(|r| r.error.is_none()) {
            self.check_series(r, now)?;
        }
        self.raise(now).await
    }

    /// Re-judges the series `r` belongs to.
    fn check_series(&mut self, r: &HistoryRow, now: f64) -> Result<()> {
        let key = drift::series_key(r);
        let rules = &self.opts.rules;
        let every = if self.opts.probes.iter().any(|p| p.label == r.workload) {
            self.schedule.probe_period_s()
        } else {
            self.schedule.bandwidth_every_s()
        };
        let span = (rules.baseline + rules.confirm + 2) as f64 * every * 1.5;
        let rows: Vec<HistoryRow> = self
            .history
            .tests(&Query {
                pair: Some((r.client.clone(), r.server.clone())),
                since_unix: now - span,
                workload: Some(r.workload.clone()),
                limit: 0,
            })?
            .into_iter()
            .filter(|x| drift::series_key(x) == key)
            .collect();
        match drift::change(&rows, rules) {
            Some(c) => {
                let found = self.changes.get(&key).map(|x| x.1).unwrap_or(now);
                self.changes.insert(key, (c, found));
            }
            None => {
                self.changes.remove(&key);
            }
        }
        Ok(())
    }

    /// Raises an event for each subject that moved and is not quiet.
    async fn raise(&mut self, now: f64) -> Result<()> {
        let fresh = self.fresh_subjects(now);
        if fresh.is_empty() {
            return Ok(());
        }
        // The facts of the hosts named, read now: the event says what
        // changed up to this moment, not up to the last facts round.
        let mut hosts: Vec<usize> = Vec::new();
        for (s, _) in &fresh {
            let names = match s {
                Subject::Host(h) => vec![h],
                Subject::Pair(a, b) => vec![a, b],
            };
            hosts.extend(
                names
                    .iter()
                    .filter_map(|n| self.fleet.agents.iter().position(|a| &a.name == *n)),
            );
        }
        hosts.sort_unstable();
        hosts.dedup();
        self.read_facts_of(now, &hosts).await?;
        for (subject, cs) in fresh {
            let cs: Vec<&Change> = cs.iter().collect();
            let e = self.event(&subject, &cs, now)?;
            self.history.record_event(&e)?;
            self.live.metrics.event(&e);
            if let Some(f) = &self.opts.on_event {
                f(&e);
            }
            let mut st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
            st.events.push(e);
        }
        Ok(())
    }

    /// The subjects that moved and are not quiet (marked raised now),
    /// each with its changes.
    fn fresh_subjects(&mut self, now: f64) -> Vec<(Subject, Vec<Change>)> {
        let changes: Vec<(Change, f64)> = self.changes.values().cloned().collect();
        let pairs_of = |h: &str| self.pairs_of.get(h).copied().unwrap_or(0);
        // A pair event waits three periods after its change was found:
        // one series is its only witness, so it must hold for five tests
        // in a row (on the CI machine a pair's crr floor tripled for
        // three probes with nothing changed). A host's event has its
        // other pairs as witnesses and goes at once.
        let settled = now - 3.0 * self.schedule.probe_period_s();
        let found = drift::attribute(&changes, pairs_of, settled);
        // A host named now, or raised and not yet quiet, explains the
        // moves of its pairs (in any workload).
        let mut hosts: Vec<String> = self
            .raised
            .iter()
            .filter(|(_, until)| **until >= now)
            .filter_map(|((s, _), _)| match s {
                Subject::Host(h) => Some(h.clone()),
                Subject::Pair(..) => None,
            })
            .collect();
        hosts.extend(found.iter().filter_map(|(s, _)| match s {
            Subject::Host(h) => Some(h.clone()),
            Subject::Pair(..) => None,
        }));
        let quiet = self.quiet_s();
        let mut new = Vec::new();
        for (subject, cs) in found {
            if let Subject::Pair(a, b) = &subject
                && (hosts.contains(a) || hosts.contains(b))
            {
                continue;
            }
            let host_quiet = host_raised(&self.raised, &subject, now);
            let key = (subject.clone(), cs[0].workload.clone());
            let fresh = self.raised.get(&key).is_none_or(|&until| until < now);
            self.raised.insert(key, now + quiet);
            if fresh && !host_quiet {
                new.push((subject, cs.into_iter().cloned().collect()));
            }
        }
        new
    }

    /// The event for `subject`: what moved, how far, since when, and the
    /// facts of its hosts that changed since the baseline (their CPUs' idle
    /// time among them).
    fn event(&self, subject: &Subject, cs: &[&Change], now: f64) -> Result<DriftEvent> {
        let (scope, name) = subject.scope_and_name();
        let hosts: Vec<String> = match subject {
            Subject::Host(h) => vec![h.clone()],
            Subject::Pair(a, b) => vec![a.clone(), b.clone()],
        };
        let since = cs
            .iter()
            .map(|c| c.since_unix)
            .fold(f64::INFINITY, f64::min);
        let base_end = cs
            .iter()
            .map(|c| c.baseline_end_unix)
            .fold(f64::INFINITY, f64::min);
        let mut changed = Vec::new();
        for h in &hosts {
            let i = self.fleet.agents.iter().position(|a| &a.name == h);
            let now_facts = i.and_then(|i| self.facts[i].clone());
            if let (Some(before), Some(after)) = (self.history.facts_at(h, base_end)?, now_facts) {
                changed.extend(drift::facts_changed(h, &before, &after));
            }
            changed.extend(drift::idle_lost(h, cs));
        }
        let before = drift::median(&cs.iter().map(|c| c.before).collect::<Vec<_>>());
        let after = drift::median(&cs.iter().map(|c| c.after).collect::<Vec<_>>());
        let mut pairs: Vec<String> = cs
            .iter()
            .map(|c| format!("{},{}", c.pair.0, c.pair.1))
            .collect();
        pairs.sort();
        pairs.dedup();
        let message = describe(
            subject,
            cs[0],
            before,
            after,
            &pairs,
            self.pairs_of_subject(subject),
            since,
            &changed,
        );
        Ok(DriftEvent {
            at_unix: now,
            since_unix: since,
            scope: scope.into(),
            subject: name,
            workload: cs[0].workload.clone(),
            metric: cs[0].metric.into(),
            before,
            after,
            pairs,
            changed,
            message,
        })
    }

    fn pairs_of_subject(&self, s: &Subject) -> usize {
        match s {
            Subject::Host(h) => self.pairs_of.get(h).copied().unwrap_or(0),
            Subject::Pair(..) => 1,
        }
    }
}

/// The newest row of each series in `rows` (oldest first): what a
/// restarted watch shows of each link until it is measured again, a
/// link marked down among them.
fn newest_of_each(rows: &[HistoryRow]) -> Vec<HistoryRow> {
    let mut by: BTreeMap<(String, String), &HistoryRow> = BTreeMap::new();
    for r in rows {
        by.insert(drift::series_key(r), r);
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
        let key = drift::series_key(r);
        st.latest.retain(|x| drift::series_key(x) != key);
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

/// "the latency floor (fastest transaction) of rr-64k rose 1.8x (6200
/// us -> 11000 us) on c's links (5 of 5 pairs) from 14:02:10 UTC; c/eth0
/// mtu: 9000 -> 1500".
#[allow(clippy::too_many_arguments)]
fn describe(
    s: &Subject,
    c: &Change,
    before: f64,
    after: f64,
    pairs: &[String],
    of: usize,
    since: f64,
    changed: &[String],
) -> String {
    let (what, fmt): (&str, fn(f64) -> String) = if c.metric == "throughput_bps" {
        ("goodput", |v| format!("{:.1} Mbit/s", v / 1e6))
    } else {
        ("the latency floor (fastest transaction)", |v| {
            format!("{:.0} us", v)
        })
    };
    let ratio = if before > 0.0 { after / before } else { 0.0 };
    let dir = if after > before { "rose" } else { "fell" };
    let on = match s {
        Subject::Host(h) => format!("on {h}'s links ({} of {of} pairs)", pairs.len()),
        Subject::Pair(a, b) => format!("between {a} and {b}"),
    };
    let when = wirespeed_types::text::utc_time(since);
    let facts = if changed.is_empty() {
        "no host fact changed".to_string()
    } else {
        changed.join(", ")
    };
    format!(
        "{what} of {} {dir} {ratio:.1}x ({} -> {}) {on} from {when}; {facts}",
        c.workload,
        fmt(before),
        fmt(after)
    )
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
    fn a_raised_host_is_quiet_in_every_workload_and_a_pair_only_in_its_own() {
        let host = Subject::Host("c".into());
        let pair = Subject::Pair("a".into(), "b".into());
        let mut raised = HashMap::new();
        raised.insert((host.clone(), "rr-64k".to_string()), 100.0);
        raised.insert((pair.clone(), "rr-64k".to_string()), 100.0);
        assert!(host_raised(&raised, &host, 99.0));
        assert!(!host_raised(&raised, &host, 101.0), "quiet span over");
        assert!(!host_raised(&raised, &Subject::Host("d".into()), 99.0));
        assert!(!host_raised(&raised, &pair, 99.0), "pairs keep their key");
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
