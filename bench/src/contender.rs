//! What a row measures: its contenders (tool invocations), its table and
//! kind, and the helpers that make them.

use crate::tools::Figures;

/// A tool invocation in one group: one process, or several at once (one
/// per NIC) whose figures add up.
pub(crate) struct Contender {
    pub(crate) label: String,
    pub(crate) procs: Vec<(Vec<String>, &'static str)>,
    pub(crate) parse: fn(&str) -> Result<Figures, String>,
    /// Servers started in host `b` for each run and gone after it
    /// (neper's servers serve one test and exit).
    pub(crate) fresh: Vec<Fresh>,
}

/// A server started for one run: its name (what `procs` refer to), argv,
/// and the port that says it is ready.
#[derive(Clone)]
pub(crate) struct Fresh {
    pub(crate) name: &'static str,
    pub(crate) argv: Vec<String>,
    pub(crate) port: u16,
}

impl Contender {
    pub(crate) fn is_wirespeed(&self) -> bool {
        self.label.starts_with("wirespeed")
    }
    /// A bare C program making only the system calls (bench/probe): the
    /// kernel's floor for the row, not a peer tool.
    pub(crate) fn is_floor(&self) -> bool {
        self.label.starts_with("C floor")
    }
}

/// Which table a group belongs to.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Table {
    /// Each tool's plain command, unpinned.
    Defaults,
    /// Equal settings, unpinned: the scheduler places every thread.
    Equal,
    /// Equal settings with every thread pinned: explains, claims nothing.
    Pinned,
    /// A point of a cost curve (flows, threads, connections, paced rate).
    Curve,
}

/// What a group measures.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Stream,
    Rr,
}

/// A row of a table: contenders run in turn; the first is the wirespeed
/// figure the row's claim rests on.
pub(crate) struct Group {
    pub(crate) name: &'static str,
    pub(crate) table: Table,
    pub(crate) kind: Kind,
    /// The settings every contender shares, or why a row has no peer.
    pub(crate) settings: String,
    pub(crate) contenders: Vec<Contender>,
    /// Flows per contender, for memory per flow.
    pub(crate) flows: u32,
}

/// `v` as owned strings (an argv).
pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A contender of one process.
pub(crate) fn one(
    label: &str,
    argv: Vec<String>,
    parse: fn(&str) -> Result<Figures, String>,
    server: &'static str,
) -> Contender {
    Contender {
        label: label.into(),
        procs: vec![(argv, server)],
        parse,
        fresh: Vec::new(),
    }
}

/// A contender of one client process and a server started for its run
/// (`server`, listening on `port`), as neper runs.
pub(crate) fn with_fresh(
    label: &str,
    argv: Vec<String>,
    parse: fn(&str) -> Result<Figures, String>,
    server: Vec<String>,
    port: u16,
) -> Contender {
    let mut c = one(label, argv, parse, "fresh");
    c.fresh.push(Fresh {
        name: "fresh",
        argv: server,
        port,
    });
    c
}

/// A group's table and settings, what it measures, and its contenders.
pub(crate) type GroupRow = ((Table, String), Kind, Vec<Contender>);

/// The settings line of a row in the equal-settings table.
pub(crate) fn eq(settings: &str) -> (Table, String) {
    (Table::Equal, settings.to_string())
}
