//! Running wirespeed and its peers (iperf3, iperf2, sockperf) inside lab
//! namespaces, timing their CPU, and reading their figures from their own
//! output.

use crate::sys::{proc_cpu_s, wait_cpu};
use std::io::Read;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use wirespeed_lab::Lab;

/// A server process in a lab host, killed on drop.
pub struct Server {
    child: Child,
    /// Its name, for messages.
    pub name: String,
}

impl Server {
    /// Starts `argv` in `host` and waits until TCP or UDP `port` listens there.
    pub fn start(lab: &Lab, host: &str, argv: &[&str], port: u16) -> Result<Server, String> {
        let mut cmd = lab.command(host, argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd
            .spawn()
            .map_err(|e| format!("start {}: {e} (is it installed?)", argv[0]))?;
        let mut s = Server {
            child,
            name: argv[0].to_string(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !listening(lab, host, port) {
            if let Ok(Some(st)) = s.child.try_wait() {
                return Err(format!("{} exited at start ({st})", s.name));
            }
            if Instant::now() > deadline {
                return Err(format!("{} did not listen on port {port} in 10 s", s.name));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(s)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds the server has used so far.
    pub fn cpu_s(&self) -> f64 {
        proc_cpu_s(self.child.id()).unwrap_or(0.0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether something listens on TCP or UDP `port` in `host` (the readiness
/// signal for servers that print none we can rely on).
fn listening(lab: &Lab, host: &str, port: u16) -> bool {
    lab.command(host, "ss")
        .args(["-Hltun", &format!("sport = :{port}")])
        .output()
        .map(|o| !String::from_utf8_lossy(&o.stdout).trim().is_empty())
        .unwrap_or(false)
}

/// One client run: its output, wall time and CPU, and the server's CPU.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// What the client printed.
    pub stdout: String,
    /// Wall seconds from spawn to exit.
    pub wall_s: f64,
    /// Client CPU seconds (user + system, all threads).
    pub cpu_s: f64,
    /// The part of `cpu_s` spent in user space (the rest is the kernel:
    /// system calls, the TCP/IP stack, copies).
    pub user_s: f64,
    /// Server CPU seconds over the same span.
    pub server_cpu_s: f64,
    /// The client's peak resident memory, KiB.
    pub maxrss_kb: f64,
}

/// Runs a client to completion in `host`; `server` is charged its CPU.
pub fn run_client(
    lab: &Lab,
    host: &str,
    argv: &[String],
    server: &Server,
) -> Result<Measured, String> {
    let mut cmd = lab.command(host, &argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let s0 = server.cpu_s();
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("start {}: {e}", argv[0]))?;
    let mut out = String::new();
    let mut err = String::new();
    let mut so = child.stdout.take().ok_or("no stdout")?;
    let mut se = child.stderr.take().ok_or("no stderr")?;
    let t = std::thread::spawn(move || {
        let mut e = String::new();
        let _ = se.read_to_string(&mut e);
        e
    });
    let peak = hwm_sampler(child.id());
    let _ = so.read_to_string(&mut out);
    if let Ok(e) = t.join() {
        err = e;
    }
    let maxrss_kb = peak.join().unwrap_or(0.0);
    let used = wait_cpu(child.id()).map_err(|e| format!("wait for {}: {e}", argv[0]))?;
    let (code, user_s, sys_s) = (used.code, used.user_s, used.sys_s);
    // The child is reaped: keep std from trying again.
    std::mem::forget(child);
    let wall_s = t0.elapsed().as_secs_f64();
    let server_cpu_s = server.cpu_s() - s0;
    if code != 0 {
        return Err(format!(
            "`{}` exited with {code}: {}",
            argv.join(" "),
            err.trim()
        ));
    }
    Ok(Measured {
        stdout: out,
        wall_s,
        cpu_s: user_s + sys_s,
        user_s,
        server_cpu_s,
        maxrss_kb,
    })
}

/// Samples process `pid`'s peak resident memory (VmHWM, KiB) every 50 ms
/// until it is gone or a zombie; the thread returns the last value read.
fn hwm_sampler(pid: u32) -> std::thread::JoinHandle<f64> {
    std::thread::spawn(move || {
        let mut peak = 0.0;
        while let Some(kb) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|t| {
                let l = t.lines().find(|l| l.starts_with("VmHWM:"))?;
                l.split_whitespace().nth(1)?.parse::<f64>().ok()
            })
        {
            peak = kb;
            std::thread::sleep(Duration::from_millis(50));
        }
        peak
    })
}

/// Figures read from a tool's output.
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    /// Goodput, bits per second (stream).
    pub bps: f64,
    /// Transactions per second (rr).
    pub tps: f64,
    /// Median round trip, microseconds (rr).
    pub p50_us: f64,
    /// 99th percentile round trip, microseconds (rr).
    pub p99_us: f64,
}

/// Reads wirespeed's `--json` output.
pub fn parse_wirespeed(text: &str) -> Result<Figures, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("wirespeed JSON: {e}"))?;
    let r = &v["results"][0];
    Ok(Figures {
        bps: r["throughput_bps"].as_f64().unwrap_or(0.0),
        tps: r["transactions_per_s"].as_f64().unwrap_or(0.0),
        p50_us: r["latency"]["p50_us"].as_f64().unwrap_or(0.0),
        p99_us: r["latency"]["p99_us"].as_f64().unwrap_or(0.0),
    })
}

/// Reads bench/probe/udpgso.c's source line, `udpgso bps=B ...`: the
/// sink's received payload rate.
pub fn parse_udpgso(text: &str) -> Result<Figures, String> {
    let bps = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("bps="))
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| format!("udpgso output not understood:\n{text}"))?;
    Ok(Figures {
        bps,
        ..Figures::default()
    })
}

/// Reads neper's key=value lines. A stream client prints the receiver's
/// rate as `remote_throughput=` (bits/s); rr and crr print `throughput=`
/// (transactions per second; Mbit/s where `throughput_units=` says so)
/// and, with `-p 50,99`, `latency_p50=`/`latency_p99=` in seconds.
pub fn parse_neper(text: &str) -> Result<Figures, String> {
    let key = |k: &str| -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('=')?.trim().parse().ok())
    };
    let Some(t) = key("throughput") else {
        return match key("remote_throughput").filter(|b| *b > 0.0) {
            Some(bps) => Ok(Figures {
                bps,
                ..Figures::default()
            }),
            None => Err(format!("neper printed no throughput:\n{text}")),
        };
    };
    let units = text
        .lines()
        .find_map(|l| l.strip_prefix("throughput_units="))
        .unwrap_or("");
    let mut f = Figures::default();
    match units.trim() {
        "Mbit/s" => f.bps = t * 1e6,
        "" => f.tps = t,
        u => return Err(format!("neper throughput in unknown units {u}")),
    }
    f.p50_us = key("latency_p50").unwrap_or(0.0) * 1e6;
    f.p99_us = key("latency_p99").unwrap_or(0.0) * 1e6;
    if f.bps == 0.0 && f.tps == 0.0 {
        return Err(format!("neper measured nothing:\n{text}"));
    }
    Ok(f)
}

/// Reads the client line of bench/probe's crr.c (`crr tps N p50 US p99
/// US`) and pingpong.c (`pp tps N ...`).
pub fn parse_c_rr(text: &str) -> Result<Figures, String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let after = |k: &str| -> Option<f64> {
        let i = w.iter().position(|x| *x == k)?;
        w.get(i + 1)?.parse().ok()
    };
    match (after("tps"), after("p50"), after("p99")) {
        (Some(tps), Some(p50_us), Some(p99_us)) if tps > 0.0 => Ok(Figures {
            tps,
            p50_us,
            p99_us,
            ..Figures::default()
        }),
        _ => Err(format!("C floor's output not understood:\n{text}")),
    }
}

