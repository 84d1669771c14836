//! Client-side caching: CLIENT TRACKING, and the invalidations it sends.
//!
//! Owns: which clients track and how (default or BCAST mode, OPTIN/OPTOUT, NOLOOP, where
//! their invalidations go), the table of keys each default-mode client has read, the
//! BCAST prefixes, and turning the engine's reports of changed, expired and flushed keys
//! into `Push::Invalidate`s. Keys are tracked by name across keyspaces, as Redis tracks
//! them across databases: a change to `k` in one keyspace invalidates `k` for readers of
//! any (a spare invalidation costs a client one cache miss; a missed one serves stale
//! data).
//!
//! Never: lock a shard (the engine calls in with the changed keys' shards locked: the
//! order is shards, then this registry), or look at the server's client list (a
//! redirection target's outbox is kept from CLIENT TRACKING time; a send that fails means
//! the target is gone, which is Redis' broken redirection).
//!
//! Why a read registers its keys *before* it runs: registering after would leave a gap in
//! which another connection's write (on another I/O thread) changes the key unseen, and
//! the client would cache what it read forever. Registered first, a write either comes
//! before the registration (and the read, which takes the shard lock after it, sees it) or
//! after (and invalidates). An invalidation meant for the connection whose command is
//! running on this thread does not travel through its outbox: it waits in `PENDING` and
//! is written after that command's reply (Redis 7 does the same), or before it for keys
//! evicted to make room for the command.
//!
//! A command's changes are invalidated when it ends, in the order it names its keys
//! (`Tracking::settle`): the engine reports them shard by shard, each shard's keys sorted,
//! where Redis invalidates each key as the command changes it (MSET b a: b, then a). A
//! reader registered at any time before the settling hears of the change; one registered
//! after it read the new value. Changes with no command running (active expiry) are
//! invalidated at once.
//!
//! Like Redis, the table forgets a client lazily: after CLIENT TRACKING OFF or a
//! disconnection its ids stay under the keys it read until those keys change, are
//! flushed, or leave by `tracking-table-max-keys`; the table empties when the last
//! tracking client stops (the engine reports no change, not even a flush, while nobody
//! listens).

use crate::pubsub::{Outbox, Push};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Keys of one invalidation.
type Keys = Vec<Box<[u8]>>;

/// The channel a RESP2 connection receives redirected invalidations on.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// How a client tracks (what its session keeps, to decide cheaply whether a read counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mode {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

impl Mode {
    /// Whether a read now registers its keys: not in BCAST mode (prefixes decide there),
    /// and under OPTIN only after CLIENT CACHING YES, under OPTOUT unless CLIENT CACHING NO
    /// (`caching`: one of them was given for this command).
    pub fn remembers(self, caching: bool) -> bool {
        let chosen = if self.optin { caching } else { !(self.optout && caching) };
        !self.bcast && chosen
    }
}

/// CLIENT TRACKING ON's options.
pub struct Options {
    pub mode: Mode,
    /// The connection (id, outbox) that receives this client's invalidations.
    pub redirect: Option<(u64, Outbox)>,
    pub prefixes: Vec<Vec<u8>>,
}

/// What CLIENT TRACKINGINFO, CLIENT GETREDIR and CLIENT LIST show of a tracking client.
#[derive(Debug, Clone)]
pub struct Info {
    pub mode: Mode,
    /// 0: no redirection.
    pub redirect: u64,
    pub broken: bool,
    pub prefixes: Vec<Box<[u8]>>,
}

/// Totals for INFO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub clients: usize,
    pub keys: usize,
    pub items: usize,
    pub prefixes: usize,
}

struct Tracker {
    /// The client's own outbox (its invalidations without redirection, and the notice
    /// that its redirection broke).
    outbox: Outbox,
    mode: Mode,
    redirect: Option<(u64, Outbox)>,
    broken: bool,
    /// BCAST prefixes, sorted.
    prefixes: Vec<Box<[u8]>>,
}

#[derive(Default)]
struct Registry {
    trackers: HashMap<u64, Tracker>,
    /// Default mode: who read each key since it last changed.
    keys: HashMap<Box<[u8]>, Vec<u64>>,
    /// Σ readers over `keys` (Redis' `tracking_total_items`).
    items: usize,
    /// BCAST: the clients of each prefix.
    prefixes: BTreeMap<Box<[u8]>, Vec<u64>>,
}

