//! `mpirun -np N hyscope report TRACE` (and `srun`): the analysis split over
//! the launched processes ([`hyscope_analyzer::parallel`]). The MPI calls are
//! in `libhyscope_par.so` (`par/`), built per MPI flavour like the collector
//! and loaded at run time, so `hyscope` itself never links an MPI library
//! and runs where none is installed: it takes this path only when a launcher
//! started more than one process of it.

use std::cell::RefCell;
use std::os::raw::{c_int, c_void};
use std::path::{Path, PathBuf};

use hyscope_analyzer::parallel::Exchange;

use crate::record::Flavour;

/// What the launcher said about this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// This process's rank and the number of processes.
    pub rank: usize,
    pub size: usize,
    /// The MPI flavour the launcher belongs to.
    pub flavour: Flavour,
    /// The variable that gave the size.
    pub variable: &'static str,
    /// Why MPI cannot start in these processes, when the launcher's
    /// variables say so before `MPI_Init` is tried (a failed `MPI_Init`
    /// aborts the process).
    pub unusable: Option<String>,
}

/// The launcher this process was started by, from its variables (Open MPI's
/// `OMPI_COMM_WORLD_SIZE`, MPICH/Hydra's and Slurm's PMI `PMI_SIZE`, Slurm's
/// `SLURM_NTASKS` with `SLURM_PROCID`), when it started more than one
/// process; `None` otherwise (no MPI is touched then). `flavour` other than
/// `Auto` overrides the launcher's (Slurm runs either).
pub fn launched(env: impl Fn(&str) -> Option<String>, flavour: Flavour) -> Option<Launch> {
    let number = |var: &str| env(var).and_then(|v| v.trim().parse::<usize>().ok());
    let candidates: [(&'static str, &'static str, Flavour); 3] = [
        (
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_RANK",
            Flavour::Openmpi,
        ),
        ("PMI_SIZE", "PMI_RANK", Flavour::Mpich),
        // Open MPI under srun talks PMIx; MPICH PMI (above).
        ("SLURM_NTASKS", "SLURM_PROCID", Flavour::Openmpi),
    ];
    let (variable, rank_var, default) = candidates
        .into_iter()
        .find(|(size, rank, _)| number(size).is_some() && number(rank).is_some())?;
    let (size, rank) = (number(variable)?, number(rank_var)?);
    let flavour = match flavour {
        Flavour::Auto => default,
        f => f,
    };
    // Open MPI started by srun needs Slurm's PMIx plugin: without it
    // (`--mpi=none`, a common site default) its MPI_Init aborts every process.
    let unusable = (variable == "SLURM_NTASKS"
        && flavour == Flavour::Openmpi
        && env("PMIX_RANK").is_none())
    .then(|| {
        "srun started these processes without PMIx (no PMIX_RANK), which Open MPI needs to start under srun: launch with `srun --mpi=pmix`".to_string()
    });
    (size > 1 && rank < size).then_some(Launch {
        rank,
        size,
        flavour,
        variable,
        unusable,
    })
}

/// The file name of the MPI library of `flavour`.
fn library_name(flavour: Flavour) -> &'static str {
    if flavour == Flavour::Mpich {
        "libhyscope_par-mpich.so"
    } else {
        "libhyscope_par.so"
    }
}

/// `explicit`, or the flavour's library where `hyscope record` looks for the collector.
fn find_library(explicit: Option<&Path>, flavour: Flavour) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("{} does not exist", p.display()))
        };
    }
    let name = library_name(flavour);
    let dirs = crate::record::library_dirs();
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            format!("no {name} (looked in {})", looked.join(", "))
        })
}

type Init = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type Isend = unsafe extern "C" fn(c_int, *const u8, u64, *mut *mut c_void) -> c_int;
type Sent = unsafe extern "C" fn(*mut c_void, c_int, *mut c_int) -> c_int;
type RecvLen = unsafe extern "C" fn(c_int, *mut u64) -> c_int;
type RecvBytes = unsafe extern "C" fn(c_int, *mut u8, u64) -> c_int;
type Finalize = unsafe extern "C" fn() -> c_int;
type Node = unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int, *mut c_int) -> c_int;
type Allgather = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;

