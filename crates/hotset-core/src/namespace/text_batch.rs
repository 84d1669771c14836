//! Text indexes filled on threads of their own during a large batch of writes.
//!
//! Owns: `TextWorkers`: for a batch of many rows under one write lock (a large
//! transaction), each text index is moved onto a thread that takes the batch's inserts
//! and removes in order, while the writing thread stores documents and keeps the other
//! indexes; at the end of the batch the threads are joined and the indexes put back.
//! Indexing text is most of the cost of loading documents with a text index, so on two
//! cores a load takes about as long as its text alone.
//! Never: let anything read a text index during the batch (the caller holds the write
//! lock from `start` to `finish`), or reorder one index's operations.

use crate::index::{Index, Lookup};
use crate::text::TextIndex;
use crate::value::Scalar;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Rows from which a batch indexes text on other threads (smaller ones do it inline).
pub(crate) const THREAD_MIN_ROWS: usize = 4096;

/// Jobs sent to a worker at a time (one channel send per chunk, not per row).
const CHUNK: usize = 256;

/// One operation on a text index, in the order the batch made them.
pub(crate) enum Job {
    /// A row's string values, field by field.
    Insert(u32, Vec<Vec<Scalar>>),
    Remove(u32),
}

struct Worker {
    /// Position of the text index in the namespace's indexes.
    index: usize,
    jobs: Option<SyncSender<Vec<Job>>>,
    buffer: Vec<Job>,
    thread: Option<JoinHandle<Box<TextIndex>>>,
}

/// The text indexes of a namespace that are being filled off-thread (none outside a
/// large batch).
#[derive(Default)]
pub(crate) struct TextWorkers {
    workers: Vec<Worker>,
}

impl std::fmt::Debug for TextWorkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TextWorkers({} running)", self.workers.len())
    }
}

impl TextWorkers {
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// Moves every text index onto a thread of its own, each started in batch mode. An
    /// index whose thread cannot be spawned stays and is batched inline.
    pub fn start(indexes: &mut [Index], rows_hint: usize) -> TextWorkers {
        let mut workers = Vec::new();
        for (position, index) in indexes.iter_mut().enumerate() {
            let Lookup::Text(slot) = &mut index.lookup else { continue };
            let placeholder = Box::new(TextIndex::new(slot.fields.clone(), slot.config.clone()));
            let mut text = std::mem::replace(slot, placeholder);
            let (jobs, queue) = sync_channel::<Vec<Job>>(64);
            let spawned = std::thread::Builder::new().name("hotset-text".into()).spawn(move || {
                text.begin_batch(rows_hint);
                for chunk in queue {
                    for job in chunk {
                        match job {
                            Job::Insert(row, fields) => text.insert(row, fields.iter().map(Vec::as_slice)),
                            Job::Remove(row) => text.remove(row),
                        }
                    }
                }
                text.end_batch();
                text
            });
            match spawned {
                Ok(thread) => workers.push(Worker {
                    index: position,
                    jobs: Some(jobs),
                    buffer: Vec::with_capacity(CHUNK),
                    thread: Some(thread),
                }),
                Err(_) => {
                    // No thread to be had: the index was not moved after all.
                    let Lookup::Text(slot) = &mut index.lookup else { unreachable!("checked above") };
                    slot.begin_batch(rows_hint);
                }
            }
        }
        TextWorkers { workers }
    }

    /// Queues `job` for the text index at `index`; false when that index is not on a
    /// worker (the caller then applies it inline).
    pub fn send(&mut self, index: usize, job: Job) -> bool {
        let Some(worker) = self.workers.iter_mut().find(|w| w.index == index) else { return false };
        worker.buffer.push(job);
        if worker.buffer.len() >= CHUNK {
            worker.flush();
        }
        true
    }

    /// Waits for every worker to finish its jobs and puts its text index back; a text
    /// index that is not on a worker ends its inline batch.
    pub fn finish(&mut self, indexes: &mut [Index]) {
        for mut worker in self.workers.drain(..) {
            worker.flush();
            worker.jobs = None;
            let thread = worker.thread.take().expect("a worker is joined once");
            let text = thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            indexes[worker.index].lookup = Lookup::Text(text);
        }
    }
}

impl Worker {
    fn flush(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK));
        if let Some(jobs) = &self.jobs {
            // A worker that stopped (it panicked) reports its panic at `finish`.
            let _ = jobs.send(chunk);
        }
    }
}
