//! Publish/subscribe: who listens to which channel, pattern and shard channel, and the
//! delivery of a published message to each of them.
//!
//! Owns: the subscription registry and every connection's outbox (`Outbox`, the sending
//! half of the connection's push queue, with the count of bytes it holds). A message is
//! handed to every subscriber's outbox under the registry's one lock, so two messages
//! published on the same channel, from connections on any I/O threads, reach every
//! subscriber in the same order: the order in which their publishers took the lock.
//! Never: write to a socket (each connection writes its own pushes, in its own protocol),
//! or block a publisher on a slow subscriber: a subscriber whose queued pushes pass
//! `OUTBOX_BYTES_MAX` is disconnected, as Redis' `client-output-buffer-limit pubsub` does.

use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// Bytes of pushes a connection may have queued and not yet written before it is
/// disconnected (Redis' default hard limit for pub/sub clients is 32 MB).
pub const OUTBOX_BYTES_MAX: usize = 32 << 20;

/// Something another connection (or the server) has for a connection, written by the
/// connection's own task between batches.
#[derive(Debug)]
pub enum Push {
    /// A published message: `pattern` is set when it matched a pattern subscription.
    Message { kind: Kind, pattern: Option<Arc<[u8]>>, channel: Arc<[u8]>, payload: Arc<[u8]> },
    /// Close the connection (CLIENT KILL, or an outbox over its limit).
    Kill,
    /// A blocked client's answer (`crate::blocking`): its reply, written once the log
    /// holds record `lsn` (the pop made on its behalf); `error` when the reply is one
    /// (counted then as the blocked command's failure).
    Unblocked { reply: Vec<u8>, lsn: Option<u64>, error: Option<String> },
    /// Client-side caching (`crate::tracking`): these keys changed (`None`: every key, after
    /// a flush). `redirected`: sent to a connection on behalf of another one, which a RESP2
    /// connection in subscribed mode receives as a message on `__redis__:invalidate`.
    Invalidate { keys: Option<Vec<Box<[u8]>>>, redirected: bool },
    /// The connection that receives this client's invalidations (by id) is gone.
    RedirectBroken(u64),
}

impl Push {
    /// The bytes the push holds, as its outbox counts them.
    fn weight(&self) -> usize {
        match self {
            Push::Message { pattern, channel, payload, .. } => {
                64 + channel.len() + payload.len() + pattern.as_ref().map_or(0, |p| p.len())
            }
            Push::Kill => 0,
            Push::Unblocked { reply, .. } => reply.len(),
            Push::Invalidate { keys, .. } => 32 + keys.iter().flatten().map(|key| 16 + key.len()).sum::<usize>(),
            Push::RedirectBroken(_) => 32,
        }
    }
}

/// The three kinds of subscription, each with its own names (a channel and a shard
/// channel of the same name are two different things, as in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    /// The word of a subscription confirmation (`subscribe`, `psubscribe`, `ssubscribe`).
    pub fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    pub fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }

    /// The word of a delivered message.
    pub fn message_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"message",
            Kind::Pattern => b"pmessage",
            Kind::Shard => b"smessage",
        }
    }
}

/// The sending half of a connection's push queue.
#[derive(Debug, Clone)]
pub struct Outbox {
    sender: mpsc::UnboundedSender<Push>,
    queued: Arc<AtomicUsize>,
}

/// The receiving half, held by the connection's task.
pub struct Inbox {
    receiver: mpsc::UnboundedReceiver<Push>,
    queued: Arc<AtomicUsize>,
}

/// A connected pair.
pub fn outbox() -> (Outbox, Inbox) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    (Outbox { sender, queued: Arc::clone(&queued) }, Inbox { receiver, queued })
}

impl Outbox {
    /// Queues `push`; false when the connection is gone or its queue is over the limit
    /// (then it is told to close instead).
    pub fn send(&self, push: Push) -> bool {
        let weight = push.weight();
        if self.queued.fetch_add(weight, Ordering::Relaxed) + weight > OUTBOX_BYTES_MAX {
            self.queued.fetch_sub(weight, Ordering::Relaxed);
            let _ = self.sender.send(Push::Kill);
            return false;
        }
        self.sender.send(push).is_ok()
    }

    /// Tells the connection to close.
    pub fn kill(&self) {
        let _ = self.sender.send(Push::Kill);
    }
}

impl Inbox {
    /// The next push; `None` never happens while the connection's own `Outbox` lives.
    /// Refuses further pushes (a closing connection: senders learn at once that it is
    /// gone, as a client redirecting its invalidations here must).
    pub fn close(&mut self) {
        self.receiver.close();
    }

    pub async fn recv(&mut self) -> Option<Push> {
        let push = self.receiver.recv().await?;
        self.queued.fetch_sub(push.weight(), Ordering::Relaxed);
        Some(push)
    }

    /// A push already queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Push> {
        let push = self.receiver.try_recv().ok()?;
        self.queued.fetch_sub(push.weight(), Ordering::Relaxed);
        Some(push)
    }
}

