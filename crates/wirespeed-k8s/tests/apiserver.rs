//! wirespeed-k8s against a real kube-apiserver with etcd (k8s/testenv):
//! the manifests of every network mode are accepted by server-side apply
//! (DRA types included), the RBAC is as narrow as claimed, discovery reads
//! the agents' addresses the way a cluster reports them, and teardown
//! deletes exactly what was applied. No kubelet or controllers run: the
//! test plays them (tests/common, k8s/testenv/README.md).

mod common;

use common::{FakeNode, TestEnv, play_daemonset};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaimTemplate};
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::time::Duration;
use wirespeed_k8s::manifests::{self, Network, NicSelector, Options};
use wirespeed_k8s::{Deployment, K8sError, discover};

fn key() -> Vec<u8> {
    manifests::generate_key().unwrap()
}

fn tpu() -> Option<(String, wirespeed_host::profiles::Profile)> {
    Some((
        "tpu-multinic".into(),
        wirespeed_host::profiles::load("tpu-multinic").unwrap(),
    ))
}

async fn rv<K>(api: &Api<K>, name: &str) -> String
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get(name)
        .await
        .unwrap()
        .meta()
        .resource_version
        .clone()
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn manifests_of_every_network_are_accepted_by_server_side_apply() {
    let Some(env) = TestEnv::start("manifests", None) else {
        return;
    };
    let client = env.client().await.unwrap();
    let sets: [(&str, Vec<Network>); 4] = [
        ("ws-host", vec![Network::Host]),
        ("ws-pod", vec![Network::Pod]),
        ("ws-dra", vec![Network::Dra]),
        ("ws-all", Network::ALL.to_vec()),
    ];
    for (ns, nets) in sets {
        let mut o = Options::new(nets.clone(), ns, &key());
        o.privileged_namespace = nets.contains(&Network::Host);
        o.profile = tpu();
        o.nics = 2;
        // Pinned to two nodes, every taint tolerated, with resources: what
        // `k8s run` writes once it chose the nodes.
        o.node_names = Some(vec!["node-a".into(), "node-b".into()]);
        o.tolerate_all = true;
        o.requests.insert("cpu".into(), "100m".into());
        o.limits.insert("memory".into(), "256Mi".into());
        let mut objs = shared_class_apart(&client, manifests::build(&o).unwrap()).await;
        objs.extend(manifests::service(
            &o,
            "wirespeed-pod-0",
            "10.0.0.7".parse().unwrap(),
        ));
        let mut d = Deployment::new();
        d.apply(&client, &objs)
            .await
            .unwrap_or_else(|e| panic!("{ns}: {e}"));
        // Applying the same objects again changes nothing.
        let dss: Api<DaemonSet> = Api::namespaced(client.clone(), ns);
        let first = rv(&dss, &nets[0].daemonset_name()).await;
        for obj in &objs {
            wirespeed_k8s::cluster::apply(&client, obj).await.unwrap();
        }
        assert_eq!(first, rv(&dss, &nets[0].daemonset_name()).await, "{ns}");
        // And a second run may not take them over.
        let again = Deployment::new().apply(&client, &objs).await;
        assert!(matches!(again, Err(K8sError::Exists(_))), "{again:?}");
        for n in &nets {
            let ds = dss.get(&n.daemonset_name()).await.unwrap();
            let spec = ds.spec.unwrap().template.spec.unwrap();
            assert_eq!(spec.host_network == Some(true), *n == Network::Host);
            // No init step: a profile's sysctls go into the pod's
            // securityContext.sysctls (only those the run planned).
            assert!(spec.init_containers.is_none(), "{ns} {n}");
            assert_eq!(
                spec.resource_claims.is_some(),
                *n == Network::Dra,
                "{ns} {n}"
            );
        }
        if nets.contains(&Network::Dra) {
            let rcts: Api<ResourceClaimTemplate> = Api::namespaced(client.clone(), ns);
            let t = rcts.get(manifests::CLAIM_TEMPLATE).await.unwrap();
            let dev = t.spec.spec.devices.unwrap();
            let config = dev.config.unwrap();
            let params = &config[0].opaque.as_ref().unwrap().parameters.0;
            assert_eq!(params["interface"]["mtu"], 8896, "{params}");
            assert_eq!(params["interface"]["gsoIPv4MaxSize"], 65536, "{params}");
            assert_eq!(
                params["ethtool"]["privateFlags"]["enable-max-rx-buffer-size"], true,
                "{params}"
            );
            let req = &dev.requests.unwrap()[0];
            assert_eq!(req.exactly.as_ref().unwrap().count, Some(2));
            let classes: Api<DeviceClass> = Api::all(client.clone());
            classes.get(&o.device_class_name()).await.unwrap();
        }
        // The Secret holds the key the options carry.
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        let s = secrets.get(manifests::KEY_SECRET).await.unwrap();
        assert_eq!(s.data.unwrap()[manifests::KEY_ENTRY].0, o.key, "{ns}");
    }

    // A CEL selector the API server cannot compile is refused with the
    // compiler's message, and nothing of that set is half-applied beyond
    // what the deployment recorded (teardown removes it).
    let mut o = Options::new(vec![Network::Dra], "ws-badcel", &key());
    o.nic_selector = NicSelector::Cel("device.driver ==".into());
    let mut d = Deployment::new();
    let objs = shared_class_apart(&client, manifests::build(&o).unwrap()).await;
    let err = d.apply(&client, &objs).await.unwrap_err().to_string();
    assert!(err.contains("compilation failed"), "{err}");
    d.teardown(&client, Duration::from_secs(30)).await.unwrap();
    let rcts: Api<ResourceClaimTemplate> = Api::namespaced(client.clone(), "ws-badcel");
    assert!(
        rcts.get_opt(manifests::CLAIM_TEMPLATE)
            .await
            .unwrap()
            .is_none()
    );
    // The shared DeviceClass stays: no run deletes it.
    let classes: Api<DeviceClass> = Api::all(client.clone());
    assert!(
        classes
            .get_opt(&o.device_class_name())
            .await
            .unwrap()
            .is_some()
    );
}

