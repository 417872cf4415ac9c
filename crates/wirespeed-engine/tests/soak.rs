//! Soaks: 1000 tests in a row with descriptor and memory accounting, and
//! legitimate clients beside 200+ hostile connections of every kind. They
//! take a lock so they run one at a time, and sit in their own test binary
//! so no other test's sockets blur the counts. (10,000 flows in one test
//! need two processes' descriptor limits: that test is in the binary
//! crate's tests.)

mod common;
use common::{
    TestServer, connect_flows, connect_from, handshake, listening_ports, recv, send_spec,
    wait_control_closed,
};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirespeed_engine::proto::{CONTROL_MAGIC, Msg, write_msg};
use wirespeed_engine::{ServerConfig, run_test};
use wirespeed_types::{Direction, TestSpec, Workload};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn a_thousand_tests_leave_no_descriptors_or_memory_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let srv = TestServer::start(ServerConfig::default());
    let spec = TestSpec {
        duration_s: 0.005,
        warmup_s: 0.0,
        msg_size: 16384,
        ..TestSpec::default()
    };
    for _ in 0..50 {
        srv.run(&spec).unwrap();
    }
    // Let the server's control threads of the warm-up runs exit.
    wait_control_closed(srv.addr.port(), "after the warm-up runs");
    let (fds0, rss0) = (wirespeed_engine::testing::open_fds(), rss_kib());
    for i in 0..1000 {
        srv.run(&spec).unwrap_or_else(|e| panic!("test {i}: {e}"));
    }
    wait_control_closed(srv.addr.port(), "after the thousand tests");
    let (fds1, rss1) = (wirespeed_engine::testing::open_fds(), rss_kib());
    assert!(fds1 <= fds0 + 2, "descriptors {fds0} -> {fds1}");
    assert!(rss1 < rss0 + 16 * 1024, "RSS {rss0} KiB -> {rss1} KiB");
}

const KEY: &[u8] = b"the-soak-key-0123456789";

/// Runs `f` on a thread until `stop` or `secs`, counting the hostile
/// connections it reports opening.
fn attacker(
    stop: &Arc<AtomicBool>,
    opened: &Arc<AtomicU64>,
    mut f: impl FnMut() -> u64 + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let (stop, opened) = (stop.clone(), opened.clone());
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(15);
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            opened.fetch_add(f(), Ordering::Relaxed);
        }
    })
}

/// Sends `bytes` to a fresh control connection from `from`, then reads
/// whatever the server answers (bounded).
fn poke(from: &str, to: SocketAddr, bytes: &[u8]) -> u64 {
    let Some(mut s) = connect_from(from, to) else {
        return 0;
    };
    let _ = s.write_all(bytes);
    let _ = s.set_read_timeout(Some(Duration::from_millis(300)));
    let mut b = [0u8; 512];
    let _ = s.read(&mut b);
    std::thread::sleep(Duration::from_millis(20));
    1
}

