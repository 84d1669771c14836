//! One RESP connection: read whatever the socket holds, execute every complete request in
//! it, wait once for the log to acknowledge the batch's writes, answer with one write.
//!
//! Each batch has its own `Acks` (the session's, fresh per batch), which every request it
//! executes reaches: a write notes its log record there and returns without waiting, and a
//! request wrote iff the collector's highest lsn moved while it ran. One wait for that
//! highest lsn settles the batch.
//!
//! The stream is any byte stream (a TCP socket, or a TLS session over one: the server
//! finishes the handshake first), so plain and TLS clients share every line of this.
//!
//! A batch runs inside the script gate (`crate::gate`): entered once per batch, so no
//! script starts while it runs; a batch that runs a script holds the gate closed to its
//! end. While another connection holds it this connection waits without holding a
//! thread, for the gate to open (or, when its next request is a script, for its turn to
//! close it), or until the script has run past `busy-reply-threshold`; then the batch runs
//! outside the gate, each command answered `-BUSY` but those the table lets through
//! (`commands::table::Busy`). A script command that finds the turn taken ends the batch
//! before itself, unread, like a command that blocked, and the connection queues for the
//! turn.
//!
//! Owns: the connection's read and reply buffers and its batch loop. Never: answer a
//! write before the log has acknowledged it under the fsync policy, or keep serving a
//! connection after a protocol error (its framing can no longer be trusted; Redis closes
//! too).

use super::parse::{FrameLimits, Parsed, parse};
use crate::commands::pubsub::write_push;
use crate::commands::{Pass, Session, execute, table};
use crate::gate::Wait;
use crate::pubsub::{Inbox, Push};
use crate::resp::reply::Reply;
use crate::state::ServerState;
use hotset_core::journal::Acks;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Initial size of a connection's read buffer; it grows for larger requests.
const READ_BUFFER_BYTES: usize = 16 << 10;

/// Serves one client until it disconnects, sends QUIT or breaks the protocol.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(state: Arc<ServerState>, mut stream: S, addr: SocketAddr) {
    let Some((id, outbox, mut inbox)) = state.connect(addr) else {
        // Like Redis: the client learns why before the connection closes.
        let _ = send(&mut stream, b"-ERR max number of clients reached\r\n").await;
        let _ = stream.shutdown().await;
        return;
    };
    let _registered = Registered { state: &state, id };
    let mut session = Session::new(&state, id, outbox);
    let mut limits = FrameLimits {
        bulk_bytes_max: state.config.limits.max_bulk_bytes,
        args_max: state.config.limits.max_args,
        ..FrameLimits::default()
    };
    let mut input: Vec<u8> = Vec::with_capacity(READ_BUFFER_BYTES);
    let mut out: Vec<u8> = Vec::with_capacity(READ_BUFFER_BYTES);
    // Requests a blocking command left unread in `input` run once it is answered.
    let mut resume = false;
    loop {
        if input.capacity() - input.len() < READ_BUFFER_BYTES / 4 {
            input.reserve(input.capacity().max(READ_BUFFER_BYTES));
        }
        if session.blocked.is_some() {
            if !wait_unblocked(&state, &mut session, &mut stream, &mut inbox, &mut input, &mut out).await {
                let _ = stream.shutdown().await;
                return;
            }
            out.clear();
            resume = true;
            continue;
        }
        if std::mem::take(&mut resume) {
            // Straight to the batch: what was read while blocked is in `input`.
        } else {
            // A push (a message on a subscribed channel, CLIENT KILL) may come at any time,
            // between requests. Both branches are cancel safe: a read that loses the race
            // has read nothing.
            tokio::select! {
                biased;
                push = inbox.recv() => {
                    if !take_pushes(push, &mut inbox, &session, &mut out) || send(&mut stream, &out).await.is_err() {
                        let _ = stream.shutdown().await;
                        return;
                    }
                    out.clear();
                    continue;
                }
                read = stream.read_buf(&mut input) => match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                },
                () = idle(&state, &session) => {
                    // Redis' `timeout`: an idle client (not a subscriber) is closed.
                    let _ = stream.shutdown().await;
                    return;
                }
            }
        }
        session.acks = Acks::new();
        limits.bulk_bytes_max = state.params.proto_max_bulk_len.load(Ordering::Relaxed) as usize;
        let batch = run_batch(&state, &mut session, &mut inbox, &input, &mut out, &limits);
        // Nor does a reply show another client's write before the log holds it. Taken
        // now, not after the writes settle: by then other clients' later writes, which
        // no reply of this batch shows, would be waited for too.
        let settled = state.engine.settled();
        let acks = std::mem::take(&mut session.acks);
        input.drain(..batch.consumed);
        settle_writes(&state, &batch.writes, &acks, &mut out).await;
        if let Some(settled) = settled {
            settled.await;
        }
        if batch.close || session.closing {
            // Gone before the last reply is sent: a client redirecting its invalidations
            // here learns so from the next one (Redis frees a QUIT client at once too).
            state.disconnect(session.id);
            inbox.close();
        }
        if !out.is_empty() {
            if send(&mut stream, &out).await.is_err() {
                return;
            }
            out.clear();
        }
        if batch.close || session.closing {
            // Over TLS this sends close_notify, so the client sees an orderly end.
            let _ = stream.shutdown().await;
            return;
        }
        if let Some(wait) = batch.wait {
            if !wait_gate(&state, &mut session, wait, &mut stream, &mut inbox, &mut out).await {
                let _ = stream.shutdown().await;
                return;
            }
            // What was left unread runs now.
            resume = true;
            continue;
        }
        // A read buffer grown for one huge request does not stay that large.
        if input.is_empty() && input.capacity() > 1 << 20 {
            input = Vec::with_capacity(READ_BUFFER_BYTES);
        }
    }
}

