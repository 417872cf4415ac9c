//! The crate's one error type.

use std::net::IpAddr;
use thiserror::Error;
use wirespeed_types::{Invalid, Workload};

/// Everything that can go wrong while planning or running an experiment,
/// an optimize search or the demo.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// An experiment file is invalid; the message names the file, line and field.
    #[error("{0}")]
    File(String),
    /// A field of an experiment file is refused; `place` names the file,
    /// line and field (the cause in the message, not a `source`).
    #[error("{place}: {error}")]
    Field {
        /// Where: `in FILE: line L, [[TABLE]] #N field FIELD`.
        place: String,
        /// Why.
        error: Box<crate::experiment::FieldError>,
    },
    /// Bench arguments are invalid (an unknown flag, a missing value, a bad size).
    #[error(transparent)]
    Bench(#[from] CellError),
    /// `wirespeed doctor --peer` was given no address.
    #[error("--peer needs at least one address")]
    NoPeers,
    /// An optimize step needs the host's settings, which are off.
    #[error("host settings are off (--no-host or no rights)")]
    HostOff,
    /// Optimize's state directory holds a journal of earlier changes.
    #[error(
        "{} holds a journal of earlier changes: undo them with `wirespeed tune rollback --state-dir {}` or choose another --state-dir",
        .0.display(),
        .0.display()
    )]
    Journal(std::path::PathBuf),
    /// A step failed; `what` says which. The cause is part of the message,
    /// not a `source`, so a chain printer does not print it twice.
    #[error("{what}: {error}")]
    Failed {
        /// What was being done.
        what: String,
        /// Why it failed.
        error: String,
    },
    /// A size, rate, duration or test description is malformed.
    #[error(transparent)]
    Invalid(#[from] wirespeed_types::Invalid),
    /// A test failed in the engine.
    #[error(transparent)]
    Engine(#[from] wirespeed_engine::EngineError),
    /// Building, changing or removing a lab failed.
    #[error(transparent)]
    Lab(#[from] wirespeed_lab::LabError),
    /// Reading or changing a host failed.
    #[error(transparent)]
    Host(#[from] wirespeed_host::HostError),
    /// SIGINT or SIGTERM asked the run to stop.
    #[error("interrupted")]
    Interrupted,
}

/// Shorthand for this crate's results.
pub type Result<T, E = ExperimentError> = std::result::Result<T, E>;

/// Says what was being done when an error struck (anyhow's `context`,
/// flattened into one message).
pub trait Context<T> {
    /// Wraps the error as [`ExperimentError::Failed`] with `what`.
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: std::fmt::Display> Context<T> for std::result::Result<T, E> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ExperimentError::Failed {
            what: what(),
            error: e.to_string(),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.ok_or_else(|| ExperimentError::Failed {
            what: what(),
            error: "missing".into(),
        })
    }
}

/// An [`ExperimentError::Failed`] from a message.
pub(crate) fn failed(what: impl Into<String>, error: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Failed {
        what: what.into(),
        error: error.to_string(),
    }
}

/// Bench's flags refused: by clap, by a value's parser, or as a
/// combination. Each message is the one `wirespeed bench` prints; no
/// variant has a `source` (the cause is part of the message).
#[derive(Debug, Error)]
pub enum CellError {
    /// clap refused a layer (an unknown flag, a missing or refused value),
    /// rendered on one line.
    #[error("{}", clap_line(.0))]
    Clap(clap::Error),
    /// A flag's value does not parse; `flag` names it ("--timeout").
    #[error("{flag}: {error}")]
    Flag {
        /// The flag, e.g. "-n/--bytes".
        flag: &'static str,
        /// Why its value does not parse.
        error: Invalid,
    },
    /// A value does not parse, in the parser's own words (a size,
    /// duration, path list or CPU list).
    #[error(transparent)]
    Value(Invalid),
    /// A size does not fit 32 bits.
    #[error("size {0} must be below 4 GiB")]
    TooLarge(String),
    /// A size of a `--size` sweep does not fit 32 bits.
    #[error("size must be below 4 GiB")]
    SweepTooLarge(u64),
    /// `--connect-timeout`'s value does not parse.
    #[error("--connect-timeout {value:?}: {error}")]
    ConnectTimeout {
        /// The value given.
        value: String,
        /// Why it does not parse.
        error: Invalid,
    },
    /// `--connect-timeout` is below 1 ms (or not finite).
    #[error("--connect-timeout {0:?}: must be at least 1 ms")]
    ConnectTimeoutShort(String),
    /// `--tos` is not a byte.
    #[error("--tos {0:?}: use a byte 0-255, e.g. 0x10 or 16")]
    Tos(String),
    /// `--dscp` is neither 0-63 nor a standard name.
    #[error("--dscp {0:?}: use 0-63 or a name such as ef, af11..af43, cs0..cs7")]
    Dscp(String),
    /// `-B/--bind` is not an IP address.
    #[error("-B/--bind {0:?}: give the client's IP address (use --path DEV=REMOTE for a device)")]
    Bind(String),
    /// `-B`'s address is not of the family `-4`/`-6` asks for.
    #[error("-B {0} is not of the family -4/-6 asks for")]
    BindFamily(IpAddr),
    /// `--breakdown` with a workload that has no transactions.
    #[error(
        "--breakdown cuts request/response transactions (rr, crr, udp-rr), not {}",
        .0.name()
    )]
    BreakdownWorkload(Workload),
    /// `--breakdown` with `--zerocopy`.
    #[error("--breakdown and --zerocopy both use the socket's error queue; choose one")]
    BreakdownZerocopy,
    /// `--probe-rr` with a workload other than stream.
    #[error("--probe-rr measures latency beside a stream test; rr and crr measure latency already")]
    ProbeRr,
    /// `--loaders` with a bulk workload.
    #[error(
        "--loaders loads the server beside a request/response test (rr, crr, udp-rr), not {}",
        .0.name()
    )]
    LoadersBulk(Workload),
    /// More `--loaders` than the engine runs.
    #[error("--loaders {loaders}: at most {max}")]
    TooManyLoaders {
        /// The count asked for.
        loaders: u32,
        /// The most allowed.
        max: u32,
    },
    /// `--size` with a bulk workload.
    #[error(
        "--size applies to the request/response workloads ({}); use --msg-size for {}",
        transactional_names(),
        .0.name()
    )]
    SizeBulk(Workload),
    /// `--size` with `--request` or `--response`.
    #[error("use either --size or --request/--response")]
    SizeAndRequest,
    /// The `--key-file` cannot be read or is refused.
    #[error("{0}")]
    KeyFile(wirespeed_engine::EngineError),
    /// The spec the flags build is refused by its own checks.
    #[error(transparent)]
    Spec(Invalid),
}

/// The request/response workloads' names, comma-separated.
fn transactional_names() -> String {
    let names: Vec<&str> = wirespeed_types::spec::WORKLOADS
        .iter()
        .filter(|i| i.transactional)
        .map(|i| i.name)
        .collect();
    names.join(", ")
}

/// A clap error as one line: an unknown flag is named as unknown.
fn clap_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let get = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    if e.kind() == ErrorKind::UnknownArgument {
        let arg = get(ContextKind::InvalidArg).unwrap_or_default();
        if !arg.starts_with('-') || arg == "-" {
            return format!(
                "{arg:?} is not a flag: the server address comes from `target`, values follow their flag"
            );
        }
        let tip = get(ContextKind::SuggestedArg)
            .map(|s| format!(", did you mean {s}?"))
            .unwrap_or_default();
        return format!("unknown bench flag {arg}{tip} (`wirespeed bench --help` lists them)");
    }
    let text = e.render().to_string();
    let line = text.lines().next().unwrap_or("");
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}
