//! HyperLogLog (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST) as pure functions over the
//! bytes of a string value, laid out exactly as Redis 7.0 lays them out.
//!
//! Owns: the value format (a 16-byte header: `HYLL`, an encoding byte, 0 dense or 1
//! sparse, three unused bytes, then the cached cardinality as 8 little-endian bytes whose
//! top bit marks it stale; then 16384 registers of 6 bits, either packed from the least
//! significant bit of each byte on, 12288 bytes, or run-length coded as ZERO `00xxxxxx`,
//! XZERO `01xxxxxx yyyyyyyy` and VAL `1vvvvvxx` opcodes), the element hash (MurmurHash64A,
//! seed `0xadc83b19`: low 14 bits pick the register, the rest give the run length), the
//! in-place sparse update with its promotion to dense (a value over 32, or a string that
//! would outgrow `hll-sparse-max-bytes`), and Ertl's estimator, which Redis 7.0 uses, so
//! the same registers give the same count and every operation leaves the same bytes.
//!
//! Must never: accept a value whose header fails Redis' check (WRONGTYPE) or whose
//! registers do not cover exactly 16384 positions where Redis notices (INVALIDOBJ), panic
//! on any byte string (the test suite corrupts values with SETRANGE on purpose), or touch
//! a keyspace: the caller looks the key up, checks that it holds a string, skips missing
//! keys, and stores what these functions return or leave in place.
//!
//! Damaged values follow the redis-server 7.0.15 the test suite runs (Debian's build,
//! which carries the CVE-2025-32023 fix, as upstream 7.2.10 and later do): sparse opcodes
//! are sound only when their runs add up to exactly 16384, so a VAL running past the last
//! register is damage even after runs that already reached 16384 (the unpatched 7.0.15
//! source stopped reading there and accepted the value).
//!
//! Known divergence: Redis reads one byte past the end of a damaged sparse value whose
//! last opcode is an XZERO cut in half, as that opcode's second byte. This module tracks
//! that byte within one call (an edit of such an XZERO leaves a byte there, as in Redis)
//! but starts every call from 0, the terminating zero; Redis keeps whatever an earlier
//! command left there, so a later command on the same damaged value may read another run.

use std::fmt;

/// Header length: magic, encoding, three unused bytes, cached cardinality.
const HDR: usize = 16;
/// Index bits of the hash.
const P: u32 = 14;
/// Hash bits left for the run of zeroes.
const Q: usize = 64 - P as usize;
/// Number of registers.
const REGISTERS: usize = 1 << P;
/// Bits per dense register.
const BITS: usize = 6;
/// Largest value a register holds.
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Length of a dense value, header included.
const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
/// Encoding byte of a dense value.
const DENSE: u8 = 0;
/// Encoding byte of a sparse value.
const SPARSE: u8 = 1;
/// Offset of the cached cardinality's most significant byte (its top bit: "stale").
const CARD_MSB: usize = 15;
/// Largest value a VAL opcode holds.
const VAL_MAX_VALUE: u8 = 32;
/// Longest run a VAL opcode holds.
const VAL_MAX_LEN: usize = 4;
/// Longest run a ZERO opcode holds.
const ZERO_MAX_LEN: usize = 64;
/// Longest run an XZERO opcode holds.
const XZERO_MAX_LEN: usize = 16384;
/// The hash's seed.
const SEED: u64 = 0xadc8_3b19;
/// 0.5 / ln 2, the estimator's bias constant for an infinite register count.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// Why an HLL operation refused a value; each maps to one Redis error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HllError {
    /// The string is no HyperLogLog: too short, wrong magic, unknown encoding, or a
    /// dense value of the wrong length (Redis' header check on every PF command).
    WrongType,
    /// The header is fine but the registers are damaged: sparse opcodes that do not
    /// cover exactly 16384 registers, met while counting, merging, converting or adding.
    InvalidObject,
    /// PFDEBUG DECODE of a dense value.
    NotSparse,
}

impl HllError {
    /// Redis' exact error text, without the leading `-` of the wire format.
    pub fn message(&self) -> &'static str {
        match self {
            HllError::WrongType => "WRONGTYPE Key is not a valid HyperLogLog string value.",
            HllError::InvalidObject => "INVALIDOBJ Corrupted HLL object detected",
            HllError::NotSparse => "ERR HLL encoding is not sparse",
        }
    }
}

impl fmt::Display for HllError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for HllError {}

// ---------------------------------------------------------------------------------------
// Header and validation.

/// Redis' header check (`isHLLObjectOrReply`), run by every PF command on every existing
/// key before anything else: at least 16 bytes, magic `HYLL`, encoding 0 or 1, and a dense
/// value exactly 12304 bytes long. Sparse opcodes are not looked at here.
pub fn validate(bytes: &[u8]) -> Result<(), HllError> {
    let valid = bytes.len() >= HDR
        && &bytes[..4] == b"HYLL"
        && bytes[4] <= SPARSE
        && (bytes[4] != DENSE || bytes.len() == DENSE_SIZE);
    if valid { Ok(()) } else { Err(HllError::WrongType) }
}

/// An empty HLL as PFADD stores it for a missing key: sparse, one XZERO opcode covering
/// all 16384 registers, and the cached cardinality 0 marked stale (PFADD counts creating
/// the key as a change, so it answers 1 even when [`add`] then changes no register).
pub fn new_sparse() -> Vec<u8> {
    let mut hll = Vec::with_capacity(HDR + 2);
    hll.extend_from_slice(b"HYLL");
    hll.push(SPARSE);
    hll.extend_from_slice(&[0; 3]);
    hll.extend_from_slice(&[0; 8]);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(XZERO_MAX_LEN);
        hll.extend_from_slice(&xzero_bytes(run));
        left -= run;
    }
    invalidate_cache(&mut hll);
    hll
}

/// Marks the cached cardinality stale (sets the top bit of its last byte).
fn invalidate_cache(hll: &mut [u8]) {
    hll[CARD_MSB] |= 0x80;
}

