//! The one error type of this crate.

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
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Config(String),
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
    /// Serialising objects failed.
    #[error("cannot render the objects: {0}")]
    Render(String),
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
