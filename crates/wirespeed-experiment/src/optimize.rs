//! Optimize's search (`wirespeed optimize HOST`): finds, one variable at a time, the settings
//! that raise the goal (throughput one way or both ways, or rr latency),
//! measuring each step with the engine until its median is stable and
//! keeping it only when it beats the noise band. Host settings go through
//! tune's journal and are rolled back at the end unless `--keep`.
//! The decisions are `wirespeed_model::optimize`'s; this file builds the
//! search space, measures, applies and renders.

use crate::error::{Context, ExperimentError, Result, failed};
use crate::sys::stop_requested as stopped;
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use wirespeed_engine::{ClientConfig, run_test};
use wirespeed_host::doctor::Goal as DoctorGoal;
use wirespeed_host::tune::{self, Action, Host, Setting, StateDir};
use wirespeed_host::{Fs, Snapshot, diagnose};
use wirespeed_model::optimize::{Budget, Rules, Search, Verdict, needs_more};
use wirespeed_report::experiment::{
    CellResult, EXPERIMENT_SCHEMA_VERSION, ExperimentResults, Mode, Point, finalize,
};
use wirespeed_report::human_size;
use wirespeed_report::optimize::{Goal, Summary, render, verdict_text};
use wirespeed_types::spec::{PathSpec, parse_duration, parse_paths, parse_size};
use wirespeed_types::{Direction, TestResult, TestSpec, Workload};

/// Options of `wirespeed optimize`.
#[derive(clap::Args, Debug)]
pub struct OptimizeArgs {
    /// Server to optimize against (a `wirespeed serve`): HOST or HOST:PORT.
    pub host: String,
    /// Control port when HOST names none.
    #[arg(short, long, default_value_t = wirespeed_engine::DEFAULT_PORT)]
    pub port: u16,
    /// Key file for a server started with --key-file.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// What to raise: throughput (one way), bidir (both ways) or rr (lower p50 latency).
    #[arg(long, default_value = "throughput", value_parser = goal_parser())]
    pub goal: Goal,
    /// Request and response size of the rr goal.
    #[arg(long, default_value = "1")]
    pub size: String,
    /// Candidate paths LOCAL=REMOTE, comma separated, in the order they are added.
    #[arg(long)]
    pub paths: Option<String>,
    /// Time for the whole search, e.g. 2m; steps that no longer fit are skipped.
    #[arg(long, default_value = "2m")]
    pub budget: String,
    /// Measured time of each repeat.
    #[arg(long, default_value = "2s")]
    pub step_duration: String,
    /// Traffic before each repeat's measurement.
    #[arg(long, default_value = "0.5s")]
    pub warmup: String,
    /// Repeats of each step at least.
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// Repeats of each step at most (while its median is not stable).
    #[arg(long, default_value_t = 5)]
    pub max_repeats: u32,
    /// Noise band a step must beat, e.g. 3%.
    #[arg(long, default_value = "3%")]
    pub noise: String,
    /// Leave the host settings found in place (undo later with `wirespeed tune rollback`).
    #[arg(long)]
    pub keep: bool,
    /// Do not try host settings (MTU, BIG TCP, TCP buffer sysctls).
    #[arg(long)]
    pub no_host: bool,
    /// Journal directory for host settings [default: /var/lib/wirespeed/optimize/NETNS].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Write the ladder as experiment results JSON here (`wirespeed report` renders it).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Print the results JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Timeout for connecting and for each control answer.
    #[arg(long, default_value = "10s")]
    pub timeout: String,
}

/// One configuration of the bench side (host settings are tracked apart).
#[derive(Debug, Clone, PartialEq)]
struct Config {
    npaths: usize,
    flows_per_path: u32,
    threads: u32,
    msg_size: u32,
    buffer: Option<u32>,
    zerocopy: bool,
    /// Busy polling per socket and epoll instance, µs (`--busy-poll`).
    busy_poll: Option<u32>,
}

/// Bench-side variables ([`bench_variable`]'s indices).
const BENCH_VARIABLES: usize = 7;

// The busy-poll time optimize tries for rr, µs: the one doctor's
// busy-poll finding names.
use wirespeed_host::doctor::BUSY_POLL_US;

impl Config {
    /// Where a search starts: the first of `npaths` paths (if any), one
    /// flow, one thread, 512 KiB messages, defaults otherwise.
    fn start(npaths: usize) -> Config {
        Config {
            npaths: npaths.min(1),
            flows_per_path: 1,
            threads: 1,
            msg_size: 512 << 10,
            buffer: None,
            zerocopy: false,
            busy_poll: None,
        }
    }
}

/// A size as bench takes it: `512k`, `4m` or bytes.
fn size_arg(v: u32) -> String {
    if v.is_multiple_of(1 << 20) {
        format!("{}m", v >> 20)
    } else if v.is_multiple_of(1024) {
        format!("{}k", v >> 10)
    } else {
        v.to_string()
    }
}

/// What a search needs to build specs.
struct Ctx {
    goal: Goal,
    rr_size: u32,
    paths: Vec<PathSpec>,
    /// The local NIC of each candidate path, where known.
    devs: Vec<Option<String>>,
    duration_s: f64,
    warmup_s: f64,
}

