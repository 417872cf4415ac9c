//! One test on the server's side: admission, its flows, start, the
//! window watched for the client's stop, the server's own end, the report.

use super::admission::{Admission, Registry};
use super::answer::{ERROR_WRITE, fail, fail_read, secs};
use super::config::{ServerConfig, ServerEvent, emit};
use super::flows::take_flows;
use crate::client::drain_time;
use crate::error::EngineError;
use crate::proto::{FrameReader, MAX_FRAME, Msg, SideReport, random_bytes, write_msg_until};
use crate::side::{Side, SideSetup, Tick};
use crate::spec::{FlowKind, TestSpec};
use crate::workloads;
use socket2::Socket;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs one test the client specified on its control connection: checks
/// and admits it, takes its flows, runs its window, ends it and reports.
pub(super) fn run_test(
    stream: &TcpStream,
    peer: SocketAddr,
    client: &str,
    spec: TestSpec,
    cfg: &ServerConfig,
    reg: &Registry,
) -> Result<(), EngineError> {
    let fd = stream.as_fd();
    let answer_by = || Instant::now() + cfg.idle_timeout;
    if let Err(e) = spec.validate(&cfg.limits) {
        return Err(fail(stream, "limits", e.to_string()));
    }
    if reg.stopping() {
        return Err(fail(stream, "busy", STOPPING.to_string()));
    }
    let Some(admission) = reg.admit(cfg.max_tests) else {
        return Err(fail(
            stream,
            "busy",
            format!(
                "the server is running its maximum of {} tests; try again later",
                cfg.max_tests
            ),
        ));
    };
    let token: [u8; 16] = random_bytes()?;
    let persistent = spec
        .roster()
        .iter()
        .filter(|p| p.kind != FlowKind::Crr)
        .count();
    let (listener, socks) = take_flows(stream, cfg, &spec, &token, persistent)?;
    let mut frames = FrameReader::new(MAX_FRAME);
    read_start(stream, cfg, &mut frames)?;
    let spec = Arc::new(spec);
    let (listener, joins) = keep_listener(listener, &spec)?;
    let setup = SideSetup {
        spec: spec.clone(),
        client: false,
        socks,
        paths: Vec::new(),
        listener,
        token,
        preamble_timeout: cfg.preamble_timeout,
    };
    let side = Side::start(setup, drain_time(&spec))
        .map_err(|e| fail(stream, "internal", e.to_string()))?;
    write_msg_until(fd, &Msg::Started, answer_by())?;
    // The server's own end of the test: a client that never sends (or
    // trickles) its stop does not keep the workers going past it. The
    // grace grows by 0.1 ms a flow (2 s at 20,000): the client builds its
    // flows after our start, so its window ends that much later.
    let grace = stop_grace(cfg, &spec);
    let hard_end =
        Instant::now() + Duration::from_secs_f64(spec.warmup_s + spec.duration_s) + grace;
    emit(
        cfg,
        ServerEvent::Started {
            id: admission.id,
            peer,
            client: client.to_string(),
            summary: spec.summary(),
        },
    );
    let (window, stop_seen) = match watch_window(&side, &spec, &mut frames, fd, reg) {
        Ok(w) => w,
        Err(e) => {
            drop(side);
            let (code, text) = match &e {
                EngineError::Interrupted(m) => ("interrupted", m.clone()),
                _ => ("aborted", e.to_string()),
            };
            let _ = write_msg_until(fd, &Msg::error(code, text), Instant::now() + ERROR_WRITE);
            return Err(e);
        }
    };
    let side = if stop_seen {
        side
    } else {
        await_stop(side, stream, &mut frames, hard_end, grace)?
    };
    send_report(side, &window, joins, admission, fd, cfg, peer)
}

/// Ends the test: the side's report (the MPTCP listener closed and the
/// admission released once it is made) to the client, then the log's
/// event.
fn send_report(
    side: Side,
    window: &crate::side::Window,
    joins: Option<Socket>,
    admission: Admission<'_>,
    fd: BorrowedFd<'_>,
    cfg: &ServerConfig,
    peer: SocketAddr,
) -> Result<(), EngineError> {
    let mut report: SideReport = side.finish(window);
    drop(joins);
    report.concurrent_tests = admission.peak();
    let id = admission.id;
    drop(admission);
    let bytes = report
        .flows
        .iter()
        .map(|f| f.window_sent + f.window_received)
        .sum();
    write_msg_until(
        fd,
        &Msg::Report {
            report: Box::new(report),
        },
        Instant::now() + cfg.idle_timeout,
    )?;
    emit(cfg, ServerEvent::Finished { id, peer, bytes });
    Ok(())
}

