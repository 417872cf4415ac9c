//! `bench/compare`: wirespeed against iperf3, iperf2 and sockperf on one
//! namespace testbed, in one run. Every figure is the median of several
//! runs, tools interleaved run by run so drift hits all alike; the ratios
//! are what counts (absolute speeds move 10-20% between runs here).
//!
//! Two tables: defaults against defaults (what a user sees who types each
//! tool's plain command) and equal settings (the same message size,
//! congestion control and flow count for every tool; threads where the
//! peer has them). A claim that wirespeed is faster rests on the second.
//!
//! The testbed: hosts `a` (clients) and `b` (servers); link 0 uncapped,
//! links 1 and 2 capped at 2 Gbit/s each by tbf, links 3 and 4 uncapped.

mod profile;
mod sys;
mod tools;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use tools::{
    Figures, Measured, Server, parse_iperf2, parse_iperf3, parse_sockperf, parse_udpgso,
    parse_wirespeed, run_client,
};
use wirespeed_lab::{Lab, LabSpec, LinkSpec};

/// Per-NIC cap of the capped links, bits per second.
const CAP_BPS: f64 = 2e9;
/// Goodput over frame bytes at MTU 1500: tbf counts the Ethernet header.
const GOODPUT_RATIO: f64 = 1448.0 / 1514.0;
/// The message size of every equal-settings stream row (iperf3's and
/// iperf2's default write size).
const MSG: &str = "128K";
/// Every group, in the order they run.
const GROUPS: [&str; 18] = [
    "d-stream1",
    "d-stream4",
    "d-rr",
    "s1-bbr",
    "s1-cubic",
    "s4-bbr",
    "s4-cubic",
    "skip-rx",
    "nics2",
    "caps",
    "rr14",
    "rr14-pinned",
    "rr64k",
    "crr",
    "rr80k",
    "udp",
    "udp-gso",
    "udp-rr",
];

struct Opts {
    runs: usize,
    duration: u32,
    groups: Vec<String>,
    out: Option<String>,
    perf: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: bench/compare [--runs N (default 5)] [--duration SECS (default 5)] \
         [--groups G,G,... (default all: {})] [--out FILE.json] [--perf]",
        GROUPS.join(",")
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        runs: 5,
        duration: 5,
        groups: GROUPS.map(String::from).to_vec(),
        out: None,
        perf: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--perf" {
            o.perf = true;
            i += 1;
            continue;
        }
        let val = args.get(i + 1).cloned();
        match (args[i].as_str(), val) {
            ("--runs", Some(v)) => o.runs = v.parse().unwrap_or_else(|_| usage()),
            ("--duration", Some(v)) => o.duration = v.parse().unwrap_or_else(|_| usage()),
            ("--groups", Some(v)) => o.groups = v.split(',').map(String::from).collect(),
            ("--out", Some(v)) => o.out = Some(v),
            _ => usage(),
        }
        i += 2;
    }
    if o.runs == 0 || o.duration == 0 {
        usage();
    }
    if let Some(g) = o.groups.iter().find(|g| !GROUPS.contains(&g.as_str())) {
        eprintln!("unknown group {g}");
        usage();
    }
    o
}

/// One contender's samples.
#[derive(Default, Clone)]
struct Samples {
    figures: Vec<Figures>,
    /// Client CPU % of one core per Gbit/s.
    cpu_per_gbps: Vec<f64>,
    /// Server CPU % of one core per Gbit/s.
    server_cpu_per_gbps: Vec<f64>,
    /// Share of the client's CPU time spent in user space, percent.
    client_user_pct: Vec<f64>,
    /// `--perf`: the runs' mid-run samples, summed.
    profile: Option<profile::Profile>,
}

/// The median (wirespeed-types'), 0 without any value.
fn median(v: Vec<f64>) -> f64 {
    wirespeed_types::stats::median(&v).unwrap_or(0.0)
}

impl Samples {
    fn add(&mut self, f: Figures, m: &Measured, p: Option<profile::Profile>) {
        if let Some(p) = p {
            self.profile.get_or_insert_default().add(&p);
        }
        let gbps = f.bps / 1e9;
        if m.cpu_s > 0.0 {
            self.client_user_pct.push(m.user_s / m.cpu_s * 100.0);
        }
        if gbps > 0.0 && m.wall_s > 0.0 {
            self.cpu_per_gbps.push(m.cpu_s / m.wall_s * 100.0 / gbps);
            self.server_cpu_per_gbps
                .push(m.server_cpu_s / m.wall_s * 100.0 / gbps);
        }
        self.figures.push(f);
    }
    fn med(&self, pick: fn(&Figures) -> f64) -> f64 {
        median(self.figures.iter().map(pick).collect())
    }
    fn spread(&self, pick: fn(&Figures) -> f64) -> (f64, f64) {
        let v: Vec<f64> = self.figures.iter().map(pick).collect();
        (
            v.iter().cloned().fold(f64::INFINITY, f64::min),
            v.iter().cloned().fold(0.0, f64::max),
        )
    }
}

