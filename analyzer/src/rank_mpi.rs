//! One rank's MPI rows reduced to what the analyses read of them
//! ([`RankMpi::of`], computed where the rows are), and the reduction of every
//! rank's in rank order ([`MpiMerge`]): the MPI profile's sums, the memory
//! model's communication graph, the MPI time of the application window (POP,
//! the fine-grain model) and of each phase. With the message sides
//! ([`crate::aligned::RankSides`]) this is all the analysis reads of the rows.

use std::collections::{BTreeMap, HashMap};

use hyscope_format::{MpiRecord, PhaseRecord};
use serde::{Deserialize, Serialize};

use crate::memory::GraphPart;
use crate::mpi::{EagerLimits, ProfilePart};
use crate::trace_data::{PhaseMpi, RankData, WindowMpi};

/// What the analyses read of one rank's MPI rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankMpi {
    pub rank: u32,
    profile: ProfilePart,
    graph: GraphPart,
    window: WindowMpi,
    phases: Vec<PhaseMpi>,
    /// The calls' time by (call site, phase index).
    phase_code: Vec<((u64, usize), i64)>,
}

/// Where a rank's rows are read: what [`RankMpi::of`] needs besides them.
pub struct RankMpiInput<'a> {
    /// The application window (end of `MPI_Init` to start of `MPI_Finalize`).
    pub window: (i64, i64),
    /// The master's parallel regions (sorted, disjoint), from the rank's OpenMP pass.
    pub regions: &'a [(i64, i64)],
    /// The rank's phase intervals, sorted.
    pub phases: &'a [PhaseRecord],
}

impl RankMpi {
    /// Rank `rank`'s rows (on global time, restricted to the focus if any),
    /// with the bytes the receives each row posted received at their
    /// completion ([`crate::mpi::received_by_post`] of the rank's message sides; none
    /// for a rank without rows) and the messages they sent
    /// ([`crate::mpi::sent_by_row`]). Call sites stay the rank's own addresses:
    /// [`MpiMerge::add`] makes them the ids of their code locations
    /// ([`crate::code_map`]), where every rank's symbols are known.
    pub fn of(
        rank: u32,
        rows: &[MpiRecord],
        received: &[(usize, u64)],
        sent: &[crate::mpi::SentMessage],
        input: RankMpiInput,
        limits: &EagerLimits,
    ) -> RankMpi {
        let (phases, code) = crate::phases::mpi_in_phases(rows, input.phases);
        let mut phase_code: Vec<((u64, usize), i64)> = code.into_iter().collect();
        phase_code.sort_unstable();
        RankMpi {
            rank,
            profile: ProfilePart::of(rank, rows, received, sent, limits),
            graph: GraphPart::of(rank, rows),
            window: crate::pop::window_mpi(rows, input.window, input.regions),
            phases,
            phase_code,
        }
    }
}

/// Every rank's [`RankMpi`], added in rank order: the cross-rank sums here,
/// the per-rank results in the rank's [`RankData`].
#[derive(Debug, Default, Clone)]
pub struct MpiMerge {
    pub profile: ProfilePart,
    pub graph: BTreeMap<u32, GraphPart>,
}

/// The per-rank results of a [`RankMpi`], for its rank's [`RankData`].
#[derive(Debug, Default)]
pub struct RankMpiKept {
    rows: u64,
    window: WindowMpi,
    phases: Vec<PhaseMpi>,
    phase_code: Vec<((u64, usize), i64)>,
}

impl MpiMerge {
    /// Add `part`, its call sites made the ids of their code locations by
    /// `canon` (through `part`'s rank's own symbols, [`crate::code_map`]);
    /// returns what its rank keeps.
    pub fn add(&mut self, part: RankMpi, canon: &dyn Fn(u64) -> u64) -> RankMpiKept {
        let kept = RankMpiKept {
            rows: part.profile.rows,
            window: part.window,
            phases: part.phases,
            phase_code: part.phase_code,
        };
        self.profile.merge(part.profile.canonical(canon));
        self.graph.insert(part.rank, part.graph.canonical(canon));
        kept
    }
}

impl RankMpiKept {
    pub fn apply(self, rd: &mut RankData) {
        rd.mpi_rows = self.rows;
        rd.mpi_window = self.window;
        rd.phase_mpi = self.phases;
        let code: &mut HashMap<(u64, usize), i64> = &mut rd.phase_code;
        for (k, ns) in self.phase_code {
            *code.entry(k).or_default() += ns;
        }
    }
}
