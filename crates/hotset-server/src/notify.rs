//! Keyspace notifications: Redis' `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>`
//! messages, published for the events the key-value engine reports.
//!
//! Owns: `KeyspaceEvents`, the engine's event listener (`hotset_core::kv::KeyEvents`),
//! which filters events by the `notify-keyspace-events` classes and publishes them on
//! pub/sub; `<db>` is the keyspace's name (`0`..`15` for SELECT's numbered ones). Never:
//! lock a shard (the engine calls it with the changed keys' shards locked, which is what
//! keeps one key's events in the order of its writes), or block on a subscriber (a
//! publish only queues onto each subscriber's outbox).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::params::events;
use crate::pubsub::{Kind, PubSub};
use hotset_core::kv::KeyEvents;

/// Publishes the engine's events by the `notify-keyspace-events` flags.
pub struct KeyspaceEvents {
    pub pubsub: Arc<PubSub>,
    /// `notify-keyspace-events` as `params::events` bits (the engine's classes use the
    /// same bits).
    pub flags: Arc<AtomicU32>,
}

impl KeyEvents for KeyspaceEvents {
    fn events(&self, keyspace: &str, reported: &mut dyn Iterator<Item = (u32, &'static str, &[u8])>) {
        let flags = self.flags.load(Ordering::Relaxed);
        if flags & (events::KEYSPACE | events::KEYEVENT) == 0 {
            return;
        }
        let mut channel = Vec::new();
        for (class, name, key) in reported {
            if flags & class == 0 {
                continue;
            }
            if flags & events::KEYSPACE != 0 {
                channel.clear();
                channel.extend_from_slice(format!("__keyspace@{keyspace}__:").as_bytes());
                channel.extend_from_slice(key);
                self.pubsub.publish(Kind::Channel, &channel, name.as_bytes());
            }
            if flags & events::KEYEVENT != 0 {
                let channel = format!("__keyevent@{keyspace}__:{name}");
                self.pubsub.publish(Kind::Channel, channel.as_bytes(), key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotset_core::kv::event_class;

    /// The engine reports classes with the bits `notify-keyspace-events` is parsed into,
    /// so the flags filter them directly.
    #[test]
    fn the_engine_classes_are_the_parameter_bits() {
        let pairs = [
            (event_class::GENERIC, events::GENERIC),
            (event_class::STRING, events::STRING),
            (event_class::LIST, events::LIST),
            (event_class::SET, events::SET),
            (event_class::HASH, events::HASH),
            (event_class::ZSET, events::ZSET),
            (event_class::EXPIRED, events::EXPIRED),
            (event_class::EVICTED, events::EVICTED),
            (event_class::STREAM, events::STREAM),
            (event_class::KEY_MISS, events::KEY_MISS),
            (event_class::NEW, events::NEW),
        ];
        for (engine, parameter) in pairs {
            assert_eq!(engine, parameter);
        }
    }
}