/// A tool invocation in one group: one process, or several at once (one
/// per NIC) whose figures add up.
struct Contender {
    label: String,
    procs: Vec<(Vec<String>, &'static str)>,
    parse: fn(&str) -> Result<Figures, String>,
}

impl Contender {
    fn is_wirespeed(&self) -> bool {
        self.label.starts_with("wirespeed")
    }
}

/// Which table a group belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Table {
    Defaults,
    Equal,
}

/// What a group measures.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Stream,
    Rr,
}

/// A row of a table: contenders run in turn; the first is the wirespeed
/// figure the row's claim rests on.
struct Group {
    name: &'static str,
    table: Table,
    kind: Kind,
    /// The settings every contender shares, or why a row has no peer.
    settings: String,
    contenders: Vec<Contender>,
}

struct Bed {
    lab: Lab,
    servers: BTreeMap<&'static str, Server>,
    ws: String,
    /// bench/probe/udpgso.c built beside the harness (bench/compare
    /// builds it), when a C compiler was there.
    udpgso: Option<String>,
    /// `--perf`: when in a run to record the one-second profile.
    profile_at: Option<std::time::Duration>,
}

impl Bed {
    fn addr(&self, link: usize) -> String {
        self.lab
            .addr4("b", link)
            .map(|a| a.to_string())
            .unwrap_or_default()
    }
    fn local(&self, link: usize) -> String {
        self.lab
            .addr4("a", link)
            .map(|a| a.to_string())
            .unwrap_or_default()
    }
}

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

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A contender of one process.
fn one(
    label: &str,
    argv: Vec<String>,
    parse: fn(&str) -> Result<Figures, String>,
    server: &'static str,
) -> Contender {
    Contender {
        label: label.into(),
        procs: vec![(argv, server)],
        parse,
    }
}

/// A group's table and settings, what it measures, and its contenders.
type GroupRow = ((Table, String), Kind, Vec<Contender>);

/// The settings line of a row in the equal-settings table.
fn eq(settings: &str) -> (Table, String) {
    (Table::Equal, settings.to_string())
}

/// The command lines of each tool on one testbed for `d` seconds a run.
struct Cmds<'a> {
    bed: &'a Bed,
    /// The peer's address on link 0.
    b0: String,
    /// The duration as wirespeed takes it (`5s`).
    ds: String,
    /// The duration in seconds as the peers take it (`5`).
    dn: String,
}

impl<'a> Cmds<'a> {
    fn new(bed: &'a Bed, d: u32) -> Self {
        Cmds {
            bed,
            b0: bed.addr(0),
            ds: format!("{d}s"),
            dn: d.to_string(),
        }
    }

    fn wsb_to(&self, dst: &str, extra: &[&str]) -> Vec<String> {
        let ws = self.bed.ws.as_str();
        let mut v = strings(&[ws, "bench", dst, "-d", &self.ds, "--warmup", "1s", "--json"]);
        v.extend(strings(extra));
        v
    }

    fn w(&self, label: &str, extra: &[&str]) -> Contender {
        one(
            label,
            self.wsb_to(&self.b0, extra),
            parse_wirespeed,
            "wirespeed",
        )
    }

    fn i3_to(&self, dst: &str, port: &str, extra: &[&str]) -> Vec<String> {
        let mut v = strings(&[
            "iperf3", "-c", dst, "-p", port, "-t", &self.dn, "-O", "1", "-J",
        ]);
        v.extend(strings(extra));
        v
    }

    fn i3(&self, label: &str, extra: &[&str]) -> Contender {
        one(
            label,
            self.i3_to(&self.b0, "5201", extra),
            parse_iperf3,
            "iperf3",
        )
    }

    fn i2_to(&self, dst: &str, port: &str, extra: &[&str]) -> Vec<String> {
        let mut v = strings(&["iperf", "-c", dst, "-p", port, "-t", &self.dn, "-y", "C"]);
        v.extend(strings(extra));
        v
    }

