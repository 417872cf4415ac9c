//! Every tool's command lines on the testbed, and each group's row.

use crate::MSG;
use crate::bed::{Bed, PINGPONG};
use crate::contender::{
    Contender, Fresh, Group, GroupRow, Kind, Table, eq, one, strings, with_fresh,
};
use crate::tools::{
    parse_c_rr, parse_iperf2, parse_iperf3, parse_neper, parse_pair, parse_sockperf, parse_udpgso,
    parse_wirespeed,
};

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

    /// iperf3 3.21 (built by bench/peers: a thread per stream, `--gsro`)
    /// to link 0, when it is built.
    fn i321(&self, label: &str, extra: &[&str]) -> Option<Contender> {
        let bin = self.bed.iperf321.as_ref()?;
        let mut v = self.i3_to(&self.b0, "5203", extra);
        v[0] = bin.clone();
        Some(one(label, v, parse_iperf3, "iperf3-21"))
    }

    /// neper's `tool` (tcp_stream, tcp_rr, tcp_crr, udp_rr; built by
    /// bench/peers) with `args` on both sides, as neper is run: a server
    /// started for each run, which serves that one test and exits. Neper
    /// has no warm-up to omit: its figure covers the whole run.
    fn neper(&self, label: &str, tool: &str, args: &[&str]) -> Option<Contender> {
        let bin = format!("{}/neper-{tool}", self.bed.neper.as_ref()?);
        // What both sides take: `args`, and for TCP request/response
        // TCP_NODELAY as the other tools set it (neper leaves Nagle on).
        let mut both = strings(args);
        if tool == "tcp_rr" || tool == "tcp_crr" {
            both.push("--no-delay".into());
        }
        // --nolog: no log file per process in the working directory.
        let mut server = strings(&[&bin, "--nolog", "-l", &self.dn]);
        server.extend(both.iter().cloned());
        let mut client = strings(&[&bin, "--nolog", "-c", "-H", &self.b0, "-l", &self.dn]);
        if tool != "tcp_stream" {
            // The latency percentiles of request/response.
            client.extend(strings(&["-p", "50,99"]));
        }
        client.extend(both);
        Some(with_fresh(label, client, parse_neper, server, 12866))
    }

    /// wirespeed with four flows on `threads` threads at `MSG` per call.
    fn w4(&self, threads: &str, cc: &str) -> Contender {
        self.w(
            &format!("wirespeed -F 4 -T {threads} -l {MSG} --cc {cc}"),
            &["-l", MSG, "-F", "4", "-T", threads, "--cc", cc],
        )
    }

    /// neper's tcp_stream with four flows on `threads` threads at `MSG`.
    fn neper4(&self, threads: &str, cc: &str) -> Option<Contender> {
        self.neper(
            &format!("neper tcp_stream -F 4 -T {threads} -B {MSG} --congestion-control {cc}"),
            "tcp_stream",
            &[
                "-F",
                "4",
                "-T",
                threads,
                "-B",
                "131072",
                "--congestion-control",
                cc,
            ],
        )
    }

    /// bench/probe/crr.c's client against its blocking server: the crr floor.
    fn crr_floor(&self) -> Option<Contender> {
        let bin = self.bed.crr.as_ref()?;
        Some(one(
            "C floor crr.c (blocking, one connection at a time)",
            strings(&[bin, "client", &self.b0, "5410", &self.dn, "1"]),
            parse_c_rr,
            "crr-c",
        ))
    }

    /// bench/probe/pingpong.c's client against its blocking server
    /// `server`, one of bed.rs's [`PINGPONG`] (its port, bytes each way
    /// and protocol): the rr floor.
    fn rr_floor(&self, server: &str) -> Option<Contender> {
        let bin = self.bed.pingpong.as_ref()?;
        let &(name, port, size, udp) = PINGPONG.iter().find(|p| p.0 == server)?;
        let port = port.to_string();
        let mut argv = strings(&[bin, "client", &self.b0, &port, &self.dn, "1", size]);
        let mut label = format!("C floor pingpong.c {size} B (blocking send and recv)");
        if udp {
            argv.push("udp".into());
            label = format!("C floor pingpong.c UDP {size} B (blocking send and recv)");
        }
        Some(one(&label, argv, parse_c_rr, name))
    }

    /// bench/probe/pair.c: `flows` flows of 128 KiB sends from one epoll
    /// thread (one send per ready flow per pass) into one epoll thread
    /// (one read per ready flow), congestion control `cc`, its sink
    /// started for each run: the N-flow stream floor.
    fn stream_floor(&self, cc: &str, flows: &str) -> Option<Contender> {
        let label = format!("C floor pair.c {flows} flows, one epoll thread per side");
        let dsts = [(self.b0.clone(), 5420, "pair-ep")];
        self.pair_procs(&label, cc, &dsts, flows, &["epr"], &["ep1"])
    }

    /// pair.c with a thread per flow on each side, blocking sends and
    /// receives (iperf3 3.21's model; one flow: one blocking thread),
    /// into a sink started for each run: the floor of a thread per flow,
    /// and of one flow.
    fn per_flow_floor(&self, cc: &str, flows: usize) -> Option<Contender> {
        let label = if flows == 1 {
            "C floor pair.c 1 flow, blocking".to_string()
        } else {
            format!("C floor pair.c {flows} flows, a thread per flow per side, blocking")
        };
        let dsts = [(self.b0.clone(), 5421, "pair-thr")];
        let n = flows.to_string();
        self.pair_procs(&label, cc, &dsts, &n, &["thr"], &["thr"])
    }

    /// pair.c once per NIC (links `l1` and `l2`): two processes of two
    /// flows each (one epoll loop per side and NIC, as iperf3 runs one
    /// process per NIC), each into a sink of its own on that NIC's
    /// address: the floor of [`Cmds::two_nics`] over the same links.
    fn per_nic_floor(&self, l1: usize, l2: usize) -> Option<Contender> {
        let dsts = [
            (self.bed.addr(l1), 5425, "pair-nic1"),
            (self.bed.addr(l2), 5426, "pair-nic2"),
        ];
        let label = "C floor pair.c, one process per NIC, 2 flows each, one epoll loop per side";
        self.pair_procs(label, "bbr", &dsts, "2", &["epr"], &["ep1"])
    }

    /// pair.c sources into `dsts` (address, port, name), `flows` each,
    /// run at once, each with its sink started for the run; their rates add.
    fn pair_procs(
        &self,
        label: &str,
        cc: &str,
        dsts: &[(String, u16, &'static str)],
        flows: &str,
        src_mode: &[&str],
        sink_mode: &[&str],
    ) -> Option<Contender> {
        let bin = self.bed.pair.as_ref()?;
        let cc_env = format!("CC={cc}");
        let mut c = Contender {
            label: label.into(),
            procs: Vec::new(),
            parse: parse_pair,
            fresh: Vec::new(),
        };
        for (dst, port, name) in dsts {
            let p = port.to_string();
            let mut sink = strings(&["env", &cc_env, bin, "sink", &p, flows]);
            sink.extend(strings(sink_mode));
            let mut src = strings(&["env", &cc_env, bin, "src", dst, &p, flows, &self.dn]);
            src.extend(strings(src_mode));
            c.fresh.push(Fresh {
                name,
                argv: sink,
                port: *port,
            });
            c.procs.push((src, name));
        }
        Some(c)
    }

    /// bench/probe/udpgso.c with neither UDP_SEGMENT nor UDP_GRO: one
    /// datagram per send and per receive, into its sink in `b`: the udp
    /// row's floor.
    fn udp_floor(&self) -> Option<Contender> {
        let u = self.bed.udpgso.as_ref()?;
        Some(one(
            "C floor udpgso.c without GSO/GRO (a datagram per call)",
            strings(&[u, "src", &self.b0, "5401", &self.dn, "1400", "1", "1"]),
            parse_udpgso,
            "udp-c",
        ))
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
                fresh: Vec::new(),
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
            .into_iter()
            .chain(self.i321(
                &format!("iperf3 3.21 -l {MSG} -C {cc}"),
                &[&l[..], &["-C", cc]].concat(),
            ))
            .collect()
        } else if flows == "4" {
            // One worker per side, as iperf3 3.12 runs: its peers are
            // iperf3 3.12 and neper on one thread.
            vec![
                self.w4("1", cc),
                self.i3(
                    &format!("iperf3 -P 4 -l {MSG} -C {cc}"),
                    &[&l[..], &["-P", "4", "-C", cc]].concat(),
                ),
            ]
            .into_iter()
            .chain(self.neper4("1", cc))
            .collect()
        } else {
            // A thread per flow, as iperf3 3.21 and iperf2 run; wirespeed
            // on 2 threads (the testbed's cores) shown beside it.
            vec![
                self.w4("4", cc),
                self.w4("2", cc),
                self.i2(
                    &format!("iperf2 -P 4 -l {MSG} -Z {cc}"),
                    &[&l[..], &["-P", "4", "-Z", cc]].concat(),
                ),
            ]
            .into_iter()
            .chain(self.i321(
                &format!("iperf3 3.21 -P 4 -l {MSG} -C {cc}"),
                &[&l[..], &["-P", "4", "-C", cc]].concat(),
            ))
            .chain(self.neper4("4", cc))
            .collect()
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
                ]
                .into_iter()
                .chain(self.i321("iperf3 3.21", &[]))
                .chain(self.neper("neper tcp_stream", "tcp_stream", &[]))
                .collect(),
            ),
            "d-stream4" => (
                (Table::Defaults, "four flows, otherwise defaults".into()),
                Kind::Stream,
                vec![
                    self.w("wirespeed -F 4", &["-F", "4"]),
                    self.i3("iperf3 -P 4", &["-P", "4"]),
                    self.i2("iperf2 -P 4", &["-P", "4"]),
                ]
                .into_iter()
                .chain(self.i321("iperf3 3.21 -P 4", &["-P", "4"]))
                .chain(self.neper("neper tcp_stream -F 4", "tcp_stream", &["-F", "4"]))
                .collect(),
            ),
            "d-rr" => (
                (Table::Defaults, "each tool's plain request/response".into()),
                Kind::Rr,
                vec![
                    self.w("wirespeed -w rr", &["-w", "rr"]),
                    self.sp("sockperf ping-pong --tcp", false, &[]),
                ]
                .into_iter()
                .chain(self.neper("neper tcp_rr", "tcp_rr", &[]))
                .chain(self.rr_floor("pingpong-1"))
                .collect(),
            ),
            _ => unreachable!("group sends only the defaults here"),
        }
    }

    /// The TCP stream rows at equal settings.
    fn stream_row(&self, name: &str) -> GroupRow {
        match name {
            "s1-bbr" | "s1-cubic" => {
                let cc = &name[3..];
                (
                    eq(&format!("1 flow, {MSG} per call, {cc}, 1 thread")),
                    Kind::Stream,
                    self.eq_stream(cc, "1")
                        .into_iter()
                        .chain(self.per_flow_floor(cc, 1))
                        .collect(),
                )
            }
            "s4-bbr" | "s4-cubic" => {
                let cc = &name[3..];
                (
                    eq(&format!(
                        "4 flows, {MSG} per call, {cc}, one thread per side"
                    )),
                    Kind::Stream,
                    self.eq_stream(cc, "4")
                        .into_iter()
                        .chain(self.stream_floor(cc, "4"))
                        .collect(),
                )
            }
            "s4t-bbr" | "s4t-cubic" => {
                let cc = &name[4..];
                (
                    eq(&format!("4 flows, {MSG} per call, {cc}, a thread per flow")),
                    Kind::Stream,
                    self.eq_stream(cc, "4t")
                        .into_iter()
                        .chain(self.per_flow_floor(cc, 4))
                        .collect(),
                )
            }
            "skip-rx" => (
                eq(&format!(
                    "1 flow, {MSG} per call, default cc; iperf3 and iperf2 copy (no way to skip), neper skips too"
                )),
                Kind::Stream,
                vec![
                    self.w(
                        &format!("wirespeed --skip-rx-copy -l {MSG}"),
                        &["--skip-rx-copy", "-l", MSG],
                    ),
                    self.i3(&format!("iperf3 -l {MSG}"), &["-l", MSG]),
                    self.i2(&format!("iperf2 -l {MSG}"), &["-l", MSG]),
                ]
                .into_iter()
                .chain(self.neper(
                    &format!("neper tcp_stream --skip-rx-copy -B {MSG}"),
                    "tcp_stream",
                    &["--skip-rx-copy", "-B", "131072"],
                ))
                // neper copying beside neper skipping: what skipping does
                // to one and the same tool.
                .chain(self.neper(
                    &format!("neper tcp_stream -B {MSG} (copies)"),
                    "tcp_stream",
                    &["-B", "131072"],
                ))
                .collect(),
            ),
            "nics2" => (
                eq(&format!(
                    "2 uncapped NICs, 4 flows, 2 threads or processes, {MSG} per call"
                )),
                Kind::Stream,
                self.two_nics(3, 4)
                    .into_iter()
                    .chain(self.per_nic_floor(3, 4))
                    .collect(),
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
                ]
                .into_iter()
                .chain(self.neper(
                    "neper tcp_rr -Q 14 -R 14",
                    "tcp_rr",
                    &["-Q", "14", "-R", "14"],
                ))
                .chain(self.rr_floor("pingpong"))
                .collect(),
            ),
            "rr14-pinned" => (
                (
                    Table::Pinned,
                    "14 B each way, 1 flow, client and server on core 0".into(),
                ),
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
                ]
                .into_iter()
                .chain(self.neper(
                    "neper tcp_rr -Q 64000 -R 64000",
                    "tcp_rr",
                    &["-Q", "64000", "-R", "64000"],
                ))
                .chain(self.rr_floor("pingpong-64k"))
                .collect(),
            ),
            "crr" => (
                eq("1 B connect/request/response, 1 flow, 1 thread"),
                Kind::Rr,
                std::iter::once(self.w("wirespeed -w crr", &["-w", "crr"]))
                    .chain(self.neper("neper tcp_crr", "tcp_crr", &[]))
                    .chain(self.crr_floor())
                    .collect(),
            ),
            "rr80k" => (
                eq("80000 B each way, 1 flow (sockperf's largest message is 65506 B)"),
                Kind::Rr,
                std::iter::once(self.w(
                    "wirespeed -w rr --size 80000",
                    &["-w", "rr", "--size", "80000"],
                ))
                .chain(self.neper(
                    "neper tcp_rr -Q 80000 -R 80000",
                    "tcp_rr",
                    &["-Q", "80000", "-R", "80000"],
                ))
                .chain(self.rr_floor("pingpong-80k"))
                .collect(),
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
                eq("UDP, 1400 B datagrams, unpaced, 1 flow, no GSO/GRO"),
                Kind::Stream,
                vec![
                    self.w(
                        "wirespeed -w udp-stream -l 1400 --no-gso --no-gro",
                        &["-w", "udp-stream", "-l", "1400", "--no-gso", "--no-gro"],
                    ),
                    self.i3("iperf3 -u -b 0 -l 1400", &["-u", "-b", "0", "-l", "1400"]),
                ]
                .into_iter()
                .chain(self.i321(
                    "iperf3 3.21 -u -b 0 -l 1400",
                    &["-u", "-b", "0", "-l", "1400"],
                ))
                .chain(self.udp_floor())
                .collect(),
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
                ]
                .into_iter()
                .chain(self.neper(
                    "neper udp_rr -Q 64 -R 64",
                    "udp_rr",
                    &["-Q", "64", "-R", "64"],
                ))
                .chain(self.rr_floor("pingpong-udp"))
                .collect(),
            ),
            _ => unreachable!("group sends only the UDP rows here"),
        }
    }

    /// UDP with GSO on send and GRO on receive on both sides: wirespeed
    /// against iperf3 3.21's `--gsro` (bench/peers) and
    /// bench/probe/udpgso.c, a bare C program that makes only the system
    /// calls.
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
        v.extend(self.i321(
            "iperf3 3.21 -u -b 0 -l 1400 --gsro",
            &["-u", "-b", "0", "-l", "1400", "--gsro"],
        ));
        (
            eq("UDP, 1400 B datagrams, unpaced, 1 flow, GSO and GRO on both sides"),
            Kind::Stream,
            v,
        )
    }
}