/// Waits while the connection is blocked (BLPOP and kin): for the push that serves it (its
/// reply is written once the log holds the pop made for it), its deadline (a null reply),
/// a kill or the client leaving (false: close). Requests the client sends meanwhile are
/// read into `input` and run afterwards, in order.
async fn wait_unblocked<S: AsyncRead + AsyncWrite + Unpin>(
    state: &ServerState,
    session: &mut Session,
    stream: &mut S,
    inbox: &mut Inbox,
    input: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> bool {
    let mut deadline = session.blocked.expect("called while blocked");
    // Invalidations that come while blocked follow the blocked command's reply: the
    // write that serves it may invalidate a key it read (Redis orders them so too).
    let mut held = Vec::new();
    let answered = |session: &Session, out: &mut Vec<u8>, held: &mut Vec<Push>| {
        for push in held.drain(..) {
            write_push(&push, session.protocol, session.subscriptions > 0, out);
        }
    };
    loop {
        let timeout = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            push = inbox.recv() => match push {
                Some(Push::Unblocked { reply, lsn, error }) => {
                    session.blocked = None;
                    if let Some(message) = error {
                        state.stats.count_error(&message);
                        if let Some(spec) = session.blocked_by.take() {
                            state.stats.count_failure(spec);
                        }
                    }
                    let kept = match lsn {
                        Some(lsn) => settle(state, lsn).await,
                        None => Ok(()),
                    };
                    match kept {
                        Ok(()) => out.extend_from_slice(&reply),
                        Err(reason) => Reply { out: &mut *out, protocol: session.protocol }.error(&format!("MISCONF {reason}")),
                    }
                    answered(session, out, &mut held);
                    return send(stream, out).await.is_ok();
                }
                Some(Push::Kill) | None => return false,
                Some(invalidation @ (Push::Invalidate { .. } | Push::RedirectBroken(_))) => held.push(invalidation),
                Some(message) => {
                    write_push(&message, session.protocol, session.subscriptions > 0, out);
                    if send(stream, out).await.is_err() {
                        return false;
                    }
                    out.clear();
                }
            },
            read = stream.read_buf(input) => match read {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            },
            () = timeout => {
                if state.blocking.cancel(session.id) {
                    session.blocked = None;
                    Reply { out: &mut *out, protocol: session.protocol }.null_array();
                    answered(session, out, &mut held);
                    return send(stream, out).await.is_ok();
                }
                // Served meanwhile: its push is on the way.
                deadline = None;
            }
        }
    }
}

