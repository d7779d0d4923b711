//! A small deterministic generator (xorshift64) for the jitter of synthetic
//! event times, shared by the format benchmarks.

pub struct Jitter(pub u64);

impl Jitter {
    /// The next value in `[0, range)` (`range` < 1 counts as 1).
    pub fn next(&mut self, range: i64) -> i64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % range.max(1) as u64) as i64
    }
}
