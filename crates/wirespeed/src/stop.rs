//! Stop signals for the commands that run until stopped (`server`,
//! `agent`, `fleet watch`, `k8s watch in-cluster`): SIGTERM (what
//! Kubernetes and systemd send) or SIGINT (Ctrl-C) sets a flag that the
//! command polls; it then refuses new tests, ends those in flight and
//! exits within about two seconds. A second signal while it stops exits
//! at once with status 130.

use anyhow::{Context, Result};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A flag set by the first SIGTERM or SIGINT.
pub fn on_stop_signals() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        // The conditional exit first: it acts only once the flag is set,
        // that is on the second signal.
        signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone())
            .and_then(|_| signal_hook::flag::register(sig, flag.clone()))
            .with_context(|| format!("install the handler of signal {sig}"))?;
    }
    Ok(flag)
}
