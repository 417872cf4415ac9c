//! The bodies of the fuzz targets. Each file under `bodies/` is also
//! compiled into an ordinary integration test of the crate that owns the
//! parser (`#[path]`), which replays the kept corpus through the very same
//! function: the fuzz target and the replay cannot drift apart.

#[path = "../bodies/engine.rs"]
pub mod engine;
#[path = "../bodies/host.rs"]
pub mod host;
#[path = "../bodies/lab.rs"]
pub mod lab;
