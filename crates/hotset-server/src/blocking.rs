//! Clients blocked on lists, sorted sets and streams: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH,
//! BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, and XREAD and XREADGROUP with BLOCK.
//!
//! A pop takes what it serves, so a client that cannot be served leaves the ones queued
//! after it waiting; a stream read takes nothing, so every reader on a key is tried. An
//! XREADGROUP on a key that was deleted or replaced (DEL, SET, FLUSHDB...), or whose group
//! was destroyed, is answered with Redis' error instead of waiting on.
//!
//! Owns: `BlockRequest` (what a blocking command waits for, parsed once), `attempt` (the
//! pop a blocking command does, for its own first try, inside EXEC, and on a blocked
//! client's behalf), and `Blocking`, the registry of blocked clients: one FIFO queue per
//! (keyspace, key), served by whichever connection made a key ready, right after its
//! command (or its EXEC) finished, on its own thread. The served client's reply travels
//! to it as a push (`Push::Unblocked`) with the log position of the pop, which its
//! connection waits for before writing it.
//!
//! Never: hold the registry lock while a shard lock is held (the order is registry, then
//! shards: a waker calls `wake` after its command released its shards), or let a push and
//! a blocking client miss each other: a client registers after `blocked` is raised and a
//! fence, and retries under the registry lock; a waker fences after its write and then
//! reads `blocked`, so either the retry sees the element or the waker sees the client.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering, fence};
use std::time::Duration;

use crate::commands::args::{self, CmdError};
use crate::commands::lists::{MPop, end, mpop_reply};
use crate::commands::streams;
use crate::commands::zsets::{min_or_max, zmpop_reply};
use crate::pubsub::{Outbox, Push};
use crate::resp::reply::{Protocol, Reply};
use hotset_core::kv::{End, Keyspace, KvError, KvOps, XFrom, XGroupFrom, XReadGroup};
use hotset_core::{Acks, Durability};
use parking_lot::Mutex;

/// What a blocking command pops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockOp {
    /// BLPOP, BRPOP: one element from the first non-empty of the keys.
    Pop(End),
    /// BLMOVE, BRPOPLPUSH: from the one key onto `dst`.
    Move { dst: Vec<u8>, from: End, to: End },
    /// BLMPOP: up to `count` elements from the first non-empty of the keys.
    MPop { end: End, count: usize },
    /// BZPOPMIN, BZPOPMAX (`max`): the lowest (highest) member of the first non-empty
    /// sorted set of the keys.
    ZPop { max: bool },
    /// BZMPOP: up to `count` members from the first non-empty sorted set of the keys.
    ZMPop { max: bool, count: usize },
    /// XREAD: entries after each key's position (`$` resolved by the first attempt), at
    /// most `count` per key; waits only with BLOCK (`block`).
    XRead { from: Vec<XFrom>, count: usize, block: bool },
    /// XREADGROUP: entries for a group's consumer; waits only with BLOCK and `>`.
    XReadGroup { from: Vec<XGroupFrom>, read: XReadGroup, count: usize, block: bool },
}

/// A blocking command, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRequest {
    /// The keys it waits on, in the command's order.
    pub keys: Vec<Vec<u8>>,
    pub op: BlockOp,
    /// How long it waits; `None`: for ever (a timeout of 0).
    pub timeout: Option<Duration>,
}

impl BlockRequest {
    /// Whether the command waits when its first attempt finds nothing (XREAD and
    /// XREADGROUP only with BLOCK); one that does not answers null.
    pub fn waits(&self) -> bool {
        match &self.op {
            BlockOp::XRead { block, .. } | BlockOp::XReadGroup { block, .. } => *block,
            _ => true,
        }
    }

    /// XREAD or XREADGROUP with BLOCK: refused from scripts (Redis' rule), where other
    /// blocking commands just do not wait.
    pub fn stream_block(&self) -> bool {
        matches!(self.op, BlockOp::XRead { block: true, .. } | BlockOp::XReadGroup { block: true, .. })
    }

    /// Whether a client that could not be served leaves the next in the queue waiting
    /// too: a pop that finds nothing means nothing is left for anyone, but a stream read
    /// takes nothing away, so every reader is tried.
    fn consumes(&self) -> bool {
        !matches!(self.op, BlockOp::XRead { .. } | BlockOp::XReadGroup { .. })
    }
}