impl Ctx {
    fn spec(&self, c: &Config) -> Result<TestSpec> {
        let paths: Vec<PathSpec> = self.paths.iter().take(c.npaths).cloned().collect();
        let flows = c.flows_per_path * c.npaths.max(1) as u32;
        let mut s = TestSpec {
            duration_s: self.duration_s,
            warmup_s: self.warmup_s,
            threads: c.threads.min(flows),
            flows,
            paths,
            msg_size: c.msg_size,
            sndbuf: c.buffer,
            rcvbuf: c.buffer,
            zerocopy: c.zerocopy,
            busy_poll_us: c.busy_poll,
            ..TestSpec::default()
        };
        match self.goal {
            Goal::Throughput => {}
            Goal::Bidir => s.direction = Direction::Bidir,
            Goal::Rr => {
                s.workload = Workload::Rr;
                s.request_size = self.rr_size;
                s.response_size = self.rr_size;
                s.nodelay = true;
            }
        }
        s.validate(&wirespeed_types::Limits::default())?;
        Ok(s)
    }

    /// The `wirespeed bench` arguments of a configuration.
    fn bench_args(&self, c: &Config) -> Vec<String> {
        let mut v = Vec::new();
        let used: Vec<String> = self.paths.iter().take(c.npaths).map(path_arg).collect();
        if !used.is_empty() {
            v.extend(["--paths".to_string(), used.join(",")]);
        }
        let flows = c.flows_per_path * c.npaths.max(1) as u32;
        match self.goal {
            Goal::Rr => {
                v.extend([
                    "-w".into(),
                    "rr".into(),
                    "--size".into(),
                    size_arg(self.rr_size),
                ]);
            }
            g => {
                if g == Goal::Bidir {
                    v.push("--bidir".into());
                }
                v.extend(["-F".into(), flows.to_string()]);
                v.extend(["-T".into(), c.threads.min(flows).to_string()]);
                v.extend(["-l".into(), size_arg(c.msg_size)]);
            }
        }
        if let Some(b) = c.buffer {
            v.extend(["--socket-buffer".into(), size_arg(b)]);
        }
        if c.zerocopy {
            v.push("--zerocopy".into());
        }
        if let Some(us) = c.busy_poll {
            v.extend(["--busy-poll".into(), us.to_string()]);
        }
        v
    }
}

fn path_arg(p: &PathSpec) -> String {
    match &p.local {
        Some(l) => format!("{l}={}", p.remote),
        None => p.remote.clone(),
    }
}

/// One change to try on top of the best configuration: a bench
/// configuration and the host actions it needs (either may be as before).
#[derive(Debug, Clone)]
struct Change {
    conf: Config,
    actions: Vec<Action>,
}

/// A variable and its candidate values; `monotonic` ones stop at the
/// first candidate that does not beat the best.
struct Variable {
    name: &'static str,
    monotonic: bool,
    candidates: Vec<(String, Change)>,
}

/// Bench-side variables, built from the best configuration when their
/// turn comes. A path added on a NIC that shares its subnet with another
/// brings the doctor's per-NIC source routing along (`routes`), as report
/// 2's second NIC needed its own route.
fn bench_variable(ctx: &Ctx, i: usize, best: &Config, routes: &[Action]) -> Option<Variable> {
    let with = |f: &dyn Fn(&mut Config)| {
        let mut conf = best.clone();
        f(&mut conf);
        Change {
            conf,
            actions: Vec::new(),
        }
    };
    let add_paths = |n: usize| {
        let mut ch = with(&|c| c.npaths = n);
        ch.actions = routes
            .iter()
            .filter(|r| {
                r.setting
                    .dev()
                    .is_some_and(|d| ctx.devs.iter().take(n).any(|x| x.as_deref() == Some(d)))
            })
            .cloned()
            .collect();
        ch
    };
    let stream = ctx.goal != Goal::Rr;
    let v = match i {
        0 if stream => Variable {
            name: "paths used",
            monotonic: true,
            candidates: (best.npaths + 1..=ctx.paths.len())
                .map(|n| {
                    let ch = add_paths(n);
                    let label = if ch.actions.is_empty() {
                        n.to_string()
                    } else {
                        format!("{n} + source routing")
                    };
                    (label, ch)
                })
                .collect(),
        },
        1 if stream => Variable {
            name: "flows per path",
            monotonic: true,
            candidates: [2u32, 4, 8]
                .into_iter()
                .filter(|&f| f > best.flows_per_path)
                .map(|f| (f.to_string(), with(&|c| c.flows_per_path = f)))
                .collect(),
        },
        2 if stream => {
            let flows = best.flows_per_path * best.npaths.max(1) as u32;
            Variable {
                name: "threads",
                monotonic: true,
                candidates: [2u32, 4, 8]
                    .into_iter()
                    .filter(|&t| t > best.threads && t <= flows)
                    .map(|t| (t.to_string(), with(&|c| c.threads = t)))
                    .collect(),
            }
        }
        3 if stream => Variable {
            name: "message size",
            monotonic: false,
            candidates: [128u32 << 10, 1 << 20]
                .into_iter()
                .filter(|&m| m != best.msg_size)
                .map(|m| (size_arg(m), with(&|c| c.msg_size = m)))
                .collect(),
        },
        4 => Variable {
            name: "socket buffers",
            monotonic: false,
            candidates: [1u32 << 20, 4 << 20]
                .into_iter()
                .map(|b| (size_arg(b), with(&|c| c.buffer = Some(b))))
                .collect(),
        },
        5 if stream => Variable {
            name: "zero-copy",
            monotonic: true,
            candidates: vec![("on".into(), with(&|c| c.zerocopy = true))],
        },
        // The receiver's wake-up, which a breakdown names when it takes
        // the tail (explain_latency): busy poll instead of sleeping.
        6 if !stream => Variable {
            name: "busy poll (us)",
            monotonic: true,
            candidates: [BUSY_POLL_US]
                .into_iter()
                .filter(|_| best.busy_poll.is_none())
                .map(|us| (us.to_string(), with(&|c| c.busy_poll = Some(us))))
                .collect(),
        },
        _ => return None,
    };
    Some(v)
}

