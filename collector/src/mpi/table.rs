//! A map from MPI handles to a few words of payload that holds every entry
//! put in it, lock-free for the handles of one live request each.
//!
//! Used for requests (created on one thread, possibly completed on another
//! under `MPI_THREAD_MULTIPLE`) and communicators/windows/files. Lookups and
//! inserts never take a lock while entries fit the array: open addressing
//! with linear probing over atomic keys. An insert claims a free slot by CAS
//! (`EMPTY`/`TOMB` → `BUSY`), writes the payload and then publishes the key
//! with a release store; a lookup that sees the key with acquire sees the
//! payload. A handle has one owner at a time (a request is completed once),
//! so a slot is never rewritten while someone reads it. Probing is bounded by
//! [`MAX_PROBE`] so tombstones cannot make a miss expensive.
//!
//! An entry that finds no free slot near its home goes to the spill map
//! (under a lock, sized by what is in it): more live handles than the array
//! holds near their homes. The hot path pays one relaxed load for the spill
//! while it is empty.
//!
//! A handle that is already live when it is handed out again is one MPI uses
//! for many requests (Open MPI's `ompi_request_empty`, MPICH's built-in
//! completed request: thousands of pending inline-completed `MPI_Isend`s of
//! several threads can share one handle). Its further entries go to a queue
//! of their own, ordered by owner and age, under a lock; while any such
//! entry is pending, a take of a queued handle looks at the queues under
//! that lock, uncontended unless threads complete requests at the same
//! moment; a take of another handle skips it, told by a few atomic hints of
//! the queued handles (every take looks when more handles are queued than
//! there are hints). The queue keeps its memory when it empties. A window of such sends then costs a lookup per
//! completion, not a scan of every entry of the handle (quadratic in the
//! window: 64 inline-completed `MPI_Isend`s and a `MPI_Waitall` took ≈ 1,900
//! instructions per completion).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const EMPTY: usize = 0;
const BUSY: usize = 1;
const TOMB: usize = 2;
/// Longest probe sequence of an insert or a lookup.
const MAX_PROBE: usize = 128;
/// Shared handles whose queues are kept when they empty.
const SHARED_KEPT: usize = 8;
/// Handles with queued entries that a take can recognise without the lock.
const QUEUED_HINTS: usize = 4;
/// Payload words per entry.
pub const WORDS: usize = 6;

/// Where an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// A slot of the lock-free array.
    Slot(usize),
    /// An entry of the spill map (its key there).
    Spill(SpillKey),
    /// An entry of a shared handle's queue: (handle, payload word 0).
    Shared(usize, u64),
}

/// A spilled entry's key: (handle, payload word 0, insertion number), so that
/// the entries of one handle are ordered by owner and age (see [`HandleTable::take_oldest`]).
pub type SpillKey = (usize, u64, u64);

/// Bits of payload word 0 below the owner: `owner << OWNER_SHIFT | number`.
pub const OWNER_SHIFT: u32 = 40;

/// An entry's rank for thread `me`: its own entries first, then the oldest.
#[inline]
fn rank_for(me: u64, w0: u64) -> u64 {
    ((w0 >> OWNER_SHIFT != me) as u64) << 63 | (w0 & ((1 << OWNER_SHIFT) - 1))
}

pub struct HandleTable {
    keys: Box<[AtomicUsize]>,
    vals: Box<[[AtomicU64; WORDS]]>,
    mask: usize,
    /// Entries that found no slot.
    spill: Mutex<BTreeMap<SpillKey, [u64; WORDS]>>,
    /// Entries in `spill`: while 0, lookups do not look there.
    spilled: AtomicUsize,
    next_seq: AtomicU64,
    /// Handles with several live entries: per handle, the entries beyond the
    /// array's, ordered by payload word 0 (owner, then number).
    shared: Mutex<Vec<(usize, VecDeque<[u64; WORDS]>)>>,
    /// Entries in `shared`: while 0, lookups do not look there.
    shared_len: AtomicUsize,
    /// Handles whose queue holds entries (0: a free hint), written under the
    /// `shared` lock: a take of another handle skips the lock (the halo
    /// receives completed in the same `MPI_Waitall` as a window of inline
    /// sends).
    queued: [AtomicUsize; QUEUED_HINTS],
    /// Handles whose queue holds entries but found no free hint: while not
    /// 0, every take looks at the queues.
    unhinted: AtomicUsize,
}

