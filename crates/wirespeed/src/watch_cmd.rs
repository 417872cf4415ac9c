//! `wirespeed fleet watch`: flags to wirespeed-fleet's watcher, its HTTP
//! face on `--listen`, incidents opened and closed on stdout.

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use wirespeed_cli::watch::*;
use wirespeed_fleet::health::Rules;
use wirespeed_fleet::run::WorkloadSpec;
use wirespeed_fleet::watch::WatchOptions;
use wirespeed_fleet::{Fleet, RunOptions};
use wirespeed_types::TestSpec;
use wirespeed_types::units::parse_duration;

/// The live page's listener and renderer, when `--listen` is given.
pub type Http = Option<(std::net::TcpListener, wirespeed_fleet::watch_http::PageFn)>;

/// The watcher's options and HTTP face from the flags (all but the
/// fleet, which comes from `--agents` or, on Kubernetes, from the API
/// server).
pub fn prepare(a: &WatchArgs) -> Result<(WatchOptions, Http)> {
    let (probes, bw_s, b) = plan_inputs(a)?;
    let Some(kf) = &a.key_file else {
        bail!(
            "fleet watch needs --key-file: the agents start tests only for requests signed with the fleet key"
        );
    };
    if !(a.drift_ratio > 1.0 && a.drift_ratio.is_finite()) {
        bail!("--drift-ratio {}: give a factor above 1", a.drift_ratio);
    }
    let bandwidth = WorkloadSpec {
        label: "stream".into(),
        spec: TestSpec {
            duration_s: bw_s,
            warmup_s: 0.2,
            interval_s: 0.0,
            ..TestSpec::default()
        },
    };
    let opts = WatchOptions {
        run: RunOptions::new(Vec::new(), crate::read_key(kf)?),
        probes,
        bandwidth,
        budget: b,
        rules: Rules {
            ratio: a.drift_ratio,
            min_change_us: parse_duration(&a.min_change).context("--min-change")? * 1e6,
            ..Rules::default()
        },
        history: a.history.clone(),
        duration: a
            .run_for
            .as_deref()
            .map(|d| parse_duration(d).map(Duration::from_secs_f64))
            .transpose()
            .context("--for")?,
        retain: Some(Duration::from_secs_f64(
            parse_duration(&a.retain).context("--retain")?,
        )),
        on_event: Some(Arc::new(|e| {
            let _ = writeln!(
                std::io::stdout().lock(),
                "incident {} {}: {}",
                e.incident,
                e.transition,
                e.message
            );
        })),
        stop: None,
        interrupt: Some(crate::stop::on_stop_signals()?),
    };
    let http = match a.listen {
        Some(addr) => {
            let l =
                std::net::TcpListener::bind(addr).with_context(|| format!("--listen {addr}"))?;
            eprintln!("serving the live page on http://{}/", l.local_addr()?);
            let page: wirespeed_fleet::watch_http::PageFn =
                Arc::new(wirespeed_report::watch::render_watch_html);
            Some((l, page))
        }
        None => None,
    };
    Ok((opts, http))
}

/// Whether the flags name a fleet of their own (`--agents`,
/// `--synthetic`, `--dry-run`), which a watcher on Kubernetes does not take.
pub fn names_a_fleet(a: &WatchArgs) -> bool {
    a.agents.is_some() || a.synthetic.is_some() || a.dry_run
}

/// The line a finished watch prints.
pub fn summary(st: &wirespeed_types::fleet::WatchState, history: &std::path::Path) -> String {
    format!(
        "watched {} agents: {} tests stored in {}, {} incident(s) opened, {} open at the end",
        st.agents.len(),
        st.tests_stored,
        history.display(),
        st.events
            .iter()
            .filter(|e| e.transition == "opened" && e.at_unix >= st.started_unix)
            .count(),
        st.incidents
            .iter()
            .filter(|i| i.closed_unix.is_none())
            .count()
    )
}

/// Runs `wirespeed fleet watch`.
pub fn run(a: WatchArgs) -> Result<()> {
    if a.dry_run {
        let (_, _, b) = plan_inputs(&a)?;
        return dry_run_of(&a, &b);
    }
    let Some(agents) = &a.agents else {
        bail!("fleet watch needs --agents FILE");
    };
    let fleet = Fleet::load(agents)?;
    let (opts, http) = prepare(&a)?;
    let st = wirespeed_fleet::watch::run_blocking(&fleet, &opts, http)?;
    println!("{}", summary(&st, &opts.history));
    if opts
        .interrupt
        .as_ref()
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    {
        eprintln!("stopped by a signal: the tests that had finished are stored");
    }
    Ok(())
}