/// The NIC of a path: LOCAL as a device, or the device holding LOCAL.
fn dev_of(snap: &Snapshot, p: &PathSpec) -> Option<String> {
    let local = p.local.as_deref()?;
    if snap.link(local).is_some() {
        return Some(local.to_string());
    }
    let bare = |a: &str| a.split('/').next().unwrap_or("").to_string();
    snap.egress
        .iter()
        .find(|e| bare(&e.address) == local)
        .map(|e| e.dev.clone())
        .or_else(|| {
            snap.links
                .iter()
                .find(|l| l.addresses.iter().any(|a| bare(a) == local))
                .map(|l| l.name.clone())
        })
}

/// Largest TCP buffer the sysctl step offers, bytes.
const TCP_MEM_MAX: u64 = 64 << 20;
/// MTU the jumbo step offers.
const JUMBO_MTU: u32 = 9000;
/// GSO/GRO size the BIG TCP step offers (report 4), bounded by tso_max_size.
const BIG_TCP_SIZE: u32 = 185_000;

fn host_change(best: &Config, actions: Vec<Action>) -> Change {
    Change {
        conf: best.clone(),
        actions,
    }
}

/// Host-side variables for the NICs of the paths in use.
fn host_variables(snap: &Snapshot, devs: &[String], best: &Config) -> Vec<Variable> {
    let mut out = Vec::new();
    let mut sys = Vec::new();
    for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
        if let Some(v) = snap.sysctl_ints(key).filter(|v| v.len() == 3)
            && v[2] < TCP_MEM_MAX
        {
            sys.push(Action::sysctl(
                key,
                format!("{} {} {TCP_MEM_MAX}", v[0], v[1]),
            ));
        }
    }
    if !sys.is_empty() {
        out.push(Variable {
            name: "tcp buffer maxima",
            monotonic: true,
            candidates: vec![(human_size(TCP_MEM_MAX), host_change(best, sys))],
        });
    }
    let links: Vec<_> = devs.iter().filter_map(|d| snap.link(d)).collect();
    let mtu: Vec<Action> = links
        .iter()
        .filter(|l| l.mtu < JUMBO_MTU && l.max_mtu.is_none_or(|m| m >= JUMBO_MTU))
        .map(|l| Action {
            setting: Setting::Mtu {
                dev: l.name.clone(),
            },
            value: JUMBO_MTU.to_string(),
        })
        .collect();
    if !mtu.is_empty() {
        out.push(Variable {
            name: "mtu",
            monotonic: true,
            candidates: vec![(JUMBO_MTU.to_string(), host_change(best, mtu))],
        });
    }
    let mut big = Vec::new();
    let mut size = BIG_TCP_SIZE;
    for l in &links {
        let Some(tso) = l.tso_max_size.filter(|t| *t > 65536) else {
            continue;
        };
        let n = tso.min(BIG_TCP_SIZE);
        size = size.min(n);
        let dev = l.name.clone();
        let mut add = |s: Setting, cur: Option<u32>| {
            if cur.is_none_or(|c| c < n) {
                big.push(Action {
                    setting: s,
                    value: n.to_string(),
                });
            }
        };
        add(Setting::GsoMaxSize { dev: dev.clone() }, l.gso_max_size);
        add(Setting::GroMaxSize { dev: dev.clone() }, l.gro_max_size);
        if snap.big_tcp.ipv4 {
            add(
                Setting::GsoIpv4MaxSize { dev: dev.clone() },
                l.gso_ipv4_max_size,
            );
            add(Setting::GroIpv4MaxSize { dev }, l.gro_ipv4_max_size);
        }
    }
    if !big.is_empty() {
        out.push(Variable {
            name: "big tcp",
            monotonic: true,
            candidates: vec![(size.to_string(), host_change(best, big))],
        });
    }
    out
}

/// The host side: tune's journal, rolled back when the search ends, on
/// error too (the guard's drop), unless kept.
struct HostSide {
    host: Host,
    state: StateDir,
    keep: bool,
    /// Where /proc and /sys are read.
    fs: Fs,
    touched: bool,
    done: bool,
    /// The server and the paths' remote ends: checked after each apply.
    peers: Vec<std::net::IpAddr>,
}

/// What an apply did: the commands, the values they replaced and the
/// check that failed after it, if one did.
type Applied = (
    Vec<String>,
    Vec<Action>,
    Option<wirespeed_host::guard::CheckFailed>,
);

impl HostSide {
    /// Applies actions, then checks that the gateway and the peers still
    /// answer (and that a full-size packet gets through after an MTU
    /// raise); a failed check undoes the step at once (issue 13).
    /// Returns the commands and the values they replaced.
    fn apply(&mut self, source: &str, actions: Vec<Action>) -> Result<(Vec<String>, Vec<Action>)> {
        let (cmds, undo, check_failed) = self.apply_unchecked(source, actions, true)?;
        if let Some(why) = check_failed {
            self.apply_unchecked("optimize undo", undo, false)?;
            return Err(failed(
                "check after the apply",
                format!("{why}; undone at once"),
            ));
        }
        Ok((cmds, undo))
    }

