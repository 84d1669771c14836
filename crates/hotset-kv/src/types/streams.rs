//! Stream commands, as operations on locked shards.
//!
//! Owns: the semantics of XADD (ids, NOMKSTREAM, trimming), XRANGE/XREVRANGE, XLEN,
//! XDEL, XTRIM, XSETID, XREAD, the consumer groups (XGROUP's subcommands, XREADGROUP,
//! XACK, XPENDING, XCLAIM, XAUTOCLAIM) and what XINFO reports, as Redis 7.0 defines them.
//!
//! Must never: change a stream before every check that can fail has passed (a refused
//! XADD leaves no key behind), or move a group's last id backwards except by XGROUP SETID.
//! Unlike other collections, an empty stream is a key like any other (XADD MAXLEN 0 and
//! XGROUP CREATE MKSTREAM make one).
//!
//! Logging: a write to an existing stream notes the parts it changed (`part`): the
//! entries added or deleted, the stream's counters (always, with the first live id, below
//! which recovery drops entries: that is how a trim is replayed), group headers,
//! consumers and pending entries. Creating or destroying a group logs the stream whole,
//! so a group never mixes with the remains of an earlier one of the same name.
//!
//! Events, as Redis 7.0 notes them: `xadd`, `xtrim`, `xdel`, `xsetid`, `xgroup-create`,
//! `xgroup-setid`, `xgroup-destroy`, `xgroup-createconsumer`, `xgroup-delconsumer`.

use crate::access::{KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::types::stream::{Fields, Group, Stream, StreamId, Trim, node_limits};
use crate::value::{Entry, Value};
use std::ops::{Deref, DerefMut};

/// An entry as commands answer it: its id and its field-value pairs.
pub type StreamEntry = (StreamId, Vec<(Vec<u8>, Vec<u8>)>);

/// An entry a group command answers, whose fields are `None` when the entry was deleted
/// while pending.
pub type MaybeEntry = (StreamId, Option<Vec<(Vec<u8>, Vec<u8>)>>);

/// The names of the parts of a stream a write notes for the log.
pub(crate) mod part {
    use super::StreamId;

    /// The stream's counters and first live id.
    pub const META: &[u8] = b"m";
    pub const ENTRY: u8 = b'e';
    pub const GROUP: u8 = b'g';
    pub const CONSUMER: u8 = b'c';
    pub const PENDING: u8 = b'p';

    pub fn entry(id: StreamId) -> Vec<u8> {
        [&[ENTRY][..], &id.to_bytes()].concat()
    }

    pub fn group(name: &[u8]) -> Vec<u8> {
        [&[GROUP][..], name].concat()
    }

    fn in_group(tag: u8, group: &[u8], rest: &[u8]) -> Vec<u8> {
        [&[tag][..], &(group.len() as u32).to_be_bytes(), group, rest].concat()
    }

    pub fn consumer(group: &[u8], name: &[u8]) -> Vec<u8> {
        in_group(CONSUMER, group, name)
    }

    pub fn pending(group: &[u8], id: StreamId) -> Vec<u8> {
        in_group(PENDING, group, &id.to_bytes())
    }

    /// A consumer or pending part's group and the rest.
    pub fn split_group(part: &[u8]) -> Option<(&[u8], &[u8])> {
        let len = u32::from_be_bytes(part.get(1..5)?.try_into().ok()?) as usize;
        let group = part.get(5..5 + len)?;
        Some((group, &part[5 + len..]))
    }
}

/// The parts a write changed.
#[derive(Default)]
struct Parts(Vec<Vec<u8>>);

impl Parts {
    fn add(&mut self, part: Vec<u8>) {
        self.0.push(part);
    }

    fn group(&mut self, group: &[u8]) {
        self.add(part::group(group));
    }

    fn consumer(&mut self, group: &[u8], name: &[u8]) {
        self.add(part::consumer(group, name));
    }

    fn pending(&mut self, group: &[u8], id: StreamId) {
        self.add(part::pending(group, id));
    }
}

/// XADD's id argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAddId {
    /// `*`: from the clock.
    Auto,
    /// `ms-*`: these milliseconds, the next sequence.
    Ms(u64),
    /// An explicit id.
    Exact(StreamId),
}

/// A trimming request (XTRIM, or XADD's MAXLEN/MINID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimArgs {
    /// What to keep.
    pub rule: Trim,
    /// `~`: whole nodes only.
    pub approx: bool,
    /// LIMIT, `None` when not given (with `~`, Redis' default of 100 nodes applies).
    pub limit: Option<u64>,
}

impl TrimArgs {
    /// The cap on entries removed: LIMIT, else 100 nodes' worth for `~`, else none.
    fn effective_limit(&self) -> u64 {
        match (self.approx, self.limit) {
            (_, Some(limit)) => limit,
            (false, None) => 0,
            (true, None) => {
                let nodes = 100 * node_limits().0 as u64;
                if nodes == 0 { 10_000 } else { nodes.min(1_000_000) }
            }
        }
    }
}