/// Waits while a script holds the gate, until it opens (`Wait::Open`) or this connection
/// has the turn to close it (`Wait::Turn`), or until the script is busy (the next batch
/// then answers -BUSY), delivering pushes meanwhile; false when one says to close.
async fn wait_gate<S: AsyncRead + AsyncWrite + Unpin>(
    state: &ServerState,
    session: &mut Session,
    wait: Wait,
    stream: &mut S,
    inbox: &mut Inbox,
    out: &mut Vec<u8>,
) -> bool {
    let threshold = state.params.busy_reply_threshold();
    let gate = &state.gate;
    // Made once, outside the loop: a push delivered meanwhile must not put the connection
    // back at the end of the turn's queue, nor restart its -BUSY clock. Every branch is
    // cancel safe: a wait for the turn that is dropped leaves the queue.
    let ready = async {
        match wait {
            Wait::Open => {
                gate.wait(threshold).await;
                None
            }
            Wait::Turn => tokio::select! {
                turn = gate.wait_turn() => Some(turn),
                () = gate.wait_busy(threshold) => None,
            },
        }
    };
    tokio::pin!(ready);
    loop {
        tokio::select! {
            biased;
            push = inbox.recv() => {
                if !take_pushes(push, inbox, session, out) || send(stream, out).await.is_err() {
                    return false;
                }
                out.clear();
            }
            turn = &mut ready => {
                session.turn = turn;
                return true;
            }
        }
    }
}

/// Waits for the log to acknowledge record `lsn`; the failure's words otherwise.
pub(crate) async fn settle(state: &ServerState, lsn: u64) -> Result<(), String> {
    let waiting = state.store().read().as_ref().map(|store| store.wait_acknowledged(lsn));
    match waiting {
        Some(waiting) => waiting.await.map_err(|error| error.to_string()),
        None => Err("the server is shutting down".into()),
    }
}

/// Completes once the connection has been idle for Redis' `timeout` (never when it is 0
/// or the connection is subscribed).
async fn idle(state: &ServerState, session: &Session) {
    match state.params.timeout_secs.load(Ordering::Relaxed) {
        0 => std::future::pending().await,
        _ if session.subscriptions > 0 => std::future::pending().await,
        seconds => tokio::time::sleep(std::time::Duration::from_secs(seconds)).await,
    }
}

/// Writes `first` and every push already queued after it into `out`; false when one of
/// them says the connection must close.
fn take_pushes(first: Option<Push>, inbox: &mut Inbox, session: &Session, out: &mut Vec<u8>) -> bool {
    let mut next = first;
    while let Some(push) = next {
        if matches!(push, Push::Kill) {
            return false;
        }
        write_push(&push, session.protocol, session.subscriptions > 0, out);
        next = inbox.try_recv();
    }
    true
}

/// Writes `bytes` and flushes: a TLS stream may keep encrypted bytes buffered until
/// flushed (a TCP socket's flush does nothing).
async fn send<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// Unregisters the client however the connection ends.
struct Registered<'a> {
    state: &'a ServerState,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.state.disconnect(self.id);
    }
}

/// What one batch did.
struct Batch {
    /// Bytes of the input that were whole requests.
    consumed: usize,
    /// Requests that wrote, with where their reply sits in `out` and the lsn to wait for.
    writes: Vec<Written>,
    /// A protocol error was answered: close after writing.
    close: bool,
    /// A script holds the gate: the connection waits so, then runs what is left unread.
    wait: Option<Wait>,
}

struct Written {
    reply: std::ops::Range<usize>,
    lsn: u64,
}

