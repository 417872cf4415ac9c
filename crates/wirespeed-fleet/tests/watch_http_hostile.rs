//! The watcher's HTTP face (`fleet watch --listen`, the Service of `k8s
//! watch`) under hostile clients on loopback: one source holding many
//! silent connections, another trickling its headers byte by byte, a
//! third sending a huge header; a legitimate client from another source
//! is served at once throughout, and the hostile connections are closed
//! by the limits (per-source displacement, header timeout), not kept.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_fleet::watch::Live;
use wirespeed_fleet::watch_http::{PageFn, serve};

/// A GET from `from`, its status line and how long it took.
fn get(addr: SocketAddr, from: IpAddr, path: &str) -> (String, Duration) {
    let t = Instant::now();
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&SocketAddr::new(from, 0).into()).unwrap();
    sock.connect_timeout(&addr.into(), Duration::from_secs(2))
        .unwrap();
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.lines().next().unwrap_or("").to_string();
    (status, t.elapsed())
}

/// Whether the server closed `s` (EOF or reset) within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn hostile_clients_do_not_deny_the_watcher_page_to_others() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let live = Arc::new(Live::default());
    let stop = Arc::new(tokio::sync::Notify::new());
    let page: PageFn = Arc::new(|_| "<html>page</html>".to_string());
    rt.spawn(serve(l, live.clone(), page, stop.clone()));
    let good: IpAddr = "127.0.0.2".parse().unwrap();
    let (st, _) = get(addr, good, "/healthz");
    assert!(st.contains("200"), "serving: {st}");

    // 100 silent connections from one source (bounded count).
    let mut silent: Vec<TcpStream> = (0..100)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok())
        .collect();
    assert_eq!(silent.len(), 100);
    // One trickling its headers, a byte at a time.
    let mut trickle = TcpStream::connect(addr).unwrap();
    for b in b"GET /metrics HTTP/1.1\r\nX: " {
        let _ = trickle.write_all(&[*b]);
    }
    // One with a 1 MiB header.
    let mut huge = TcpStream::connect(addr).unwrap();
    let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(1 << 20));
    let _ = huge.write_all(big.as_bytes());

    for path in ["/healthz", "/metrics", "/v1/watch", "/"] {
        let (st, took) = get(addr, good, path);
        assert!(st.contains("200"), "{path} beside the hostile ones: {st}");
        assert!(took < Duration::from_secs(2), "{path} took {took:?}");
    }
    // The silent source keeps at most its share: the oldest were displaced.
    let open = silent
        .iter_mut()
        .map(|s| closed_within(s, Duration::from_millis(20)))
        .filter(|c| !c)
        .count();
    assert!(
        open <= 16,
        "{open} silent connections of one source still open"
    );
    assert!(
        closed_within(&mut huge, Duration::from_secs(5)),
        "a 1 MiB header is refused and closed"
    );
    // The header timeout (5 s) closes the trickler however it trickles.
    let t = Instant::now();
    let mut closed = false;
    while t.elapsed() < Duration::from_secs(9) && !closed {
        let _ = trickle.write_all(b"a");
        closed = closed_within(&mut trickle, Duration::from_millis(500));
    }
    assert!(closed, "the trickler is closed by the header timeout");
    let m = get(addr, good, "/metrics").0;
    assert!(m.contains("200"), "{m}");
    stop.notify_waiters();
}