    fn i2(&self, label: &str, extra: &[&str]) -> Contender {
        one(
            label,
            self.i2_to(&self.b0, "5001", extra),
            parse_iperf2,
            "iperf2",
        )
    }

    /// sockperf ping-pong over TCP; `pin`: on core 0 against the pinned server.
    fn sp(&self, label: &str, pin: bool, extra: &[&str]) -> Contender {
        let (port, server) = if pin {
            ("11112", "sockperf-pinned")
        } else {
            ("11111", "sockperf")
        };
        let mut v = if pin {
            strings(&["taskset", "-c", "0"])
        } else {
            Vec::new()
        };
        v.extend(strings(&[
            "sockperf",
            "ping-pong",
            "--tcp",
            "-i",
            &self.b0,
            "-p",
            port,
            "-t",
            &self.dn,
            "--full-rtt",
        ]));
        v.extend(strings(extra));
        one(label, v, parse_sockperf, server)
    }

    /// One process per NIC (links `l1` and `l2`) for the peers; one
    /// wirespeed test over both.
    fn two_nics(&self, l1: usize, l2: usize) -> Vec<Contender> {
        let bed = self.bed;
        let (a1, b1, a2, b2) = (bed.local(l1), bed.addr(l1), bed.local(l2), bed.addr(l2));
        let paths = format!("{a1}={b1},{a2}={b2}");
        let per_nic = |tool: &str| -> Contender {
            let procs = match tool {
                "iperf3" => vec![
                    (
                        self.i3_to(&b1, "5201", &["-B", &a1, "-P", "2", "-l", MSG]),
                        "iperf3",
                    ),
                    (
                        self.i3_to(&b2, "5202", &["-B", &a2, "-P", "2", "-l", MSG]),
                        "iperf3b",
                    ),
                ],
                _ => vec![
                    (
                        self.i2_to(&b1, "5001", &["-B", &a1, "-P", "2", "-l", MSG]),
                        "iperf2",
                    ),
                    (
                        self.i2_to(&b2, "5001", &["-B", &a2, "-P", "2", "-l", MSG]),
                        "iperf2",
                    ),
                ],
            };
            Contender {
                label: format!("{tool}, one process per NIC, -P 2 each"),
                procs,
                parse: if tool == "iperf3" {
                    parse_iperf3
                } else {
                    parse_iperf2
                },
            }
        };
        let (x, y) = (per_nic("iperf3"), per_nic("iperf2"));
        vec![
            self.w(
                "wirespeed, one test over both NICs, -F 4 -T 2",
                &["--paths", &paths, "-F", "4", "-T", "2", "-l", MSG],
            ),
            x,
            y,
        ]
    }

    /// Each tool at `MSG` per call with congestion control `cc`, one flow
    /// or four.
    fn eq_stream(&self, cc: &str, flows: &str) -> Vec<Contender> {
        let l = ["-l", MSG];
        if flows == "1" {
            vec![
                self.w(
                    &format!("wirespeed -l {MSG} --cc {cc}"),
                    &[&l[..], &["--cc", cc]].concat(),
                ),
                self.i3(
                    &format!("iperf3 -l {MSG} -C {cc}"),
                    &[&l[..], &["-C", cc]].concat(),
                ),
                self.i2(
                    &format!("iperf2 -l {MSG} -Z {cc}"),
                    &[&l[..], &["-Z", cc]].concat(),
                ),
            ]
        } else {
            vec![
                // First, the row the ratio uses: one worker per side, as
                // iperf3 3.12 runs (both ends share this testbed's cores).
                self.w(
                    &format!("wirespeed -F 4 -T 1 -l {MSG} --cc {cc}"),
                    &[&l[..], &["-F", "4", "-T", "1", "--cc", cc]].concat(),
                ),
                self.w(
                    &format!("wirespeed -F 4 -T 2 -l {MSG} --cc {cc}"),
                    &[&l[..], &["-F", "4", "-T", "2", "--cc", cc]].concat(),
                ),
                self.i3(
                    &format!("iperf3 -P 4 -l {MSG} -C {cc}"),
                    &[&l[..], &["-P", "4", "-C", cc]].concat(),
                ),
                self.i2(
                    &format!("iperf2 -P 4 -l {MSG} -Z {cc}"),
                    &[&l[..], &["-P", "4", "-Z", cc]].concat(),
                ),
            ]
        }
    }