/// Executes every complete request at the start of `input`, appending replies to `out`;
/// their writes note their log records into `session.acks`.
fn run_batch(
    state: &Arc<ServerState>,
    session: &mut Session,
    inbox: &mut Inbox,
    input: &[u8],
    out: &mut Vec<u8>,
    limits: &FrameLimits,
) -> Batch {
    let started = std::time::Instant::now();
    // One wall-clock reading for the batch's expiry judgements (see `pin_now`).
    let _now = hotset_core::clock::pin_now();
    let mut batch = Batch { consumed: 0, writes: Vec::new(), close: false, wait: None };
    let mut reader = state.gate.enter();
    session.gate = Pass::Reader;
    if reader.is_none() {
        if !state.gate.is_busy(state.params.busy_reply_threshold()) {
            // A script command waits for its turn to close the gate (woken once, in
            // line), anything else for the gate to open.
            let script = session.multi.is_none() && first_is_script(input, limits);
            batch.wait = Some(if script { Wait::Turn } else { Wait::Open });
            session.turn = None;
            return batch;
        }
        session.gate = Pass::Busy(state.scripts.busy_error());
    }
    // Not while a script holds the gate (a -BUSY batch): judging memory reads every shard,
    // which the script has locked, and Redis does not evict while a script runs either.
    session.over_memory = reader.is_some() && crate::memory::Memory::over_limit(state);
    let mut args = Vec::new();
    let mut commands = 0;
    // A command that blocked ends the batch: the requests after it wait until it is
    // answered.
    while batch.consumed < input.len() && !session.closing && session.blocked.is_none() {
        // The script ended: the rest of the batch runs inside the gate.
        if reader.is_none() {
            reader = state.gate.enter();
            if reader.is_some() {
                session.gate = Pass::Reader;
            }
        }
        // An inline request's arguments are owned (its quoting was undone).
        let (owned, quoted): (Vec<Vec<u8>>, Vec<&[u8]>);
        let (len, request) = match parse(&input[batch.consumed..], &mut args, limits) {
            Parsed::Incomplete => break,
            Parsed::Invalid(reason) => {
                state.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                out.extend_from_slice(b"-ERR Protocol error: ");
                out.extend_from_slice(reason.as_bytes());
                out.extend_from_slice(b"\r\n");
                batch.close = true;
                batch.consumed = input.len();
                break;
            }
            Parsed::Quoted(len, parsed) => {
                owned = parsed;
                quoted = owned.iter().map(Vec::as_slice).collect();
                (len, quoted.as_slice())
            }
            Parsed::Request(len) => (len, args.as_slice()),
        };
        batch.consumed += len;
        if request.is_empty() {
            continue;
        }
        let go = run_request(state, session, inbox, request, out, &mut batch);
        if deferred(session, &mut batch, len) {
            break;
        }
        commands += 1;
        if !go {
            break;
        }
    }
    if batch.close {
        batch.consumed = input.len();
    }
    // Shared counters are updated once per batch, not per command: on a pipelined
    // connection the per-command cache-line traffic between cores was measurable.
    let stats = &state.stats;
    stats.batches.fetch_add(1, Ordering::Relaxed);
    stats.commands.fetch_add(commands, Ordering::Relaxed);
    let elapsed = started.elapsed();
    stats.resp_latency.record_many(elapsed, commands);
    stats.add_tallies(&session.tallies, elapsed);
    session.tallies.clear();
    // The gate opens, then the turn passes to the next connection in line.
    session.gate_held = None;
    session.turn = None;
    drop(reader);
    batch
}

/// Whether the first request in `input` runs a script (EVAL, FCALL and kin).
fn first_is_script(input: &[u8], limits: &FrameLimits) -> bool {
    let is_script =
        |name: &[u8]| table::lookup(name).is_some_and(|spec| matches!(spec.handler, table::Handler::Script(_)));
    let mut args = Vec::new();
    match parse(input, &mut args, limits) {
        Parsed::Request(_) => args.first().is_some_and(|name| is_script(name)),
        Parsed::Quoted(_, owned) => owned.first().is_some_and(|name| is_script(name)),
        Parsed::Incomplete | Parsed::Invalid(_) => false,
    }
}

/// Whether the request just run was deferred (another connection has the turn to close
/// the gate): then it stays unread (its `len` bytes) and the batch ends for the connection
/// to wait as the request said.
fn deferred(session: &mut Session, batch: &mut Batch, len: usize) -> bool {
    let Some(wait) = session.deferred.take() else {
        return false;
    };
    batch.consumed -= len;
    batch.wait = Some(wait);
    true
}