/// The threads a process analyses with: its node's CPUs shared among the
/// node's processes, at most the CPUs it may run on itself; 0 for the
/// processes beyond the node's CPUs, which take no ranks (processes beyond
/// the cores would only take turns on them, each slowing the others).
/// `local_rank` 0 (process 0 on its node) always gets at least one.
pub fn analysing_threads(
    local_rank: usize,
    local_size: usize,
    node_cpus: usize,
    own_cpus: usize,
) -> usize {
    let cpus = node_cpus.max(1);
    let working = local_size.clamp(1, cpus);
    if local_rank >= working {
        return 0;
    }
    let share = cpus / working + usize::from(local_rank < cpus % working);
    share.min(own_cpus.max(1))
}

/// MPI, through the flavour's `libhyscope_par.so`; finalised when dropped.
pub struct Mpi {
    rank: usize,
    size: usize,
    /// Every process's [`analysing_threads`], in process order.
    threads: Vec<usize>,
    isend: Isend,
    sent: Sent,
    /// The buffers being sent, each with its transfer, oldest first.
    sending: RefCell<Vec<(Vec<u8>, *mut c_void)>>,
    recv_len: RecvLen,
    recv_bytes: RecvBytes,
    finalize: Finalize,
    // Holds the functions above loaded.
    _lib: libloading::os::unix::Library,
}

impl Mpi {
    /// Load the library and initialise MPI.
    pub fn open(explicit: Option<&Path>, flavour: Flavour) -> Result<Mpi, String> {
        let path = find_library(explicit, flavour)?;
        // Global: MPI libraries load their own plugins, which look for its symbols.
        let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL;
        // SAFETY: the library's initialisers are the MPI library's, which run
        // in any process.
        let lib = unsafe { libloading::os::unix::Library::open(Some(&path), flags) }
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
        // SAFETY: the symbols have these signatures (par/src/lib.rs).
        let (init, isend, sent, recv_len, recv_bytes, finalize, node, allgather) = unsafe {
            let get = |name: &[u8]| -> Result<*const (), String> {
                lib.get::<*const ()>(name)
                    .map(|s| *s)
                    .map_err(|e| format!("{}: {e}", path.display()))
            };
            (
                std::mem::transmute::<*const (), Init>(get(b"hyscope_par_init\0")?),
                std::mem::transmute::<*const (), Isend>(get(b"hyscope_par_isend\0")?),
                std::mem::transmute::<*const (), Sent>(get(b"hyscope_par_sent\0")?),
                std::mem::transmute::<*const (), RecvLen>(get(b"hyscope_par_recv_len\0")?),
                std::mem::transmute::<*const (), RecvBytes>(get(b"hyscope_par_recv_bytes\0")?),
                std::mem::transmute::<*const (), Finalize>(get(b"hyscope_par_finalize\0")?),
                std::mem::transmute::<*const (), Node>(get(b"hyscope_par_node\0")?),
                std::mem::transmute::<*const (), Allgather>(get(b"hyscope_par_allgather\0")?),
            )
        };
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: two writable ints.
        let e = unsafe { init(&mut rank, &mut size) };
        if e != 0 {
            return Err(format!("MPI_Init failed (error {e}) in {}", path.display()));
        }
        let size = size.max(1) as usize;
        let fail =
            |what: &str, e: c_int| format!("{what} failed (MPI error {e}) in {}", path.display());
        let mut n = [0 as c_int; 4];
        // SAFETY: four writable ints.
        let e = unsafe { node(&mut n[0], &mut n[1], &mut n[2], &mut n[3]) };
        if e != 0 {
            return Err(fail("finding the processes of this node", e));
        }
        let [local_rank, local_size, node_cpus, own_cpus] = n.map(|v| v.max(0) as usize);
        let own = analysing_threads(local_rank, local_size, node_cpus, own_cpus);
        if hyscope_analyzer::timing::enabled() {
            hyscope_analyzer::timing::say(&format!(
                "process {rank}: {} of {local_size} on its node, whose processes may run on {node_cpus} CPUs ({own_cpus} of them this one's): {} to analyse with",
                local_rank + 1,
                hyscope_analyzer::timing::threads(own)
            ));
        }
        if own > 0 && own_cpus == node_cpus && local_size > 1 {
            // Unbound (its mask is the node's): on CPUs of its own, as a
            // launcher binding the processes would have put it, so the
            // node's analysing processes do not take turns on one CPU while
            // another idles, nor move between them.
            let first: usize = (0..local_rank)
                .map(|r| analysing_threads(r, local_size, node_cpus, own_cpus))
                .sum();
            pin_to(first..first + own);
        }
        let mut all = vec![0 as c_int; size];
        // SAFETY: `size` writable ints.
        let e = unsafe { allgather(own as c_int, all.as_mut_ptr()) };
        if e != 0 {
            return Err(fail("sharing the processes' threads", e));
        }
        Ok(Mpi {
            rank: rank.max(0) as usize,
            size,
            threads: all.into_iter().map(|t| t.max(0) as usize).collect(),
            isend,
            sent,
            sending: RefCell::new(Vec::new()),
            recv_len,
            recv_bytes,
            finalize,
            _lib: lib,
        })
    }
}