/// Every tracking client of the server.
pub struct Tracking {
    /// Shared with WATCH: the engine reports changes while it is above zero. Tracking adds
    /// one per tracking client.
    listeners: Arc<AtomicUsize>,
    /// Tracking clients (the cheap check before taking the lock).
    clients: AtomicUsize,
    /// `tracking-table-max-keys` (0: no limit), mirrored by the parameters.
    max_keys: Arc<AtomicU64>,
    inner: Mutex<Registry>,
}

thread_local! {
    /// The client whose command runs on this thread (0: none).
    static RUNNING: Cell<u64> = const { Cell::new(0) };
    /// Invalidations for that client, written around its reply.
    static PENDING: RefCell<Vec<Push>> = const { RefCell::new(Vec::new()) };
    /// What the running command changed, in the engine's order of reports, not yet
    /// invalidated (see `Tracking::settle`).
    static CHANGED: RefCell<Vec<Change>> = const { RefCell::new(Vec::new()) };
}

/// One change the running command made.
enum Change {
    /// Its keyspace was emptied (before the keys reported after).
    Flushed,
    Key(Box<[u8]>),
}

/// Marks client `id`'s command as running on this thread until dropped; what it changed
/// and was not settled yet is invalidated then.
pub struct Running<'t> {
    tracking: &'t Tracking,
    before: u64,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.tracking.settle(std::iter::empty);
        RUNNING.set(self.before);
    }
}

/// Delivers `push` to connection `to` through `outbox`, or keeps it for the reply of the
/// running command when `to` is running; false when the connection is gone.
fn deliver(to: u64, outbox: &Outbox, push: Push) -> bool {
    if to != 0 && to == RUNNING.get() {
        PENDING.with_borrow_mut(|pending| pending.push(push));
        true
    } else {
        outbox.send(push)
    }
}

impl Tracker {
    /// Sends tracker `id` an invalidation of `keys` (`None`: everything), where its
    /// redirection says; a broken redirection is reported to the client itself.
    fn invalidate(&mut self, id: u64, keys: Option<Vec<Box<[u8]>>>) {
        match &self.redirect {
            Some((to, outbox)) => {
                if !deliver(*to, outbox, Push::Invalidate { keys, redirected: true }) {
                    self.broken = true;
                    deliver(id, &self.outbox, Push::RedirectBroken(*to));
                }
            }
            None => {
                deliver(id, &self.outbox, Push::Invalidate { keys, redirected: false });
            }
        }
    }
}

impl Tracking {
    pub fn new(listeners: Arc<AtomicUsize>, max_keys: Arc<AtomicU64>) -> Tracking {
        Tracking { listeners, clients: AtomicUsize::new(0), max_keys, inner: Mutex::new(Registry::default()) }
    }

    /// Whether any client tracks.
    pub fn active(&self) -> bool {
        self.clients.load(Ordering::SeqCst) > 0
    }

