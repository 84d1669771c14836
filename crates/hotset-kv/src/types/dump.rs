//! DUMP and RESTORE: a key's value as a self-checking payload, and back.
//!
//! Owns: the payload format, Hotset's own (Redis' RDB payloads are not read): the value
//! as the log encodes it (`hotset_base::record::encode_value`: a kind byte, then its
//! contents), then the payload format's version (2 bytes, little-endian, now 1), then a
//! CRC-32C of everything before it (4 bytes, little-endian). RESTORE refuses a payload
//! whose checksum, version or value does not read back, whatever its bytes.
//!
//! Must never: store a value a payload describes as empty (no command leaves one), or
//! replace an existing key without REPLACE.

use std::num::NonZeroU64;

use crate::access::KvResult;
use crate::error::KvError;
use crate::notify::class;
use crate::options::RestoreOptions;
use crate::persist::{data_of, value_is_empty, value_of};
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::value::{Entry, Value};
use hotset_base::record::{decode_value, encode_value};

/// The payload format's version.
const PAYLOAD_VERSION: u16 = 1;

/// DUMP's payload for `value`.
pub fn payload_of(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(&data_of(value), &mut out);
    out.extend_from_slice(&PAYLOAD_VERSION.to_le_bytes());
    let checksum = crc32c::crc32c(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// The value a payload holds; `BadPayload` for anything else.
pub fn value_of_payload(payload: &[u8]) -> KvResult<Value> {
    let (body, checksum) = payload.split_at_checked(payload.len().saturating_sub(4)).ok_or(KvError::BadPayload)?;
    if checksum.len() != 4 || crc32c::crc32c(body).to_le_bytes() != checksum {
        return Err(KvError::BadPayload);
    }
    let (value, version) = body.split_at_checked(body.len().saturating_sub(2)).ok_or(KvError::BadPayload)?;
    if version != PAYLOAD_VERSION.to_le_bytes() {
        return Err(KvError::BadPayload);
    }
    let value = value_of(&decode_value(value).map_err(|_| KvError::BadPayload)?);
    if value_is_empty(&value) {
        return Err(KvError::BadPayload);
    }
    Ok(value)
}

impl Shard {
    /// DUMP: the payload of the value at `key`, `None` when missing.
    pub fn dump(&self, key: KeyRef<'_>, now: u64) -> Option<Vec<u8>> {
        self.get(key, now).map(|entry| payload_of(&entry.value))
    }

    /// RESTORE: stores `value` at `key` with `expire_at` (a deadline already past stores
    /// nothing); BUSYKEY when the key exists and `replace` is not set.
    pub fn restore(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        value: Value,
        expire_at: Option<NonZeroU64>,
        options: RestoreOptions,
    ) -> KvResult<()> {
        let exists = self.get(key, now).is_some();
        if exists && !options.replace {
            return Err(KvError::BusyKey);
        }
        if expire_at.is_some_and(|at| at.get() <= now) {
            if exists {
                self.remove(key, now);
                self.event(class::GENERIC, "del", key.bytes);
            }
            return Ok(());
        }
        match self.get_mut(key, now) {
            Some(mut live) => {
                live.replace(value);
                live.set_expire_at(expire_at);
            }
            None => self.insert(key, Entry::new(value, expire_at)),
        }
        // As Redis: IDLETIME counts under an LRU policy, FREQ under an LFU one.
        let stamp = if crate::recency::lfu_mode() {
            options.freq.map(|freq| crate::recency::with_frequency(freq, now))
        } else {
            options.idle_secs.map(|idle| crate::recency::idle_for(idle, now))
        };
        if let Some(stamp) = stamp {
            self.peek(key, now).expect("restored just now").set_stamp(stamp);
        }
        self.event(class::GENERIC, "restore", key.bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::StrValue;

    #[test]
    fn payloads_round_trip_and_damage_is_refused() {
        let value: Value = Value::ZSet(Box::new([(&b"a"[..], 1.5), (&b"b"[..], -0.0)].into_iter().collect()));
        let payload = payload_of(&value);
        let back = value_of_payload(&payload).unwrap();
        assert_eq!(payload_of(&back), payload, "the same value again");
        for at in 0..payload.len() {
            let mut damaged = payload.clone();
            damaged[at] ^= 0x40;
            assert_eq!(value_of_payload(&damaged).err(), Some(KvError::BadPayload), "byte {at} flipped");
        }
        assert_eq!(value_of_payload(&payload[..payload.len() - 1]).err(), Some(KvError::BadPayload));
        assert_eq!(value_of_payload(b"").err(), Some(KvError::BadPayload));
        let text = payload_of(&Value::Str(StrValue::Int(-7)));
        assert!(matches!(value_of_payload(&text).unwrap(), Value::Str(StrValue::Int(-7))));
    }
}