/// Every subscription of the server.
#[derive(Default)]
pub struct PubSub {
    inner: Mutex<Registry>,
}

/// A subscription: its kind and name (a pattern's name is the pattern).
type Subscription = (Kind, Arc<[u8]>);

#[derive(Default)]
struct Registry {
    /// Subscribers by kind and name (a pattern's name is the pattern).
    names: HashMap<Subscription, BTreeMap<u64, Outbox>>,
    /// The patterns with at least one subscriber, for matching at publish time.
    patterns: BTreeSet<Arc<[u8]>>,
    /// What each client is subscribed to, for its counts and its cleanup.
    clients: HashMap<u64, BTreeSet<Subscription>>,
}

impl Registry {
    fn count(&self, client: u64, kinds: &[Kind]) -> usize {
        self.clients.get(&client).map_or(0, |subs| subs.iter().filter(|(kind, _)| kinds.contains(kind)).count())
    }

    fn remove(&mut self, client: u64, kind: Kind, name: &Arc<[u8]>) -> bool {
        let key = (kind, Arc::clone(name));
        let Some(subscribers) = self.names.get_mut(&key) else { return false };
        if subscribers.remove(&client).is_none() {
            return false;
        }
        if subscribers.is_empty() {
            self.names.remove(&key);
            if kind == Kind::Pattern {
                self.patterns.remove(name);
            }
        }
        if let Some(subs) = self.clients.get_mut(&client) {
            subs.remove(&key);
            if subs.is_empty() {
                self.clients.remove(&client);
            }
        }
        true
    }
}

/// How many subscriptions count towards a kind's confirmation replies: channels and
/// patterns share one count (Redis' `subscribe`/`psubscribe` replies), shard channels
/// have their own.
fn counted_with(kind: Kind) -> &'static [Kind] {
    match kind {
        Kind::Channel | Kind::Pattern => &[Kind::Channel, Kind::Pattern],
        Kind::Shard => &[Kind::Shard],
    }
}

impl PubSub {
    /// Subscribes `client` to `name`; returns the client's count after it (for the
    /// confirmation reply).
    pub fn subscribe(&self, client: u64, outbox: &Outbox, kind: Kind, name: &[u8]) -> usize {
        let mut registry = self.inner.lock();
        let name: Arc<[u8]> = Arc::from(name);
        registry.names.entry((kind, Arc::clone(&name))).or_default().insert(client, outbox.clone());
        if kind == Kind::Pattern {
            registry.patterns.insert(Arc::clone(&name));
        }
        registry.clients.entry(client).or_default().insert((kind, name));
        registry.count(client, counted_with(kind))
    }

    /// Unsubscribes `client` from `name`; returns its count after it.
    pub fn unsubscribe(&self, client: u64, kind: Kind, name: &[u8]) -> usize {
        let mut registry = self.inner.lock();
        registry.remove(client, kind, &Arc::from(name));
        registry.count(client, counted_with(kind))
    }

    /// The names of `kind` `client` is subscribed to, in order.
    pub fn subscriptions(&self, client: u64, kind: Kind) -> Vec<Arc<[u8]>> {
        let registry = self.inner.lock();
        registry.clients.get(&client).map_or_else(Vec::new, |subs| {
            subs.iter().filter(|(k, _)| *k == kind).map(|(_, name)| Arc::clone(name)).collect()
        })
    }

    /// Subscriptions of `client` counted for confirmations of `kind`.
    pub fn count(&self, client: u64, kind: Kind) -> usize {
        self.inner.lock().count(client, counted_with(kind))
    }

    /// Subscriptions of `client` of every kind (a connection in RESP2 is in subscribed
    /// mode while this is above zero).
    pub fn total(&self, client: u64) -> usize {
        self.inner.lock().clients.get(&client).map_or(0, BTreeSet::len)
    }

    /// Drops every subscription of a connection that went away.
    pub fn disconnect(&self, client: u64) {
        let mut registry = self.inner.lock();
        let Some(subs) = registry.clients.remove(&client) else { return };
        for (kind, name) in subs {
            let key = (kind, Arc::clone(&name));
            if let Some(subscribers) = registry.names.get_mut(&key) {
                subscribers.remove(&client);
                if subscribers.is_empty() {
                    registry.names.remove(&key);
                    if kind == Kind::Pattern {
                        registry.patterns.remove(&name);
                    }
                }
            }
        }
    }