    /// Applies actions; with `check`, also the checks after.
    fn apply_unchecked(
        &mut self,
        source: &str,
        actions: Vec<Action>,
        check: bool,
    ) -> Result<Applied> {
        let snap = snapshot(&self.fs)?;
        let plan = self.host.plan(source, actions, &snap)?;
        if let Some((a, why)) = plan.skipped.first() {
            return Err(failed(a.setting.label(), why));
        }
        let undo = plan
            .steps
            .iter()
            .filter(|s| !s.no_op)
            .map(|s| Action {
                setting: s.action.setting.clone(),
                value: s.current.clone(),
            })
            .collect();
        let cmds = plan
            .steps
            .iter()
            .filter(|s| !s.no_op)
            .map(|s| s.command.clone())
            .collect();
        self.touched = true;
        let checks = check.then(|| wirespeed_host::guard::Checks::before(&snap, &self.peers));
        tune::apply(&mut self.host, &self.state, &plan, None)?;
        let check_failed =
            checks.and_then(|c| c.after(&plan, std::time::Duration::from_secs(3)).err());
        Ok((cmds, undo, check_failed))
    }

    /// Rolls everything back unless kept; returns what was restored.
    fn finish(&mut self) -> Result<Vec<String>> {
        if self.done || self.keep || !self.touched {
            self.done = true;
            return Ok(vec![]);
        }
        self.done = true;
        let r = tune::rollback(&mut self.host, &self.state)?;
        for (what, why) in &r.skipped {
            crate::progress::say(format!(
                "warning: could not restore {what}: {why} (it no longer exists)"
            ));
        }
        Ok(r.restored)
    }
}

impl Drop for HostSide {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            crate::progress::say(format!(
                "warning: rolling back host settings failed: {e}; run `wirespeed tune rollback --state-dir {}`",
                self.state.dir().display()
            ));
        }
    }
}

/// The results file: experiment results (for `wirespeed report`) plus the search.
#[derive(Serialize)]
struct Output<'a> {
    #[serde(flatten)]
    results: &'a ExperimentResults,
    optimize: &'a Summary,
}

fn parse_pct(s: &str) -> Result<f64> {
    let t = s.trim().trim_end_matches('%').trim();
    let v: f64 = t
        .parse()
        .ctx(|| format!("bad --noise {s:?}: expected a percentage such as 3%"))?;
    if !(v.is_finite() && (0.0..100.0).contains(&v)) {
        return Err(ExperimentError::Invalid(wirespeed_types::Invalid(format!(
            "--noise {s:?} must be between 0% and 100%"
        ))));
    }
    Ok(v)
}

/// Measures one configuration: repeats until the rules are satisfied,
/// the budget cannot cover another repeat, or a stop was asked for.
fn measure(
    cfg: &ClientConfig,
    spec: &TestSpec,
    goal: Goal,
    rules: &Rules,
    budget: &mut Budget,
) -> (Vec<f64>, Vec<TestResult>, Option<String>) {
    let (mut vals, mut runs) = (Vec::new(), Vec::new());
    while needs_more(rules, &vals) && budget.covers_repeat() && !stopped() {
        let t = Instant::now();
        let r = run_test(cfg, spec, &mut |_| {});
        budget.measured(t.elapsed().as_secs_f64());
        match r {
            Ok(r) => {
                vals.push(goal.value(&r));
                runs.push(r);
            }
            Err(e) => return (vals, runs, Some(e.to_string())),
        }
    }
    (vals, runs, None)
}

/// What a search leaves: the results file's JSON and the text for people.
#[derive(Debug)]
pub struct Finished {
    /// Experiment results plus the search, as written to `--out`.
    pub json: String,
    /// The ladder table, the recommendation and the host changes.
    pub text: String,
}

/// The host as the search reads it: `fs` roots /proc and /sys.
fn snapshot(fs: &Fs) -> Result<Snapshot> {
    let mut s = wirespeed_host::inspect(fs)?;
    s.netns = wirespeed_host::reentry::current_netns();
    Ok(s)
}

/// Runs the search against `a.host` from this namespace; host settings go
/// through a journal under `fs` (rolled back at the end unless `--keep`).
/// The caller settles an overdue tune journal first.
pub fn run(a: &OptimizeArgs, fs: Fs) -> Result<Finished> {
    crate::sys::catch_stop_signals();
    let (mut ctx, rules) = ctx_of(a)?;
    let cfg = client_config(a)?;
    let best = Config::start(ctx.paths.len());
    ctx.spec(&best)?;
    let budget = Budget::new(
        parse_duration(&a.budget)?,
        ctx.duration_s + ctx.warmup_s + 0.2,
    );
    let mut notes = Vec::new();
    let host = if a.no_host {
        None
    } else {
        open_host_side(a, &fs, &mut notes)?
    };
    // Per-NIC source routing the doctor asks for, brought in with the paths.
    let mut routes = Vec::new();
    if let Ok(snap) = snapshot(&fs) {
        ctx.devs = ctx.paths.iter().map(|p| dev_of(&snap, p)).collect();
        if host.is_some() {
            routes = diagnose(&snap, &DoctorGoal::default())
                .into_iter()
                .filter(|f| f.id == "second-nic-unused")
                .flat_map(|f| f.actions)
                .collect();
        }
    }
    let mut climb = Climb {
        a,
        ctx,
        cfg,
        rules,
        budget,
        notes,
        host,
        search: Search::new(rules),
        ladder_runs: Vec::new(),
        host_changes: Vec::new(),
        best,
    };
    let started = Instant::now();
    climb.baseline()?;
    let mut bench_i = 0usize;
    let mut host_vars: Option<Vec<Variable>> = None;
    while let Some(var) = climb.next_variable(&mut bench_i, &mut host_vars, &fs, &routes) {
        climb.try_variable(var);
    }
    let elapsed = started.elapsed().as_secs_f64();
    climb.finish(elapsed)
}

