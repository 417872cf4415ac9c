//! `wirespeed k8s manifests|run|image`: agents on Kubernetes
//! (wirespeed-k8s) and their image (wirespeed-image).

use anyhow::{Context, Result, bail};
use std::path::Path;
use wirespeed_cli::k8s::*;
use wirespeed_k8s::RunOutcome;
use wirespeed_k8s::manifests::{self};
use wirespeed_report::fold;
use wirespeed_types::paths::PathsReport;

/// Runs a `k8s` subcommand, against `--context` when given.
pub fn run(a: K8sArgs) -> Result<()> {
    if let Some(c) = &a.context {
        wirespeed_k8s::cluster::use_context(c);
    }
    match a.cmd {
        K8sCmd::Manifests(a) if a.runner => print_runner(&a),
        K8sCmd::Manifests(a) => {
            if a.objects.image.is_none() {
                eprintln!(
                    "k8s manifests: no --image: the DaemonSets name the placeholder {}; {IMAGE_HINT}",
                    manifests::default_image()
                );
            }
            let mut o = a
                .objects
                .options(&a.namespace, a.port, a.key_file.as_deref())?;
            if let Some((_, p)) = &o.profile {
                let plan = wirespeed_k8s::sysctls::plan_offline(&p.sysctl);
                for l in plan.lines() {
                    eprintln!("k8s manifests: {l}");
                }
                if !plan.unsafe_allowed.is_empty() {
                    eprintln!(
                        "k8s manifests: the kubelets must allow the unsafe ones: --allowed-unsafe-sysctls={} (the safe list depends on each node's kernel; `k8s run` checks every node first)",
                        plan.unsafe_allowed.join(",")
                    );
                }
                o.pod_sysctls = plan.apply;
            }
            print_objects(&manifests::build(&o)?, a.output)
        }
        K8sCmd::Run(a) => run_matrix(*a),
        K8sCmd::Image(ImageCmd::Build(a)) => build_image(*a),
        K8sCmd::Watch(c) => crate::k8s_watch_cmd::run(c),
        K8sCmd::Cleanup(a) => cleanup(a),
    }
}

/// `k8s cleanup`: a line per object deleted; exit 1 when a run was left
/// because it is alive.
fn cleanup(a: CleanupArgs) -> Result<()> {
    let c = wirespeed_k8s::cleanup::Cleanup {
        run: a.run,
        namespace: a.namespace,
        force: a.force,
    };
    let done = wirespeed_k8s::cleanup::cleanup_blocking(a.kubeconfig.as_deref(), &c)?;
    for d in &done.deleted {
        println!("deleted {d}");
    }
    if done.deleted.is_empty() && done.alive.is_empty() {
        println!("nothing to clean up: no object labelled wirespeed.dev/run matches");
    }
    if !done.alive.is_empty() {
        bail!("left alone:\n  {}", done.alive.join("\n  "));
    }
    Ok(())
}