/// Executes one request into `out`, noting its write; false when the connection must
/// close after the batch (a push told it to).
fn run_request(
    state: &Arc<ServerState>,
    session: &mut Session,
    inbox: &mut Inbox,
    args: &[&[u8]],
    out: &mut Vec<u8>,
    batch: &mut Batch,
) -> bool {
    let start = out.len();
    // A request wrote iff the highest lsn the batch's collector noted moved.
    let before = session.acks.last_lsn();
    execute(state, session, args, out);
    let after = session.acks.last_lsn();
    if let Some(lsn) = after.filter(|_| after != before) {
        batch.writes.push(Written { reply: start..out.len(), lsn });
    }
    // A subscriber's messages published meanwhile (by itself, too) go out in order with
    // its replies.
    if session.subscriptions > 0 && !take_pushes(inbox.try_recv(), inbox, session, out) {
        batch.close = true;
        return false;
    }
    true
}

/// Waits for the log to acknowledge the batch's writes (one wait: records are
/// acknowledged in order). If it fails, each write's reply becomes the error, since the
/// client must not believe a write the log could not keep.
async fn settle_writes(state: &ServerState, writes: &[Written], acks: &Acks, out: &mut Vec<u8>) {
    let Some(last) = writes.iter().map(|w| w.lsn).max() else { return };
    debug_assert_eq!(Some(last), acks.last_lsn(), "every noted record belongs to a request");
    // The log writer wakes this task once the record is acknowledged: no thread waits.
    if let Err(reason) = settle(state, last).await {
        refuse_unlogged(writes, acks, &reason, out);
    }
}

/// After a log failure: replaces the reply of each write whose record the log did not
/// keep with `-MISCONF <reason>`; writes acknowledged before the failure keep theirs.
fn refuse_unlogged(writes: &[Written], acks: &Acks, reason: &str, out: &mut Vec<u8>) {
    let mut rebuilt = Vec::with_capacity(out.len());
    let mut at = 0;
    for written in writes {
        rebuilt.extend_from_slice(&out[at..written.reply.start]);
        match acks.wait_for(written.lsn) {
            Ok(()) => rebuilt.extend_from_slice(&out[written.reply.clone()]),
            Err(_) => {
                rebuilt.extend_from_slice(b"-MISCONF ");
                rebuilt.extend(reason.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
                rebuilt.extend_from_slice(b"\r\n");
            }
        }
        at = written.reply.end;
    }
    rebuilt.extend_from_slice(&out[at..]);
    *out = rebuilt;
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotset_core::journal::{Journal, JournalError, JournalSlot};

    /// A log that kept records up to `kept` and failed the rest.
    struct FailedAfter {
        kept: u64,
    }

    impl Journal for FailedAfter {
        fn writable(&self) -> Result<(), JournalError> {
            Ok(())
        }
        fn append(&self, _encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
            unreachable!("the test notes lsns itself")
        }
        fn wait(&self, lsn: u64) -> Result<(), JournalError> {
            if lsn <= self.kept { Ok(()) } else { Err(JournalError { reason: "disk full".into() }) }
        }
    }

    #[test]
    fn only_the_writes_the_log_lost_become_misconf() {
        let slot = JournalSlot::default();
        assert!(slot.attach(std::sync::Arc::new(FailedAfter { kept: 7 })));
        let acks = Acks::new();
        acks.note(slot.ack(Some(7)));
        acks.note(slot.ack(Some(8)));
        // A read, a write that was kept (lsn 7), a read, a write that was lost (lsn 8).
        let mut out = b"$1\r\na\r\n+OK\r\n:3\r\n+OK\r\n".to_vec();
        let writes = [Written { reply: 7..12, lsn: 7 }, Written { reply: 16..21, lsn: 8 }];
        assert_eq!(&out[7..12], b"+OK\r\n");
        refuse_unlogged(&writes, &acks, "log failed:\r\ndisk full", &mut out);
        assert_eq!(out, b"$1\r\na\r\n+OK\r\n:3\r\n-MISCONF log failed:  disk full\r\n");
    }
}
