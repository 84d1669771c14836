//! The PRNG behind `math.random`: Redis' `redisLrand48`, so a script draws the same sequence
//! on every machine (and the same sequence Redis would draw from the same seed).
//!
//! Owns the 48-bit linear congruential generator of the `rand48` family (multiplier
//! 0x5DEECE66D, increment 11, the traditional initial state). Like Redis, one generator serves
//! every script of the process and `math.randomseed` reseeds it. This module must never read
//! the clock or the OS's randomness.

/// The generator's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rand48 {
    state: u64,
}

const MODULUS_MASK: u64 = (1 << 48) - 1;
const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const INCREMENT: u64 = 0xB;
const INITIAL_STATE: u64 = 0x1234_ABCD_330E;

/// The largest value [`Rand48::next_i32`] can draw, Redis' `REDIS_LRAND48_MAX`.
pub const LRAND48_MAX: i32 = i32::MAX;

impl Default for Rand48 {
    fn default() -> Rand48 {
        Rand48 { state: INITIAL_STATE }
    }
}

impl Rand48 {
    /// The next value in `0..=LRAND48_MAX`: the top 31 of the 48 state bits.
    pub fn next_i32(&mut self) -> i32 {
        self.state = (MULTIPLIER.wrapping_mul(self.state).wrapping_add(INCREMENT)) & MODULUS_MASK;
        (self.state >> 17) as i32
    }

    /// Reseeds as `srand48(seed)` does: the seed's 32 bits above the fixed low word 0x330E.
    pub fn seed(&mut self, seed: i32) {
        self.state = (u64::from(seed as u32) << 16) | 0x330E;
    }

    /// A number in `[0, 1)` as Redis' `math.random()` computes it.
    pub fn next_fraction(&mut self) -> f64 {
        f64::from(self.next_i32() % LRAND48_MAX) / f64::from(LRAND48_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::format_g;

    #[test]
    fn first_draws_match_a_fresh_redis() {
        // A freshly started redis-server 7.0 answered `return tostring(math.random())` with
        // 0.39646477363839, then `math.random(10)` three times with 9, 4, 5.
        let mut random = Rand48::default();
        assert_eq!(format_g(random.next_fraction(), 14), "0.39646477363839");
        let draws: Vec<f64> = (0..3).map(|_| (random.next_fraction() * 10.0).floor() + 1.0).collect();
        assert_eq!(draws, vec![9.0, 4.0, 5.0]);
    }

    #[test]
    fn reseeding_restarts_the_sequence() {
        let mut first = Rand48::default();
        first.seed(42);
        let mut second = Rand48::default();
        second.next_i32();
        second.seed(42);
        assert_eq!(first.next_i32(), second.next_i32());
    }
}