/// `--goal`'s parser: the model's goal names, listed by `--help` and
/// clap's error, parsed into a [`Goal`].
fn goal_parser() -> impl clap::builder::TypedValueParser<Value = Goal> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Goal::NAMES).try_map(|s: String| s.parse::<Goal>())
}

/// The search's goal and test settings from the arguments, and the
/// rules it judges by.
fn ctx_of(a: &OptimizeArgs) -> Result<(Ctx, Rules)> {
    let goal = a.goal;
    let rules = Rules::new(
        a.repeats,
        a.max_repeats,
        parse_pct(&a.noise)?,
        goal.better(),
    );
    let ctx = Ctx {
        devs: Vec::new(),
        goal,
        rr_size: u32::try_from(parse_size(&a.size)?)
            .map_err(|_| wirespeed_types::Invalid("--size must be below 4 GiB".into()))?,
        paths: a
            .paths
            .as_deref()
            .map(parse_paths)
            .transpose()?
            .unwrap_or_default(),
        duration_s: parse_duration(&a.step_duration)?,
        warmup_s: parse_duration(&a.warmup)?,
    };
    Ok((ctx, rules))
}

/// How the search reaches the server: port, timeout and key.
fn client_config(a: &OptimizeArgs) -> Result<ClientConfig> {
    let mut cfg = ClientConfig::new(&a.host);
    cfg.port = a.port;
    cfg.timeout = Duration::from_secs_f64(parse_duration(&a.timeout)?.max(0.1));
    if let Some(p) = &a.key_file {
        let k = wirespeed_engine::read_key_file(p)?;
        if let Some(w) = &k.warning {
            crate::progress::say(format!("warning: {w}"));
        }
        cfg.key = Some(k.key);
    }
    Ok(cfg)
}

/// A search under way: what it measures with, and what it has found.
struct Climb<'a> {
    a: &'a OptimizeArgs,
    ctx: Ctx,
    cfg: ClientConfig,
    rules: Rules,
    budget: Budget,
    notes: Vec<String>,
    host: Option<HostSide>,
    search: Search,
    /// Per ladder entry: the runs, the bench config and the host changes in force.
    ladder_runs: Vec<(Vec<TestResult>, Config, Vec<String>)>,
    host_changes: Vec<String>,
    best: Config,
}

