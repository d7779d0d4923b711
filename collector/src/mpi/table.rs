//! A fixed-size, lock-free map from MPI handles to a few words of payload.
//!
//! Used for requests (created on one thread, possibly completed on another
//! under `MPI_THREAD_MULTIPLE`) and communicators/windows/files. Lookups and
//! inserts never take a lock: open addressing with linear probing over atomic
//! keys. An insert claims a free slot by CAS (`EMPTY`/`TOMB` → `BUSY`), writes
//! the payload and then publishes the key with a release store; a lookup that
//! sees the key with acquire sees the payload. A handle has one owner at a time
//! (a request is completed once), so a slot is never rewritten while someone
//! reads it. Probing is bounded by [`MAX_PROBE`] so tombstones cannot make a
//! miss expensive; a full neighbourhood makes the insert fail (the caller then
//! loses that link and warns once).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const EMPTY: usize = 0;
const BUSY: usize = 1;
const TOMB: usize = 2;
/// Longest probe sequence of an insert or a lookup.
const MAX_PROBE: usize = 128;
/// Payload words per entry.
pub const WORDS: usize = 6;

pub struct HandleTable {
    keys: Box<[AtomicUsize]>,
    vals: Box<[[AtomicU64; WORDS]]>,
    mask: usize,
}

impl HandleTable {
    /// A table of `1 << bits` entries.
    pub fn new(bits: u32) -> HandleTable {
        let n = 1usize << bits;
        HandleTable {
            keys: (0..n).map(|_| AtomicUsize::new(EMPTY)).collect(),
            vals: (0..n)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
            mask: n - 1,
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

    /// Insert or replace `key`. False when no slot is free near its home.
    pub fn insert(&self, key: usize, val: [u64; WORDS]) -> bool {
        self.insert_with(key, val, true)
    }

    /// Insert `key` as one more entry even if it is already present (MPI may hand
    /// out one handle for several requests: Open MPI's `ompi_request_empty`).
    pub fn insert_dup(&self, key: usize, val: [u64; WORDS]) -> bool {
        self.insert_with(key, val, false)
    }

    fn insert_with(&self, key: usize, val: [u64; WORDS], replace: bool) -> bool {
        if key <= TOMB {
            return false;
        }
        let h = self.home(key);
        for i in 0..MAX_PROBE.min(self.mask + 1) {
            let s = (h + i) & self.mask;
            let k = self.keys[s].load(Ordering::Acquire);
            if (k == EMPTY || k == TOMB || (replace && k == key))
                && self.keys[s]
                    .compare_exchange(k, BUSY, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                for (w, v) in self.vals[s].iter().zip(val) {
                    w.store(v, Ordering::Relaxed);
                }
                self.keys[s].store(key, Ordering::Release);
                return true;
            }
        }
        false
    }

    /// The slot and payload of `key`.
    #[inline]
    pub fn get(&self, key: usize) -> Option<(usize, [u64; WORDS])> {
        if key <= TOMB {
            return None;
        }
        let h = self.home(key);
        for i in 0..MAX_PROBE.min(self.mask + 1) {
            let s = (h + i) & self.mask;
            let k = self.keys[s].load(Ordering::Acquire);
            if k == key {
                let v = std::array::from_fn(|w| self.vals[s][w].load(Ordering::Relaxed));
                return Some((s, v));
            }
            if k == EMPTY {
                return None;
            }
        }
        None
    }

    /// Among the entries of `key`, the one with the smallest `score(payload)`.
    #[inline]
    pub fn get_best(
        &self,
        key: usize,
        score: impl Fn(&[u64; WORDS]) -> u64,
    ) -> Option<(usize, [u64; WORDS])> {
        if key <= TOMB {
            return None;
        }
        let h = self.home(key);
        let mut best: Option<(u64, usize, [u64; WORDS])> = None;
        for i in 0..MAX_PROBE.min(self.mask + 1) {
            let s = (h + i) & self.mask;
            let k = self.keys[s].load(Ordering::Acquire);
            if k == key {
                let v: [u64; WORDS] =
                    std::array::from_fn(|w| self.vals[s][w].load(Ordering::Relaxed));
                let sc = score(&v);
                if best.as_ref().is_none_or(|b| sc < b.0) {
                    best = Some((sc, s, v));
                }
            }
            if k == EMPTY {
                break;
            }
        }
        best.map(|(_, s, v)| (s, v))
    }

    /// Change one payload word of the entry in `slot` (owner only).
    #[inline]
    pub fn set_word(&self, slot: usize, word: usize, v: u64) {
        self.vals[slot][word].store(v, Ordering::Relaxed);
    }

    /// Remove the entry in `slot` if it still holds `key`.
    #[inline]
    pub fn remove(&self, slot: usize, key: usize) {
        let _ = self.keys[slot].compare_exchange(key, TOMB, Ordering::Release, Ordering::Relaxed);
    }

    /// Remove `key` wherever it is.
    pub fn remove_key(&self, key: usize) {
        if let Some((s, _)) = self.get(key) {
            self.remove(s, key);
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
            assert!(t.insert(k * 8, [k as u64; WORDS]));
        }
        // Full: a 17th key has no slot.
        assert!(!t.insert(1000 * 8, [0; WORDS]));
        assert_eq!(t.get(5 * 8).unwrap().1[0], 5);
        t.remove_key(5 * 8);
        assert!(t.get(5 * 8).is_none());
        assert!(t.insert(1000 * 8, [7; WORDS]));
        assert_eq!(t.get(1000 * 8).unwrap().1[3], 7);
        // Replacing keeps one entry.
        assert!(t.insert(1000 * 8, [9; WORDS]));
        assert_eq!(t.get(1000 * 8).unwrap().1[0], 9);
        // Duplicates: the best by score, then the other.
        let t = HandleTable::new(6);
        assert!(t.insert_dup(64, [5; WORDS]));
        assert!(t.insert_dup(64, [3; WORDS]));
        let (s, v) = t.get_best(64, |v| v[0]).unwrap();
        assert_eq!(v[0], 3);
        t.remove(s, 64);
        assert_eq!(t.get_best(64, |v| v[0]).unwrap().1[0], 5);
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
                        assert!(t.insert(key, [i as u64; WORDS]));
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
}