/// XADD's arguments.
#[derive(Debug, Clone)]
pub struct XAdd<'a> {
    /// The id asked for.
    pub id: XAddId,
    /// NOMKSTREAM: do not create a missing stream.
    pub nomkstream: bool,
    /// MAXLEN or MINID, if given.
    pub trim: Option<TrimArgs>,
    /// The entry's field-value pairs.
    pub pairs: Vec<(&'a [u8], &'a [u8])>,
}

/// Where XREAD reads from on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XFrom {
    /// `$`: after the stream's last id at the time of the call (resolved by it).
    Last,
    /// After this id.
    After(StreamId),
}

/// Where XREADGROUP reads from on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XGroupFrom {
    /// `>`: entries never delivered to the group.
    New,
    /// The consumer's own pending entries after this id.
    History(StreamId),
}

/// XREADGROUP's group, consumer and flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XReadGroup {
    /// The group.
    pub group: Vec<u8>,
    /// The consumer reading.
    pub consumer: Vec<u8>,
    /// NOACK: deliver without making entries pending.
    pub noack: bool,
    /// On a blocked client's behalf: a missing key or group is its own error then.
    pub serving: bool,
}

/// XCLAIM's IDLE and TIME options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimDelivery {
    /// IDLE: delivered this many ms before now (the keyspace's clock).
    Idle(i64),
    /// TIME: delivered at this time (ms since the epoch).
    At(i64),
}

/// XCLAIM's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XClaimOptions {
    /// IDLE or TIME (the last given): the delivery time to set.
    pub delivery: Option<ClaimDelivery>,
    /// RETRYCOUNT: the delivery count to set.
    pub retry_count: Option<u64>,
    /// FORCE: claim ids that are not pending (but exist).
    pub force: bool,
    /// JUSTID: answer ids only, and leave delivery counts be.
    pub justid: bool,
    /// LASTID: move the group's last id up to this.
    pub last_id: Option<StreamId>,
}

/// XINFO STREAM's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHead {
    /// Live entries.
    pub length: u64,
    /// Nodes holding them.
    pub nodes: usize,
    /// The greatest id added.
    pub last_id: StreamId,
    /// The greatest id deleted.
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// The first entry's id as recorded.
    pub first_id: StreamId,
}

/// XINFO STREAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The counters.
    pub head: StreamHead,
    /// How many groups.
    pub groups: usize,
    /// The first entry.
    pub first: Option<StreamEntry>,
    /// The last entry.
    pub last: Option<StreamEntry>,
}

/// A group as XINFO GROUPS reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// The group's name.
    pub name: Vec<u8>,
    /// How many consumers.
    pub consumers: usize,
    /// How many pending entries.
    pub pending: usize,
    /// The last id delivered.
    pub last_id: StreamId,
    /// Entries read, when known.
    pub entries_read: Option<u64>,
    /// Entries not yet delivered, when known (negative when ENTRIESREAD overstated).
    pub lag: Option<i64>,
}

/// A consumer as XINFO CONSUMERS reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// The consumer's name.
    pub name: Vec<u8>,
    /// How many entries are pending for it.
    pub pending: usize,
    /// Milliseconds since it was last seen.
    pub idle: u64,
}

/// A pending entry as XPENDING and XINFO STREAM FULL report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInfo {
    /// The entry's id.
    pub id: StreamId,
    /// The consumer it is pending for.
    pub consumer: Vec<u8>,
    /// Delivery time (ms since the epoch); XPENDING turns it into an idle time.
    pub delivery_time: u64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer in XINFO STREAM FULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerFull {
    /// The consumer's name.
    pub name: Vec<u8>,
    /// When it was last seen (ms since the epoch).
    pub seen_time: u64,
    /// How many entries are pending for it.
    pub pel_count: usize,
    /// Its pending entries (up to COUNT).
    pub pending: Vec<PendingInfo>,
}

/// A group in XINFO STREAM FULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFull {
    /// What XINFO GROUPS reports.
    pub info: GroupInfo,
    /// How many entries are pending.
    pub pel_count: usize,
    /// The pending entries (up to COUNT).
    pub pending: Vec<PendingInfo>,
    /// Its consumers.
    pub consumers: Vec<ConsumerFull>,
}

/// XINFO STREAM FULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFull {
    /// The counters.
    pub head: StreamHead,
    /// The entries (up to COUNT).
    pub entries: Vec<StreamEntry>,
    /// The groups.
    pub groups: Vec<GroupFull>,
}

/// XPENDING's summary form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSummary {
    /// How many entries are pending.
    pub count: usize,
    /// The lowest and highest pending ids.
    pub bounds: Option<(StreamId, StreamId)>,
    /// Consumers with pending entries, and how many.
    pub consumers: Vec<(Vec<u8>, usize)>,
}