/// Whether the cached cardinality may be answered as is.
fn cache_is_valid(hll: &[u8]) -> bool {
    hll[CARD_MSB] & 0x80 == 0
}

/// "sparse" or "dense", PFDEBUG ENCODING's answer. Expects a value [`validate`] accepted.
pub fn encoding_name(hll: &[u8]) -> &'static str {
    if hll.get(4) == Some(&SPARSE) { "sparse" } else { "dense" }
}

// ---------------------------------------------------------------------------------------
// Hashing.

/// MurmurHash64A (Austin Appleby's 64-bit MurmurHash2), blocks read little-endian, as
/// Redis computes it on every architecture.
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for block in &mut blocks {
        let mut word = [0u8; 8];
        word.copy_from_slice(block);
        let mut k = u64::from_le_bytes(word);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and the value it offers: one plus the number of
/// zero bits before the first 1, reading the hash's upper 50 bits from the low end
/// (at most 51, when all 50 are zero).
fn register_and_value(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---------------------------------------------------------------------------------------
// Dense registers.

/// Register `i` of a dense register area (the bytes after the header). A register in the
/// last byte pairs with an imaginary zero byte after the end.
fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let shift = (i * BITS) & 7;
    let lo = u32::from(regs[byte]) >> shift;
    let hi = u32::from(regs.get(byte + 1).copied().unwrap_or(0)) << (8 - shift);
    ((lo | hi) & u32::from(REGISTER_MAX)) as u8
}

/// Sets register `i` of a dense register area to `value` (at most 63).
fn dense_put(regs: &mut [u8], i: usize, value: u8) {
    let byte = i * BITS / 8;
    let shift = (i * BITS) & 7;
    let v = u32::from(value);
    let max = u32::from(REGISTER_MAX);
    regs[byte] &= !((max << shift) as u8);
    regs[byte] |= (v << shift) as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        *next &= !((max >> (8 - shift)) as u8);
        *next |= (v >> (8 - shift)) as u8;
    }
}

/// Raises register `i` to `value` if it is lower; whether it changed.
fn dense_raise(regs: &mut [u8], i: usize, value: u8) -> bool {
    if value > dense_get(regs, i) {
        dense_put(regs, i, value);
        true
    } else {
        false
    }
}

// ---------------------------------------------------------------------------------------
// Sparse opcodes.

/// One sparse opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// 1 to 64 zero registers (one byte).
    Zero(usize),
    /// 1 to 16384 zero registers (two bytes).
    XZero(usize),
    /// 1 to 4 registers holding one value of 1 to 32 (one byte).
    Val(u8, usize),
}

impl Op {
    /// How many registers the opcode covers.
    fn run(self) -> usize {
        match self {
            Op::Zero(n) | Op::XZero(n) | Op::Val(_, n) => n,
        }
    }

    /// How many bytes the opcode takes.
    fn width(self) -> usize {
        if matches!(self, Op::XZero(_)) { 2 } else { 1 }
    }
}

/// The opcode at byte `p` of `hll` (`p` inside it); an XZERO cut short by the end reads
/// its second byte as 0.
fn op_at(hll: &[u8], p: usize) -> Op {
    op_at_past(hll, p, 0)
}

/// [`op_at`], an XZERO cut short by the end reading `past_end` as its second byte: the
/// byte Redis' string buffer holds just after the value (see [`Past`]).
fn op_at_past(hll: &[u8], p: usize, past_end: u8) -> Op {
    let b = hll[p];
    if b & 0x80 != 0 {
        Op::Val(((b >> 2) & 0x1f) + 1, usize::from(b & 0x3) + 1)
    } else if b & 0x40 != 0 {
        let low = usize::from(hll.get(p + 1).copied().unwrap_or(past_end));
        Op::XZero(((usize::from(b & 0x3f) << 8) | low) + 1)
    } else {
        Op::Zero(usize::from(b & 0x3f) + 1)
    }
}

/// The byte just past the end of a sparse value while one command edits it. Redis reads
/// it as the second byte of an XZERO cut short by the end; it is 0 except after an edit
/// that replaced such an XZERO, which leaves the new opcodes' last byte there (until the
/// length changes again). Each call starts from 0; Redis keeps the byte between
/// commands, which only damaged values ending in a cut XZERO can notice.
#[derive(Debug, Default)]
struct Past(u8);

/// A VAL opcode byte: `value` 1..=32, `run` 1..=4.
fn val_byte(value: u8, run: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (run - 1) as u8
}

/// A ZERO opcode byte: `run` 1..=64.
fn zero_byte(run: usize) -> u8 {
    (run - 1) as u8
}

/// An XZERO opcode's two bytes: `run` 1..=16384.
fn xzero_bytes(run: usize) -> [u8; 2] {
    let n = run - 1;
    [0x40 | (n >> 8) as u8, (n & 0xff) as u8]
}

/// Appends the shorter opcode for a run of `run` zero registers.
fn push_zeros(seq: &mut Vec<u8>, run: usize) {
    if run > ZERO_MAX_LEN {
        seq.extend_from_slice(&xzero_bytes(run));
    } else {
        seq.push(zero_byte(run));
    }
}

/// Walks the opcodes of a sparse value, calling `visit(first_register, op)` for each one
/// that ends within the 16384 registers; returns whether the runs add up to exactly 16384
/// (an opcode running past the end makes the value damaged, whatever follows it).
fn walk_sparse(hll: &[u8], past_end: u8, mut visit: impl FnMut(usize, Op)) -> bool {
    let mut p = HDR;
    let mut idx = 0usize;
    while p < hll.len() {
        let op = op_at_past(hll, p, past_end);
        if idx + op.run() > REGISTERS {
            return false;
        }
        visit(idx, op);
        idx += op.run();
        p += op.width();
    }
    idx == REGISTERS
}

