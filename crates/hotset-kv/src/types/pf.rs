//! The HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG), as operations on locked
//! shards over string values laid out as Redis lays them out (`hll.rs`).
//!
//! Owns: finding the strings, checking them (a key of another type is WRONGTYPE; a
//! string that is no HyperLogLog is HyperLogLog's WRONGTYPE), and storing what `hll.rs`
//! made of them: PFADD's and PFMERGE's new bytes, and PFCOUNT's refreshed cached count
//! (so PFCOUNT of one key writes, as in Redis). Must never: write a key whose bytes did
//! not change, or lose the deadline of a HyperLogLog it edits.
//!
//! `hll-sparse-max-bytes` is Redis' default, 3000: Hotset accepts and reports the
//! parameter (its encodings are its own) without applying it.

use std::ops::{Deref, DerefMut};

use crate::access::{KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::types::hll::{self, HllError};
use crate::types::strings::as_str;
use crate::value::{Entry, StrValue, Value};

/// Redis' default `hll-sparse-max-bytes`.
const SPARSE_MAX_BYTES: usize = 3000;

fn hll_error(error: HllError) -> KvError {
    KvError::Hll(error.message())
}

/// What PFDEBUG was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfDebug {
    /// The 16384 registers (the value is made dense first, as Redis does).
    GetReg,
    /// The sparse opcodes as text.
    Decode,
    /// `sparse` or `dense`.
    Encoding,
    /// Makes the value dense; whether it changed.
    ToDense,
}

/// PFDEBUG's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PfDebugAnswer {
    /// GETREG.
    Registers(Vec<u8>),
    /// DECODE, ENCODING.
    Text(String),
    /// TODENSE.
    Converted(bool),
}

impl Shard {
    /// The HyperLogLog string at `key`, copied out (`None` when missing).
    fn read_hll(&self, key: KeyRef<'_>, now: u64) -> KvResult<Option<Vec<u8>>> {
        let Some(entry) = self.get(key, now) else { return Ok(None) };
        let bytes = as_str(&entry.value)?.to_bytes();
        hll::validate(&bytes).map_err(hll_error)?;
        Ok(Some(bytes))
    }

    /// Stores `bytes` at `key`, keeping its deadline, or creating it without one.
    fn write_hll(&mut self, key: KeyRef<'_>, now: u64, bytes: Vec<u8>) {
        match self.get_mut(key, now) {
            Some(mut live) => drop(live.replace(Value::Str(StrValue::from_vec(bytes)))),
            None => self.insert(key, Entry::new(Value::Str(StrValue::from_vec(bytes)), None)),
        }
    }

    /// PFADD: whether the HyperLogLog changed (a new key always did).
    pub fn pfadd(&mut self, key: KeyRef<'_>, now: u64, elements: &[&[u8]]) -> KvResult<bool> {
        let existing = self.read_hll(key, now)?;
        let created = existing.is_none();
        let mut bytes = existing.unwrap_or_else(hll::new_sparse);
        let added = hll::add(&mut bytes, elements, SPARSE_MAX_BYTES);
        // Damage found part-way keeps the edits made before it, as Redis keeps them.
        let changed = created || !matches!(added, Ok(false));
        if changed {
            self.write_hll(key, now, bytes);
            self.event(class::STRING, "pfadd", key.bytes);
        }
        added.map(|changed_registers| created || changed_registers).map_err(hll_error)
    }

    /// PFCOUNT of one key: its estimate, the refreshed cache stored when it changed.
    pub fn pfcount(&mut self, key: KeyRef<'_>, now: u64) -> KvResult<u64> {
        let Some(mut bytes) = self.read_hll(key, now)? else { return Ok(0) };
        let before = bytes.clone();
        let count = hll::count(&mut bytes).map_err(hll_error)?;
        if bytes != before {
            self.write_hll(key, now, bytes);
        }
        Ok(count)
    }

    /// PFDEBUG on the HyperLogLog at `key`.
    pub fn pfdebug(&mut self, key: KeyRef<'_>, now: u64, what: PfDebug) -> KvResult<PfDebugAnswer> {
        let mut bytes = self.read_hll(key, now)?.ok_or(KvError::PfDebugMissing)?;
        Ok(match what {
            PfDebug::Encoding => PfDebugAnswer::Text(hll::encoding_name(&bytes).to_string()),
            PfDebug::Decode => PfDebugAnswer::Text(hll::decode_sparse(&bytes).map_err(hll_error)?),
            PfDebug::GetReg | PfDebug::ToDense => {
                let converted = hll::to_dense(&mut bytes).map_err(hll_error)?;
                let registers = (what == PfDebug::GetReg).then(|| hll::registers(&bytes));
                if converted {
                    self.write_hll(key, now, bytes);
                }
                match registers {
                    Some(registers) => PfDebugAnswer::Registers(registers.map_err(hll_error)?),
                    None => PfDebugAnswer::Converted(converted),
                }
            }
        })
    }
}

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// The HyperLogLogs at `keys` (missing ones left out), each checked.
    fn hlls(&self, keys: &[&[u8]], now: u64) -> KvResult<Vec<Vec<u8>>> {
        let mut found = Vec::new();
        for key in keys {
            let (shard, key) = self.shard(key)?;
            found.extend(shard.read_hll(key, now)?);
        }
        Ok(found)
    }

    /// PFCOUNT of several keys: the estimate of their union (no cache is written).
    pub fn pfcount_union(&self, keys: &[&[u8]], now: u64) -> KvResult<u64> {
        let hlls = self.hlls(keys, now)?;
        let views: Vec<&[u8]> = hlls.iter().map(Vec::as_slice).collect();
        hll::count_union(&views).map_err(hll_error)
    }
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// PFMERGE: `dst` becomes the union of itself and `sources`.
    pub fn pfmerge(&mut self, dst: &[u8], sources: &[&[u8]], now: u64) -> KvResult<()> {
        let sources = self.hlls(sources, now)?;
        let (shard, dst) = self.shard_mut(dst)?;
        let target = shard.read_hll(dst, now)?;
        let views: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
        let merged = hll::merge(target.as_deref(), &views, SPARSE_MAX_BYTES).map_err(hll_error)?;
        shard.write_hll(dst, now, merged);
        shard.event(class::STRING, "pfadd", dst.bytes);
        Ok(())
    }
}
