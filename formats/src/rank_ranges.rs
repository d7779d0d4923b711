//! Sets of ranks as a reader finds them in a message: runs as ranges, "0, 2–5, 9".

/// Runs written before the list is cut with "…": a message names a few
/// ranks, not thousands.
const MAX_RUNS: usize = 8;

/// `ranks` (ascending, repeats allowed) as ranges: "0, 2–5, 9"; after
/// eight runs, "…".
pub fn rank_ranges(ranks: impl IntoIterator<Item = u32>) -> String {
    let mut list = RunList::default();
    let mut run: Option<(u32, u32)> = None;
    for r in ranks {
        run = match run {
            Some((first, last)) if r <= last.saturating_add(1) => Some((first, last.max(r))),
            Some((first, last)) => {
                if !list.push(first, last) {
                    return list.finish();
                }
                Some((r, r))
            }
            None => Some((r, r)),
        };
    }
    if let Some((first, last)) = run {
        list.push(first, last);
    }
    list.finish()
}

/// The ranks of `0..world` not in `present` (ascending), as [`rank_ranges`]
/// writes them. Work is proportional to `present`, not to `world`.
pub fn missing_rank_ranges(present: &[u32], world: u32) -> String {
    let mut list = RunList::default();
    let mut next = 0u32;
    for &r in present.iter().filter(|&&r| r < world).chain([&world]) {
        if r > next && !list.push(next, r - 1) {
            break;
        }
        next = next.max(r.saturating_add(1));
    }
    list.finish()
}

/// Runs joined with ", ", cut after [`MAX_RUNS`].
#[derive(Default)]
struct RunList {
    runs: Vec<String>,
    cut: bool,
}

impl RunList {
    /// Add a run; false once the list is full (it then ends with "…").
    fn push(&mut self, first: u32, last: u32) -> bool {
        if self.runs.len() == MAX_RUNS {
            self.cut = true;
            return false;
        }
        self.runs.push(if first == last {
            format!("{first}")
        } else {
            format!("{first}–{last}")
        });
        true
    }

    fn finish(mut self) -> String {
        if self.cut {
            self.runs.push("…".into());
        }
        self.runs.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_become_ranges() {
        assert_eq!(rank_ranges([0]), "0");
        assert_eq!(rank_ranges([0, 1, 2, 3]), "0–3");
        assert_eq!(rank_ranges([0, 2, 3, 4, 4, 5, 9]), "0, 2–5, 9");
        assert_eq!(rank_ranges([]), "");
        assert_eq!(
            rank_ranges((0..40).step_by(2)),
            "0, 2, 4, 6, 8, 10, 12, 14, …"
        );
    }

    #[test]
    fn missing_ranks_are_the_complement() {
        assert_eq!(missing_rank_ranges(&[0, 1, 3, 4], 10), "2, 5–9");
        assert_eq!(missing_rank_ranges(&[1, 2], 3), "0");
        assert_eq!(missing_rank_ranges(&[], 4), "0–3");
        assert_eq!(missing_rank_ranges(&[0, 1, 2], 3), "");
        let every_other: Vec<u32> = (0..100).step_by(2).collect();
        assert_eq!(
            missing_rank_ranges(&every_other, 100),
            "1, 3, 5, 7, 9, 11, 13, 15, …"
        );
        assert_eq!(
            missing_rank_ranges(&[4_000_000_000], u32::MAX),
            "0–3999999999, 4000000001–4294967294"
        );
    }
}
