//! The shared-memory transport's buffers: what a process spends to reach
//! the peers on its own node. Not per connection: each process that shares
//! its node with other ranks maps one receive region of its own at
//! `MPI_Init`, which the node's other processes write into (Kamal 2013
//! §3.2.1: one shared-memory receive queue per process, O(processes) per
//! node, against the network's per-connection resources, Didelot 2014
//! §3.1.1). Which transport, by the run's MPI:
//!
//! - Open MPI's vader BTL (4.1, the `ob1` PML): one segment of
//!   `btl_vader_segment_size` (4 MiB, at least 2 MiB) per process, holding
//!   its FIFO, its eager fragments and its fast boxes: `btl_vader_fbox_size`
//!   (4 KiB) per local peer it sent 16 messages to, at most
//!   `btl_vader_fbox_max` (32), carved out of that same segment.
//! - UCX's shared-memory (`mm`) transport, under MPICH's `ch4:ucx` device
//!   (Debian's) or Open MPI's `ucx` PML: a receive FIFO of 64 elements of
//!   128 B and receive buffers of 8256 B, 512 at a time (UCX 1.13's
//!   `UCX_MM_FIFO_SIZE`, `UCX_MM_FIFO_ELEM_SIZE`, `UCX_MM_SEG_SIZE`,
//!   `UCX_MM_RX_BUFS_GROW`; environment variables, which the trace does not
//!   record). The pool grows by as many under load: the first 512 are a
//!   floor. A 2-rank MPICH 4.0.2 run here mapped 4 296 704 B per process
//!   for it, the model's 4 235 264 B and the buffers' headers.
//! - MPICH's own POSIX eager `iqueue` (CH4 with another network module):
//!   `MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS` (64) cells of
//!   `MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE` (69632 B in MPICH 4.0.2,
//!   read with MPI_T) per process.
//!
//! Control variables are the run's own where the collector read them (the
//! manifest's `mpi.control_variables`), else these defaults.

use hyscope_format::MpiInfo;

use super::transport::mpich_device;
use crate::model::ModelParam;

/// What a process's shared-memory transport costs.
pub(super) struct ShmBuffers {
    pub parameters: Vec<ModelParam>,
    /// Bytes per process on a node with other ranks.
    pub bytes_per_process: f64,
}

/// Open MPI 4.1's `btl_vader_segment_size`.
const VADER_SEGMENT: u64 = 4 << 20;
/// The smallest segment vader maps, whatever the setting.
const VADER_SEGMENT_MIN: u64 = 2 << 20;
/// Open MPI 4.1's `btl_vader_fbox_size` and `btl_vader_fbox_max`.
const VADER_FBOX: (u64, u64) = (4096, 32);
/// UCX 1.13's mm transport: FIFO elements and their size, receive buffers
/// per growth of the pool and their size.
const UCX_MM: (u64, u64, u64, u64) = (64, 128, 512, 8256);
/// MPICH 4.0.2's `MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS` and `_CELL_SIZE`.
const IQUEUE: (u64, u64) = (64, 69_632);

/// One line of the model's parameters, in bytes.
pub(super) fn param(name: &str, value: f64, source: String) -> ModelParam {
    ModelParam {
        name: name.into(),
        value,
        unit: "bytes".into(),
        source,
    }
}

/// What every view calls the figure per process.
const PER_PROCESS: &str = "shared-memory buffers per process";
/// When a process has them.
const WHO: &str =
    "one per process on a node with other ranks, whatever its peers there (Kamal 2013 §3.2.1)";

