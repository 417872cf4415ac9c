//! `bench/compare`: wirespeed against iperf3, iperf2 and sockperf on one
//! namespace testbed, in one run. Every figure is the median of several
//! runs, tools interleaved run by run so drift hits all alike; the ratios
//! are what counts (absolute speeds move 10-20% between runs here).
//!
//! The testbed: hosts `a` (clients) and `b` (servers); link 0 uncapped,
//! links 1 and 2 capped at 2 Gbit/s each by tbf.

mod sys;
mod tools;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use tools::{
    Figures, Measured, Server, parse_iperf2, parse_iperf3, parse_sockperf, parse_wirespeed,
    run_client,
};
use wirespeed_lab::{Lab, LabSpec, LinkSpec};

/// Per-NIC cap of the capped links, bits per second.
const CAP_BPS: f64 = 2e9;
/// Goodput over frame bytes at MTU 1500: tbf counts the Ethernet header.
const GOODPUT_RATIO: f64 = 1448.0 / 1514.0;

struct Opts {
    runs: usize,
    duration: u32,
    groups: Vec<String>,
    out: Option<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: bench/compare [--runs N (default 3)] [--duration SECS (default 5)] \
         [--groups stream1,stream4,cubic,caps,rr,rr-pinned,udp,udp-rr] [--out FILE.json]"
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        runs: 3,
        duration: 5,
        groups: [
            "stream1",
            "stream4",
            "cubic",
            "caps",
            "rr",
            "rr-pinned",
            "udp",
            "udp-rr",
        ]
        .map(String::from)
        .to_vec(),
        out: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
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
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Samples {
    fn add(&mut self, f: Figures, m: &Measured) {
        let gbps = f.bps / 1e9;
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

/// A tool invocation in one group.
struct Contender {
    label: String,
    argv: Vec<String>,
    parse: fn(&str) -> Result<Figures, String>,
    server: &'static str,
}

fn c(
    label: &str,
    argv: &[&str],
    parse: fn(&str) -> Result<Figures, String>,
    server: &'static str,
) -> Contender {
    Contender {
        label: label.to_string(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        parse,
        server,
    }
}

struct Bed {
    lab: Lab,
    servers: BTreeMap<&'static str, Server>,
    ws: String,
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
    for _ in 0..2 {
        spec.links.push(LinkSpec {
            a: "a".into(),
            b: "b".into(),
            rate: Some("2gbit".into()),
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
    servers.insert(
        "wirespeed",
        Server::start(&lab, "b", &[&ws, "serve", "--port", "5300"], 5300)?,
    );
    servers.insert(
        "iperf3",
        Server::start(&lab, "b", &["iperf3", "-s", "-p", "5201"], 5201)?,
    );
    servers.insert(
        "iperf3b",
        Server::start(&lab, "b", &["iperf3", "-s", "-p", "5202"], 5202)?,
    );
    servers.insert(
        "iperf2",
        Server::start(&lab, "b", &["iperf", "-s", "-p", "5001"], 5001)?,
    );
    servers.insert(
        "sockperf",
        Server::start(
            &lab,
            "b",
            &["sockperf", "server", "--tcp", "-i", &b0, "-p", "11111"],
            11111,
        )?,
    );
    servers.insert(
        "sockperf-pinned",
        Server::start(
            &lab,
            "b",
            &[
                "taskset", "-c", "0", "sockperf", "server", "--tcp", "-i", &b0, "-p", "11112",
            ],
            11112,
        )?,
    );
    servers.insert(
        "sockperf-udp",
        Server::start(
            &lab,
            "b",
            &["sockperf", "server", "-i", &b0, "-p", "11113"],
            11113,
        )?,
    );
    Ok(Bed { lab, servers, ws })
}

fn contenders(bed: &Bed, group: &str, d: u32) -> Vec<Contender> {
    let b0 = bed.addr(0);
    let ds = format!("{d}s");
    let dn = d.to_string();
    let ws = bed.ws.as_str();
    let wsb = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [ws, "bench", &b0, "-d", &ds, "--warmup", "1s", "--json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let mk = |label: &str,
              argv: Vec<String>,
              parse: fn(&str) -> Result<Figures, String>,
              server| Contender {
        label: label.into(),
        argv,
        parse,
        server,
    };
    let i3 = |extra: &[&str]| {
        let mut v = vec![
            "iperf3", "-c", &b0, "-p", "5201", "-t", &dn, "-O", "1", "-J",
        ];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let i2 = |extra: &[&str]| {
        let mut v = vec!["iperf", "-c", &b0, "-p", "5001", "-t", &dn, "-y", "C"];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    match group {
        "stream1" => vec![
            mk("wirespeed", wsb(&[]), parse_wirespeed, "wirespeed"),
            mk(
                "wirespeed --skip-rx-copy",
                wsb(&["--skip-rx-copy"]),
                parse_wirespeed,
                "wirespeed",
            ),
            mk("iperf3", i3(&[]), parse_iperf3, "iperf3"),
            mk("iperf2", i2(&[]), parse_iperf2, "iperf2"),
        ],
        "stream4" => vec![
            mk(
                "wirespeed -F 4 -T 2",
                wsb(&["-F", "4", "-T", "2"]),
                parse_wirespeed,
                "wirespeed",
            ),
            mk("iperf3 -P 4", i3(&["-P", "4"]), parse_iperf3, "iperf3"),
            mk("iperf2 -P 4", i2(&["-P", "4"]), parse_iperf2, "iperf2"),
        ],
        "cubic" => vec![
            mk(
                "wirespeed --cc cubic",
                wsb(&["--cc", "cubic"]),
                parse_wirespeed,
                "wirespeed",
            ),
            mk(
                "iperf3 -C cubic",
                i3(&["-C", "cubic"]),
                parse_iperf3,
                "iperf3",
            ),
            mk(
                "iperf2 -Z cubic",
                i2(&["-Z", "cubic"]),
                parse_iperf2,
                "iperf2",
            ),
        ],
        "rr" => vec![
            mk(
                "wirespeed -w rr",
                wsb(&["-w", "rr"]),
                parse_wirespeed,
                "wirespeed",
            ),
            c(
                "sockperf ping-pong",
                &[
                    "sockperf",
                    "ping-pong",
                    "--tcp",
                    "-i",
                    &b0,
                    "-p",
                    "11111",
                    "-t",
                    &dn,
                    "--full-rtt",
                ],
                parse_sockperf,
                "sockperf",
            ),
        ],
        "rr-pinned" => vec![
            mk(
                "wirespeed -w rr --pin 0 --remote-pin 0",
                wsb(&["-w", "rr", "--pin", "0", "--remote-pin", "0"]),
                parse_wirespeed,
                "wirespeed",
            ),
            c(
                "sockperf ping-pong (taskset 0)",
                &[
                    "taskset",
                    "-c",
                    "0",
                    "sockperf",
                    "ping-pong",
                    "--tcp",
                    "-i",
                    &b0,
                    "-p",
                    "11112",
                    "-t",
                    &dn,
                    "--full-rtt",
                ],
                parse_sockperf,
                "sockperf-pinned",
            ),
        ],
        // UDP at the same datagram size (1400 bytes), unpaced: iperf3's
        // receiver-side rate (sum_received) against wirespeed's goodput,
        // with and without UDP GSO/GRO.
        "udp" => vec![
            mk(
                "wirespeed -w udp-stream -l 1400",
                wsb(&["-w", "udp-stream", "-l", "1400"]),
                parse_wirespeed,
                "wirespeed",
            ),
            mk(
                "wirespeed -w udp-stream -l 1400 --no-gso --no-gro",
                wsb(&["-w", "udp-stream", "-l", "1400", "--no-gso", "--no-gro"]),
                parse_wirespeed,
                "wirespeed",
            ),
            mk(
                "iperf3 -u -b 0 -l 1400",
                i3(&["-u", "-b", "0", "-l", "1400"]),
                parse_iperf3,
                "iperf3",
            ),
        ],
        // UDP request/response, 64-byte messages both ways.
        "udp-rr" => vec![
            mk(
                "wirespeed -w udp-rr --size 64",
                wsb(&["-w", "udp-rr", "--size", "64"]),
                parse_wirespeed,
                "wirespeed",
            ),
            c(
                "sockperf ping-pong (UDP) -m 64",
                &[
                    "sockperf",
                    "ping-pong",
                    "-i",
                    &b0,
                    "-p",
                    "11113",
                    "-m",
                    "64",
                    "-t",
                    &dn,
                    "--full-rtt",
                ],
                parse_sockperf,
                "sockperf-udp",
            ),
        ],
        _ => Vec::new(),
    }
}

/// The capped-NIC group: one wirespeed test over both capped NICs against
/// one iperf3 process per NIC, both as % of the goodput ceiling.
fn caps_run(bed: &Bed, d: u32) -> Result<(f64, f64), String> {
    let paths = format!(
        "{}={},{}={}",
        bed.local(1),
        bed.addr(1),
        bed.local(2),
        bed.addr(2)
    );
    let ds = format!("{d}s");
    let b0 = bed.addr(0);
    let argv: Vec<String> = [
        bed.ws.as_str(),
        "bench",
        &b0,
        "-d",
        &ds,
        "--warmup",
        "1s",
        "--json",
        "--paths",
        &paths,
        "-F",
        "4",
        "-T",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let m = run_client(&bed.lab, "a", &argv, &bed.servers["wirespeed"])?;
    let ws = parse_wirespeed(&m.stdout)?.bps;
    let dn = d.to_string();
    let (l1, r1, l2, r2) = (bed.local(1), bed.addr(1), bed.local(2), bed.addr(2));
    let a1: Vec<String> = [
        "iperf3", "-c", &r1, "-B", &l1, "-p", "5201", "-t", &dn, "-O", "1", "-P", "2", "-J",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let a2: Vec<String> = [
        "iperf3", "-c", &r2, "-B", &l2, "-p", "5202", "-t", &dn, "-O", "1", "-P", "2", "-J",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (x, y) = std::thread::scope(|s| {
        let h1 = s.spawn(|| run_client(&bed.lab, "a", &a1, &bed.servers["iperf3"]));
        let h2 = s.spawn(|| run_client(&bed.lab, "a", &a2, &bed.servers["iperf3b"]));
        (h1.join(), h2.join())
    });
    let get = |r: std::thread::Result<Result<Measured, String>>| -> Result<f64, String> {
        let m = r.map_err(|_| "iperf3 thread panicked".to_string())??;
        Ok(parse_iperf3(&m.stdout)?.bps)
    };
    let i3 = get(x)? + get(y)?;
    let ceiling = 2.0 * CAP_BPS * GOODPUT_RATIO;
    Ok((ws / ceiling * 100.0, i3 / ceiling * 100.0))
}

fn gbps(f: &Figures) -> f64 {
    f.bps / 1e9
}
fn p50(f: &Figures) -> f64 {
    f.p50_us
}
fn tps(f: &Figures) -> f64 {
    f.tps
}

fn main() {
    let o = parse_opts();
    if !wirespeed_lab::is_root() {
        eprintln!("bench/compare builds network namespaces: run it as root");
        std::process::exit(1);
    }
    let bed = match build() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("testbed: {e}");
            std::process::exit(1);
        }
    };
    let mut report = String::new();
    let mut json = serde_json::Map::new();
    let mut targets: Vec<(String, bool)> = Vec::new();
    let mut failed = false;
    for group in &o.groups {
        if group == "caps" {
            let (mut w, mut i) = (Vec::new(), Vec::new());
            for run in 0..o.runs {
                eprintln!("caps run {}/{}", run + 1, o.runs);
                match caps_run(&bed, o.duration) {
                    Ok((a, b)) => {
                        w.push(a);
                        i.push(b);
                    }
                    Err(e) => {
                        eprintln!("caps: {e}");
                        failed = true;
                    }
                }
            }
            let (mw, mi) = (median(w.clone()), median(i.clone()));
            let _ = writeln!(
                report,
                "\n== caps: two NICs capped at 2 Gbit/s each (goodput ceiling {:.3} Gbit/s = caps x 1448/1514)",
                2.0 * CAP_BPS * GOODPUT_RATIO / 1e9
            );
            let _ = writeln!(
                report,
                "  {:<44} {:>8.1}% of ceiling  runs {:?}",
                "wirespeed, one test over both NICs, -F 4 -T 2",
                mw,
                round1(&w)
            );
            let _ = writeln!(
                report,
                "  {:<44} {:>8.1}% of ceiling  runs {:?}",
                "iperf3, one process per NIC, -P 2 each",
                mi,
                round1(&i)
            );
            targets.push((
                format!("caps: wirespeed {mw:.1}% >= 98% of ceiling"),
                mw >= 98.0,
            ));
            json.insert(
                "caps".into(),
                serde_json::json!({"wirespeed_pct": w, "iperf3_pct": i}),
            );
            continue;
        }
        let list = contenders(&bed, group, o.duration);
        if list.is_empty() {
            eprintln!("unknown group {group}");
            usage();
        }
        let mut samples: Vec<Samples> = vec![Samples::default(); list.len()];
        for run in 0..o.runs {
            for k in 0..list.len() {
                // Rotate the order run by run so no tool always goes first.
                let i = (k + run) % list.len();
                let ct = &list[i];
                eprintln!("{group} run {}/{}: {}", run + 1, o.runs, ct.label);
                let r = run_client(&bed.lab, "a", &ct.argv, &bed.servers[ct.server])
                    .and_then(|m| (ct.parse)(&m.stdout).map(|f| (f, m)));
                match r {
                    Ok((f, m)) => samples[i].add(f, &m),
                    Err(e) => {
                        eprintln!("  {}: {e}", ct.label);
                        failed = true;
                    }
                }
            }
        }
        let rr = group.starts_with("rr") || group == "udp-rr";
        let _ = writeln!(report, "\n== {group}");
        let base = &samples[0];
        for (ct, s) in list.iter().zip(&samples) {
            if rr {
                let (lo, hi) = s.spread(p50);
                let _ = writeln!(
                    report,
                    "  {:<40} p50 {:>7.1} us ({lo:.1}-{hi:.1})  {:>9.0} trans/s",
                    ct.label,
                    s.med(p50),
                    s.med(tps)
                );
            } else {
                let (lo, hi) = s.spread(gbps);
                let ratio = base.med(gbps) / s.med(gbps);
                let _ = writeln!(
                    report,
                    "  {:<40} {:>7.2} Gbit/s ({lo:.2}-{hi:.2})  client cpu {:>5.1}%/Gbit/s  server {:>5.1}%/Gbit/s  wirespeed/this {:.2}x",
                    ct.label,
                    s.med(gbps),
                    median(s.cpu_per_gbps.clone()),
                    median(s.server_cpu_per_gbps.clone()),
                    ratio
                );
            }
        }
        match group.as_str() {
            "stream1" | "stream4" | "cubic" => {
                let w = base.med(gbps);
                for (ct, s) in list.iter().zip(&samples).skip(1) {
                    if ct.label.starts_with("wirespeed") {
                        continue;
                    }
                    let r = w / s.med(gbps);
                    targets.push((
                        format!("{group}: wirespeed / {} = {r:.2}x >= 1.0", ct.label),
                        r >= 1.0,
                    ));
                }
                if group == "stream1" {
                    let wc = median(base.cpu_per_gbps.clone());
                    let ic = median(samples[2].cpu_per_gbps.clone());
                    targets.push((
                        format!("cpu: wirespeed sender {wc:.1}%/Gbit/s <= iperf3 {ic:.1}%/Gbit/s"),
                        wc <= ic,
                    ));
                }
            }
            "udp" => {
                // Issue 12's target: UDP with GSO/GRO >= 1.2x iperf3 -u -b 0.
                let (w, i) = (base.med(gbps), samples[2].med(gbps));
                let r = w / i;
                targets.push((
                    format!("udp: wirespeed / iperf3 -u = {r:.2}x >= 1.2"),
                    r >= 1.2,
                ));
            }
            _ => {
                let (wp, sp) = (base.med(p50), samples[1].med(p50));
                let (wt, st) = (base.med(tps), samples[1].med(tps));
                targets.push((
                    format!("{group}: p50 {wp:.1} us <= 1.1 x sockperf {sp:.1} us"),
                    wp <= 1.1 * sp,
                ));
                targets.push((
                    format!("{group}: {wt:.0} trans/s >= sockperf {st:.0}"),
                    wt >= st,
                ));
            }
        }
        let g: serde_json::Map<String, serde_json::Value> = list
            .iter()
            .zip(&samples)
            .map(|(ct, s)| {
                (
                    ct.label.clone(),
                    serde_json::json!({
                        "argv": ct.argv,
                        "gbps": s.figures.iter().map(gbps).collect::<Vec<_>>(),
                        "p50_us": s.figures.iter().map(p50).collect::<Vec<_>>(),
                        "tps": s.figures.iter().map(tps).collect::<Vec<_>>(),
                        "client_cpu_pct_per_gbps": s.cpu_per_gbps,
                        "server_cpu_pct_per_gbps": s.server_cpu_per_gbps,
                    }),
                )
            })
            .collect();
        json.insert(group.clone(), serde_json::Value::Object(g));
    }
    let cc =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap_or_default();
    println!(
        "wirespeed bench/compare: median of {} runs of {} s each, default congestion control {}",
        o.runs,
        o.duration,
        cc.trim()
    );
    print!("{report}");
    println!("\n== targets");
    for (t, ok) in &targets {
        println!("  [{}] {t}", if *ok { "met " } else { "MISS" });
    }
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

fn round1(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| (x * 10.0).round() / 10.0).collect()
}