/// Issue 10's soak: with the key required, legitimate clients run real
/// short tests (stream both ways, rr, crr) while hostile peers open more
/// than 200 connections: trickling and idle control connections,
/// unauthenticated floods of garbage, wrong keys and huge lengths, idle
/// and garbage data-port connections, and keyed clients that trickle
/// their stop or never start. Every legitimate test must succeed.
#[test]
fn legitimate_clients_succeed_beside_hostile_connections_of_every_kind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let srv = TestServer::start(ServerConfig {
        key: Some(KEY.to_vec()),
        // Room for the legitimate clients beside the rude keyed ones: a
        // keyed client is trusted with a test slot.
        max_tests: 8,
        handshake_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(2),
        preamble_timeout: Duration::from_millis(500),
        stop_grace: Duration::from_secs(1),
        ..ServerConfig::default()
    });
    let addr = srv.addr;
    let control_port = addr.port();
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicU64::new(0));
    let mut hostile = Vec::new();
    // Tricklers: a hello one byte every 100 ms, from two other addresses.
    for from in ["127.0.0.2", "127.0.0.3"] {
        let mut conns: Vec<(TcpStream, usize)> = Vec::new();
        let mut hello = CONTROL_MAGIC.to_vec();
        write_msg(
            &mut hello,
            &Msg::Hello {
                version: 1,
                min_version: None,
                client: "x".repeat(100),
            },
        )
        .unwrap();
        hostile.push(attacker(&stop, &opened, move || {
            let mut n = 0;
            conns.retain_mut(|(s, pos)| {
                *pos += 1;
                *pos < hello.len() && s.write_all(&hello[*pos - 1..*pos]).is_ok()
            });
            while conns.len() < 20 {
                let Some(s) = connect_from(from, addr) else {
                    break;
                };
                conns.push((s, 0));
                n += 1;
            }
            std::thread::sleep(Duration::from_millis(100));
            n
        }));
    }
    // Idle control connections that never send a byte.
    hostile.push(attacker(&stop, &opened, move || {
        let held: Vec<TcpStream> = (0..10)
            .filter_map(|_| connect_from("127.0.0.4", addr))
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        held.len() as u64
    }));
    // Unauthenticated floods, some from the clients' own address.
    let junk: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        [CONTROL_MAGIC.as_slice(), &[0xff, 0xff, 0xff, 0xf0]].concat(),
        [CONTROL_MAGIC.as_slice(), &5u32.to_be_bytes(), b"{nope"].concat(),
        {
            let mut b = CONTROL_MAGIC.to_vec();
            write_msg(
                &mut b,
                &Msg::Hello {
                    version: 1,
                    min_version: None,
                    client: "x".into(),
                },
            )
            .unwrap();
            write_msg(
                &mut b,
                &Msg::Auth {
                    mac: Some("00".repeat(32)),
                },
            )
            .unwrap();
            b
        },
        {
            let mut b = CONTROL_MAGIC.to_vec();
            write_msg(&mut b, &Msg::Start).unwrap();
            b
        },
    ];
    for from in ["127.0.0.1", "127.0.0.5"] {
        let junk = junk.clone();
        let mut i = 0;
        hostile.push(attacker(&stop, &opened, move || {
            i += 1;
            poke(from, addr, &junk[i % junk.len()])
        }));
    }
    // Idle and garbage connections to every data port that appears.
    let mut seen: HashSet<u16> = listening_ports("self").into_iter().collect();
    let on_data_ports = Arc::new(AtomicU64::new(0));
    hostile.push(attacker(&stop, &on_data_ports, move || {
        let mut n = 0;
        let mut held = Vec::new();
        for p in listening_ports("self") {
            if p == control_port || !seen.insert(p) {
                continue;
            }
            for i in 0..4 {
                if let Some(mut s) =
                    connect_from("127.0.0.6", SocketAddr::from(([127, 0, 0, 1], p)))
                {
                    if i % 2 == 1 {
                        let _ = s.write_all(b"WSPD-garbage-not-a-token");
                    }
                    held.push(s);
                    n += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
        n
    }));
    // Keyed clients that misbehave: trickle their stop, or never start.
    hostile.push(attacker(&stop, &opened, move || {
        let Ok(mut s) = handshake(addr, Some(KEY), "keyed-but-rude") else {
            return 1;
        };
        let spec = TestSpec {
            duration_s: 0.2,
            warmup_s: 0.0,
            msg_size: 16384,
            ..TestSpec::default()
        };
        let (token, port) = send_spec(&mut s, &spec);
        let _flows = connect_flows(addr.ip(), port, &token, 0..1);
        let _ = write_msg(&mut s, &Msg::Start);
        let _ = recv(&mut s);
        let mut frame = Vec::new();
        write_msg(&mut frame, &Msg::Stop).unwrap();
        for b in frame {
            if s.write_all(&[b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        1
    }));
    hostile.push(attacker(&stop, &opened, move || {
        let Ok(mut s) = handshake(addr, Some(KEY), "never-starts") else {
            return 1;
        };
        let (token, port) = send_spec(
            &mut s,
            &TestSpec {
                flows: 4,
                ..TestSpec::default()
            },
        );
        let _flows = connect_flows(addr.ip(), port, &token, 0..4);
        // The server gives up at its idle timeout and says so.
        let _ = recv(&mut s);
        5
    }));
    // The legitimate clients.
    let specs = [
        TestSpec {
            flows: 4,
            threads: 2,
            ..TestSpec::default()
        },
        TestSpec {
            direction: Direction::Reverse,
            flows: 8,
            ..TestSpec::default()
        },
        TestSpec {
            workload: Workload::Rr,
            flows: 2,
            nodelay: true,
            ..TestSpec::default()
        },
        TestSpec {
            workload: Workload::Crr,
            flows: 2,
            nodelay: true,
            ..TestSpec::default()
        },
    ];
    let t0 = Instant::now();
    let clients: Vec<_> = (0..3)
        .map(|c| {
            let mut cfg = srv.client();
            cfg.key = Some(KEY.to_vec());
            let specs = specs.clone();
            std::thread::spawn(move || {
                let mut done = 0;
                let mut i = c;
                while t0.elapsed() < Duration::from_secs(8) {
                    let spec = TestSpec {
                        duration_s: 0.3,
                        warmup_s: 0.05,
                        msg_size: 65536,
                        ..specs[i % specs.len()].clone()
                    };
                    i += 1;
                    match run_test(&cfg, &spec, &mut |_| {}) {
                        Ok(r) => assert!(
                            r.throughput_bps > 0.0 || r.transactions_per_s > 0.0,
                            "client {c}: {r:?}"
                        ),
                        Err(e) => panic!("client {c}, test {done} ({:?}): {e}", spec.workload),
                    }
                    done += 1;
                }
                done
            })
        })
        .collect();
    let done: Vec<u32> = clients.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    for h in hostile {
        h.join().unwrap();
    }
    let data = on_data_ports.load(Ordering::Relaxed);
    let opened = opened.load(Ordering::Relaxed) + data;
    eprintln!(
        "legitimate tests per client: {done:?}; hostile connections: {opened}, {data} of them to data ports"
    );
    assert!(opened >= 200, "only {opened} hostile connections");
    assert!(data >= 20, "only {data} hostile data-port connections");
    assert!(done.iter().all(|&n| n >= 3), "{done:?}");
}
