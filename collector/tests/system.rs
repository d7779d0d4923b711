//! Every system test of the collector, in one test binary: one link and one
//! executable instead of one per file keeps the build small enough for a CI
//! machine with little disk. Each module is one file of tests; run one with
//! `cargo test -p <crate> --test system <module>::`.

mod mpi_common;

mod mpi_abort;
mod mpi_collectives;
mod mpi_empty_completions;
mod mpi_fortran;
mod mpi_hybrid;
mod mpi_keep_loaded;
mod mpi_nonblocking;
mod mpi_request_stress;
mod mpi_ring;
mod mpi_sendrecv;
mod mpi_split;
mod mpi_staggered;
mod mpi_threads;
mod mpich_ring;
mod mpich_same_as_openmpi;
mod omp;
mod samplers_e2e;
mod samplers_memory;
mod samplers_rapl;
mod samplers_rdma;