/// The registers of a validated value, one byte each; InvalidObject for a sparse value
/// that does not cover exactly 16384 registers.
fn register_array(hll: &[u8]) -> Result<Vec<u8>, HllError> {
    let mut regs = vec![0u8; REGISTERS];
    merge_into(&mut regs, hll)?;
    Ok(regs)
}

/// Raises each of `max` to the matching register of a validated value (Redis'
/// `hllMerge`); InvalidObject for a sparse value that does not cover 16384 registers.
fn merge_into(max: &mut [u8], hll: &[u8]) -> Result<(), HllError> {
    if hll[4] == DENSE {
        let regs = &hll[HDR..];
        for (i, m) in max.iter_mut().enumerate() {
            let v = dense_get(regs, i);
            if v > *m {
                *m = v;
            }
        }
        return Ok(());
    }
    let sound = walk_sparse(hll, 0, |first, op| {
        if let Op::Val(v, run) = op {
            for m in &mut max[first..first + run] {
                if v > *m {
                    *m = v;
                }
            }
        }
    });
    if sound { Ok(()) } else { Err(HllError::InvalidObject) }
}

/// Rewrites a validated sparse value as dense in place, keeping the header's other bytes
/// (cached cardinality and unused bytes included); a dense value is left alone.
/// InvalidObject (value untouched) when the opcodes do not cover exactly 16384 registers.
fn sparse_to_dense(hll: &mut Vec<u8>, past: &mut Past) -> Result<(), HllError> {
    if hll[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&hll[..HDR]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR..];
    let sound = walk_sparse(hll, past.0, |first, op| {
        if let Op::Val(v, run) = op {
            for i in first..first + run {
                dense_put(regs, i, v);
            }
        }
    });
    if !sound {
        return Err(HllError::InvalidObject);
    }
    *hll = dense;
    past.0 = 0;
    Ok(())
}

/// Raises register `index` of a validated sparse value to `value` if it is lower, editing
/// the opcodes in place exactly as Redis' `hllSparseSet` does (so the bytes match), and
/// promoting the value to dense when `value` exceeds 32 or the edit would make the string
/// longer than `max_bytes`. Whether the register changed; an edit of the sparse form also
/// marks the cache stale. InvalidObject when the opcodes do not reach `index`, or the
/// promotion finds them damaged.
fn sparse_raise(
    hll: &mut Vec<u8>,
    index: usize,
    value: u8,
    max_bytes: usize,
    past: &mut Past,
) -> Result<bool, HllError> {
    if value > VAL_MAX_VALUE {
        return promote_and_raise(hll, index, value, past);
    }

    // Find the opcode covering `index`, the register it starts at, and the one before it.
    let end = hll.len();
    let mut p = HDR;
    let mut first = 0usize;
    let mut span = 0usize;
    let mut prev: Option<usize> = None;
    while p < end {
        let op = op_at_past(hll, p, past.0);
        span = op.run();
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += op.width();
        first += span;
    }
    if span == 0 || p >= end {
        return Err(HllError::InvalidObject);
    }
    let op = op_at_past(hll, p, past.0);

    // The cases needing no split: a VAL already high enough, or one register alone.
    match op {
        Op::Val(old, _) if old >= value => return Ok(false),
        Op::Val(_, 1) | Op::Zero(1) => {
            hll[p] = val_byte(value, 1);
            merge_neighbour_vals(hll, prev.unwrap_or(HDR), past);
            invalidate_cache(hll);
            return Ok(true);
        }
        _ => {}
    }

    // Split the opcode into (before, our register, after).
    let last = first + span - 1;
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    match op {
        Op::Zero(_) | Op::XZero(_) => {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val_byte(value, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        }
        Op::Val(current, _) => {
            if index != first {
                seq.push(val_byte(current, index - first));
            }
            seq.push(val_byte(value, 1));
            if index != last {
                seq.push(val_byte(current, last - index));
            }
        }
    }
    let old_width = op.width();
    if seq.len() > old_width && end + (seq.len() - old_width) > max_bytes {
        return promote_and_raise(hll, index, value, past);
    }
    // Splice. An XZERO cut short by the end is replaced as if it had both bytes, so the
    // value ends one byte early: the sequence's last byte lands just past the end.
    let new_len = end + seq.len() - old_width;
    let rest = hll.split_off((p + old_width).min(end));
    hll.truncate(p);
    hll.extend_from_slice(&seq);
    hll.extend_from_slice(&rest);
    past.0 = hll.get(new_len).copied().unwrap_or(0);
    hll.truncate(new_len);

    merge_neighbour_vals(hll, prev.unwrap_or(HDR), past);
    invalidate_cache(hll);
    Ok(true)
}

/// After an edit, joins adjacent VAL opcodes of equal value whose runs fit one opcode,
/// looking at up to five opcodes from `start` (the opcode before the edited one), as
/// Redis does; what lies further is left as it is.
fn merge_neighbour_vals(hll: &mut Vec<u8>, start: usize, past: &mut Past) {
    let mut p = start;
    let mut budget = 5;
    while p < hll.len() && budget > 0 {
        budget -= 1;
        match op_at(hll, p) {
            Op::XZero(_) => p += 2,
            Op::Zero(_) => p += 1,
            Op::Val(v1, run1) => {
                if p + 1 < hll.len()
                    && let Op::Val(v2, run2) = op_at(hll, p + 1)
                    && v1 == v2
                    && run1 + run2 <= VAL_MAX_LEN
                {
                    hll[p + 1] = val_byte(v1, run1 + run2);
                    hll.remove(p);
                    past.0 = 0;
                    // Stay here: the joined opcode may join the next one too.
                    continue;
                }
                p += 1;
            }
        }
    }
}

/// Converts a sparse value to dense and raises register `index` to `value` there (the
/// register always changes: the sparse form could not hold the new value). Like Redis, the
/// cache is left as it was; the command marks it stale afterwards.
fn promote_and_raise(hll: &mut Vec<u8>, index: usize, value: u8, past: &mut Past) -> Result<bool, HllError> {
    sparse_to_dense(hll, past)?;
    dense_raise(&mut hll[HDR..], index, value);
    Ok(true)
}

// ---------------------------------------------------------------------------------------
// Estimation.

/// How many registers hold each value 0..=63 (a damaged dense value may hold up to 63).
type Histogram = [u32; 64];

/// The histogram of a validated value; for a sparse value also whether its opcodes cover
/// exactly 16384 registers (counted without stopping, as Redis' counting pass does).
fn histogram(hll: &[u8]) -> (Histogram, bool) {
    let mut histo = [0u32; 64];
    if hll[4] == DENSE {
        let regs = &hll[HDR..];
        for i in 0..REGISTERS {
            histo[usize::from(dense_get(regs, i))] += 1;
        }
        return (histo, true);
    }
    let mut p = HDR;
    let mut idx = 0usize;
    while p < hll.len() {
        let op = op_at(hll, p);
        let bucket = match op {
            Op::Val(v, _) => usize::from(v),
            _ => 0,
        };
        histo[bucket] = histo[bucket].wrapping_add(op.run() as u32);
        idx += op.run();
        p += op.width();
    }
    (histo, idx == REGISTERS)
}

/// Ertl's σ(x) ("New cardinality estimation algorithms for HyperLogLog sketches",
/// arXiv:1702.01284), summed until the result stops changing.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// Ertl's τ(x) (same paper), summed until the result stops changing.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z == before {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate from a register histogram, with Redis' arithmetic step for
/// step (values above 51 are ignored, as there), and its conversions: rounding half away
/// from zero to a signed 64-bit integer (an out-of-range or infinite quotient gives the
/// most negative one, as x86's `llroundl` does), then reinterpreted as unsigned.
fn estimate(histo: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q + 1])) / m);
    for j in (1..=Q).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    let rounded = (ALPHA_INF * m * m / z).round();
    let signed = if rounded.is_finite() && (i64::MIN as f64..-(i64::MIN as f64)).contains(&rounded) {
        rounded as i64
    } else {
        i64::MIN
    };
    // Redis keeps the estimate in a double before returning it as unsigned.
    let as_double = signed as f64;
    if as_double < 0.0 { as_double as i64 as u64 } else { as_double as u64 }
}

