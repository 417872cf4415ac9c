//! Replays the fuzz corpus of the lab-file parser (fuzz/corpus/lab_file,
//! kept by cargo-fuzz; docs/fuzzing.md) through the fuzz target's own body:
//! every input that once found new code must still end without a panic
//! and quickly.

#[path = "../../../fuzz/bodies/lab.rs"]
mod bodies;
#[path = "../../../fuzz/bodies/replay.rs"]
mod replay;

#[test]
fn lab_file_corpus_replays_without_panic() {
    replay::replay("lab_file", bodies::lab_file);
}
