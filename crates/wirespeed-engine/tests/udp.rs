//! UDP workloads end to end over loopback (IPv4 and IPv6): a real server
//! and client in one process. Lossy and capped links are in the binary's
//! lab tests (crates/wirespeed/tests/live/udp_live.rs).

mod common;
use common::{TestServer, handshake, recv};

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;
use wirespeed_engine::ServerConfig;
use wirespeed_engine::proto::{Msg, unhex, write_msg};
use wirespeed_engine::testing::{Kind, REGISTER_LEN, parse_registration, registration};
use wirespeed_types::result::UdpStats;
use wirespeed_types::spec::DEFAULT_DATAGRAM;
use wirespeed_types::{Direction, TestSpec, Workload};

fn udp(spec: TestSpec) -> TestSpec {
    let workload = match spec.workload {
        Workload::Stream => Workload::UdpStream,
        w => w,
    };
    TestSpec {
        workload,
        msg_size: DEFAULT_DATAGRAM,
        duration_s: 0.6,
        warmup_s: 0.1,
        ..spec
    }
}

/// Sent, received and lost agree, and nothing is counted twice.
fn consistent(u: &UdpStats) {
    assert_eq!(u.datagrams_sent - u.datagrams_received, u.lost, "{u:?}");
    assert!(u.datagrams_received > 0, "{u:?}");
    assert!(u.jitter_us.is_finite() && u.jitter_us >= 0.0);
}

#[test]
fn udp_stream_forward_reverse_and_bidir_count_every_datagram() {
    let srv = TestServer::start(ServerConfig::default());
    for dir in [Direction::Forward, Direction::Reverse, Direction::Bidir] {
        // 200 Mbit/s per flow: loopback takes it without loss.
        let r = srv
            .run(&udp(TestSpec {
                direction: dir,
                flows: 2,
                threads: 2,
                rate_bps: Some(200_000_000),
                ..TestSpec::default()
            }))
            .unwrap();
        let u = r.udp.clone().expect("a UDP result has datagram figures");
        consistent(&u);
        assert!(u.loss_pct < 1.0, "{dir:?}: {u:?}");
        let want_dirs = if dir == Direction::Bidir { 2 } else { 1 };
        assert_eq!(r.directions.len(), want_dirs);
        for f in &r.flows {
            consistent(f.udp.as_ref().unwrap());
            // Paced at 200 Mbit/s: never above it, and near it (the
            // machine is shared: a starved thread falls behind).
            let sent = f.local_bps.max(f.remote_bps);
            assert!(
                (1.3e8..=2.1e8).contains(&sent),
                "{dir:?} flow {}: {} / {}",
                f.id,
                f.local_bps,
                f.remote_bps
            );
            assert!(f.tcp_info.is_none());
        }
        let psum: u64 = r
            .paths
            .iter()
            .map(|p| p.udp.as_ref().unwrap().datagrams_sent)
            .sum();
        assert_eq!(psum, u.datagrams_sent);
    }
}

#[test]
fn gso_and_gro_on_and_off_both_work_and_say_which_ran() {
    let srv = TestServer::start(ServerConfig::default());
    for (gso, gro) in [(true, true), (false, false), (true, false), (false, true)] {
        let r = srv
            .run(&udp(TestSpec {
                udp_gso: gso,
                udp_gro: gro,
                ..TestSpec::default()
            }))
            .unwrap();
        let u = r.udp.clone().unwrap();
        consistent(&u);
        assert!(r.throughput_bps > 1e7, "{gso} {gro}: {}", r.throughput_bps);
        let o = r.udp_offload.clone().unwrap();
        assert_eq!(o.client_gso, gso, "{o:?}");
        // Over loopback a GSO send arrives whole: GRO "runs" only then.
        assert_eq!(o.server_gro, gso && gro, "{o:?}");
        assert!(!o.server_gso && !o.client_gro, "{o:?}");
    }
}

#[test]
fn udp_over_ipv6_loopback() {
    let srv = TestServer::start(ServerConfig {
        bind: "::1".parse().unwrap(),
        ..ServerConfig::default()
    });
    for w in [Workload::UdpStream, Workload::UdpRr] {
        let r = srv
            .run(&udp(TestSpec {
                workload: w,
                direction: Direction::Bidir,
                request_size: 64,
                response_size: 64,
                ..TestSpec::default()
            }))
            .unwrap();
        consistent(r.udp.as_ref().unwrap());
        assert!(r.flows.iter().all(|f| f.udp.is_some()));
    }
}

