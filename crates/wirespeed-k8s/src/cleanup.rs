//! `wirespeed k8s cleanup`: deletes what runs that did not end left
//! behind (a run SIGKILLed, or its machine gone), found by the label
//! every object of a run carries ([`RUN_LABEL`]). A run still alive (its
//! Lease renewed within `lock::TTL`) is left alone unless forced.

use crate::K8sError;
use crate::cluster;
use crate::lock::{self, LEASE};
use crate::manifests::RUN_LABEL;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams};
use std::path::Path;

/// What to clean up.
#[derive(Debug, Clone, Default)]
pub struct Cleanup {
    /// Only this run's objects (its id, the label's value).
    pub run: Option<String>,
    /// Only in this namespace (one a run made, or an existing one a run
    /// was given).
    pub namespace: Option<String>,
    /// Also runs whose Lease is still renewed.
    pub force: bool,
}

/// What was deleted, and what was left because its run is alive.
#[derive(Debug, Clone, Default)]
pub struct Cleaned {
    /// `Kind namespace/name` of each object deleted.
    pub deleted: Vec<String>,
    /// Each namespace left alone, with its run and the Lease's age.
    pub alive: Vec<String>,
}

/// Runs [`cleanup`] on its own runtime.
pub fn cleanup_blocking(kubeconfig: Option<&Path>, c: &Cleanup) -> Result<Cleaned, K8sError> {
    cluster::runtime()?.block_on(async {
        let client = cluster::client(kubeconfig).await?;
        cleanup(&client, c).await
    })
}

/// Deletes the namespaces runs made and the labelled objects runs put in
/// existing namespaces, skipping (and naming) runs still alive.
pub async fn cleanup(client: &Client, c: &Cleanup) -> Result<Cleaned, K8sError> {
    let selector = match &c.run {
        Some(id) => format!("{RUN_LABEL}={id}"),
        None => RUN_LABEL.to_string(),
    };
    let mut out = Cleaned::default();
    let made = made_namespaces(client, &selector, c.namespace.as_deref()).await?;
    for ns in &made {
        if alive(client, ns, c.force, &mut out).await? {
            continue;
        }
        let api: Api<Namespace> = Api::all(client.clone());
        match api.delete(ns, &DeleteParams::background()).await {
            Ok(_) => out.deleted.push(format!("Namespace {ns}")),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(K8sError::api(format!("delete Namespace {ns}"), e)),
        }
    }
    if let Some(ns) = c
        .namespace
        .as_deref()
        .filter(|n| !made.iter().any(|m| m == n))
        && !alive(client, ns, c.force, &mut out).await?
    {
        delete_labelled(client, ns, &selector, &mut out).await?;
    }
    Ok(out)
}

/// The namespaces runs made (they carry the run label), or only `only`.
async fn made_namespaces(
    client: &Client,
    selector: &str,
    only: Option<&str>,
) -> Result<Vec<String>, K8sError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(|e| K8sError::api(format!("list namespaces labelled {selector}"), e))?;
    // One already being deleted (Terminating) is on its way.
    Ok(list
        .items
        .into_iter()
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .filter_map(|n| n.metadata.name)
        .filter(|n| only.is_none_or(|o| o == n))
        .collect())
}

/// Whether the run holding `ns`'s Lease is alive; noted in `out` when
/// it is and not `force`d (then it is left alone).
async fn alive(
    client: &Client,
    ns: &str,
    force: bool,
    out: &mut Cleaned,
) -> Result<bool, K8sError> {
    let Some((holder, age, expired)) = lock::holder(client, ns).await? else {
        return Ok(false);
    };
    if expired || force {
        let api: Api<Lease> = Api::namespaced(client.clone(), ns);
        if api.delete(LEASE, &DeleteParams::default()).await.is_ok() {
            out.deleted.push(format!("Lease {ns}/{LEASE}"));
        }
        return Ok(false);
    }
    out.alive.push(format!(
        "{ns}: run {holder} renewed its Lease {LEASE} {age} s ago (it is alive; it expires {} s after the last renewal; --force deletes it anyway)",
        lock::TTL.as_secs()
    ));
    Ok(true)
}

/// Deletes the objects labelled `selector` in `ns`, kind by kind (what a
/// run puts in a namespace it was given).
pub(crate) async fn delete_labelled(
    client: &Client,
    ns: &str,
    selector: &str,
    out: &mut Cleaned,
) -> Result<(), K8sError> {
    let lp = ListParams::default().labels(selector);
    delete_kind::<DaemonSet>(client, ns, &lp, out).await?;
    delete_kind::<Deployment>(client, ns, &lp, out).await?;
    delete_kind::<Service>(client, ns, &lp, out).await?;
    delete_kind::<EndpointSlice>(client, ns, &lp, out).await?;
    delete_kind::<NetworkPolicy>(client, ns, &lp, out).await?;
    delete_kind::<ResourceClaimTemplate>(client, ns, &lp, out).await?;
    delete_kind::<RoleBinding>(client, ns, &lp, out).await?;
    delete_kind::<Role>(client, ns, &lp, out).await?;
    delete_kind::<ServiceAccount>(client, ns, &lp, out).await?;
    delete_kind::<Secret>(client, ns, &lp, out).await
}

/// Deletes every object of kind `K` in `ns` that `lp` selects.
async fn delete_kind<K>(
    client: &Client,
    ns: &str,
    lp: &ListParams,
    out: &mut Cleaned,
) -> Result<(), K8sError>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let kind = K::kind(&());
    let list = api
        .list(lp)
        .await
        .map_err(|e| K8sError::api(format!("list {kind} in {ns}"), e))?;
    for o in list.items {
        let Some(name) = o.meta().name.clone() else {
            continue;
        };
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => out.deleted.push(format!("{kind} {ns}/{name}")),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(K8sError::api(format!("delete {kind} {ns}/{name}"), e)),
        }
    }
    Ok(())
}