    /// CLIENT TRACKING ON for client `id` (whose own outbox is `outbox`), or an error in
    /// Redis' words when the options clash with each other or with how it tracks now.
    pub fn enable(&self, id: u64, outbox: &Outbox, options: Options) -> Result<(), String> {
        let Options { mode, redirect, prefixes } = options;
        if !mode.bcast && !prefixes.is_empty() {
            return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
        }
        let mut registry = self.inner.lock();
        let registry = &mut *registry;
        if let Some(current) = registry.trackers.get(&id)
            && current.mode.bcast != mode.bcast
        {
            return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
        }
        if mode.bcast && (mode.optin || mode.optout) {
            return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
        }
        if mode.optin && mode.optout {
            return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
        }
        if let Some(current) = registry.trackers.get(&id)
            && ((mode.optin && current.mode.optout) || (mode.optout && current.mode.optin))
        {
            return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
        }
        if mode.bcast {
            let existing = registry.trackers.get(&id).map_or(&[][..], |t| &t.prefixes[..]);
            check_prefixes(existing, &prefixes)?;
        }
        let tracker = match registry.trackers.entry(id) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                self.clients.fetch_add(1, Ordering::SeqCst);
                self.listeners.fetch_add(1, Ordering::SeqCst);
                entry.insert(Tracker {
                    outbox: outbox.clone(),
                    mode,
                    redirect: None,
                    broken: false,
                    prefixes: Vec::new(),
                })
            }
        };
        tracker.mode = mode;
        tracker.redirect = redirect;
        tracker.broken = false;
        if mode.bcast {
            // BCAST without a prefix means every key: the empty prefix.
            let added = if prefixes.is_empty() { vec![Vec::new()] } else { prefixes };
            for prefix in added {
                let prefix: Box<[u8]> = prefix.into();
                if let Err(at) = tracker.prefixes.binary_search(&prefix) {
                    tracker.prefixes.insert(at, prefix.clone());
                    registry.prefixes.entry(prefix).or_default().push(id);
                }
            }
        }
        Ok(())
    }

    /// CLIENT TRACKING OFF, or a disconnection.
    pub fn disable(&self, id: u64) {
        if !self.active() {
            return;
        }
        let mut registry = self.inner.lock();
        let Some(tracker) = registry.trackers.remove(&id) else { return };
        for prefix in &tracker.prefixes {
            if let Some(ids) = registry.prefixes.get_mut(prefix) {
                ids.retain(|&other| other != id);
                if ids.is_empty() {
                    registry.prefixes.remove(prefix);
                }
            }
        }
        if self.clients.fetch_sub(1, Ordering::SeqCst) == 1 {
            // Nobody tracks: the engine stops reporting changes (a FLUSHALL among them),
            // so what the table holds could never be invalidated. Redis would send those
            // keys' invalidations to nobody either.
            registry.keys.clear();
            registry.items = 0;
        }
        self.listeners.fetch_sub(1, Ordering::SeqCst);
    }

    /// How client `id` tracks; `None` when it does not.
    pub fn info(&self, id: u64) -> Option<Info> {
        if !self.active() {
            return None;
        }
        let registry = self.inner.lock();
        registry.trackers.get(&id).map(|t| Info {
            mode: t.mode,
            redirect: t.redirect.as_ref().map_or(0, |(to, _)| *to),
            broken: t.broken,
            prefixes: t.prefixes.clone(),
        })
    }

    pub fn totals(&self) -> Totals {
        let registry = self.inner.lock();
        Totals {
            clients: registry.trackers.len(),
            keys: registry.keys.len(),
            items: registry.items,
            prefixes: registry.prefixes.len(),
        }
    }

    /// Client `id` is about to read `keys`: a change to any of them from now on
    /// invalidates it (see the module docs for why before).
    pub fn remember<'a>(&self, id: u64, keys: impl Iterator<Item = &'a [u8]>) {
        let mut registry = self.inner.lock();
        let registry = &mut *registry;
        for key in keys {
            let readers = match registry.keys.get_mut(key) {
                Some(readers) => readers,
                None => registry.keys.entry(key.into()).or_default(),
            };
            if !readers.contains(&id) {
                readers.push(id);
                registry.items += 1;
            }
        }
        self.limit(registry);
    }

    /// Applies `tracking-table-max-keys` now (after CONFIG SET lowers it).
    pub fn enforce_limit(&self) {
        self.limit(&mut self.inner.lock());
    }

    /// Over `tracking-table-max-keys`, forgets keys (the map's order is arbitrary, as
    /// Redis' random walk is) and invalidates them for their readers, who would otherwise
    /// never hear of their changes.
    fn limit(&self, registry: &mut Registry) {
        let max = self.max_keys.load(Ordering::Relaxed) as usize;
        if max == 0 || registry.keys.len() <= max {
            return;
        }
        let excess = registry.keys.len() - max;
        let doomed: Vec<Box<[u8]>> = registry.keys.keys().take(excess).cloned().collect();
        for key in doomed {
            registry.invalidate_readers(&key, 0);
        }
    }

    /// Client `id`'s command runs on this thread from now until the guard drops.
    pub fn running(&self, id: u64) -> Running<'_> {
        Running { tracking: self, before: RUNNING.replace(id) }
    }

    /// Takes the invalidations waiting for the running client (its command's changes
    /// settled first, in the engine's order).
    pub fn take_pending(&self) -> Vec<Push> {
        self.settle(std::iter::empty);
        PENDING.with_borrow_mut(|pending| if pending.is_empty() { Vec::new() } else { std::mem::take(pending) })
    }

    /// `keys` changed (the engine's report; `flushed`: their keyspace was emptied first).
    /// While a command runs on this thread the invalidation waits for `settle`.
    pub fn changed(&self, keys: &mut dyn Iterator<Item = &[u8]>, flushed: bool) {
        if RUNNING.get() == 0 {
            self.invalidate(keys, flushed, 0);
            return;
        }
        CHANGED.with_borrow_mut(|changed| {
            if flushed {
                changed.push(Change::Flushed);
            }
            changed.extend(keys.map(|key| Change::Key(key.into())));
        });
    }

    /// Invalidates what the running command changed, each run of keys between flushes in
    /// the order of `order` (the command's keys; others after them, as reported), as Redis
    /// invalidates a key when the command changes it. `order` is asked for only when
    /// something changed.
    pub fn settle<'k, I: Iterator<Item = &'k [u8]>>(&self, order: impl FnOnce() -> I) {
        let changes = CHANGED.with_borrow_mut(|changed| (!changed.is_empty()).then(|| std::mem::take(changed)));
        let Some(changes) = changes else { return };
        // A key named twice ranks at its first place.
        let mut rank: HashMap<&[u8], usize> = HashMap::new();
        for (at, key) in order().enumerate() {
            rank.entry(key).or_insert(at);
        }
        let writer = RUNNING.get();
        let mut flushed = false;
        let mut run: Vec<Box<[u8]>> = Vec::new();
        let flush_run = |run: &mut Vec<Box<[u8]>>, flushed: bool| {
            run.sort_by_key(|key| rank.get(&**key).copied().unwrap_or(usize::MAX));
            self.invalidate(&mut run.iter().map(|key| &**key), flushed, writer);
            run.clear();
        };
        for change in changes {
            match change {
                Change::Flushed => {
                    if flushed || !run.is_empty() {
                        flush_run(&mut run, flushed);
                    }
                    flushed = true;
                }
                Change::Key(key) => run.push(key),
            }
        }
        flush_run(&mut run, flushed);
    }

    /// Active expiry removed `keys`: no client did, so NOLOOP spares nobody.
    pub fn expired(&self, keys: &mut dyn Iterator<Item = &[u8]>) {
        self.invalidate(keys, false, 0);
    }

    fn invalidate(&self, keys: &mut dyn Iterator<Item = &[u8]>, flushed: bool, writer: u64) {
        let mut registry = self.inner.lock();
        let Registry { trackers, keys: table, items, prefixes } = &mut *registry;
        if flushed {
            // Every tracking client forgets everything, whatever its mode.
            for (id, tracker) in trackers.iter_mut() {
                tracker.invalidate(*id, None);
            }
            table.clear();
            *items = 0;
        }
        // BCAST: one invalidation per client and prefix, holding every key of this change.
        let mut broadcast: BTreeMap<(u64, &[u8]), Keys> = BTreeMap::new();
        for key in keys {
            for (prefix, ids) in prefixes.iter() {
                if !key.starts_with(prefix) {
                    continue;
                }
                for &id in ids {
                    let noloop = trackers.get(&id).is_some_and(|t| t.mode.noloop);
                    if !(noloop && id == writer) {
                        broadcast.entry((id, &prefix[..])).or_default().push(key.into());
                    }
                }
            }
            if !table.is_empty() {
                invalidate_readers(table, items, trackers, key, writer);
            }
        }
        for ((id, _), mut keys) in broadcast {
            keys.sort_unstable();
            keys.dedup();
            if let Some(tracker) = trackers.get_mut(&id) {
                tracker.invalidate(id, Some(keys));
            }
        }
    }
}

