//! Figures survive a save and a reload bit for bit: a resumed experiment
//! re-reads earlier results and writes them again, and the default
//! serde_json float parser could move the last digit (a saved median of
//! 478085378.83440065 came back as 478085378.8344007).

#[test]
fn every_figure_reads_back_bit_for_bit() {
    let mut x = 478_085_378.834_400_65_f64;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..100_000 {
        let text = serde_json::to_string(&x).unwrap();
        let back: f64 = serde_json::from_str(&text).unwrap();
        assert_eq!(back.to_bits(), x.to_bits(), "{text}");
        // xorshift: awkward mantissas across the range figures take.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        x = (state >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((state % 24) as i32 - 6);
    }
}
