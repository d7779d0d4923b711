//! What to analyse, and the parameters of the models (the memory
//! projection's buffers, Didelot 2014 §3.4).

/// What to analyse and with which model parameters.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// Rank counts the memory footprint is projected to.
    pub projection_ranks: Vec<u64>,
    /// Memory per core for the projection warning (bytes); None = read /proc/meminfo of this machine.
    pub memory_per_core: Option<u64>,
    /// HCAs per node (H of Didelot 2014 Table 3.4).
    pub hcas_per_node: u32,
    /// Ranks per node (C) of the projection; None = the recorded run's (the
    /// most ranks on one of its nodes). A projected rank's peers on its node
    /// cost shared memory, the others network buffers and queue pairs.
    pub ranks_per_node: Option<u32>,
    /// Buffer model parameters (documented defaults in [`BufferParams`]).
    pub buffers: BufferParams,
    /// Show an indicatif progress bar while reading big traces.
    pub progress: bool,
    /// Restrict the analysis to this phase's time ([`crate::focus`]).
    pub phase: Option<String>,
    /// Memory the analysis may use, bytes: bounds how many ranks' OpenMP
    /// rows are decoded at once (see `ARCHITECTURE.md`, "Memory"); the result
    /// does not depend on it.
    pub memory: u64,
}

/// The default of [`AnalyzeOptions::memory`]: 2 GiB.
pub const DEFAULT_MEMORY: u64 = 2 << 30;

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            projection_ranks: vec![1_024, 32_768, 1_048_576],
            memory_per_core: None,
            hcas_per_node: 1,
            ranks_per_node: None,
            buffers: BufferParams::default(),
            progress: false,
            phase: None,
            memory: DEFAULT_MEMORY,
        }
    }
}

/// Parameters of the buffer model, with documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferParams {
    /// Eager-RDMA slots per connection: Didelot 2014 §3.4, MVAPICH2 default below 8 nodes 32 × 12 KB.
    pub eager_rdma_slots: u32,
    /// Bytes per eager-RDMA slot (12 KB, Didelot 2014 §3.4).
    pub eager_rdma_slot_bytes: u64,
    /// Memory per queue pair (context, send/receive work queues). Didelot 2014 gives
    /// no constant (Fig. 3.1 plots it against WQE counts): 256 send + 256 receive
    /// WQEs × 64 B plus 128 B inline data ≈ 32 KB is our assumption; configurable.
    pub qp_bytes: u64,
    /// Bytes per entry of a communicator group map (an `int` array per
    /// communicator, Kamal 2013 §2.1.3/§3.1).
    pub group_entry_bytes: u64,
}

impl Default for BufferParams {
    fn default() -> Self {
        BufferParams {
            eager_rdma_slots: 32,
            eager_rdma_slot_bytes: 12 * 1024,
            qp_bytes: (256 + 256) * 64 + 128,
            group_entry_bytes: 4,
        }
    }
}
