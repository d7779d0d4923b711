//! Job-level work done through PMPI on a private duplicate of `MPI_COMM_WORLD`:
//! clock offsets to rank 0 (at MPI_Init and MPI_Finalize, along a binomial
//! tree: [`super::tree`]), the MPI library's description and control
//! variables, and the job manifest that rank 0 writes before the real
//! MPI_Finalize.

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int};
use std::sync::OnceLock;

use hyscope_format::{ClockOffset, MpiInfo, RankInfo};
use mpi_sys as ffi;

use super::{level_name, tree, world, world_rank, world_size};
use crate::{clock, diag, lifecycle, state};

struct Comm(ffi::MPI_Comm);
// SAFETY: a communicator handle is a plain value usable from any thread.
unsafe impl Send for Comm {}
unsafe impl Sync for Comm {}

/// The collector's own communicator: its messages never match the application's.
static PRIVATE: OnceLock<Comm> = OnceLock::new();

/// Ping-pong rounds per rank; the one with the smallest round trip is kept.
const ROUNDS: usize = 16;
const TAG_SYNC: c_int = 7001;

fn private() -> Option<ffi::MPI_Comm> {
    PRIVATE.get().map(|c| c.0)
}

/// At MPI_Init: private communicator, first clock offset, MPI description, draft manifest.
pub fn at_init(levels: (c_int, c_int)) {
    let mut dup = world();
    // SAFETY: MPI is initialised; collective over world like MPI_Init itself.
    if unsafe { ffi::PMPI_Comm_dup(world(), &mut dup) } == 0 {
        let _ = PRIVATE.set(Comm(dup));
    } else {
        diag::warn("cannot duplicate MPI_COMM_WORLD; no clock synchronisation or job manifest");
    }
    sync_clock();
    let info = MpiInfo {
        flavour: super::FLAVOUR.to_string(),
        library_version: library_version(),
        standard_version: standard_version(),
        thread_level_requested: Some(level_name(levels.0)),
        thread_level_provided: Some(level_name(levels.1)),
        ..MpiInfo::default()
    };
    // Rank 0's describes the job (the manifest's); read before the
    // collector's MPI_T opens every component again.
    let info = if world_rank() == 0 {
        MpiInfo {
            components: super::stack::components_now(),
            environment: super::stack::environment_now(),
            ..info
        }
    } else {
        info
    };
    state::with_manifest(|m| m.mpi = Some(info));
    // A draft manifest, so that a job that never reaches MPI_Finalize (MPI_Abort,
    // a crash, a kill) still leaves an openable trace. Replaced at MPI_Finalize.
    if world_rank() == 0 {
        write_manifest(None);
    }
}

/// Before the real MPI_Finalize: second clock offset, each rank's own rank
/// file, rank 0's job manifest, flush. Nothing is gathered to rank 0: the
/// rank files are the ranks' descriptions (readers merge them into the
/// manifest's `ranks`), so rank 0 sends and receives O(log P) messages here
/// like every rank (ARCHITECTURE.md, "Recording at scale").
pub fn at_finalize() {
    let start = clock::now_ns();
    sync_clock();
    let info = lifecycle::write_rank_file_at_finalize();
    if world_rank() == 0 {
        write_manifest(Some(info));
        state::mark_manifest_written_by_mpi();
    }
    // What the job-level work costs this rank, for the exit path's rank file.
    let spent = clock::now_ns().saturating_sub(start);
    state::with_rank_info(|r| r.finalize_ns = u64::try_from(spent).unwrap_or(0));
    lifecycle::flush_all();
}

