//! A small seeded random source (SplitMix64), so that a torture run is reproduced from its
//! seed alone, on any machine and with any version of any crate.

/// A seeded pseudo-random sequence. Not for secrets: for reproducible choices.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The sequence for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A sequence of its own for one party (`stream`) under the same seed.
    pub fn fork(seed: u64, stream: u64) -> Rng {
        let mut r = Rng(seed ^ stream.wrapping_mul(0xA24B_AED4_963E_E407));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Milliseconds since the Unix epoch: the runtime's clock, stamped on every input.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_sequence_and_streams_differ() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::fork(7, 1);
        let mut y = Rng::fork(7, 2);
        assert_ne!(x.next_u64(), y.next_u64());
        let mut r = Rng::new(1);
        assert!((0..1000).all(|_| r.below(10) < 10));
    }
}
