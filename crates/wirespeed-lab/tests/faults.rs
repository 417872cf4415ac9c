//! Loss and rate faults planted for real (root only; skipped with a note
//! otherwise, failed under CI=true): real traffic between namespaces
//! shows them, removal restores the namespace exactly (iptables-save,
//! ip6tables-save, nft and tc output equal to before), two faults on one
//! host come off independently, and a planting refused half-way leaves
//! nothing. Delay faults need the wirespeed binary's delayer: they are
//! tested in crates/wirespeed/tests/live/faults_live.rs.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};
use wirespeed_host::netns::run_in;
use wirespeed_lab::{
    FaultKind, FaultMatch, FaultSpec, HostSpec, Lab, LabSpec, LinkSpec, RouteSpec,
};
use wirespeed_testkit::need_root;

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

/// Sends `n` numbered UDP probes from `from` to an echo in `to_ns` at
/// `to`, each waiting up to 20 ms for its echo: how many got none.
fn udp_lost(from: &str, to_ns: &str, to: IpAddr, n: u32) -> u32 {
    let server = run_in(to_ns, || Ok(UdpSocket::bind((to, 0))))
        .unwrap()
        .unwrap();
    let at = server.local_addr().unwrap();
    server
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let echo = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(60);
        let mut buf = [0u8; 64];
        while !s2.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < end {
            if let Ok((k, peer)) = server.recv_from(&mut buf) {
                let _ = server.send_to(&buf[..k], peer);
            }
        }
    });
    let any: IpAddr = if to.is_ipv4() {
        "0.0.0.0".parse().unwrap()
    } else {
        "::".parse().unwrap()
    };
    let c = run_in(from, || Ok(UdpSocket::bind((any, 0))))
        .unwrap()
        .unwrap();
    c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    // Ready first: a link just up drops packets until the kernel activates
    // its qdisc (up to a second), and a dropped ARP request is resent only
    // a second later. One echo shows the path works (faults or not).
    let end = Instant::now() + Duration::from_secs(10);
    let ready = loop {
        let mut buf = [0u8; 64];
        let _ = c.send_to(&u32::MAX.to_be_bytes(), at);
        if matches!(c.recv_from(&mut buf), Ok((4, _)) if buf[..4] == u32::MAX.to_be_bytes()) {
            break true;
        }
        if Instant::now() > end {
            break false;
        }
    };
    assert!(ready, "no echo from {at} within 10 s");
    let mut lost = 0;
    for i in 0..n {
        // A datagram the host's own filter drops fails with EPERM: lost.
        if c.send_to(&i.to_be_bytes(), at).is_err() {
            lost += 1;
            continue;
        }
        let deadline = Instant::now() + Duration::from_millis(20);
        let mut buf = [0u8; 64];
        let got = loop {
            match c.recv_from(&mut buf) {
                Ok((4, _)) if buf[..4] == i.to_be_bytes() => break true,
                Ok(_) if Instant::now() < deadline => continue,
                _ => break false,
            }
        };
        lost += u32::from(!got);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    echo.join().unwrap();
    lost
}

/// TCP segments the namespace's stack retransmitted so far.
fn retransmits(ns: &str) -> u64 {
    let snmp = run_in(ns, || {
        std::fs::read_to_string("/proc/thread-self/net/snmp")
            .map_err(|e| wirespeed_host::HostError::file("snmp", e))
    })
    .unwrap();
    let tcp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Tcp:")).collect();
    let names: Vec<&str> = tcp[0].split_whitespace().collect();
    let values: Vec<&str> = tcp[1].split_whitespace().collect();
    let k = names.iter().position(|n| *n == "RetransSegs").unwrap();
    values[k].parse().unwrap()
}