/// Reads the client's start, due within the idle timeout.
fn read_start(
    stream: &TcpStream,
    cfg: &ServerConfig,
    frames: &mut FrameReader,
) -> Result<(), EngineError> {
    let what = format!(
        "the client's start (--idle-timeout {})",
        secs(cfg.idle_timeout)
    );
    match frames
        .read_until(stream.as_fd(), Instant::now() + cfg.idle_timeout, &what)
        .map_err(|e| fail_read(stream, e, false))?
    {
        Msg::Start => Ok(()),
        other => Err(fail(
            stream,
            "protocol",
            format!("expected start, got {}", other.kind()),
        )),
    }
}

/// What becomes of the data listener once every flow is in: the
/// workers' (nonblocking) when the workload accepts mid-test, else kept
/// open for an MPTCP test's joins (the second), else closed.
fn keep_listener(
    listener: Option<Socket>,
    spec: &TestSpec,
) -> Result<(Option<Arc<Socket>>, Option<Socket>), EngineError> {
    // An MPTCP test's extra subflows join (MP_JOIN) through the listener
    // for as long as the test runs: it stays open, never accepted from.
    let mut joins = None;
    let listener = match listener {
        Some(l) if workloads::def(spec.workload).listener.is_some() => {
            l.set_nonblocking(true)
                .map_err(|e| EngineError::io("configure the data listener", e))?;
            Some(Arc::new(l))
        }
        other if spec.mptcp => {
            joins = other;
            None
        }
        // Every flow is in: close the port rather than let it complete
        // handshakes nobody will read for the rest of the test.
        other => {
            drop(other);
            None
        }
    };
    Ok((listener, joins))
}

/// A stopping server (SIGTERM, Ctrl-C) ends its tests with this.
const STOPPING: &str = "the server is stopping (it was sent a stop signal): the test was interrupted; run it again once the server is back";

/// Runs the test's window while watching the control connection for the
/// client's stop and the server for its own; returns the window and
/// whether the client's stop came in it.
fn watch_window(
    side: &Side,
    spec: &TestSpec,
    frames: &mut FrameReader,
    fd: BorrowedFd<'_>,
    reg: &Registry,
) -> Result<(crate::side::Window, bool), EngineError> {
    let mut stop_seen = false;
    let mut control_error: Option<EngineError> = None;
    let window = side.run_window(spec, |_, _| {
        if reg.stopping() {
            control_error = Some(EngineError::Interrupted(STOPPING.into()));
            return Err(EngineError::Interrupted(STOPPING.into()));
        }
        match frames.poll(fd, "the client's stop") {
            Ok(None) => return Ok(Tick::Continue),
            Ok(Some(Msg::Stop)) => {
                stop_seen = true;
                return Ok(Tick::EndNow);
            }
            Ok(Some(other)) => {
                control_error = Some(EngineError::Protocol(format!(
                    "unexpected {} mid-test",
                    other.kind()
                )))
            }
            Err(e) => {
                control_error = Some(EngineError::Protocol(format!(
                    "the client went away mid-test ({e})"
                )))
            }
        }
        Err(EngineError::Protocol(
            "the client went away mid-test".into(),
        ))
    });
    match window {
        Ok(w) => Ok((w, stop_seen)),
        Err(e) => Err(control_error.unwrap_or(e)),
    }
}

/// Waits until `hard_end` for the client's stop after the window; on
/// anything else ends the test (`side` dropped first) and tells the client.
fn await_stop(
    side: Side,
    stream: &TcpStream,
    frames: &mut FrameReader,
    hard_end: Instant,
    grace: Duration,
) -> Result<Side, EngineError> {
    let what = format!(
        "the client's stop (due within {} of the test's end)",
        secs(grace)
    );
    match frames.read_until(stream.as_fd(), hard_end, &what) {
        Ok(Msg::Stop) => Ok(side),
        Ok(other) => {
            drop(side);
            Err(fail(
                stream,
                "protocol",
                format!("expected stop, got {}", other.kind()),
            ))
        }
        Err(EngineError::Timeout(_)) => {
            drop(side);
            Err(fail(
                stream,
                "aborted",
                format!(
                    "no stop from the client within {} of the test's end: the server ended the test",
                    secs(grace)
                ),
            ))
        }
        Err(e) => {
            drop(side);
            Err(fail_read(stream, e, false))
        }
    }
}

/// How long after warm-up plus duration the server waits for the stop.
fn stop_grace(cfg: &ServerConfig, spec: &TestSpec) -> Duration {
    cfg.stop_grace + Duration::from_micros(100 * spec.connections())
}
