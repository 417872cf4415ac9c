//! Every tool's command lines on the testbed, and each group's row.

use crate::MSG;
use crate::bed::Bed;
use crate::contender::{Contender, Group, GroupRow, Kind, Table, eq, one, strings};
use crate::tools::{parse_iperf2, parse_iperf3, parse_sockperf, parse_udpgso, parse_wirespeed};

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
pub(crate) fn group(bed: &Bed, name: &'static str, d: u32) -> Group {
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