fn run_matrix(a: RunArgs) -> Result<()> {
    // Before anything touches the cluster: no image, no run; bad gates,
    // pairs or baselines fail here too.
    let Some(image) = a.objects.image.clone() else {
        bail!("k8s run needs --image: {IMAGE_HINT}");
    };
    // Asked beside the parsing below; answered before anything is applied.
    let presence = std::thread::spawn(move || {
        wirespeed_image::check::presence(&image, std::time::Duration::from_secs(2))
    });
    let pattern = a.pattern;
    let paths = run_paths(&a)?;
    let policy_load = wirespeed_cli::k8s::run_policy_load(&a, &paths)?;
    let workloads = run_workloads(&a)?;
    let interference = wirespeed_cli::k8s::run_interference(&a, &workloads)?
        .map(|p| (p, a.interference_server.clone()));
    let gates = run_gates(&a)?;
    let pairs = match &a.pairs {
        Some(p) => {
            Some(std::fs::read_to_string(p).with_context(|| format!("--pairs {}", p.display()))?)
        }
        None => None,
    };
    // A short id names this run's namespace and labels all it makes.
    let run_id: String = String::from_utf8(manifests::generate_key()?)?[..8].to_string();
    let ns = a
        .namespace
        .clone()
        .unwrap_or_else(|| format!("wirespeed-{run_id}"));
    let mut o = a
        .objects
        .options(&ns, a.bench.port, a.bench.key_file.as_deref())?;
    o.run_id = Some(run_id);
    let mut fleet = wirespeed_fleet::RunOptions::new(workloads, o.key.trim_ascii().to_vec());
    fleet.repeats = a.repeats.clamp(1, 100);
    fleet.retries = a.retries;
    let lines = crate::fleet_cmd::ProgressLines::default();
    fleet.progress = Some(std::sync::Arc::new(move |p: &wirespeed_fleet::Progress| {
        eprintln!("{}", lines.line(p));
    }));
    let choice = wirespeed_k8s::nodes::NodeChoice {
        names: a.nodes.clone(),
        selector: o.node_selector.clone(),
        sample: a.sample,
        seed: a.seed,
        tolerate_all: o.tolerate_all,
        tolerations: o.tolerations.clone(),
        host_network: false,
    };
    let mut cfg = wirespeed_k8s::RunConfig {
        kubeconfig: a.kubeconfig.clone(),
        objects: o,
        paths,
        choice,
        pattern,
        pairs,
        concurrent: a.concurrent,
        fleet,
        ready_timeout: crate::duration_flag("ready-timeout", &a.ready_timeout)?,
        delete_timeout: std::time::Duration::from_secs(60),
        api_retry: crate::duration_flag("api-retry", &a.api_retry)?,
        keep: a.keep,
        reach: a.reach,
        on_case: None,
        earlier: match &a.resume {
            Some(p) => read_earlier(p)?,
            None => Vec::new(),
        },
        policy_load,
        interference,
    };
    let out_file = a.out.clone().or_else(|| a.resume.clone());
    if let Some(p) = &out_file {
        cfg.on_case = Some(journal_to(p, &gates, a.repeats.clamp(1, 100)));
    }
    image_known(&a, presence)?;
    let out = match wirespeed_k8s::run_blocking(&cfg, &|l| {
        eprintln!("{}", fold(&format!("k8s: {l}")))
    }) {
        Ok(out) => out,
        Err(e) => {
            if let Some(p) = out_file.as_ref().filter(|p| p.exists()) {
                eprintln!(
                    "k8s: the tests that finished are in {0} (\"partial\": true); `--resume {0}` measures only the rest",
                    p.display()
                );
            }
            return Err(e.into());
        }
    };
    let report = wirespeed_k8s::gates::report(&out, &gates, a.repeats.clamp(1, 100));
    write_outputs(&a, &out, &report)?;
    if let Some(i) = &out.interference {
        print!("{}", wirespeed_report::interference::render_interference(i));
        return Ok(());
    }
    for r in &out.runs {
        let (pods, entries) = (r.agents.len(), r.results.agents.len());
        let via = if entries > pods {
            format!(", {entries} fleet entries: the servers also through their Services")
        } else {
            String::new()
        };
        println!("== {} path: {pods} agent pods{via}", r.label());
        print!("{}", wirespeed_report::render_fleet_brief(&r.results));
    }
    let side_by_side = wirespeed_k8s::compare(&out.runs);
    if side_by_side.first().is_some_and(|c| c.modes.len() > 1) {
        println!(
            "== paths side by side (gaps against {})",
            out.runs[0].label()
        );
        print!("{}", wirespeed_k8s::render_comparison(&side_by_side));
    }
    let policy = wirespeed_k8s::compare_policy(&out.runs);
    if !policy.is_empty() {
        println!("== policy load: each pod path against itself under the first load");
        print!("{}", wirespeed_k8s::render_comparison(&policy));
    }
    println!("== cases");
    print!("{}", wirespeed_report::paths::render_paths(&report));
    exit_status(&out, &report, a.allow_contended)
}

/// Refuses the run when the image's registry says it has no such image
/// (nothing is applied yet); says why when the registry decided nothing.
fn image_known(
    a: &RunArgs,
    asked: std::thread::JoinHandle<wirespeed_image::check::Presence>,
) -> Result<()> {
    use wirespeed_image::check::Presence;
    let image = a.objects.image.as_deref().unwrap_or_default();
    match asked.join() {
        Ok(Presence::Missing(words)) => bail!(
            "--image {image}: its registry has no such image ({words}); nothing was applied. {IMAGE_HINT}"
        ),
        Ok(Presence::Unknown(_)) => {
            eprintln!("k8s: --image not checked: its registry does not answer from here");
        }
        Ok(Presence::Found(_)) | Err(_) => {}
    }
    Ok(())
}

