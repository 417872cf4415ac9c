//! Replays the fuzz corpus of experiment files (fuzz/corpus/experiment_file,
//! kept by cargo-fuzz; docs/fuzzing.md) through the fuzz target's own body:
//! every input that once found new code must still end without a panic
//! and quickly.

#[path = "../../../fuzz/bodies/experiment.rs"]
mod bodies;
#[path = "../../../fuzz/bodies/replay.rs"]
mod replay;

#[test]
fn experiment_file_corpus_replays_without_panic() {
    replay::replay("experiment_file", bodies::experiment_file);
}
