//! At home for iperf3 users, measured between two network namespaces: the
//! five iperf3 command lines of issue 31 run as wirespeed commands, their
//! `--format iperf3-json` read by a reader that knows only iperf3's
//! fields and compared key for key with a real `iperf3 -J` (Debian's
//! /usr/bin/iperf3) run in the same lab; --tos seen on the receiver's
//! packets (nft counters); -m over MPTCP with a second subflow; the
//! output flags (--json-stream, --logfile, --timestamps). Needs root;
//! skips (with a note) otherwise.

use crate::common;
use common::{Proc, bin, heavy, lab_with_server, root_or_skip, run};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use wirespeed_lab::Lab;

/// `wirespeed bench B ARGS` in host a.
fn ws_bench(lab: &Lab, args: &[&str]) -> Output {
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server]).args(args);
    run(cmd)
}

/// `iperf3 -c B ARGS` in host a.
fn iperf3_client(lab: &Lab, args: &[&str]) -> Output {
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", "iperf3");
    cmd.args(["-c", &server]).args(args);
    run(cmd)
}

/// stdout as JSON, or a failure naming the command's stderr.
fn json_of(what: &str, out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Starts `iperf3 -s` in host b; returns once it says it listens.
fn iperf3_server(lab: &Lab) -> Proc {
    let mut cmd = lab.command("b", "iperf3");
    cmd.args(["-s", "--forceflush"]).stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn iperf3 -s");
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("Server listening") {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "iperf3 -s ended");
    }
    std::thread::spawn(move || for _ in reader.lines() {});
    Proc(child)
}

/// Every key path of a document (`/end/streams[]/sender/bytes`).
fn key_paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(xs) => xs
            .iter()
            .for_each(|x| key_paths(x, &format!("{at}[]"), out)),
        _ => {}
    }
}

fn keys(v: &Value) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    key_paths(v, "", &mut s);
    s
}

/// A reader of `iperf3 -J` written from iperf3's documented fields only:
/// every key it reads must be there with the right type.
mod reader {
    use serde_json::Value;

    /// A field that must exist.
    pub fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
        path.split('/').fold(v, |v, k| {
            v.get(k)
                .unwrap_or_else(|| panic!("iperf3 field {path} missing (at {k})"))
        })
    }

    pub fn num(v: &Value, path: &str) -> f64 {
        at(v, path)
            .as_f64()
            .unwrap_or_else(|| panic!("iperf3 field {path} is not a number"))
    }

    fn list<'a>(v: &'a Value, path: &str) -> &'a Vec<Value> {
        at(v, path)
            .as_array()
            .unwrap_or_else(|| panic!("iperf3 field {path} is not a list"))
    }

    /// A sum or stream object: the fields every one of them has.
    fn span(v: &Value, what: &str) -> (f64, f64) {
        for k in ["start", "end", "seconds"] {
            num(v, k);
        }
        assert!(at(v, "sender").is_boolean(), "{what}.sender");
        (num(v, "bytes"), num(v, "bits_per_second"))
    }

    /// What a dashboard takes from one document.
    #[derive(Debug)]
    pub struct Summary {
        pub protocol: String,
        pub streams: usize,
        pub reverse: bool,
        pub intervals: usize,
        pub sent_bytes: f64,
        pub received_bps: f64,
        pub bidir_reverse_bps: Option<f64>,
        pub lost_percent: Option<f64>,
        pub senders: Vec<bool>,
    }

    /// Reads a whole `iperf3 -J` document.
    pub fn read(doc: &Value) -> Summary {
        let ts = at(doc, "start/test_start");
        let protocol = at(ts, "protocol").as_str().expect("protocol").to_string();
        for k in [
            "num_streams",
            "blksize",
            "omit",
            "duration",
            "bytes",
            "blocks",
            "reverse",
        ] {
            num(ts, k);
        }
        for c in list(doc, "start/connected") {
            for k in ["socket", "local_port", "remote_port"] {
                num(c, k);
            }
        }
        num(doc, "start/timestamp/timesecs");
        let intervals = list(doc, "intervals");
        for i in intervals {
            span(at(i, "sum"), "intervals[].sum");
            for s in list(i, "streams") {
                num(s, "socket");
                span(s, "intervals[].streams[]");
            }
        }
        let udp = protocol == "UDP";
        let end = at(doc, "end");
        let (sent_bytes, _) = span(at(end, "sum_sent"), "sum_sent");
        let (_, received_bps) = span(at(end, "sum_received"), "sum_received");
        let bidir_reverse_bps = end
            .get("sum_received_bidir_reverse")
            .map(|v| span(v, "sum_received_bidir_reverse").1);
        let lost_percent = udp.then(|| num(end, "sum/lost_percent"));
        let senders = list(end, "streams")
            .iter()
            .map(|s| {
                let o = if udp { at(s, "udp") } else { at(s, "sender") };
                span(o, "end.streams[]");
                at(o, "sender").as_bool().unwrap()
            })
            .collect();
        for k in ["host_total", "host_user", "host_system", "remote_total"] {
            num(end, &format!("cpu_utilization_percent/{k}"));
        }
        Summary {
            protocol,
            streams: num(ts, "num_streams") as usize,
            reverse: num(ts, "reverse") == 1.0,
            intervals: intervals.len(),
            sent_bytes,
            received_bps,
            bidir_reverse_bps,
            lost_percent,
            senders,
        }
    }
}

