//! `wirespeed k8s watch apply|manifests|status|delete`: `fleet watch` as
//! a Deployment beside its agents (wirespeed-k8s's watch module), and
//! `in-cluster`, what that Deployment's pod runs.

use crate::watch_cmd;
use anyhow::{Context, Result, bail};
use std::time::Duration;
use wirespeed_cli::k8s_watch::*;
use wirespeed_k8s::manifests;
use wirespeed_k8s::watch::{self as kwatch, InCluster};

/// Runs a `k8s watch` subcommand.
pub fn run(c: WatchCmd) -> Result<()> {
    match c {
        WatchCmd::Apply(a) => apply(*a),
        WatchCmd::Manifests(a) => {
            if a.objects.image_missing() {
                eprintln!(
                    "k8s watch manifests: no --image: the pods name the placeholder {}",
                    manifests::default_image()
                );
            }
            let (o, w) = a.watcher()?;
            {
                print!(
                    "{}",
                    manifests::render(&kwatch::objects(&o, &w)?, a.output)?
                );
                Ok(())
            }
        }
        WatchCmd::Status(a) => status(a),
        WatchCmd::Delete(a) => {
            let log = |l: &str| eprintln!("k8s watch: {l}");
            let gone = kwatch::delete_blocking(
                a.kubeconfig.as_deref(),
                &a.namespace,
                Duration::from_secs(120),
                &log,
            )?;
            match gone {
                true => println!("deleted namespace {} and all in it", a.namespace),
                false => println!(
                    "namespace {} does not exist: nothing to delete",
                    a.namespace
                ),
            }
            Ok(())
        }
        WatchCmd::InCluster(a) => in_cluster(*a),
    }
}

fn apply(a: ApplyArgs) -> Result<()> {
    if a.objects.image_missing() {
        bail!(
            "k8s watch apply needs --image: {}",
            wirespeed_cli::k8s::IMAGE_HINT
        );
    }
    let (o, w) = a.watcher()?;
    let ns = o.namespace.clone();
    let log = |l: &str| eprintln!("k8s watch: {l}");
    let st = kwatch::apply_blocking(
        a.kubeconfig.as_deref(),
        o,
        &w,
        a.key_file.is_some(),
        secs("--ready-timeout", &a.ready_timeout)?,
        &log,
    )?;
    println!(
        "the watcher in namespace {ns} watches {} agents ({}); probes every {:.0} s",
        st.agents.len(),
        st.agents.join(", "),
        st.probe_period_s
    );
    println!("{}", kwatch::how_to_reach(&ns));
    Ok(())
}

fn status(a: StatusArgs) -> Result<()> {
    let st = kwatch::status_blocking(a.kubeconfig.as_deref(), &a.namespace)
        .with_context(|| format!("the watcher in namespace {}", a.namespace))?;
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_vec_pretty(&st)?)
            .with_context(|| format!("write {}", p.display()))?;
    }
    println!(
        "watching {} agents ({}) since {}: {} tests stored; probes every {:.0} s, each pair's bandwidth every {}",
        st.agents.len(),
        st.agents.join(", "),
        wirespeed_types::text::utc_time(st.started_unix),
        st.tests_stored,
        st.probe_period_s,
        wirespeed_types::text::human_duration(st.bandwidth_every_s)
    );
    print!(
        "{}",
        wirespeed_report::watch::render_incidents(&st.incidents)
    );
    if !st.busy_hosts.is_empty() {
        println!(
            "CPUs busy (links not judged meanwhile): {}",
            st.busy_hosts.join(", ")
        );
    }
    print!("{}", wirespeed_report::fleet::render_history(&st.latest));
    Ok(())
}

fn in_cluster(a: InClusterArgs) -> Result<()> {
    if watch_cmd::names_a_fleet(&a.watch) {
        bail!("k8s watch in-cluster finds its agents: no --agents, --synthetic or --dry-run");
    }
    let c = InCluster {
        namespace: a.namespace.clone(),
        network: a.network,
        port: a.port,
        http_port: a.http_port,
        rediscover: secs("--rediscover", &a.rediscover)?,
        ready_timeout: secs("--ready-timeout", &a.ready_timeout)?,
    };
    let (opts, http) = watch_cmd::prepare(&a.watch)?;
    let log = |l: &str| eprintln!("k8s watch: {l}");
    let st = kwatch::run_in_cluster(&c, &opts, http, &log)?;
    println!("{}", watch_cmd::summary(&st, &opts.history));
    Ok(())
}