// ---------------------------------------------------------------------------------------
// Commands.

/// PFADD's work on an existing value (for a missing key, start from [`new_sparse`] and
/// answer 1 whatever this returns). Checks the header first (WrongType), then adds each
/// element, a sparse value editing its opcodes in place and turning dense when a
/// register needs a value over 32 or the string would outgrow `sparse_max_bytes`.
/// Returns whether any register changed; when one did, the cached cardinality is marked
/// stale. InvalidObject when damaged sparse opcodes are met: like Redis, the value then
/// keeps the edits made for earlier elements (and Redis keeps the edited value stored),
/// so the caller should store `hll` as left.
pub fn add(hll: &mut Vec<u8>, elements: &[&[u8]], sparse_max_bytes: usize) -> Result<bool, HllError> {
    validate(hll)?;
    let mut past = Past::default();
    let mut changed = false;
    for element in elements {
        let (index, value) = register_and_value(element);
        let raised = if hll[4] == DENSE {
            dense_raise(&mut hll[HDR..], index, value)
        } else {
            sparse_raise(hll, index, value, sparse_max_bytes, &mut past)?
        };
        changed |= raised;
    }
    if changed {
        invalidate_cache(hll);
    }
    Ok(changed)
}

/// PFCOUNT of one key: checks the header (WrongType); answers the cached cardinality when
/// it is not marked stale; otherwise computes it and writes it into the header (the value
/// changes, and Redis propagates that change). InvalidObject, value untouched, for a
/// sparse value whose opcodes do not cover exactly 16384 registers. Redis replies with
/// the result as a signed integer (`as i64`): the one result of 2^63 and more, 2^63 for
/// registers all at 51 or above (a damaged dense value), is -9223372036854775808 there.
pub fn count(hll: &mut [u8]) -> Result<u64, HllError> {
    validate(hll)?;
    if cache_is_valid(hll) {
        let mut card = [0u8; 8];
        card.copy_from_slice(&hll[8..HDR]);
        return Ok(u64::from_le_bytes(card));
    }
    let (histo, sound) = histogram(hll);
    if !sound {
        return Err(HllError::InvalidObject);
    }
    let card = estimate(&histo);
    hll[8..HDR].copy_from_slice(&card.to_le_bytes());
    Ok(card)
}

/// PFCOUNT of several keys: the cardinality of their union (each register the highest
/// of its values across `hlls`), with no cache read or written. The caller leaves out
/// missing keys. Each value is header-checked then merged, in order: the first failure,
/// WrongType or InvalidObject, is the answer. Replied as a signed integer, as [`count`].
pub fn count_union(hlls: &[&[u8]]) -> Result<u64, HllError> {
    let mut max = vec![0u8; REGISTERS];
    for hll in hlls {
        validate(hll)?;
        merge_into(&mut max, hll)?;
    }
    let mut histo = [0u32; 64];
    for &v in &max {
        histo[usize::from(v)] += 1;
    }
    Ok(estimate(&histo))
}