/// XCLAIM's and XAUTOCLAIM's answer for one entry: its id (JUSTID) or the entry.
pub type Claimed = (StreamId, Option<Vec<(Vec<u8>, Vec<u8>)>>);

fn error(text: &str) -> KvError {
    KvError::Stream(text.to_string())
}

fn no_group(key: &[u8], group: &[u8], tail: &str) -> KvError {
    KvError::Stream(format!(
        "NOGROUP No such key '{}' or consumer group '{}'{tail}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

/// XGROUP on a missing key (CREATE without MKSTREAM, and every other subcommand).
fn xgroup_needs_key() -> KvError {
    error(
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the \
         MKSTREAM option to create an empty stream automatically.",
    )
}

/// XGROUP and XINFO CONSUMERS naming a group the stream does not have.
fn no_such_group(key: &[u8], group: &[u8]) -> KvError {
    KvError::Stream(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    ))
}

fn as_stream(value: &Value) -> KvResult<&Stream> {
    match value {
        Value::Stream(stream) => Ok(stream),
        _ => Err(KvError::WrongType),
    }
}

fn stream_mut(value: &mut Value) -> &mut Stream {
    match value {
        Value::Stream(stream) => stream,
        _ => unreachable!("the caller checked that the key holds a stream"),
    }
}

fn owned(fields: Fields<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    fields.to_vec()
}

fn entries<'s>(iter: impl Iterator<Item = (StreamId, Fields<'s>)>, count: usize) -> Vec<StreamEntry> {
    let limit = if count == 0 { usize::MAX } else { count };
    iter.take(limit).map(|(id, fields)| (id, owned(fields))).collect()
}

/// A stream's head as XINFO reports it.
fn head(stream: &Stream) -> StreamHead {
    StreamHead {
        length: stream.len(),
        nodes: stream.node_count(),
        last_id: stream.last_id,
        max_deleted: stream.max_deleted,
        entries_added: stream.entries_added,
        first_id: stream.first_id,
    }
}

fn group_info(stream: &Stream, name: &[u8], group: &Group) -> GroupInfo {
    GroupInfo {
        name: name.to_vec(),
        consumers: group.consumers().len(),
        pending: group.pending().len(),
        last_id: group.last_id,
        entries_read: u64::try_from(group.entries_read).ok(),
        lag: stream.lag(group),
    }
}

/// Delivers entries after `after` to `consumer` of group `name`: the group's last id,
/// read counter and (without NOACK) pending entries follow, as in Redis'
/// `streamReplyWithRange` with a group.
fn deliver_new(
    stream: &mut Stream,
    read: &XReadGroup,
    after: StreamId,
    count: usize,
    now: u64,
    parts: &mut Parts,
) -> Vec<MaybeEntry> {
    let Some(start) = after.next() else { return Vec::new() };
    let delivered = entries(stream.range(start, StreamId::MAX, false), count);
    for (id, _) in &delivered {
        stream.advance_group(&read.group, *id);
        if !read.noack {
            let group = stream.group_mut(&read.group).expect("the group was checked");
            group.set_pending(*id, &read.consumer, now, 1);
            parts.pending(&read.group, *id);
        }
    }
    parts.group(&read.group);
    delivered.into_iter().map(|(id, fields)| (id, Some(fields))).collect()
}

/// A consumer's own pending entries from `start` (XREADGROUP with an id): each delivered
/// again (its count and time move on); one deleted meanwhile comes with no fields.
fn deliver_history(
    stream: &mut Stream,
    read: &XReadGroup,
    start: StreamId,
    count: usize,
    now: u64,
    parts: &mut Parts,
) -> Vec<MaybeEntry> {
    let group = stream.group(&read.group).expect("the group was checked");
    let limit = if count == 0 { usize::MAX } else { count };
    let ids: Vec<StreamId> = group
        .consumer(&read.consumer)
        .map(|consumer| consumer.pending.range(start..).take(limit).copied().collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let fields = stream.get(id).map(owned);
        if fields.is_some() {
            let pending = stream.group_mut(&read.group).and_then(|g| g.pending_mut(id)).expect("a pending id");
            pending.delivery_time = now;
            pending.delivery_count += 1;
            parts.pending(&read.group, id);
        }
        out.push((id, fields));
    }
    out
}

impl Shard {
    /// The stream under `key`, or WRONGTYPE.
    pub fn read_stream(&self, key: KeyRef<'_>, now: u64) -> KvResult<Option<&Stream>> {
        self.get(key, now).map(|entry| as_stream(&entry.value)).transpose()
    }

