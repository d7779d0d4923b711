//! MPICH (Hydra launcher, Debian `mpich`/`libmpich-dev`): variables pass through
//! `-genv`; an MPICH program is never given the Open MPI build of the collector
//! (their ABIs differ: it would crash).

use crate::record_support;

use hyscope_format::{MpiRecord, OmpKind, ScanOptions, Trace, mpi_call};
use record_support::*;

#[test]
fn hydra_launcher_gets_the_variables_through_genv() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let dir = tmp.path().join("trace");
    let mut cmd = hyscope();
    cmd.args(["record", "--verbose", "-o"])
        .arg(&dir)
        .args(["--", "mpiexec.mpich", "-n", "2"])
        .arg(&exe);
    let out = hyscope_testkit::output_within(&mut cmd, hyscope_testkit::LAUNCH_LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("\"-genv\" \"LD_PRELOAD\""), "{err}");
    // Two processes, each one rank (PMI_RANK) with its OpenMP regions.
    let trace = Trace::open(&dir).unwrap();
    assert_eq!(trace.ranks(), vec![0, 1]);
    let rows = omp_rows(&trace);
    for rank in [0, 1] {
        assert_eq!(
            count_kind(&rows, rank, OmpKind::Parallel),
            OMP_REGIONS,
            "rank {rank}"
        );
    }
}

#[test]
fn mpich_program_needs_the_mpich_build_of_the_collector() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpich(tmp.path(), "mpich_app", MPI_SRC);
    let mpich_lib = mpich_collector();
    let dir = tmp.path().join("trace");
    let mut cmd = hyscope();
    cmd.args(["record", "-o"])
        .arg(&dir)
        .args(["--", "mpiexec.mpich", "-n", "2"])
        .arg(&exe);
    let out = hyscope_testkit::output_within(&mut cmd, hyscope_testkit::LAUNCH_LIMIT);
    let err = stderr(&out);
    if mpich_lib.is_file() {
        // scripts/build-mpich.sh built it: the program runs under it and its
        // MPI calls are recorded per rank (the Open MPI build would refuse them).
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(!err.contains("built for"), "{err}");
        // sum over 2 ranks of 2 regions x (1 + 2)
        assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 12\n");
        let trace = Trace::open(&dir).unwrap();
        assert_eq!(trace.ranks(), vec![0, 1]);
        assert_eq!(trace.manifest.mpi.as_ref().unwrap().flavour, "mpich");
        let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
        for rank in [0, 1] {
            assert_mpi_src_calls(&mpi, rank);
            let isend = mpi
                .iter()
                .find(|(r, m)| *r == rank && m.call == mpi_call::MPI_Isend)
                .unwrap();
            assert_eq!(isend.1.peer, (rank as i32 + 1) % 2);
            assert_eq!(isend.1.bytes_sent, 8);
        }
    } else {
        // Refused before anything runs, with the reason.
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("no MPICH build of the collector"), "{err}");
        assert!(!dir.exists());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    }
}
