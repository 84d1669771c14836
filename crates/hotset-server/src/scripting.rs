//! Lua scripting's server-wide state: the engine, the script running now, the counts INFO
//! reads, and the function libraries the database keeps.
//!
//! Owns: [`Scripts`]: the one `hotset_script::Engine` (the EVAL cache and the function
//! libraries) behind a mutex; the running script's word (its kind, whether it wrote,
//! whether SCRIPT KILL / FUNCTION KILL asked it to stop: one atomic, so a kill request and
//! the script's first write decide between themselves which came first); what FUNCTION
//! STATS shows of it; the counts INFO and FUNCTION STATS read without the engine (a
//! running script holds it); `redis.log` into the server's log; and loading, at start,
//! the libraries FUNCTION LOAD, DELETE, FLUSH and RESTORE logged (the metadata entry
//! [`FUNCTIONS_META`], a FUNCTION DUMP payload; the log and the snapshots keep it).
//! Never: run a command (`commands::scripts` does), or be locked by a connection outside
//! the script gate (`crate::gate`): a gate holder runs scripts, readers load and list;
//! a connection answered while busy reads only the atomics here.
//!
//! Keyed scripts (`commands::scripts`: EVALSHA and FCALL with declared keys) run on an
//! engine of the running thread's own ([`Scripts::with_local`]), so that scripts on
//! different keys run side by side. The shared engine stays the one truth: a thread's
//! engine takes its function libraries from the payload the shared one last dumped and
//! drops its scripts when SCRIPT FLUSH counted a flush (two epochs), and fetches a cached
//! script's body from the shared engine only when that engine is free.

use hotset_core::Database;
use hotset_script::{Engine, Limits, LogLevel, RestorePolicy, RunningScript, Value, errors};
use parking_lot::{Mutex, MutexGuard};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

thread_local! {
    /// A script's `redis.call` runs on this thread.
    static CALLING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a command a script called: `called_by_script` is true meanwhile.
pub fn calling<R>(f: impl FnOnce() -> R) -> R {
    let before = CALLING.replace(true);
    let result = f();
    CALLING.set(before);
    result
}

/// Whether the command running on this thread was called by a script (SORT then orders
/// what it would leave in a set's own order, as Redis does for scripts).
pub fn called_by_script() -> bool {
    CALLING.get()
}

/// A thread's own engine for keyed scripts, and the epochs it is in step with.
struct Local {
    /// The `Scripts` it belongs to (`Scripts::id`): a process may hold more than one.
    owner: u64,
    engine: Engine,
    functions_epoch: u64,
    flush_epoch: u64,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Tells apart the `Scripts` of one process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The metadata entry holding the function libraries (a FUNCTION DUMP payload), named
/// where the embedded database shares it.
pub use hotset_ops::procedure::FUNCTIONS_META;

/// What kind of script runs (the two take different kill commands and BUSY texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// EVAL, EVALSHA and their `_RO` forms.
    Eval,
    /// FCALL, FCALL_RO.
    Function,
}

// The running script's word: its kind in the low bits, then two flags.
const EVAL: u8 = 1;
const FUNCTION: u8 = 2;
const KIND: u8 = EVAL | FUNCTION;
/// It ran a write command: killing it would leave half of its effects.
const WROTE: u8 = 4;
/// SCRIPT KILL or FUNCTION KILL asked it to stop.
const KILL: u8 = 8;

/// What FUNCTION STATS shows of the running script.
struct Running {
    name: String,
    command: Vec<Vec<u8>>,
    started: Instant,
}

/// Scripting's shared state.
pub struct Scripts {
    engine: Mutex<Engine>,
    id: u64,
    limits: Limits,
    logger: hotset_script::Logger,
    /// Counts the changes of the function libraries; `functions` is the shared engine's
    /// dump after the latest, with that count.
    functions_epoch: AtomicU64,
    libraries_dump: Mutex<(u64, Arc<Vec<u8>>)>,
    /// Counts SCRIPT FLUSHes.
    flush_epoch: AtomicU64,
    run: AtomicU8,
    running: Mutex<Option<Running>>,
    cached_scripts: AtomicUsize,
    cached_script_bytes: AtomicUsize,
    eval_vm_bytes: AtomicUsize,
    libraries: AtomicUsize,
    functions: AtomicUsize,
    functions_vm_bytes: AtomicUsize,
}

/// What INFO's memory section reports of scripting.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub cached_scripts: usize,
    pub cached_script_bytes: usize,
    pub eval_vm_bytes: usize,
    pub libraries: usize,
    pub functions: usize,
    pub functions_vm_bytes: usize,
}

