//! A thousand agents with two NICs each, on loopback in this process:
//! `fleet watch` sets the fleet on every one (in parts: the fleet's JSON
//! is over the agents' 64 KiB body limit) and probes; then a pairs matrix
//! runs on the fleet the watcher set, and one that sets it again.

mod common;
use common::{KEY, config};
use std::time::{Duration, Instant};
use wirespeed_fleet::agent::HttpLimits;
use wirespeed_fleet::run::FLEET_BODY;
use wirespeed_fleet::{Agent, AgentSpec, Fleet, NicSpec, Pattern, RunOptions, WorkloadSpec};
use wirespeed_types::{TestSpec, Workload};

const AGENTS: usize = 1000;

fn entry(i: usize, a: &Agent) -> AgentSpec {
    AgentSpec {
        name: format!("node-{i:04}"),
        agent_name: Some(format!("node-{i:04}")),
        control: a.control_addr().to_string(),
        http: a.http_addr().to_string(),
        nics: ["eth0", "eth1"]
            .iter()
            .map(|n| NicSpec {
                name: n.to_string(),
                address: "127.0.0.1".parse().unwrap(),
            })
            .collect(),
        ..AgentSpec::default()
    }
}

#[test]
fn a_thousand_agents_with_two_nics_each_get_the_fleet_and_run() {
    wirespeed_engine::raise_fd_limit();
    let t0 = Instant::now();
    let agents: Vec<Agent> = (0..AGENTS)
        .map(|i| {
            // 500 tests and 2,000 runtime threads at once on this
            // machine's two cores starve an agent's runtime past even the
            // default 5 s header deadline (10 of 1,000 runs closed that
            // way in one run); each agent has a host of its own in a
            // real fleet.
            let mut cfg = config(&format!("node-{i:04}"));
            cfg.limits = HttpLimits {
                header_timeout: Duration::from_secs(60),
                ..HttpLimits::default()
            };
            Agent::start(cfg).expect("agent starts")
        })
        .collect();
    eprintln!("{AGENTS} agents up in {:.1} s", t0.elapsed().as_secs_f64());
    let fleet = Fleet {
        agents: agents
            .iter()
            .enumerate()
            .map(|(i, a)| entry(i, a))
            .collect(),
    };
    let bytes = serde_json::to_vec(&fleet).unwrap().len();
    assert!(bytes > 64 * 1024, "{bytes} bytes: no parts needed");
    let parts = wirespeed_fleet::upload::split(&fleet, FLEET_BODY).unwrap();
    eprintln!("the fleet: {bytes} bytes of JSON, {} parts", parts.len());
    watch_sets_the_fleet(&fleet);
    let plan = wirespeed_fleet::plan(&fleet, Pattern::Pairs, 1).unwrap();
    let spec = TestSpec {
        workload: Workload::Rr,
        duration_s: 0.2,
        warmup_s: 0.0,
        ..TestSpec::default()
    };
    let mut opts = RunOptions::new(
        vec![WorkloadSpec {
            label: "rr".into(),
            spec,
        }],
        KEY.to_vec(),
    );
    opts.repeats = 1;
    opts.http_timeout = Duration::from_secs(30);
    // First on the fleet the watcher set: no agent refuses its peer.
    opts.push_fleet = false;
    let r = wirespeed_fleet::run(&fleet, &plan, &opts).unwrap();
    assert!(
        r.tests.iter().all(|t| t.error.is_none()),
        "a peer unknown to an agent: the watcher did not set the fleet"
    );
    opts.push_fleet = true;
    let t1 = Instant::now();
    let r = wirespeed_fleet::run(&fleet, &plan, &opts).unwrap();
    eprintln!(
        "fleet run: {} tests in {} rounds, {:.1} s",
        r.tests.len(),
        r.rounds,
        t1.elapsed().as_secs_f64()
    );
    let down: Vec<_> = r.agents.iter().filter(|a| !a.up).collect();
    assert!(
        down.is_empty(),
        "{} agents down, e.g. {:?}",
        down.len(),
        down.first()
    );
    let failed: Vec<_> = r.tests.iter().filter(|t| t.error.is_some()).collect();
    assert!(
        failed.is_empty(),
        "{} tests failed, e.g. {:?}",
        failed.len(),
        failed.first()
    );
    assert_eq!(r.tests.len(), AGENTS, "500 pairs x 2 NICs");
    // Each agent's server takes up to 0.1 s to see its stop: stop them
    // in 50 groups at once rather than one after another.
    let mut agents = agents;
    std::thread::scope(|s| {
        while !agents.is_empty() {
            let chunk: Vec<Agent> = agents.drain(..agents.len().min(20)).collect();
            s.spawn(move || drop(chunk));
        }
    });
}

/// `fleet watch` for a few seconds with a long probe period (a handful
/// of probes due): every agent takes the fleet, and the probes measure.
fn watch_sets_the_fleet(fleet: &Fleet) {
    use wirespeed_fleet::schedule::Budget;
    use wirespeed_fleet::watch::WatchOptions;
    let dir = std::env::temp_dir().join(format!("ws-scale-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let probe = TestSpec {
        workload: Workload::Rr,
        duration_s: 1.0,
        warmup_s: 0.0,
        bytes: Some(200),
        ..TestSpec::default()
    };
    let mut run = RunOptions::new(Vec::new(), KEY.to_vec());
    run.http_timeout = Duration::from_secs(30);
    let opts = WatchOptions {
        run,
        probes: vec![WorkloadSpec {
            label: "rr".into(),
            spec: probe,
        }],
        bandwidth: WorkloadSpec {
            label: "stream".into(),
            spec: TestSpec::default(),
        },
        budget: Budget {
            probe_period_s: 1800.0,
            ..Budget::default()
        },
        rules: Default::default(),
        history: dir.join("history.db"),
        duration: Some(Duration::from_secs(6)),
        retain: None,
        on_event: None,
        stop: None,
        interrupt: None,
    };
    let t = Instant::now();
    let st = wirespeed_fleet::watch::run_blocking(fleet, &opts, None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fleet watch: the fleet set on {} agents, {} tests stored, {:.1} s",
        st.agents_with_fleet,
        st.tests_stored,
        t.elapsed().as_secs_f64()
    );
    assert_eq!(st.agents_with_fleet, AGENTS as u64);
    assert!(st.tests_stored > 0);
}
