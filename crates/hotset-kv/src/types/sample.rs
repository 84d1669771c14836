//! Random picks from a collection, by Redis' count rules (HRANDFIELD, SRANDMEMBER,
//! ZRANDMEMBER, SPOP).
//!
//! Owns: choosing which elements a random-count command returns. Never: touch a
//! collection itself (the caller gives a random probe and the whole list on demand).

use std::hash::Hash;

/// `count` random elements of a collection of `len`: a positive count gives distinct
/// elements (all of them when it is at least `len`), a negative one `-count` elements
/// that may repeat. `random` returns a uniformly random element; `all` every element.
pub fn sample<T: Copy + Eq + Hash>(
    count: i64,
    len: usize,
    mut random: impl FnMut() -> Option<T>,
    all: impl FnOnce() -> Vec<T>,
) -> Vec<T> {
    let wanted = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    if count < 0 {
        return (0..wanted).map_while(|_| random()).collect();
    }
    if wanted >= len {
        return all();
    }
    if wanted.saturating_mul(3) < len {
        // Few of many: random probes, repeats skipped.
        let mut chosen: hashbrown::HashSet<T> = hashbrown::HashSet::with_capacity(wanted);
        let mut picked = Vec::with_capacity(wanted);
        while picked.len() < wanted {
            let Some(element) = random() else { break };
            if chosen.insert(element) {
                picked.push(element);
            }
        }
        return picked;
    }
    // Most of them: a partial shuffle of all.
    let mut every = all();
    let mut rng = rand::rng();
    for i in 0..wanted {
        let j = rand::RngExt::random_range(&mut rng, i..every.len());
        every.swap(i, j);
    }
    every.truncate(wanted);
    every
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(count: i64, len: u32) -> Vec<u32> {
        let mut rng = rand::rng();
        let random = || (len > 0).then(|| rand::RngExt::random_range(&mut rng, 0..len));
        sample(count, len as usize, random, || (0..len).collect())
    }

    #[test]
    fn counts_follow_redis() {
        for (count, len) in [(3, 100), (60, 100), (99, 100)] {
            let mut got = pick(count, len);
            assert_eq!(got.len(), count as usize);
            got.sort_unstable();
            got.dedup();
            assert_eq!(got.len(), count as usize, "a positive count gives distinct elements");
        }
        assert_eq!(pick(10, 5).len(), 5, "never more than there are");
        assert_eq!(pick(-10, 2).len(), 10, "a negative count may repeat");
        assert!(pick(-3, 0).is_empty() && pick(3, 0).is_empty());
    }
}