impl Cmds<'_> {
    /// Four bbr flows with every sender on core 0 and every receiver on
    /// core 1: what the unpinned s4-bbr row is, without the scheduler.
    fn s4_pinned(&self) -> GroupRow {
        let l = ["-l", MSG, "--cc", "bbr"];
        (
            (
                Table::Pinned,
                format!(
                    "4 bbr flows, {MSG} per call, one thread, senders on core 0, receivers on core 1"
                ),
            ),
            Kind::Stream,
            vec![
                self.w(
                    &format!("wirespeed -F 4 -T 1 -l {MSG} --cc bbr --pin 0 --remote-pin 1"),
                    &[
                        &l[..],
                        &["-F", "4", "-T", "1", "--pin", "0", "--remote-pin", "1"],
                    ]
                    .concat(),
                ),
                self.i3(
                    &format!("iperf3 -P 4 -l {MSG} -C bbr -A 0,1"),
                    &["-P", "4", "-l", MSG, "-C", "bbr", "-A", "0,1"],
                ),
            ],
        )
    }

    /// A point of a cost curve: `name` is the curve and its point
    /// (`flows-100`); each tool at 128 KiB per call (or 1 B crr) with the
    /// system's congestion control.
    fn curve_row(&self, name: &str) -> (GroupRow, u32) {
        let (curve, n) = name.rsplit_once('-').unwrap_or((name, "1"));
        let flows: u32 = n.parse().unwrap_or(1);
        let cell = |t: &str| ((Table::Curve, t.to_string()), Kind::Stream);
        let b = "131072";
        // Two threads, or one for one flow (neper refuses more threads
        // than flows).
        let t2 = if flows < 2 { "1" } else { "2" };
        let ((head, kind), list): (_, Vec<Option<Contender>>) = match curve {
            "flows" => (
                cell(&format!(
                    "{n} flows on 2 threads (iperf3 3.21: a thread per stream, at most 128), {MSG} per call"
                )),
                vec![
                    Some(self.w(
                        &format!("wirespeed -F {n} -T 2 -l {MSG}"),
                        &["-F", n, "-T", "2", "-l", MSG],
                    )),
                    self.neper(
                        &format!("neper tcp_stream -F {n} -T {t2} -B {MSG}"),
                        "tcp_stream",
                        &["-F", n, "-T", t2, "-B", b],
                    ),
                    self.i321(
                        &format!("iperf3 3.21 -P {n} -l {MSG}"),
                        &["-P", n, "-l", MSG],
                    )
                    .filter(|_| flows <= 128),
                ],
            ),
            "threads" => (
                cell(&format!("{n} flows on {n} threads, {MSG} per call")),
                vec![
                    Some(self.w(
                        &format!("wirespeed -F {n} -T {n} -l {MSG}"),
                        &["-F", n, "-T", n, "-l", MSG],
                    )),
                    self.neper(
                        &format!("neper tcp_stream -F {n} -T {n} -B {MSG}"),
                        "tcp_stream",
                        &["-F", n, "-T", n, "-B", b],
                    ),
                    self.i321(
                        &format!("iperf3 3.21 -P {n} -l {MSG}"),
                        &["-P", n, "-l", MSG],
                    ),
                    Some(self.i2(&format!("iperf2 -P {n} -l {MSG}"), &["-P", n, "-l", MSG])),
                ],
            ),
            "crr" => (
                (
                    (
                        Table::Curve,
                        format!("1 B connect/request/response, {n} at once, 1 thread"),
                    ),
                    Kind::Rr,
                ),
                vec![
                    Some(self.w(&format!("wirespeed -w crr -F {n}"), &["-w", "crr", "-F", n])),
                    self.neper(&format!("neper tcp_crr -F {n}"), "tcp_crr", &["-F", n]),
                ],
            ),
            _ => (
                cell(&format!(
                    "1 flow paced at 10 Gbit/s (SO_MAX_PACING_RATE), {MSG} per call: the cost at a fixed rate"
                )),
                vec![
                    Some(self.w(
                        &format!("wirespeed -l {MSG} --pacing 10gbit"),
                        &["-l", MSG, "--pacing", "10gbit"],
                    )),
                    self.i321(
                        &format!("iperf3 3.21 -l {MSG} --fq-rate 10G"),
                        &["-l", MSG, "--fq-rate", "10G"],
                    ),
                    self.neper(
                        &format!("neper tcp_stream -B {MSG} -m 1250000000"),
                        "tcp_stream",
                        &["-B", b, "-m", "1250000000"],
                    ),
                ],
            ),
        };
        ((head, kind, list.into_iter().flatten().collect()), flows)
    }
}

/// Every group's contenders on `bed` for `d` seconds a run.
pub(crate) fn group(bed: &Bed, name: &'static str, d: u32) -> Group {
    let c = Cmds::new(bed, d);
    let mut flows = match name {
        "d-stream4" | "s4-bbr" | "s4-cubic" | "s4t-bbr" | "s4t-cubic" | "s4-bbr-pinned"
        | "nics2" | "caps" => 4,
        _ => 1,
    };
    let ((table, settings), kind, contenders) = match name {
        "d-stream1" | "d-stream4" | "d-rr" => c.defaults_row(name),
        "s1-bbr" | "s1-cubic" | "s4-bbr" | "s4-cubic" | "s4t-bbr" | "s4t-cubic" | "skip-rx"
        | "nics2" | "caps" => c.stream_row(name),
        "rr14" | "rr14-pinned" | "rr64k" | "crr" | "rr80k" => c.rr_row(name),
        "udp" | "udp-gso" | "udp-rr" => c.udp_row(name),
        "s4-bbr-pinned" => c.s4_pinned(),
        _ => {
            let (row, n) = c.curve_row(name);
            flows = n;
            row
        }
    };
    Group {
        name,
        table,
        kind,
        settings,
        contenders,
        flows,
    }
}