/// A bulk TCP transfer from `from` to a sink in `to_ns` at `to`: the
/// receiver reads for up to `window` after its first byte or until
/// `limit` bytes; returns the rate it saw in Mbit/s.
fn bulk_mbps(from: &str, to_ns: &str, to: IpAddr, window: Duration, limit: usize) -> f64 {
    let l = run_in(to_ns, || Ok(TcpListener::bind((to, 0))))
        .unwrap()
        .unwrap();
    let at: SocketAddr = l.local_addr().unwrap();
    let sink = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let (mut total, mut first) = (0usize, None);
        while total < limit {
            let k = match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => k,
            };
            let t0 = *first.get_or_insert_with(Instant::now);
            total += k;
            if t0.elapsed() >= window {
                break;
            }
        }
        let secs = first.map_or(1.0, |t| t.elapsed().as_secs_f64()).max(1e-6);
        total as f64 * 8.0 / secs / 1e6
    });
    let mut c = run_in(from, || {
        Ok(TcpStream::connect_timeout(&at, Duration::from_secs(5)))
    })
    .unwrap()
    .unwrap();
    // cubic: bbr's spurious retransmits on veth would blur the loss check
    // (and a namespace may not choose a default outside the allowed list).
    socket2::SockRef::from(&c)
        .set_tcp_congestion(b"cubic")
        .unwrap();
    c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let chunk = vec![7u8; 128 * 1024];
    let end = Instant::now() + window + Duration::from_secs(5);
    // The sink closing ends the writes (EPIPE or a reset).
    while Instant::now() < end && c.write_all(&chunk).is_ok() {}
    drop(c);
    sink.join().unwrap()
}

/// A two-host lab with `links` links.
fn lab(prefix: &str, links: usize) -> Lab {
    Lab::up(&LabSpec::two_hosts(&Lab::unique(prefix), links, None)).expect("lab up")
}

fn to(addrs: &[IpAddr]) -> FaultMatch {
    FaultMatch::To(addrs.to_vec())
}

#[test]
fn loss_drops_its_share_and_removal_restores_the_namespace() {
    if !need_root("loss_drops_its_share_and_removal_restores_the_namespace") {
        return;
    }
    let lab = lab("lt-floss", 1);
    let (na, nb) = (lab.ns("a"), lab.ns("b"));
    let b: IpAddr = lab.addr4("b", 0).unwrap().into();
    let before = snapshot(&na);
    assert_eq!(udp_lost(&na, &nb, b, 100), 0, "no loss before the fault");
    let f = FaultSpec {
        host: "a".into(),
        kind: FaultKind::Loss { pct: 10.0 },
        on: to(&[b]),
    };
    let planted = lab.plant(&f).expect("plant the loss");
    assert_eq!(
        planted.commands(),
        [format!(
            "ip netns exec {na} iptables -w -t mangle -I POSTROUTING 1 -d {b}/32 -m statistic --mode random --probability 0.1 -j NFQUEUE --queue-num 65535"
        )]
    );
    assert_ne!(snapshot(&na), before);
    // 400 probes at 10%: 40 expected, sd 6.
    let lost = udp_lost(&na, &nb, b, 400);
    eprintln!("loss 10%: {lost} of 400 UDP probes lost");
    assert!((15..=70).contains(&lost), "{lost} of 400 lost");
    let r0 = retransmits(&na);
    let mbps = bulk_mbps(&na, &nb, b, Duration::from_secs(2), 4 << 20);
    let retrans = retransmits(&na) - r0;
    eprintln!("loss 10%: 4 MiB at {mbps:.0} Mbit/s, {retrans} segments retransmitted");
    assert!(retrans > 0, "no retransmits under 10% loss");
    let ran = planted.remove().expect("remove the loss");
    assert!(
        ran[0].contains("iptables -w -t mangle -D POSTROUTING"),
        "{ran:?}"
    );
    assert!(
        ran.iter()
            .any(|c| c.ends_with("nft delete table ip mangle")),
        "{ran:?}"
    );
    assert_eq!(snapshot(&na), before, "the namespace is as it was");
    assert_eq!(udp_lost(&na, &nb, b, 100), 0, "no loss after removal");
}

