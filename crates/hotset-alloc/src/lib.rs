//! The server's allocator: mimalloc, counting the bytes it has handed out and not taken
//! back, so `maxmemory` is judged by what the process really holds (Redis'
//! `used_memory`), not by an estimate.
//!
//! Owns: [`CountingMimalloc`] (the `#[global_allocator]` of the `hotset` binary) and
//! [`allocated`], the count's reading. Never: allocate, lock or block inside the
//! allocator (it is the allocator: any of these would recurse or deadlock), or share a
//! counter between threads that write it often (every allocation would then bounce one
//! cache line between cores).
//!
//! How it counts: each thread owns one counter slot, found through a thread-local index
//! set on its first allocation. Only its owner writes a slot, with a plain load and
//! store (no locked instruction), so counting costs an allocation two ordinary memory
//! operations. A block freed by another thread than the one that allocated it is
//! subtracted in the freeing thread's slot; slots are signed and only their sum means
//! anything. A slot outlives its thread, so what an exited thread allocated stays
//! counted. Threads beyond [`SLOTS`] (a long-lived server starts a few dozen; a pool
//! that keeps replacing its threads could exceed it) share one last slot, updated with
//! an atomic add. The sum read while other threads allocate is a moment's snapshot,
//! exact once they pause.
//!
//! The count is of usable sizes (the size class a block was rounded up to), as Redis
//! counts jemalloc's, so it includes the allocator's rounding but not pages mimalloc keeps
//! after their blocks were freed (RSS shows those). For blocks up to 512 KiB at the usual
//! alignment the class is computed from the size, as mimalloc computes its bins (a test
//! checks the two agree): asking mimalloc (`mi_usable_size`, a call that reads the block's
//! page) doubled what counting costs an allocation. Larger or more aligned blocks ask.
//! Allocation and free compute the same figure from the same layout, so the count never
//! drifts.
#![deny(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use libmimalloc_sys as mi;

/// Counter slots owned by one thread each; the last is shared by every later thread.
pub const SLOTS: usize = 256;
/// The shared slot's index.
const SHARED: usize = SLOTS - 1;
/// A thread that has not taken a slot yet.
const UNSET: usize = usize::MAX;

/// One counter on a cache line of its own, so two threads' counting never contends.
#[repr(align(64))]
struct Slot(AtomicIsize);

static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicIsize::new(0)) }; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot. `const` and without a destructor, so reading it never
    /// allocates or registers anything, and works while the thread is exiting.
    static MINE: Cell<usize> = const { Cell::new(UNSET) };
}

/// Adds `delta` bytes to this thread's slot.
#[inline]
fn count(delta: isize) {
    let mine = MINE
        .try_with(|mine| {
            let mut slot = mine.get();
            if slot == UNSET {
                slot = NEXT.fetch_add(1, Ordering::Relaxed).min(SHARED);
                mine.set(slot);
            }
            slot
        })
        .unwrap_or(SHARED);
    let counter = &COUNTS[mine].0;
    if mine == SHARED {
        counter.fetch_add(delta, Ordering::Relaxed);
    } else {
        // Only this thread writes its slot: a load and a store cannot lose an update.
        counter.store(counter.load(Ordering::Relaxed).wrapping_add(delta), Ordering::Relaxed);
    }
}

/// The bytes held by live blocks of the counting allocator, or `None` when it is not the
/// process's allocator (nothing was ever counted: an embedding such as the Python
/// package keeps its host's allocator).
pub fn allocated() -> Option<usize> {
    // Only the slots handed out so far (and the shared last one): a server has a few dozen
    // threads, and each slot read is a cache line another core writes.
    let taken = NEXT.load(Ordering::Relaxed).min(SHARED);
    let owned: isize = COUNTS[..taken].iter().map(|slot| slot.0.load(Ordering::Relaxed)).sum();
    let sum = owned + COUNTS[SHARED].0.load(Ordering::Relaxed);
    (sum > 0).then_some(sum as usize)
}

/// mimalloc with a count of the usable bytes of its live blocks (see the crate docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingMimalloc;

/// Blocks up to this size (at most `MAX_ALIGN`-aligned) have their class computed.
const COMPUTED_MAX: usize = 512 << 10;
/// mimalloc's natural alignment: `mi_malloc_aligned` below it is `mi_malloc`.
const MAX_ALIGN: usize = 16;

/// The size class mimalloc serves `size` bytes from (`size` up to `COMPUTED_MAX`): whole
/// words up to 8 bytes, pairs of words up to 64, then four classes per doubling (mimalloc's
/// `_mi_bin` with its 16-byte alignment).
#[inline]
fn class_size(size: usize) -> usize {
    let words = size.div_ceil(8).max(1);
    if words <= 8 {
        return if words == 1 { 8 } else { words.next_multiple_of(2) * 8 };
    }
    let w = words - 1;
    let top = (usize::BITS - 1 - w.leading_zeros()) as usize;
    let quarter = (w >> (top - 2)) & 3;
    ((5 + quarter) << (top - 2)) * 8
}

