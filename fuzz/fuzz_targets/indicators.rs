//! Fuzz target over the batch indicator API (`indicators::compute` with any
//! name and parameters, the column forms) and structure detection, on bar
//! series decoded from arbitrary bytes (NaN, infinities, unordered times,
//! empty). The decoding and the assertions live in
//! `tradeterm_core::indicators::fuzz::check`, which `tests/indicators_fuzz.rs`
//! also runs on seeded inputs.
//!
//! Run (see docs/indicators.md, Fuzzing):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run indicators -- -max_total_time=300`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tradeterm_core::indicators::fuzz::check(data));
