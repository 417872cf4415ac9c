//! One side of a running test, client or server: its flows spread over
//! worker threads, the warm-up and measured window, and its [`SideReport`].

use crate::cpu::CpuSnapshot;
use crate::error::EngineError;
use crate::harness::{
    Control, Counters, Flow, FlowEnd, LATENCY_BUCKETS, PHASE_MEASURE, PHASE_STOP, ThreadLatency,
    WorkerOut, interval_latency, new_hist,
};
use crate::proto::{SideFlow, SideReport};
use crate::result::{IntervalSample, LatencySummary, finite};
use crate::sockets::ResolvedPath;
use crate::spec::{FlowPlan, TestSpec};
use crate::worker::spawn_worker;
use crate::workloads::{self, FlowArgs, ListenerArgs};
use hdrhistogram::Histogram;
use socket2::Socket;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What a side needs to start its workers.
pub struct SideSetup {
    /// The test.
    pub spec: Arc<TestSpec>,
    /// Client (true) or server.
    pub client: bool,
    /// Connected (TCP) or registered (UDP) sockets by roster id (None
    /// for crr slots).
    pub socks: Vec<Option<Socket>>,
    /// Client: resolved paths for crr slots.
    pub paths: Vec<ResolvedPath>,
    /// Server: the data listener crr workers accept on.
    pub listener: Option<Arc<Socket>>,
    /// The test's token.
    pub token: [u8; 16],
    /// Server: how long a crr connection may take to send its preamble.
    pub preamble_timeout: Duration,
}

/// Counter readings per roster flow: (sent, received, transactions).
pub type Sample = Vec<(u64, u64, u64)>;

/// The measured window's marks.
#[derive(Debug, Clone)]
pub struct Window {
    /// Counters when measuring began.
    pub start: Sample,
    /// Counters when it ended.
    pub end: Sample,
    /// Window length, seconds.
    pub secs: f64,
    /// Unix time measuring began.
    pub started_unix: f64,
    /// CPU at start and end.
    cpu: (CpuSnapshot, CpuSnapshot),
}

/// Every counter of a side at one instant, for interval samples.
#[derive(Debug, Clone)]
pub struct Mark {
    /// When it was read.
    pub at: Instant,
    /// Counters per roster flow.
    pub flows: Sample,
    /// rr/crr latency bucket counts, summed over workers.
    pub rr: Vec<u64>,
    /// Probe latency bucket counts, summed over workers.
    pub probe: Vec<u64>,
}

impl Mark {
    /// The interval sample from `prev` to this mark, timed from `begin`
    /// (the warm-up's start) less `warmup_s`: seconds into the window.
    pub fn since(&self, prev: &Mark, begin: Instant, warmup_s: f64) -> IntervalSample {
        let t_s = self.at.duration_since(begin).as_secs_f64() - warmup_s;
        let len = self.at.duration_since(prev.at).as_secs_f64();
        let rate = |n: u64| finite(n as f64 / len);
        let d: Vec<(u64, u64)> = self
            .flows
            .iter()
            .zip(&prev.flows)
            .map(|(a, b)| {
                (
                    (a.0 + a.1).saturating_sub(b.0 + b.1),
                    a.2.saturating_sub(b.2),
                )
            })
            .collect();
        let bytes: u64 = d.iter().map(|x| x.0).sum();
        let trans: u64 = d.iter().map(|x| x.1).sum();
        let diff = |a: &[u64], b: &[u64]| -> Vec<u64> {
            a.iter().zip(b).map(|(x, y)| x.saturating_sub(*y)).collect()
        };
        IntervalSample {
            t_s: finite(t_s),
            len_s: len,
            bps: rate(bytes * 8),
            tps: rate(trans),
            flow_bps: d.iter().map(|x| rate(x.0 * 8)).collect(),
            flow_tps: if trans > 0 {
                d.iter().map(|x| rate(x.1)).collect()
            } else {
                Vec::new()
            },
            latency: interval_latency(&diff(&self.rr, &prev.rr)),
            probe_latency: interval_latency(&diff(&self.probe, &prev.probe)),
        }
    }
}