    /// The defaults table: each tool's plain command.
    fn defaults_row(&self, name: &str) -> GroupRow {
        match name {
            "d-stream1" => (
                (Table::Defaults, "each tool's plain command".into()),
                Kind::Stream,
                vec![
                    self.w("wirespeed", &[]),
                    self.i3("iperf3", &[]),
                    self.i2("iperf2", &[]),
                ],
            ),
            "d-stream4" => (
                (Table::Defaults, "four flows, otherwise defaults".into()),
                Kind::Stream,
                vec![
                    self.w("wirespeed -F 4", &["-F", "4"]),
                    self.i3("iperf3 -P 4", &["-P", "4"]),
                    self.i2("iperf2 -P 4", &["-P", "4"]),
                ],
            ),
            "d-rr" => (
                (Table::Defaults, "each tool's plain request/response".into()),
                Kind::Rr,
                vec![
                    self.w("wirespeed -w rr", &["-w", "rr"]),
                    self.sp("sockperf ping-pong --tcp", false, &[]),
                ],
            ),
            _ => unreachable!("group sends only the defaults here"),
        }
    }

    /// The TCP stream rows at equal settings.
    fn stream_row(&self, name: &str) -> GroupRow {
        match name {
            "s1-bbr" => (
                eq(&format!("1 flow, {MSG} per call, bbr, 1 thread")),
                Kind::Stream,
                self.eq_stream("bbr", "1"),
            ),
            "s1-cubic" => (
                eq(&format!("1 flow, {MSG} per call, cubic, 1 thread")),
                Kind::Stream,
                self.eq_stream("cubic", "1"),
            ),
            "s4-bbr" => (
                eq(&format!(
                    "4 flows, {MSG} per call, bbr; threads: wirespeed -T 1 as iperf3 3.12 has 1 (-T 2 shown), iperf2 one per flow"
                )),
                Kind::Stream,
                self.eq_stream("bbr", "4"),
            ),
            "s4-cubic" => (
                eq(&format!(
                    "4 flows, {MSG} per call, cubic; threads: wirespeed -T 1 as iperf3 3.12 has 1 (-T 2 shown), iperf2 one per flow"
                )),
                Kind::Stream,
                self.eq_stream("cubic", "4"),
            ),
            "skip-rx" => (
                eq(&format!(
                    "1 flow, {MSG} per call, default cc; the peers have no way to skip the receive copy"
                )),
                Kind::Stream,
                vec![
                    self.w(
                        &format!("wirespeed --skip-rx-copy -l {MSG}"),
                        &["--skip-rx-copy", "-l", MSG],
                    ),
                    self.i3(&format!("iperf3 -l {MSG}"), &["-l", MSG]),
                    self.i2(&format!("iperf2 -l {MSG}"), &["-l", MSG]),
                ],
            ),
            "nics2" => (
                eq(&format!(
                    "2 uncapped NICs, 4 flows, 2 threads or processes, {MSG} per call"
                )),
                Kind::Stream,
                self.two_nics(3, 4),
            ),
            "caps" => (
                eq(&format!(
                    "2 NICs capped at 2 Gbit/s each, 4 flows, 2 threads or processes, {MSG} per call"
                )),
                Kind::Stream,
                self.two_nics(1, 2),
            ),
            _ => unreachable!("group sends only the stream rows here"),
        }
    }

    /// The TCP request/response rows at equal settings.
    fn rr_row(&self, name: &str) -> GroupRow {
        match name {
            "rr14" => (
                eq("14 B each way (sockperf's smallest message), 1 flow, unpinned"),
                Kind::Rr,
                vec![
                    self.w("wirespeed -w rr --size 14", &["-w", "rr", "--size", "14"]),
                    self.sp("sockperf ping-pong --tcp -m 14", false, &["-m", "14"]),
                ],
            ),
            "rr14-pinned" => (
                eq("14 B each way, 1 flow, client and server on core 0"),
                Kind::Rr,
                vec![
                    self.w(
                        "wirespeed -w rr --size 14 --pin 0 --remote-pin 0",
                        &[
                            "-w",
                            "rr",
                            "--size",
                            "14",
                            "--pin",
                            "0",
                            "--remote-pin",
                            "0",
                        ],
                    ),
                    self.sp(
                        "sockperf ping-pong --tcp -m 14 (taskset 0)",
                        true,
                        &["-m", "14"],
                    ),
                ],
            ),
            "rr64k" => (
                eq("64000 B each way, 1 flow, unpinned"),
                Kind::Rr,
                vec![
                    self.w(
                        "wirespeed -w rr --size 64000",
                        &["-w", "rr", "--size", "64000"],
                    ),
                    self.sp("sockperf ping-pong --tcp -m 64000", false, &["-m", "64000"]),
                ],
            ),
            "crr" => (
                eq(
                    "1 B connect/request/response; no peer here (netperf and neper are not packaged)",
                ),
                Kind::Rr,
                vec![self.w("wirespeed -w crr", &["-w", "crr"])],
            ),
            "rr80k" => (
                eq("80000 B each way; no peer here (sockperf's largest message is 65506 B)"),
                Kind::Rr,
                vec![self.w(
                    "wirespeed -w rr --size 80000",
                    &["-w", "rr", "--size", "80000"],
                )],
            ),
            _ => unreachable!("group sends only the request/response rows here"),
        }
    }

