//! Replays the fuzz corpus of the lab-file parser and of experiment files
//! (fuzz/corpus/{lab_file,experiment_file}, kept by cargo-fuzz;
//! docs/fuzzing.md) through the fuzz targets' own bodies: every input that
//! once found new code must still end without a panic and quickly.

#[path = "../../../fuzz/bodies/lab.rs"]
mod bodies;
#[path = "../../../fuzz/bodies/replay.rs"]
mod replay;

#[test]
fn lab_file_corpus_replays_without_panic() {
    replay::replay("lab_file", bodies::lab_file);
}

#[test]
fn experiment_file_corpus_replays_without_panic() {
    replay::replay("experiment_file", bodies::experiment_file);
}
