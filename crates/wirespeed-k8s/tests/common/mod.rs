//! The test environment and the controllers it lacks live in the library
//! (wirespeed_k8s::testkit) so the binary's tests use them too.

pub use wirespeed_k8s::testkit::{FakeNode, TestEnv, play_daemonset};