/// Restrict this process to the CPUs at positions `range` of its affinity
/// mask (its threads started after inherit it); left as it is if that fails.
fn pin_to(range: std::ops::Range<usize>) {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills it.
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `mask` is a writable cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut mask) } != 0 {
        return;
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &mask) })
        .collect();
    let Some(chosen) = cpus.get(range) else {
        return;
    };
    // SAFETY: as above.
    let mut pinned: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in chosen {
        // SAFETY: `cpu` came from the mask, below CPU_SETSIZE.
        unsafe { libc::CPU_SET(cpu, &mut pinned) };
    }
    // SAFETY: `pinned` is a cpu_set_t of `size` bytes.
    unsafe { libc::sched_setaffinity(0, size, &pinned) };
}

impl Exchange for Mpi {
    fn process(&self) -> usize {
        self.rank
    }

    fn processes(&self) -> usize {
        self.size
    }

    fn threads(&self) -> Vec<usize> {
        self.threads.clone()
    }

    fn send_to_root(&self, bytes: Vec<u8>) -> Result<(), String> {
        let mut transfer: *mut c_void = std::ptr::null_mut();
        // SAFETY: the buffer is `bytes.len()` readable bytes, kept in
        // `sending` (a Vec's heap buffer does not move) until its transfer is done.
        let e = unsafe { (self.isend)(0, bytes.as_ptr(), bytes.len() as u64, &mut transfer) };
        if !transfer.is_null() {
            self.sending.borrow_mut().push((bytes, transfer));
        }
        // Transfers started earlier move on (and their buffers are freed).
        self.finish_sends(false)?;
        match e {
            0 => Ok(()),
            e => Err(format!("sending to process 0 failed (MPI error {e})")),
        }
    }

    fn sent(&self) -> Result<(), String> {
        self.finish_sends(true)
    }

    fn receive(&self, from: usize) -> Result<Vec<u8>, String> {
        let from_c = from as c_int;
        let mut len = 0u64;
        // SAFETY: one writable u64.
        let e = unsafe { (self.recv_len)(from_c, &mut len) };
        if e != 0 {
            return Err(format!(
                "receiving from process {from} failed (MPI error {e})"
            ));
        }
        let mut buf = vec![0u8; len as usize];
        // SAFETY: `buf` is `len` writable bytes.
        let e = unsafe { (self.recv_bytes)(from_c, buf.as_mut_ptr(), len) };
        if e != 0 {
            return Err(format!(
                "receiving from process {from} failed (MPI error {e})"
            ));
        }
        Ok(buf)
    }
}