/// What a block of `layout`'s size at `ptr` counts for (0 for null).
#[inline]
fn block_bytes(size: usize, align: usize, ptr: *mut u8) -> isize {
    if ptr.is_null() {
        return 0;
    }
    if size <= COMPUTED_MAX && align <= MAX_ALIGN {
        return class_size(size) as isize;
    }
    usable(ptr)
}

/// The usable size of a live block mimalloc returned.
#[inline]
#[allow(unsafe_code)]
fn usable(ptr: *mut u8) -> isize {
    // SAFETY: `ptr` is a live block returned by mimalloc (callers pass only those).
    let size = unsafe { mi::mi_usable_size(ptr as *const c_void) };
    size as isize
}

// SAFETY: every method forwards to mimalloc's aligned API, which meets `GlobalAlloc`'s
// contract (a block of at least `layout.size()` bytes aligned to `layout.align()`, or
// null); the counting around the calls neither allocates nor touches the blocks.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingMimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's aligned allocation for this layout (see the impl's comment).
        let ptr = unsafe { mi::mi_malloc_aligned(layout.size(), layout.align()) } as *mut u8;
        count(block_bytes(layout.size(), layout.align(), ptr));
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`, zeroed.
        let ptr = unsafe { mi::mi_zalloc_aligned(layout.size(), layout.align()) } as *mut u8;
        count(block_bytes(layout.size(), layout.align(), ptr));
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-block_bytes(layout.size(), layout.align(), ptr));
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract) and is freed once.
        unsafe { mi::mi_free(ptr as *mut c_void) };
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let before = block_bytes(layout.size(), layout.align(), ptr);
        // SAFETY: `ptr` is live and from this allocator; mimalloc keeps the alignment.
        let moved = unsafe { mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) } as *mut u8;
        if !moved.is_null() {
            // On failure the old block stays, and so does its count.
            count(block_bytes(new_size, layout.align(), moved) - before);
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The count is global: the tests take turns.
    static TURN: Mutex<()> = Mutex::new(());

    // The test binary's allocator is the system's; these call the counting one directly.
    #[test]
    #[allow(unsafe_code)]
    fn counts_what_is_live_across_threads() {
        let _turn = TURN.lock().unwrap();
        let before = allocated().unwrap_or(0) as isize;
        let layout = Layout::from_size_align(1000, 8).unwrap();
        // SAFETY: a valid layout; the block is freed below with the same allocator.
        let block = unsafe { CountingMimalloc.alloc(layout) };
        assert!(!block.is_null());
        let grown = allocated().unwrap() as isize - before;
        assert!((1000..=1100).contains(&grown), "counted {grown} for a 1000-byte block");
        // Freed on another thread: that thread's slot goes negative, the sum is right.
        let address = block as usize;
        std::thread::spawn(move || {
            // SAFETY: the block is live and freed exactly once, here.
            unsafe { CountingMimalloc.dealloc(address as *mut u8, layout) }
        })
        .join()
        .unwrap();
        assert_eq!(allocated().unwrap_or(0) as isize, before);
    }

    #[test]
    #[allow(unsafe_code)]
    fn computed_classes_are_mimallocs() {
        for size in (1..=COMPUTED_MAX).step_by(3).chain([COMPUTED_MAX]) {
            // SAFETY: a plain allocation, freed at once.
            let usable = unsafe {
                let block = mi::mi_malloc(size);
                let usable = mi::mi_usable_size(block);
                mi::mi_free(block);
                usable
            };
            assert_eq!(class_size(size), usable, "{size} bytes");
        }
    }

    #[test]
    #[allow(unsafe_code)]
    fn realloc_counts_the_difference() {
        let _turn = TURN.lock().unwrap();
        let layout = Layout::from_size_align(64, 8).unwrap();
        let before = allocated().unwrap_or(0) as isize;
        // SAFETY: valid layouts; the block is freed with its final size.
        unsafe {
            let block = CountingMimalloc.alloc(layout);
            let block = CountingMimalloc.realloc(block, layout, 100_000);
            let grown = allocated().unwrap() as isize - before;
            // Large blocks round up to mimalloc's size classes (an eighth apart at most).
            assert!((100_000..=131_072).contains(&grown), "counted {grown} after growing to 100000");
            CountingMimalloc.dealloc(block, Layout::from_size_align(100_000, 8).unwrap());
        }
        assert_eq!(allocated().unwrap_or(0) as isize, before);
    }
}
