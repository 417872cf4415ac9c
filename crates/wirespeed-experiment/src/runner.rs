//! Runs an experiment [`Plan`]: builds each cell's lab, starts the server
//! in the server host's namespace and runs every test from the client
//! host's namespace, all in this process (`in_netns`). Results are
//! saved after every finished cell (write + rename), so a stopped run
//! resumes at the first unfinished cell.

use crate::cell::spec_from;
use crate::error::{Context, ExperimentError, Result, failed};
use crate::experiment::{Plan, Planned, Setting, TuneDef, fingerprint, sweep_point};
use crate::in_netns::{LabServer, test_beside_loaders, test_in};
use crate::sys::stop_requested as stopped;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wirespeed_host::netns;
use wirespeed_host::session::{self, ApplyOptions, Place, PlanRequest, Show};
use wirespeed_host::tune::{self, NsChanges, StateDir};
use wirespeed_lab::{Lab, LabSpec};
use wirespeed_report::experiment::{
    CellResult, EXPERIMENT_SCHEMA_VERSION, ExperimentResults, Point, finalize,
};
use wirespeed_report::human_size;
use wirespeed_types::TestResult;
use wirespeed_types::spec::parse_size;

/// The host settings behind one lab setting: (namespace, setting) pairs,
/// a link's on both of its ends.
fn host_settings(lab: &Lab, s: &Setting) -> Vec<(String, tune::Setting)> {
    match s {
        Setting::Sysctl { host, key } => {
            vec![(lab.ns(host), tune::Setting::Sysctl { key: key.clone() })]
        }
        Setting::Link { link, attr } => {
            let Some(p) = lab.plan().links.get(*link) else {
                return Vec::new();
            };
            [(&p.host_a, &p.a.dev), (&p.host_b, &p.b.dev)]
                .into_iter()
                .filter_map(|(h, dev)| {
                    let dev = dev.clone();
                    let s = match *attr {
                        "mtu" => tune::Setting::Mtu { dev },
                        "gso_max_size" => tune::Setting::GsoMaxSize { dev },
                        "gro_max_size" => tune::Setting::GroMaxSize { dev },
                        _ => return None,
                    };
                    Some((lab.ns(h), s))
                })
                .collect()
        }
    }
}

/// A cell's settings applied to its lab through wirespeed-host (each old
/// value read first, the new one read back), undone newest first on drop.
struct Applied {
    changes: NsChanges,
}

impl Applied {
    fn apply(lab: &Lab, settings: &BTreeMap<Setting, String>) -> Result<Applied> {
        let mut applied = Applied {
            changes: NsChanges::new(),
        };
        for (s, v) in settings {
            for (ns, hs) in host_settings(lab, s) {
                applied
                    .changes
                    .set(&ns, &hs, v)
                    .map_err(|e| failed(format!("set {} in {ns}", hs.label()), e))?;
            }
        }
        Ok(applied)
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        if let Err(e) = self.changes.undo() {
            crate::progress::say(format!("warning: could not undo a lab change: {e}"));
        }
    }
}

/// Writes `res` to `path` atomically ([`write_atomic`]).
fn save(res: &ExperimentResults, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(res).ctx(|| "encode results".into())?;
    write_atomic(path, &(text + "\n"))
}

/// Replaces `path` with `text` so that a reader (or a crash) sees the
/// old file or the new one, never half of one: a temporary file beside
/// it (named after this process), synced, then renamed over it. Also
/// what `k8s run --out` and `fleet run --out` are rewritten with.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp).ctx(|| format!("create {}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .ctx(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).ctx(|| format!("rename {} to {}", tmp.display(), path.display()))
}

/// Tuning applied with wirespeed-host's tune session in lab namespaces,
/// each with its own journal directory; rolled back (newest first) on
/// drop.
///
/// In-process, on a thread that entered the namespace with its own /sys
/// mounted ([`netns::run_in_with_sys`]): tune reads the namespace's
/// devices (speeds, drivers, queues) there. A failed apply has restored
/// itself already; the journal undoes the rest.
#[derive(Default)]
pub struct Tuned {
    done: Vec<(String, PathBuf)>,
}

/// A tune session's output, kept as the text `tune apply` prints.
#[derive(Default)]
struct Collected {
    text: String,
}

impl Show for Collected {
    fn plan(&mut self, plan: &tune::Plan) {
        self.text.push_str(&wirespeed_report::host::plan(plan));
    }
    fn line(&mut self, text: &str) {
        self.text.push_str(text);
        self.text.push('\n');
    }
    fn warn(&mut self, text: &str) {
        crate::progress::say(text);
    }
}

impl Tuned {
    /// Nothing applied yet.
    pub fn new() -> Tuned {
        Tuned::default()
    }

