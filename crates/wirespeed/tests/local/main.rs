//! The tests that need no root: the command line and its errors, generated
//! docs, the install files (chart, manifests), the model, the reports (HTML
//! drawn by headless Chromium) and iperf3-compatible output over loopback.
//! Each module was a test binary of its own; run one with
//! `cargo test --release -p wirespeed --test local cli::`.

#[path = "../chromium/mod.rs"]
mod chromium;
#[path = "../common/mod.rs"]
mod common;
#[path = "../../../wirespeed-engine/tests/common/ports.rs"]
mod ports;

mod cli;
mod generated_docs;
mod install_files;
mod iperf3_cli;
mod model_cli;
mod report_html;
mod report_runs;