    /// Runs `f` on the stream under `key` (created empty first when missing and `create`
    /// says so; otherwise `None`), and notes the parts it reports for the log. `f` must
    /// check everything that can fail before it changes the stream.
    fn stream_write<R>(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        create: bool,
        f: impl FnOnce(&mut Stream, &mut Parts) -> KvResult<R>,
    ) -> KvResult<Option<R>> {
        let mut parts = Parts::default();
        match self.get_mut_untouched(key, now) {
            Some(mut live) => {
                as_stream(live.value())?;
                let result = live.update(|value| f(stream_mut(value), &mut parts))?;
                if !parts.0.is_empty() {
                    parts.add(part::META.to_vec());
                }
                live.touch_fields(parts.0.iter().map(Vec::as_slice));
                Ok(Some(result))
            }
            None if create => {
                let mut stream = Stream::default();
                let result = f(&mut stream, &mut parts)?;
                self.insert(key, Entry::new(Value::Stream(Box::new(stream)), None));
                Ok(Some(result))
            }
            None => Ok(None),
        }
    }

    /// XADD: the id added; `None` with NOMKSTREAM on a missing key.
    pub fn xadd(&mut self, key: KeyRef<'_>, now: u64, args: &XAdd<'_>) -> KvResult<Option<StreamId>> {
        if args.id == XAddId::Exact(StreamId::MIN) {
            return Err(error("ERR The ID specified in XADD must be greater than 0-0"));
        }
        let mut trimmed = 0;
        let added = self.stream_write(key, now, !args.nomkstream, |stream, parts| {
            if stream.last_id == StreamId::MAX {
                return Err(error("ERR The stream has exhausted the last possible ID, unable to add more items"));
            }
            let smaller = || error("ERR The ID specified in XADD is equal or smaller than the target stream top item");
            let id = match args.id {
                XAddId::Auto => stream.next_id(now).ok_or_else(smaller)?,
                // Redis answers this one oddly (its error number is stale there); so do we.
                XAddId::Ms(ms) if ms == stream.last_id.ms && stream.last_id.seq == u64::MAX => {
                    return Err(error("ERR Elements are too large to be stored"));
                }
                XAddId::Ms(ms) if ms == stream.last_id.ms => stream.last_id.next().ok_or_else(smaller)?,
                XAddId::Ms(ms) => StreamId::new(ms, 0),
                XAddId::Exact(id) => id,
            };
            if id <= stream.last_id {
                return Err(smaller());
            }
            stream.append(id, &args.pairs);
            parts.add(part::entry(id));
            if let Some(trim) = args.trim {
                trimmed = stream.trim(trim.rule, trim.approx, trim.effective_limit());
            }
            Ok(id)
        })?;
        if added.is_some() {
            self.event(class::STREAM, "xadd", key.bytes);
            if trimmed > 0 {
                self.event(class::STREAM, "xtrim", key.bytes);
            }
        }
        Ok(added)
    }

    /// XRANGE and XREVRANGE (`rev`): live entries in `start..=end`, at most `count` (0:
    /// all).
    pub fn xrange(
        &self,
        key: KeyRef<'_>,
        now: u64,
        start: StreamId,
        end: StreamId,
        count: usize,
        rev: bool,
    ) -> KvResult<Vec<StreamEntry>> {
        Ok(self.read_stream(key, now)?.map(|s| entries(s.range(start, end, rev), count)).unwrap_or_default())
    }

    /// XDEL: how many of `ids` were deleted.
    pub fn xdel(&mut self, key: KeyRef<'_>, now: u64, ids: &[StreamId]) -> KvResult<usize> {
        let deleted = self.stream_write(key, now, false, |stream, parts| {
            let mut deleted = 0;
            let mut first = false;
            for &id in ids {
                if stream.delete(id) {
                    first |= id == stream.first_id;
                    stream.max_deleted = stream.max_deleted.max(id);
                    parts.add(part::entry(id));
                    deleted += 1;
                }
            }
            if deleted > 0 && (first || stream.is_empty()) {
                stream.refresh_first_id();
            }
            Ok(deleted)
        })?;
        let deleted = deleted.unwrap_or(0);
        if deleted > 0 {
            self.event(class::STREAM, "xdel", key.bytes);
        }
        Ok(deleted)
    }

    /// XTRIM: how many entries were removed.
    pub fn xtrim(&mut self, key: KeyRef<'_>, now: u64, trim: TrimArgs) -> KvResult<u64> {
        let trimmed = self
            .stream_write(key, now, false, |stream, parts| {
                let trimmed = stream.trim(trim.rule, trim.approx, trim.effective_limit());
                if trimmed > 0 {
                    // The counters' part carries the first live id, below which recovery drops.
                    parts.add(part::META.to_vec());
                }
                Ok(trimmed)
            })?
            .unwrap_or(0);
        if trimmed > 0 {
            self.event(class::STREAM, "xtrim", key.bytes);
        }
        Ok(trimmed)
    }

