//! Job-level work done through PMPI on a private duplicate of `MPI_COMM_WORLD`:
//! clock offsets to rank 0 (at MPI_Init and MPI_Finalize), the MPI library's
//! description and control variables, and the job manifest that rank 0 writes
//! before the real MPI_Finalize.

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use hyscope_format::{ClockOffset, MpiInfo, RankInfo};
use mpi_sys as ffi;

use super::{level_name, world, world_rank, world_size};
use crate::{clock, diag, lifecycle, slots, state};

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
    state::with_manifest(|m| m.mpi = Some(info));
    // A draft manifest, so that a job that never reaches MPI_Finalize (MPI_Abort,
    // a crash, a kill) still leaves an openable trace. Replaced at MPI_Finalize.
    if world_rank() == 0 {
        write_manifest(Vec::new());
    }
}

/// Before the real MPI_Finalize: second clock offset, job manifest, flush.
pub fn at_finalize() {
    sync_clock();
    let ranks = gather_rank_infos();
    if world_rank() == 0 {
        if ranks.is_empty() {
            diag::warn("could not gather the ranks' descriptions; the manifest lists rank 0 only");
        }
        write_manifest(ranks);
        state::mark_manifest_written_by_mpi();
    }
    lifecycle::flush_all();
}

/// Measure this rank's clock offset to rank 0 and keep it in the rank info.
///
/// Rank r sends its time t1, rank 0 answers with its time t0, r reads t2:
/// offset = (t1 + t2) / 2 − t0, exact if both legs take equally long, else off
/// by at most half the round trip; the round with the smallest round trip is kept.
fn sync_clock() {
    let Some(comm) = private() else {
        return;
    };
    let (rank, size) = (world_rank(), world_size());
    let int64 = unsafe { ffi::RSMPI_INT64_T };
    let status = unsafe { ffi::RSMPI_STATUS_IGNORE };
    if rank == 0 {
        for peer in 1..size {
            for _ in 0..ROUNDS {
                let mut t1: i64 = 0;
                // SAFETY: one i64 each way on our private communicator.
                unsafe {
                    if ffi::PMPI_Recv(
                        (&mut t1 as *mut i64).cast(),
                        1,
                        int64,
                        peer,
                        TAG_SYNC,
                        comm,
                        status,
                    ) != 0
                    {
                        return;
                    }
                    let t0 = clock::now_ns();
                    if ffi::PMPI_Send((&t0 as *const i64).cast(), 1, int64, peer, TAG_SYNC, comm)
                        != 0
                    {
                        return;
                    }
                }
            }
        }
        let now = clock::now_ns();
        state::with_rank_info(|r| {
            r.clock_offsets.push(ClockOffset {
                local_ns: now,
                offset_ns: 0,
                rtt_ns: 0,
            })
        });
        return;
    }
    let mut best: Option<ClockOffset> = None;
    for _ in 0..ROUNDS {
        let t1 = clock::now_ns();
        let mut t0: i64 = 0;
        // SAFETY: as above.
        unsafe {
            if ffi::PMPI_Send((&t1 as *const i64).cast(), 1, int64, 0, TAG_SYNC, comm) != 0
                || ffi::PMPI_Recv(
                    (&mut t0 as *mut i64).cast(),
                    1,
                    int64,
                    0,
                    TAG_SYNC,
                    comm,
                    status,
                ) != 0
            {
                return;
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
    if let Some(b) = best {
        state::with_rank_info(|r| r.clock_offsets.push(b));
    }
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

/// Every rank's [`RankInfo`] (JSON), gathered to rank 0 on the private communicator.
/// Empty on other ranks and on failure.
fn gather_rank_infos() -> Vec<RankInfo> {
    let Some(comm) = private() else {
        return Vec::new();
    };
    let mut info = lifecycle::rank_info_snapshot();
    info.threads = info.threads.max(slots::threads_seen());
    let json = serde_json::to_vec(&info).unwrap_or_default();
    let len = json.len() as c_int;
    let size = world_size().max(1) as usize;
    let root = world_rank() == 0;
    let mut lens = vec![0 as c_int; if root { size } else { 1 }];
    let int32 = unsafe { ffi::RSMPI_INT32_T };
    let byte = unsafe { ffi::RSMPI_UINT8_T };
    // SAFETY: one int from each rank into `size` ints at the root.
    if unsafe {
        ffi::PMPI_Gather(
            (&len as *const c_int).cast(),
            1,
            int32,
            lens.as_mut_ptr().cast(),
            1,
            int32,
            0,
            comm,
        )
    } != 0
    {
        return Vec::new();
    }
    let mut displs = vec![0 as c_int; lens.len()];
    let mut total = 0;
    for (d, l) in displs.iter_mut().zip(&lens) {
        *d = total;
        total += l;
    }
    let mut all = vec![0u8; if root { total as usize } else { 1 }];
    // SAFETY: counts and displacements describe `all` at the root.
    if unsafe {
        ffi::PMPI_Gatherv(
            json.as_ptr().cast::<c_void>(),
            len,
            byte,
            all.as_mut_ptr().cast(),
            lens.as_ptr(),
            displs.as_ptr(),
            byte,
            0,
            comm,
        )
    } != 0
        || !root
    {
        return Vec::new();
    }
    lens.iter()
        .zip(&displs)
        .filter_map(|(&l, &d)| serde_json::from_slice(&all[d as usize..(d + l) as usize]).ok())
        .collect()
}

/// Rank 0 writes `manifest.json` with the gathered ranks (or a draft without them).
fn write_manifest(ranks: Vec<RankInfo>) {
    let Some(dir) = state::trace_dir() else {
        return;
    };
    let mut manifest = state::with_manifest(|m| m.clone());
    if !ranks.is_empty() {
        let mut hosts: Vec<String> = Vec::new();
        for r in &ranks {
            if !hosts.contains(&r.host) {
                hosts.push(r.host.clone());
            }
        }
        manifest.hosts = hosts;
        manifest.ranks = ranks;
    }
    manifest.world_size = world_size().max(1) as u32;
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

/// Rank 0 reads the control variables into the manifest's MPI description,
/// before MPI_Finalize.
pub fn read_control_variables() {
    if world_rank() == 0 {
        let cvars = control_variables();
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
