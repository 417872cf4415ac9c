//! neper-style `key=value` lines: the keys neper prints (throughput,
//! throughput_units, local_throughput, remote_throughput, num_transactions,
//! latency_* in seconds) so existing scripts keep working, then wirespeed's
//! own keys (per direction, per path, CPU, TCP_INFO sums).

use std::fmt::Write;
use wirespeed_types::TestResult;
use wirespeed_types::result::{LatencySummary, UdpStats};

fn line(out: &mut String, k: &str, v: impl std::fmt::Display) {
    let _ = writeln!(out, "{k}={v}");
}

fn latency(out: &mut String, prefix: &str, l: &LatencySummary) {
    let s = |us: f64| format!("{:.9}", us / 1e6);
    line(out, &format!("{prefix}_min"), s(l.min_us));
    line(out, &format!("{prefix}_max"), s(l.max_us));
    line(out, &format!("{prefix}_mean"), s(l.mean_us));
    line(out, &format!("{prefix}_stddev"), s(l.stddev_us));
    line(out, &format!("{prefix}_p50"), s(l.p50_us));
    line(out, &format!("{prefix}_p90"), s(l.p90_us));
    line(out, &format!("{prefix}_p99"), s(l.p99_us));
    line(out, &format!("{prefix}_p99.9"), s(l.p999_us));
}

fn udp(out: &mut String, prefix: &str, u: &UdpStats) {
    line(out, &format!("{prefix}_datagrams_sent"), u.datagrams_sent);
    line(
        out,
        &format!("{prefix}_datagrams_received"),
        u.datagrams_received,
    );
    line(out, &format!("{prefix}_lost"), u.lost);
    line(
        out,
        &format!("{prefix}_loss_pct"),
        format!("{:.4}", u.loss_pct),
    );
    line(out, &format!("{prefix}_out_of_order"), u.out_of_order);
    line(out, &format!("{prefix}_duplicates"), u.duplicates);
    line(
        out,
        &format!("{prefix}_jitter_us"),
        format!("{:.2}", u.jitter_us),
    );
}

/// One result as key=value lines.
pub fn render_kv(r: &TestResult) -> String {
    let mut out = String::new();
    let spec = &r.spec;
    line(&mut out, "workload", spec.workload.name());
    if spec.workload.is_bulk() {
        line(
            &mut out,
            "direction",
            format!("{:?}", spec.direction).to_lowercase(),
        );
    } else {
        line(&mut out, "request_size", spec.request_size);
        line(&mut out, "response_size", spec.response_size);
    }
    line(&mut out, "num_threads", spec.threads);
    line(&mut out, "num_flows", spec.flows);
    line(&mut out, "num_paths", r.paths.len());
    line(&mut out, "duration", format!("{:.3}", r.window_s));
    line(&mut out, "congestion_control", &r.congestion_control);
    match spec.workload.info().transactional {
        false => {
            line(
                &mut out,
                "throughput",
                format!("{:.2}", r.throughput_bps / 1e6),
            );
            line(&mut out, "throughput_units", "Mbit/s");
        }
        true => {
            let n: u64 = r.flows.iter().map(|f| f.transactions).sum();
            line(&mut out, "num_transactions", n);
            line(
                &mut out,
                "throughput",
                format!("{:.2}", r.transactions_per_s),
            );
            line(&mut out, "throughput_units", "transactions/s");
            line(&mut out, "goodput_bps", format!("{:.0}", r.throughput_bps));
        }
    }
    line(&mut out, "local_throughput", format!("{:.0}", r.local_bps));
    line(
        &mut out,
        "remote_throughput",
        format!("{:.0}", r.remote_bps),
    );
    if let Some(l) = &r.latency {
        latency(&mut out, "latency", l);
    }
    if let Some(l) = &r.probe_latency {
        latency(&mut out, "probe_latency", l);
    }
    if let Some(u) = &r.udp {
        udp(&mut out, "udp", u);
    }
    if let Some(o) = &r.udp_offload {
        line(&mut out, "udp_gso_client", u8::from(o.client_gso));
        line(&mut out, "udp_gso_server", u8::from(o.server_gso));
        line(&mut out, "udp_gro_client", u8::from(o.client_gro));
        line(&mut out, "udp_gro_server", u8::from(o.server_gro));
    }
    for d in &r.directions {
        line(
            &mut out,
            &format!("{}_throughput", d.direction),
            format!("{:.0}", d.received_bps),
        );
        if let Some(u) = &d.udp {
            udp(&mut out, &format!("{}_udp", d.direction), u);
        }
    }
    for p in &r.paths {
        line(&mut out, &format!("path{}", p.index), &p.label);
        line(
            &mut out,
            &format!("path{}_throughput", p.index),
            format!("{:.0}", p.throughput_bps),
        );
        line(&mut out, &format!("path{}_flows", p.index), p.flows);
        if let Some(u) = &p.udp {
            udp(&mut out, &format!("path{}_udp", p.index), u);
        }
    }
    line(&mut out, "fairness", format!("{:.4}", r.fairness));
    line(&mut out, "path_balance", format!("{:.4}", r.path_balance));
    line(
        &mut out,
        "local_cpu",
        format!("{:.1}", r.local_cpu.total_pct),
    );
    line(
        &mut out,
        "remote_cpu",
        format!("{:.1}", r.remote_cpu.total_pct),
    );
    line(
        &mut out,
        "local_cpu_max_core",
        format!("{:.1}", r.local_cpu.max_core_pct),
    );
    line(
        &mut out,
        "remote_cpu_max_core",
        format!("{:.1}", r.remote_cpu.max_core_pct),
    );
    let infos: Vec<_> = r.flows.iter().filter_map(|f| f.tcp_info.as_ref()).collect();
    if !infos.is_empty() {
        let retrans: u64 = infos.iter().map(|i| i.retransmits).sum();
        let rtt = infos.iter().map(|i| i.rtt_us).sum::<u64>() / infos.len() as u64;
        line(&mut out, "retransmits", retrans);
        line(&mut out, "rtt_us_mean", rtt);
    }
    line(
        &mut out,
        "server_concurrent_tests",
        r.server_concurrent_tests,
    );
    out
}