/// The --out document: nodes, each path's runs, the comparison, the
/// cases; `partial` while the run goes on (or when it was stopped).
fn out_doc(out: &RunOutcome, report: &PathsReport, partial: bool) -> serde_json::Value {
    serde_json::json!({
        "partial": partial,
        "nodes": out.selection,
        "runs": out.runs,
        "comparison": wirespeed_k8s::compare(&out.runs),
        "policy_cost": wirespeed_k8s::compare_policy(&out.runs),
        "interference": out.interference,
        "paths": report,
        "sysctls": out.sysctls,
    })
}

/// The callback that rewrites `p` as each test lands (a partial
/// document); a failed write is said once and the run goes on.
fn journal_to(
    p: &Path,
    gates: &wirespeed_k8s::gates::Gates,
    repeats: u32,
) -> wirespeed_k8s::OnCase {
    let (p, gates) = (p.to_path_buf(), gates.clone());
    let warned = std::sync::atomic::AtomicBool::new(false);
    wirespeed_k8s::OnCase(std::sync::Arc::new(move |out: &RunOutcome| {
        let report = wirespeed_k8s::gates::report(out, &gates, repeats);
        let text = serde_json::to_string_pretty(&out_doc(out, &report, true)).unwrap_or_default();
        if let Err(e) = wirespeed_experiment::runner::write_atomic(&p, &text)
            && !warned.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            eprintln!("warning: --out: {e:#}; the run goes on");
        }
    }))
}

/// The tests an earlier run wrote to its --out (`--resume FILE`), by path.
fn read_earlier(
    p: &Path,
) -> Result<
    Vec<(
        wirespeed_k8s::PathKind,
        Vec<wirespeed_types::fleet::LinkTest>,
    )>,
> {
    let text = std::fs::read_to_string(p).with_context(|| format!("--resume {}", p.display()))?;
    let doc: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "--resume {}: not the JSON of a k8s run's --out",
            p.display()
        )
    })?;
    let Some(runs) = doc.get("runs").and_then(|r| r.as_array()) else {
        bail!(
            "--resume {}: no \"runs\": not a k8s run's --out",
            p.display()
        );
    };
    let mut out = Vec::new();
    for r in runs {
        let path: wirespeed_k8s::PathKind = serde_json::from_value(r["path"].clone())
            .with_context(|| format!("--resume {}: a run's \"path\"", p.display()))?;
        let tests = serde_json::from_value(r["results"]["tests"].clone())
            .with_context(|| format!("--resume {}: the tests of path {path}", p.display()))?;
        out.push((path, tests));
    }
    if doc["partial"] == false {
        eprintln!(
            "k8s: --resume {}: that run was complete; its tests are all kept",
            p.display()
        );
    }
    Ok(out)
}

/// --out (see [`out_doc`]), --csv, --junit and --html.
fn write_outputs(a: &RunArgs, out: &RunOutcome, report: &PathsReport) -> Result<()> {
    let write = |p: &Path, text: String| {
        std::fs::write(p, text).with_context(|| format!("write {}", p.display()))
    };
    if let Some(p) = a.out.as_ref().or(a.resume.as_ref()) {
        wirespeed_experiment::runner::write_atomic(
            p,
            &serde_json::to_string_pretty(&out_doc(out, report, false))?,
        )?;
    }
    if let Some(p) = &a.csv {
        write(p, wirespeed_report::paths::render_paths_csv(report))?;
    }
    if let Some(p) = &a.junit {
        let xml = wirespeed_report::paths::render_paths_junit(report)?;
        write(p, xml)?;
    }
    if let Some(p) = &a.html {
        write(p, wirespeed_report::paths::render_paths_html(report))?;
    }
    Ok(())
}

/// Exit status of `k8s run` when a requested test was not measured or
/// was contended.
pub const EXIT_UNMEASURED: i32 = 3;