    /// Applies `req` in namespace `ns` with its journal in `dir`, as
    /// `wirespeed tune apply --force --netns NS --state-dir DIR` would,
    /// and returns what that prints; a failed apply has restored itself.
    pub fn apply_in(&mut self, ns: &str, dir: PathBuf, req: &PlanRequest) -> Result<String> {
        let st = StateDir::new(&dir);
        let place = Place::live(Some(ns.to_string()));
        // force: a lab's MTU is what the experiment varies, and nothing
        // in the lab shows it to the path probe (issue 13).
        let o = ApplyOptions {
            force: true,
            hint: format!(" --netns {ns} --state-dir {}", dir.display()),
            ..ApplyOptions::default()
        };
        let mut out = Collected::default();
        netns::run_in_with_sys(ns, || session::apply(&st, &place, req, &o, &mut out))
            .map_err(|e| failed(format!("tune apply in {ns}"), e))?;
        self.done.push((ns.to_string(), dir));
        Ok(out.text)
    }

    /// Applies each `[[tune]]` on its host.
    fn apply(lab: &Lab, tunes: &[TuneDef]) -> Result<Tuned> {
        let mut t = Tuned::new();
        for (i, d) in tunes.iter().enumerate() {
            let dir = std::env::temp_dir().join(format!("wirespeed-tune-{}-{i}", lab.name()));
            let req = PlanRequest {
                profile: Some(d.profile.clone()),
                devs: d.devs.clone(),
                control_port: wirespeed_engine::DEFAULT_PORT,
                ..PlanRequest::default()
            };
            let out = t.apply_in(&lab.ns(&d.host), dir, &req)?;
            crate::progress::say(format!(
                "tuned host {} with {}: {}",
                d.host,
                d.profile,
                out.lines().last().unwrap_or("")
            ));
        }
        Ok(t)
    }
}