impl Mpi {
    /// Test the transfers under way, oldest first, freeing the buffers of
    /// those done, up to the first not done (they arrive in order); or, when
    /// `wait`, wait for them all. The first error met.
    fn finish_sends(&self, wait: bool) -> Result<(), String> {
        let mut sending = self.sending.borrow_mut();
        let mut finished = 0;
        let mut result = Ok(());
        for (_, transfer) in sending.iter() {
            let mut done: c_int = 0;
            // SAFETY: a transfer of `isend` not yet done (done ones are removed below).
            let e = unsafe { (self.sent)(*transfer, c_int::from(wait), &mut done) };
            if e != 0 && result.is_ok() {
                result = Err(format!("sending to process 0 failed (MPI error {e})"));
            }
            if done == 0 {
                break;
            }
            finished += 1;
        }
        sending.drain(..finished);
        result
    }
}

impl Drop for Mpi {
    fn drop(&mut self) {
        // The buffers of transfers under way must outlive them.
        let _ = self.finish_sends(true);
        // SAFETY: MPI was initialised by `open`; finalising twice is guarded.
        unsafe { (self.finalize)() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_s_cpus_are_shared_by_its_processes_never_oversubscribed() {
        // 4 processes on 2 cores: two analyse with a thread each, two take no ranks.
        let t: Vec<usize> = (0..4).map(|r| analysing_threads(r, 4, 2, 2)).collect();
        assert_eq!(t, vec![1, 1, 0, 0]);
        // 2 processes on 2 cores, unbound or bound to a core each.
        assert_eq!(analysing_threads(0, 2, 2, 2), 1);
        assert_eq!(analysing_threads(1, 2, 2, 1), 1);
        // 3 processes on 8 cores: 3, 3, 2; a process bound to 2 CPUs gets 2.
        let t: Vec<usize> = (0..3).map(|r| analysing_threads(r, 3, 8, 8)).collect();
        assert_eq!(t, vec![3, 3, 2]);
        assert_eq!(analysing_threads(0, 3, 8, 2), 2);
        // Alone on a node: every CPU it may use.
        assert_eq!(analysing_threads(0, 1, 16, 16), 16);
        // Nothing known (0 CPUs reported): one thread for the node's first.
        assert_eq!(analysing_threads(0, 2, 0, 0), 1);
        assert_eq!(analysing_threads(1, 2, 0, 0), 0);
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn launchers_are_recognised_by_their_variables() {
        assert_eq!(launched(env(&[]), Flavour::Auto), None);
        // One process: no MPI.
        let one = [("OMPI_COMM_WORLD_SIZE", "1"), ("OMPI_COMM_WORLD_RANK", "0")];
        assert_eq!(launched(env(&one), Flavour::Auto), None);
        let ompi = [("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")];
        let l = launched(env(&ompi), Flavour::Auto).unwrap();
        assert_eq!((l.rank, l.size, l.flavour), (2, 4, Flavour::Openmpi));
        let hydra = [("PMI_SIZE", "3"), ("PMI_RANK", "0")];
        let l = launched(env(&hydra), Flavour::Auto).unwrap();
        assert_eq!((l.rank, l.size, l.flavour), (0, 3, Flavour::Mpich));
        let slurm = [("SLURM_NTASKS", "8"), ("SLURM_PROCID", "7")];
        let l = launched(env(&slurm), Flavour::Mpich).unwrap();
        assert_eq!((l.rank, l.size, l.flavour), (7, 8, Flavour::Mpich));
        assert_eq!(l.unusable, None);
        // Open MPI under srun: with Slurm's PMIx, or said unusable before
        // its MPI_Init would abort the process.
        let l = launched(env(&slurm), Flavour::Auto).unwrap();
        assert_eq!(l.flavour, Flavour::Openmpi);
        assert!(l.unusable.as_deref().unwrap().contains("--mpi=pmix"));
        let pmix = [
            ("SLURM_NTASKS", "8"),
            ("SLURM_PROCID", "7"),
            ("PMIX_RANK", "7"),
        ];
        assert_eq!(launched(env(&pmix), Flavour::Auto).unwrap().unusable, None);
        // A size without a rank, or a rank beyond the size, is no launch.
        assert_eq!(launched(env(&[("PMI_SIZE", "3")]), Flavour::Auto), None);
        let bad = [("PMI_SIZE", "3"), ("PMI_RANK", "3")];
        assert_eq!(launched(env(&bad), Flavour::Auto), None);
    }
}