/// Applies the shared DeviceClass apart, as `dra::prepare` does (no
/// run's deployment owns it), and returns the other objects.
async fn shared_class_apart(
    client: &Client,
    objs: Vec<manifests::Object>,
) -> Vec<manifests::Object> {
    for c in objs.iter().filter(|x| x.kind() == "DeviceClass") {
        assert_eq!(c.name(), wirespeed_k8s::dra::SHARED_DEVICE_CLASS);
        assert!(
            c.meta()
                .labels
                .as_ref()
                .unwrap()
                .get(manifests::RUN_LABEL)
                .is_none()
        );
        wirespeed_k8s::cluster::apply(client, c).await.unwrap();
    }
    objs.into_iter()
        .filter(|x| x.kind() != "DeviceClass")
        .collect()
}

/// A client authenticated as `sa` in `ns` with a fresh service-account token.
async fn client_as(env: &TestEnv, admin: &Client, ns: &str, sa: &str) -> Client {
    let token = wirespeed_k8s::testkit::token_for(admin, ns, sa)
        .await
        .unwrap();
    assert!(!token.is_empty(), "a token of {ns}/{sa}");
    let kc = Kubeconfig::read_from(&env.kubeconfig).unwrap();
    let mut cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    cfg.auth_info = kube::config::AuthInfo {
        token: Some(token.into()),
        ..kube::config::AuthInfo::default()
    };
    Client::try_from(cfg).unwrap()
}

fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> bool {
    matches!(r, Err(kube::Error::Api(s)) if s.code == 403)
}