/// Measure this rank's clock offset to rank 0 and keep it in the rank info,
/// along the binomial tree of [`tree`]: each rank gets its offset to its
/// parent, then adds the parent's offset to rank 0, which the parent sends
/// once it has its own; then it serves its children, largest subtree first.
/// The last rank has its offset after ⌈log₂ P⌉ steps, where rank 0 pinging
/// every rank in turn needs P − 1.
///
/// A rank whose clock is its parent's (the same clock id, `ClockInfo::id`: the
/// ranks of a node sharing one calibration) has offset 0 to it by
/// construction and measures nothing: two messages on that edge. Otherwise
/// it measures: the child sends its time t1, the parent answers with its
/// time t0, the child reads t2: offset to the parent = (t1 + t2) / 2 − t0,
/// exact if both legs take equally long, else off by at most half the round
/// trip; of `ROUNDS` rounds the one with the smallest round trip is kept
/// (`2·ROUNDS + 1` messages on the edge). Offsets compose along the path
/// (c − 0 = (c − p) + (p − 0)), and so do the bounds: the `rtt_ns` kept is the
/// sum of the round trips on the path (0 on shared-clock edges), so that half
/// of it still bounds the error (`formats/README.md`, `clock_offsets`).
///
/// On a node oversubscribed by its ranks every round trip waits for both
/// processes to be scheduled, so the shared-clock edges are what keeps this
/// short where it would be longest.
fn sync_clock() {
    let Some(comm) = private() else {
        return;
    };
    let (rank, size) = (world_rank().max(0) as u32, world_size().max(1) as u32);
    let id = if crate::settings::settings().clock_sync_measure {
        0
    } else {
        clock_id_word()
    };
    let mine = match tree::parent(rank) {
        None => ClockOffset {
            local_ns: clock::now_ns(),
            offset_ns: 0,
            rtt_ns: 0,
        },
        Some(parent) => match offset_to_parent(comm, parent as c_int, id) {
            Some(o) => o,
            // The parent gave up (its MPI failed): so does its subtree.
            None => return,
        },
    };
    state::with_rank_info(|r| r.clock_offsets.push(mine));
    for child in tree::children(rank, size) {
        if !serve_child(comm, child as c_int, mine, id) {
            return;
        }
    }
}

/// This process's clock id as one word for the exchange; 0 when it has none
/// or `HYSCOPE_CLOCK_SYNC=measure` (then it never matches: an id word of 0 is
/// not compared, and the edge is measured).
fn clock_id_word() -> i64 {
    clock::info()
        .id
        .and_then(|id| u64::from_str_radix(&id, 16).ok())
        .map_or(0, |w| w as i64)
}

/// What a child sends instead of its first ping when it shares its parent's clock.
const SAME_CLOCK: i64 = i64::MIN;

/// The child's side of one tree edge: the parent's clock id and offset to
/// rank 0 first; then, unless the clocks are one, `ROUNDS` ping-pongs,
/// composed with the best round's.
fn offset_to_parent(comm: ffi::MPI_Comm, parent: c_int, id: i64) -> Option<ClockOffset> {
    let int64 = unsafe { ffi::RSMPI_INT64_T };
    let status = unsafe { ffi::RSMPI_STATUS_IGNORE };
    let mut up = [0i64; 3];
    // SAFETY: three i64 on our private communicator.
    if unsafe {
        ffi::PMPI_Recv(
            up.as_mut_ptr().cast(),
            3,
            int64,
            parent,
            TAG_SYNC,
            comm,
            status,
        )
    } != 0
    {
        return None;
    }
    let [parent_id, parent_offset, parent_rtt] = up;
    if id != 0 && parent_id == id {
        // SAFETY: one i64 on our private communicator.
        if unsafe {
            ffi::PMPI_Send(
                (&SAME_CLOCK as *const i64).cast(),
                1,
                int64,
                parent,
                TAG_SYNC,
                comm,
            )
        } != 0
        {
            return None;
        }
        return Some(ClockOffset {
            local_ns: clock::now_ns(),
            offset_ns: parent_offset,
            rtt_ns: parent_rtt,
        });
    }
    let mut best: Option<ClockOffset> = None;
    for _ in 0..ROUNDS {
        let t1 = clock::now_ns();
        let mut t0: i64 = 0;
        // SAFETY: one i64 each way on our private communicator.
        unsafe {
            if ffi::PMPI_Send((&t1 as *const i64).cast(), 1, int64, parent, TAG_SYNC, comm) != 0
                || ffi::PMPI_Recv(
                    (&mut t0 as *mut i64).cast(),
                    1,
                    int64,
                    parent,
                    TAG_SYNC,
                    comm,
                    status,
                ) != 0
            {
                return None;
            }
        }
        let t2 = clock::now_ns();
        let rtt = t2 - t1;
        if best.is_none_or(|b| rtt < b.rtt_ns) {
            best = Some(ClockOffset {
                local_ns: t1 + rtt / 2,
                offset_ns: t1 + rtt / 2 - t0,
                rtt_ns: rtt,
            });
        }
    }
    best.map(|b| ClockOffset {
        local_ns: b.local_ns,
        offset_ns: b.offset_ns.saturating_add(parent_offset),
        rtt_ns: b.rtt_ns.saturating_add(parent_rtt),
    })
}