    /// The UDP rows at equal settings.
    fn udp_row(&self, name: &str) -> GroupRow {
        match name {
            // UDP at the same datagram size (1400 bytes), unpaced, one flow,
            // one datagram per system call on both sides as iperf3 3.12 and
            // iperf2 have (iperf3 3.12 has no --gsro): iperf3's receiver-side
            // rate against wirespeed's goodput without UDP GSO/GRO.
            "udp" => (
                eq("UDP, 1400 B datagrams, unpaced, 1 flow, no GSO/GRO (iperf3 3.12 has none)"),
                Kind::Stream,
                vec![
                    self.w(
                        "wirespeed -w udp-stream -l 1400 --no-gso --no-gro",
                        &["-w", "udp-stream", "-l", "1400", "--no-gso", "--no-gro"],
                    ),
                    self.i3("iperf3 -u -b 0 -l 1400", &["-u", "-b", "0", "-l", "1400"]),
                ],
            ),
            "udp-gso" => self.udp_gso_row(),
            // UDP request/response, 64-byte messages both ways.
            "udp-rr" => (
                eq("UDP request/response, 64 B each way, 1 flow"),
                Kind::Rr,
                vec![
                    self.w(
                        "wirespeed -w udp-rr --size 64",
                        &["-w", "udp-rr", "--size", "64"],
                    ),
                    one(
                        "sockperf ping-pong (UDP) -m 64",
                        strings(&[
                            "sockperf",
                            "ping-pong",
                            "-i",
                            &self.b0,
                            "-p",
                            "11113",
                            "-m",
                            "64",
                            "-t",
                            &self.dn,
                            "--full-rtt",
                        ]),
                        parse_sockperf,
                        "sockperf-udp",
                    ),
                ],
            ),
            _ => unreachable!("group sends only the UDP rows here"),
        }
    }

    /// UDP with GSO on send and GRO on receive on both sides: wirespeed
    /// against bench/probe/udpgso.c, a bare C program that makes only the
    /// system calls (no packaged peer here has GSO/GRO: iperf3 3.19's
    /// --gsro is newer than Debian's 3.12).
    fn udp_gso_row(&self) -> GroupRow {
        let mut v = vec![self.w(
            "wirespeed -w udp-stream -l 1400",
            &["-w", "udp-stream", "-l", "1400"],
        )];
        if let Some(u) = &self.bed.udpgso {
            v.push(one(
                "C floor udpgso (UDP_SEGMENT + UDP_GRO)",
                strings(&[u, "src", &self.b0, "5400", &self.dn, "1400", "1"]),
                parse_udpgso,
                "udpgso",
            ));
        }
        (
            eq("UDP, 1400 B datagrams, unpaced, 1 flow, GSO and GRO on both sides"),
            Kind::Stream,
            v,
        )
    }
}

/// Every group's contenders on `bed` for `d` seconds a run.
fn group(bed: &Bed, name: &'static str, d: u32) -> Group {
    let c = Cmds::new(bed, d);
    let ((table, settings), kind, contenders) = match name {
        "d-stream1" | "d-stream4" | "d-rr" => c.defaults_row(name),
        "s1-bbr" | "s1-cubic" | "s4-bbr" | "s4-cubic" | "skip-rx" | "nics2" | "caps" => {
            c.stream_row(name)
        }
        "rr14" | "rr14-pinned" | "rr64k" | "crr" | "rr80k" => c.rr_row(name),
        "udp" | "udp-gso" | "udp-rr" => c.udp_row(name),
        _ => unreachable!("parse_opts checks group names"),
    };
    Group {
        name,
        table,
        kind,
        settings,
        contenders,
    }
}