/// Whether the timeline goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// Keep going.
    Continue,
    /// End the window now (the peer stopped early).
    EndNow,
}

/// A running side.
pub struct Side {
    /// Phase and abort flags shared with the workers.
    pub ctl: Arc<Control>,
    handles: Vec<JoinHandle<WorkerOut>>,
    counters: Arc<Vec<Arc<Counters>>>,
    lat: Vec<Arc<ThreadLatency>>,
    roster: Vec<FlowPlan>,
    client: bool,
    notes: Vec<String>,
    /// A crr server's timestamps (`--breakdown`), kept across connections.
    shared_stamps: Option<Arc<crate::timestamps::SharedStamps>>,
    /// The I/O engine the test asked for.
    io: crate::spec::IoEngine,
}

/// Time between timeline checks.
const TICK: Duration = Duration::from_millis(50);

/// Time between checks of a byte-count end (-n/-k): 1 ms is 2.5 MB at
/// 20 Gbit/s (the fleet watcher's probes end by count, and what runs on
/// past it counts against their budget).
pub const BYTES_TICK: Duration = Duration::from_millis(1);

/// Bytes a side has moved over every flow, sent plus received.
fn moved(s: &Sample) -> u64 {
    s.iter().map(|f| f.0.saturating_add(f.1)).sum()
}

impl Side {
    /// Builds every flow and starts the worker threads.
    pub fn start(mut setup: SideSetup, drain: Duration) -> Result<Side, EngineError> {
        let spec = setup.spec.clone();
        let roster = spec.roster();
        let counters: Arc<Vec<Arc<Counters>>> =
            Arc::new(roster.iter().map(|_| Arc::default()).collect());
        let threads = spec.total_threads() as usize;
        let mut lists: Vec<Vec<Box<dyn Flow>>> = (0..threads).map(|_| Vec::new()).collect();
        let mut notes = Vec::new();
        for plan in &roster {
            let def = workloads::def_for(spec.workload, plan);
            let args = FlowArgs {
                plan: *plan,
                sock: setup.socks.get_mut(plan.id as usize).and_then(Option::take),
                path: setup.paths.get(plan.path as usize),
                counters: counters[plan.id as usize].clone(),
                spec: &spec,
                token: setup.token,
                client: setup.client,
                notes: &mut notes,
            };
            let flow = if setup.client {
                (def.client)(args)?
            } else {
                match (def.server)(args)? {
                    Some(f) => f,
                    None => continue,
                }
            };
            lists[plan.thread as usize].push(flow);
        }
        let listener = workloads::def(spec.workload).listener;
        let shared_stamps = (spec.breakdown && setup.listener.is_some())
            .then(|| Arc::new(crate::timestamps::SharedStamps::new(roster.len())));
        if let (Some(l), Some(make)) = (&setup.listener, listener) {
            for list in lists
                .iter_mut()
                .take(spec.threads.min(spec.flows).max(1) as usize)
            {
                list.push(make(ListenerArgs {
                    listener: l.clone(),
                    token: setup.token,
                    counters: counters.clone(),
                    preamble_timeout: setup.preamble_timeout,
                    stamps: shared_stamps.clone(),
                }));
            }
        }
        let cpus = if setup.client {
            &spec.client_cpus
        } else {
            &spec.server_cpus
        };
        let ctl = Control::new(drain);
        let mut side = Side {
            ctl: ctl.clone(),
            handles: Vec::new(),
            counters,
            lat: Vec::new(),
            roster,
            client: setup.client,
            notes,
            shared_stamps,
            io: spec.io,
        };
        let who = if setup.client {
            "ws-client"
        } else {
            "ws-server"
        };
        for (i, flows) in lists.into_iter().enumerate() {
            if flows.is_empty() {
                continue;
            }
            let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            let lat = Arc::new(ThreadLatency::default());
            side.lat.push(lat.clone());
            let name = format!("{who}-{i}");
            match spawn_worker(name, flows, spec.clone(), ctl.clone(), cpu, lat) {
                Ok(h) => side.handles.push(h),
                Err(e) => {
                    side.abort();
                    return Err(EngineError::io("start a worker thread", e));
                }
            }
        }
        Ok(side)
    }