impl HandleTable {
    /// A table of `1 << bits` slots (and a spill map for what does not fit).
    pub fn new(bits: u32) -> HandleTable {
        let n = 1usize << bits;
        HandleTable {
            keys: (0..n).map(|_| AtomicUsize::new(EMPTY)).collect(),
            vals: (0..n)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
            mask: n - 1,
            spill: Mutex::new(BTreeMap::new()),
            spilled: AtomicUsize::new(0),
            next_seq: AtomicU64::new(0),
            shared: Mutex::new(Vec::new()),
            shared_len: AtomicUsize::new(0),
            queued: std::array::from_fn(|_| AtomicUsize::new(0)),
            unhinted: AtomicUsize::new(0),
        }
    }

    #[inline]
    fn home(&self, key: usize) -> usize {
        // Fibonacci hashing; Open MPI's handles are pointers, so drop the
        // alignment bits first (MPICH's are ints whose low bits are an index).
        #[cfg(not(hyscope_mpich))]
        let key = key >> 3;
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) & self.mask
    }

    #[inline]
    fn probe(&self, key: usize) -> impl Iterator<Item = usize> + use<'_> {
        let h = self.home(key);
        (0..MAX_PROBE.min(self.mask + 1)).map(move |i| (h + i) & self.mask)
    }

    fn spill(&self) -> std::sync::MutexGuard<'_, BTreeMap<SpillKey, [u64; WORDS]>> {
        self.spill.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[inline]
    fn has_spill(&self) -> bool {
        self.spilled.load(Ordering::Acquire) != 0
    }

    /// Insert `key`, replacing its entries.
    pub fn insert(&self, key: usize, val: [u64; WORDS]) {
        self.remove_key(key);
        self.insert_dup(key, val);
    }

    /// Insert `key` as one more entry even if it is already present (MPI may hand
    /// out one handle for several requests: Open MPI's `ompi_request_empty`).
    pub fn insert_dup(&self, key: usize, val: [u64; WORDS]) {
        if key <= TOMB {
            return;
        }
        for s in self.probe(key) {
            let k = self.keys[s].load(Ordering::Acquire);
            if k == key {
                self.insert_shared(key, val);
                return;
            }
            if (k == EMPTY || k == TOMB)
                && self.keys[s]
                    .compare_exchange(k, BUSY, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                for (w, v) in self.vals[s].iter().zip(val) {
                    w.store(v, Ordering::Relaxed);
                }
                self.keys[s].store(key, Ordering::Release);
                return;
            }
        }
        self.insert_spilled(key, val);
    }

    #[cold]
    #[inline(never)]
    fn insert_spilled(&self, key: usize, val: [u64; WORDS]) {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let mut spill = self.spill();
        spill.insert((key, val[0], seq), val);
        self.spilled.store(spill.len(), Ordering::Release);
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Vec<(usize, VecDeque<[u64; WORDS]>)>> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[inline]
    fn has_shared(&self) -> bool {
        self.shared_len.load(Ordering::Acquire) != 0
    }

    /// Whether `key` may have queued entries: some do, and it is hinted or
    /// some handle is queued without a hint.
    #[inline]
    fn may_be_queued(&self, key: usize) -> bool {
        self.has_shared()
            && (self.unhinted.load(Ordering::Acquire) != 0
                || self.queued.iter().any(|h| h.load(Ordering::Acquire) == key))
    }

    /// `key`'s queue got its first entry (under the `shared` lock).
    fn hint_queued(&self, key: usize) {
        match self.queued.iter().find(|h| h.load(Ordering::Relaxed) == 0) {
            Some(h) => h.store(key, Ordering::Release),
            None => {
                let n = self.unhinted.load(Ordering::Relaxed);
                self.unhinted.store(n + 1, Ordering::Release);
            }
        }
    }

    /// `key`'s queue is empty again (under the `shared` lock).
    fn unhint_queued(&self, key: usize) {
        match self
            .queued
            .iter()
            .find(|h| h.load(Ordering::Relaxed) == key)
        {
            Some(h) => h.store(0, Ordering::Release),
            None => {
                let n = self.unhinted.load(Ordering::Relaxed);
                self.unhinted.store(n - 1, Ordering::Release);
            }
        }
    }

    /// One more entry of a handle that is live already, in its queue's order.
    #[cold]
    #[inline(never)]
    fn insert_shared(&self, key: usize, val: [u64; WORDS]) {
        let mut shared = self.shared();
        let at = match shared.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                shared.push((key, VecDeque::new()));
                shared.len() - 1
            }
        };
        let q = &mut shared[at].1;
        if q.is_empty() {
            self.hint_queued(key);
        }
        // In order: an append, but for an entry put back.
        if q.back().is_none_or(|b| b[0] <= val[0]) {
            q.push_back(val);
        } else {
            let i = q.partition_point(|e| e[0] <= val[0]);
            q.insert(i, val);
        }
        // Changed only under the lock: no read-modify-write needed.
        let n = self.shared_len.load(Ordering::Relaxed);
        self.shared_len.store(n + 1, Ordering::Release);
    }

    /// One entry of `shared[at]` is gone: keep the count, and drop the
    /// handle's queue once empty unless few handles are queued (a window's
    /// queue empties at every `MPI_Waitall`: its memory is kept for the next).
    fn shared_removed(&self, shared: &mut Vec<(usize, VecDeque<[u64; WORDS]>)>, at: usize) {
        if shared[at].1.is_empty() {
            self.unhint_queued(shared[at].0);
            if shared.len() > SHARED_KEPT {
                shared.swap_remove(at);
            }
        }
        let n = self.shared_len.load(Ordering::Relaxed);
        self.shared_len.store(n - 1, Ordering::Release);
    }

    /// The best entry of `key`'s queue for thread `me` ([`rank_for`]): its
    /// own oldest (a binary search), else the oldest of each owner's.
    fn best_shared(q: &VecDeque<[u64; WORDS]>, me: u64) -> Option<(u64, usize)> {
        // The common case: one thread's window, taken by that thread.
        if let Some(e) = q.front()
            && e[0] >> OWNER_SHIFT == me
        {
            return Some((rank_for(me, e[0]), 0));
        }
        let own = q.partition_point(|e| e[0] >> OWNER_SHIFT < me);
        if let Some(e) = q.get(own)
            && e[0] >> OWNER_SHIFT == me
        {
            return Some((rank_for(me, e[0]), own));
        }
        let mut best: Option<(u64, usize)> = None;
        let mut i = 0;
        while let Some(e) = q.get(i) {
            let r = rank_for(me, e[0]);
            if best.is_none_or(|b| r < b.0) {
                best = Some((r, i));
            }
            // The next owner's first entry.
            let owner = e[0] >> OWNER_SHIFT;
            i = q.partition_point(|e| e[0] >> OWNER_SHIFT <= owner);
        }
        best
    }

    #[inline]
    fn load(&self, s: usize) -> [u64; WORDS] {
        std::array::from_fn(|w| self.vals[s][w].load(Ordering::Relaxed))
    }

    /// An entry of `key` and its payload.
    #[inline]
    pub fn get(&self, key: usize) -> Option<(Loc, [u64; WORDS])> {
        if key <= TOMB {
            return None;
        }
        for s in self.probe(key) {
            let k = self.keys[s].load(Ordering::Acquire);
            if k == key {
                return Some((Loc::Slot(s), self.load(s)));
            }
            if k == EMPTY {
                break;
            }
        }
        if self.has_spill()
            && let Some((k, v)) = self
                .spill()
                .range((key, 0, 0)..=(key, u64::MAX, u64::MAX))
                .next()
        {
            return Some((Loc::Spill(*k), *v));
        }
        if !self.may_be_queued(key) {
            return None;
        }
        let shared = self.shared();
        let (_, q) = shared.iter().find(|(k, _)| *k == key)?;
        q.front().map(|v| (Loc::Shared(key, v[0]), *v))
    }

    /// The entry of `key` that thread `me` completes when MPI hands it that
    /// handle, taken out: its own oldest, else the oldest of any thread (word
    /// 0 of a payload is `owner << OWNER_SHIFT | number`); the next one if
    /// another thread takes that one first.
    #[inline]
    pub fn take_oldest(&self, key: usize, me: u64) -> Option<[u64; WORDS]> {
        loop {
            let found = self.oldest(key, me);
            if self.may_be_queued(key)
                && let Some(v) = self.take_shared_if_better(key, me, found.as_ref())
            {
                return Some(v);
            }
            let (loc, v) = found?;
            if self.remove(loc, key) {
                return Some(v);
            }
        }
    }

    /// Take `key`'s best queued entry for `me` if it ranks before `other`'s
    /// payload (the best found in the array and the spill map).
    #[cold]
    #[inline(never)]
    fn take_shared_if_better(
        &self,
        key: usize,
        me: u64,
        other: Option<&(Loc, [u64; WORDS])>,
    ) -> Option<[u64; WORDS]> {
        let mut shared = self.shared();
        let at = shared.iter().position(|(k, _)| *k == key)?;
        let q = &mut shared[at].1;
        let (r, i) = Self::best_shared(q, me)?;
        if other.is_some_and(|(_, v)| rank_for(me, v[0]) < r) {
            return None;
        }
        let v = q.remove(i)?;
        self.shared_removed(&mut shared, at);
        Some(v)
    }

    #[inline]
    fn oldest(&self, key: usize, me: u64) -> Option<(Loc, [u64; WORDS])> {
        if key <= TOMB {
            return None;
        }
        let mut best: Option<(u64, Loc, [u64; WORDS])> = None;
        for s in self.probe(key) {
            let k = self.keys[s].load(Ordering::Acquire);
            if k == key {
                let v = self.load(s);
                let r = rank_for(me, v[0]);
                if best.as_ref().is_none_or(|b| r < b.0) {
                    best = Some((r, Loc::Slot(s), v));
                }
            }
            if k == EMPTY {
                break;
            }
        }
        if self.has_spill()
            && let Some(e) = self.oldest_spilled(key, me)
            && best.as_ref().is_none_or(|b| e.0 < b.0)
        {
            best = Some(e);
        }
        best.map(|(_, loc, v)| (loc, v))
    }

    /// [`Self::oldest`] among the spilled entries, O(log n) per owner: the
    /// map orders each owner's entries by age.
    #[cold]
    #[inline(never)]
    fn oldest_spilled(&self, key: usize, me: u64) -> Option<(u64, Loc, [u64; WORDS])> {
        let spill = self.spill();
        let max_owner = u64::MAX >> OWNER_SHIFT;
        let from = |owner: u64| (key, owner << OWNER_SHIFT, 0);
        let first = |owner: u64| {
            spill
                .range(from(owner)..=(key, u64::MAX, u64::MAX))
                .next()
                .map(|(k, v)| (rank_for(me, k.1), *k, *v))
        };
        // This thread's own oldest, if it has one.
        if let Some((r, k, v)) = first(me)
            && k.1 >> OWNER_SHIFT == me
        {
            return Some((r, Loc::Spill(k), v));
        }
        // Else the first entry of each owner.
        let mut best: Option<(u64, SpillKey, [u64; WORDS])> = None;
        let mut owner = 0;
        while let Some((r, k, v)) = first(owner) {
            if best.as_ref().is_none_or(|b| r < b.0) {
                best = Some((r, k, v));
            }
            owner = (k.1 >> OWNER_SHIFT) + 1;
            if owner > max_owner {
                break;
            }
        }
        best.map(|(r, k, v)| (r, Loc::Spill(k), v))
    }

    /// Change one payload word (not word 0) of the entry at `loc` (owner only).
    #[inline]
    pub fn set_word(&self, loc: Loc, word: usize, v: u64) {
        match loc {
            Loc::Slot(s) => self.vals[s][word].store(v, Ordering::Relaxed),
            Loc::Spill(k) => {
                if let Some(e) = self.spill().get_mut(&k) {
                    e[word] = v;
                }
            }
            Loc::Shared(key, w0) => {
                let mut shared = self.shared();
                if let Some((_, q)) = shared.iter_mut().find(|(k, _)| *k == key)
                    && let Some(e) = q.iter_mut().find(|e| e[0] == w0)
                {
                    e[word] = v;
                }
            }
        }
    }

    /// Remove the entry at `loc` if it still holds `key`; whether it did.
    #[inline]
    pub fn remove(&self, loc: Loc, key: usize) -> bool {
        match loc {
            Loc::Slot(s) => self.keys[s]
                .compare_exchange(key, TOMB, Ordering::Release, Ordering::Relaxed)
                .is_ok(),
            Loc::Spill(k) => {
                let mut spill = self.spill();
                let removed = k.0 == key && spill.remove(&k).is_some();
                self.spilled.store(spill.len(), Ordering::Release);
                removed
            }
            Loc::Shared(k, w0) => {
                let mut shared = self.shared();
                let Some(at) = shared.iter().position(|(h, _)| *h == k && k == key) else {
                    return false;
                };
                let q = &mut shared[at].1;
                let Some(i) = q.iter().position(|e| e[0] == w0) else {
                    return false;
                };
                q.remove(i);
                self.shared_removed(&mut shared, at);
                true
            }
        }
    }

    /// Remove every entry of `key`.
    pub fn remove_key(&self, key: usize) {
        while let Some((loc, _)) = self.get(key) {
            self.remove(loc, key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove_reuse() {
        let t = HandleTable::new(4);
        for k in 3..19usize {
            t.insert(k * 8, [k as u64; WORDS]);
        }
        // The array is full: a 17th key goes to the spill map, and is found there.
        t.insert(1000 * 8, [10; WORDS]);
        assert!(matches!(t.get(1000 * 8), Some((Loc::Spill(..), v)) if v[0] == 10));
        assert_eq!(t.get(5 * 8).unwrap().1[0], 5);
        t.remove_key(5 * 8);
        assert!(t.get(5 * 8).is_none());
        t.insert(2000 * 8, [7; WORDS]);
        assert!(matches!(t.get(2000 * 8), Some((Loc::Slot(_), v)) if v[3] == 7));
        // Replacing keeps one entry, wherever the old one was.
        t.insert(1000 * 8, [9; WORDS]);
        assert_eq!(t.get(1000 * 8).unwrap().1[0], 9);
        t.remove_key(1000 * 8);
        assert!(t.get(1000 * 8).is_none());
        // Duplicates: the best by score, then the other.
        let t = HandleTable::new(6);
        t.insert_dup(64, [5; WORDS]);
        t.insert_dup(64, [3; WORDS]);
        assert_eq!(t.take_oldest(64, 0).unwrap()[0], 3);
        assert_eq!(t.take_oldest(64, 0).unwrap()[0], 5);
    }

    #[test]
    fn a_shared_handle_queues_its_entries_by_owner_and_age() {
        let t = HandleTable::new(8);
        let e = |owner: u64, n: u64| [owner << OWNER_SHIFT | n; WORDS];
        // One entry in the array, the rest of the handle queued (not spilled,
        // not in further array slots).
        for n in 1..=4 {
            t.insert_dup(64, e(1, n));
        }
        t.insert_dup(64, e(2, 1));
        assert_eq!(t.shared_len.load(Ordering::Relaxed), 4);
        assert_eq!(t.spilled.load(Ordering::Relaxed), 0);
        // Owner 1 takes its own, oldest first, across the array and the queue.
        assert_eq!(t.take_oldest(64, 1), Some(e(1, 1)));
        assert_eq!(t.take_oldest(64, 1), Some(e(1, 2)));
        // One that did not complete goes back ahead of the younger ones.
        t.insert_dup(64, e(1, 2));
        assert_eq!(t.take_oldest(64, 1), Some(e(1, 2)));
        // A thread with none of its own takes the oldest of any owner.
        assert_eq!(t.take_oldest(64, 3), Some(e(2, 1)));
        assert_eq!(t.take_oldest(64, 3), Some(e(1, 3)));
        // Owner 2 has none left: the oldest of owner 1.
        assert_eq!(t.take_oldest(64, 2), Some(e(1, 4)));
        assert_eq!(t.take_oldest(64, 1), None);
        assert_eq!(t.shared_len.load(Ordering::Relaxed), 0);
        // A persistent request's entry is found and changed in the queue too.
        t.insert_dup(64, e(1, 5));
        t.insert_dup(64, e(1, 6));
        assert_eq!(t.take_oldest(64, 1), Some(e(1, 5)));
        let (loc, v) = t.get(64).unwrap();
        assert_eq!(v, e(1, 6));
        assert!(matches!(loc, Loc::Shared(64, _)), "{loc:?}");
        t.set_word(loc, 3, 99);
        assert_eq!(t.take_oldest(64, 1).unwrap()[3], 99);
        // Every entry of the handle removed, from the array and the queue.
        t.insert_dup(64, e(1, 8));
        t.insert_dup(64, e(1, 9));
        assert_eq!(t.shared_len.load(Ordering::Relaxed), 1);
        t.remove_key(64);
        assert_eq!(t.get(64), None);
        assert_eq!(t.shared_len.load(Ordering::Relaxed), 0);
        assert!(t.queued.iter().all(|h| h.load(Ordering::Relaxed) == 0));
    }

    /// More queued handles than hints: each is still found (every take looks
    /// while one is unhinted), and the hints and the count of unhinted
    /// handles go back to none as the queues empty, whichever order.
    #[test]
    fn queued_handles_beyond_the_hints_are_found() {
        let t = HandleTable::new(8);
        let e = |owner: u64, n: u64| [owner << OWNER_SHIFT | n; WORDS];
        let handles: Vec<usize> = (1..=QUEUED_HINTS + 2).map(|h| h * 64).collect();
        for &h in &handles {
            for n in 1..=3 {
                t.insert_dup(h, e(1, n));
            }
        }
        assert_eq!(t.unhinted.load(Ordering::Relaxed), 2);
        // A handle with no queue: nothing queued for it, whatever the hints.
        t.insert_dup(7 * 1024, e(1, 1));
        assert_eq!(t.take_oldest(7 * 1024, 1), Some(e(1, 1)));
        assert_eq!(t.take_oldest(7 * 1024, 1), None);
        for &h in handles.iter().rev() {
            for n in 1..=3 {
                assert_eq!(t.take_oldest(h, 1), Some(e(1, n)), "handle {h}");
            }
            assert_eq!(t.take_oldest(h, 1), None);
        }
        assert_eq!(t.unhinted.load(Ordering::Relaxed), 0);
        assert!(t.queued.iter().all(|h| h.load(Ordering::Relaxed) == 0));
        assert_eq!(t.shared_len.load(Ordering::Relaxed), 0);
        // A hinted handle's queue, and an unhinted one's that takes its place.
        t.insert_dup(64, e(1, 1));
        t.insert_dup(64, e(1, 2));
        assert!(t.may_be_queued(64) && !t.may_be_queued(128));
        assert_eq!(t.take_oldest(64, 1), Some(e(1, 1)));
        assert_eq!(t.take_oldest(64, 1), Some(e(1, 2)));
        assert!(!t.may_be_queued(64));
    }

    #[test]
    fn thousands_of_entries_of_one_handle() {
        let t = HandleTable::new(6);
        for i in 0..5000u64 {
            t.insert_dup(64, [i; WORDS]);
        }
        // Best first, across the array and the spill map.
        for i in 0..5000u64 {
            assert_eq!(t.take_oldest(64, 0), Some([i; WORDS]));
        }
        assert_eq!(t.take_oldest(64, 0), None);
        assert_eq!(t.spilled.load(Ordering::Relaxed), 0);
        let (s, v) = {
            t.insert_dup(64, [1; WORDS]);
            t.get(64).unwrap()
        };
        t.set_word(s, 2, 42);
        assert_eq!(t.get(64).unwrap().1[2], 42);
        assert_eq!(v[0], 1);
    }

    #[test]
    fn concurrent_owners() {
        let t = std::sync::Arc::new(HandleTable::new(10));
        let hs: Vec<_> = (0..4)
            .map(|th| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000usize {
                        let key = (th * 1_000_000 + i % 50 + 3) * 16;
                        t.insert(key, [i as u64; WORDS]);
                        let (s, v) = t.get(key).unwrap();
                        assert_eq!(v[5], i as u64);
                        t.remove(s, key);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }

    #[test]
    fn concurrent_shared_handle_every_entry_taken_once() {
        // Four threads put 3000 entries each under one handle (more than the
        // array holds) and take them back: each entry comes out exactly once.
        let t = std::sync::Arc::new(HandleTable::new(8));
        let hs: Vec<_> = (0..4u64)
            .map(|th| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for i in 0..3000u64 {
                        t.insert_dup(64, [th << 40 | i; WORDS]);
                    }
                    (0..3000)
                        .map(|_| t.take_oldest(64, th).unwrap()[0])
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        let mut all: Vec<u64> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort();
        let want: Vec<u64> = (0..4u64)
            .flat_map(|th| (0..3000).map(move |i| th << 40 | i))
            .collect();
        assert_eq!(all, want);
        assert!(t.get(64).is_none());
    }
}
