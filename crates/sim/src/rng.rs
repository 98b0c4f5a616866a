//! Seeded randomness that never changes with a dependency upgrade.
//!
//! Determinism is a feature of the simulator (same seed, same clock steps →
//! same ticks and deals), so it uses its own SplitMix64 generator and
//! stateless hashes rather than a library whose streams may change between
//! versions.

/// One SplitMix64 step: a well-mixed 64-bit function of `x`.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash of several words (order matters).
pub(crate) fn hash(parts: &[u64]) -> u64 {
    parts.iter().fold(0x5151_5151_u64, |acc, &p| mix(acc ^ mix(p)))
}

/// Uniform in `[0, 1)` from a hash.
pub(crate) fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// A small sequential generator (SplitMix64).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(mix(seed))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn f64(&mut self) -> f64 {
        unit(self.next_u64())
    }

    /// Standard normal (Box–Muller).
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = self.f64().max(1e-300);
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_streams() {
        // Pinned values: a change here breaks every seeded simulation.
        assert_eq!(mix(0), 0xE220_A839_7B1D_CDAF);
        let mut r = Rng::new(42);
        let a = r.next_u64();
        let mut r2 = Rng::new(42);
        assert_eq!(a, r2.next_u64());
        assert_ne!(hash(&[1, 2]), hash(&[2, 1]));
        let mut r = Rng::new(7);
        let n = 20_000;
        let mean: f64 = (0..n).map(|_| r.normal()).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((0..1000).all(|_| (0.0..1.0).contains(&r.f64())));
    }
}
