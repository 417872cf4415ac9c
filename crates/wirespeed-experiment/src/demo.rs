//! The demo's scenario (`wirespeed lab demo`, the README's first
//! command). As root it builds report 2's lab (two hosts, two 1 Gbit/s
//! NICs in one subnet, untuned buffers), measures one flow, runs doctor,
//! applies its tuning, measures again with doctor's bench flags, rolls the
//! tuning back and runs the multinic ladder experiment; everything is torn
//! down at the end, also on error. Without root: a short loopback bench.
//! The binary renders the report page from the ladder's results.

use crate::cell::{BenchArgs, spec_from};
use crate::doctor_peer::{self, DoctorRequest};
use crate::error::{Context, Result};
use crate::experiment::{Overrides, load};
use crate::in_netns::{LabServer, test_in};
use crate::runner::{RunOptions, Tuned, run as run_plan};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use wirespeed_engine::{ClientConfig, Server, ServerConfig, run_test};
use wirespeed_host::Finding;
use wirespeed_host::netns;
use wirespeed_host::session::{Place, PlanRequest};
use wirespeed_lab::{Lab, LabSpec};
use wirespeed_report::experiment::summary_table;
use wirespeed_report::human_bps;
use wirespeed_types::{Report, SCHEMA_VERSION, TestResult, TestSpec};

/// The multinic-ladder scenario, embedded so the demo runs anywhere.
pub const LADDER_LAB: &str = include_str!("../../../scenarios/multinic-ladder/lab.toml");
/// Its experiment.
pub const LADDER_EXPERIMENT: &str =
    include_str!("../../../scenarios/multinic-ladder/experiment.toml");

/// Port of the demo's server.
const PORT: &str = "5300";

