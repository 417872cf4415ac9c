//! The Kubernetes tests, one binary: real clusters built from upstream
//! sources (k8s/testenv/cluster.sh; root, the testenv binaries) and a bare
//! kube-apiserver with the test playing the kubelet (wirespeed_k8s::testkit).
//! Each module was a test binary of its own; run one with
//! `cargo test --release -p wirespeed --test k8s k8s_watch::`. Tests that
//! bring up a cluster take common::heavy(), so clusters never overlap.

#[path = "../common/mod.rs"]
mod common;

mod k8s_cluster;
mod k8s_dra;
mod k8s_faults;
mod k8s_fixtures;
mod k8s_image;
mod k8s_install;
mod k8s_live;
mod k8s_paths;
mod k8s_reach_live;
mod k8s_rollout;
mod k8s_security;
mod k8s_watch;
