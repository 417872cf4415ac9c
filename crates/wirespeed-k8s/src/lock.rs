//! One run per namespace at a time: a run holds the Lease [`LEASE`] in
//! its namespace from before it applies anything until its teardown is
//! done. The Lease is created (not applied), so of two runs that start
//! together the API server lets exactly one create it; the other reads
//! who holds it and stops before it touches anything. The holder renews
//! it every third of [`TTL`]; a Lease not renewed within [`TTL`] (its run
//! was killed) is taken over, with the resourceVersion as precondition
//! so that again only one run wins.

use crate::K8sError;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use std::time::Duration;

/// The Lease's name.
pub const LEASE: &str = "wirespeed-run";
/// How long a Lease holds without renewal.
pub const TTL: Duration = Duration::from_secs(60);

/// A held run lock; renewed in the background until [`RunLock::release`].
#[derive(Debug)]
pub struct RunLock {
    api: Api<Lease>,
    holder: String,
    renew: tokio::task::JoinHandle<()>,
    /// The run whose expired Lease this one took over, if it did.
    pub taken_from: Option<String>,
}

fn lease(ns: &str, holder: &str, rv: Option<String>) -> Lease {
    let now = MicroTime(Timestamp::now());
    Lease {
        metadata: ObjectMeta {
            name: Some(LEASE.into()),
            namespace: Some(ns.into()),
            resource_version: rv,
            labels: Some(
                [(
                    crate::manifests::MANAGED_BY.0.to_string(),
                    crate::manifests::MANAGED_BY.1.to_string(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(TTL.as_secs() as i32),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            ..LeaseSpec::default()
        }),
    }
}

/// Who holds `l` and whether that has expired: (holder, seconds since
/// the last renewal, expired).
fn state(l: &Lease) -> (String, i64, bool) {
    let spec = l.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.unwrap_or_default();
    let ttl = i64::from(spec.lease_duration_seconds.unwrap_or(0));
    let age = spec
        .renew_time
        .map(|t| Timestamp::now().as_second() - t.0.as_second())
        .unwrap_or(i64::MAX / 2);
    let expired = holder.is_empty() || age > ttl;
    (holder, age, expired)
}

/// Who holds the Lease of namespace `ns`, seconds since its last
/// renewal and whether that has expired; None without a Lease.
pub async fn holder(client: &Client, ns: &str) -> Result<Option<(String, i64, bool)>, K8sError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), ns);
    let l = api
        .get_opt(LEASE)
        .await
        .map_err(|e| K8sError::api(format!("read Lease {ns}/{LEASE}"), e))?;
    Ok(l.as_ref().map(state))
}

fn busy(ns: &str, holder: &str, age: i64) -> K8sError {
    K8sError::Busy(format!(
        "namespace {ns} is in use by run {holder} (its Lease {LEASE} was renewed {age} s ago); wait for it to end, or give this run another --namespace"
    ))
}

/// Takes the lock of namespace `ns` for run `holder`, or says who has it.
pub async fn acquire(client: &Client, ns: &str, holder: &str) -> Result<RunLock, K8sError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), ns);
    let what = format!("create Lease {ns}/{LEASE} (the run lock)");
    let taken_from = match api
        .create(&PostParams::default(), &lease(ns, holder, None))
        .await
    {
        Ok(_) => None,
        Err(kube::Error::Api(s)) if s.code == 409 => Some(take_over(&api, ns, holder).await?),
        Err(e) => return Err(K8sError::api(what, e)),
    };
    let renew = tokio::spawn(renew_loop(api.clone(), ns.to_string(), holder.to_string()));
    Ok(RunLock {
        api,
        holder: holder.to_string(),
        renew,
        taken_from,
    })
}

/// The Lease exists: take it only if it has expired, and only if nobody
/// changed it since it was read; the run it was taken from.
async fn take_over(api: &Api<Lease>, ns: &str, holder: &str) -> Result<String, K8sError> {
    let cur = api
        .get(LEASE)
        .await
        .map_err(|e| K8sError::api(format!("get Lease {ns}/{LEASE}"), e))?;
    let (who, age, expired) = state(&cur);
    if !expired {
        return Err(busy(ns, &who, age));
    }
    let rv = cur.metadata.resource_version.clone();
    match api
        .replace(LEASE, &PostParams::default(), &lease(ns, holder, rv))
        .await
    {
        Ok(_) => Ok(who),
        Err(kube::Error::Api(s)) if s.code == 409 => Err(busy(ns, "another run", 0)),
        Err(e) => Err(K8sError::api(
            format!("take over the expired Lease {ns}/{LEASE} of run {who}"),
            e,
        )),
    }
}

async fn renew_loop(api: Api<Lease>, ns: String, holder: String) {
    loop {
        tokio::time::sleep(TTL / 3).await;
        let Ok(cur) = api.get(LEASE).await else {
            continue;
        };
        if state(&cur).0 != holder {
            return;
        }
        let mut l = lease(&ns, &holder, cur.metadata.resource_version.clone());
        if let (Some(s), Some(old)) = (l.spec.as_mut(), cur.spec) {
            s.acquire_time = old.acquire_time;
        }
        let _ = api.replace(LEASE, &PostParams::default(), &l).await;
    }
}

impl RunLock {
    /// Stops renewing and leaves the Lease to expire (the API server is
    /// out of reach, so it cannot be deleted).
    pub fn abandon(self) {
        self.renew.abort();
    }

    /// Stops renewing and deletes the Lease if this run still holds it.
    pub async fn release(self) -> Result<(), K8sError> {
        self.renew.abort();
        let cur = match self.api.get_opt(LEASE).await {
            Ok(Some(l)) => l,
            Ok(None) | Err(kube::Error::Api(_)) => return Ok(()),
            Err(e) => return Err(K8sError::api(format!("get Lease {LEASE}"), e)),
        };
        if state(&cur).0 != self.holder {
            return Ok(());
        }
        let dp = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                resource_version: cur.metadata.resource_version,
                uid: None,
            }),
            ..DeleteParams::default()
        };
        match self.api.delete(LEASE, &dp).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
            Err(e) => Err(K8sError::api(format!("delete Lease {LEASE}"), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewed_lease_is_held_and_a_stale_or_empty_one_is_free() {
        let l = lease("ns", "run-a", None);
        let (who, age, expired) = state(&l);
        assert_eq!(who, "run-a");
        assert!(age <= 1 && !expired);
        let mut old = l.clone();
        let t = Timestamp::now() - jiff_secs(TTL.as_secs() as i64 + 5);
        old.spec.as_mut().unwrap().renew_time = Some(MicroTime(t));
        assert!(state(&old).2);
        let mut none = l;
        none.spec.as_mut().unwrap().holder_identity = None;
        assert!(state(&none).2);
        let e = busy("ns", "run-a", 3).to_string();
        assert!(e.contains("run-a") && e.contains("--namespace"), "{e}");
    }

    fn jiff_secs(s: i64) -> k8s_openapi::jiff::SignedDuration {
        k8s_openapi::jiff::SignedDuration::from_secs(s)
    }
}
