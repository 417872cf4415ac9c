//! A worker thread: pinned where asked, it runs its flows on the harness's
//! epoll loop, or on the io_uring loop ([`crate::uring`]) when the test
//! asks for it and the kernel allows, and hands back its figures.

use crate::harness::{
    Control, Flow, IoBuf, PHASE_WARMUP, Slab, ThreadLatency, ThreadState, WorkerOut, event_loop,
    io_len, new_hist, set_busy_poll,
};
use crate::spec::{IoEngine, TestSpec};
use crate::sys::{self, Epoll, ZcDrain};
use std::collections::BinaryHeap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Spawns one worker thread running `flows` until the test stops; it
/// records latencies into `lat` too.
pub fn spawn_worker(
    name: String,
    flows: Vec<Box<dyn Flow>>,
    spec: Arc<TestSpec>,
    ctl: Arc<Control>,
    cpu: Option<usize>,
    lat: Arc<ThreadLatency>,
) -> io::Result<std::thread::JoinHandle<WorkerOut>> {
    ctl.running.fetch_add(1, Ordering::SeqCst);
    let c2 = ctl.clone();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let out = worker_main(flows, &spec, &c2, cpu, lat);
            c2.running.fetch_sub(1, Ordering::SeqCst);
            out
        })
        .inspect_err(|_| {
            ctl.running.fetch_sub(1, Ordering::SeqCst);
        })
}

fn worker_main(
    flows: Vec<Box<dyn Flow>>,
    spec: &TestSpec,
    ctl: &Control,
    cpu: Option<usize>,
    lat: Arc<ThreadLatency>,
) -> WorkerOut {
    let mut notes = Vec::new();
    if let Some(c) = cpu
        && let Err(e) = sys::pin_thread(c)
    {
        notes.push(format!("could not pin a worker to CPU {c}: {e}"));
    }
    let mut out = WorkerOut {
        hist: new_hist(),
        probe: new_hist(),
        zc: ZcDrain::default(),
        cpu_window_us: 0,
        wait_window_ns: None,
        window_s: 0.0,
        ends: Vec::new(),
        forced: 0,
        notes,
        io: IoEngine::Epoll,
    };
    let epoll = match Epoll::new() {
        Ok(e) => e,
        Err(e) => {
            out.notes
                .push(format!("worker could not create epoll: {e}"));
            return out;
        }
    };
    set_busy_poll(&epoll, spec, &mut out.notes);
    let io_len = io_len(spec);
    let mut ts = ThreadState {
        epoll: &epoll,
        ctl,
        seen_phase: PHASE_WARMUP,
        solo: flows.len() == 1,
        spec,
        tx: IoBuf::new(io_len),
        rx: IoBuf::new(io_len),
        measuring: false,
        stopping: false,
        hist: new_hist(),
        probe: new_hist(),
        lat,
        zc: ZcDrain::default(),
        spawned: Vec::new(),
        notes: std::mem::take(&mut out.notes),
        flows: 0,
        timers: BinaryHeap::new(),
    };
    let mut slab = Slab::with_capacity(flows.len());
    let measure_start = match crate::uring::open(spec, &flows, &mut ts.notes) {
        Some(ring) => {
            out.io = IoEngine::Uring;
            crate::uring::run(ring, flows, &mut slab, &mut ts, ctl, &mut out)
        }
        None => {
            for f in flows {
                slab.insert(&mut ts, f);
            }
            event_loop(&mut slab, &mut ts, &epoll, ctl, &mut out)
        }
    };
    if !ts.stopping
        && let Some(m) = measure_start
    {
        m.close(&mut out);
    }
    slab.finish_all();
    out.ends = slab.ends;
    out.hist = ts.hist;
    out.probe = ts.probe;
    out.zc = ts.zc;
    out.notes = ts.notes;
    out
}
