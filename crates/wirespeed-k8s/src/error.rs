//! The one error type of this crate.

use std::path::{Path, PathBuf};
use thiserror::Error;

/// What can go wrong building manifests or running agents on a cluster.
#[derive(Debug, Error)]
pub enum K8sError {
    /// Bad options (a name Kubernetes would refuse, a selector, a profile).
    #[error("{0}")]
    Invalid(String),
    /// The tune profile could not be loaded.
    #[error(transparent)]
    Profile(#[from] wirespeed_host::HostError),
    /// The kubeconfig could not be read or used. kube's error is in the
    /// message, not a `source`, so it prints once.
    #[error("kubeconfig: {}", config_text(path.as_deref(), context.as_deref(), error))]
    Config {
        /// The kubeconfig file given (`--kubeconfig`), if one was.
        path: Option<PathBuf>,
        /// The context chosen (`--context`), when it was in play.
        context: Option<String>,
        /// kube's error (boxed: it is large and rare).
        error: Box<ConfigError>,
    },
    /// The API server refused or failed a request (`what` says which).
    /// kube's error is in the message, not a `source`, so it prints once.
    #[error("{what}: {error}")]
    Api {
        /// The request, e.g. "apply DaemonSet wirespeed/wirespeed-agent-host".
        what: String,
        /// kube's error (it carries the server's status message).
        error: kube::Error,
    },
    /// An object this run would create already exists.
    #[error(
        "{0} already exists and was not made by this run: not touching it (choose another --namespace)"
    )]
    Exists(String),
    /// Another run holds the namespace's run lock.
    #[error("{0}")]
    Busy(String),
    /// Agents did not become ready, or their addresses could not be found.
    #[error("{0}")]
    Discovery(String),
    /// A DaemonSet's agents cannot become Ready (an image that cannot be
    /// pulled, a crash loop, a node left out for a taint): the message
    /// names pod, node, reason, Kubernetes' message and what to do.
    #[error("{0}")]
    Rollout(String),
    /// Waiting for something took longer than allowed.
    #[error("timed out after {secs} s waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The limit.
        secs: u64,
    },
    /// The run was interrupted (Ctrl-C or SIGTERM); what it made was deleted.
    #[error("interrupted by {0}; the objects this run made were deleted")]
    Interrupted(&'static str),
    /// A run over the agents' HTTP APIs failed (the matrix, the
    /// interference run, the policy probe, the watch); `context` says
    /// which. The fleet's error is in the message, not a `source`, so it
    /// prints once; callers match on it.
    #[error("{context}: {error}")]
    Fleet {
        /// What was being done, e.g. "fleet run: cross-node".
        context: String,
        /// The fleet crate's error.
        error: wirespeed_fleet::FleetError,
    },
    /// Serialising objects failed; the encoder's error is in the message.
    #[error("cannot render the objects: {0}")]
    Render(RenderError),
    /// No random bytes for a fleet key (the OS refused them).
    #[error("no randomness: {0}")]
    Random(getrandom::Error),
    /// An HTTP request to the API server could not be made (`what` names
    /// it); the `http` crate's error is in the message.
    #[error("{what}: {error}")]
    Request {
        /// The request, e.g. "GET /api/v1/...".
        what: String,
        /// Why it could not be built.
        error: http::Error,
    },
    /// Watching an object for a condition failed (`what` names the wait);
    /// kube's error is in the message, printed once.
    #[error("{what}: {error}")]
    Watch {
        /// What was awaited, e.g. "watch DaemonSet ns/name".
        what: String,
        /// kube's watch error.
        error: kube::runtime::wait::Error,
    },
    /// A value of an option is malformed (`what` quotes it); the parser
    /// says what is allowed.
    #[error("{what}: {error}")]
    Value {
        /// The option's value as given (quoted), or the option.
        what: String,
        /// The parser's error.
        error: wirespeed_types::error::Invalid,
    },
    /// Cleanup left objects behind (each named).
    #[error("cleanup incomplete: {0}")]
    Cleanup(String),
    /// A local I/O error (runtime, signals, files); printed once.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
}

impl K8sError {
    /// Whether the API server stayed unreachable through every retry
    /// ([`crate::retry::API_RETRY`]).
    pub fn api_unreachable(&self) -> bool {
        match self {
            K8sError::Api { error, .. } => crate::retry::gave_up(error),
            _ => false,
        }
    }

    /// A fleet error with what was being done.
    pub fn fleet(context: impl Into<String>, error: wirespeed_fleet::FleetError) -> K8sError {
        K8sError::Fleet {
            context: context.into(),
            error,
        }
    }

    /// An API error with what was being asked.
    pub fn api(what: impl Into<String>, error: kube::Error) -> K8sError {
        K8sError::Api {
            what: what.into(),
            error,
        }
    }
}

/// kube's reason a kubeconfig could not be read or used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The kubeconfig file, or its context, could not be read or loaded.
    #[error(transparent)]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// Neither a kubeconfig nor an in-cluster account was found.
    #[error(transparent)]
    Infer(#[from] kube::config::InferConfigError),
    /// The client could not be made from the config (TLS, proxy).
    #[error(transparent)]
    Client(#[from] kube::Error),
    /// A kubeconfig's YAML could not be read.
    #[error(transparent)]
    Yaml(#[from] serde_saphyr::Error),
}

/// Why objects could not be serialised (or built from JSON).
#[derive(Debug, Error)]
pub enum RenderError {
    /// Writing YAML.
    #[error(transparent)]
    Yaml(#[from] serde_saphyr::SerializeError),
    /// Writing or reading JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// `PATH (context "c"): ERROR`, `PATH: ERROR`, `ERROR (context "c")` or
/// `ERROR`: where the kubeconfig came from, then kube's error.
fn config_text(path: Option<&Path>, context: Option<&str>, error: &ConfigError) -> String {
    let ctx = context
        .map(|c| format!(" (context {c:?})"))
        .unwrap_or_default();
    match path {
        Some(p) => format!("{}{ctx}: {error}", p.display()),
        None => format!("{error}{ctx}"),
    }
}