/// PFMERGE's new value for the destination. `target` is the destination's current value
/// (`None` when missing); like Redis, its registers take part in the union. `sources` are
/// the source keys' values in order, missing ones left out. Each input (target first) is
/// header-checked then merged; the first failure is the answer and nothing is stored.
/// The result starts from the target's bytes (or an empty sparse value), turns dense if
/// any input was dense, then has each nonzero register of the union raised in register
/// order (a sparse result may still turn dense, past 32 or `sparse_max_bytes`), and ends
/// with its cache marked stale, whether or not anything changed.
pub fn merge(target: Option<&[u8]>, sources: &[&[u8]], sparse_max_bytes: usize) -> Result<Vec<u8>, HllError> {
    let mut max = vec![0u8; REGISTERS];
    let mut any_dense = false;
    for hll in target.into_iter().chain(sources.iter().copied()) {
        validate(hll)?;
        any_dense |= hll[4] == DENSE;
        merge_into(&mut max, hll)?;
    }
    let mut past = Past::default();
    let mut out = match target {
        Some(bytes) => bytes.to_vec(),
        None => new_sparse(),
    };
    if any_dense {
        sparse_to_dense(&mut out, &mut past)?;
    }
    for (i, &v) in max.iter().enumerate() {
        if v == 0 {
            continue;
        }
        if out[4] == DENSE {
            dense_raise(&mut out[HDR..], i, v);
        } else {
            // Every input was checked above, so the edit cannot meet damaged opcodes.
            sparse_raise(&mut out, i, v, sparse_max_bytes, &mut past)?;
        }
    }
    invalidate_cache(&mut out);
    Ok(out)
}

/// PFDEBUG GETREG: the 16384 register values, in order. Redis first converts a sparse
/// value to dense and stores it so: call [`to_dense`] on the stored value first to match.
/// WrongType from the header check; InvalidObject for damaged sparse opcodes.
pub fn registers(hll: &[u8]) -> Result<Vec<u8>, HllError> {
    validate(hll)?;
    register_array(hll)
}

/// PFDEBUG TODENSE: converts a sparse value to dense in place, keeping the rest of the
/// header (the cached cardinality and its stale mark included). Whether it converted
/// (false for a value already dense). WrongType from the header check; InvalidObject,
/// value untouched, for damaged sparse opcodes.
pub fn to_dense(hll: &mut Vec<u8>) -> Result<bool, HllError> {
    validate(hll)?;
    if hll[4] == DENSE {
        return Ok(false);
    }
    sparse_to_dense(hll, &mut Past::default())?;
    Ok(true)
}

/// PFDEBUG DECODE: the sparse opcodes as text, space-separated: `z:N` (ZERO), `Z:N`
/// (XZERO), `v:VALUE,N` (VAL). Every opcode is printed, even past register 16383, with
/// no soundness check. WrongType from the header check; NotSparse for a dense value.
pub fn decode_sparse(hll: &[u8]) -> Result<String, HllError> {
    validate(hll)?;
    if hll[4] != SPARSE {
        return Err(HllError::NotSparse);
    }
    let mut parts: Vec<String> = Vec::new();
    let mut p = HDR;
    while p < hll.len() {
        let op = op_at(hll, p);
        parts.push(match op {
            Op::Zero(n) => format!("z:{n}"),
            Op::XZero(n) => format!("Z:{n}"),
            Op::Val(v, n) => format!("v:{v},{n}"),
        });
        p += op.width();
    }
    Ok(parts.join(" "))
}