/// The parent's side of one tree edge: this rank's clock id, offset to rank
/// 0 and its bound; then the child's `ROUNDS` pings answered with this
/// rank's time, unless the child's first word says it shares this clock.
fn serve_child(comm: ffi::MPI_Comm, child: c_int, mine: ClockOffset, id: i64) -> bool {
    let int64 = unsafe { ffi::RSMPI_INT64_T };
    let status = unsafe { ffi::RSMPI_STATUS_IGNORE };
    let down = [id, mine.offset_ns, mine.rtt_ns];
    // SAFETY: three i64 on our private communicator.
    if unsafe { ffi::PMPI_Send(down.as_ptr().cast(), 3, int64, child, TAG_SYNC, comm) } != 0 {
        return false;
    }
    for round in 0..ROUNDS {
        let mut t1: i64 = 0;
        // SAFETY: one i64 each way on our private communicator.
        unsafe {
            if ffi::PMPI_Recv(
                (&mut t1 as *mut i64).cast(),
                1,
                int64,
                child,
                TAG_SYNC,
                comm,
                status,
            ) != 0
            {
                return false;
            }
            if round == 0 && t1 == SAME_CLOCK {
                return true;
            }
            let t0 = clock::now_ns();
            if ffi::PMPI_Send((&t0 as *const i64).cast(), 1, int64, child, TAG_SYNC, comm) != 0 {
                return false;
            }
        }
    }
    true
}

fn library_version() -> String {
    let mut buf = vec![0 as c_char; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING.
    if unsafe { ffi::PMPI_Get_library_version(buf.as_mut_ptr(), &mut len) } != 0 {
        return String::new();
    }
    // SAFETY: MPI wrote a NUL-terminated string.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim()
        .to_string()
}

fn standard_version() -> String {
    let (mut v, mut s) = (0, 0);
    // SAFETY: out-pointers are locals.
    unsafe { ffi::PMPI_Get_version(&mut v, &mut s) };
    format!("{v}.{s}")
}

/// Rank 0 writes `manifest.json`: the job's description; of the ranks, only
/// rank 0's own (`own`: None in the draft at MPI_Init, which lists no rank),
/// the others' are in their own rank files.
fn write_manifest(own: Option<RankInfo>) {
    let Some(dir) = state::trace_dir() else {
        return;
    };
    let mut manifest = state::with_manifest(|m| m.clone());
    manifest.world_size = world_size().max(1) as u32;
    manifest.ranks = own.into_iter().collect();
    if let Some(omp) = hyscope_ompt::openmp_info() {
        manifest.openmp = Some(omp);
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        diag::warn(&format!("cannot create {} ({e})", dir.display()));
        return;
    }
    if let Err(e) = manifest.write(&dir) {
        diag::warn(&format!("cannot write the manifest ({e})"));
    }
}

/// On rank 0, MPI's control variables for the manifest's MPI description
/// ([`record_control_variables`]), read before MPI_Finalize; `None` on
/// other ranks.
pub fn rank0_control_variables() -> Option<BTreeMap<String, String>> {
    (world_rank() == 0).then(control_variables)
}

/// Put rank 0's control variables into the manifest's MPI description.
pub fn record_control_variables(cvars: Option<BTreeMap<String, String>>) {
    if let Some(cvars) = cvars {
        state::with_manifest(|m| {
            if let Some(mpi) = m.mpi.as_mut() {
                apply_cvars(mpi, cvars);
            }
        });
    }
}

/// Control variables that decide protocols and memory (name → value as text).
/// Every MPI_T return code is checked: Open MPI lists many invalid indices
/// (docs/platform.md "MPI"). MPI_T is initialised and finalised here, before the
/// real MPI_Finalize (MPI_T_finalize after it crashed Open MPI).
fn control_variables() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut provided = 0;
    // SAFETY: MPI_T may be initialised any number of times (reference counted).
    if unsafe { ffi::PMPI_T_init_thread(ffi::RSMPI_THREAD_SINGLE, &mut provided) } != 0 {
        return out;
    }
    let mut num = 0;
    // SAFETY: out-pointer is a local.
    if unsafe { ffi::PMPI_T_cvar_get_num(&mut num) } == 0 {
        for i in 0..num {
            if let Some((name, value)) = read_cvar(i) {
                out.insert(name, value);
            }
        }
    }
    // SAFETY: pairs the init above.
    unsafe { ffi::PMPI_T_finalize() };
    out
}

