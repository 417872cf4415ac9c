//! What a row measures: its contenders (tool invocations), its table and
//! kind, and the helpers that make them.

use crate::tools::Figures;

/// A tool invocation in one group: one process, or several at once (one
/// per NIC) whose figures add up.
pub(crate) struct Contender {
    pub(crate) label: String,
    pub(crate) procs: Vec<(Vec<String>, &'static str)>,
    pub(crate) parse: fn(&str) -> Result<Figures, String>,
}

impl Contender {
    pub(crate) fn is_wirespeed(&self) -> bool {
        self.label.starts_with("wirespeed")
    }
}

/// Which table a group belongs to.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Table {
    Defaults,
    Equal,
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
    }
}

/// A group's table and settings, what it measures, and its contenders.
pub(crate) type GroupRow = ((Table, String), Kind, Vec<Contender>);

/// The settings line of a row in the equal-settings table.
pub(crate) fn eq(settings: &str) -> (Table, String) {
    (Table::Equal, settings.to_string())
}