    /// Delivers `payload` on `channel` (a shard channel when `kind` is `Shard`) to its
    /// subscribers and, for a plain channel, to the subscribers of every matching
    /// pattern; returns how many received it.
    pub fn publish(&self, kind: Kind, channel: &[u8], payload: &[u8]) -> usize {
        let registry = self.inner.lock();
        let channel: Arc<[u8]> = Arc::from(channel);
        let payload: Arc<[u8]> = Arc::from(payload);
        let mut receivers = 0;
        if let Some(subscribers) = registry.names.get(&(kind, Arc::clone(&channel))) {
            for outbox in subscribers.values() {
                let push =
                    Push::Message { kind, pattern: None, channel: Arc::clone(&channel), payload: Arc::clone(&payload) };
                receivers += usize::from(outbox.send(push));
            }
        }
        if kind == Kind::Channel {
            for pattern in &registry.patterns {
                if !hotset_core::kv::glob_match(pattern, &channel) {
                    continue;
                }
                let Some(subscribers) = registry.names.get(&(Kind::Pattern, Arc::clone(pattern))) else { continue };
                for outbox in subscribers.values() {
                    let push = Push::Message {
                        kind: Kind::Pattern,
                        pattern: Some(Arc::clone(pattern)),
                        channel: Arc::clone(&channel),
                        payload: Arc::clone(&payload),
                    };
                    receivers += usize::from(outbox.send(push));
                }
            }
        }
        receivers
    }

    /// Connections with at least one subscription.
    pub fn clients(&self) -> usize {
        self.inner.lock().clients.len()
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS: the names of `kind` with subscribers, matching
    /// `pattern` if given, sorted.
    pub fn channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Arc<[u8]>> {
        let registry = self.inner.lock();
        let mut names: Vec<Arc<[u8]>> = registry
            .names
            .keys()
            .filter(|(k, name)| *k == kind && pattern.is_none_or(|p| hotset_core::kv::glob_match(p, name)))
            .map(|(_, name)| Arc::clone(name))
            .collect();
        names.sort();
        names
    }

    /// How many names of `kind` have subscribers (INFO's `pubsub_channels`).
    pub fn names(&self, kind: Kind) -> usize {
        self.inner.lock().names.keys().filter(|(k, _)| *k == kind).count()
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: the subscribers of one name.
    pub fn subscribers(&self, kind: Kind, name: &[u8]) -> usize {
        self.inner.lock().names.get(&(kind, Arc::from(name))).map_or(0, BTreeMap::len)
    }

    /// PUBSUB NUMPAT: patterns with at least one subscriber.
    pub fn patterns(&self) -> usize {
        self.inner.lock().patterns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(inbox: &mut Inbox) -> Vec<(Option<String>, String, String)> {
        let mut all = Vec::new();
        while let Some(push) = inbox.try_recv() {
            if let Push::Message { pattern, channel, payload, .. } = push {
                let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                all.push((pattern.map(|p| text(&p)), text(&channel), text(&payload)));
            }
        }
        all
    }

    #[test]
    fn messages_reach_channel_and_pattern_subscribers_in_publish_order() {
        let pubsub = PubSub::default();
        let (a, mut a_in) = outbox();
        let (b, mut b_in) = outbox();
        assert_eq!(pubsub.subscribe(1, &a, Kind::Channel, b"news"), 1);
        assert_eq!(pubsub.subscribe(1, &a, Kind::Pattern, b"n*"), 2);
        assert_eq!(pubsub.subscribe(2, &b, Kind::Shard, b"news"), 1, "shard channels count apart");
        assert_eq!(pubsub.publish(Kind::Channel, b"news", b"1"), 2, "once by name, once by pattern");
        assert_eq!(pubsub.publish(Kind::Channel, b"nope", b"2"), 1);
        assert_eq!(pubsub.publish(Kind::Shard, b"news", b"3"), 1);
        assert_eq!(pubsub.publish(Kind::Channel, b"other", b"4"), 0);
        assert_eq!(
            received(&mut a_in),
            [
                (None, "news".into(), "1".into()),
                (Some("n*".into()), "news".into(), "1".into()),
                (Some("n*".into()), "nope".into(), "2".into())
            ]
        );
        assert_eq!(received(&mut b_in), [(None, "news".into(), "3".into())]);
        assert_eq!(pubsub.channels(Kind::Channel, None).len(), 1);
        assert_eq!(pubsub.patterns(), 1);
        assert_eq!(pubsub.unsubscribe(1, Kind::Channel, b"news"), 1);
        assert_eq!(pubsub.unsubscribe(1, Kind::Channel, b"news"), 1, "twice is harmless");
        pubsub.disconnect(1);
        assert_eq!((pubsub.patterns(), pubsub.total(1)), (0, 0));
        assert_eq!(pubsub.subscribers(Kind::Shard, b"news"), 1);
    }

    #[test]
    fn a_subscriber_over_its_limit_is_told_to_close() {
        let pubsub = PubSub::default();
        let (a, mut a_in) = outbox();
        pubsub.subscribe(1, &a, Kind::Channel, b"c");
        let big = vec![b'x'; OUTBOX_BYTES_MAX / 2];
        assert_eq!(pubsub.publish(Kind::Channel, b"c", &big), 1);
        assert_eq!(pubsub.publish(Kind::Channel, b"c", &big), 0, "over the limit");
        assert!(matches!(a_in.try_recv(), Some(Push::Message { .. })));
        assert!(matches!(a_in.try_recv(), Some(Push::Kill)));
    }
}
