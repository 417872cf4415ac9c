//! The in-cluster runner's objects (`k8s manifests --runner`) against a
//! real kube-apiserver with etcd (k8s/testenv): accepted by server-side
//! apply, the Job's pod meets the `restricted` Pod Security level, and the
//! runner's service account can make, read, reach and delete a whole run
//! (RBAC's escalation check included: it creates a Role) and no more.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use std::time::Duration;
use wirespeed_k8s::manifests::{self, Network, Options, RUNNER_SA};
use wirespeed_k8s::testkit::TestEnv;
use wirespeed_k8s::{Deployment, runner_job, testkit};

const RUNNER_NS: &str = "ws-runner";

fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> bool {
    matches!(r, Err(kube::Error::Api(s)) if s.code == 403)
}

/// A client of the runner's service account.
async fn runner_client(env: &TestEnv, admin: &Client) -> Client {
    let token = testkit::token_for(admin, RUNNER_NS, RUNNER_SA)
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(format!("wirespeed-runner-kc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kc = dir.join("kubeconfig");
    testkit::kubeconfig_with_token(&env.kubeconfig, &token, &kc).unwrap();
    let c = wirespeed_k8s::cluster::client(Some(&kc)).await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    c
}

/// A pod from the Job's template, as the Job controller would make it.
async fn pod_of_job(admin: &Client) -> Result<Pod, kube::Error> {
    let jobs: Api<Job> = Api::namespaced(admin.clone(), RUNNER_NS);
    let j = jobs.get(runner_job::RUNNER_JOB).await?;
    let tpl = j.spec.unwrap().template;
    let mut meta = tpl.metadata.unwrap_or_default();
    meta.name = Some("wirespeed-run-x1".into());
    let pods: Api<Pod> = Api::namespaced(admin.clone(), RUNNER_NS);
    pods.create(
        &PostParams::default(),
        &Pod {
            metadata: meta,
            spec: tpl.spec,
            status: None,
        },
    )
    .await
}

/// GET, POST and PUT through a pod's proxy: 404 (no such pod) means the
/// request was authorized; 403 that it was not.
async fn proxy_codes(c: &Client, ns: &str) -> Vec<u16> {
    let mut codes = Vec::new();
    for m in ["GET", "POST", "PUT"] {
        let req = http::Request::builder()
            .method(m)
            .uri(format!(
                "/api/v1/namespaces/{ns}/pods/nobody:5380/proxy/healthz"
            ))
            .body(kube::client::Body::empty())
            .unwrap();
        codes.push(c.send(req).await.unwrap().status().as_u16());
    }
    codes
}

#[tokio::test(flavor = "current_thread")]
async fn the_runner_account_can_make_reach_and_delete_a_run_and_no_more() {
    let Some(env) = TestEnv::start("runner", None) else {
        return;
    };
    let admin = env.client().await.unwrap();
    // Pod and dra only: host mode would need a privileged namespace, and
    // the point is that `restricted` admits the Job's pod.
    let mut o = Options::new(
        vec![Network::Pod, Network::Dra],
        RUNNER_NS,
        b"0123456789abcdef0123",
    );
    o.image = "registry.example/wirespeed:1".into();
    o.tolerations = vec![manifests::parse_toleration("dedicated=gpu:NoSchedule").unwrap()];
    let objs = runner_job::build(&o, &["-d".into(), "5s".into()]).unwrap();
    testkit::apply_runner(&admin, &objs).await.unwrap();
    // Applying again changes nothing; the role is what needs() says.
    testkit::apply_runner(&admin, &objs).await.unwrap();
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let role = roles.get(runner_job::RUNNER_ROLE).await.unwrap();
    assert_eq!(
        role.rules.unwrap().len(),
        runner_job::needs(&o.networks).len()
    );
    // Pod Security "restricted" admits the Job's pod.
    let pod = pod_of_job(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    let args = pod.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap()
        .join(" ");
    assert!(
        args.starts_with("k8s run --network pod,dra --image registry.example/wirespeed:1"),
        "{args}"
    );
    assert!(
        args.contains("--toleration dedicated=gpu:NoSchedule") && args.ends_with("-d 5s"),
        "{args}"
    );

    // As the runner: a whole run's objects (a Role among them), with a
    // toleration the server accepts.
    let rc = runner_client(&env, &admin).await;
    let run_ns = "ws-run-rbac";
    let mut ro = Options::new(Network::ALL.to_vec(), run_ns, b"0123456789abcdef0123");
    ro.privileged_namespace = true; // host network among them
    ro.tolerations = o.tolerations.clone();
    ro.run_id = Some("rbac1".into());
    // A CEL selector wirespeed leaves to the scheduler: this server has
    // no ResourceSlices, which the default selector would refuse at once.
    ro.nic_selector =
        wirespeed_k8s::dranet::NicSelector::Cel("device.driver == \"dra.net\"".into());
    // As `k8s run` does: the ResourceSlices read and the shared
    // DeviceClass made first, apart from the run's own objects.
    let objs = wirespeed_k8s::dra::prepare(&rc, &ro, &[], manifests::build(&ro).unwrap(), &|_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut d = Deployment::new();
    d.apply(&rc, &objs).await.unwrap_or_else(|e| panic!("{e}"));
    // What discovery and the diagnosis read, and the pod proxy.
    let pods: Api<Pod> = Api::namespaced(rc.clone(), run_ns);
    pods.list(&ListParams::default()).await.unwrap();
    let nodes: Api<Node> = Api::all(rc.clone());
    nodes.list(&ListParams::default()).await.unwrap();
    let evs: Vec<String> = wirespeed_k8s::rollout::pod_events(&rc, run_ns, "nobody").await;
    assert!(evs.is_empty(), "{evs:?}");
    assert_eq!(proxy_codes(&rc, run_ns).await, [404, 404, 404]);
    let ds =
        wirespeed_k8s::discover::discover(&rc, run_ns, Network::Pod, Duration::from_millis(300))
            .await;
    assert!(
        matches!(ds, Err(wirespeed_k8s::K8sError::Timeout { .. })),
        "{ds:?}"
    );
    // ... and no more.
    let all_secrets: Api<Secret> = Api::all(rc.clone());
    assert!(forbidden(all_secrets.list(&ListParams::default()).await));
    assert!(forbidden(
        pods.create(&PostParams::default(), &Pod::default()).await
    ));
    assert!(forbidden(
        nodes.delete("n1", &DeleteParams::default()).await
    ));
    // The shared DeviceClass is no run's to delete.
    let classes: Api<k8s_openapi::api::resource::v1::DeviceClass> = Api::all(rc.clone());
    assert!(forbidden(
        classes
            .delete(
                wirespeed_k8s::dra::SHARED_DEVICE_CLASS,
                &DeleteParams::default()
            )
            .await
    ));
    let their_roles: Api<ClusterRole> = Api::all(rc.clone());
    assert!(forbidden(their_roles.list(&ListParams::default()).await));
    // Teardown as the runner, namespace included.
    let gone = d.teardown(&rc, Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        gone.last().map(String::as_str),
        Some("Namespace ws-run-rbac")
    );
    let kc = env.kubeconfig.clone();
    let left = tokio::task::spawn_blocking(move || testkit::leftovers(&kc, run_ns))
        .await
        .unwrap();
    assert!(left.as_ref().is_ok_and(|l| l.is_empty()), "{left:?}");
}
