//! Unit, model-based and concurrency tests of the key-value engine.
//!
//! Owns: test helpers and the test submodules, one per command family.
//!
//! Must never: sleep or depend on wall-clock time — every test drives a
//! [`ManualClock`].
//!
//! Invariants: each test builds its own keyspace, so tests are independent
//! and can run in parallel.

use std::sync::Arc;

use crate::{Keyspace, KeyspaceConfig};
use hotset_base::clock::ManualClock;

mod across;
mod concurrency;
mod events;
mod evict;
mod glob;
mod hashes;
mod keys;
mod model;
mod scan;
mod strings;
mod txn;
mod watch;

/// Start time of every test clock (an arbitrary, realistic epoch-ms value).
const T0: u64 = 1_700_000_000_000;

/// A default keyspace on a manual clock.
fn keyspace() -> (Arc<ManualClock>, Keyspace) {
    let clock = Arc::new(ManualClock::new(T0));
    (clock.clone(), Keyspace::new(clock))
}

/// A keyspace with `shards` shards on a manual clock.
fn keyspace_with(config: KeyspaceConfig) -> (Arc<ManualClock>, Keyspace) {
    let clock = Arc::new(ManualClock::new(T0));
    (clock.clone(), Keyspace::with_config(clock, config))
}

/// `Some(bytes)` shorthand for expected values.
fn some(bytes: &[u8]) -> Option<Vec<u8>> {
    Some(bytes.to_vec())
}