// The five iperf3 command lines (durations and bytes shortened;
// UDP reverse and bidir added),
// each run as `iperf3 -c B ... -J` and as `wirespeed bench B ...
// --format iperf3-json` in the same lab: the same reader takes both, the
// key sets are equal, and each wirespeed run gives the same kind of
// result as iperf3's (direction, streams, protocol, bytes, rate).
#[test]
fn the_five_iperf3_command_lines_run_as_wirespeed_commands() {
    if !root_or_skip("the_five_iperf3_command_lines") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-i3five", 1, None);
    let _iperf3 = iperf3_server(&lab);
    // The five, then UDP in the other directions for the key sets.
    let lines: [&[&str]; 7] = [
        &["-t", "2"],
        &["-R", "-P", "4", "-t", "2"],
        &["-u", "-b", "1G", "-t", "2"],
        &["-n", "200M"],
        &["--bidir", "-t", "2"],
        &["-u", "-b", "100M", "-R", "-t", "1"],
        &["-u", "-b", "100M", "--bidir", "-t", "1"],
    ];
    for flags in lines {
        let theirs = json_of("iperf3", &iperf3_client(&lab, &[flags, &["-J"]].concat()));
        let ours = json_of(
            "wirespeed",
            &ws_bench(&lab, &[flags, &["--format", "iperf3-json"]].concat()),
        );
        let (a, b) = (keys(&theirs), keys(&ours));
        assert_eq!(
            a.symmetric_difference(&b).collect::<Vec<_>>(),
            Vec::<&String>::new(),
            "{flags:?}: key sets differ (left: iperf3 only or wirespeed only)"
        );
        let (t, w) = (reader::read(&theirs), reader::read(&ours));
        assert_eq!(
            (&t.protocol, t.streams, t.reverse, &t.senders),
            (&w.protocol, w.streams, w.reverse, &w.senders),
            "{flags:?}"
        );
        assert_eq!(t.bidir_reverse_bps.is_some(), w.bidir_reverse_bps.is_some());
        assert!(w.received_bps > 5e7, "{flags:?}: {w:?}");
        if flags.contains(&"2") {
            assert!((2..=3).contains(&w.intervals), "{flags:?}: {w:?}");
        }
        if flags.contains(&"-n") {
            let n = 200.0 * 1024.0 * 1024.0;
            assert!(w.sent_bytes >= n && w.sent_bytes < 3.0 * n, "{w:?}");
            assert_eq!(reader::num(&ours, "start/test_start/bytes"), n);
        }
        if flags.contains(&"1G") {
            // 1 Gbit/s asked, on an uncapped veth: iperf3 and wirespeed
            // both deliver it (within 15%) with a loss figure.
            assert!((0.85e9..1.15e9).contains(&w.received_bps), "{w:?}");
            assert!(w.lost_percent.is_some_and(|l| l < 5.0), "{w:?}");
        }
    }
}

/// Host `h`'s nft counter `name` (packets).
fn counter(lab: &Lab, h: &str, name: &str) -> u64 {
    let mut c = lab.command(h, "nft");
    c.args(["list", "counter", "inet", "ws31", name]);
    let out = run(c);
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .skip_while(|w| *w != "packets")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no counter {name} in {h}: {text}"))
}

/// nft in host `h`: counters of received packets whose TOS is 0x10
/// (DSCP 4), whose DSCP is EF (46), and that come from TCP port 40000-40003.
fn count_tos(lab: &Lab, h: &str) {
    let rules = "table inet ws31 {
        counter tos10 { }
        counter ef { }
        counter cport { }
        chain in {
            type filter hook input priority 0;
            ip dscp 4 counter name tos10
            ip6 dscp 4 counter name tos10
            ip dscp ef counter name ef
            tcp sport 40000-40003 counter name cport
        }
    }";
    let mut c = lab.command(h, "nft");
    c.args(["-f", "-"]).stdin(Stdio::piped());
    let mut child = c.spawn().expect("nft");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), rules.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "nft rules in {h}");
}

