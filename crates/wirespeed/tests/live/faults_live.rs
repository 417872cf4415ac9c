//! Delay faults for real (root; each test makes and removes its own lab):
//! the delayer (`wirespeed lab delayer`, this binary) holds packets the
//! planted time, two delays on one host take their own queues and come
//! off independently, a SIGKILLed delayer leaves traffic flowing
//! (`--queue-bypass`), removal restores the namespace exactly, and `lab
//! fault` plants until SIGTERM. Loss and rate faults are tested in
//! crates/wirespeed-lab/tests/faults.rs.

use crate::common;
use common::{bin, root_or_skip, temp_dir, terminate, ws};
use std::io::{BufRead, Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wirespeed_host::netns::run_in;
use wirespeed_lab::{FaultKind, FaultMatch, FaultSpec, Lab, LabSpec};

/// A namespace's packet filter and qdiscs, counters and comments left out.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    rules: String,
    qdiscs: String,
}

fn output(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run a tool");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn snapshot(ns: &str) -> Snapshot {
    let mut rules = String::new();
    for tool in [
        &["iptables-save"][..],
        &["ip6tables-save"],
        &["nft", "list", "ruleset"],
    ] {
        let text = output(Command::new("ip").args(["netns", "exec", ns]).args(tool));
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            // Counters move with traffic: iptables-save's [packets:bytes]
            // on chains, nft's `counter packets N bytes M` on rules.
            let l = match l.split_once(" [") {
                Some((head, _)) if l.starts_with(':') => head,
                _ => l,
            };
            let mut prev = "";
            for w in l.split_whitespace() {
                let w = if prev == "packets" || prev == "bytes" {
                    "0"
                } else {
                    w
                };
                rules.push_str(w);
                rules.push(' ');
                prev = w;
            }
            rules.push('\n');
        }
    }
    let qdiscs = output(Command::new("tc").args(["-n", ns, "qdisc", "show"]));
    Snapshot { rules, qdiscs }
}

/// Round trips of 1-byte messages over TCP from namespace `from` to an
/// echo in `to_ns` at `to`, in milliseconds, sorted.
fn rtts_ms(from: &str, to_ns: &str, to: IpAddr, n: usize) -> Vec<f64> {
    let l = run_in(to_ns, || Ok(TcpListener::bind((to, 0))))
        .unwrap()
        .unwrap();
    let at = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let echo = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(10);
        let mut s = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => panic!("no client within 10 s: {e}"),
            }
        };
        s.set_nonblocking(false).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        while let Ok(1) = s.read(&mut b) {
            if s.write_all(&b).is_err() {
                break;
            }
        }
    });
    let mut c = run_in(from, || {
        Ok(TcpStream::connect_timeout(&at, Duration::from_secs(5)))
    })
    .unwrap()
    .unwrap();
    c.set_nodelay(true).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut v = Vec::with_capacity(n);
    let mut b = [0u8; 1];
    for _ in 0..n {
        let t = Instant::now();
        c.write_all(b"x").unwrap();
        c.read_exact(&mut b).unwrap();
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    drop(c);
    echo.join().unwrap();
    v.sort_by(f64::total_cmp);
    v
}

fn median(v: &[f64]) -> f64 {
    v[v.len() / 2]
}

fn delay(host: &str, ms: f64, to: &[IpAddr]) -> FaultSpec {
    FaultSpec {
        host: host.into(),
        kind: FaultKind::Delay { ms },
        on: FaultMatch::To(to.to_vec()),
    }
}