/// Reads the source's line of bench/probe's pair.c (`src N Gbit/s`).
pub fn parse_pair(text: &str) -> Result<Figures, String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    match w.iter().position(|x| *x == "src") {
        Some(i) => match w.get(i + 1).and_then(|x| x.parse::<f64>().ok()) {
            Some(g) if g > 0.0 => Ok(Figures {
                bps: g * 1e9,
                ..Figures::default()
            }),
            _ => Err(format!("pair.c's output not understood:\n{text}")),
        },
        None => Err(format!("pair.c's output not understood:\n{text}")),
    }
}

/// Reads `iperf3 -J`: the receiver's sum.
pub fn parse_iperf3(text: &str) -> Result<Figures, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("iperf3 JSON: {e}"))?;
    if let Some(e) = v["error"].as_str() {
        return Err(format!("iperf3: {e}"));
    }
    let bps = v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .ok_or("iperf3 JSON has no end.sum_received")?;
    Ok(Figures {
        bps,
        ..Figures::default()
    })
}

/// Reads `iperf -y C` (iperf 2): the last line's rate, which is the sum
/// line with -P. It is the sender's figure: iperf 2's client reports what
/// it wrote.
pub fn parse_iperf2(text: &str) -> Result<Figures, String> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains(','))
        .ok_or("iperf2 printed no CSV line")?;
    let bps: f64 = line
        .rsplit(',')
        .next()
        .and_then(|x| x.trim().parse().ok())
        .ok_or_else(|| format!("iperf2 CSV line without a rate: {line}"))?;
    Ok(Figures {
        bps,
        ..Figures::default()
    })
}