fn wanted(name: &str) -> bool {
    name.contains("eager_limit")
        || name.contains("receive_queues")
        || name.contains("rndv")
        || name.contains("max_send_size")
        // The shared-memory transport's buffers (the analyzer's memory model):
        // Open MPI's vader/sm segment and fast boxes, MPICH's POSIX iqueue.
        || (name.starts_with("btl_") && (name.ends_with("_segment_size") || name.contains("_fbox_")))
        || name.starts_with("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_")
        // MPICH's libfabric provider (the memory model names it).
        || name == "MPIR_CVAR_OFI_USE_PROVIDER"
        // Open MPI's tcp BTL buffer per connection (the memory model's).
        || name == "btl_tcp_endpoint_cache"
        || name == "btl_tcp_links"
        || name == "btl"
        || name == "pml"
        || name == "mtl"
}

fn read_cvar(index: c_int) -> Option<(String, String)> {
    let mut name = [0 as c_char; 256];
    let mut name_len: c_int = name.len() as c_int;
    let mut verbosity = 0;
    let mut dt = unsafe { ffi::RSMPI_DATATYPE_NULL };
    let mut enumtype: ffi::MPI_T_enum = std::ptr::null_mut();
    let mut desc_len: c_int = 0;
    let (mut bind, mut scope) = (0, 0);
    // SAFETY: buffers and lengths are ours; a null description is allowed with length 0.
    let rc = unsafe {
        ffi::PMPI_T_cvar_get_info(
            index,
            name.as_mut_ptr(),
            &mut name_len,
            &mut verbosity,
            &mut dt,
            &mut enumtype,
            std::ptr::null_mut(),
            &mut desc_len,
            &mut bind,
            &mut scope,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: MPI wrote a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    if !wanted(&name) || bind != crate::samplers::mpit::T_BIND_NO_OBJECT {
        return None;
    }
    let mut handle: ffi::MPI_T_cvar_handle = std::ptr::null_mut();
    let mut count = 0;
    // SAFETY: no object is bound to this variable.
    if unsafe {
        ffi::PMPI_T_cvar_handle_alloc(index, std::ptr::null_mut(), &mut handle, &mut count)
    } != 0
    {
        return None;
    }
    let mut buf = vec![0u8; 8192];
    let size = super::nbytes(count.max(1), dt) as usize;
    let value = if size <= buf.len() {
        // SAFETY: the buffer holds count elements of dt.
        if unsafe { ffi::PMPI_T_cvar_read(handle, buf.as_mut_ptr().cast()) } == 0 {
            decode(&type_name(dt), &buf)
        } else {
            None
        }
    } else {
        None
    };
    // SAFETY: allocated above.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    value.map(|v| (name, v))
}

fn type_name(dt: ffi::MPI_Datatype) -> String {
    let mut buf = [0 as c_char; 128];
    let mut len = 0;
    // SAFETY: buffer of MPI_MAX_OBJECT_NAME (64) or more.
    if unsafe { ffi::PMPI_Type_get_name(dt, buf.as_mut_ptr(), &mut len) } != 0 {
        return String::new();
    }
    // SAFETY: NUL-terminated by MPI.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The first value of a control variable as text, by its MPI type name.
fn decode(type_name: &str, buf: &[u8]) -> Option<String> {
    let b8 = |n: usize| -> [u8; 8] {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&buf[..n]);
        a
    };
    Some(match type_name {
        "MPI_INT" => i32::from_ne_bytes(buf[..4].try_into().ok()?).to_string(),
        "MPI_UNSIGNED" => u32::from_ne_bytes(buf[..4].try_into().ok()?).to_string(),
        "MPI_UNSIGNED_LONG"
        | "MPI_UNSIGNED_LONG_LONG"
        | "MPI_COUNT"
        | "MPI_LONG"
        | "MPI_LONG_LONG"
        | "MPI_LONG_LONG_INT" => u64::from_ne_bytes(b8(8)).to_string(),
        "MPI_DOUBLE" => f64::from_ne_bytes(b8(8)).to_string(),
        "MPI_CHAR" => {
            let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        }
        _ => return None,
    })
}

/// Fill eager limits, receive queues and transports from the control variables.
pub fn apply_cvars(mpi: &mut MpiInfo, cvars: BTreeMap<String, String>) {
    for (name, value) in &cvars {
        if let Some(btl) = name
            .strip_prefix("btl_")
            .and_then(|n| n.strip_suffix("_eager_limit"))
            && !btl.contains('_')
            && let Ok(v) = value.parse::<u64>()
        {
            mpi.eager_limits.insert(btl.to_string(), v);
        }
        if name.contains("receive_queues") {
            mpi.receive_queues.insert(name.clone(), value.clone());
        }
    }
    // `btl` lists the transports to use, or with a leading `^` the ones to exclude
    // (then: every transport that has an eager limit, minus those).
    if let Some(btl) = cvars.get("btl") {
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        };
        mpi.transports = match btl.strip_prefix('^') {
            Some(excluded) => {
                let excluded = list(excluded);
                mpi.eager_limits
                    .keys()
                    .filter(|k| !excluded.contains(k))
                    .cloned()
                    .collect()
            }
            None => list(btl),
        };
    }
    mpi.control_variables = cvars;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cvars_fill_mpi_info() {
        let mut mpi = MpiInfo::default();
        let cvars: BTreeMap<String, String> = [
            ("btl_vader_eager_limit", "4096"),
            ("btl_tcp_eager_limit", "65536"),
            (
                "btl_openib_receive_queues",
                "P,128,256,192,128:S,65536,256,128,32",
            ),
            ("btl", "^uct,openib"),
            ("btl_tcp_rndv_eager_limit", "65536"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        apply_cvars(&mut mpi, cvars);
        assert_eq!(mpi.eager_limits.get("vader"), Some(&4096));
        assert_eq!(mpi.eager_limits.get("tcp"), Some(&65536));
        // btl_tcp_rndv_eager_limit is not the eager limit of a transport "tcp_rndv".
        assert_eq!(mpi.eager_limits.len(), 2);
        assert_eq!(mpi.transports, vec!["tcp", "vader"]);
        assert_eq!(mpi.receive_queues.len(), 1);
        assert_eq!(mpi.control_variables.len(), 5);
    }

    #[test]
    fn the_shared_memory_transport_s_sizes_are_kept() {
        for n in [
            "btl_vader_segment_size",
            "btl_vader_fbox_size",
            "btl_vader_fbox_max",
            "btl_sm_segment_size",
            "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS",
            "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE",
        ] {
            assert!(wanted(n), "{n}");
        }
        for n in ["coll_adapt_bcast_segment_size", "btl_vader_free_list_num"] {
            assert!(!wanted(n), "{n}");
        }
    }

    #[test]
    fn decode_by_type() {
        assert_eq!(decode("MPI_INT", &(-5i32).to_ne_bytes()), Some("-5".into()));
        assert_eq!(
            decode("MPI_UNSIGNED_LONG", &4096u64.to_ne_bytes()),
            Some("4096".into())
        );
        assert_eq!(decode("MPI_CHAR", b"P,128\0junk"), Some("P,128".into()));
        assert_eq!(decode("MPI_WEIRD", &[0; 8]), None);
    }
}