impl Default for Scripts {
    fn default() -> Scripts {
        let logger: hotset_script::Logger = Arc::new(|level, message: &[u8]| {
            let message = String::from_utf8_lossy(message);
            match level {
                LogLevel::Debug => tracing::debug!(target: "script", "{message}"),
                LogLevel::Verbose => tracing::debug!(target: "script", "{message}"),
                LogLevel::Notice => tracing::info!(target: "script", "{message}"),
                LogLevel::Warning => tracing::warn!(target: "script", "{message}"),
            }
        });
        let limits = Limits::default();
        let engine = Engine::new(limits, Arc::clone(&logger)).expect("a Lua state starts");
        let dump = Arc::new(engine.function_dump());
        let scripts = Scripts {
            engine: Mutex::new(engine),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            limits,
            logger,
            functions_epoch: AtomicU64::new(1),
            libraries_dump: Mutex::new((1, dump)),
            flush_epoch: AtomicU64::new(1),
            run: AtomicU8::new(0),
            running: Mutex::new(None),
            cached_scripts: AtomicUsize::new(0),
            cached_script_bytes: AtomicUsize::new(0),
            eval_vm_bytes: AtomicUsize::new(0),
            libraries: AtomicUsize::new(0),
            functions: AtomicUsize::new(0),
            functions_vm_bytes: AtomicUsize::new(0),
        };
        scripts.refresh(&scripts.engine.lock());
        scripts
    }
}

