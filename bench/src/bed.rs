//! The testbed: the lab's two hosts and five links, and every tool's
//! server started on host `b`.

use crate::opts::Opts;
use crate::profile;
use crate::tools::Server;
use std::collections::BTreeMap;
use wirespeed_lab::{Lab, LabSpec, LinkSpec};

/// The testbed: the lab, the tools' servers on host `b`, the binaries.
pub(crate) struct Bed {
    pub(crate) lab: Lab,
    pub(crate) servers: BTreeMap<&'static str, Server>,
    pub(crate) ws: String,
    /// bench/probe/udpgso.c built beside the harness (bench/compare
    /// builds it), when a C compiler was there.
    pub(crate) udpgso: Option<String>,
    /// `--perf`: when in a run to record the one-second profile.
    pub(crate) profile_at: Option<std::time::Duration>,
}

impl Bed {
    pub(crate) fn addr(&self, link: usize) -> String {
        self.lab
            .addr4("b", link)
            .map(|a| a.to_string())
            .unwrap_or_default()
    }
    pub(crate) fn local(&self, link: usize) -> String {
        self.lab
            .addr4("a", link)
            .map(|a| a.to_string())
            .unwrap_or_default()
    }
}

/// Brings up the lab and starts every server on it.
fn build() -> Result<Bed, String> {
    let mut spec = LabSpec::two_hosts(&Lab::unique("bench"), 1, None);
    for rate in [Some("2gbit"), Some("2gbit"), None, None] {
        spec.links.push(LinkSpec {
            a: "a".into(),
            b: "b".into(),
            rate: rate.map(String::from),
            ..LinkSpec::default()
        });
    }
    let lab = Lab::up(&spec).map_err(|e| e.to_string())?;
    let ws = std::env::var("WIRESPEED")
        .ok()
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(
                exe.parent()?
                    .join("wirespeed")
                    .to_string_lossy()
                    .to_string(),
            )
        })
        .ok_or("cannot find the wirespeed binary (set WIRESPEED)")?;
    let b0 = lab.addr4("b", 0).map(|a| a.to_string()).unwrap_or_default();
    let mut servers = BTreeMap::new();
    let list: [(&'static str, Vec<&str>, u16); 7] = [
        ("wirespeed", vec![&ws, "serve", "--port", "5300"], 5300),
        ("iperf3", vec!["iperf3", "-s", "-p", "5201"], 5201),
        ("iperf3b", vec!["iperf3", "-s", "-p", "5202"], 5202),
        ("iperf2", vec!["iperf", "-s", "-p", "5001"], 5001),
        (
            "sockperf",
            vec!["sockperf", "server", "--tcp", "-i", &b0, "-p", "11111"],
            11111,
        ),
        (
            "sockperf-pinned",
            vec![
                "taskset", "-c", "0", "sockperf", "server", "--tcp", "-i", &b0, "-p", "11112",
            ],
            11112,
        ),
        (
            "sockperf-udp",
            vec!["sockperf", "server", "-i", &b0, "-p", "11113"],
            11113,
        ),
    ];
    for (name, argv, port) in list {
        servers.insert(name, Server::start(&lab, "b", &argv, port)?);
    }
    // The equal-offload UDP floor (bench/probe/udpgso.c): optional, the
    // udp-gso row says when it is missing.
    let udpgso = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.join("udpgso")))
        .filter(|p| p.exists())
        .map(|p| p.to_string_lossy().to_string());
    if let Some(u) = &udpgso {
        servers.insert(
            "udpgso",
            Server::start(&lab, "b", &[u, "sink", "5400"], 5400)?,
        );
    } else {
        eprintln!(
            "bench/probe/udpgso.c is not built beside the harness: the udp-gso row has no peer"
        );
    }
    Ok(Bed {
        lab,
        servers,
        ws,
        udpgso,
        profile_at: None,
    })
}

/// The testbed, with `--perf`'s moment set; exits when it cannot be had.
pub(crate) fn bed_for(o: &Opts) -> Bed {
    if !wirespeed_lab::is_root() {
        eprintln!("bench/compare builds network namespaces: run it as root");
        std::process::exit(1);
    }
    if o.perf
        && let Err(e) = profile::available()
    {
        eprintln!("--perf: {e}");
        std::process::exit(1);
    }
    let mut bed = match build() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("testbed: {e}");
            std::process::exit(1);
        }
    };
    if o.perf {
        // The middle second of the run (runs last `duration` s).
        bed.profile_at = Some(std::time::Duration::from_secs_f64(
            (o.duration as f64 / 2.0 - 0.5).max(0.2),
        ));
    }
    bed
}
