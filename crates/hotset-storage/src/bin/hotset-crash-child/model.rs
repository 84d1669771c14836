//! What the crash child writes, step by step, so the test can compute the exact state
//! any number of steps leaves (shared by the child and `tests/crash.rs`).

use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Threads writing at once (the log's group commit gathers them).
pub const WORKERS: u64 = 4;
/// Item documents per worker.
const ITEMS: u64 = 8;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

/// Step `n` of worker `w`: the documents it upserts (head first) and the item it deletes.
/// Item sizes vary up to a few KiB so records straddle file pages.
pub fn step_docs(w: u64, n: u64, seed: u64) -> (Vec<Value>, String) {
    let pad = |slot: u64| {
        let h = mix(seed ^ (w << 40) ^ (n << 8) ^ slot);
        let len = (h % 3000) as usize;
        let letter = (b'a' + (h % 26) as u8) as char;
        std::iter::repeat_n(letter, len).collect::<String>()
    };
    let item = |slot: u64| json!({"id": format!("w{w}:{slot}"), "seq": n, "pad": pad(slot)});
    let puts = vec![json!({"id": format!("w{w}"), "seq": n}), item(n % ITEMS), item((n + 3) % ITEMS)];
    (puts, format!("w{w}:{}", (n + 5) % ITEMS))
}

/// Applies worker `w`'s steps `steps` to `docs` (its documents by id).
#[allow(dead_code)] // Only the test reads the model back.
pub fn apply_steps(docs: &mut BTreeMap<String, Value>, w: u64, steps: std::ops::RangeInclusive<u64>, seed: u64) {
    for n in steps {
        let (puts, delete) = step_docs(w, n, seed);
        for doc in puts {
            docs.insert(doc["id"].as_str().expect("ids are strings").to_string(), doc);
        }
        docs.remove(&delete);
    }
}