/// A small deterministic generator (SplitMix64) for the self test.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// PFSELFTEST: checks, as Redis' self test does, that (1) dense registers keep the values
/// written to them without disturbing their neighbours, over 1000 rounds of random
/// values; (2) a sparse and a dense HLL fed the same 10 million distinct elements agree
/// on the count at each power of ten, the sparse one is still sparse at 1, 10, 100 and
/// 1000 elements, where converting it to dense gives the dense one's registers, and the
/// estimate stays within six standard errors (1 at 10). `Err` carries the failure as
/// Redis words its reply (`TESTFAILED ...`). Deterministic: a fixed seed.
pub fn self_test() -> Result<(), String> {
    const ROUNDS: usize = 1000;
    let mut rng = SplitMix(0x4859_4c4c_5345_4c46);
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..4].copy_from_slice(b"HYLL");
    let mut expected = vec![0u8; REGISTERS];

    for _ in 0..ROUNDS {
        for (i, slot) in expected.iter_mut().enumerate() {
            let v = (rng.next() & u64::from(REGISTER_MAX)) as u8;
            *slot = v;
            dense_put(&mut dense[HDR..], i, v);
        }
        for (i, &want) in expected.iter().enumerate() {
            let got = dense_get(&dense[HDR..], i);
            if got != want {
                return Err(format!("TESTFAILED Register {i} should be {want} but is {got}"));
            }
        }
    }

    dense[HDR..].fill(0);
    let mut sparse = new_sparse();
    let sparse_max_bytes = 3000;
    let max_rel_err = 1.04 / (REGISTERS as f64).sqrt();
    let seed = rng.next();
    let mut checkpoint: u64 = 1;
    for j in 1..=10_000_000u64 {
        let element = (j ^ seed).to_le_bytes();
        let (index, value) = register_and_value(&element);
        dense_raise(&mut dense[HDR..], index, value);
        if let Err(e) = add(&mut sparse, &[&element], sparse_max_bytes) {
            return Err(format!("TESTFAILED adding to the sparse HLL: {e}"));
        }
        if j != checkpoint {
            continue;
        }
        if j < (sparse_max_bytes / 2) as u64 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".to_string());
        }
        if j < (sparse_max_bytes / 2) as u64 {
            let mut converted = sparse.clone();
            if to_dense(&mut converted) != Ok(true) || converted[HDR..] != dense[HDR..] {
                return Err("TESTFAILED sparse to dense conversion lost registers".to_string());
            }
        }
        let (dense_histo, _) = histogram(&dense);
        let (sparse_histo, sound) = histogram(&sparse);
        if !sound {
            return Err("TESTFAILED sparse HLL corrupted".to_string());
        }
        let estimated = estimate(&dense_histo);
        if estimated != estimate(&sparse_histo) {
            return Err("TESTFAILED dense/sparse disagree".to_string());
        }
        let abs_err = checkpoint.abs_diff(estimated);
        let max_err = if j == 10 { 1 } else { (max_rel_err * 6.0 * checkpoint as f64).ceil() as u64 };
        if abs_err > max_err {
            return Err(format!("TESTFAILED Too big error. card:{checkpoint} abserr:{abs_err}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values below were produced by redis-server 7.0.15 (Debian 7.0.15-1~deb12u10)
    // with the PFADD / PFCOUNT / PFMERGE calls each test repeats, then read back with GET.
    // Values over 400 bytes are compared by length, header and a 64-bit FNV-1a digest.

    const MAX: usize = 3000;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn fnv1a(b: &[u8]) -> u64 {
        b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3))
    }

    fn strings(prefix: &str, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
        range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
    }

    fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
        v.iter().map(Vec::as_slice).collect()
    }

    /// `PFADD key` of `elements` on a missing key, as one command.
    fn pfadd_new(elements: &[&[u8]]) -> Vec<u8> {
        let mut hll = new_sparse();
        add(&mut hll, elements, MAX).unwrap();
        hll
    }

    /// PFADD d:0 .. d:19999, 1000 per command: dense, as in Redis.
    fn dense_20000() -> Vec<u8> {
        let mut hll = new_sparse();
        for batch in 0..20 {
            let els = strings("d:", batch * 1000..(batch + 1) * 1000);
            add(&mut hll, &refs(&els), MAX).unwrap();
        }
        hll
    }

    fn abc() -> Vec<u8> {
        pfadd_new(&[b"a", b"b", b"c"])
    }

    fn hundred() -> Vec<u8> {
        pfadd_new(&refs(&strings("el:", 0..100)))
    }

    const F1: &str = "48594c4c0100000000000000000000807fff";
    const F2: &str = "48594c4c01000000000000000000008060f38050b1844bfb80425a";
    const F2_COUNTED: &str = "48594c4c01000000030000000000000060f38050b1844bfb80425a";
    const F3: &str = "48594c4c010000000000000000000080409a8440e980414780405e801b8840aa80405d8040738840\
        b380188040a2840380178040fa8040e5804142840b801a84406780404284411c8040588040528040\
        4e841784405a804128802e8040b38840978440418440968821844047884078884212840d8041a880\
        410a8041e680058040b180408e8c4076803d84409e8440fa8041a48041598440bf842980405b8827\
        8841859040758040468440c98440d7884100884133802d8041d0804095883080412c8c4040844081\
        8440689040f28840bf80358010801788407d80404388368440939000804092802184406488258c40\
        f38840d68840818440b09012843680405c8427804155842184416980029041fc8041cf80409e8441\
        0280398442a68c408f";
    const F3_COUNTED: &str = "48594c4c010000006400000000000000409a8440e980414780405e801b8840aa80405d8040738840\
        b380188040a2840380178040fa8040e5804142840b801a84406780404284411c8040588040528040\
        4e841784405a804128802e8040b38840978440418440968821844047884078884212840d8041a880\
        410a8041e680058040b180408e8c4076803d84409e8440fa8041a48041598440bf842980405b8827\
        8841859040758040468440c98440d7884100884133802d8041d0804095883080412c8c4040844081\
        8440689040f28840bf80358010801788407d80404388368440939000804092802184406488258c40\
        f38840d68840818440b09012843680405c8427804155842184416980029041fc8041cf80409e8441\
        0280398442a68c408f";

    #[test]
    fn an_empty_hll_is_what_pfadd_creates() {
        // PFADD empty
        assert_eq!(hex(&new_sparse()), F1);
        let mut hll = new_sparse();
        assert_eq!(add(&mut hll, &[], MAX), Ok(false));
        assert_eq!(count(&mut hll), Ok(0));
        assert_eq!(hex(&hll), "48594c4c0100000000000000000000007fff");
        assert_eq!(decode_sparse(&hll).unwrap(), "Z:16384");
        assert_eq!(encoding_name(&hll), "sparse");
    }

    #[test]
    fn a_small_sparse_hll_matches_redis_bytes_and_cache() {
        // PFADD abc a b c; PFCOUNT abc
        let mut hll = new_sparse();
        assert_eq!(add(&mut hll, &[b"a", b"b", b"c"], MAX), Ok(true));
        assert_eq!(hex(&hll), F2);
        assert_eq!(decode_sparse(&hll).unwrap(), "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603");
        assert_eq!(count(&mut hll), Ok(3));
        assert_eq!(hex(&hll), F2_COUNTED);
        // The test suite's cache checks: no change keeps the cache, a change marks it stale.
        assert_eq!(add(&mut hll, &[b"a", b"b", b"c"], MAX), Ok(false));
        assert_eq!(hll[15], 0x00);
        assert_eq!(add(&mut hll, &[b"1", b"2", b"3"], MAX), Ok(true));
        assert_eq!(hll[15], 0x80);
    }

    #[test]
    fn a_hundred_elements_match_redis_bytes() {
        // PFADD s el:0 .. el:99; PFCOUNT s
        let mut hll = hundred();
        assert_eq!(hex(&hll), F3);
        assert!(
            decode_sparse(&hll)
                .unwrap()
                .starts_with("Z:155 v:2,1 Z:234 v:1,1 Z:328 v:1,1 Z:95 v:1,1 z:28 v:3,1 Z:171 v:1,1")
        );
        assert!(decode_sparse(&hll).unwrap().ends_with("z:58 v:2,1 Z:679 v:4,1 Z:144"));
        assert_eq!(count(&mut hll), Ok(100));
        assert_eq!(hex(&hll), F3_COUNTED);
        // Counted again: the cache answers and nothing changes.
        assert_eq!(count(&mut hll), Ok(100));
        assert_eq!(hex(&hll), F3_COUNTED);
    }

    #[test]
    fn a_dense_hll_matches_redis_bytes_and_count() {
        let mut hll = dense_20000();
        assert_eq!(encoding_name(&hll), "dense");
        assert_eq!(hll.len(), 12304);
        assert_eq!(hex(&hll[..16]), "48594c4c000000000000000000000080");
        assert_eq!(fnv1a(&hll), 0x196f45bd27f900db);
        assert_eq!(count(&mut hll), Ok(20037));
        assert_eq!(hex(&hll[..16]), "48594c4c00000000454e000000000000");
        assert_eq!(fnv1a(&hll), 0xbbe01d7c694862dc);
    }

    /// Adds `t:0`, `t:1`, ... one per command until the value turns dense; the index of
    /// the element that turned it, and the value just before.
    fn grow_until_dense(max_bytes: usize) -> (usize, Vec<u8>, Vec<u8>) {
        let mut hll = new_sparse();
        for i in 0.. {
            let before = hll.clone();
            add(&mut hll, &[format!("t:{i}").as_bytes()], max_bytes).unwrap();
            if encoding_name(&hll) == "dense" {
                return (i, before, hll);
            }
        }
        unreachable!()
    }

    #[test]
    fn sparse_turns_dense_past_the_byte_limit_as_in_redis() {
        // Redis: PFADD t t:<i> for i = 0.. with hll-sparse-max-bytes 3000.
        let (at, before, after) = grow_until_dense(3000);
        assert_eq!(at, 1677);
        assert_eq!(before.len(), 2999);
        assert_eq!(fnv1a(&before), 0x8975f4aa88fcf0e9);
        assert_eq!(fnv1a(&after), 0xfd6d3bce28d250aa);
        // The same with hll-sparse-max-bytes 200.
        let (at, before, after) = grow_until_dense(200);
        assert_eq!(at, 65);
        assert_eq!(
            hex(&before),
            "48594c4c01000000000000000000008040c8800c80416a8840e9802c8440b980426e882480406e84\
        409c8040878440d580411b8c42098840f5902998405380268027842f80406b8443938441ad84423a\
        8440d080409b84425984425d80378841048840b488406d84413a84405a84412d8840ec80408b8040\
        4c8040ab8441e08043509041098840a284408e8c408d80348040888441cd8041b38040fc804090a8\
        2b84288406803f802084408380409b80407c8c41f280404d8443908041988441848040ec8441f0"
        );
        assert_eq!(fnv1a(&after), 0xb3efc58869e43544);
    }

    #[test]
    fn a_register_over_32_turns_sparse_dense() {
        // "big:3244251397" hashes to register 11247 with a run of 35.
        assert_eq!(register_and_value(b"big:3244251397"), (11247, 35));
        let mut hll = abc();
        let small = hll.len();
        assert_eq!(add(&mut hll, &[b"big:3244251397"], MAX), Ok(true));
        assert!(small < MAX);
        assert_eq!(encoding_name(&hll), "dense");
        assert_eq!(registers(&hll).unwrap()[11247], 35);
        // Redis: PFADD big a b c big:3244251397 (one command).
        let mut big = pfadd_new(&[b"a", b"b", b"c", b"big:3244251397"]);
        assert_eq!(fnv1a(&big), 0xddb3597747e93cce);
        assert_eq!(count(&mut big), Ok(4));
    }

    #[test]
    fn pfmerge_matches_redis() {
        let (abc, hundred, dense) = (abc(), hundred(), dense_20000());
        // PFMERGE m1 abc s: all sparse, so the result stays sparse.
        let mut m1 = merge(None, &[&abc, &hundred], MAX).unwrap();
        assert_eq!(
            hex(&m1),
            "48594c4c010000000000000000000080409a8440e980414780405e801b8840aa80405d8040738840\
        b380188040a2840380178040fa8040e5804142840b801a84406780404284411c8040588040528040\
        4e841784405a804128802e8040b38840978440418440968821844047884078884212840d8041a880\
        410a8041e680058040b180408e8c4076803d84409e8440fa8041a48041598440bf842980405b8827\
        8840cd8040b69040758040468440c98440d7884100884133802d8041d0804095883080412c8c4040\
        8440818440689040f28840bf80358010801788407d80404388368440939000804092802184406488\
        258c40f388405584407f8840818440b09012843680405c8427804155842184416980029041fc8041\
        cf80409e84410280398440db8041c98c408f"
        );
        assert_eq!(count(&mut m1), Ok(103));
        // PFMERGE m2 abc d: a dense input makes the result dense.
        let mut m2 = merge(None, &[&abc, &dense], MAX).unwrap();
        assert_eq!(fnv1a(&m2), 0x196f45bd27f900db);
        assert_eq!(count(&mut m2), Ok(20037));
        // PFADD m3 x y z; PFCOUNT m3; PFMERGE m3 abc: the target's bytes are edited in place
        // and its cache marked stale (the old count's low bytes stay).
        let mut m3 = pfadd_new(&[b"x", b"y", b"z"]);
        count(&mut m3).unwrap();
        assert_eq!(hex(&m3), "48594c4c01000000030000000000000061848058cd8845a08408");
        let m3 = merge(Some(&m3), &[&abc], MAX).unwrap();
        assert_eq!(hex(&m3), "48594c4c01000000030000000000008060f380408f8050208448ab88434e8042508408");
        // PFMERGE m4 (no sources).
        assert_eq!(hex(&merge(None, &[], MAX).unwrap()), F1);
    }

    #[test]
    fn pfcount_of_several_keys_matches_redis() {
        let (abc, hundred, dense) = (abc(), hundred(), dense_20000());
        assert_eq!(count_union(&[&abc, &hundred, &dense]), Ok(20133));
        assert_eq!(count_union(&[&abc, &hundred]), Ok(103));
        assert_eq!(count_union(&[&abc, b"HYLL"]), Err(HllError::WrongType));
    }

    #[test]
    fn registers_at_their_maximum_count_as_redis_does() {
        // SET all63 <dense header, cache stale> + 12288 bytes of 0xff; PFCOUNT all63 answers
        // -9223372036854775808 and leaves the header 48594c4c000000000000000000000080.
        let mut hll = b"HYLL\0\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
        hll.resize(DENSE_SIZE, 0xff);
        assert_eq!(count(&mut hll), Ok(1 << 63));
        assert_eq!(count(&mut hll).map(|c| c as i64), Ok(i64::MIN));
        assert_eq!(hex(&hll[..16]), "48594c4c000000000000000000000080");
    }

    #[test]
    fn damaged_values_get_redis_errors() {
        // Additional bytes at the tail of a sparse value.
        let mut hll = abc();
        hll.extend_from_slice(b"hello");
        assert_eq!(count(&mut hll), Err(HllError::InvalidObject));
        assert_eq!(registers(&hll), Err(HllError::InvalidObject));
        assert_eq!(to_dense(&mut hll), Err(HllError::InvalidObject));
        assert_eq!(count_union(&[&hll, &abc()]), Err(HllError::InvalidObject));
        assert_eq!(merge(None, &[&hll], MAX), Err(HllError::InvalidObject));
        // Broken magic, unknown encoding, dense of the wrong length.
        for (at, byte) in [(0, b'0'), (4, b'x'), (4, 0)] {
            let mut hll = abc();
            hll[at] = byte;
            assert_eq!(count(&mut hll), Err(HllError::WrongType));
            assert_eq!(add(&mut hll, &[b"a"], MAX), Err(HllError::WrongType));
            assert_eq!(merge(Some(&hll), &[], MAX), Err(HllError::WrongType));
        }
        assert_eq!(validate(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0"), Err(HllError::WrongType));
        assert_eq!(validate(b""), Err(HllError::WrongType));
        let mut dense = dense_20000();
        assert_eq!(decode_sparse(&dense), Err(HllError::NotSparse));
        dense.push(0);
        assert_eq!(validate(&dense), Err(HllError::WrongType));
        assert_eq!(HllError::WrongType.message(), "WRONGTYPE Key is not a valid HyperLogLog string value.");
        assert_eq!(HllError::InvalidObject.message(), "INVALIDOBJ Corrupted HLL object detected");
        assert_eq!(HllError::NotSparse.message(), "ERR HLL encoding is not sparse");
    }

    #[test]
    fn a_sparse_value_cut_inside_an_xzero_edits_as_redis_does() {
        // SET cut <sparse header> + 7f (an XZERO missing its second byte); PFADD cut ...
        let cut = || b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f".to_vec();
        let mut hll = cut();
        assert_eq!(add(&mut hll, &[b"a", b"b", b"c", b"d", b"e"], MAX), Ok(true));
        assert_eq!(hex(&hll), "48594c4c0100000000000000000000805c7b8044768050b184498c80426d8041");
        // An element beyond the registers the opcodes cover: INVALIDOBJ, and the value keeps
        // the edits made for the elements before it.
        let mut hll = cut();
        let els = strings("el:", 1..7);
        assert_eq!(add(&mut hll, &refs(&els), MAX), Err(HllError::InvalidObject));
        assert_eq!(hex(&hll), "48594c4c01000000000000000000008043f7804d5a8854f08058");
    }

    #[test]
    fn pfdebug_helpers() {
        let mut hll = hundred();
        count(&mut hll).unwrap();
        let regs = registers(&hll).unwrap();
        assert_eq!(regs.len(), 16384);
        assert_eq!((regs[155], regs[156], regs[390]), (2, 0, 1));
        let sparse = hll.clone();
        assert_eq!(to_dense(&mut hll), Ok(true));
        assert_eq!(encoding_name(&hll), "dense");
        assert_eq!(hll.len(), DENSE_SIZE);
        // The header is kept but for the encoding; registers and count are unchanged.
        assert_eq!(hll[..4], sparse[..4]);
        assert_eq!(hll[5..16], sparse[5..16]);
        assert_eq!(registers(&hll).unwrap(), regs);
        assert_eq!(count(&mut hll), Ok(100));
        hll[15] |= 0x80;
        assert_eq!(count(&mut hll), Ok(100));
        assert_eq!(to_dense(&mut hll), Ok(false));
    }

    #[test]
    fn sparse_and_dense_agree_on_registers_and_count() {
        let mut seed = 7u64;
        for round in 0..200 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let n = (seed >> 33) as usize % 120;
            let els = strings(&format!("r{round}:"), 0..n);
            let mut sparse = new_sparse();
            let mut dense = new_sparse();
            to_dense(&mut dense).unwrap();
            add(&mut sparse, &refs(&els), MAX).unwrap();
            add(&mut dense, &refs(&els), MAX).unwrap();
            assert_eq!(encoding_name(&sparse), "sparse");
            assert_eq!(registers(&sparse), registers(&dense));
            assert_eq!(count(&mut sparse), count(&mut dense));
        }
    }

    #[test]
    fn the_estimate_stays_within_five_percent() {
        let mut hll = new_sparse();
        let mut added = 0usize;
        for target in [10usize, 100, 1000, 5000, 10_000, 50_000, 100_000, 200_000] {
            let els = strings("acc:", added..target);
            add(&mut hll, &refs(&els), MAX).unwrap();
            added = target;
            let estimate = count(&mut hll).unwrap() as f64;
            let error = (estimate - target as f64).abs() / target as f64;
            assert!(error < 0.05, "{target}: estimated {estimate}");
        }
    }

    #[test]
    fn hashing_matches_redis_for_every_tail_length() {
        // The register and value Redis sets (PFADD m <e>; PFDEBUG GETREG m) for the
        // elements 01 08 0f 16 ... of 0 to 17 bytes, covering every tail length twice.
        let expected: [(usize, u8); 18] = [
            (5938, 2),
            (9478, 2),
            (4287, 1),
            (9628, 1),
            (6837, 1),
            (12139, 1),
            (556, 4),
            (15930, 1),
            (4937, 3),
            (11161, 2),
            (11170, 3),
            (14579, 5),
            (268, 5),
            (154, 1),
            (15630, 1),
            (10225, 2),
            (12922, 2),
            (3758, 1),
        ];
        for (len, want) in expected.iter().enumerate() {
            let element: Vec<u8> = (0..len).map(|i| (7 * i + 1) as u8).collect();
            assert_eq!(register_and_value(&element), *want, "{len} bytes");
        }
    }

    #[test]
    fn self_test_passes() {
        assert_eq!(self_test(), Ok(()));
    }
}