impl Climb<'_> {
    /// Measures the starting configuration: the ladder's first rung.
    fn baseline(&mut self) -> Result<()> {
        let (a, goal) = (self.a, self.ctx.goal);
        let base_spec = self.ctx.spec(&self.best)?;
        let (vals, runs, err) = measure(&self.cfg, &base_spec, goal, &self.rules, &mut self.budget);
        if let Some(e) = err {
            return Err(failed(format!("the baseline test against {}", a.host), e));
        }
        if !self
            .search
            .judge("baseline", "1 path, 1 flow", &vals)
            .on_ladder()
        {
            return Err(failed(
                format!("the baseline against {}", a.host),
                "it measured nothing usable",
            ));
        }
        self.ladder_runs.push((runs, self.best.clone(), vec![]));
        if !a.json {
            crate::progress::say(format!(
                "baseline: {}",
                goal.human(self.search.baseline_median())
            ));
        }
        Ok(())
    }

    /// The next variable to try: the bench ones in turn (built from the
    /// best configuration so far), then the host ones (read once, when
    /// the bench ones are done); None when all are tried.
    fn next_variable(
        &mut self,
        bench_i: &mut usize,
        host_vars: &mut Option<Vec<Variable>>,
        fs: &Fs,
        routes: &[Action],
    ) -> Option<Variable> {
        loop {
            if let Some(v) = bench_variable(&self.ctx, *bench_i, &self.best, routes) {
                *bench_i += 1;
                return Some(v);
            }
            if *bench_i < BENCH_VARIABLES {
                *bench_i += 1;
                continue;
            }
            let hv = host_vars.get_or_insert_with(|| match &self.host {
                Some(_) => host_snapshot_vars(&self.ctx, fs, &self.best, &mut self.notes),
                None => Vec::new(),
            });
            if hv.is_empty() {
                return None;
            }
            return Some(hv.remove(0));
        }
    }

    /// Tries `var`'s candidates on top of the best configuration; a kept
    /// one becomes the best, a rejected one's host changes are undone.
    fn try_variable(&mut self, var: Variable) {
        for (setting, change) in var.candidates {
            let conf = change.conf.clone();
            let Some(applied) = self.apply_host(var.name, &setting, change) else {
                continue;
            };
            let verdict = self.judge(var.name, &setting, &conf, applied.as_ref());
            if !self.a.json {
                let s = self.search.steps.last().expect("a step was just recorded");
                crate::progress::say(format!(
                    "{} {}: {} {}",
                    s.variable,
                    s.setting,
                    self.ctx.goal.human(s.median),
                    verdict_text(&s.verdict)
                ));
            }
            if verdict == Verdict::Kept {
                self.best = conf;
                if let Some((cmds, _)) = applied {
                    self.host_changes.extend(cmds);
                }
            } else {
                if let (Some((_, undo)), Some(h)) = (applied, self.host.as_mut())
                    && let Err(e) = h.apply("optimize undo", undo)
                {
                    self.notes
                        .push(format!("undoing {} failed: {e:#}", var.name));
                }
                if var.monotonic {
                    break;
                }
            }
        }
    }

    /// Applies `change`'s host actions, if any: Some(what was applied and
    /// its undo), or None when the step is skipped (interrupted, out of
    /// budget, or a pure host step whose settings did not apply).
    fn apply_host(
        &mut self,
        name: &'static str,
        setting: &str,
        change: Change,
    ) -> Option<Option<(Vec<String>, Vec<Action>)>> {
        if stopped() {
            self.search.skip(name, setting, "interrupted");
            return None;
        }
        if !self.budget.covers_step(&self.rules) {
            self.search.skip(
                name,
                setting,
                &format!(
                    "budget: {:.1} s left, a step needs {:.1} s",
                    self.budget.left_s(),
                    self.budget.per_measurement_s() * self.rules.min_repeats as f64
                ),
            );
            return None;
        }
        let mut applied = None;
        if !change.actions.is_empty() {
            let t = Instant::now();
            let r = match self.host.as_mut() {
                Some(h) => h.apply(&format!("optimize {name}"), change.actions.clone()),
                None => Err(ExperimentError::HostOff),
            };
            self.budget.spend(t.elapsed().as_secs_f64());
            match r {
                Ok(x) => applied = Some(x),
                // A pure host step is pointless without its settings.
                Err(e) if change.conf == self.best => {
                    self.search
                        .skip(name, setting, &format!("not applied: {e}"));
                    return None;
                }
                Err(e) => self.notes.push(format!(
                    "{name} {setting}: measured without its host settings: {e}"
                )),
            }
        }
        Some(applied)
    }

    /// Measures `conf` and judges it against the best; a kept step joins
    /// the ladder with the host changes in force (`applied`'s too).
    fn judge(
        &mut self,
        name: &'static str,
        setting: &str,
        conf: &Config,
        applied: Option<&(Vec<String>, Vec<Action>)>,
    ) -> Verdict {
        match self.ctx.spec(conf) {
            Err(e) => self.search.skip(name, setting, &format!("{e:#}")),
            Ok(spec) => {
                let (vals, runs, err) = measure(
                    &self.cfg,
                    &spec,
                    self.ctx.goal,
                    &self.rules,
                    &mut self.budget,
                );
                if let Some(e) = err {
                    self.search
                        .skip(name, setting, &format!("test failed: {e}"))
                } else {
                    let v = self.search.judge(name, setting, &vals);
                    if v == Verdict::Kept {
                        let mut changes = self.host_changes.clone();
                        if let Some((cmds, _)) = applied {
                            changes.extend(cmds.iter().cloned());
                        }
                        self.ladder_runs.push((runs, conf.clone(), changes));
                    }
                    v
                }
            }
        }
    }

    /// Rolls the host back (unless `--keep`), writes the results file and
    /// renders the summary; the search took `elapsed` seconds.
    fn finish(mut self, elapsed: f64) -> Result<Finished> {
        let a = self.a;
        let rolled_back = match self.host.as_mut() {
            Some(h) => h.finish()?,
            None => vec![],
        };
        if stopped() {
            self.notes
                .push("interrupted: remaining steps skipped".into());
        }
        let results = ladder_results(a, &self.ctx, &self.search, self.ladder_runs, &self.rules);
        let summary = Summary {
            goal: self.ctx.goal,
            rules: self.rules,
            budget: self.budget,
            best_median: self.search.best().and_then(|b| b.median),
            bench_command: format!(
                "wirespeed bench {} {}",
                a.host,
                self.ctx.bench_args(&self.best).join(" ")
            ),
            host_changes: self.host_changes,
            host_changes_kept: a.keep,
            state_dir: self
                .host
                .as_ref()
                .map(|h| h.state.dir().display().to_string()),
            rolled_back,
            notes: self.notes,
            steps: self.search.steps.clone(),
        };
        let text = serde_json::to_string_pretty(&Output {
            results: &results,
            optimize: &summary,
        })
        .ctx(|| "encode the results".into())?;
        if let Some(p) = &a.out {
            std::fs::write(p, format!("{text}\n")).ctx(|| format!("write {}", p.display()))?;
        }
        Ok(Finished {
            text: render(&summary, elapsed, a.out.as_deref()),
            json: text,
        })
    }
}

fn open_host_side(a: &OptimizeArgs, fs: &Fs, notes: &mut Vec<String>) -> Result<Option<HostSide>> {
    let host = match Host::open(fs.clone()) {
        Ok(h) => h,
        Err(e) => {
            notes.push(format!("host settings skipped: cannot open netlink: {e}"));
            return Ok(None);
        }
    };
    let dir = a.state_dir.clone().unwrap_or_else(|| {
        let ns = wirespeed_host::reentry::current_netns().unwrap_or_else(|| "host".into());
        PathBuf::from("/var/lib/wirespeed/optimize").join(ns)
    });
    let state = StateDir::new(dir);
    if state.load()?.is_some_and(|j| !j.entries.is_empty()) {
        return Err(ExperimentError::Journal(state.dir().to_path_buf()));
    }
    // The server and the paths' remote ends, checked after each host step.
    let peers = std::iter::once(a.host.as_str())
        .chain(
            a.paths
                .iter()
                .flat_map(|p| p.split(','))
                .map(|p| p.rsplit('=').next().unwrap_or(p)),
        )
        .filter_map(|h| {
            let h = h.trim();
            h.parse::<std::net::IpAddr>()
                .ok()
                .or_else(|| h.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()))
        })
        .collect();
    Ok(Some(HostSide {
        host,
        state,
        keep: a.keep,
        fs: fs.clone(),
        touched: false,
        done: false,
        peers,
    }))
}