impl ShmBuffers {
    /// The model of the run's MPI (Open MPI's vader where it is not known).
    pub fn of(mpi: Option<&MpiInfo>) -> ShmBuffers {
        let cvar = |names: &[&str], default: u64, what: &str| -> (u64, String) {
            mpi.and_then(|m| {
                names.iter().find_map(|n| {
                    let v = m.control_variables.get(*n)?.trim().parse::<u64>().ok()?;
                    Some((v, format!("manifest: {n}")))
                })
            })
            .unwrap_or_else(|| (default, format!("{what} default")))
        };
        let mpich = mpi.is_some_and(|m| m.flavour == "mpich");
        let ucx = mpi.is_some_and(|m| {
            if mpich {
                mpich_device(&m.library_version).is_some_and(|d| d.ends_with(":ucx"))
            } else {
                m.control_variables
                    .get("pml")
                    .is_some_and(|p| p.trim() == "ucx")
            }
        });
        if ucx {
            let (fifo, elem, grow, seg) = UCX_MM;
            let bytes = (fifo * elem + grow * seg) as f64;
            let via = if mpich {
                "MPICH's ch4:ucx device"
            } else {
                "Open MPI's ucx PML"
            };
            return ShmBuffers {
                parameters: vec![param(
                    PER_PROCESS,
                    bytes,
                    format!(
                        "UCX shared-memory transport ({via}): FIFO {fifo} × {elem} B + {grow} receive buffers × {seg} B (UCX 1.13 defaults of UCX_MM_FIFO_SIZE, _FIFO_ELEM_SIZE, _RX_BUFS_GROW, _SEG_SIZE; the pool grows under load); {WHO}"
                    ),
                )],
                bytes_per_process: bytes,
            };
        }
        if mpich {
            let (cells, cells_src) = cvar(
                &["MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS"],
                IQUEUE.0,
                "MPICH 4.0",
            );
            let (size, size_src) = cvar(
                &["MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE"],
                IQUEUE.1,
                "MPICH 4.0.2",
            );
            let bytes = (cells * size) as f64;
            return ShmBuffers {
                parameters: vec![param(
                    PER_PROCESS,
                    bytes,
                    format!(
                        "MPICH CH4 POSIX iqueue: {cells} cells ({cells_src}) × {size} B ({size_src}); {WHO}"
                    ),
                )],
                bytes_per_process: bytes,
            };
        }
        let (segment, segment_src) = cvar(
            &["btl_vader_segment_size", "btl_sm_segment_size"],
            VADER_SEGMENT,
            "Open MPI 4.1",
        );
        let (fbox, fbox_src) = cvar(
            &["btl_vader_fbox_size", "btl_sm_fbox_size"],
            VADER_FBOX.0,
            "Open MPI 4.1",
        );
        let (fbox_max, _) = cvar(
            &["btl_vader_fbox_max", "btl_sm_fbox_max"],
            VADER_FBOX.1,
            "Open MPI 4.1",
        );
        // vader maps at least 2 MiB whatever the setting.
        let bytes = segment.max(VADER_SEGMENT_MIN) as f64;
        ShmBuffers {
            parameters: vec![
                param(
                    PER_PROCESS,
                    bytes,
                    format!(
                        "Open MPI vader segment ({segment_src}: {segment} B, at least 2 MiB): FIFO, eager fragments and fast boxes; {WHO}"
                    ),
                ),
                param(
                    "fast box per local peer",
                    fbox as f64,
                    format!(
                        "{fbox_src}; inside the segment above, for at most {fbox_max} peers on the node"
                    ),
                ),
            ],
            bytes_per_process: bytes,
        }
    }

    /// A rank's shared-memory buffers when `beside` ranks share its node
    /// (itself included): none alone on its node.
    pub fn bytes(&self, beside: f64) -> f64 {
        if beside > 1.0 {
            self.bytes_per_process
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mpi(flavour: &str, version: &str, cvars: &[(&str, &str)]) -> MpiInfo {
        MpiInfo {
            flavour: flavour.into(),
            library_version: version.into(),
            control_variables: cvars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..MpiInfo::default()
        }
    }

    #[test]
    fn each_mpi_has_its_transport_and_the_run_s_values_win() {
        // No MPI information: Open MPI 4.1's vader segment.
        let s = ShmBuffers::of(None);
        assert_eq!(s.bytes_per_process, 4_194_304.0);
        assert_eq!((s.bytes(1.0), s.bytes(2.0)), (0.0, 4_194_304.0));
        // The run's own segment size; below 2 MiB vader maps 2 MiB.
        let m = mpi("openmpi", "", &[("btl_vader_segment_size", "8388608")]);
        assert_eq!(ShmBuffers::of(Some(&m)).bytes_per_process, 8_388_608.0);
        let m = mpi("openmpi", "", &[("btl_vader_segment_size", "65536")]);
        assert_eq!(ShmBuffers::of(Some(&m)).bytes_per_process, 2_097_152.0);
        // Open MPI's ucx PML, MPICH's ch4:ucx: UCX's mm transport,
        // 64 × 128 + 512 × 8256 B.
        let m = mpi("openmpi", "", &[("pml", "ucx")]);
        assert_eq!(ShmBuffers::of(Some(&m)).bytes_per_process, 4_235_264.0);
        let m = mpi("openmpi", "", &[("pml", "^ucx")]);
        assert_eq!(ShmBuffers::of(Some(&m)).bytes_per_process, 4_194_304.0);
        let debian = "MPICH Version:\t4.0.2\nMPICH ABI:\t14:2:2\nMPICH Device:\tch4:ucx\n";
        assert_eq!(mpich_device(debian), Some("ch4:ucx"));
        let s = ShmBuffers::of(Some(&mpi("mpich", debian, &[])));
        assert_eq!(s.bytes_per_process, 4_235_264.0);
        assert!(s.parameters[0].source.contains("ch4:ucx"));
        // MPICH's own iqueue: 64 cells of 69632 B, or the run's.
        let ofi = "MPICH Device:\tch4:ofi\n";
        let s = ShmBuffers::of(Some(&mpi("mpich", ofi, &[])));
        assert_eq!(s.bytes_per_process, 4_456_448.0);
        let m = mpi(
            "mpich",
            ofi,
            &[("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", "16384")],
        );
        let s = ShmBuffers::of(Some(&m));
        assert_eq!(s.bytes_per_process, 1_048_576.0);
        assert!(
            s.parameters[0]
                .source
                .contains("manifest: MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE"),
            "{}",
            s.parameters[0].source
        );
    }
}