#[test]
fn udp_rr_percentiles_are_ordered() {
    let srv = TestServer::start(ServerConfig::default());
    for flows in [1, 3] {
        let r = srv
            .run(&udp(TestSpec {
                workload: Workload::UdpRr,
                flows,
                request_size: 100,
                response_size: 8000,
                ..TestSpec::default()
            }))
            .unwrap();
        let l = r
            .latency
            .clone()
            .unwrap_or_else(|| panic!("udp-rr has latency: {r:#?}"));
        assert!(l.count > 50, "{l:?}");
        assert!(l.min_us > 0.0 && l.min_us <= l.p50_us && l.p50_us <= l.p90_us);
        assert!(l.p90_us <= l.p99_us && l.p99_us <= l.p999_us && l.p999_us <= l.max_us);
        assert!(r.transactions_per_s > 100.0, "{}", r.transactions_per_s);
        let u = r.udp.clone().unwrap();
        consistent(&u);
        assert_eq!(u.lost, 0, "no loss on loopback: {u:?}");
        let n: u64 = r.flows.iter().map(|f| f.transactions).sum();
        assert!(n <= u.datagrams_received);
    }
}

/// Registers by hand: a wrong token gets no answer, the right one does,
/// a second socket cannot take the flow, and datagrams from it to the
/// flow's server socket are refused by the kernel (the socket is
/// connected to the registered client only).
#[test]
fn udp_flows_take_datagrams_only_from_their_registered_client() {
    let srv = TestServer::start(ServerConfig::default());
    let mut c = handshake(srv.addr, None, "udp").unwrap();
    let spec = udp(TestSpec::default());
    write_msg(
        &mut c,
        &Msg::Spec {
            spec: Box::new(spec),
        },
    )
    .unwrap();
    let (token, port) = match recv(&mut c).unwrap() {
        Msg::Accepted { token, data_port } => (token, data_port),
        m => panic!("{m:?}"),
    };
    let token: [u8; 16] = unhex(&token).unwrap().try_into().unwrap();
    let reg_addr = SocketAddr::new(srv.addr.ip(), port);
    let wait = |s: &UdpSocket| {
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut b = [0u8; 256];
        s.recv_from(&mut b)
            .ok()
            .map(|(n, from)| (b[..n].to_vec(), from))
    };
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    a.send_to(&registration(Kind::Register, 0, &[9u8; 16]), reg_addr)
        .unwrap();
    assert_eq!(wait(&a), None, "a wrong token is answered");
    a.send_to(&registration(Kind::Register, 0, &token), reg_addr)
        .unwrap();
    let (answer, flow_addr) = wait(&a).expect("the right token is answered");
    assert_eq!(answer.len(), REGISTER_LEN);
    assert_eq!(
        parse_registration(&answer, Kind::Registered, &token),
        Some(0)
    );
    assert_ne!(flow_addr.port(), port, "each flow gets a socket of its own");
    // Another socket with the token cannot take the registered flow.
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    b.send_to(&registration(Kind::Register, 0, &token), reg_addr)
        .unwrap();
    assert_eq!(wait(&b), None, "a second registration is answered");
    // Its datagrams to the flow's socket are not taken: the kernel
    // answers port unreachable, which b sees as ECONNREFUSED.
    b.connect(flow_addr).unwrap();
    b.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut refused = false;
    for _ in 0..5 {
        let _ = b.send(&[0u8; 64]);
        let mut buf = [0u8; 64];
        if let Err(e) = b.recv(&mut buf)
            && e.kind() == std::io::ErrorKind::ConnectionRefused
        {
            refused = true;
            break;
        }
    }
    assert!(refused, "the flow's socket took a stranger's datagrams");
    // The registered client's test still runs.
    write_msg(&mut c, &Msg::Start).unwrap();
    assert_eq!(recv(&mut c).unwrap(), Msg::Started);
    c.flush().unwrap();
    drop(c);
    // The server is still serving after the client left mid-test.
    let r = srv.run(&udp(TestSpec::default())).unwrap();
    consistent(r.udp.as_ref().unwrap());
}
