//! Talking to the API server: a client from a kubeconfig, server-side
//! apply of the typed objects, and deleting them again (waiting until they
//! are gone).

use crate::K8sError;
use crate::error::ConfigError;
use crate::manifests::Object;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::path::Path;
use std::time::Duration;

/// The field manager of wirespeed's server-side applies.
pub const FIELD_MANAGER: &str = "wirespeed";

/// The kubeconfig context every client of this process uses (kubectl's
/// global `--context`), set once at start.
static CONTEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Makes every client of this process use the kubeconfig context `name`
/// instead of the kubeconfig's current one (`--context`). Only the first
/// call counts.
pub fn use_context(name: &str) {
    let _ = CONTEXT.set(name.to_string());
}

/// The kubeconfig options for the context in force.
fn config_options() -> KubeConfigOptions {
    KubeConfigOptions {
        context: CONTEXT.get().cloned(),
        ..KubeConfigOptions::default()
    }
}

/// A kubeconfig error: of file `path` (if given) read with context
/// `context` (if it was in play).
fn config_error(
    path: Option<&Path>,
    context: Option<&String>,
    error: impl Into<ConfigError>,
) -> K8sError {
    K8sError::Config {
        path: path.map(Path::to_path_buf),
        context: context.cloned(),
        error: Box::new(error.into()),
    }
}

/// A client from `kubeconfig`, or as kubectl finds one ($KUBECONFIG,
/// ~/.kube/config, or the in-cluster service account).
pub async fn client(kubeconfig: Option<&Path>) -> Result<Client, K8sError> {
    client_with(kubeconfig, crate::retry::API_RETRY).await
}

/// [`client`] whose requests are retried for at most `budget` after
/// their first failure.
pub async fn client_with(kubeconfig: Option<&Path>, budget: Duration) -> Result<Client, K8sError> {
    let config = match kubeconfig {
        Some(p) => {
            let kc = Kubeconfig::read_from(p).map_err(|e| config_error(Some(p), None, e))?;
            Config::from_custom_kubeconfig(kc, &config_options())
                .await
                .map_err(|e| config_error(Some(p), CONTEXT.get(), e))?
        }
        // A chosen context lives in a kubeconfig ($KUBECONFIG or
        // ~/.kube/config), never in the in-cluster account.
        None if CONTEXT.get().is_some() => Config::from_kubeconfig(&config_options())
            .await
            .map_err(|e| config_error(None, CONTEXT.get(), e))?,
        None => Config::infer()
            .await
            .map_err(|e| config_error(None, None, e))?,
    };
    client_from(config, budget)
}

/// A client of `config` whose requests are retried for at most `budget`
/// after their first failure ([`crate::retry::ApiRetry`]; kube's own
/// retry is off). Call it inside the runtime that will use the client:
/// the client's request queue runs there.
pub fn client_from(mut config: Config, budget: Duration) -> Result<Client, K8sError> {
    config.default_retry = false;
    let base =
        kube::client::ClientBuilder::try_from(config).map_err(|e| config_error(None, None, e))?;
    // The retry layer sends a request again, so the service under it must
    // be cloneable: the buffer makes it so (it only hands requests on;
    // they still run side by side).
    Ok(base
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&tower::retry::RetryLayer::new(crate::retry::ApiRetry::new(
            budget,
        )))
        .build())
}

/// Trait bundle of an object this crate applies.
trait Obj: Resource + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static {}
impl<K> Obj for K where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

fn namespaced<K>(client: &Client, o: &K) -> Api<K>
where
    K: Obj + Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    let ns = o.meta().namespace.clone().unwrap_or_default();
    Api::namespaced(client.clone(), &ns)
}

fn cluster_wide<K>(client: &Client, _o: &K) -> Api<K>
where
    K: Obj + Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>,
{
    Api::all(client.clone())
}

/// Runs `$body` with `$api` (an `Api<K>` of the object's kind and scope)
/// and `$o` (the typed object).
macro_rules! with_api {
    ($client:expr, $obj:expr, |$api:ident, $o:ident| $body:expr) => {
        match $obj {
            Object::Namespace($o) => {
                let $api = cluster_wide($client, $o);
                $body
            }
            Object::DeviceClass($o) => {
                let $api = cluster_wide($client, $o);
                $body
            }
            Object::ServiceAccount($o) => {
                let $api = namespaced($client, $o);
                $body
            }
            Object::Role($o) => {
                let $api = namespaced($client, $o);
                $body
            }
            Object::RoleBinding($o) => {
                let $api = namespaced($client, $o);
                $body
            }
            Object::Secret($o) => {
                let $api = namespaced($client, $o);
                $body
            }
            Object::ResourceClaimTemplate($o) => {
                let $o = &**$o;
                let $api = namespaced($client, $o);
                $body
            }
            Object::DaemonSet($o) => {
                let $o = &**$o;
                let $api = namespaced($client, $o);
                $body
            }
            Object::Service($o) => {
                let $o = &**$o;
                let $api = namespaced($client, $o);
                $body
            }
            Object::EndpointSlice($o) => {
                let $o = &**$o;
                let $api = namespaced($client, $o);
                $body
            }
            Object::NetworkPolicy($o) => {
                let $o = &**$o;
                let $api = namespaced($client, $o);
                $body
            }
            Object::Deployment($o) => {
                let $o = &**$o;
                let $api = namespaced($client, $o);
                $body
            }
        }
    };
}