impl Drop for Tuned {
    fn drop(&mut self) {
        while let Some((ns, dir)) = self.done.pop() {
            let st = StateDir::new(&dir);
            let place = Place::live(Some(ns.clone()));
            let r = netns::run_in_with_sys(&ns, || session::rollback(&st, &place, false));
            if r.is_err() {
                crate::progress::say(format!("warning: could not roll back the tuning of {ns}"));
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// The lab of the cells being run and its server. Fields drop in order:
/// the tuning is rolled back and the server stopped before the lab goes.
struct Running {
    spec: LabSpec,
    _tuned: Tuned,
    _server: LabServer,
    lab: Lab,
}

impl Running {
    fn start(spec: &LabSpec, plan: &Plan) -> Result<Running> {
        let mut s = spec.clone();
        s.name = Lab::unique("exp");
        let lab = Lab::up(&s)?;
        let server = LabServer::start(&lab, &plan.server, wirespeed_engine::DEFAULT_PORT)?;
        let tuned = Tuned::apply(&lab, &plan.tunes)?;
        Ok(Running {
            spec: spec.clone(),
            _tuned: tuned,
            _server: server,
            lab,
        })
    }
}

/// Runs one point of a cell (each size of a `--size` list) from the
/// client's namespace.
fn bench_once(
    lab: &Lab,
    plan: &Plan,
    target: &str,
    bench: &crate::cell::BenchArgs,
) -> Result<Vec<TestResult>> {
    let (spec, sizes) = spec_from(bench)?;
    let (cfg, _) = bench.client(target)?;
    let from = bench
        .loader_hosts()
        .unwrap_or_else(|| vec![plan.client.clone()]);
    let mut out = Vec::new();
    for (req, resp) in sizes {
        let mut s = spec.clone();
        s.request_size = req;
        s.response_size = resp;
        let r = match bench.loaders {
            0 => test_in(lab, &plan.client, &cfg, &s),
            k => test_beside_loaders(lab, &plan.client, &cfg, &s, k, &from),
        };
        match r {
            Ok(r) => out.push(r),
            Err(_) if stopped() => return Err(ExperimentError::Interrupted),
            Err(e) => {
                return Err(failed(
                    format!(
                        "`wirespeed bench {target} {}`",
                        bench
                            .argv_from(&crate::cell::BenchArgs::defaults())
                            .join(" ")
                    ),
                    e,
                ));
            }
        }
    }
    Ok(out)
}

/// Runs every repeat of one cell (every point of its sweep).
fn run_cell(run: &Running, plan: &Plan, c: &Planned, label: &str) -> Result<CellResult> {
    let _applied = Applied::apply(&run.lab, &c.settings)?;
    let xs: Vec<Option<String>> = match &c.sweep {
        Some(s) => s.values.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    let mut points: Vec<Point> = Vec::new();
    for x in &xs {
        let bench = match (&c.sweep, x) {
            (Some(s), Some(v)) => sweep_point(&c.bench, s, v)?,
            _ => c.bench.clone(),
        };
        for r in 0..plan.repeats {
            if stopped() {
                return Err(ExperimentError::Interrupted);
            }
            let results = bench_once(&run.lab, plan, &c.target, &bench)?;
            let many = results.len() > 1;
            for res in results {
                let px = if many {
                    Some(human_size(res.spec.request_size as u64))
                } else {
                    x.clone()
                };
                let m = wirespeed_report::Metric::of(&res);
                crate::progress::say(format!(
                    "{label} {}{} run {}/{}: {}",
                    c.name,
                    px.as_deref().map(|v| format!(" @ {v}")).unwrap_or_default(),
                    r + 1,
                    plan.repeats,
                    m.human(m.value(&res))
                ));
                let xv = px
                    .as_deref()
                    .and_then(|v| parse_size(v).ok().map(|b| b as f64));
                match points.iter_mut().find(|p| p.x == px) {
                    Some(p) => p.runs.push(res),
                    None => points.push(Point {
                        x: px.clone(),
                        x_value: xv.or_else(|| many.then_some(res.spec.request_size as f64)),
                        runs: vec![res],
                        ..Point::default()
                    }),
                }
            }
        }
    }
    let mut lab_changes: Vec<String> = c
        .settings
        .iter()
        .map(|(s, v)| match s {
            Setting::Sysctl { host, key } => format!("{host}: {key}={v}"),
            Setting::Link { link, attr } => format!("link {link}: {attr} {v}"),
        })
        .collect();
    if c.lab != plan.cells[0].lab {
        lab_changes.push("own lab build (topology change)".into());
    }
    Ok(CellResult {
        name: c.name.clone(),
        change: c.change.clone(),
        bench_args: std::iter::once(c.target.clone())
            .chain(c.args.iter().cloned())
            .collect(),
        lab_changes,
        sweep_arg: c
            .sweep
            .as_ref()
            .map(|s| s.arg.clone())
            .or_else(|| (points.len() > 1).then(|| "--size".to_string())),
        points,
        ..CellResult::default()
    })
}

/// How to run a plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where results are saved (and resumed from).
    pub out: PathBuf,
    /// Ignore earlier results in `out` and run every cell.
    pub fresh: bool,
}

/// Runs every cell of `plan` not finished in `o.out` yet, saving after
/// each; the finished results, or an error once stopped (SIGINT or
/// SIGTERM: the finished cells are saved and the next run resumes).
pub fn run(plan: &Plan, o: &RunOptions) -> Result<ExperimentResults> {
    if !wirespeed_lab::is_root() {
        return Err(wirespeed_lab::LabError::NotRoot.into());
    }
    let out = &o.out;
    let fp = fingerprint(plan);
    let mut res = ExperimentResults {
        schema_version: EXPERIMENT_SCHEMA_VERSION,
        name: plan.name.clone(),
        mode: plan.mode,
        fingerprint: fp.clone(),
        baseline: plan.cells[0].name.clone(),
        repeats: plan.repeats,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        cells: Vec::new(),
    };
    let mut done: BTreeMap<String, CellResult> = BTreeMap::new();
    if out.exists() && !o.fresh {
        let text = std::fs::read_to_string(out).ctx(|| format!("read {}", out.display()))?;
        let old: ExperimentResults = serde_json::from_str(&text).ctx(|| {
            format!("{} is not an experiment results file; use --fresh to overwrite it or --out elsewhere", out.display())
        })?;
        if old.name != plan.name || old.fingerprint != fp {
            return Err(ExperimentError::File(format!(
                "{} holds results of another experiment or of a changed definition ({} {} vs {} {}): use --fresh to start over, or --out elsewhere",
                out.display(),
                old.name,
                old.fingerprint,
                plan.name,
                fp
            )));
        }
        done = old.cells.into_iter().map(|c| (c.name.clone(), c)).collect();
    }
    crate::sys::catch_stop_signals();
    let mut running: Option<Running> = None;
    let n = plan.cells.len();
    for (i, c) in plan.cells.iter().enumerate() {
        if let Some(d) = done.remove(&c.name) {
            crate::progress::say(format!("skipping finished cell {}", c.name));
            res.cells.push(d);
            continue;
        }
        if stopped() {
            break;
        }
        if running.as_ref().is_none_or(|r| r.spec != c.lab) {
            // The old lab (and its server) goes before the new one is built.
            drop(running.take());
            crate::progress::say(format!("building the lab for cell {}", c.name));
            running = Some(Running::start(&c.lab, plan)?);
        }
        let Some(r) = running.as_ref() else { continue };
        let cell = match run_cell(r, plan, c, &format!("[{}/{n}]", i + 1)) {
            Ok(cell) => cell,
            Err(e) if stopped() => {
                crate::progress::say(format!("stopped during cell {}: {e}", c.name));
                break;
            }
            Err(e) => {
                return Err(failed(
                    format!(
                        "cell {} failed; finished cells are saved in {}",
                        c.name,
                        out.display()
                    ),
                    e,
                ));
            }
        };
        res.cells.push(cell);
        finalize(&mut res);
        save(&res, out)?;
    }
    drop(running);
    finalize(&mut res);
    if res.cells.len() < n {
        save(&res, out)?;
        return Err(failed(
            "interrupted",
            format!(
                "{} of {n} cells finished, saved in {}; run the same command again to resume",
                res.cells.len(),
                out.display()
            ),
        ));
    }
    save(&res, out)?;
    Ok(res)
}
