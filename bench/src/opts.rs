//! The harness's options: runs, duration, groups, `--out`, `--perf`.

/// Every group, in the order they run.
pub(crate) const GROUPS: [&str; 18] = [
    "d-stream1",
    "d-stream4",
    "d-rr",
    "s1-bbr",
    "s1-cubic",
    "s4-bbr",
    "s4-cubic",
    "skip-rx",
    "nics2",
    "caps",
    "rr14",
    "rr14-pinned",
    "rr64k",
    "crr",
    "rr80k",
    "udp",
    "udp-gso",
    "udp-rr",
];

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
         [--groups G,G,... (default all: {})] [--out FILE.json] [--perf]",
        GROUPS.join(",")
    );
    std::process::exit(2)
}

/// The options from the command line; exits with the usage on bad ones.
pub(crate) fn parse_opts() -> Opts {
    let mut o = Opts {
        runs: 5,
        duration: 5,
        groups: GROUPS.map(String::from).to_vec(),
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
    if let Some(g) = o.groups.iter().find(|g| !GROUPS.contains(&g.as_str())) {
        eprintln!("unknown group {g}");
        usage();
    }
    o
}