/// Redis' blocking timeout: seconds, a float, not negative; 0 waits for ever.
fn timeout(arg: &[u8]) -> Result<Option<Duration>, CmdError> {
    let seconds: f64 = std::str::from_utf8(arg)
        .ok()
        .filter(|text| !text.is_empty() && text.trim() == *text)
        .and_then(|text| text.parse().ok())
        .filter(|seconds: &f64| seconds.is_finite())
        .ok_or_else(|| CmdError("ERR timeout is not a float or out of range".into()))?;
    if seconds < 0.0 {
        return Err(CmdError("ERR timeout is negative".into()));
    }
    // Redis counts in milliseconds: 0.0001 waits 0 ms, which is for ever.
    let millis = (seconds * 1000.0) as u64;
    Ok((millis > 0).then(|| Duration::from_millis(millis)))
}

/// BLPOP key [key ...] timeout.
pub fn parse_blpop(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    parse_pop(a, End::Left)
}

/// BRPOP key [key ...] timeout.
pub fn parse_brpop(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    parse_pop(a, End::Right)
}

fn parse_pop(a: &[&[u8]], end: End) -> Result<BlockRequest, CmdError> {
    let (last, keys) = a[1..].split_last().expect("the arity guarantees a key and a timeout");
    Ok(BlockRequest { timeout: timeout(last)?, keys: keys.iter().map(|k| k.to_vec()).collect(), op: BlockOp::Pop(end) })
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
pub fn parse_blmove(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    let (from, to) = (end(a[3])?, end(a[4])?);
    let timeout = timeout(a[5])?;
    Ok(BlockRequest { keys: vec![a[1].to_vec()], op: BlockOp::Move { dst: a[2].to_vec(), from, to }, timeout })
}

/// BRPOPLPUSH source destination timeout.
pub fn parse_brpoplpush(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    let timeout = timeout(a[3])?;
    let op = BlockOp::Move { dst: a[2].to_vec(), from: End::Right, to: End::Left };
    Ok(BlockRequest { keys: vec![a[1].to_vec()], op, timeout })
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count].
pub fn parse_blmpop(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    let timeout = timeout(a[1])?;
    let MPop { keys, end, count } = MPop::parse(&a[2..])?;
    Ok(BlockRequest { keys: keys.iter().map(|k| k.to_vec()).collect(), op: BlockOp::MPop { end, count }, timeout })
}

/// BZPOPMIN key [key ...] timeout.
pub fn parse_bzpopmin(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    parse_zpop(a, false)
}

/// BZPOPMAX key [key ...] timeout.
pub fn parse_bzpopmax(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    parse_zpop(a, true)
}

fn parse_zpop(a: &[&[u8]], max: bool) -> Result<BlockRequest, CmdError> {
    let (last, keys) = a[1..].split_last().expect("the arity guarantees a key and a timeout");
    Ok(BlockRequest {
        timeout: timeout(last)?,
        keys: keys.iter().map(|k| k.to_vec()).collect(),
        op: BlockOp::ZPop { max },
    })
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
pub fn parse_bzmpop(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    let timeout = timeout(a[1])?;
    let MPop { keys, end: max, count } = MPop::parse_with(&a[2..], min_or_max)?;
    Ok(BlockRequest { keys: keys.iter().map(|k| k.to_vec()).collect(), op: BlockOp::ZMPop { max, count }, timeout })
}

/// BLOCK's milliseconds as a wait: 0 waits for ever.
fn block_ms(block: Option<u64>) -> Option<Duration> {
    block.filter(|&ms| ms > 0).map(Duration::from_millis)
}

/// XREAD [COUNT count] [BLOCK ms] STREAMS key [key ...] id [id ...].
pub fn parse_xread(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    let parsed = streams::parse_xread(a, false)?;
    let from = streams::xread_from(&parsed.ids)?;
    let op = BlockOp::XRead { from, count: parsed.count, block: parsed.block.is_some() };
    Ok(BlockRequest { keys: parsed.keys, op, timeout: block_ms(parsed.block) })
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key [key ...]
/// id [id ...].
pub fn parse_xreadgroup(a: &[&[u8]]) -> Result<BlockRequest, CmdError> {
    let parsed = streams::parse_xread(a, true)?;
    let from = streams::xreadgroup_from(&parsed.ids)?;
    let (group, consumer, noack) = parsed.group.expect("XREADGROUP's parse requires GROUP");
    let read = XReadGroup { group, consumer, noack, serving: false };
    let op = BlockOp::XReadGroup { from, read, count: parsed.count, block: parsed.block.is_some() };
    Ok(BlockRequest { keys: parsed.keys, op, timeout: block_ms(parsed.block) })
}

/// On a blocked client's behalf a key of another type is passed over (Redis leaves the
/// client blocked); otherwise the error stands.
fn passed_over<T>(serving: bool, error: KvError) -> Result<Option<T>, KvError> {
    if serving && error == KvError::WrongType { Ok(None) } else { Err(error) }
}

/// Tries `request` once on `kv`: writes its reply and returns true when it popped
/// something. `serving`: on a blocked client's behalf, where a key of another type is
/// passed over (Redis leaves the client blocked) instead of answered with WRONGTYPE;
/// a BLMOVE whose destination holds another type is answered with the error then.
pub fn attempt<K: KvOps>(
    kv: &K,
    request: &mut BlockRequest,
    serving: bool,
    r: &mut Reply<'_>,
) -> Result<bool, CmdError> {
    match &mut request.op {
        BlockOp::XRead { from, count, .. } => {
            // A blocked reader takes at most 1,000 entries per key when it gave no COUNT.
            let count = if serving && *count == 0 { 1000 } else { *count };
            let served = match kv.xread(&request.keys, from, count) {
                Ok(served) => served,
                Err(error) => return passed_over::<()>(serving, error).map(|_| false).map_err(CmdError::from),
            };
            if served.is_empty() {
                return Ok(false);
            }
            streams::xread_reply(r, &served, streams::xread_entries);
            Ok(true)
        }
        BlockOp::XReadGroup { from, read, count, .. } => {
            let count = if serving && *count == 0 { 1000 } else { *count };
            read.serving = serving;
            let served = kv.xreadgroup(&request.keys, from, read, count)?;
            if served.is_empty() {
                return Ok(false);
            }
            streams::xread_reply(r, &served, streams::xreadgroup_entries);
            Ok(true)
        }
        BlockOp::Pop(end) => {
            for key in &request.keys {
                if let Some(mut items) = kv.pop(key, *end, 1).or_else(|error| passed_over(serving, error))? {
                    r.array(2);
                    r.bulk(key);
                    r.bulk(&items.pop().expect("a popped list had an element"));
                    return Ok(true);
                }
            }
            Ok(false)
        }
        BlockOp::MPop { end, count } => {
            for key in &request.keys {
                if let Some(items) = kv.pop(key, *end, *count).or_else(|error| passed_over(serving, error))? {
                    mpop_reply(Some((key.clone(), items)), r);
                    return Ok(true);
                }
            }
            Ok(false)
        }
        BlockOp::ZPop { max } => {
            for key in &request.keys {
                if let Some(popped) = kv.zpop(key, *max, 1).or_else(|error| passed_over(serving, error))?
                    && let Some((member, score)) = popped.first()
                {
                    r.array(3);
                    r.bulk(key);
                    r.bulk(member);
                    r.double(*score);
                    return Ok(true);
                }
            }
            Ok(false)
        }
        BlockOp::ZMPop { max, count } => {
            for key in &request.keys {
                if let Some(popped) = kv.zpop(key, *max, *count).or_else(|error| passed_over(serving, error))? {
                    zmpop_reply(Some((key.clone(), popped)), r);
                    return Ok(true);
                }
            }
            Ok(false)
        }
        BlockOp::Move { dst, from, to } => {
            let src = &request.keys[0];
            if serving && kv.llen(src).unwrap_or(0) == 0 {
                return Ok(false);
            }
            match kv.lmove(src, dst, *from, *to) {
                Ok(Some(item)) => {
                    r.bulk(&item);
                    Ok(true)
                }
                Ok(None) => Ok(false),
                Err(error) if serving => {
                    r.error(&error.to_string());
                    Ok(true)
                }
                Err(error) => Err(error.into()),
            }
        }
    }
}

/// A blocked client.
struct Waiter {
    keyspace: Arc<Keyspace>,
    keyspace_name: String,
    request: BlockRequest,
    protocol: Protocol,
    outbox: Outbox,
}

#[derive(Default)]
struct Registry {
    /// Clients waiting on each (keyspace, key), first come first served.
    queues: HashMap<(String, Vec<u8>), VecDeque<u64>>,
    waiters: HashMap<u64, Waiter>,
}

impl Registry {
    /// Takes client `id` out of every queue it is in.
    fn remove(&mut self, id: u64) -> Option<Waiter> {
        let waiter = self.waiters.remove(&id)?;
        for key in &waiter.request.keys {
            let slot = (waiter.keyspace_name.clone(), key.clone());
            if let Some(queue) = self.queues.get_mut(&slot) {
                queue.retain(|&queued| queued != id);
                if queue.is_empty() {
                    self.queues.remove(&slot);
                }
            }
        }
        Some(waiter)
    }
}

/// Every blocked client of the server.
#[derive(Default)]
pub struct Blocking {
    /// Clients blocked now (INFO's `blocked_clients`); a waker reads it without the lock.
    blocked: AtomicUsize,
    inner: Mutex<Registry>,
}

impl Blocking {
    /// How many clients are blocked.
    pub fn blocked(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Whether client `id` is blocked.
    pub fn is_blocked(&self, id: u64) -> bool {
        self.blocked() > 0 && self.inner.lock().waiters.contains_key(&id)
    }

    /// Blocks client `id` on `request`, unless a retry under the registry lock pops
    /// something: then its reply is in `r` and this returns false. The retry's write notes
    /// its record into `acks` (the batch's).
    #[allow(clippy::too_many_arguments)]
    pub fn block(
        &self,
        id: u64,
        keyspace: &Arc<Keyspace>,
        keyspace_name: &str,
        request: BlockRequest,
        outbox: &Outbox,
        acks: &Acks,
        r: &mut Reply<'_>,
    ) -> Result<bool, CmdError> {
        self.blocked.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let mut registry = self.inner.lock();
        let mut request = request;
        let retried = attempt(&keyspace.writes(Durability::Collect(acks)), &mut request, false, r);
        if !matches!(retried, Ok(false)) {
            self.blocked.fetch_sub(1, Ordering::SeqCst);
            return retried.map(|_| false);
        }
        for key in &request.keys {
            registry.queues.entry((keyspace_name.to_string(), key.clone())).or_default().push_back(id);
        }
        let waiter = Waiter {
            keyspace: Arc::clone(keyspace),
            keyspace_name: keyspace_name.to_string(),
            request,
            protocol: r.protocol,
            outbox: outbox.clone(),
        };
        let previous = registry.waiters.insert(id, waiter);
        assert!(previous.is_none(), "client {id} blocked twice");
        Ok(true)
    }

    /// After a write that may have made `keys` of `keyspace_name` ready: serves the
    /// clients blocked on them, first come first served, for as long as they get
    /// something; a served BLMOVE makes its destination ready in turn.
    pub fn wake<'k>(&self, keyspace_name: &str, keys: impl IntoIterator<Item = &'k [u8]>) {
        fence(Ordering::SeqCst);
        if self.blocked.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut registry = self.inner.lock();
        let mut ready: Vec<Vec<u8>> = keys.into_iter().map(<[u8]>::to_vec).collect();
        while let Some(key) = ready.pop() {
            let slot = (keyspace_name.to_string(), key);
            let queued: Vec<u64> =
                registry.queues.get(&slot).map(|queue| queue.iter().copied().collect()).unwrap_or_default();
            for id in queued {
                let Some(waiter) = registry.waiters.get_mut(&id) else { continue };
                let acks = Acks::new();
                let mut out = Vec::new();
                let mut reply = Reply { out: &mut out, protocol: waiter.protocol };
                let kv = waiter.keyspace.writes(Durability::Collect(&acks));
                let mut error = None;
                let served = match attempt(&kv, &mut waiter.request, true, &mut reply) {
                    Ok(served) => served,
                    Err(CmdError(message)) => {
                        reply.error(&message);
                        error = Some(message);
                        true
                    }
                };
                if !served && waiter.request.consumes() {
                    break;
                }
                if !served {
                    continue;
                }
                let waiter = registry.remove(id).expect("the client was queued");
                self.blocked.fetch_sub(1, Ordering::SeqCst);
                if let BlockOp::Move { dst, .. } = &waiter.request.op {
                    ready.push(dst.clone());
                }
                waiter.outbox.send(Push::Unblocked { reply: out, lsn: acks.last_lsn(), error });
            }
        }
    }

    /// After a write that may have touched any key (FLUSHDB in `keyspace`, FLUSHALL in
    /// every one, `None`): tries every blocked client there.
    pub fn wake_everyone(&self, keyspace: Option<&str>) {
        fence(Ordering::SeqCst);
        if self.blocked.load(Ordering::SeqCst) == 0 {
            return;
        }
        let slots: Vec<(String, Vec<u8>)> = {
            let registry = self.inner.lock();
            registry.queues.keys().filter(|(name, _)| keyspace.is_none_or(|wanted| wanted == name)).cloned().collect()
        };
        for (name, key) in slots {
            self.wake(&name, [key.as_slice()]);
        }
    }

    /// Unregisters client `id` (its timeout passed, or it disconnected); false when it
    /// was not blocked (a push already unblocked it).
    pub fn cancel(&self, id: u64) -> bool {
        if self.blocked() == 0 {
            return false;
        }
        let removed = self.inner.lock().remove(id).is_some();
        if removed {
            self.blocked.fetch_sub(1, Ordering::SeqCst);
        }
        removed
    }

    /// CLIENT UNBLOCK: ends client `id`'s wait as a timeout would, or with the UNBLOCKED
    /// error; false when it was not blocked.
    pub fn unblock(&self, id: u64, error: bool) -> bool {
        let Some(waiter) = self.inner.lock().remove(id) else { return false };
        self.blocked.fetch_sub(1, Ordering::SeqCst);
        let mut out = Vec::new();
        let mut reply = Reply { out: &mut out, protocol: waiter.protocol };
        const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
        match error {
            true => reply.error(UNBLOCKED),
            false => reply.null_array(),
        }
        waiter.outbox.send(Push::Unblocked { reply: out, lsn: None, error: error.then(|| UNBLOCKED.to_string()) });
        true
    }
}

/// Whether `arg` is CLIENT UNBLOCK's ERROR (true) or TIMEOUT (false) word.
pub fn unblock_mode(arg: Option<&&[u8]>) -> Result<bool, CmdError> {
    match arg {
        None => Ok(false),
        Some(word) if args::is(word, "TIMEOUT") => Ok(false),
        Some(word) if args::is(word, "ERROR") => Ok(true),
        Some(_) => Err(CmdError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_follow_redis() {
        assert_eq!(timeout(b"0").unwrap(), None);
        assert_eq!(timeout(b"0.0001").unwrap(), None, "under a millisecond waits for ever, as in Redis");
        assert_eq!(timeout(b"1.5").unwrap(), Some(Duration::from_millis(1500)));
        assert_eq!(timeout(b"-1").unwrap_err().0, "ERR timeout is negative");
        for bad in [&b"abc"[..], b"", b" 1", b"inf", b"nan"] {
            assert_eq!(timeout(bad).unwrap_err().0, "ERR timeout is not a float or out of range");
        }
    }

    #[test]
    fn requests_parse_their_keys_and_ends() {
        let blpop = parse_blpop(&[b"BLPOP", b"a", b"b", b"0"]).unwrap();
        assert_eq!((blpop.keys, blpop.op), (vec![b"a".to_vec(), b"b".to_vec()], BlockOp::Pop(End::Left)));
        let blmove = parse_blmove(&[b"BLMOVE", b"s", b"d", b"right", b"LEFT", b"2"]).unwrap();
        assert_eq!(blmove.op, BlockOp::Move { dst: b"d".to_vec(), from: End::Right, to: End::Left });
        let blmpop = parse_blmpop(&[b"BLMPOP", b"0", b"2", b"a", b"b", b"RIGHT", b"COUNT", b"3"]).unwrap();
        assert_eq!(blmpop.op, BlockOp::MPop { end: End::Right, count: 3 });
        assert!(parse_blmove(&[b"BLMOVE", b"s", b"d", b"up", b"LEFT", b"2"]).is_err());
    }
}