/// Reads `sockperf ping-pong --full-rtt`: the median round trip and the
/// messages per second of the valid (post warm-up) duration.
pub fn parse_sockperf(text: &str) -> Result<Figures, String> {
    let mut f = Figures::default();
    for l in text.lines() {
        if let Some(rest) = l.split("percentile 50.000 =").nth(1) {
            f.p50_us = rest
                .trim()
                .parse()
                .map_err(|_| format!("sockperf p50: {l}"))?;
        }
        if let Some(rest) = l.split("percentile 99.000 =").nth(1) {
            f.p99_us = rest
                .trim()
                .parse()
                .map_err(|_| format!("sockperf p99: {l}"))?;
        }
        if l.contains("[Valid Duration]") {
            let num = |key: &str| -> Option<f64> {
                let s = l.split(key).nth(1)?;
                let end = s
                    .find(|c: char| !c.is_ascii_digit() && c != '.')
                    .unwrap_or(s.len());
                s[..end].parse().ok()
            };
            let secs = num("RunTime=").ok_or("sockperf: no RunTime")?;
            let msgs = num("ReceivedMessages=").ok_or("sockperf: no ReceivedMessages")?;
            f.tps = msgs / secs;
        }
    }
    if f.p50_us == 0.0 || f.tps == 0.0 {
        return Err(format!("sockperf output not understood:\n{text}"));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_output_parses() {
        let sp = "sockperf: [Valid Duration] RunTime=2.550 sec; SentMessages=95766; ReceivedMessages=95766\n\
                  sockperf: ---> percentile 99.000 =   63.980\n\
                  sockperf: ---> percentile 50.000 =   25.527\n";
        let f = parse_sockperf(sp).unwrap();
        assert!((f.p50_us - 25.527).abs() < 1e-9);
        assert!((f.p99_us - 63.98).abs() < 1e-9);
        assert!((f.tps - 95766.0 / 2.55).abs() < 1e-6);
        let i2 = "20261123,10.0.0.1,1,10.0.0.2,5001,3,0.0-5.0,100,1000\n20261123,10.0.0.1,1,10.0.0.2,5001,-1,0.0-5.0,400,4000\n";
        assert_eq!(parse_iperf2(i2).unwrap().bps, 4000.0);
        let i3 = r#"{"end":{"sum_received":{"bits_per_second":2.5e10}}}"#;
        assert_eq!(parse_iperf3(i3).unwrap().bps, 2.5e10);
        assert!(parse_iperf3(r#"{"error":"busy"}"#).is_err());
        let ns =
            "throughput_opt=Mb\nthroughput=11405.65\nthroughput_units=Mbit/s\nlocal_throughput=1\n";
        assert!((parse_neper(ns).unwrap().bps - 11405.65e6).abs() < 1.0);
        let nr = "latency_p50=0.000049270\nlatency_p99=0.000151030\nthroughput=14377.34\n";
        let f = parse_neper(nr).unwrap();
        assert!((f.tps - 14377.34).abs() < 1e-6 && (f.p99_us - 151.03).abs() < 1e-6);
        assert!(parse_neper("throughput=0.00\n").is_err());
        let nc = "throughput_opt=Mb\nlocal_throughput=0\nremote_throughput=4344182869\n";
        assert_eq!(parse_neper(nc).unwrap().bps, 4344182869.0);
        let c = parse_c_rr("crr tps 14426 p50 60.5 p99 101.2 fails 0\n").unwrap();
        assert!(c.tps == 14426.0 && c.p99_us == 101.2);
        assert!(parse_c_rr("pp tps 0 p50 0 p99 0").is_err());
        assert!((parse_pair("src 34.60 Gbit/s\n").unwrap().bps - 34.6e9).abs() < 1.0);
        assert!(parse_pair("src 0.00 Gbit/s\n").is_err() && parse_pair("").is_err());
        // An rr client prints both: the transactions count, not the bits.
        let both = "remote_throughput=123\nthroughput=14377.34\n";
        assert_eq!(parse_neper(both).unwrap().tps, 14377.34);
    }
}