/// The runtime a blocking entry point (`run_blocking`, the watcher's)
/// runs its calls on: two workers.
pub fn runtime() -> Result<tokio::runtime::Runtime, K8sError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| K8sError::Io {
            what: "start the runtime".into(),
            error: e,
        })
}

/// Server-side applies `obj` (field manager "wirespeed", strict field
/// validation, no force: a field another manager set since is a
/// conflict, reported, not overwritten); returns its uid.
pub async fn apply(client: &Client, obj: &Object) -> Result<String, K8sError> {
    let what = format!("apply {}", obj.describe());
    let pp = PatchParams::apply(FIELD_MANAGER).validation_strict();
    let name = obj.name().to_string();
    let meta = with_api!(client, obj, |api, o| api
        .patch(&name, &pp, &Patch::Apply(o))
        .await
        .map(|r| r.meta().clone()))
    .map_err(|e| K8sError::api(&what, e))?;
    Ok(meta.uid.unwrap_or_default())
}

/// Creates `obj` (a plain create, not an apply): Ok(false) when it
/// already exists, so of two callers exactly one gets Ok(true).
pub async fn create(client: &Client, obj: &Object) -> Result<bool, K8sError> {
    let pp = kube::api::PostParams::default();
    let r = with_api!(client, obj, |api, o| api.create(&pp, o).await.map(|_| ()));
    match r {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(K8sError::api(format!("create {}", obj.describe()), e)),
    }
}

/// The ClusterIP the API server gave the Service `ns/name`.
pub async fn cluster_ip(
    client: &Client,
    ns: &str,
    name: &str,
) -> Result<std::net::IpAddr, K8sError> {
    let api: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client.clone(), ns);
    let s = api
        .get(name)
        .await
        .map_err(|e| K8sError::api(format!("get Service {ns}/{name}"), e))?;
    let ip = s.spec.and_then(|s| s.cluster_ip).unwrap_or_default();
    ip.parse().map_err(|_| {
        K8sError::Discovery(format!(
            "Service {ns}/{name} has no ClusterIP ({ip:?}): the cluster gives none"
        ))
    })
}

/// Whether `obj` exists on the server (by kind, namespace and name).
pub async fn exists(client: &Client, obj: &Object) -> Result<bool, K8sError> {
    let name = obj.name().to_string();
    let found = with_api!(client, obj, |api, _o| api
        .get_opt(&name)
        .await
        .map(|r| r.is_some()))
    .map_err(|e| K8sError::api(format!("get {}", obj.describe()), e))?;
    Ok(found)
}

/// Deletes `obj` (background propagation: the garbage collector removes
/// what it owns, such as a DaemonSet's pods) and, unless it is a
/// namespace, waits at most `wait` for it to be gone (polling `get`). A namespace is left
/// Terminating while its controller empties it. Absent objects are fine.
pub async fn delete(client: &Client, obj: &Object, wait: Duration) -> Result<(), K8sError> {
    let name = obj.name().to_string();
    let what = obj.describe();
    let dp = DeleteParams::background();
    let is_ns = matches!(obj, Object::Namespace(_));
    let r: Result<(), K8sError> = with_api!(client, obj, |api, _o| {
        let uid = match api.delete(&name, &dp).await {
            Ok(either) => either.left().and_then(|o| o.meta().uid.clone()),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => return Err(K8sError::api(format!("delete {what}"), e)),
        };
        match uid {
            Some(uid) if !is_ns => {
                let deadline = tokio::time::Instant::now() + wait;
                // Polled with `get`, not watched: the runner's ClusterRole
                // then needs no list/watch on what it deletes (secrets).
                loop {
                    let now = api
                        .get_opt(&name)
                        .await
                        .map_err(|e| K8sError::api(format!("get {what} while deleting it"), e))?;
                    if now.is_none_or(|o| o.meta().uid.as_deref() != Some(uid.as_str())) {
                        return Ok(());
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(K8sError::Timeout {
                            what: format!("{what} to be deleted"),
                            secs: wait.as_secs(),
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
            _ => Ok(()),
        }
    });
    r
}