/// Waits until host `h` has no TCP socket on ports 40000-40003 other
/// than in TIME-WAIT (which a bind with SO_REUSEADDR may take over).
fn cports_closed(lab: &Lab, h: &str) {
    let end = Instant::now() + Duration::from_secs(70);
    loop {
        let out = lab
            .command(h, "ss")
            .args(["-Htan", "sport >= :40000 and sport <= :40003"])
            .output()
            .expect("ss");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let busy: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("TIME-WAIT"))
            .collect();
        if out.status.success() && busy.is_empty() {
            return;
        }
        assert!(
            Instant::now() < end,
            "ports 40000-40003 still in use in {h}: {busy:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// --tos 0x10 is on every flow's packets as the receiver sees them:
// forward (the server receives), reverse (the client receives) and UDP;
// --dscp ef likewise; without either, none. --cport's ports are the
// flows' source ports.
#[test]
fn tos_is_seen_on_the_receivers_packets() {
    if !root_or_skip("tos_is_seen_on_the_receivers_packets") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-i3tos", 1, None);
    count_tos(&lab, "a");
    count_tos(&lab, "b");
    let short = ["-t", "1", "--warmup", "0.2s"];
    ok(&ws_bench(&lab, &short));
    assert_eq!(counter(&lab, "b", "tos10"), 0, "no TOS without --tos");
    ok(&ws_bench(
        &lab,
        &[&short[..], &["--tos", "0x10", "-P", "2"]].concat(),
    ));
    let fwd = counter(&lab, "b", "tos10");
    assert!(fwd > 1000, "{fwd} TOS 0x10 packets at the server");
    ok(&ws_bench(
        &lab,
        &[&short[..], &["--tos", "0x10", "-R"]].concat(),
    ));
    let rev = counter(&lab, "a", "tos10");
    assert!(rev > 1000, "{rev} TOS 0x10 packets at the client (-R)");
    ok(&ws_bench(
        &lab,
        &[&short[..], &["--tos", "16", "-u", "-b", "100M"]].concat(),
    ));
    let udp = counter(&lab, "b", "tos10") - fwd;
    assert!(udp > 1000, "{udp} UDP datagrams with TOS 0x10");
    ok(&ws_bench(&lab, &[&short[..], &["--dscp", "ef"]].concat()));
    assert!(counter(&lab, "b", "ef") > 1000);
    ok(&ws_bench(
        &lab,
        &[&short[..], &["--cport", "40000", "-R", "-P", "4"]].concat(),
    ));
    assert!(
        counter(&lab, "a", "cport") == 0,
        "the server sends from its port"
    );
    // The -R run's sockets on 40000-40003 may still be closing (FIN-WAIT,
    // which SO_REUSEADDR does not bind over, unlike TIME-WAIT): a second
    // run at once met "Address already in use" on a loaded machine.
    cports_closed(&lab, "a");
    ok(&ws_bench(
        &lab,
        &[&short[..], &["--cport", "40000", "-P", "4"]].concat(),
    ));
    assert!(
        counter(&lab, "b", "cport") > 1000,
        "flows from ports 40000-40003"
    );
}

/// An nstat counter of host `h` (0 when absent).
fn nstat(lab: &Lab, h: &str, name: &str) -> u64 {
    let mut c = lab.command(h, "nstat");
    c.args(["-az", name]);
    let text = String::from_utf8_lossy(&run(c).stdout).into_owned();
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn ip(lab: &Lab, h: &str, args: &[&str]) {
    let mut c = lab.command(h, "ip");
    c.args(args);
    let out = run(c);
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// -m runs over MPTCP where net.mptcp.enabled=1 (with bbr the result
// notes how slow MPTCP subflows are here): the server takes
// MP_CAPABLE handshakes, and with the client's second link as a subflow
// endpoint a second subflow joins (MP_JOIN) over the second path. Where
// MPTCP is off, bench fails naming the sysctl.
#[test]
fn mptcp_runs_where_enabled_and_names_the_reason_where_not() {
    if !root_or_skip("mptcp") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-i3mptcp", 2, None);
    for h in ["a", "b"] {
        ip(
            &lab,
            h,
            &[
                "mptcp",
                "limits",
                "set",
                "subflow",
                "2",
                "add_addr_accepted",
                "2",
            ],
        );
    }
    // The server announces its second address; the client opens a
    // subflow to it over the second link.
    let second = lab.addr4("b", 1).unwrap().to_string();
    ip(&lab, "b", &["mptcp", "endpoint", "add", &second, "signal"]);
    // cubic: with bbr (this VM's default) MPTCP subflows crawl at about
    // 0.2 Gbit/s, and the result says so.
    let args = ["-m", "-t", "2", "--warmup", "0.5s", "--json", "--cc"];
    let r = common::first_result(&ws_bench(&lab, &[&args[..], &["cubic"]].concat()));
    assert!(common::f(&r, "throughput_bps") > 1e9, "{r}");
    assert!(r["spec"]["mptcp"].as_bool() == Some(true), "{r}");
    let bbr = common::first_result(&ws_bench(&lab, &[&args[..], &["bbr"]].concat()));
    assert!(bbr["notes"].to_string().contains("try --cc cubic"), "{bbr}");
    let capable = nstat(&lab, "b", "MPTcpExtMPCapableSYNRX");
    assert!(capable >= 1, "no MPTCP handshake reached the server");
    let joins = nstat(&lab, "b", "MPTcpExtMPJoinSynRx");
    assert!(joins >= 1, "no second subflow joined over link 1");
    // Off in the client's namespace: a clear error, no panic.
    let mut c = lab.command("a", "sysctl");
    c.args(["-qw", "net.mptcp.enabled=0"]);
    assert!(run(c).status.success());
    let out = ws_bench(&lab, &["-m", "-t", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("net.mptcp.enabled"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

// --json-stream writes one JSON line per interval and one at the end,
// to --logfile (appended), in wirespeed's JSON or in iperf3's events;
// --timestamps stamps each line of text output; -k, -Z, -B, -4,
// --omit and --connect-timeout run; a connect that cannot succeed ends
// at --connect-timeout.
#[test]
fn output_and_reach_flags_work() {
    if !root_or_skip("output_and_reach_flags_work") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab_with_server("t-i3out", 1, None);
    let dir = common::temp_dir("i3out");
    let log = dir.join("bench.ndjson");
    let me = lab.addr4("a", 0).unwrap().to_string();
    let logs = log.to_str().unwrap();
    let base = ["-i", "0.3", "--json-stream", "--logfile", logs];
    let first = ["-t", "1.2", "-Z", "-B", &me, "-4", "--omit", "0.2"];
    ok(&ws_bench(&lab, &[&base[..], &first].concat()));
    ok(&ws_bench(
        &lab,
        &[
            &base[..],
            &[
                "--format",
                "iperf3-json",
                "-k",
                "2000",
                "--connect-timeout",
                "2000",
            ],
        ]
        .concat(),
    ));
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    let ends: Vec<usize> = (0..names.len()).filter(|&i| names[i] == "end").collect();
    assert_eq!(ends.len(), 2, "{names:?}");
    assert_eq!(
        (names[0], names[ends[0] + 1]),
        ("start", "start"),
        "{names:?}"
    );
    let first_run = &names[..ends[0]];
    assert!(
        first_run.iter().filter(|n| **n == "interval").count() >= 4,
        "{names:?}"
    );
    let end = &events[ends[0]]["data"];
    assert_eq!(end["spec"]["sendfile"], true, "{end}");
    assert!(common::f(end, "throughput_bps") > 1e8, "{end}");
    assert_eq!(end["client"], me.as_str());
    // The second run's events are iperf3's: its end block has sums.
    let end2 = &events[ends[1]]["data"];
    assert!(
        reader::num(end2, "sum_sent/bytes") >= 2000.0 * 512.0 * 1024.0,
        "{end2}"
    );
    reader::num(&events[ends[0] + 2]["data"], "sum/bits_per_second");
    // --timestamps: every text line begins with the date.
    let out = ws_bench(&lab, &["-t", "0.5", "--warmup", "0", "--timestamps"]);
    ok(&out);
    let year = "20";
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        assert!(l.starts_with(year) && l.contains(" UTC "), "{l:?}");
    }
    // --timestamps=FORMAT: iperf3's strftime form, in local time.
    let out = ws_bench(
        &lab,
        &["-t", "0.5", "--warmup", "0", "--timestamps=%Y/%m/%d|"],
    );
    ok(&out);
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let b = l.as_bytes();
        assert!(
            l.starts_with(year) && b[4] == b'/' && b[10] == b'|',
            "{l:?}"
        );
    }
    // Nobody answers at .77 of the link's subnet: the connect ends at
    // --connect-timeout, not at the 10 s --timeout.
    let nobody = lab.addr4("b", 0).unwrap().octets();
    let nobody = format!("{}.{}.{}.77", nobody[0], nobody[1], nobody[2]);
    let t = Instant::now();
    let mut c = lab.command("a", bin());
    c.args(["bench", &nobody, "--connect-timeout", "400"]);
    let out = run(c);
    assert!(!out.status.success());
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}
