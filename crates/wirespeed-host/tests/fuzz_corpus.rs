//! Replays the fuzz corpus of the tune-profile parser
//! (fuzz/corpus/tune_profile, kept by cargo-fuzz; docs/fuzzing.md) through
//! the fuzz target's own body: every input that once found new code must
//! still end without a panic and quickly.

#[path = "../../../fuzz/bodies/host.rs"]
mod bodies;
#[path = "../../../fuzz/bodies/replay.rs"]
mod replay;

#[test]
fn tune_profile_corpus_replays_without_panic() {
    replay::replay("tune_profile", bodies::tune_profile);
}