    /// XSETID.
    pub fn xsetid(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) -> KvResult<()> {
        self.stream_write(key, now, false, |stream, parts| {
            if !stream.is_empty() {
                let top = stream.last_live_id().expect("a stream with entries has a last one");
                if id < top {
                    return Err(error("ERR The ID specified in XSETID is smaller than the target stream top item"));
                }
                if entries_added.is_some_and(|added| added < stream.len()) {
                    return Err(error(
                        "ERR The entries_added specified in XSETID is smaller than the target stream length",
                    ));
                }
            }
            stream.last_id = id;
            if let Some(added) = entries_added {
                stream.entries_added = added;
            }
            if let Some(max) = max_deleted.filter(|max| *max != StreamId::MIN) {
                stream.max_deleted = max;
            }
            parts.add(part::META.to_vec());
            Ok(())
        })?
        .ok_or(KvError::NoSuchKey)?;
        self.event(class::STREAM, "xsetid", key.bytes);
        Ok(())
    }

    /// The group `name` of the stream under `key` for XGROUP: the key must exist.
    fn xgroup_write<R>(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        name: &[u8],
        f: impl FnOnce(&mut Stream, &mut Parts) -> KvResult<R>,
    ) -> KvResult<R> {
        self.stream_write(key, now, false, |stream, parts| {
            if stream.group(name).is_none() {
                return Err(no_such_group(key.bytes, name));
            }
            f(stream, parts)
        })?
        .ok_or_else(xgroup_needs_key)
    }

    /// XGROUP CREATE: `from` `None` is `$`.
    pub fn xgroup_create(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        name: &[u8],
        from: Option<StreamId>,
        mkstream: bool,
        entries_read: i64,
    ) -> KvResult<()> {
        let created = self.stream_write(key, now, mkstream, |stream, _| {
            let last_id = from.unwrap_or(stream.last_id);
            if !stream.create_group(name, Group::new(last_id, entries_read)) {
                return Err(error("BUSYGROUP Consumer Group name already exists"));
            }
            Ok(())
        })?;
        if created.is_none() {
            return Err(xgroup_needs_key());
        }
        // A new group is logged with the whole stream (see the module's note).
        self.touch(key.bytes);
        self.event(class::STREAM, "xgroup-create", key.bytes);
        Ok(())
    }

    /// XGROUP SETID: `from` `None` is `$`.
    pub fn xgroup_setid(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        name: &[u8],
        from: Option<StreamId>,
        entries_read: i64,
    ) -> KvResult<()> {
        self.xgroup_write(key, now, name, |stream, parts| {
            let last_id = from.unwrap_or(stream.last_id);
            let group = stream.group_mut(name).expect("checked");
            group.last_id = last_id;
            group.entries_read = entries_read;
            parts.group(name);
            Ok(())
        })?;
        self.event(class::STREAM, "xgroup-setid", key.bytes);
        Ok(())
    }

    /// XGROUP DESTROY: whether there was such a group.
    pub fn xgroup_destroy(&mut self, key: KeyRef<'_>, now: u64, name: &[u8]) -> KvResult<bool> {
        let destroyed = self
            .stream_write(key, now, false, |stream, _| Ok(stream.destroy_group(name)))?
            .ok_or_else(xgroup_needs_key)?;
        if destroyed {
            self.touch(key.bytes);
            self.event(class::STREAM, "xgroup-destroy", key.bytes);
        }
        Ok(destroyed)
    }

    /// XGROUP CREATECONSUMER: whether it was created.
    pub fn xgroup_createconsumer(&mut self, key: KeyRef<'_>, now: u64, name: &[u8], consumer: &[u8]) -> KvResult<bool> {
        let created = self.xgroup_write(key, now, name, |stream, parts| {
            let created = stream.group_mut(name).expect("checked").ensure_consumer(consumer, now);
            if created {
                parts.consumer(name, consumer);
            }
            Ok(created)
        })?;
        if created {
            self.event(class::STREAM, "xgroup-createconsumer", key.bytes);
        }
        Ok(created)
    }

    /// XGROUP DELCONSUMER: how many entries were pending for it.
    pub fn xgroup_delconsumer(&mut self, key: KeyRef<'_>, now: u64, name: &[u8], consumer: &[u8]) -> KvResult<usize> {
        let removed = self.xgroup_write(key, now, name, |stream, parts| {
            let group = stream.group_mut(name).expect("checked");
            let ids: Vec<StreamId> =
                group.consumer(consumer).map(|c| c.pending.iter().copied().collect()).unwrap_or_default();
            let removed = group.remove_consumer(consumer);
            if removed.is_some() {
                parts.consumer(name, consumer);
                for id in ids {
                    parts.pending(name, id);
                }
            }
            Ok(removed)
        })?;
        if removed.is_some() {
            self.event(class::STREAM, "xgroup-delconsumer", key.bytes);
        }
        Ok(removed.unwrap_or(0))
    }

