//! Names of the sampled metrics (the `metric` column of the `samples` table)
//! that readers look up by name. One place, so the collector's writers and
//! the analyzer's and viewers' readers cannot drift apart.

/// Resident set size (`VmRSS`), bytes.
pub const MEM_VMRSS: &str = "mem.vmrss";
/// Peak resident set size (`VmHWM`), bytes.
pub const MEM_VMHWM: &str = "mem.vmhwm";
/// Shared memory mapped from `/dev/shm`, bytes.
pub const MEM_SHM_MAPPED: &str = "mem.shm_mapped";
/// Peers this rank exchanged messages with.
pub const MPI_CONNECTIONS: &str = "mpi.connections";
/// Prefix of the per-peer message counters (key = peer): totals and the time
/// of first contact, not time series.
pub const MPI_PEER_PREFIX: &str = "mpi.peer.";
/// Prefix of the cumulative energy counters (joules), e.g. `energy.pkg`.
pub const ENERGY_PREFIX: &str = "energy.";
/// Cumulative package energy, joules (key = package).
pub const ENERGY_PKG: &str = "energy.pkg";
/// Cumulative platform energy, joules.
pub const ENERGY_PSYS: &str = "energy.psys";