/// Runs one contender once: its processes at the same time, their
/// figures added (rates, transactions) and their CPU summed; a server
/// shared by two processes is charged once. With `profile` (`--perf`
/// on a stream row) a system-wide profile is recorded mid-run.
fn run(
    bed: &Bed,
    ct: &Contender,
    profile: bool,
) -> Result<(Figures, Measured, Option<profile::Profile>), String> {
    let mut prof = None;
    let results: Vec<Result<Measured, String>> = std::thread::scope(|s| {
        let pids: Vec<u32> = ct
            .procs
            .iter()
            .filter_map(|p| bed.servers.get(p.1).map(Server::pid))
            .collect();
        let rec = bed
            .profile_at
            .filter(|_| profile)
            .map(|at| s.spawn(move || profile::record(at, &pids)));
        let hs: Vec<_> = ct
            .procs
            .iter()
            .map(|(argv, server)| s.spawn(|| run_client(&bed.lab, "a", argv, &bed.servers[server])))
            .collect();
        let r = hs
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("client thread panicked".into()))
            })
            .collect();
        if let Some(h) = rec {
            match h.join() {
                Ok(Ok(p)) => prof = Some(p),
                Ok(Err(e)) => eprintln!("  perf: {e}"),
                Err(_) => eprintln!("  perf: the recording thread panicked"),
            }
        }
        r
    });
    let mut fig = Figures::default();
    let mut m = Measured::default();
    let mut charged: BTreeMap<&str, f64> = BTreeMap::new();
    for (r, (_, server)) in results.into_iter().zip(&ct.procs) {
        let one = r?;
        let f = (ct.parse)(&one.stdout)?;
        fig.bps += f.bps;
        fig.tps += f.tps;
        fig.p50_us = fig.p50_us.max(f.p50_us);
        fig.p99_us = fig.p99_us.max(f.p99_us);
        m.cpu_s += one.cpu_s;
        m.user_s += one.user_s;
        m.wall_s = m.wall_s.max(one.wall_s);
        let c = charged.entry(server).or_default();
        *c = c.max(one.server_cpu_s);
    }
    m.server_cpu_s = charged.values().sum();
    Ok((fig, m, prof))
}

fn gbps(f: &Figures) -> f64 {
    f.bps / 1e9
}
fn p50(f: &Figures) -> f64 {
    f.p50_us
}
fn p99(f: &Figures) -> f64 {
    f.p99_us
}
fn tps(f: &Figures) -> f64 {
    f.tps
}

/// One row of a summary table.
struct Row {
    table: Table,
    group: &'static str,
    settings: String,
    wirespeed: String,
    peer: String,
    ratio: Option<f64>,
    target: Option<(String, bool)>,
}

/// Measures `g` `runs` times, tools rotated run by run; appends its
/// detail to `report` and returns its summary row and JSON.
fn measure(bed: &Bed, g: &Group, runs: usize, report: &mut String) -> (Row, serde_json::Value) {
    let (samples, errors) = sample(bed, g, runs);
    write_detail(g, &samples, report);
    let (row, ratio) = summary_row(g, &samples, &errors);
    let json = group_json(g, &samples, ratio, &errors);
    (row, json)
}

/// Runs each of `g`'s contenders `runs` times, the order rotated run by
/// run; returns their samples and the runs that failed.
fn sample(bed: &Bed, g: &Group, runs: usize) -> (Vec<Samples>, Vec<String>) {
    let list = &g.contenders;
    let mut samples: Vec<Samples> = vec![Samples::default(); list.len()];
    let mut errors = Vec::new();
    for r in 0..runs {
        for k in 0..list.len() {
            // Rotate the order run by run so no tool always goes first.
            let i = (k + r) % list.len();
            let ct = &list[i];
            eprintln!("{} run {}/{runs}: {}", g.name, r + 1, ct.label);
            match run(bed, ct, g.kind == Kind::Stream) {
                Ok((f, m, p)) => samples[i].add(f, &m, p),
                Err(e) => {
                    eprintln!("  {}: {e}", ct.label);
                    errors.push(format!("{}: {e}", ct.label));
                }
            }
        }
    }
    (samples, errors)
}

