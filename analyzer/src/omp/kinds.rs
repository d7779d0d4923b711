//! The row kinds and variants the passes dispatch on.

use hyscope_format::OmpKind;

/// Sync variants that are barriers (`ompt_sync_region_t`).
pub(crate) fn is_barrier(variant: u8) -> bool {
    matches!(variant, 1 | 2 | 3 | 4 | 8 | 9 | 10)
}
/// Taskwait and taskgroup.
pub(super) fn is_taskwait(variant: u8) -> bool {
    matches!(variant, 5 | 6)
}
/// Work variants that are loops (`ompt_work_t`).
pub(super) fn is_loop(variant: u8) -> bool {
    matches!(variant, 1 | 10 | 11 | 12 | 13)
}

pub(super) const K_PARALLEL: u8 = OmpKind::Parallel as u8;
pub(super) const K_ITASK: u8 = OmpKind::ImplicitTask as u8;
pub(super) const K_WORK: u8 = OmpKind::Work as u8;
pub(super) const K_CHUNK: u8 = OmpKind::Chunk as u8;
pub(super) const K_SYNC: u8 = OmpKind::Sync as u8;
pub(super) const K_SYNCWAIT: u8 = OmpKind::SyncWait as u8;
pub(super) const K_MWAIT: u8 = OmpKind::MutexWait as u8;
pub(super) const K_MHOLD: u8 = OmpKind::MutexHold as u8;
pub(super) const K_TCREATE: u8 = OmpKind::TaskCreate as u8;
pub(super) const K_TRUN: u8 = OmpKind::TaskRun as u8;
pub(super) const K_SUMMARY: u8 = OmpKind::Summary as u8;