/// Waits up to 5 s for process `pid` to be gone.
fn gone(pid: u32) -> bool {
    let end = Instant::now() + Duration::from_secs(5);
    while wirespeed_lab::pid_alive(pid) {
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

#[test]
fn a_2ms_delay_adds_about_2ms_and_a_killed_delayer_lets_traffic_pass() {
    if !root_or_skip("a_2ms_delay_adds_about_2ms") {
        return;
    }
    let _g = common::heavy();
    let lab = Lab::up(&LabSpec::two_hosts(&Lab::unique("fl-delay"), 1, None)).unwrap();
    let (na, nb) = (lab.ns("a"), lab.ns("b"));
    let b4: IpAddr = lab.addr4("b", 0).unwrap().into();
    let b6: IpAddr = lab.addr6("b", 0).unwrap().into();
    let before = snapshot(&na);
    let base = median(&rtts_ms(&na, &nb, b4, 200));
    let planted = lab
        .plant_with(&delay("a", 2.0, &[b4, b6]), Path::new(bin()))
        .expect("plant the delay");
    let q = planted.queue().unwrap();
    let c = planted.commands();
    assert!(
        c[0].ends_with(&format!(
            "lab delayer --queue {q} --delay-ms 2 --exit-on-eof"
        )),
        "{c:?}"
    );
    assert_eq!(
        c[1],
        format!(
            "ip netns exec {na} iptables -w -t mangle -A POSTROUTING -d {b4}/32 -j NFQUEUE --queue-num {q} --queue-bypass"
        )
    );
    assert!(c[2].contains(&format!(
        "ip6tables -w -t mangle -A POSTROUTING -d {b6}/128"
    )));
    let v4 = rtts_ms(&na, &nb, b4, 200);
    let v6 = rtts_ms(&na, &nb, b6, 100);
    let (d4, d6) = (median(&v4) - base, median(&v6) - base);
    eprintln!(
        "delay 2 ms planted: round trips +{d4:.3} ms over IPv4 (p10 {:.3}, p90 {:.3}, base {base:.3} ms), +{d6:.3} ms over IPv6",
        v4[v4.len() / 10] - base,
        v4[v4.len() * 9 / 10] - base,
    );
    for d in [d4, d6] {
        assert!((1.9..=3.5).contains(&d), "+{d:.3} ms for a 2 ms delay");
    }
    let ran = planted.remove().expect("remove the delay");
    assert!(ran.iter().any(|c| c.starts_with("kill -TERM")), "{ran:?}");
    assert_eq!(snapshot(&na), before, "the namespace is as it was");
    let after = median(&rtts_ms(&na, &nb, b4, 100));
    assert!(
        after < base + 0.5,
        "{after} ms after removal, {base} before"
    );

    // A delayer killed outright: its queue's rule stays, its packets pass.
    let mut planted = lab
        .plant_with(&delay("a", 2.0, &[b4]), Path::new(bin()))
        .expect("plant again");
    assert!(median(&rtts_ms(&na, &nb, b4, 50)) > base + 1.5);
    let pid = planted.delayer_pid().unwrap();
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    assert!(gone(pid), "the delayer {pid} survived SIGKILL");
    assert!(planted.check().is_err(), "the fault knows its delayer died");
    let v = rtts_ms(&na, &nb, b4, 100);
    eprintln!(
        "delayer killed: median {:.3} ms, max {:.3} ms",
        median(&v),
        v[v.len() - 1]
    );
    assert!(median(&v) < base + 0.5, "{v:?}");
    assert!(
        v[v.len() - 1] < 150.0,
        "a packet waited for a retransmission: {v:?}"
    );
    planted.remove().expect("remove with a dead delayer");
    assert_eq!(snapshot(&na), before);
}

#[test]
fn two_delays_on_one_host_take_their_own_queues() {
    if !root_or_skip("two_delays_on_one_host_take_their_own_queues") {
        return;
    }
    let _g = common::heavy();
    let lab = Lab::up(&LabSpec::two_hosts(&Lab::unique("fl-two"), 2, None)).unwrap();
    let (na, nb) = (lab.ns("a"), lab.ns("b"));
    let b0: IpAddr = lab.addr4("b", 0).unwrap().into();
    let b1: IpAddr = lab.addr4("b", 1).unwrap().into();
    let before = snapshot(&na);
    let base = median(&rtts_ms(&na, &nb, b0, 100));
    let d2 = lab
        .plant_with(&delay("a", 2.0, &[b0]), Path::new(bin()))
        .unwrap();
    let d5 = lab
        .plant_with(&delay("a", 5.0, &[b1]), Path::new(bin()))
        .unwrap();
    assert_ne!(d2.queue(), d5.queue());
    let (r0, r1) = (
        median(&rtts_ms(&na, &nb, b0, 100)),
        median(&rtts_ms(&na, &nb, b1, 100)),
    );
    eprintln!(
        "delays 2 and 5 ms planted: +{:.3} and +{:.3} ms",
        r0 - base,
        r1 - base
    );
    assert!((1.9..=3.5).contains(&(r0 - base)), "{r0} ms");
    assert!((4.9..=6.5).contains(&(r1 - base)), "{r1} ms");
    d2.remove().unwrap();
    assert!(median(&rtts_ms(&na, &nb, b0, 100)) < base + 0.5);
    assert!(
        median(&rtts_ms(&na, &nb, b1, 50)) > base + 4.5,
        "the 5 ms delay stays"
    );
    drop(d5);
    assert_eq!(snapshot(&na), before);
    assert!(median(&rtts_ms(&na, &nb, b1, 100)) < base + 0.5);
}

#[test]
fn lab_fault_plants_until_sigterm_and_removes_what_it_planted() {
    if !root_or_skip("lab_fault_plants_until_sigterm") {
        return;
    }
    common::assert_clean_failure(&["lab", "fault", "x", "a", "--to", "10.0.0.1"], "required");
    common::assert_clean_failure(
        &["lab", "fault", "x", "a", "--delay", "2", "--nic", "eth0"],
        "no unit",
    );
    let dir = temp_dir("labfault");
    let name = format!("lf-p{}-0", std::process::id());
    let file = dir.join("lab.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"{name}\"\nsubnet_base = 197\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[link]]\na = \"a\"\nb = \"b\"\n"
        ),
    )
    .unwrap();
    let state = dir.join("state");
    let (f, s) = (file.to_str().unwrap(), state.to_str().unwrap());
    let up = ws(&["lab", "up", f, "--state-dir", s]);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let _down = Down(&name, s);
    let (na, nb) = (format!("{name}-a"), format!("{name}-b"));
    let b: IpAddr = "10.197.0.2".parse().unwrap();
    let before = snapshot(&na);
    let base = median(&rtts_ms(&na, &nb, b, 50));
    let mut child = Command::new(bin())
        .args([
            "lab",
            "fault",
            &name,
            "a",
            "--delay",
            "2ms",
            "--to",
            "10.197.0.2",
        ])
        .args(["--state-dir", s])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut lines = Vec::new();
    let end = Instant::now() + Duration::from_secs(20);
    while !lines.iter().any(|l: &String| l.starts_with("planted:")) {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => lines.push(l),
            Err(_) => {
                let _ = child.kill();
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("lab fault did not plant within 20 s: {lines:?} {err}");
            }
        }
    }
    assert!(
        lines.iter().any(|l| l.contains(&format!(
            "iptables -w -t mangle -A POSTROUTING -d {b}/32 -j NFQUEUE"
        ))),
        "{lines:?}"
    );
    let delayed = median(&rtts_ms(&na, &nb, b, 100));
    assert!(
        delayed > base + 1.5,
        "{delayed} ms with the fault, {base} without"
    );
    let (st, _) = terminate(&mut child, Duration::from_secs(10)).expect("lab fault exits");
    assert!(st.success(), "{st}");
    lines.extend(rx.iter());
    assert!(
        lines.iter().any(|l| l.contains("-D POSTROUTING")),
        "{lines:?}"
    );
    assert!(
        lines.last().is_some_and(|l| l.starts_with("removed:")),
        "{lines:?}"
    );
    assert_eq!(snapshot(&na), before, "{lines:?}");
}

/// Runs `lab down NAME --state-dir DIR` when dropped, also on a panic.
struct Down<'a>(&'a str, &'a str);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let down = ws(&["lab", "down", self.0, "--state-dir", self.1]);
        assert!(down.status.success() || std::thread::panicking());
    }
}
