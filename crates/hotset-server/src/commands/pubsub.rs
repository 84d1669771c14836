//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE,
//! SUNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB; and the wire form of a delivered message.
//!
//! Owns: Redis' replies for these (one confirmation push per name, the counts, RESP2
//! arrays or RESP3 pushes) and the session's subscription count, which decides RESP2's
//! subscribed mode. Never: deliver a message itself (`pubsub::PubSub` hands it to each
//! subscriber's outbox; each connection writes its own).

use super::Session;
use super::args::{self, CmdError, CmdResult};
use crate::pubsub::{Kind, Push};
use crate::resp::reply::{Protocol, Reply};
use crate::state::ServerState;
use std::sync::Arc;

pub fn subscribe(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    subscribe_to(state, session, Kind::Channel, &a[1..], r)
}

pub fn psubscribe(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    subscribe_to(state, session, Kind::Pattern, &a[1..], r)
}

pub fn ssubscribe(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    subscribe_to(state, session, Kind::Shard, &a[1..], r)
}

pub fn unsubscribe(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    unsubscribe_from(state, session, Kind::Channel, &a[1..], r)
}

pub fn punsubscribe(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    unsubscribe_from(state, session, Kind::Pattern, &a[1..], r)
}

pub fn sunsubscribe(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    unsubscribe_from(state, session, Kind::Shard, &a[1..], r)
}

pub fn publish(state: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(state.pubsub.publish(Kind::Channel, a[1], a[2]) as i64);
    Ok(())
}

pub fn spublish(state: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(state.pubsub.publish(Kind::Shard, a[1], a[2]) as i64);
    Ok(())
}

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel...] | NUMPAT | SHARDCHANNELS [pattern] |
/// SHARDNUMSUB [channel...]
pub fn pubsub(state: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    let pubsub = &state.pubsub;
    let channels = |kind: Kind, r: &mut Reply<'_>| -> CmdResult {
        if a.len() > 3 {
            return Err(subcommand_arity(sub));
        }
        let names = pubsub.channels(kind, a.get(2).copied());
        r.array(names.len());
        names.iter().for_each(|name| r.bulk(name));
        Ok(())
    };
    let numsub = |kind: Kind, r: &mut Reply<'_>| {
        // A flat array in both protocols, as Redis answers (clients parse it as pairs).
        r.array(2 * (a.len() - 2));
        for name in &a[2..] {
            r.bulk(name);
            r.int(pubsub.subscribers(kind, name) as i64);
        }
    };
    if args::is(sub, "CHANNELS") {
        channels(Kind::Channel, r)?;
    } else if args::is(sub, "SHARDCHANNELS") {
        channels(Kind::Shard, r)?;
    } else if args::is(sub, "NUMSUB") {
        numsub(Kind::Channel, r);
    } else if args::is(sub, "SHARDNUMSUB") {
        numsub(Kind::Shard, r);
    } else if args::is(sub, "NUMPAT") {
        if a.len() != 2 {
            return Err(subcommand_arity(sub));
        }
        r.int(pubsub.patterns() as i64);
    } else {
        return Err(args::unknown_subcommand("PUBSUB", sub));
    }
    Ok(())
}

fn subcommand_arity(sub: &[u8]) -> CmdError {
    CmdError(format!(
        "ERR wrong number of arguments for 'pubsub|{}' command",
        String::from_utf8_lossy(sub).to_ascii_lowercase()
    ))
}

fn subscribe_to(
    state: &ServerState,
    session: &mut Session,
    kind: Kind,
    names: &[&[u8]],
    r: &mut Reply<'_>,
) -> CmdResult {
    for name in names {
        let count = state.pubsub.subscribe(session.id, &session.outbox, kind, name);
        confirmation(r, kind.subscribe_word(), Some(name), count);
    }
    session.subscriptions = state.pubsub.total(session.id);
    Ok(())
}

/// Without names, from every subscription of the kind; with none, one confirmation with
/// a null name, as Redis answers.
fn unsubscribe_from(
    state: &ServerState,
    session: &mut Session,
    kind: Kind,
    names: &[&[u8]],
    r: &mut Reply<'_>,
) -> CmdResult {
    let pubsub = &state.pubsub;
    if names.is_empty() {
        let all = pubsub.subscriptions(session.id, kind);
        if all.is_empty() {
            confirmation(r, kind.unsubscribe_word(), None, pubsub.count(session.id, kind));
        }
        for name in all {
            let count = pubsub.unsubscribe(session.id, kind, &name);
            confirmation(r, kind.unsubscribe_word(), Some(&name), count);
        }
    } else {
        for name in names {
            let count = pubsub.unsubscribe(session.id, kind, name);
            confirmation(r, kind.unsubscribe_word(), Some(name), count);
        }
    }
    session.subscriptions = pubsub.total(session.id);
    Ok(())
}

fn confirmation(r: &mut Reply<'_>, word: &[u8], name: Option<&[u8]>, count: usize) {
    r.push(3);
    r.bulk(word);
    r.bulk_or_null(name);
    r.int(count as i64);
}

/// Writes a push for the connection in its protocol: a message as Redis sends it
/// (`message channel payload`, `pmessage pattern channel payload`, `smessage ...`), a
/// blocked command's reply, or a client-side caching invalidation (`subscribed`: whether
/// the connection is in subscribed mode, where RESP2 receives invalidations).
pub fn write_push(push: &Push, protocol: Protocol, subscribed: bool, out: &mut Vec<u8>) {
    let mut r = Reply { out, protocol };
    match push {
        Push::Unblocked { reply, .. } => r.out.extend_from_slice(reply),
        Push::Message { kind, pattern, channel, payload } => {
            r.push(if pattern.is_some() { 4 } else { 3 });
            r.bulk(kind.message_word());
            if let Some(pattern) = pattern {
                r.bulk(pattern);
            }
            r.bulk(channel);
            r.bulk(payload);
        }
        Push::Invalidate { keys, redirected } => {
            // RESP2 has no pushes: only a connection receiving another client's
            // invalidations while subscribed gets them, as pub/sub messages.
            if protocol == Protocol::Resp3 {
                r.push(2);
                r.bulk(b"invalidate");
            } else if *redirected && subscribed {
                r.push(3);
                r.bulk(b"message");
                r.bulk(crate::tracking::CHANNEL);
            } else {
                return;
            }
            match keys {
                Some(keys) => {
                    r.array(keys.len());
                    keys.iter().for_each(|key| r.bulk(key));
                }
                None => r.null(),
            }
        }
        Push::RedirectBroken(id) => {
            if protocol == Protocol::Resp3 {
                r.push(2);
                r.bulk(b"tracking-redir-broken");
                r.int(*id as i64);
            }
        }
        Push::Kill => {}
    }
}