impl Scripts {
    /// The engine. Taken by a gate holder for its script, or by a reader for a moment
    /// (SCRIPT LOAD, FUNCTION LIST...): never while waiting for the gate.
    pub fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock()
    }

    /// Runs `f` with this thread's own engine, in step with the shared one (its function
    /// libraries and SCRIPT FLUSH); `None` when this thread's engine is running a script
    /// already or could not be brought in step (the caller goes the gated way).
    pub fn with_local<R>(&self, f: impl FnOnce(&mut Engine) -> Option<R>) -> Option<R> {
        LOCAL.with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            if slot.as_ref().is_none_or(|local| local.owner != self.id) {
                let engine = Engine::new(self.limits, Arc::clone(&self.logger)).ok()?;
                *slot = Some(Local { owner: self.id, engine, functions_epoch: 0, flush_epoch: 0 });
            }
            let local = slot.as_mut()?;
            if local.functions_epoch != self.functions_epoch.load(Ordering::SeqCst) {
                let (epoch, payload) = self.libraries_dump.lock().clone();
                local.engine.function_restore(&payload, RestorePolicy::Flush).ok()?;
                local.functions_epoch = epoch;
            }
            let flushes = self.flush_epoch.load(Ordering::SeqCst);
            if local.flush_epoch != flushes {
                local.engine.script_flush().ok()?;
                local.flush_epoch = flushes;
            }
            f(&mut local.engine)
        })
    }

    /// A cached script's body from the shared engine, if it is free to say now (a gated
    /// script may hold it for long: the caller then goes the gated way).
    pub fn cached_body(&self, sha: &[u8]) -> Option<Vec<u8>> {
        self.engine.try_lock()?.script_body(sha).map(<[u8]>::to_vec)
    }

    /// The shared engine's function libraries changed (or may have): threads' engines
    /// take them again before their next script.
    pub fn functions_changed(&self, engine: &Engine) {
        let mut dump = self.libraries_dump.lock();
        let epoch = dump.0 + 1;
        *dump = (epoch, Arc::new(engine.function_dump()));
        self.functions_epoch.store(epoch, Ordering::SeqCst);
    }

    /// SCRIPT FLUSH emptied the shared cache: threads' engines empty theirs.
    pub fn scripts_flushed(&self) {
        self.flush_epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Loads the libraries the database keeps (at start, after recovery). A payload that
    /// does not load is reported and left in place, so nothing is lost.
    pub fn load_libraries(&self, db: &Database) {
        let Some(payload) = db.meta(FUNCTIONS_META) else { return };
        let mut engine = self.engine();
        match engine.function_restore(&payload, RestorePolicy::Flush) {
            Ok(()) => tracing::info!(libraries = engine.libraries().len(), "function libraries loaded"),
            Err(error) => tracing::error!(%error, "the function libraries the log keeps did not load"),
        }
        self.functions_changed(&engine);
        self.refresh(&engine);
    }

    /// Takes the engine's counts for INFO and FUNCTION STATS (after every change).
    pub fn refresh(&self, engine: &Engine) {
        let (scripts, script_bytes, eval_vm) = engine.script_stats();
        let (libraries, functions, functions_vm) = engine.function_counts();
        for (counter, value) in [
            (&self.cached_scripts, scripts),
            (&self.cached_script_bytes, script_bytes),
            (&self.eval_vm_bytes, eval_vm),
            (&self.libraries, libraries),
            (&self.functions, functions),
            (&self.functions_vm_bytes, functions_vm),
        ] {
            counter.store(value, Ordering::Relaxed);
        }
    }

    pub fn counts(&self) -> Counts {
        let load = |counter: &AtomicUsize| counter.load(Ordering::Relaxed);
        Counts {
            cached_scripts: load(&self.cached_scripts),
            cached_script_bytes: load(&self.cached_script_bytes),
            eval_vm_bytes: load(&self.eval_vm_bytes),
            libraries: load(&self.libraries),
            functions: load(&self.functions),
            functions_vm_bytes: load(&self.functions_vm_bytes),
        }
    }

    /// A script of `kind` starts (the caller holds the gate and the engine), run by
    /// `command` (FCALL's function is named by its second argument). Only a function is
    /// shown by FUNCTION STATS, so only a function's command is copied.
    pub fn begin(&self, kind: Kind, command: &[&[u8]]) {
        if kind == Kind::Function {
            let name = String::from_utf8_lossy(command[1]).into_owned();
            let command = command.iter().map(|arg| arg.to_vec()).collect();
            *self.running.lock() = Some(Running { name, command, started: Instant::now() });
        }
        self.run.store(if kind == Kind::Eval { EVAL } else { FUNCTION }, Ordering::SeqCst);
    }

    /// The script ended; the engine's counts are taken again (its state grew or shrank).
    pub fn end(&self, engine: &Engine) {
        self.stop();
        self.refresh(engine);
    }

    /// The running script ended (a keyed one that kept the server busy: its thread's
    /// engine is not the one INFO counts).
    pub fn stop(&self) {
        if self.run.swap(0, Ordering::SeqCst) & KIND == FUNCTION {
            *self.running.lock() = None;
        }
    }

    /// The running script is about to run a write command: false when a kill request
    /// came first (the script stops at its next tick), else it is unkillable from now on.
    pub fn note_write(&self) -> bool {
        let mut word = self.run.load(Ordering::SeqCst);
        loop {
            if word & KILL != 0 {
                return false;
            }
            match self.run.compare_exchange(word, word | WROTE, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
    }

    /// Whether the running script was asked to stop.
    pub fn kill_requested(&self) -> bool {
        self.run.load(Ordering::SeqCst) & KILL != 0
    }

    /// SCRIPT KILL (`Kind::Eval`) or FUNCTION KILL (`Kind::Function`): Redis' refusal
    /// text when there is nothing to kill, the script wrote, or it is of the other kind.
    pub fn kill(&self, by: Kind) -> Result<(), &'static str> {
        let mut word = self.run.load(Ordering::SeqCst);
        loop {
            match (word & KIND, by) {
                (0, _) => return Err(errors::NOT_BUSY),
                _ if word & WROTE != 0 => return Err(errors::UNKILLABLE),
                (FUNCTION, Kind::Eval) => return Err(errors::KILL_FUNCTION_WITH_SCRIPT_KILL),
                (EVAL, Kind::Function) => return Err(errors::KILL_EVAL_WITH_FUNCTION_KILL),
                _ => {}
            }
            match self.run.compare_exchange(word, word | KILL, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Ok(()),
                Err(now) => word = now,
            }
        }
    }

    /// The `-BUSY` text for the script holding the server now.
    pub fn busy_error(&self) -> &'static str {
        if self.run.load(Ordering::SeqCst) & KIND == FUNCTION { errors::BUSY_FUNCTION } else { errors::BUSY_EVAL }
    }

    /// FUNCTION STATS, from the counts and the running script: never the engine, which a
    /// running function holds. While an EVAL script runs, Redis' BUSY text instead.
    pub fn function_stats(&self) -> Result<Value, &'static str> {
        let running = self.running.lock().as_ref().map(|running| RunningScript {
            name: running.name.clone(),
            command: running.command.clone(),
            duration_ms: i64::try_from(running.started.elapsed().as_millis()).unwrap_or(i64::MAX),
        });
        let running = match self.run.load(Ordering::SeqCst) & KIND {
            EVAL => return Err(errors::BUSY_EVAL),
            FUNCTION => running,
            _ => None,
        };
        let counts = self.counts();
        Ok(hotset_script::function_stats_value(running.as_ref(), counts.libraries, counts.functions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_and_first_write_decide_between_themselves() {
        let scripts = Scripts::default();
        assert_eq!(scripts.kill(Kind::Eval), Err(errors::NOT_BUSY));
        scripts.begin(Kind::Function, &[b"fcall", b"f", b"0"]);
        assert_eq!(scripts.kill(Kind::Eval), Err(errors::KILL_FUNCTION_WITH_SCRIPT_KILL));
        assert_eq!(scripts.busy_error(), errors::BUSY_FUNCTION);
        assert!(scripts.note_write());
        assert_eq!(scripts.kill(Kind::Function), Err(errors::UNKILLABLE));
        scripts.end(&scripts.engine());
        scripts.begin(Kind::Eval, &[b"eval"]);
        assert_eq!(scripts.kill(Kind::Function), Err(errors::KILL_EVAL_WITH_FUNCTION_KILL));
        assert_eq!(scripts.kill(Kind::Eval), Ok(()));
        assert!(scripts.kill_requested());
        assert!(!scripts.note_write(), "killed before it wrote: it writes nothing more");
        scripts.end(&scripts.engine());
        assert!(!scripts.kill_requested());
    }
}