    /// Reads every flow's counters.
    pub fn sample(&self) -> Sample {
        self.counters.iter().map(|c| c.read()).collect()
    }

    /// Reads every counter and latency bucket now.
    pub fn mark(&self) -> Mark {
        let mut rr = vec![0; LATENCY_BUCKETS];
        let mut probe = vec![0; LATENCY_BUCKETS];
        for l in &self.lat {
            l.rr.add_to(&mut rr);
            l.probe.add_to(&mut probe);
        }
        Mark {
            at: Instant::now(),
            flows: self.sample(),
            rr,
            probe,
        }
    }

    /// Runs warm-up then the measured window; `tick` runs every 50 ms.
    /// Flows keep moving data afterwards until [`Side::finish`].
    pub fn run_window(
        &self,
        spec: &TestSpec,
        mut tick: impl FnMut(&Side, Instant) -> Result<Tick, EngineError>,
    ) -> Result<Window, EngineError> {
        let begin = Instant::now();
        let warm_end = begin + Duration::from_secs_f64(spec.warmup_s);
        self.wait_until(warm_end, TICK, &mut tick)?;
        let start = self.sample();
        let cpu0 = CpuSnapshot::take();
        let t0 = Instant::now();
        let started_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        self.ctl.phase.store(PHASE_MEASURE, Ordering::Release);
        let until = t0 + Duration::from_secs_f64(spec.duration_s);
        match spec.bytes {
            None => self.wait_until(until, TICK, &mut tick)?,
            // -n/-k: the window also ends once this side has moved the
            // bytes; checked often, so it overshoots by little.
            Some(n) => {
                let base = moved(&start);
                self.wait_until(until, BYTES_TICK, &mut |side: &Side, now| {
                    if moved(&side.sample()).saturating_sub(base) >= n {
                        return Ok(Tick::EndNow);
                    }
                    tick(side, now)
                })?
            }
        }
        let end = self.sample();
        let cpu1 = CpuSnapshot::take();
        let secs = t0.elapsed().as_secs_f64();
        // Traffic goes on until `finish`: the server must not stop its
        // senders before the client's window, which ends a little later.
        Ok(Window {
            start,
            end,
            secs,
            started_unix,
            cpu: (cpu0, cpu1),
        })
    }