/// Appends `g`'s detail, a line per contender, to `report`.
fn write_detail(g: &Group, samples: &[Samples], report: &mut String) {
    let _ = writeln!(report, "\n== {} ({})", g.name, g.settings);
    for (ct, s) in g.contenders.iter().zip(samples) {
        match g.kind {
            Kind::Rr => {
                let (lo, hi) = s.spread(tps);
                let _ = writeln!(
                    report,
                    "  {:<52} {:>9.0} trans/s ({lo:.0}-{hi:.0})  p50 {:>8.1} us  p99 {:>8.1} us  client user {:>4.1}% of its cpu",
                    ct.label,
                    s.med(tps),
                    s.med(p50),
                    s.med(p99),
                    median(s.client_user_pct.clone())
                );
            }
            Kind::Stream => {
                let (lo, hi) = s.spread(gbps);
                let _ = writeln!(
                    report,
                    "  {:<52} {:>7.2} Gbit/s ({lo:.2}-{hi:.2})  client cpu {:>5.1}%/Gbit/s (user {:>4.1}%)  server {:>5.1}%/Gbit/s",
                    ct.label,
                    s.med(gbps),
                    median(s.cpu_per_gbps.clone()),
                    median(s.client_user_pct.clone()),
                    median(s.server_cpu_per_gbps.clone()),
                );
                if let Some(p) = &s.profile {
                    let _ = writeln!(
                        report,
                        "    perf, 1 s mid-run, % of all CPU samples:{}",
                        p.render()
                    );
                }
            }
        }
    }
}

/// `g`'s summary row: wirespeed against the best peer, and the ratio
/// between them.
fn summary_row(g: &Group, samples: &[Samples], errors: &[String]) -> (Row, Option<f64>) {
    let list = &g.contenders;
    let ws = &samples[0];
    let pick: fn(&Figures) -> f64 = if g.kind == Kind::Rr { tps } else { gbps };
    let best = list
        .iter()
        .zip(samples)
        .filter(|(c, _)| !c.is_wirespeed())
        .max_by(|a, b| a.1.med(pick).total_cmp(&b.1.med(pick)));
    let fmt = |s: &Samples| match g.kind {
        Kind::Rr => format!("{:.0} trans/s, p99 {:.1} us", s.med(tps), s.med(p99)),
        Kind::Stream => format!("{:.2} Gbit/s", s.med(gbps)),
    };
    let ratio = best.map(|(_, s)| ws.med(pick) / s.med(pick));
    let target = match (g.table, g.kind, best, ratio) {
        _ if !errors.is_empty() => Some((format!("{} run(s) failed", errors.len()), false)),
        (Table::Equal, Kind::Stream, Some(_), Some(r)) => {
            Some((format!("{r:.2}x >= 1.2x the best peer"), r >= 1.2))
        }
        (Table::Equal, Kind::Rr, Some((_, s)), Some(r)) => {
            let (wp, sp) = (ws.med(p99), s.med(p99));
            Some((
                format!("{r:.2}x >= 1.0x trans/s, p99 {wp:.1} <= {sp:.1} us"),
                r >= 1.0 && wp <= sp,
            ))
        }
        _ => None,
    };
    let row = Row {
        table: g.table,
        group: g.name,
        settings: g.settings.clone(),
        wirespeed: format!("{}: {}", list[0].label, fmt(ws)),
        peer: best
            .map(|(c, s)| format!("{}: {}", c.label, fmt(s)))
            .unwrap_or_else(|| "none here".into()),
        ratio,
        target,
    };
    (row, ratio)
}

/// `g`'s JSON: every contender's figures run by run.
fn group_json(
    g: &Group,
    samples: &[Samples],
    ratio: Option<f64>,
    errors: &[String],
) -> serde_json::Value {
    let json: serde_json::Map<String, serde_json::Value> = g
        .contenders
        .iter()
        .zip(samples)
        .map(|(ct, s)| {
            (
                ct.label.clone(),
                serde_json::json!({
                    "argv": ct.procs.iter().map(|p| &p.0).collect::<Vec<_>>(),
                    "gbps": s.figures.iter().map(gbps).collect::<Vec<_>>(),
                    "tps": s.figures.iter().map(tps).collect::<Vec<_>>(),
                    "p50_us": s.figures.iter().map(p50).collect::<Vec<_>>(),
                    "p99_us": s.figures.iter().map(p99).collect::<Vec<_>>(),
                    "client_cpu_pct_per_gbps": s.cpu_per_gbps,
                    "server_cpu_pct_per_gbps": s.server_cpu_per_gbps,
                    "client_user_pct": s.client_user_pct,
                    "perf_pct": s.profile.as_ref().map(|p| p.json()),
                }),
            )
        })
        .collect();
    serde_json::json!({
        "table": if g.table == Table::Equal { "equal" } else { "defaults" },
        "settings": g.settings,
        "ratio_vs_best_peer": ratio,
        "errors": errors,
        "contenders": json,
    })
}

