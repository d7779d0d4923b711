//! Electing one reader per node for per-package counters (RAPL).

use std::ffi::c_int;

use mpi_sys as ffi;

const OK: c_int = ffi::MPI_SUCCESS as c_int;

/// Split `MPI_COMM_WORLD` by shared memory (one communicator per node); the
/// lowest world rank of each node is its reader. Returns (this rank is a
/// reader, every reader's world rank). Collective over `MPI_COMM_WORLD`.
pub fn elect() -> Result<(bool, Vec<u32>), String> {
    // SAFETY: MPI is initialised (called after PMPI_Init); all pointers are valid
    // and the node communicator is freed before returning.
    unsafe {
        let world = ffi::RSMPI_COMM_WORLD;
        let (mut rank, mut size) = (0, 0);
        if ffi::PMPI_Comm_rank(world, &mut rank) != OK
            || ffi::PMPI_Comm_size(world, &mut size) != OK
        {
            return Err("MPI_Comm_rank/size failed".into());
        }
        let mut node: ffi::MPI_Comm = std::mem::zeroed();
        let rc = ffi::PMPI_Comm_split_type(
            world,
            ffi::RSMPI_COMM_TYPE_SHARED,
            rank,
            ffi::RSMPI_INFO_NULL,
            &mut node,
        );
        if rc != OK {
            return Err(format!("MPI_Comm_split_type error {rc}"));
        }
        let mut node_rank = -1;
        let rc = ffi::PMPI_Comm_rank(node, &mut node_rank);
        ffi::PMPI_Comm_free(&mut node);
        if rc != OK {
            return Err(format!("MPI_Comm_rank(node) error {rc}"));
        }
        let leader: i32 = i32::from(node_rank == 0);
        let mut all = vec![0i32; usize::try_from(size).unwrap_or(0)];
        let rc = ffi::PMPI_Allgather(
            (&leader as *const i32).cast(),
            1,
            ffi::RSMPI_INT32_T,
            all.as_mut_ptr().cast(),
            1,
            ffi::RSMPI_INT32_T,
            world,
        );
        if rc != OK {
            return Err(format!("MPI_Allgather error {rc}"));
        }
        let readers = all
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l == 1)
            .map(|(r, _)| r as u32)
            .collect();
        Ok((leader == 1, readers))
    }
}
