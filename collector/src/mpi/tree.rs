//! The binomial tree over the world ranks along which the collector's
//! job-level work runs (clock offsets, `job.rs`): rank 0 is the root, the
//! parent of rank r > 0 is r with its lowest set bit cleared, and the children
//! of r are r + 2^k for every 2^k below r's lowest set bit (every 2^k for
//! rank 0) that is a rank. Every rank has at most ⌈log₂ P⌉ children and is at
//! most ⌈log₂ P⌉ edges from rank 0; served largest subtree first (as in a
//! binomial broadcast), the whole tree is done in ⌈log₂ P⌉ steps.

/// The parent of `rank` (None for rank 0).
pub fn parent(rank: u32) -> Option<u32> {
    (rank > 0).then(|| rank & (rank - 1))
}

/// The children of `rank` in a job of `size` ranks, largest subtree first.
pub fn children(rank: u32, size: u32) -> impl Iterator<Item = u32> {
    // 2^k must stay below the lowest set bit of `rank` (any k for rank 0).
    let limit = if rank == 0 { 32 } else { rank.trailing_zeros() };
    (0..limit)
        .rev()
        .filter_map(move |k| rank.checked_add(1u32 << k))
        .filter(move |&c| c < size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ceil_log2(n: u32) -> u32 {
        32 - n.saturating_sub(1).leading_zeros()
    }

    #[test]
    fn every_rank_has_one_parent_and_at_most_log_p_children() {
        for size in [1, 2, 3, 7, 8, 32, 63, 64, 65, 1000, 10_000] {
            let mut seen = vec![0u32; size as usize];
            for r in 0..size {
                let kids: Vec<u32> = children(r, size).collect();
                assert!(kids.len() as u32 <= ceil_log2(size), "size {size} rank {r}");
                for c in kids {
                    assert_eq!(parent(c), Some(r), "size {size}");
                    seen[c as usize] += 1;
                }
            }
            // Every rank but 0 is the child of exactly one rank.
            assert_eq!(seen[0], 0);
            assert!(seen[1..].iter().all(|&n| n == 1), "size {size}");
        }
    }

    #[test]
    fn every_rank_is_at_most_log_p_edges_from_rank_0() {
        for size in [2, 64, 1000, 10_000] {
            for r in 0..size {
                let (mut depth, mut at) = (0, r);
                while let Some(p) = parent(at) {
                    at = p;
                    depth += 1;
                }
                assert!(depth <= ceil_log2(size), "size {size} rank {r}");
            }
        }
    }

    /// A rank starts serving its children once its parent has served it;
    /// each child takes one step of its parent's: the last rank is served
    /// after ⌈log₂ P⌉ steps.
    #[test]
    fn largest_subtree_first_finishes_in_log_p_steps() {
        for size in [2, 3, 8, 64, 100, 1024, 10_000] {
            let mut done = vec![0u32; size as usize];
            for r in 0..size {
                // Parents have lower ranks: `done[r]` is final here.
                for (i, c) in children(r, size).enumerate() {
                    done[c as usize] = done[r as usize] + i as u32 + 1;
                }
            }
            assert_eq!(
                done.iter().copied().max(),
                Some(ceil_log2(size)),
                "size {size}"
            );
        }
    }
}
