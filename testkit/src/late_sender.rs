//! The synthetic run the comparison tests compare with itself changed
//! (`analyzer/tests/compare.rs`, `viewer/tests/report_compare.rs`): its
//! late-sender wait, `MPI_Recv` time and message bytes follow from its
//! arguments.

use hyscope_format::mpi_call as c;

use crate::trace::{Builder, MS};

/// 2 ranks, one thread each, on one host, running `command`: rank 0 sends
/// `bytes` to rank 1 after `late_ms` (call site 1), rank 1 receives from
/// time 0 (a late sender of `late_ms`, call site 2), then both meet in an
/// `MPI_Allreduce` when `allreduce` (call site 3).
pub fn late_sender(command: &str, late_ms: i64, bytes: u64, allreduce: bool) -> Builder {
    let mut b = Builder::new(2, 1, 1);
    b.manifest.command = command.split(' ').map(String::from).collect();
    b.call(
        0,
        c::MPI_Send,
        late_ms * MS,
        (late_ms + 1) * MS,
        1,
        bytes,
        1,
    );
    b.call(1, c::MPI_Recv, 0, (late_ms + 1) * MS, 0, bytes, 2);
    if allreduce {
        for r in 0..2 {
            b.collective(
                r,
                c::MPI_Allreduce,
                (late_ms + 2) * MS,
                (late_ms + 3) * MS,
                -1,
                3,
            );
        }
    }
    b
}
