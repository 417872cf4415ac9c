//! The testbed: the lab's two hosts and five links, and every tool's
//! server started on host `b`.

use crate::contender::strings;
use crate::opts::Opts;
use crate::profile;
use crate::tools::Server;
use std::collections::BTreeMap;
use wirespeed_lab::{Lab, LabSpec, LinkSpec};

/// pingpong.c's servers, one per message size and protocol of the rr
/// rows (its UDP server echoes any size): name, port, bytes each way, UDP.
pub(crate) const PINGPONG: [(&str, u16, &str, bool); 5] = [
    ("pingpong", 5411, "14", false),
    ("pingpong-64k", 5412, "64000", false),
    ("pingpong-1", 5413, "1", false),
    ("pingpong-udp", 5414, "64", true),
    ("pingpong-80k", 5415, "80000", false),
];

/// The testbed: the lab, the tools' servers on host `b`, the binaries.
pub(crate) struct Bed {
    pub(crate) lab: Lab,
    pub(crate) servers: BTreeMap<&'static str, Server>,
    pub(crate) ws: String,
    /// bench/probe/udpgso.c built beside the harness (bench/compare
    /// builds it), when a C compiler was there.
    pub(crate) udpgso: Option<String>,
    /// bench/probe/crr.c built beside the harness: the blocking crr floor.
    pub(crate) crr: Option<String>,
    /// bench/probe/pingpong.c built beside the harness: the blocking rr floor.
    pub(crate) pingpong: Option<String>,
    /// bench/probe/pair.c built beside the harness: the N-flow stream floor.
    pub(crate) pair: Option<String>,
    /// iperf3 3.21 built by bench/peers (a thread per stream, `--gsro`).
    pub(crate) iperf321: Option<String>,
    /// The directory of neper's binaries built by bench/peers
    /// (`neper-tcp_stream`, `neper-tcp_rr`, `neper-tcp_crr`).
    pub(crate) neper: Option<String>,
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
    // The optional peers: the bare C floors built beside the harness
    // (bench/compare builds them) and what bench/peers built; a row says
    // when its peer is missing.
    let udpgso = beside("udpgso");
    let crr = beside("crr");
    let pingpong = beside("pingpong");
    let pair = beside("pair");
    let iperf321 = beside("../peers/bin/iperf3-3.21");
    let neper = beside("../peers/bin/neper-tcp_crr").and_then(|p| {
        Some(
            std::path::Path::new(&p)
                .parent()?
                .to_string_lossy()
                .to_string(),
        )
    });
    let mut optional: Vec<(&'static str, &Option<String>, Vec<String>, u16)> = vec![
        ("udpgso", &udpgso, strings(&["sink", "5400"]), 5400),
        ("udp-c", &udpgso, strings(&["sink", "5401", "1"]), 5401),
        ("crr-c", &crr, strings(&["server", "5410"]), 5410),
        ("iperf3-21", &iperf321, strings(&["-s", "-p", "5203"]), 5203),
    ];
    for &(name, port, size, udp) in &PINGPONG {
        let mut args = vec!["server".to_string(), port.to_string(), size.to_string()];
        args.extend(udp.then(|| "udp".to_string()));
        optional.push((name, &pingpong, args, port));
    }
    for (name, bin, args, port) in optional {
        match bin {
            Some(b) => {
                let argv: Vec<&str> = std::iter::once(b.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect();
                servers.insert(name, Server::start(&lab, "b", &argv, port)?);
            }
            None => eprintln!(
                "{name} is not built (bench/compare, bench/peers): its rows run without it"
            ),
        }
    }
    if neper.is_none() {
        eprintln!("neper is not built (bench/peers): its rows run without it");
    }
    Ok(Bed {
        lab,
        servers,
        ws,
        udpgso,
        crr,
        pingpong,
        pair,
        iperf321,
        neper,
        profile_at: None,
    })
}

/// The path of `rel` (a program) beside the harness's binary, if it is there.
fn beside(rel: &str) -> Option<String> {
    let p = std::env::current_exe().ok()?.parent()?.join(rel);
    p.exists().then(|| p.to_string_lossy().to_string())
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