/// Exits 1 when a case broke a gate, [`EXIT_UNMEASURED`] when a test or
/// a path was not measured or a case was contended (each named; not
/// with `--allow-contended`); Ok when everything asked for was measured
/// and passed.
fn exit_status(out: &RunOutcome, report: &PathsReport, allow_contended: bool) -> Result<()> {
    use wirespeed_types::paths::CaseStatus;
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let failed = report
        .cases
        .iter()
        .filter(|c| c.status() == CaseStatus::Failed)
        .count();
    let missing = wirespeed_k8s::run::unmeasured(&out.runs);
    if failed > 0 {
        eprintln!(
            "k8s run: {failed} of {} cases broke a gate (exit 1)",
            report.cases.len()
        );
        std::process::exit(1);
    }
    let contended: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.status() == CaseStatus::Contended && !allow_contended)
        .collect();
    if missing.is_empty() && out.unplanned.is_empty() && contended.is_empty() {
        return Ok(());
    }
    if !contended.is_empty() {
        let head = format!(
            "k8s run: {} of {} cases contended: an end's CPUs were taken by other work, so their figures neither pass nor fail (exit {EXIT_UNMEASURED}):",
            contended.len(),
            report.cases.len()
        );
        eprintln!("{}", fold(&head));
        for c in &contended {
            let why = c.contended.as_deref().unwrap_or_default();
            eprintln!("{}", fold(&format!("  contended: {}: {why}", c.label())));
        }
    }
    if missing.is_empty() && out.unplanned.is_empty() {
        std::process::exit(EXIT_UNMEASURED);
    }
    let total: usize = out.runs.iter().map(|r| r.results.tests.len()).sum();
    let paths = match out.unplanned.len() {
        0 => String::new(),
        n => format!(" and {n} path(s) with no test to run"),
    };
    eprintln!(
        "k8s run: {} of {total} tests not measured{paths} (exit {EXIT_UNMEASURED}):",
        missing.len()
    );
    for l in &out.lost_nodes {
        eprintln!("{}", fold(&format!("  {l}")));
    }
    for m in missing.iter().chain(&out.unplanned) {
        eprintln!("{}", fold(&format!("  not measured: {m}")));
    }
    std::process::exit(EXIT_UNMEASURED);
}

/// `k8s manifests --runner`: the in-cluster runner's objects.
fn print_runner(a: &ManifestArgs) -> Result<()> {
    if a.objects.image.is_none() {
        bail!(
            "k8s manifests --runner needs --image (the Job runs it, and so do the agents): {IMAGE_HINT}"
        );
    }
    let o = a
        .objects
        .options(&a.namespace, a.port, a.key_file.as_deref())?;
    print_objects(
        &wirespeed_k8s::runner_job::build(&o, &a.run_args)?,
        a.output,
    )
}

/// Prints `objs` as `output` says: yaml (multi-document) or json (a v1
/// List).
pub(crate) fn print_objects<T: serde::Serialize>(
    objs: &[T],
    output: manifests::Output,
) -> Result<()> {
    print!("{}", manifests::render(objs, output)?);
    Ok(())
}

/// `k8s image build`: build, then write and/or push; the pinned reference
/// (or, without --push, the digest) is the one line on stdout.
fn build_image(a: ImageBuildArgs) -> Result<()> {
    let binary = match &a.binary {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .context("find this wirespeed executable (pass --binary PATH)")?,
    };
    let labels = wirespeed_image::Labels::of_this_build();
    let img = wirespeed_image::build(&binary, &labels).context("build the agent image")?;
    eprintln!("{}", img.summary(&binary));
    if let Some(out) = &a.output {
        let name = a
            .name
            .clone()
            .or_else(|| a.push.clone())
            .unwrap_or_else(|| format!("localhost/wirespeed:{}", env!("CARGO_PKG_VERSION")));
        wirespeed_image::layout::write(&img, &name, out)?;
        eprintln!(
            "wrote {} (OCI image layout, named {name}); on a node: ctr -n k8s.io images import {}",
            out.display(),
            out.display()
        );
    }
    let Some(reference) = &a.push else {
        if a.output.is_none() {
            eprintln!("nothing written: add --push REGISTRY/wirespeed:TAG or --output FILE");
        }
        println!("{}", img.digest());
        return Ok(());
    };
    let pinned = wirespeed_image::push(&img, reference, &push_options(&a)?)?;
    eprintln!("pushed; run with: wirespeed k8s run --image {pinned} ...");
    println!("{pinned}");
    Ok(())
}