impl Registry {
    fn invalidate_readers(&mut self, key: &[u8], writer: u64) {
        invalidate_readers(&mut self.keys, &mut self.items, &mut self.trackers, key, writer);
    }
}

/// Forgets `key` and invalidates it for every default-mode client that read it, but the
/// writer when it asked for NOLOOP.
fn invalidate_readers(
    table: &mut HashMap<Box<[u8]>, Vec<u64>>,
    items: &mut usize,
    trackers: &mut HashMap<u64, Tracker>,
    key: &[u8],
    writer: u64,
) {
    let Some(readers) = table.remove(key) else { return };
    *items -= readers.len();
    for id in readers {
        let Some(tracker) = trackers.get_mut(&id) else { continue };
        // A client that switched to BCAST since it read the key hears of it by prefix.
        if tracker.mode.bcast || (tracker.mode.noloop && id == writer) {
            continue;
        }
        tracker.invalidate(id, Some(vec![key.into()]));
    }
}

/// Refuses prefixes that overlap each other or one the client has (one would be a
/// prefix of the other: a key would be announced twice).
fn check_prefixes(existing: &[Box<[u8]>], added: &[Vec<u8>]) -> Result<(), String> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    for (i, prefix) in added.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlap(old, prefix)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                text(prefix),
                text(old)
            ));
        }
        if let Some(other) = added[i + 1..].iter().find(|other| overlap(other, prefix)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                text(prefix),
                text(other)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pubsub::{Inbox, outbox};

    fn tracking() -> (Tracking, Arc<AtomicUsize>) {
        let listeners = Arc::new(AtomicUsize::new(0));
        (Tracking::new(Arc::clone(&listeners), Arc::new(AtomicU64::new(0))), listeners)
    }

    fn on(mode: Mode) -> Options {
        Options { mode, redirect: None, prefixes: Vec::new() }
    }

    /// The invalidations queued for a connection: each as its keys (`None`: everything).
    fn received(inbox: &mut Inbox) -> Vec<Option<Vec<String>>> {
        let mut seen = Vec::new();
        while let Some(push) = inbox.try_recv() {
            match push {
                Push::Invalidate { keys, .. } => {
                    seen.push(keys.map(|keys| keys.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect()))
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        seen
    }

    fn some(keys: &[&str]) -> Option<Vec<String>> {
        Some(keys.iter().map(|k| k.to_string()).collect())
    }

    #[test]
    fn a_read_key_is_invalidated_once_for_each_reader_and_then_forgotten() {
        let (tracking, listeners) = tracking();
        let ((a, mut a_in), (b, mut b_in)) = (outbox(), outbox());
        tracking.enable(1, &a, on(Mode::default())).unwrap();
        tracking.enable(2, &b, on(Mode::default())).unwrap();
        assert_eq!(listeners.load(Ordering::SeqCst), 2);
        tracking.remember(1, [&b"k"[..], b"j"].into_iter());
        tracking.remember(2, [&b"k"[..]].into_iter());
        assert_eq!(tracking.totals(), Totals { clients: 2, keys: 2, items: 3, prefixes: 0 });
        tracking.changed(&mut [&b"k"[..], b"other"].into_iter(), false);
        assert_eq!(received(&mut a_in), vec![some(&["k"])]);
        assert_eq!(received(&mut b_in), vec![some(&["k"])]);
        tracking.changed(&mut [&b"k"[..]].into_iter(), false);
        assert!(received(&mut a_in).is_empty(), "forgotten after the first change");
        tracking.disable(1);
        tracking.disable(2);
        assert_eq!(listeners.load(Ordering::SeqCst), 0);
        tracking.changed(&mut [&b"j"[..]].into_iter(), false);
        assert!(received(&mut a_in).is_empty(), "a client that stopped tracking hears nothing");
    }

    #[test]
    fn noloop_spares_the_writer_and_the_writers_own_invalidations_wait_for_its_reply() {
        let (tracking, _) = tracking();
        let ((a, mut a_in), (b, mut b_in)) = (outbox(), outbox());
        tracking.enable(1, &a, on(Mode { noloop: true, ..Mode::default() })).unwrap();
        tracking.enable(2, &b, on(Mode::default())).unwrap();
        tracking.remember(1, [&b"k"[..]].into_iter());
        tracking.remember(2, [&b"k"[..]].into_iter());
        {
            let _running = tracking.running(1);
            tracking.changed(&mut [&b"k"[..]].into_iter(), false);
        }
        assert!(received(&mut a_in).is_empty(), "NOLOOP: its own write");
        assert_eq!(received(&mut b_in), vec![some(&["k"])]);
        tracking.remember(2, [&b"k"[..]].into_iter());
        let pending = {
            let _running = tracking.running(2);
            tracking.changed(&mut [&b"k"[..]].into_iter(), false);
            tracking.take_pending()
        };
        assert!(received(&mut b_in).is_empty(), "not through the outbox");
        assert!(matches!(&pending[..], [Push::Invalidate { keys: Some(keys), redirected: false }] if keys.len() == 1));
    }

    #[test]
    fn bcast_sends_one_invalidation_per_prefix_and_flush_reaches_every_client() {
        let (tracking, _) = tracking();
        let ((a, mut a_in), (b, mut b_in)) = (outbox(), outbox());
        let prefixes = vec![b"a:".to_vec(), b"b:".to_vec()];
        let bcast = Mode { bcast: true, ..Mode::default() };
        tracking.enable(1, &a, Options { mode: bcast, redirect: None, prefixes }).unwrap();
        tracking.enable(2, &b, on(Mode::default())).unwrap();
        tracking.changed(&mut [&b"a:1"[..], b"a:2", b"b:1", b"c:1", b"a:1"].into_iter(), false);
        assert_eq!(received(&mut a_in), vec![some(&["a:1", "a:2"]), some(&["b:1"])]);
        assert!(received(&mut b_in).is_empty(), "nothing read");
        tracking.remember(2, [&b"x"[..]].into_iter());
        tracking.changed(&mut std::iter::empty(), true);
        assert_eq!(received(&mut a_in), vec![None]);
        assert_eq!(received(&mut b_in), vec![None]);
        assert_eq!(tracking.totals().keys, 0, "a flush empties the table");
        assert_eq!(tracking.totals().prefixes, 2);
        tracking.disable(1);
        assert_eq!(tracking.totals().prefixes, 0);
    }

    #[test]
    fn overlapping_prefixes_and_clashing_modes_are_refused() {
        let (tracking, _) = tracking();
        let (a, _a_in) = outbox();
        let bcast = |prefixes: &[&str]| Options {
            mode: Mode { bcast: true, ..Mode::default() },
            redirect: None,
            prefixes: prefixes.iter().map(|p| p.as_bytes().to_vec()).collect(),
        };
        let refused = tracking.enable(1, &a, bcast(&["FOOBAR", "FOO"])).unwrap_err();
        assert!(refused.starts_with("ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'"), "{refused}");
        tracking.enable(1, &a, bcast(&["FOO", "BAR"])).unwrap();
        let refused = tracking.enable(1, &a, bcast(&["FO"])).unwrap_err();
        assert!(refused.starts_with("ERR Prefix 'FO' overlaps with an existing prefix 'FOO'"), "{refused}");
        assert!(tracking.enable(1, &a, on(Mode::default())).unwrap_err().contains("switch BCAST mode"));
        let both = Mode { optin: true, optout: true, ..Mode::default() };
        assert!(tracking.enable(2, &a, on(both)).unwrap_err().contains("both OPTIN mode and OPTOUT mode"));
        let prefix_alone = Options { mode: Mode::default(), redirect: None, prefixes: vec![b"x".to_vec()] };
        assert!(tracking.enable(2, &a, prefix_alone).unwrap_err().contains("requires BCAST"));
        assert_eq!(tracking.totals().clients, 1, "refusals change nothing");
    }

    #[test]
    fn a_redirection_to_a_closed_connection_is_reported_to_the_client() {
        let (tracking, _) = tracking();
        let ((a, mut a_in), (target, mut target_in)) = (outbox(), outbox());
        let redirect = Some((9, target));
        tracking.enable(1, &a, Options { mode: Mode::default(), redirect, prefixes: Vec::new() }).unwrap();
        tracking.remember(1, [&b"k"[..]].into_iter());
        tracking.changed(&mut [&b"k"[..]].into_iter(), false);
        assert!(matches!(target_in.try_recv(), Some(Push::Invalidate { redirected: true, .. })));
        target_in.close();
        tracking.remember(1, [&b"k"[..]].into_iter());
        tracking.changed(&mut [&b"k"[..]].into_iter(), false);
        assert!(matches!(a_in.try_recv(), Some(Push::RedirectBroken(9))));
        assert!(tracking.info(1).unwrap().broken);
    }

    #[test]
    fn over_the_key_limit_the_table_sheds_keys_and_invalidates_them() {
        let listeners = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicU64::new(0));
        let tracking = Tracking::new(listeners, Arc::clone(&max));
        let (a, mut a_in) = outbox();
        tracking.enable(1, &a, on(Mode::default())).unwrap();
        let keys: Vec<Vec<u8>> = (0..250).map(|i| format!("key{i}").into_bytes()).collect();
        tracking.remember(1, keys.iter().map(Vec::as_slice));
        max.store(1, Ordering::Relaxed);
        tracking.enforce_limit();
        assert_eq!(tracking.totals().keys, 1);
        assert_eq!(received(&mut a_in).len(), 249, "one invalidation per shed key");
    }
}