fn host_snapshot_vars(ctx: &Ctx, fs: &Fs, best: &Config, notes: &mut Vec<String>) -> Vec<Variable> {
    let snap = match snapshot(fs) {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("host settings skipped: {e}"));
            return vec![];
        }
    };
    let mut devs = Vec::new();
    for (i, p) in ctx.paths.iter().enumerate().take(best.npaths) {
        match ctx.devs.get(i).cloned().flatten() {
            Some(d) if !devs.contains(&d) => devs.push(d),
            Some(_) => {}
            None => notes.push(format!(
                "path {} names no local NIC: MTU and BIG TCP are not tried on it",
                path_arg(p)
            )),
        }
    }
    if devs.is_empty() && ctx.paths.is_empty() {
        notes.push("no --paths: MTU and BIG TCP need LOCAL=REMOTE paths to know the NICs".into());
    }
    host_variables(&snap, &devs, best)
}

/// The ladder as experiment results: the baseline and each kept step.
fn ladder_results(
    a: &OptimizeArgs,
    ctx: &Ctx,
    search: &Search,
    runs: Vec<(Vec<TestResult>, Config, Vec<String>)>,
    rules: &Rules,
) -> ExperimentResults {
    let cells = search
        .ladder()
        .into_iter()
        .zip(runs)
        .map(|(s, (runs, conf, host))| CellResult {
            name: if s.verdict == Verdict::Baseline {
                "baseline".into()
            } else {
                format!("{} {}", s.variable, s.setting)
            },
            change: if s.verdict == Verdict::Baseline {
                s.setting.clone()
            } else {
                format!("{} = {}", s.variable, s.setting)
            },
            bench_args: ctx.bench_args(&conf),
            lab_changes: host,
            points: vec![Point {
                runs,
                ..Point::default()
            }],
            ..CellResult::default()
        })
        .collect();
    let mut res = ExperimentResults {
        schema_version: EXPERIMENT_SCHEMA_VERSION,
        name: format!("optimize {} ({})", a.host, a.goal.name()),
        mode: Mode::Ladder,
        repeats: rules.min_repeats,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        cells,
        ..ExperimentResults::default()
    };
    finalize(&mut res);
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{BenchArgs, spec_from};
    use wirespeed_host::Known;
    use wirespeed_host::snapshot::{BigTcpSupport, Link};

    fn ctx(goal: Goal, npaths: usize) -> Ctx {
        Ctx {
            goal,
            rr_size: 1,
            paths: (0..npaths)
                .map(|i| PathSpec::parse(&format!("10.0.{i}.1=10.0.{i}.2")).unwrap())
                .collect(),
            devs: (0..npaths).map(|i| Some(format!("eth{i}"))).collect(),
            duration_s: 1.0,
            warmup_s: 0.2,
        }
    }

    fn start(npaths: usize) -> Config {
        Config::start(npaths)
    }

    fn labels(c: &Ctx, i: usize, best: &Config) -> Vec<String> {
        bench_variable(c, i, best, &[])
            .map(|v| v.candidates.into_iter().map(|(l, _)| l).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_bench_space_comes_in_order_and_only_goes_up() {
        let c = ctx(Goal::Throughput, 2);
        let best = start(2);
        let names: Vec<&str> = (0..8)
            .filter_map(|i| bench_variable(&c, i, &best, &[]))
            .map(|v| v.name)
            .collect();
        assert_eq!(
            names,
            [
                "paths used",
                "flows per path",
                "threads",
                "message size",
                "socket buffers",
                "zero-copy"
            ]
        );
        assert_eq!(labels(&c, 0, &best), ["2"]);
        assert_eq!(labels(&c, 1, &best), ["2", "4", "8"]);
        assert!(labels(&c, 2, &best).is_empty(), "one flow: no more threads");
        assert_eq!(labels(&c, 3, &best), ["128k", "1m"]);
        assert_eq!(labels(&c, 4, &best), ["1m", "4m"]);
        let wide = Config {
            npaths: 2,
            flows_per_path: 4,
            ..best.clone()
        };
        assert_eq!(labels(&c, 0, &wide), Vec::<String>::new());
        assert_eq!(labels(&c, 1, &wide), ["8"]);
        assert_eq!(labels(&c, 2, &wide), ["2", "4", "8"]);
        let v = bench_variable(&c, 1, &wide, &[]).unwrap();
        assert!(v.monotonic);
        assert_eq!(v.candidates[0].1.conf.flows_per_path, 8);
        assert!(!bench_variable(&c, 3, &best, &[]).unwrap().monotonic);
        // Latency: the socket buffers and busy polling on the bench side.
        let rr = ctx(Goal::Rr, 2);
        let names: Vec<&str> = (0..8)
            .filter_map(|i| bench_variable(&rr, i, &best, &[]))
            .map(|v| v.name)
            .collect();
        assert_eq!(names, ["socket buffers", "busy poll (us)"]);
        let bp = bench_variable(&rr, 6, &best, &[]).unwrap();
        let conf = &bp.candidates[0].1.conf;
        assert_eq!(rr.spec(conf).unwrap().busy_poll_us, Some(50));
        let args = rr.bench_args(conf);
        assert!(
            args.ends_with(&["--busy-poll".into(), "50".into()]),
            "{args:?}"
        );
    }

    #[test]
    fn a_path_brings_the_source_routing_of_its_nic() {
        let c = ctx(Goal::Throughput, 2);
        let route = |dev: &str| Action {
            setting: Setting::Mtu { dev: dev.into() },
            value: "1500".into(),
        };
        let v = bench_variable(&c, 0, &start(2), &[route("eth1"), route("eth7")]).unwrap();
        let (label, change) = &v.candidates[0];
        assert_eq!(label, "2 + source routing");
        assert_eq!(change.actions, vec![route("eth1")]);
        assert_eq!(change.conf.npaths, 2);
    }

    fn snap(links: Vec<Link>, rmem: &str, wmem: &str, ipv4: bool) -> Snapshot {
        Snapshot {
            schema_version: 1,
            hostname: "h".into(),
            netns: None,
            kernel: "6.8".into(),
            cpus: 4,
            mem_total_bytes: Known::Value(1 << 30),
            big_tcp: BigTcpSupport { ipv6: true, ipv4 },
            links,
            routes: vec![],
            rules: vec![],
            egress: vec![],
            sysctls: [("net.ipv4.tcp_rmem", rmem), ("net.ipv4.tcp_wmem", wmem)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Known::Value(v.to_string())))
                .collect(),
            sysctl_readonly: vec![],
        }
    }

    #[test]
    fn host_steps_offer_only_settings_that_raise_a_limit() {
        let mut eth0 = Link::new(2, "eth0", "veth");
        eth0.mtu = 1500;
        eth0.max_mtu = Some(65535);
        eth0.tso_max_size = Some(524_280);
        eth0.gso_max_size = Some(65536);
        let mut eth1 = Link::new(3, "eth1", "veth");
        eth1.mtu = 9000;
        eth1.tso_max_size = Some(65536);
        let s = snap(
            vec![eth0, eth1],
            "4096 131072 6291456",
            "4096 16384 67108864",
            false,
        );
        let vars = host_variables(&s, &["eth0".into(), "eth1".into()], &start(1));
        let names: Vec<&str> = vars.iter().map(|v| v.name).collect();
        assert_eq!(names, ["tcp buffer maxima", "mtu", "big tcp"]);
        let acts = |i: usize| vars[i].candidates[0].1.actions.clone();
        assert_eq!(
            acts(0),
            vec![Action::sysctl("net.ipv4.tcp_rmem", "4096 131072 67108864")],
            "wmem is at the maximum already"
        );
        assert_eq!(
            acts(1),
            vec![Action {
                setting: Setting::Mtu { dev: "eth0".into() },
                value: "9000".into()
            }]
        );
        let big: Vec<String> = acts(2).iter().map(|a| a.setting.label()).collect();
        assert_eq!(big.len(), 2, "GSO and GRO of eth0 only: {big:?}");
        assert!(acts(2).iter().all(|a| a.value == "185000"));
        // Nothing to raise: no host step.
        let mut tuned = Link::new(2, "eth0", "veth");
        tuned.mtu = 9000;
        let s = snap(vec![tuned], "4096 1 67108864", "4096 1 67108864", true);
        assert!(host_variables(&s, &["eth0".into()], &start(1)).is_empty());
    }

    #[test]
    fn the_recommended_bench_command_runs_the_measured_spec() {
        for (goal, conf) in [
            (
                Goal::Throughput,
                Config {
                    npaths: 2,
                    flows_per_path: 4,
                    threads: 4,
                    msg_size: 128 << 10,
                    buffer: Some(4 << 20),
                    zerocopy: true,
                    busy_poll: None,
                },
            ),
            (
                Goal::Bidir,
                Config {
                    npaths: 1,
                    flows_per_path: 2,
                    threads: 8,
                    ..start(1)
                },
            ),
            (
                Goal::Rr,
                Config {
                    buffer: Some(1 << 20),
                    ..start(1)
                },
            ),
        ] {
            let c = ctx(goal, 2);
            let spec = c.spec(&conf).unwrap();
            let mut a = BenchArgs::defaults();
            a.layer(&["-d".into(), "1s".into(), "--warmup".into(), "0.2s".into()])
                .unwrap();
            a.layer(&c.bench_args(&conf)).unwrap();
            let (from_cli, _) = spec_from(&a).unwrap();
            assert_eq!(from_cli, spec, "{goal:?}: {:?}", c.bench_args(&conf));
        }
    }

    fn result(bps: f64, p50_us: f64) -> TestResult {
        TestResult {
            throughput_bps: bps,
            latency: Some(wirespeed_types::result::LatencySummary {
                p50_us,
                ..Default::default()
            }),
            ..TestResult::default()
        }
    }

    #[test]
    fn steps_are_judged_by_the_models_rules_on_the_goals_figure() {
        for (goal, base, noise, gain) in [
            (Goal::Throughput, (1e9, 50.0), (1.01e9, 10.0), (1.5e9, 90.0)),
            (Goal::Rr, (1e9, 50.0), (5e9, 49.5), (0.5e9, 30.0)),
        ] {
            let rules = Rules::new(3, 5, 3.0, goal.better());
            let vals = |(b, l): (f64, f64)| -> Vec<f64> {
                (0..3).map(|_| goal.value(&result(b, l))).collect()
            };
            let mut s = Search::new(rules);
            assert!(s.judge("baseline", "1 path", &vals(base)).on_ladder());
            let v = s.judge("x", "within noise", &vals(noise));
            assert!(!v.on_ladder(), "{goal:?}: {v:?}");
            assert_eq!(
                s.judge("x", "better", &vals(gain)),
                Verdict::Kept,
                "{goal:?}"
            );
            assert_eq!(s.ladder().len(), 2);
            assert_eq!(s.best().and_then(|b| b.median), Some(vals(gain)[0]));
        }
        assert!(Goal::Rr.value(&TestResult::default()).is_nan());
    }

    #[test]
    fn the_noise_band_is_a_percentage() {
        assert_eq!(parse_pct("3%").unwrap(), 3.0);
        assert_eq!(parse_pct(" 2.5 ").unwrap(), 2.5);
        assert!(parse_pct("100%").is_err() && parse_pct("x").is_err() && parse_pct("-1").is_err());
        assert_eq!(size_arg(512 << 10), "512k");
        assert_eq!(size_arg(4 << 20), "4m");
        assert_eq!(size_arg(1000), "1000");
    }
}