#[tokio::test(flavor = "current_thread")]
async fn discovery_finds_every_networks_agents_and_teardown_removes_the_run() {
    let Some(env) = TestEnv::start("discover", None) else {
        return;
    };
    let client = env.client().await.unwrap();
    let ns = "ws-run";
    let mut o = Options::new(Network::ALL.to_vec(), ns, &key());
    o.privileged_namespace = true;
    o.profile = tpu();
    o.run_id = Some("t1".into());
    let objs = manifests::build(&o).unwrap();
    let mut d = Deployment::new();
    d.apply(&client, &objs).await.unwrap();

    // Before any agent is Ready, discovery waits and then times out.
    let early = discover(&client, ns, Network::Pod, Duration::from_millis(500)).await;
    assert!(matches!(early, Err(K8sError::Timeout { .. })), "{early:?}");

    let nodes: Vec<FakeNode> = (1..=3)
        .map(|i| FakeNode {
            name: format!("node-{i}"),
            host_ip: format!("192.168.50.{i}"),
            pod_ip: format!("10.244.{i}.7"),
            nics: vec![
                ("eth1".into(), format!("10.10.1.{i}/24")),
                ("eth2".into(), format!("10.10.2.{i}/24")),
            ],
        })
        .collect();
    for n in Network::ALL {
        play_daemonset(&client, ns, &n.daemonset_name(), &nodes)
            .await
            .unwrap();
    }
    let wait = Duration::from_secs(20);
    let host = discover(&client, ns, Network::Host, wait).await.unwrap();
    let pod = discover(&client, ns, Network::Pod, wait).await.unwrap();
    let dra = discover(&client, ns, Network::Dra, wait).await.unwrap();
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(host[i].node, n.name);
        assert_eq!(host[i].control.to_string(), n.host_ip);
        assert_eq!(pod[i].control.to_string(), n.pod_ip);
        assert_eq!(pod[i].nics.len(), 1);
        assert_eq!(dra[i].control.to_string(), n.pod_ip);
        let got: Vec<(String, String)> = dra[i]
            .nics
            .iter()
            .map(|x| (x.name.clone().unwrap(), x.addr.to_string()))
            .collect();
        let want: Vec<(String, String)> = n
            .nics
            .iter()
            .map(|(d, c)| (d.clone(), c.split('/').next().unwrap().to_string()))
            .collect();
        assert_eq!(got, want);
    }

    // The runner's service account reads pods and claims here, nothing
    // else: no secrets, no other namespace.
    let runner = client_as(&env, &client, ns, manifests::RUNNER_SA).await;
    let rp: Api<Pod> = Api::namespaced(runner.clone(), ns);
    assert_eq!(
        rp.list(&ListParams::default()).await.unwrap().items.len(),
        9
    );
    let rs: Api<Secret> = Api::namespaced(runner.clone(), ns);
    assert!(forbidden(rs.list(&ListParams::default()).await));
    let other: Api<Pod> = Api::namespaced(runner.clone(), "default");
    assert!(forbidden(other.list(&ListParams::default()).await));
    let nsapi: Api<Namespace> = Api::all(runner.clone());
    assert!(forbidden(nsapi.delete(ns, &Default::default()).await));
    // Discovery itself works with that narrow account.
    let again = discover(&runner, ns, Network::Dra, wait).await.unwrap();
    assert_eq!(again, dra);

    // Teardown deletes exactly what was applied; the namespace is left
    // Terminating (no namespace controller here to empty it).
    d.teardown(&client, Duration::from_secs(30)).await.unwrap();
    for obj in &objs {
        let gone = !wirespeed_k8s::cluster::exists(&client, obj).await.unwrap();
        let terminating = match obj {
            manifests::Object::Namespace(_) => {
                let nsapi: Api<Namespace> = Api::all(client.clone());
                nsapi
                    .get_opt(ns)
                    .await
                    .unwrap()
                    .is_none_or(|n| n.metadata.deletion_timestamp.is_some())
            }
            _ => false,
        };
        assert!(gone || terminating, "{} left behind", obj.describe());
    }
}
