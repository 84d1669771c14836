//! LCS: the longest common subsequence of two strings.
//!
//! Owns: Redis' LCS answer: the subsequence itself, its length, and the matching ranges
//! in each string (last first, each with its length), found by the classic dynamic
//! programme over a table of (len(a) + 1) × (len(b) + 1) lengths, walked back from the
//! end. Must never: run while holding a shard's lock (the caller copies the two strings
//! out first), or allocate a table over the caller's limit (Redis bounds it by
//! proto-max-bulk-len).

use crate::access::KvResult;
use crate::error::KvError;

/// A run of matched bytes: its range in the first string, in the second, and its length.
pub type LcsMatch = ((usize, usize), (usize, usize), usize);

/// What LCS answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LcsAnswer {
    /// The common subsequence (empty unless asked for).
    pub text: Vec<u8>,
    /// Its length.
    pub len: usize,
    /// The matched runs, from the ends of the strings back, each at least `min_len`
    /// long (empty unless asked for).
    pub matches: Vec<LcsMatch>,
}

/// The LCS of `a` and `b`; `walk`: build the text and the runs (not needed for LEN
/// alone); runs shorter than `min_len` are left out. `table_limit`: the most bytes the
/// table may take.
pub fn lcs(a: &[u8], b: &[u8], walk: bool, min_len: usize, table_limit: usize) -> KvResult<LcsAnswer> {
    let width = b.len() + 1;
    let cells = (a.len() + 1).checked_mul(width).ok_or(KvError::LcsTooLarge)?;
    if cells.saturating_mul(std::mem::size_of::<u32>()) > table_limit || a.len() >= u32::MAX as usize - 1 {
        return Err(KvError::LcsTooLarge);
    }
    // table[i * width + j]: the LCS length of a[..i] and b[..j].
    let mut table = vec![0u32; cells];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[i * width + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * width + j - 1] + 1
            } else {
                table[(i - 1) * width + j].max(table[i * width + j - 1])
            };
        }
    }
    let len = table[a.len() * width + b.len()] as usize;
    let mut answer = LcsAnswer { text: Vec::new(), len, matches: Vec::new() };
    if !walk {
        return Ok(answer);
    }
    let mut text = Vec::with_capacity(len);
    // The run being extended backwards: (a start, a end, b start, b end).
    let mut run: Option<(usize, usize, usize, usize)> = None;
    let (mut i, mut j) = (a.len(), b.len());
    let emit = |run: &mut Option<(usize, usize, usize, usize)>, matches: &mut Vec<LcsMatch>| {
        if let Some((a_start, a_end, b_start, b_end)) = run.take() {
            let run_len = a_end - a_start + 1;
            if run_len >= min_len {
                matches.push(((a_start, a_end), (b_start, b_end), run_len));
            }
        }
    };
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            text.push(a[i - 1]);
            run = match run {
                // Contiguous with the run: it grows backwards.
                Some((a_start, a_end, b_start, b_end)) if a_start == i && b_start == j => {
                    Some((a_start - 1, a_end, b_start - 1, b_end))
                }
                Some(_) => {
                    emit(&mut run, &mut answer.matches);
                    Some((i - 1, i - 1, j - 1, j - 1))
                }
                None => Some((i - 1, i - 1, j - 1, j - 1)),
            };
            i -= 1;
            j -= 1;
            // A run that reached the start of either string is complete.
            if i == 0 || j == 0 {
                emit(&mut run, &mut answer.matches);
            }
        } else {
            if table[(i - 1) * width + j] > table[i * width + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            emit(&mut run, &mut answer.matches);
        }
    }
    text.reverse();
    answer.text = text;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subsequence_and_its_runs_follow_redis() {
        let answer = lcs(b"ohmytext", b"mynewtext", true, 0, usize::MAX).unwrap();
        assert_eq!((answer.text.as_slice(), answer.len), (&b"mytext"[..], 6));
        assert_eq!(answer.matches, vec![((4, 7), (5, 8), 4), ((2, 3), (0, 1), 2)]);
        let long_runs = lcs(b"ohmytext", b"mynewtext", true, 4, usize::MAX).unwrap();
        assert_eq!(long_runs.matches, vec![((4, 7), (5, 8), 4)]);
        assert_eq!(lcs(b"", b"abc", true, 0, usize::MAX).unwrap(), LcsAnswer { text: vec![], len: 0, matches: vec![] });
        assert_eq!(lcs(b"abc", b"abc", false, 0, usize::MAX).unwrap().len, 3);
        assert_eq!(lcs(b"abc", b"abc", false, 0, 8), Err(KvError::LcsTooLarge), "a 16-cell table is over 8 bytes");
    }
}
