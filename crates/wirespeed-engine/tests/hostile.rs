//! The server and client against hostile or broken peers (issue 10): raw
//! TcpStreams that trickle, idle, send garbage or vanish, beside real
//! clients whose tests must still succeed. Every loop here is bounded in
//! count and time.

mod common;
use common::{
    TestServer, connect_flows, connect_from, handshake, raw_connect, recv, send_spec,
    wait_control_closed, wait_for,
};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wirespeed_engine::proto::{CONTROL_MAGIC, Msg, SideReport, read_msg, write_msg};
use wirespeed_engine::{EngineError, ServerConfig, run_test};
use wirespeed_types::{Direction, TestSpec};

const KEY: &[u8] = b"a-key-of-at-least-sixteen-bytes";

fn short() -> TestSpec {
    TestSpec {
        duration_s: 0.3,
        warmup_s: 0.0,
        msg_size: 65536,
        ..TestSpec::default()
    }
}

/// The bytes a trickler sends: the preamble and a hello it never finishes
/// in time (one byte per tick).
fn slow_hello() -> Vec<u8> {
    let mut b = CONTROL_MAGIC.to_vec();
    write_msg(
        &mut b,
        &Msg::Hello {
            version: 1,
            min_version: None,
            client: "t".repeat(200),
        },
    )
    .unwrap();
    b
}

/// Opens `n` control connections from 127.0.0.2 (another address than
/// the clients') that each send one byte of a hello every `every`,
/// reopening any the server drops, until `stop` (or 20 s). Returns how
/// many connections it opened; `so_far` counts them as they open.
fn tricklers(
    addr: SocketAddr,
    n: usize,
    every: Duration,
    stop: Arc<AtomicBool>,
    so_far: Arc<AtomicU64>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let bytes = slow_hello();
        let mut conns: Vec<Option<(TcpStream, usize)>> = (0..n).map(|_| None).collect();
        let mut opened = 0u64;
        let end = Instant::now() + Duration::from_secs(20);
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            for c in conns.iter_mut() {
                let alive = c.as_mut().is_some_and(|(s, pos)| {
                    let mut sink = [0u8; 64];
                    // Anything from the server (an error) or EOF: dropped.
                    let dropped = !matches!(s.read(&mut sink), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
                    let ok = !dropped && s.write_all(&bytes[*pos % bytes.len()..][..1]).is_ok();
                    *pos += 1;
                    ok
                });
                if !alive {
                    *c = connect_from("127.0.0.2", addr).and_then(|s| {
                        s.set_nonblocking(true).ok()?;
                        Some((s, 0))
                    });
                    opened += 1;
                    so_far.fetch_add(1, Ordering::Relaxed);
                }
            }
            std::thread::sleep(every);
        }
        opened
    })
}

fn keyed(srv: &TestServer) -> wirespeed_engine::ClientConfig {
    let mut c = srv.client();
    c.key = Some(KEY.to_vec());
    c
}

// Item 1: trickling control connections (from another address; then
// more than the per-address cap) neither lock out a client that
// authenticates nor disturb its test in progress.
#[test]
fn tricklers_cannot_lock_out_an_authenticated_client() {
    let (tx, rx) = std::sync::mpsc::channel();
    let srv = TestServer::start(ServerConfig {
        key: Some(KEY.to_vec()),
        handshake_timeout: Duration::from_secs(2),
        events: Some(tx),
        ..ServerConfig::default()
    });
    // A test already running when the flood starts.
    let cfg = keyed(&srv);
    let running = std::thread::spawn(move || {
        run_test(
            &cfg,
            &TestSpec {
                duration_s: 2.0,
                ..short()
            },
            &mut |_| {},
        )
    });
    let started = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(started.to_string().contains("started"), "{started}");
    let stop = Arc::new(AtomicBool::new(false));
    let so_far = Arc::new(AtomicU64::new(0));
    let t = tricklers(
        srv.addr,
        70,
        Duration::from_millis(200),
        stop.clone(),
        so_far.clone(),
    );
    // The flood is on once all 70 have connected.
    assert!(
        wait_for(Duration::from_secs(10), || so_far.load(Ordering::Relaxed)
            >= 70),
        "the tricklers opened {} of 70 connections in 10 s",
        so_far.load(Ordering::Relaxed)
    );
    // New clients get through, one after another.
    for i in 0..3 {
        let r = run_test(&keyed(&srv), &short(), &mut |_| {});
        assert!(r.is_ok(), "client {i} during the flood: {r:?}");
    }
    stop.store(true, Ordering::Relaxed);
    let opened = t.join().unwrap();
    assert!(opened >= 70, "{opened}");
    running
        .join()
        .unwrap()
        .expect("the test running during the flood");
}

