//! The harness's options: runs, duration, groups, `--out`, `--perf`.

/// The "as users run it" batch: each tool's defaults and the equal
/// settings, every thread placed by the scheduler.
pub(crate) const USERS: [&str; 19] = [
    "d-stream1",
    "d-stream4",
    "d-rr",
    "s1-bbr",
    "s1-cubic",
    "s4-bbr",
    "s4-cubic",
    "s4t-bbr",
    "s4t-cubic",
    "skip-rx",
    "nics2",
    "caps",
    "rr14",
    "rr64k",
    "crr",
    "rr80k",
    "udp",
    "udp-gso",
    "udp-rr",
];

/// The pinned batch: the same settings with threads pinned, which
/// explain the unpinned rows.
pub(crate) const PINNED: [&str; 2] = ["s4-bbr-pinned", "rr14-pinned"];

/// The cost curves: flows, threads, concurrent connections, a paced rate.
pub(crate) const CURVES: [&str; 13] = [
    "flows-1",
    "flows-10",
    "flows-100",
    "flows-1000",
    "flows-10000",
    "threads-1",
    "threads-2",
    "threads-4",
    "crr-1",
    "crr-10",
    "crr-100",
    "crr-1000",
    "paced-10g",
];

/// Every group, in the order they run.
pub(crate) fn all_groups() -> impl Iterator<Item = &'static str> {
    USERS.into_iter().chain(PINNED).chain(CURVES)
}

/// The groups a `--groups` item names: a group, or a batch (`users`,
/// `pinned`, `curves`).
fn expand(item: &str) -> Option<Vec<String>> {
    let batch: &[&str] = match item {
        "users" => &USERS,
        "pinned" => &PINNED,
        "curves" => &CURVES,
        g => return all_groups().find(|x| *x == g).map(|x| vec![x.to_string()]),
    };
    Some(batch.iter().map(|g| g.to_string()).collect())
}

/// The harness's options.
pub(crate) struct Opts {
    pub(crate) runs: usize,
    pub(crate) duration: u32,
    pub(crate) groups: Vec<String>,
    pub(crate) out: Option<String>,
    pub(crate) perf: bool,
}

/// Prints the usage line and exits 2.
fn usage() -> ! {
    eprintln!(
        "usage: bench/compare [--runs N (default 5)] [--duration SECS (default 5)] \
         [--groups G,G,... (default users,pinned; batches users, pinned, curves; \
         groups {})] [--out FILE.json] [--perf]",
        all_groups().collect::<Vec<_>>().join(",")
    );
    std::process::exit(2)
}

/// The options from the command line; exits with the usage on bad ones.
pub(crate) fn parse_opts() -> Opts {
    let mut o = Opts {
        runs: 5,
        duration: 5,
        groups: vec!["users".into(), "pinned".into()],
        out: None,
        perf: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--perf" {
            o.perf = true;
            i += 1;
            continue;
        }
        let val = args.get(i + 1).cloned();
        match (args[i].as_str(), val) {
            ("--runs", Some(v)) => o.runs = v.parse().unwrap_or_else(|_| usage()),
            ("--duration", Some(v)) => o.duration = v.parse().unwrap_or_else(|_| usage()),
            ("--groups", Some(v)) => o.groups = v.split(',').map(String::from).collect(),
            ("--out", Some(v)) => o.out = Some(v),
            _ => usage(),
        }
        i += 2;
    }
    if o.runs == 0 || o.duration == 0 {
        usage();
    }
    let mut groups = Vec::new();
    for item in &o.groups {
        match expand(item) {
            Some(v) => groups.extend(v),
            None => {
                eprintln!("unknown group {item}");
                usage();
            }
        }
    }
    o.groups = groups;
    o
}