#[test]
fn a_rate_cap_holds_one_destination_and_not_another() {
    if !need_root("a_rate_cap_holds_one_destination_and_not_another") {
        return;
    }
    let mut spec = LabSpec::two_hosts(&Lab::unique("lt-frate"), 1, None);
    // A second address of b, reached over the same NIC: not capped.
    spec.hosts[1].loopback.push("10.251.0.2/32".into());
    spec.routes.push(RouteSpec {
        host: "a".into(),
        dst: "10.251.0.2/32".into(),
        links: vec![0],
    });
    let lab = Lab::up(&spec).expect("lab up");
    let (na, nb) = (lab.ns("a"), lab.ns("b"));
    let b: IpAddr = lab.addr4("b", 0).unwrap().into();
    let other: IpAddr = "10.251.0.2".parse().unwrap();
    let before = snapshot(&na);
    let f = FaultSpec {
        host: "a".into(),
        kind: FaultKind::Rate { bps: 20_000_000 },
        on: to(&[b]),
    };
    let planted = lab.plant(&f).expect("plant the cap");
    let c = planted.commands();
    assert_eq!(
        c[0],
        format!("tc -n {na} qdisc add dev eth0 root handle 1: htb default 1")
    );
    assert_eq!(
        c[3],
        format!(
            "tc -n {na} filter add dev eth0 parent 1: prio 1 protocol ip u32 match ip dst {b}/32 flowid 1:2"
        )
    );
    let capped = bulk_mbps(&na, &nb, b, Duration::from_millis(1500), 64 << 20);
    let free = bulk_mbps(&na, &nb, other, Duration::from_millis(1500), 16 << 20);
    eprintln!("rate 20 Mbit/s: {capped:.1} Mbit/s to {b}, {free:.0} Mbit/s to {other}");
    assert!((15.0..=25.0).contains(&capped), "{capped} Mbit/s capped");
    assert!(free > 200.0, "{free} Mbit/s to the other destination");
    planted.remove().expect("remove the cap");
    assert_eq!(snapshot(&na), before);
    let back = bulk_mbps(&na, &nb, b, Duration::from_millis(1500), 16 << 20);
    assert!(back > 200.0, "{back} Mbit/s after removal");
}

#[test]
fn two_faults_on_one_host_come_off_independently() {
    if !need_root("two_faults_on_one_host_come_off_independently") {
        return;
    }
    let lab = lab("lt-ftwo", 1);
    let (na, nb) = (lab.ns("a"), lab.ns("b"));
    let b: IpAddr = lab.addr4("b", 0).unwrap().into();
    let b6: IpAddr = lab.addr6("b", 0).unwrap().into();
    let before = snapshot(&na);
    let loss = lab
        .plant(&FaultSpec {
            host: "a".into(),
            kind: FaultKind::Loss { pct: 50.0 },
            on: FaultMatch::Nic("eth0".into()),
        })
        .expect("plant the loss");
    assert_eq!(loss.commands().len(), 4, "{:?}", loss.commands());
    let with_loss = snapshot(&na);
    let cap = lab
        .plant(&FaultSpec {
            host: "a".into(),
            kind: FaultKind::Rate { bps: 50_000_000 },
            on: to(&[b6]),
        })
        .expect("plant the cap");
    let both = snapshot(&na);
    assert_ne!(both.qdiscs, with_loss.qdiscs);
    // 50% each way on the NIC: a probe comes back 25% of the time.
    let lost = udp_lost(&na, &nb, b, 200);
    assert!((110..=190).contains(&lost), "{lost} of 200 lost");
    loss.remove().expect("remove the loss");
    let cap_only = snapshot(&na);
    assert_eq!(cap_only.rules, before.rules, "the loss's rules are gone");
    assert_eq!(cap_only.qdiscs, both.qdiscs, "the cap stays");
    assert_eq!(udp_lost(&na, &nb, b, 100), 0);
    let capped = bulk_mbps(&na, &nb, b6, Duration::from_millis(1500), 64 << 20);
    assert!((35.0..=60.0).contains(&capped), "{capped} Mbit/s over IPv6");
    drop(cap);
    assert_eq!(snapshot(&na), before, "dropping the cap removed it");
}