// Item 1: the handshake has a total deadline that trickling cannot extend.
#[test]
fn a_trickler_is_dropped_at_the_handshake_deadline() {
    let srv = TestServer::start(ServerConfig {
        handshake_timeout: Duration::from_secs(1),
        ..ServerConfig::default()
    });
    let mut s = raw_connect(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    let t0 = Instant::now();
    // A hello frame one byte at a time, every 150 ms: 0.15 s per byte.
    let frame = {
        let mut b = Vec::new();
        write_msg(
            &mut b,
            &Msg::Hello {
                version: 1,
                min_version: None,
                client: "slow".repeat(10),
            },
        )
        .unwrap();
        b
    };
    let mut closed = None;
    let mut answer = Vec::new();
    for &byte in frame.iter() {
        if s.write_all(&[byte]).is_err() {
            closed = Some(t0.elapsed());
            break;
        }
        let mut buf = [0u8; 256];
        match s.read(&mut buf) {
            Ok(n) => {
                // An error frame or EOF: the server gave up.
                answer.extend_from_slice(&buf[..n]);
                closed = Some(t0.elapsed());
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {
                closed = Some(t0.elapsed());
                break;
            }
        }
        if t0.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    let closed = closed.expect("the trickler was never dropped");
    assert!(
        closed < Duration::from_millis(2500),
        "dropped after {closed:?}"
    );
    assert!(
        closed >= Duration::from_millis(900),
        "dropped after {closed:?}"
    );
    // It is told why.
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("timeout"), "{text}");
}

// Item 2: a client that trickles its stop cannot keep the server sending.
#[test]
fn a_trickled_stop_does_not_extend_the_test() {
    let srv = TestServer::start(ServerConfig {
        stop_grace: Duration::from_secs(1),
        ..ServerConfig::default()
    });
    let mut s = handshake(srv.addr, None, "stop-trickler").unwrap();
    let spec = TestSpec {
        direction: Direction::Reverse,
        duration_s: 1.0,
        warmup_s: 0.0,
        msg_size: 65536,
        ..TestSpec::default()
    };
    let (token, port) = send_spec(&mut s, &spec);
    let mut flows = connect_flows(srv.addr.ip(), port, &token, 0..1);
    write_msg(&mut s, &Msg::Start).unwrap();
    assert!(matches!(recv(&mut s).unwrap(), Msg::Started));
    let t0 = Instant::now();
    // Its flows are in: the data port is closed, not left to take
    // connections nobody will read (found while hunting).
    assert!(TcpStream::connect((srv.addr.ip(), port)).is_err());
    // Read the server's data on a thread; note when it last arrived.
    let mut d = flows.pop().unwrap();
    d.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let last = Arc::new(AtomicU64::new(0));
    let l2 = last.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        while t0.elapsed() < Duration::from_secs(12) {
            match d.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    total += n as u64;
                    l2.store(t0.elapsed().as_millis() as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
        total
    });
    // The stop frame, one byte every 500 ms, from the window's end on.
    std::thread::sleep(Duration::from_secs(1));
    let mut frame = Vec::new();
    write_msg(&mut frame, &Msg::Stop).unwrap();
    for b in frame {
        if s.write_all(&[b]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let total = reader.join().unwrap();
    let last = Duration::from_millis(last.load(Ordering::Relaxed));
    assert!(total > 0);
    // 1 s of test, 1 s of stop grace, and a margin for a loaded machine.
    assert!(
        last < Duration::from_millis(3500),
        "the server sent until {last:?}"
    );
    // It said why.
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    match recv(&mut s) {
        Ok(Msg::Error { code, message }) => {
            assert_eq!(code, "aborted", "{message}");
            assert!(message.contains("no stop"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// A hand-driven test with `flows` forward flows; `before` runs with the
/// data port before the real flows connect. Returns the server's answer
/// to start.
fn raw_test(addr: SocketAddr, flows: u32, before: impl FnOnce(u16) -> Vec<TcpStream>) -> Msg {
    let mut s = handshake(addr, None, "raw").unwrap();
    let spec = TestSpec {
        flows,
        duration_s: 0.2,
        warmup_s: 0.0,
        ..TestSpec::default()
    };
    let (token, port) = send_spec(&mut s, &spec);
    let _hostile = before(port);
    let flows = connect_flows(addr.ip(), port, &token, 0..flows);
    write_msg(&mut s, &Msg::Start).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let m = recv(&mut s).unwrap_or_else(|e| Msg::error("test", e.to_string()));
    if matches!(m, Msg::Started) {
        write_msg(&mut s, &Msg::Stop).unwrap();
        // Closing the flows lets the server's receivers finish at once.
        drop(flows);
        assert!(matches!(recv(&mut s).unwrap(), Msg::Report { .. }));
    }
    m
}

// Item 3: idle and garbage data connections cost one fd for a short time,
// not other flows' place in line.
#[test]
fn idle_and_garbage_data_connections_do_not_starve_flows() {
    let srv = TestServer::start(ServerConfig {
        idle_timeout: Duration::from_secs(3),
        ..ServerConfig::default()
    });
    let ip = srv.addr.ip();
    let t0 = Instant::now();
    let m = raw_test(srv.addr, 200, |port| {
        let mut v: Vec<TcpStream> = (0..8)
            .map(|_| TcpStream::connect((ip, port)).unwrap())
            .collect();
        for i in 0..4 {
            let mut g = TcpStream::connect((ip, port)).unwrap();
            let _ = g.write_all(&[b'x'; 10][..3 + i]);
            v.push(g);
        }
        v
    });
    assert!(matches!(m, Msg::Started), "{m:?}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
}

fn open_fds() -> usize {
    wirespeed_engine::testing::open_fds()
}

// Item 4: a client that dies while its flows connect has them closed at
// once, not at the accept deadline.
#[test]
fn a_dead_clients_flows_are_released_promptly() {
    let srv = TestServer::start(ServerConfig {
        idle_timeout: Duration::from_secs(10),
        ..ServerConfig::default()
    });
    // Warm up the server's threads so the baseline is stable.
    srv.run(&short()).unwrap();
    wait_control_closed(srv.addr.port(), "after the warm-up test");
    let base = open_fds();
    {
        let mut s = handshake(srv.addr, None, "dies").unwrap();
        let (token, port) = send_spec(
            &mut s,
            &TestSpec {
                flows: 200,
                ..short()
            },
        );
        let flows = connect_flows(srv.addr.ip(), port, &token, 0..100);
        assert!(wait_for(Duration::from_secs(2), || open_fds() >= base + 200));
        drop(flows);
        drop(s);
    }
    let t0 = Instant::now();
    let released = wait_for(Duration::from_secs(5), || open_fds() <= base + 2);
    assert!(
        released && t0.elapsed() < Duration::from_secs(2),
        "{} fds after {:?} (baseline {base})",
        open_fds(),
        t0.elapsed()
    );
}

// Item 5: nothing from the wire reaches the log raw.
#[test]
fn wire_text_cannot_forge_log_lines() {
    let (tx, rx) = std::sync::mpsc::channel();
    let srv = TestServer::start(ServerConfig {
        events: Some(tx),
        ..ServerConfig::default()
    });
    // A client name with a newline, through a whole test.
    let mut s = handshake(srv.addr, None, "x\nFAKE LOG LINE\r\x1b[2J").unwrap();
    let (token, port) = send_spec(&mut s, &short());
    let f = connect_flows(srv.addr.ip(), port, &token, 0..1);
    write_msg(&mut s, &Msg::Start).unwrap();
    assert!(matches!(recv(&mut s).unwrap(), Msg::Started));
    write_msg(&mut s, &Msg::Stop).unwrap();
    drop(f);
    assert!(matches!(recv(&mut s).unwrap(), Msg::Report { .. }));
    drop(s);
    // A message type with a newline: the parse error quotes it.
    let mut s = raw_connect(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    let body = br#"{"type":"x\nFAKE LOG LINE"}"#;
    s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    s.write_all(body).unwrap();
    assert!(matches!(read_msg(&mut s), Ok(Msg::Error { .. })));
    drop(s);
    let mut lines = Vec::new();
    while let Ok(ev) = rx.recv_timeout(Duration::from_millis(500)) {
        lines.push(ev.to_string());
    }
    assert!(lines.len() >= 2, "{lines:?}");
    for l in &lines {
        assert!(
            !l.chars().any(char::is_control),
            "raw control character: {l:?}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("FAKE LOG LINE")),
        "{lines:?}"
    );
}

// Item 8: a busy answer reaches the client even when the server refuses
// before reading what the client sent.
#[test]
fn a_busy_answer_is_never_lost() {
    // One connection per address, held: every other from here is refused
    // at accept, before the server reads a byte of it.
    let srv = TestServer::start(ServerConfig {
        max_per_source: 1,
        ..ServerConfig::default()
    });
    let _held = handshake(srv.addr, None, "holder").unwrap();
    for i in 0..40 {
        match srv.run(&short()) {
            Err(EngineError::Busy(_)) => {}
            other => panic!("attempt {i}: {other:?}"),
        }
    }
}

/// A fake server's side of a connection up to the client's hello.
fn accept_hello(l: &TcpListener) -> Option<TcpStream> {
    let (mut s, _) = l.accept().ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut magic = [0u8; 4];
    s.read_exact(&mut magic).unwrap();
    let _hello = read_msg(&mut s).unwrap();
    Some(s)
}

/// A fake server: handshake, accept the flows, run a window, then send
/// the report `mangle` makes of a plausible one.
fn fake_server(mangle: impl Fn(&mut SideReport) + Send + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let Some(mut s) = accept_hello(&l) else {
            return;
        };
        write_msg(
            &mut s,
            &Msg::Challenge {
                nonce: "00".repeat(32),
                auth_required: false,
                version: None,
                server: None,
            },
        )
        .unwrap();
        let _auth = read_msg(&mut s).unwrap();
        write_msg(
            &mut s,
            &Msg::Welcome {
                limits: Default::default(),
            },
        )
        .unwrap();
        let Ok(Msg::Spec { spec }) = read_msg(&mut s) else {
            return;
        };
        let data = TcpListener::bind("127.0.0.1:0").unwrap();
        write_msg(
            &mut s,
            &Msg::Accepted {
                token: "00".repeat(16),
                data_port: data.local_addr().unwrap().port(),
            },
        )
        .unwrap();
        let mut flows = Vec::new();
        for _ in 0..spec.connections() {
            let (d, _) = data.accept().unwrap();
            flows.push(d);
        }
        // Drain the client's data so its senders never block.
        for mut d in flows {
            std::thread::spawn(move || {
                let mut b = vec![0u8; 1 << 16];
                while matches!(d.read(&mut b), Ok(n) if n > 0) {}
            });
        }
        let _start = read_msg(&mut s).unwrap();
        write_msg(&mut s, &Msg::Started).unwrap();
        let _stop = read_msg(&mut s).unwrap();
        let mut r = SideReport {
            window_s: spec.duration_s,
            flows: spec
                .roster()
                .iter()
                .map(|p| wirespeed_engine::proto::SideFlow {
                    id: p.id,
                    window_received: 1000,
                    total_received: 2000,
                    ..Default::default()
                })
                .collect(),
            concurrent_tests: 1,
            ..Default::default()
        };
        mangle(&mut r);
        let _ = write_msg(
            &mut s,
            &Msg::Report {
                report: Box::new(r),
            },
        );
        let mut b = [0u8; 16];
        let _ = s.read(&mut b);
    });
    addr
}

// Item 9: the client checks the server's figures before it believes them.
#[test]
fn absurd_server_reports_are_protocol_errors() {
    type Mangle = Box<dyn Fn(&mut SideReport) + Send>;
    let cases: Vec<(&str, Mangle)> = vec![
        ("tiny window", Box::new(|r| r.window_s = 1e-300)),
        ("negative window", Box::new(|r| r.window_s = -1.0)),
        ("huge window", Box::new(|r| r.window_s = 1e9)),
        (
            "window above total",
            Box::new(|r| r.flows[0].window_received = 5000),
        ),
        ("wrong ids", Box::new(|r| r.flows[0].id = 7)),
        ("negative cpu", Box::new(|r| r.cpu.total_pct = -3.0)),
        (
            "absurd bytes",
            Box::new(|r| {
                r.flows[0].window_received = u64::MAX / 2;
                r.flows[0].total_received = u64::MAX / 2;
            }),
        ),
    ];
    for (what, mangle) in cases {
        let addr = fake_server(mangle);
        let cfg = wirespeed_engine::ClientConfig::new(&addr.to_string());
        let r = run_test(&cfg, &short(), &mut |_| {});
        match r {
            Err(EngineError::Protocol(m)) => assert!(m.contains("report"), "{what}: {m}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    // The same fake server with sane figures passes.
    let addr = fake_server(|_| {});
    let cfg = wirespeed_engine::ClientConfig::new(&addr.to_string());
    run_test(&cfg, &short(), &mut |_| {}).expect("a sane report");
}

// Found: during a crr test the server's workers accepted connections on
// the data port and kept those that never sent a preamble until the test
// ended. Now each gets the preamble deadline.
#[test]
fn crr_connections_without_a_preamble_are_closed_at_the_deadline() {
    let srv = TestServer::start(ServerConfig {
        preamble_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    });
    let mut s = handshake(srv.addr, None, "crr").unwrap();
    let spec = TestSpec {
        workload: wirespeed_types::Workload::Crr,
        duration_s: 3.0,
        warmup_s: 0.0,
        ..TestSpec::default()
    };
    let (_token, port) = send_spec(&mut s, &spec);
    write_msg(&mut s, &Msg::Start).unwrap();
    assert!(matches!(recv(&mut s).unwrap(), Msg::Started));
    let t0 = Instant::now();
    let idle: Vec<TcpStream> = (0..20)
        .map(|i| {
            let mut c = TcpStream::connect((srv.addr.ip(), port)).unwrap();
            // Half send part of a preamble.
            if i % 2 == 0 {
                c.write_all(b"WSPD01").unwrap();
            }
            c.set_read_timeout(Some(Duration::from_millis(2500)))
                .unwrap();
            c
        })
        .collect();
    for mut c in idle {
        let mut b = [0u8; 8];
        // EOF or reset: closed by the server.
        assert!(
            !matches!(c.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
        );
    }
    let closed = t0.elapsed();
    assert!(
        closed < Duration::from_millis(1500),
        "closed after {closed:?}"
    );
    write_msg(&mut s, &Msg::Stop).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(matches!(recv(&mut s).unwrap(), Msg::Report { .. }));
}

// Item 1 after the handshake: each message has one deadline as a whole;
// a client that connects its flows and then trickles its start is
// dropped, with its flows, at the idle timeout.
#[test]
fn a_trickled_start_is_dropped_at_the_idle_timeout() {
    let srv = TestServer::start(ServerConfig {
        idle_timeout: Duration::from_secs(1),
        ..ServerConfig::default()
    });
    let mut s = handshake(srv.addr, None, "slow-start").unwrap();
    let (token, port) = send_spec(
        &mut s,
        &TestSpec {
            flows: 4,
            ..short()
        },
    );
    let mut flows = connect_flows(srv.addr.ip(), port, &token, 0..4);
    let mut frame = Vec::new();
    write_msg(&mut frame, &Msg::Start).unwrap();
    let t0 = Instant::now();
    // All but the last byte, one every 200 ms, for as long as it takes.
    let mut i = 0;
    while t0.elapsed() < Duration::from_secs(4) {
        if s.write_all(&frame[i % (frame.len() - 1)..][..1]).is_err() {
            break;
        }
        i += 1;
        let mut b = [0u8; 1];
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        if !matches!(s.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock) {
            break;
        }
    }
    let took = t0.elapsed();
    assert!(took < Duration::from_millis(2000), "held for {took:?}");
    // The flows went with it.
    for f in flows.iter_mut() {
        f.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut b = [0u8; 8];
        assert!(matches!(f.read(&mut b), Ok(0) | Err(_)));
        assert!(
            !matches!(f.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
        );
    }
}

// Found: before authentication a client could make the server buffer a
// 1 MiB frame per connection (64 connections: 64 MiB); hello and auth
// frames are now limited to 4 KiB, refused on their length alone.
#[test]
fn handshake_frames_are_small() {
    let srv = TestServer::start(ServerConfig::default());
    let mut s = raw_connect(srv.addr);
    s.write_all(&CONTROL_MAGIC).unwrap();
    s.write_all(&100_000u32.to_be_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    match read_msg(&mut s) {
        Ok(Msg::Error { code, message }) => {
            assert_eq!(code, "protocol");
            assert!(message.contains("exceeds the limit of 4096"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

// Found: a client that took the only test slot (--max-tests 1) and went
// away before connecting its flows held the slot until the accept
// deadline, so everyone else was told busy for 10 s. It is freed at once.
#[test]
fn a_vanished_client_frees_its_test_slot_at_once() {
    let srv = TestServer::start(ServerConfig {
        max_tests: 1,
        ..ServerConfig::default()
    });
    let mut s = handshake(srv.addr, None, "takes-the-slot").unwrap();
    let _ = send_spec(&mut s, &short());
    drop(s);
    let t0 = Instant::now();
    let mut last = None;
    while t0.elapsed() < Duration::from_secs(3) {
        match srv.run(&short()) {
            Ok(_) => break,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "busy for {:?}: {last:?}",
        t0.elapsed()
    );
}

// Found: every failed handshake wrote a log line, so anyone who reaches
// the port could flood the server's log. Unauthenticated failures are
// now logged at most once a second with a count; probes that close
// without a byte are not logged.
#[test]
fn unauthenticated_floods_cannot_flood_the_log() {
    let (tx, rx) = std::sync::mpsc::channel();
    let srv = TestServer::start(ServerConfig {
        events: Some(tx),
        ..ServerConfig::default()
    });
    for i in 0..40 {
        let mut s = raw_connect(srv.addr);
        if i % 4 != 0 {
            s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            let _ = read_msg(&mut s);
        }
    }
    std::thread::sleep(Duration::from_millis(1100));
    // One more after a second: its line counts the ones left out.
    let mut s = raw_connect(srv.addr);
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let _ = read_msg(&mut s);
    let mut lines = Vec::new();
    while let Ok(ev) = rx.recv_timeout(Duration::from_millis(300)) {
        lines.push(ev.to_string());
    }
    assert!((2..=3).contains(&lines.len()), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("more like it")),
        "{lines:#?}"
    );
}

/// A server of a later release that chose a control protocol this client
/// does not speak: the client refuses before it authenticates, naming
/// both sides and which to upgrade.
#[test]
fn a_server_choosing_a_version_this_client_lacks_is_named() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let future = wirespeed_engine::proto::PROTOCOL_VERSION + 5;
    std::thread::spawn(move || {
        let Some(mut s) = accept_hello(&l) else {
            return;
        };
        let _ = write_msg(
            &mut s,
            &Msg::Challenge {
                nonce: "00".repeat(32),
                auth_required: false,
                version: Some(future),
                server: Some("wirespeed 9.0.0".into()),
            },
        );
        let mut b = [0u8; 16];
        let _ = s.read(&mut b);
    });
    let cfg = wirespeed_engine::ClientConfig::new(&addr.to_string());
    let e = run_test(&cfg, &short(), &mut |_| {})
        .unwrap_err()
        .to_string();
    for want in [
        format!("the server (wirespeed 9.0.0) speaks {future}"),
        "upgrade the client to wirespeed 9.0.0".to_string(),
    ] {
        assert!(e.contains(&want), "{want:?} in {e}");
    }
}