    fn wait_until(
        &self,
        until: Instant,
        step: Duration,
        tick: &mut impl FnMut(&Side, Instant) -> Result<Tick, EngineError>,
    ) -> Result<(), EngineError> {
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            std::thread::sleep((until - now).min(step));
            if tick(self, Instant::now())? == Tick::EndNow {
                return Ok(());
            }
            if self.ctl.running.load(Ordering::SeqCst) == 0 && !self.handles.is_empty() {
                return Err(EngineError::Protocol(
                    "every flow closed before the test ended: the peer went away".into(),
                ));
            }
        }
    }

    /// Marks the window over before the peer is told to stop, so a flow
    /// that meets the peer's close first does not count it as a fault.
    pub fn ending(&self) {
        self.ctl.ending.store(true, Ordering::Release);
    }

    /// Stops the workers at once, without draining.
    pub fn abort(&mut self) {
        self.ctl.abort.store(true, Ordering::Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }

    /// Stops (if not yet), joins the workers and builds this side's report.
    pub fn finish(mut self, w: &Window) -> SideReport {
        self.ctl.phase.store(PHASE_STOP, Ordering::Release);
        let mut hist = new_hist();
        let mut probe = new_hist();
        let mut ends: Vec<FlowEnd> = vec![FlowEnd::default(); self.roster.len()];
        let mut per_thread = Vec::new();
        let mut per_thread_wait = Vec::new();
        let mut notes = std::mem::take(&mut self.notes);
        let mut forced = 0;
        let (mut zc_done, mut zc_copied) = (0, 0);
        // io_uring only if every worker ran it.
        let mut io = self.io;
        for h in self.handles.drain(..) {
            let Ok(out) = h.join() else {
                notes.push("a worker thread panicked".into());
                continue;
            };
            let _ = hist.add(&out.hist);
            let _ = probe.add(&out.probe);
            per_thread.push(out.cpu_pct());
            per_thread_wait.extend(out.wait_pct());
            for e in out.ends {
                if let Some(slot) = ends.get_mut(e.id as usize) {
                    *slot = e;
                }
            }
            forced += out.forced;
            if out.io != self.io {
                io = out.io;
            }
            zc_done += out.zc.completions;
            zc_copied += out.zc.copied;
            for n in out.notes {
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
        }
        if forced > 0 {
            notes.push(format!(
                "{forced} flows did not close within the drain time and were closed by force"
            ));
        }
        if zc_copied > 0 {
            notes.push(format!(
                "zerocopy: the kernel copied {zc_copied} of {zc_done} sends (it always does over loopback and veth)"
            ));
        }
        if let Some(n) = rx_zerocopy_note(&ends) {
            notes.push(n);
        }
        let totals = self.sample();
        let flows = self
            .roster
            .iter()
            .map(|p| {
                let i = p.id as usize;
                let (a, b, t) = (w.start[i], w.end[i], totals[i]);
                SideFlow {
                    id: p.id,
                    window_sent: b.0.saturating_sub(a.0),
                    window_received: b.1.saturating_sub(a.1),
                    total_sent: t.0,
                    total_received: t.1,
                    transactions: b.2.saturating_sub(a.2),
                    tcp_info: ends[i].tcp_info.clone(),
                    udp: ends[i].udp.clone(),
                    rx_zerocopy: ends[i].rx_zerocopy.clone(),
                }
            })
            .collect();
        let mut cpu = w.cpu.0.usage_until(&w.cpu.1);
        cpu.per_thread_pct = per_thread;
        cpu.per_thread_wait_pct = per_thread_wait;
        SideReport {
            window_s: w.secs,
            flows,
            cpu,
            concurrent_tests: 1,
            latency: if self.client { summarize(&hist) } else { None },
            probe_latency: if self.client { summarize(&probe) } else { None },
            notes,
            congestion_control: String::new(),
            stamps: ends
                .iter()
                .filter_map(|e| e.stamps.clone())
                .chain(self.shared_stamps.iter().flat_map(|s| s.report()))
                .collect(),
            io_engine: Some(io),
        }
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        if !self.handles.is_empty() {
            self.abort();
        }
    }
}

/// Percentiles of a latency histogram (ns) in microseconds; None when empty.
pub fn summarize(h: &Histogram<u64>) -> Option<LatencySummary> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Some(LatencySummary {
        count: h.len(),
        min_us: us(h.min()),
        mean_us: crate::result::finite(h.mean() / 1000.0),
        stddev_us: crate::result::finite(h.stdev() / 1000.0),
        p50_us: us(h.value_at_quantile(0.50)),
        p90_us: us(h.value_at_quantile(0.90)),
        p99_us: us(h.value_at_quantile(0.99)),
        p999_us: us(h.value_at_quantile(0.999)),
        max_us: us(h.max()),
    })
}

/// `--rx-zerocopy`: says what share the kernel mapped when it copied much
/// of it, and what it needs to map more.
fn rx_zerocopy_note(ends: &[FlowEnd]) -> Option<String> {
    let (mut mapped, mut copied) = (0u64, 0u64);
    for z in ends.iter().filter_map(|e| e.rx_zerocopy.as_ref()) {
        if z.fallback.is_some() {
            return None; // the fallback's own note says why
        }
        mapped += z.mapped_bytes;
        copied += z.copied_bytes;
    }
    let all = mapped + copied;
    if all == 0 || mapped as f64 >= 0.9 * all as f64 {
        return None;
    }
    Some(format!(
        "rx-zerocopy: the kernel mapped {:.1}% of the bytes received and copied the rest; it maps only whole order-0 pages: an MSS that is a multiple of 4096 (IPv4 with timestamps: MTU 4096*k + 52), header split on a NIC, and over veth or loopback a --zerocopy sender",
        mapped as f64 * 100.0 / all as f64
    ))
}