    /// XACK: how many of `ids` were pending.
    pub fn xack(&mut self, key: KeyRef<'_>, now: u64, name: &[u8], ids: &[StreamId]) -> KvResult<usize> {
        let acked = self.stream_write(key, now, false, |stream, parts| {
            let Some(group) = stream.group_mut(name) else { return Ok(0) };
            let mut acked = 0;
            for &id in ids {
                if group.ack(id) {
                    parts.pending(name, id);
                    acked += 1;
                }
            }
            Ok(acked)
        })?;
        Ok(acked.unwrap_or(0))
    }

    fn read_group<'s>(&'s self, key: KeyRef<'_>, now: u64, name: &[u8]) -> KvResult<(&'s Stream, &'s Group)> {
        let stream = self.read_stream(key, now)?.ok_or_else(|| no_group(key.bytes, name, ""))?;
        let group = stream.group(name).ok_or_else(|| no_group(key.bytes, name, ""))?;
        Ok((stream, group))
    }

    /// XPENDING key group.
    pub fn xpending_summary(&self, key: KeyRef<'_>, now: u64, name: &[u8]) -> KvResult<PendingSummary> {
        let (_, group) = self.read_group(key, now, name)?;
        let pending = group.pending();
        let bounds = pending.first_key_value().map(|(first, _)| (*first, *pending.last_key_value().expect("").0));
        let consumers = group
            .consumers()
            .iter()
            .filter(|(_, c)| !c.pending.is_empty())
            .map(|(name, c)| (name.to_vec(), c.pending.len()))
            .collect();
        Ok(PendingSummary { count: pending.len(), bounds, consumers })
    }

    /// XPENDING key group [IDLE min] start end count [consumer].
    #[allow(clippy::too_many_arguments)]
    pub fn xpending_range(
        &self,
        key: KeyRef<'_>,
        now: u64,
        name: &[u8],
        min_idle: i64,
        start: StreamId,
        end: StreamId,
        count: usize,
        consumer: Option<&[u8]>,
    ) -> KvResult<Vec<PendingInfo>> {
        let (_, group) = self.read_group(key, now, name)?;
        if start > end || count == 0 {
            return Ok(Vec::new());
        }
        let ids: Box<dyn Iterator<Item = StreamId>> = match consumer {
            Some(name) => match group.consumer(name) {
                Some(consumer) => Box::new(consumer.pending.range(start..=end).copied()),
                None => return Ok(Vec::new()),
            },
            None => Box::new(group.pending().range(start..=end).map(|(id, _)| *id)),
        };
        Ok(ids
            .map(|id| (id, &group.pending()[&id]))
            .filter(|(_, p)| min_idle == 0 || (now as i64 - p.delivery_time as i64) >= min_idle)
            .take(count)
            .map(|(id, p)| PendingInfo {
                id,
                consumer: p.consumer.to_vec(),
                delivery_time: p.delivery_time,
                delivery_count: p.delivery_count,
            })
            .collect())
    }

    /// XCLAIM.
    #[allow(clippy::too_many_arguments)]
    pub fn xclaim(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        name: &[u8],
        consumer: &[u8],
        min_idle: i64,
        ids: &[StreamId],
        options: XClaimOptions,
    ) -> KvResult<Vec<Claimed>> {
        let missing = || no_group(key.bytes, name, "");
        let mut created = false;
        let claimed = self
            .stream_write(key, now, false, |stream, parts| {
                if stream.group(name).is_none() {
                    return Err(missing());
                }
                if let Some(last_id) = options.last_id {
                    let group = stream.group_mut(name).expect("checked");
                    if last_id > group.last_id {
                        group.last_id = last_id;
                        parts.group(name);
                    }
                }
                let requested = match options.delivery {
                    Some(ClaimDelivery::Idle(idle)) => Some((now as i64).saturating_sub(idle)),
                    Some(ClaimDelivery::At(time)) => Some(time),
                    None => None,
                };
                // A time before the epoch or in the future is taken as now, as Redis does.
                let delivery_time = match requested {
                    Some(time) if time >= 0 && time <= now as i64 => time as u64,
                    _ => now,
                };
                let mut claimed = Vec::new();
                for &id in ids {
                    let exists = stream.get(id).is_some();
                    let group = stream.group_mut(name).expect("checked");
                    if !exists {
                        if group.ack(id) {
                            parts.pending(name, id);
                        }
                        continue;
                    }
                    let previous_count = match group.pending().get(&id) {
                        Some(pending) => {
                            if min_idle > 0 && (now as i64 - pending.delivery_time as i64) < min_idle {
                                continue;
                            }
                            pending.delivery_count
                        }
                        // A forced entry starts delivered once, and this claim delivers it again.
                        None if options.force => 1,
                        None => continue,
                    };
                    created |= group.ensure_consumer(consumer, now);
                    group.see(consumer, now);
                    parts.consumer(name, consumer);
                    let count = match options.retry_count {
                        Some(count) => count,
                        None if options.justid => previous_count,
                        None => previous_count + 1,
                    };
                    group.set_pending(id, consumer, delivery_time, count);
                    parts.pending(name, id);
                    let fields = if options.justid { None } else { stream.get(id).map(owned) };
                    claimed.push((id, fields));
                }
                Ok(claimed)
            })?
            .ok_or_else(missing)?;
        if created {
            self.event(class::STREAM, "xgroup-createconsumer", key.bytes);
        }
        Ok(claimed)
    }

    /// XAUTOCLAIM: the next cursor, what was claimed, and the ids found deleted (their
    /// pending entries are dropped).
    #[allow(clippy::too_many_arguments)]
    pub fn xautoclaim(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        name: &[u8],
        consumer: &[u8],
        min_idle: i64,
        start: StreamId,
        count: usize,
        justid: bool,
    ) -> KvResult<(StreamId, Vec<Claimed>, Vec<StreamId>)> {
        let missing = || no_group(key.bytes, name, "");
        let mut created = false;
        let answer = self
            .stream_write(key, now, false, |stream, parts| {
                if stream.group(name).is_none() {
                    return Err(missing());
                }
                let mut attempts = count.saturating_mul(10);
                let mut left = count;
                let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
                let mut cursor = start;
                let mut next = StreamId::MIN;
                loop {
                    let group = stream.group(name).expect("checked");
                    let Some((&id, pending)) = group.pending().range(cursor..).next() else { break };
                    if attempts == 0 || left == 0 {
                        next = id;
                        break;
                    }
                    attempts -= 1;
                    cursor = match id.next() {
                        Some(after) => after,
                        None => {
                            attempts = 0;
                            id
                        }
                    };
                    let idle = now as i64 - pending.delivery_time as i64;
                    let previous_count = pending.delivery_count;
                    if stream.get(id).is_none() {
                        stream.group_mut(name).expect("checked").ack(id);
                        parts.pending(name, id);
                        deleted.push(id);
                        left -= 1;
                        continue;
                    }
                    if min_idle > 0 && idle < min_idle {
                        continue;
                    }
                    let group = stream.group_mut(name).expect("checked");
                    created |= group.ensure_consumer(consumer, now);
                    group.see(consumer, now);
                    parts.consumer(name, consumer);
                    group.set_pending(id, consumer, now, if justid { previous_count } else { previous_count + 1 });
                    parts.pending(name, id);
                    let fields = if justid { None } else { stream.get(id).map(owned) };
                    claimed.push((id, fields));
                    left -= 1;
                    if id == StreamId::MAX {
                        break;
                    }
                }
                Ok((next, claimed, deleted))
            })?
            .ok_or_else(missing)?;
        if created {
            self.event(class::STREAM, "xgroup-createconsumer", key.bytes);
        }
        Ok(answer)
    }

    /// XINFO STREAM.
    pub fn xinfo_stream(&self, key: KeyRef<'_>, now: u64) -> KvResult<StreamInfo> {
        let stream = self.read_stream(key, now)?.ok_or(KvError::NoSuchKey)?;
        let first = entries(stream.range(StreamId::MIN, StreamId::MAX, false), 1).pop();
        let last = entries(stream.range(StreamId::MIN, StreamId::MAX, true), 1).pop();
        Ok(StreamInfo { head: head(stream), groups: stream.groups().len(), first, last })
    }

    /// XINFO STREAM FULL [COUNT count] (0: everything).
    pub fn xinfo_stream_full(&self, key: KeyRef<'_>, now: u64, count: usize) -> KvResult<StreamFull> {
        let stream = self.read_stream(key, now)?.ok_or(KvError::NoSuchKey)?;
        let limit = if count == 0 { usize::MAX } else { count };
        let info = |id: StreamId, p: &crate::types::stream::Pending| PendingInfo {
            id,
            consumer: p.consumer.to_vec(),
            delivery_time: p.delivery_time,
            delivery_count: p.delivery_count,
        };
        let groups = stream
            .groups()
            .iter()
            .map(|(name, group)| GroupFull {
                info: group_info(stream, name, group),
                pel_count: group.pending().len(),
                pending: group.pending().iter().take(limit).map(|(id, p)| info(*id, p)).collect(),
                consumers: group
                    .consumers()
                    .iter()
                    .map(|(cname, consumer)| ConsumerFull {
                        name: cname.to_vec(),
                        seen_time: consumer.seen_time,
                        pel_count: consumer.pending.len(),
                        pending: consumer
                            .pending
                            .iter()
                            .take(limit)
                            .map(|id| info(*id, &group.pending()[id]))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        Ok(StreamFull {
            head: head(stream),
            entries: entries(stream.range(StreamId::MIN, StreamId::MAX, false), count),
            groups,
        })
    }

    /// XINFO GROUPS.
    pub fn xinfo_groups(&self, key: KeyRef<'_>, now: u64) -> KvResult<Vec<GroupInfo>> {
        let stream = self.read_stream(key, now)?.ok_or(KvError::NoSuchKey)?;
        Ok(stream.groups().iter().map(|(name, group)| group_info(stream, name, group)).collect())
    }

    /// XINFO CONSUMERS.
    pub fn xinfo_consumers(&self, key: KeyRef<'_>, now: u64, name: &[u8]) -> KvResult<Vec<ConsumerInfo>> {
        let stream = self.read_stream(key, now)?.ok_or(KvError::NoSuchKey)?;
        let group = stream.group(name).ok_or_else(|| no_such_group(key.bytes, name))?;
        Ok(group
            .consumers()
            .iter()
            .map(|(cname, c)| ConsumerInfo {
                name: cname.to_vec(),
                pending: c.pending.len(),
                idle: now.saturating_sub(c.seen_time),
            })
            .collect())
    }
}

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// XREAD: for each key with entries after its position, those entries (at most
    /// `count` each, 0: all). `$` positions are resolved to the stream's last id (0-0
    /// for a missing key) and left resolved in `from`, so a blocked client waits after
    /// them.
    pub fn xread(
        &self,
        keys: &[Vec<u8>],
        from: &mut [XFrom],
        count: usize,
        now: u64,
    ) -> KvResult<Vec<(Vec<u8>, Vec<StreamEntry>)>> {
        let mut streams = Vec::with_capacity(keys.len());
        for (key, from) in keys.iter().zip(from.iter_mut()) {
            let (shard, found) = self.shard(key)?;
            let stream = shard.read_stream(found, now)?;
            if *from == XFrom::Last {
                *from = XFrom::After(stream.map_or(StreamId::MIN, |s| s.last_id));
            }
            streams.push(stream);
        }
        let mut out = Vec::new();
        for ((key, from), stream) in keys.iter().zip(from.iter()).zip(streams) {
            let (Some(stream), XFrom::After(after)) = (stream, *from) else { continue };
            if stream.last_live_id().is_some_and(|last| last > after) {
                let start = after.next().expect("below a live id");
                out.push((key.clone(), entries(stream.range(start, StreamId::MAX, false), count)));
            }
        }
        Ok(out)
    }
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// XREADGROUP: for each key served, what was delivered. Every key must hold a stream
    /// with the group (checked before anything is delivered); a key is served when it
    /// holds entries the group has not seen (`>`), and always for history reads.
    pub fn xreadgroup(
        &mut self,
        keys: &[Vec<u8>],
        from: &[XGroupFrom],
        read: &XReadGroup,
        count: usize,
        now: u64,
    ) -> KvResult<Vec<(Vec<u8>, Vec<MaybeEntry>)>> {
        for key in keys {
            let (shard, found) = self.shard(key)?;
            let stream = match shard.read_stream(found, now) {
                Err(KvError::WrongType) if read.serving => None,
                other => other?,
            };
            match stream {
                None if read.serving => return Err(error("UNBLOCKED the stream key no longer exists")),
                Some(stream) if stream.group(&read.group).is_none() && read.serving => {
                    return Err(error("NOGROUP the consumer group this client was blocked on no longer exists"));
                }
                Some(stream) if stream.group(&read.group).is_some() => {}
                _ => return Err(no_group(key, &read.group, " in XREADGROUP with GROUP option")),
            }
        }
        let mut out = Vec::new();
        for (key, from) in keys.iter().zip(from) {
            let (shard, found) = self.shard_mut(key)?;
            let mut created = false;
            let served = shard.stream_write(found, now, false, |stream, parts| {
                let group = stream.group(&read.group).expect("checked above");
                let start = match *from {
                    XGroupFrom::History(after) => Some(after.next().unwrap_or(StreamId::MAX)),
                    XGroupFrom::New => {
                        let last = group.last_id;
                        if stream.last_live_id().is_none_or(|top| top <= last) {
                            return Ok(None);
                        }
                        None
                    }
                };
                let group = stream.group_mut(&read.group).expect("checked above");
                created = group.ensure_consumer(&read.consumer, now);
                group.see(&read.consumer, now);
                parts.consumer(&read.group, &read.consumer);
                let delivered = match start {
                    Some(start) => deliver_history(stream, read, start, count, now, parts),
                    None => {
                        let last = stream.group(&read.group).expect("checked").last_id;
                        deliver_new(stream, read, last, count, now, parts)
                    }
                };
                Ok(Some(delivered))
            })?;
            if created {
                shard.event(class::STREAM, "xgroup-createconsumer", key);
            }
            if let Some(Some(delivered)) = served {
                out.push((key.clone(), delivered));
            }
        }
        Ok(out)
    }
}
