//! A deployment: the objects one run applied, in order, so that exactly
//! those are deleted again (also after an error or Ctrl-C).

use crate::K8sError;
use crate::cluster;
use crate::manifests::Object;
use kube::Client;
use std::time::Duration;

/// What a run applied.
#[derive(Debug, Default)]
pub struct Deployment {
    applied: Vec<Object>,
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
            match cluster::delete(client, &o, wait).await {
                Ok(()) => deleted.push(o.describe()),
                Err(e) => failed.push(e.to_string()),
            }
        }
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
}
