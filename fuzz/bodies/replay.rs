//! Replays a fuzz target's kept corpus (fuzz/corpus/TARGET) through its
//! body on stable Rust, without libFuzzer: included by the `fuzz_corpus`
//! integration test of each crate that owns a fuzzed parser.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

/// Most time one input may take in a release build: libFuzzer treats an
/// input as a hang at 1 s (`-timeout`); a debug build gets more.
const PER_INPUT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 20 } else { 2 });

/// Runs every file of fuzz/corpus/`target` through `body`; fails naming
/// the inputs that panicked or took longer than [`PER_INPUT`].
pub fn replay(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "{} holds no inputs", dir.display());
    let mut failed = Vec::new();
    for path in &entries {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let t0 = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| body(&data)));
        let took = t0.elapsed();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if outcome.is_err() {
            failed.push(format!("{name}: panicked"));
        } else if took > PER_INPUT {
            failed.push(format!("{name}: took {took:?}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} inputs of {target} failed: {failed:?}",
        failed.len(),
        entries.len()
    );
}