#[test]
fn a_refused_cap_undoes_what_it_planted_and_bad_faults_name_the_field() {
    if !need_root("a_refused_cap_undoes_what_it_planted") {
        return;
    }
    // Link 1 has the lab's own cap (tbf): a rate fault would replace it.
    let mut spec = LabSpec::two_hosts(&Lab::unique("lt-fref"), 2, None);
    spec.links[1].rate = Some("1gbit".into());
    let lab = Lab::up(&spec).expect("lab up");
    let na = lab.ns("a");
    let b0: IpAddr = lab.addr4("b", 0).unwrap().into();
    let b1: IpAddr = lab.addr4("b", 1).unwrap().into();
    let before = snapshot(&na);
    let f = |kind, on| FaultSpec {
        host: "a".into(),
        kind,
        on,
    };
    // eth0 is capped first, then eth1 refuses: eth0's qdisc goes again.
    let e = lab
        .plant(&f(FaultKind::Rate { bps: 10_000_000 }, to(&[b0, b1])))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("eth1") && e.contains("root qdisc already"),
        "{e}"
    );
    assert_eq!(snapshot(&na), before, "the half-planted cap is gone");
    let e = lab
        .plant(&f(
            FaultKind::Rate { bps: 10_000_000 },
            FaultMatch::Nic("eth1".into()),
        ))
        .unwrap_err()
        .to_string();
    assert!(e.contains("tbf"), "{e}");
    let mut bad = f(FaultKind::Loss { pct: 1.0 }, FaultMatch::Nic("eth9".into()));
    let e = lab.plant(&bad).unwrap_err().to_string();
    assert!(e.contains("dev \"eth9\""), "{e}");
    bad.host = "zz".into();
    let e = lab.plant(&bad).unwrap_err().to_string();
    assert!(e.contains("host \"zz\""), "{e}");
    let e = lab
        .plant(&f(FaultKind::Loss { pct: 0.0 }, to(&[b0])))
        .unwrap_err()
        .to_string();
    assert!(e.contains("loss pct 0"), "{e}");
    let local: IpAddr = lab.addr4("a", 0).unwrap().into();
    let e = lab
        .plant(&f(FaultKind::Rate { bps: 10_000_000 }, to(&[local])))
        .unwrap_err()
        .to_string();
    assert!(e.contains("itself"), "{e}");
    assert_eq!(snapshot(&na), before);
}

#[test]
fn a_routers_forwarded_traffic_loses_both_ways() {
    if !need_root("a_routers_forwarded_traffic_loses_both_ways") {
        return;
    }
    // a -(link 0)- r -(link 1)- b, each end routed to the other's subnet.
    let mut spec = LabSpec {
        name: Lab::unique("lt-ffwd"),
        subnet_base: Some(213),
        ..LabSpec::default()
    };
    for h in ["a", "r", "b"] {
        spec.hosts.push(HostSpec {
            name: h.into(),
            ..HostSpec::default()
        });
    }
    spec.hosts[1]
        .sysctl
        .insert("net.ipv4.ip_forward".into(), "1".into());
    for (a, b) in [("a", "r"), ("r", "b")] {
        spec.links.push(LinkSpec {
            a: a.into(),
            b: b.into(),
            ..LinkSpec::default()
        });
    }
    for (host, dst, link) in [("a", "10.213.1.0/24", 0), ("b", "10.213.0.0/24", 1)] {
        spec.routes.push(RouteSpec {
            host: host.into(),
            dst: dst.into(),
            links: vec![link],
        });
    }
    let lab = Lab::up(&spec).expect("lab up");
    let (na, nr, nb) = (lab.ns("a"), lab.ns("r"), lab.ns("b"));
    let b: IpAddr = lab.addr4("b", 1).unwrap().into();
    let r: IpAddr = lab.addr4("r", 0).unwrap().into();
    assert_eq!(udp_lost(&na, &nb, b, 50), 0, "a reaches b through r");
    let before = snapshot(&nr);
    let uplink = lab.dev("r", 1).unwrap();
    let planted = lab
        .plant(&FaultSpec {
            host: "r".into(),
            kind: FaultKind::Loss { pct: 10.0 },
            on: FaultMatch::Forwarded(uplink.clone()),
        })
        .expect("plant the loss");
    assert!(
        planted.commands()[0].contains(&format!("-I FORWARD 1 -i {uplink} -m statistic")),
        "{:?}",
        planted.commands()
    );
    // 10% each way: 19% of the probes, sd 2% of 400.
    let lost = udp_lost(&na, &nb, b, 400);
    eprintln!("forwarded loss 10% both ways: {lost} of 400 probes lost");
    assert!((40..=120).contains(&lost), "{lost} of 400 lost");
    // The router's own traffic is not forwarded: no loss.
    assert_eq!(udp_lost(&na, &nr, r, 100), 0);
    planted.remove().expect("remove");
    assert_eq!(snapshot(&nr), before);
    assert_eq!(udp_lost(&na, &nb, b, 100), 0);
}