/// The loopback demo: one flow, four flows on two threads, and rr, each
/// `duration` seconds against a server on a thread of this process.
pub fn loopback(duration: f64) -> Result<Report> {
    let server = Server::bind(ServerConfig {
        bind: [127, 0, 0, 1].into(),
        port: 0,
        ..ServerConfig::default()
    })?;
    let addr = server
        .local_addr()
        .ctx(|| "read the server's address".into())?;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let h = std::thread::spawn(move || server.serve(s2));
    let cfg = ClientConfig::new(&addr.to_string());
    let mut results = Vec::new();
    let base = TestSpec {
        duration_s: duration,
        warmup_s: 0.5,
        ..TestSpec::default()
    };
    for spec in [
        base.clone(),
        TestSpec {
            flows: 4,
            threads: 2,
            ..base.clone()
        },
        TestSpec {
            workload: wirespeed_types::Workload::Rr,
            nodelay: true,
            ..base
        },
    ] {
        match run_test(&cfg, &spec, &mut |_| {}) {
            Ok(r) => results.push(r),
            Err(e) => {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                let _ = h.join();
                return Err(e.into());
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = h.join();
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        results,
    })
}

/// Each host's interfaces and addresses, one line each.
pub fn describe_lab(lab: &Lab, spec: &LabSpec) -> String {
    let mut o = String::new();
    for h in &spec.hosts {
        o.push_str(&format!(
            "host {} (namespace {})\n",
            h.name,
            lab.ns(&h.name)
        ));
        for (i, _) in spec.links.iter().enumerate() {
            if let (Some(dev), Some(a4), Some(a6)) = (
                lab.dev(&h.name, i),
                lab.addr4(&h.name, i),
                lab.addr6(&h.name, i),
            ) {
                o.push_str(&format!("  {dev}: {a4} {a6}\n"));
            }
        }
    }
    o
}

/// Runs a test from host a of the lab against `server` with bench's
/// flags (the demo's, then `extra`) and returns its first result.
fn lab_bench(lab: &Lab, server: &str, duration: f64, extra: &[String]) -> Result<TestResult> {
    let mut a = BenchArgs::defaults();
    let d = format!("{duration}s");
    let base = [
        "--port", PORT, "-d", &d, "--warmup", "0.5s", "--cc", "cubic",
    ];
    a.layer(&base.map(String::from))?;
    a.layer(extra)?;
    let (spec, _) = spec_from(&a)?;
    let (cfg, _) = a.client(server)?;
    test_in(lab, "a", &cfg, &spec)
}

/// Runs doctor against `peers` in namespace `ns`, in-process on a thread
/// with the namespace's own /sys (doctor reads its devices there).
fn doctor_in(ns: &str, peers: &[String]) -> Result<Vec<Finding>> {
    let req = DoctorRequest {
        peers: Some(peers.to_vec()),
        port: PORT.parse().unwrap_or(5300),
        test_duration: 1.0,
        probe: true,
        ..DoctorRequest::default()
    };
    let place = Place::live(Some(ns.to_string()));
    let mut out = None;
    netns::run_in_with_sys(ns, || {
        out = Some(doctor_peer::doctor(&place, &req));
        Ok(())
    })?;
    let r = out.ctx(|| format!("doctor in {ns}"))??;
    Ok(r.findings)
}

/// Applies doctor's fixes on each (host, namespace) with its journal
/// under `tmp`, saying what changed; rolled back when the result drops.
fn tune_both(hosts: &[(&str, &String)], tmp: &Path, w: &mut dyn Write) -> Result<Tuned> {
    let mut tuned = Tuned::new();
    let doctors_fixes = PlanRequest {
        control_port: wirespeed_engine::DEFAULT_PORT,
        ..PlanRequest::default()
    };
    for (h, ns) in hosts {
        let text = tuned.apply_in(ns, tmp.join(h), &doctors_fixes)?;
        let changed: Vec<&str> = text.lines().filter(|l| l.contains(" -> ")).collect();
        let _ = writeln!(w, "  host {h}: {} change(s), e.g.", changed.len());
        for l in changed.iter().take(3) {
            let _ = writeln!(w, "   {}", l.trim());
        }
    }
    Ok(tuned)
}

/// The `--paths` flag of doctor's peer advice, if it gave one.
fn advised_paths(findings: &[Finding]) -> Option<Vec<String>> {
    findings
        .iter()
        .find_map(|f| {
            f.id.starts_with("peer-")
                .then_some(f.bench_flags.as_deref())
                .flatten()
        })
        .filter(|f| f.starts_with("--paths "))
        .map(|f| {
            f.split_whitespace()
                .take(2)
                .map(String::from)
                .collect::<Vec<_>>()
        })
}

/// The lab demo; `out` is where the ladder's results go. Progress goes
/// to `w`.
pub fn lab_demo(duration: f64, results: &Path, w: &mut dyn Write) -> Result<()> {
    let mut spec = LabSpec::from_toml_str(LADDER_LAB).ctx(|| "the embedded lab".into())?;
    spec.name = Lab::unique("demo");
    let lab = Lab::up(&spec)?;
    let say = |w: &mut dyn Write, s: String| {
        let _ = writeln!(w, "{s}");
    };
    say(
        w,
        "Report 2 in a lab: two hosts, two NICs in one subnet, each capped at 1 Gbit/s, untuned buffers.".into(),
    );
    let _ = write!(w, "{}", describe_lab(&lab, &spec));
    let server = LabServer::start(&lab, "b", PORT.parse().unwrap_or(5300))?;
    let addr = |h: &str, i| {
        lab.addr4(h, i)
            .map(|a| a.to_string())
            .ctx(|| format!("the lab address of {h} on link {i}"))
    };
    let (b0, b1) = (addr("b", 0)?, addr("b", 1)?);

    say(w, "\n== 1. one flow on one NIC".into());
    let base = lab_bench(
        &lab,
        &b0,
        duration,
        &["--paths".into(), format!("{}={b0}", addr("a", 0)?)],
    )?;
    say(w, human_bps(base.throughput_bps));

    say(
        w,
        format!("\n== 2. wirespeed doctor --peer {b0},{b1} (on host a)"),
    );
    let (ns_a, ns_b) = (lab.ns("a"), lab.ns("b"));
    let findings = doctor_in(&ns_a, &[b0.clone(), b1.clone()])?;
    for f in &findings {
        let severity = serde_json::to_value(f.severity).unwrap_or_default();
        say(
            w,
            format!("  [{}] {}", severity.as_str().unwrap_or("?"), f.title),
        );
    }

    say(
        w,
        "\n== 3. wirespeed tune apply (doctor's fixes, on both hosts)".into(),
    );
    let tmp = std::env::temp_dir().join(format!("wirespeed-demo-{}", std::process::id()));
    let tuned = tune_both(&[("a", &ns_a), ("b", &ns_b)], &tmp, w)?;
    let all_paths = || {
        format!(
            "{}={b0},{}={b1}",
            addr("a", 0).unwrap_or_default(),
            addr("a", 1).unwrap_or_default()
        )
    };
    let flags = advised_paths(&findings).unwrap_or_else(|| vec!["--paths".into(), all_paths()]);
    let mut extra = flags.clone();
    extra.extend(["-F".into(), "8".into(), "-T".into(), "2".into()]);
    say(
        w,
        format!(
            "\n== 4. after tuning, with doctor's advice: {} -F 8",
            flags.join(" ")
        ),
    );
    let after = lab_bench(&lab, &b0, duration, &extra)?;
    let per: Vec<String> = after
        .paths
        .iter()
        .map(|p| human_bps(p.throughput_bps))
        .collect();
    say(
        w,
        format!(
            "{} ({}), {:.0}% of the 2 Gbit/s of caps, {:.1}x the one-flow baseline",
            human_bps(after.throughput_bps),
            per.join(" + "),
            after.throughput_bps / 2e9 * 100.0,
            after.throughput_bps / base.throughput_bps.max(1.0)
        ),
    );
    drop(tuned);
    drop(server);
    lab.down()?;

    say(
        w,
        "\n== 5. the ladder of report 2, one change at a time (wirespeed experiment)".into(),
    );
    let ladder = run_ladder(&tmp, duration, results);
    let _ = std::fs::remove_dir_all(&tmp);
    let res = ladder?;
    let _ = write!(w, "{}", summary_table(&res));
    say(w, format!("results saved in {}", results.display()));
    Ok(())
}

/// Writes the embedded ladder into `dir` and runs it once per cell.
fn run_ladder(
    dir: &Path,
    duration: f64,
    results: &Path,
) -> Result<wirespeed_report::experiment::ExperimentResults> {
    std::fs::create_dir_all(dir).ctx(|| format!("create {}", dir.display()))?;
    std::fs::write(dir.join("lab.toml"), LADDER_LAB).ctx(|| "write the lab file".into())?;
    let file: PathBuf = dir.join("experiment.toml");
    std::fs::write(&file, LADDER_EXPERIMENT).ctx(|| "write the experiment file".into())?;
    let plan = load(
        &file,
        &Overrides {
            repeats: Some(1),
            duration: Some(format!("{duration}s")),
            warmup: Some("0.5s".into()),
        },
    )?;
    run_plan(
        &plan,
        &RunOptions {
            out: results.to_path_buf(),
            fresh: true,
        },
    )
}
