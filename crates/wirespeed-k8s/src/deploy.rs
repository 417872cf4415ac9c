//! A deployment: the objects one run applied, in order, so that exactly
//! those are deleted again (also after an error or Ctrl-C). A run's
//! namespace is made by the run unless it exists; an existing one is
//! used as it is (its Pod Security labels are the cluster admin's) and
//! never deleted. The namespace's run lock is held from before the first
//! object is applied until the last one is deleted.

use crate::K8sError;
use crate::cluster;
use crate::lock::{self, RunLock};
use crate::manifests::Object;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::Api;
use std::time::Duration;

/// What a run applied.
#[derive(Debug, Default)]
pub struct Deployment {
    applied: Vec<Object>,
    lock: Option<RunLock>,
    /// What happened on the way that the run should say (a Lease taken over).
    pub notes: Vec<String>,
    /// Set when teardown stopped because the API server was unreachable
    /// (what is left is named in its error, for `k8s cleanup`).
    pub unreachable: bool,
}

/// The Pod Security label that decides admission.
const ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// Namespace `name`'s Pod Security `enforce` label: None when the
/// namespace does not exist, Some(None) when it has no such label.
pub(crate) async fn enforced_level(
    client: &Client,
    name: &str,
) -> Result<Option<Option<String>>, K8sError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = api
        .get_opt(name)
        .await
        .map_err(|e| K8sError::api(format!("get Namespace {name}"), e))?;
    Ok(ns.map(|n| n.metadata.labels.and_then(|l| l.get(ENFORCE).cloned())))
}

/// The refusal of host-network agents in existing namespace `name`,
/// which enforces Pod Security `level`, with the two fixes that work.
pub(crate) fn not_privileged(name: &str, level: &str) -> K8sError {
    K8sError::Invalid(format!(
        "namespace {name} exists and enforces Pod Security level {level}; host-network agents need `privileged`, and wirespeed does not relabel a namespace it did not make: label it (kubectl label namespace {name} {ENFORCE}=privileged) or give the run a new --namespace with --privileged-namespace"
    ))
}

impl Deployment {
    /// An empty deployment.
    pub fn new() -> Deployment {
        Deployment::default()
    }

    /// The objects applied so far, in apply order.
    pub fn objects(&self) -> &[Object] {
        &self.applied
    }

    /// Takes namespace `ns` (the Namespace object the run would make) for
    /// run `holder`: creates it unless it exists, then takes its run
    /// lock. An existing namespace is checked, not changed: when
    /// `privileged` agents (host network) are to run there, it must
    /// enforce Pod Security `privileged` already.
    pub async fn claim_namespace(
        &mut self,
        client: &Client,
        ns: &Object,
        holder: &str,
        privileged: bool,
    ) -> Result<(), K8sError> {
        let name = ns.name().to_string();
        if cluster::create(client, ns).await? {
            self.applied.push(ns.clone());
        } else if privileged {
            let level = enforced_level(client, &name)
                .await?
                .flatten()
                .unwrap_or_else(|| "unset (the cluster default)".into());
            if level != "privileged" {
                return Err(not_privileged(&name, &level));
            }
        }
        let lock = lock::acquire(client, &name, holder).await?;
        let dead = lock.taken_from.clone();
        self.lock = Some(lock);
        if let Some(dead) = dead {
            self.left_by(client, &name, &dead).await;
        }
        Ok(())
    }

    /// This run took the expired Lease of run `dead` over: deletes what
    /// `dead` left in `ns` (by its label), so that this run can apply its
    /// own. What cannot be deleted is said in [`Deployment::notes`]; the
    /// apply then names what is in the way.
    async fn left_by(&mut self, client: &Client, ns: &str, dead: &str) {
        let mut out = crate::cleanup::Cleaned::default();
        let selector = format!("{}={dead}", crate::manifests::RUN_LABEL);
        let r = crate::cleanup::delete_labelled(client, ns, &selector, &mut out).await;
        self.notes.push(format!(
            "took over the expired Lease of run {dead} (killed, or its machine lost); deleted what it left: {}{}",
            if out.deleted.is_empty() {
                "nothing".to_string()
            } else {
                out.deleted.join(", ")
            },
            r.err().map(|e| format!(" (then: {e})")).unwrap_or_default()
        ));
    }

    /// Applies `objs` in order after checking that none exists yet (a
    /// run never takes over objects it did not make). Each applied object
    /// is recorded at once, so a failure half-way still tears down what
    /// was made.
    pub async fn apply(&mut self, client: &Client, objs: &[Object]) -> Result<(), K8sError> {
        for o in objs {
            if cluster::exists(client, o).await? {
                return Err(K8sError::Exists(o.describe()));
            }
        }
        for o in objs {
            // Recorded before the request: a timeout after the server
            // acted must still delete it (deleting an absent object is fine).
            self.applied.push(o.clone());
            cluster::apply(client, o).await?;
        }
        Ok(())
    }

    /// Deletes every applied object, newest first, waiting at most `wait`
    /// for each; the namespace (deleted last) is left Terminating while
    /// its controller empties it. Tries every object; returns what it
    /// deleted (`Kind ns/name`, in deletion order), or names those that
    /// failed.
    pub async fn teardown(
        &mut self,
        client: &Client,
        wait: Duration,
    ) -> Result<Vec<String>, K8sError> {
        let mut failed = Vec::new();
        let mut deleted = Vec::new();
        while let Some(o) = self.applied.pop() {
            if matches!(o, Object::Namespace(_)) {
                self.release(&mut failed).await;
            }
            match cluster::delete(client, &o, wait).await {
                Ok(()) => deleted.push(o.describe()),
                Err(e) if e.api_unreachable() => {
                    failed.push(e.to_string());
                    failed.push(self.left_for_cleanup(o));
                    break;
                }
                Err(e) => failed.push(e.to_string()),
            }
        }
        self.release(&mut failed).await;
        if failed.is_empty() {
            Ok(deleted)
        } else {
            Err(K8sError::Cleanup(format!(
                "{}; deleted: {}",
                failed.join("; "),
                if deleted.is_empty() {
                    "nothing".into()
                } else {
                    deleted.join(", ")
                }
            )))
        }
    }

    /// The API server is unreachable: what is left (`o` and every object
    /// not yet deleted) stays, for `k8s cleanup` to delete by the run's
    /// label once the server is back; the Lease is left to expire.
    fn left_for_cleanup(&mut self, o: Object) -> String {
        self.unreachable = true;
        let mut left = vec![o.describe()];
        left.extend(self.applied.drain(..).rev().map(|o| o.describe()));
        if let Some(l) = self.lock.take() {
            l.abandon();
        }
        format!(
            "the API server is unreachable, so {} stay: `wirespeed k8s cleanup` deletes them by their label once it is back (its Lease expires in {} s)",
            left.join(", "),
            crate::lock::TTL.as_secs()
        )
    }

    /// Gives up the run lock, if held (after the run's objects are gone).
    async fn release(&mut self, failed: &mut Vec<String>) {
        if let Some(l) = self.lock.take()
            && let Err(e) = l.release().await
        {
            failed.push(e.to_string());
        }
    }
}
