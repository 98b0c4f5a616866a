//! The fuzz target's check (`fuzz/fuzz_targets/indicators.rs`) run over a
//! few thousand pseudo-random inputs from a fixed seed, so the normal test
//! suite exercises the same decoding and assertions: any indicator name and
//! parameters, bar series with NaN, infinities, unordered times or nothing at
//! all, and structure detection on them — never a panic, outputs as long as
//! the input, typed errors otherwise.

use tradeterm_core::indicators::fuzz::check;

/// splitmix64: a tiny deterministic generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next().to_le_bytes()[0]).collect()
    }
}

#[test]
fn seeded_inputs_keep_the_batch_contract() {
    let mut rng = SplitMix(0x7261_6465_7465_726d);
    for case in 0..3000 {
        // Mostly short inputs, some long enough for a few hundred bars.
        let len = match case % 10 {
            0 => 0,
            1..=6 => (rng.next() % 256) as usize,
            _ => (rng.next() % 6000) as usize,
        };
        let data = rng.bytes(len);
        check(&data);
    }
}

#[test]
fn edge_inputs_keep_the_batch_contract() {
    check(&[]);
    check(&[0; 64]);
    check(&[0xff; 4096]);
    // Every catalog entry and junk names, with a fixed bar pattern.
    for pick in 0..=255u8 {
        let mut data = vec![pick, 1, 0, 0, 0, 40, 0];
        data.extend((0..4000).map(|i| (i * 37 % 251) as u8));
        check(&data);
    }
}