/// The testbed, with `--perf`'s moment set; exits when it cannot be had.
fn bed_for(o: &Opts) -> Bed {
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

/// The median of contender `label`'s figure `key` in a group's JSON `j`.
fn json_median(j: &serde_json::Value, label: &str, key: &str) -> f64 {
    j["contenders"][label][key]
        .as_array()
        .map(|v| median(v.iter().filter_map(|x| x.as_f64()).collect()))
        .unwrap_or(0.0)
}

/// The target beyond the tables that group `name` (`g`, JSON `j`) is
/// measured for, if any.
fn extra_target(name: &str, g: &Group, j: &serde_json::Value) -> Option<(String, bool)> {
    match name {
        "s1-bbr" => {
            // Sender CPU per Gbit/s below iperf3's, at equal settings.
            let c = |k: &str| json_median(j, k, "client_cpu_pct_per_gbps");
            let (wc, ic) = (
                c(&g.contenders[0].label),
                c(&format!("iperf3 -l {MSG} -C bbr")),
            );
            Some((
                format!("sender cpu: wirespeed {wc:.1} <= iperf3 {ic:.1} %/Gbit/s (s1-bbr)"),
                wc <= ic,
            ))
        }
        "caps" => {
            let ceiling = 2.0 * CAP_BPS * GOODPUT_RATIO / 1e9;
            let w = json_median(j, &g.contenders[0].label, "gbps");
            let pct = w / ceiling * 100.0;
            Some((
                format!(
                    "caps: wirespeed {pct:.1}% >= 98% of the goodput ceiling {ceiling:.3} Gbit/s"
                ),
                pct >= 98.0,
            ))
        }
        _ => None,
    }
}

/// Prints the two summary tables; true when a row's runs failed.
fn print_tables(rows: &[Row]) -> bool {
    let mut failed = false;
    for (table, title) in [
        (
            Table::Defaults,
            "defaults against defaults (what a user sees; not a speed claim)",
        ),
        (
            Table::Equal,
            "equal settings (same message size, cc, flows; threads where the peer has them)",
        ),
    ] {
        println!("\n## {title}\n");
        println!("| group | settings | wirespeed | best peer | ratio | target |");
        println!("|---|---|---|---|---|---|");
        for r in rows.iter().filter(|r| r.table == table) {
            let t = match &r.target {
                Some((t, ok)) => {
                    failed |= !ok && t.contains("failed");
                    format!("[{}] {t}", if *ok { "met" } else { "MISS" })
                }
                None => String::new(),
            };
            println!(
                "| {} | {} | {} | {} | {} | {t} |",
                r.group,
                r.settings,
                r.wirespeed,
                r.peer,
                r.ratio.map(|x| format!("{x:.2}x")).unwrap_or_default()
            );
        }
    }
    failed
}

fn main() {
    let o = parse_opts();
    let bed = bed_for(&o);
    let mut report = String::new();
    let mut json = serde_json::Map::new();
    let mut rows = Vec::new();
    let mut extra_targets: Vec<(String, bool)> = Vec::new();
    for name in &o.groups {
        let name = GROUPS.iter().find(|g| *g == name).copied().unwrap_or("");
        let g = group(&bed, name, o.duration);
        let (row, j) = measure(&bed, &g, o.runs, &mut report);
        extra_targets.extend(extra_target(name, &g, &j));
        json.insert(name.to_string(), j);
        rows.push(row);
    }
    let cc =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap_or_default();
    println!(
        "wirespeed bench/compare: median of {} runs of {} s each, tools alternating; default congestion control {}",
        o.runs,
        o.duration,
        cc.trim()
    );
    let failed = print_tables(&rows);
    println!("\n## other targets\n");
    for (t, ok) in &extra_targets {
        println!("- [{}] {t}", if *ok { "met" } else { "MISS" });
    }
    println!("\n## detail (median (min-max) per contender)");
    print!("{report}");
    if let Some(path) = &o.out {
        json.insert("runs".into(), o.runs.into());
        json.insert("duration_s".into(), o.duration.into());
        if let Err(e) = std::fs::write(
            path,
            serde_json::to_string_pretty(&json).unwrap_or_default(),
        ) {
            eprintln!("write {path}: {e}");
        }
    }
    drop(bed);
    if failed {
        std::process::exit(1);
    }
}
