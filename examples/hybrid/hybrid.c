/* hybrid.c: the bundled hyscope example, a small MPI+OpenMP program with the
 * problems hyscope exists to find. Each phase is a separate function so the
 * report can name it by file:line.
 *
 *   1. triangular_static   fine-grain loop, cost of iteration i grows with i,
 *                          under schedule(static): the last thread does ~3/4 of the work.
 *   2. triangular_runtime  the same loop under schedule(runtime), so
 *                          `hyscope tune` can set OMP_SCHEDULE and re-run.
 *   3. barrier_heavy       many tiny, unequal steps each ending in an explicit barrier.
 *   4. master_allreduce    MPI_Allreduce on the master thread only, the other
 *                          threads idle at the barrier (funneled style).
 *   5. ring_exchange       neighbour exchange: Isend/Irecv to rank±1, Waitall.
 *   6. alltoall            one MPI_Alltoall.
 *
 * Build: OMPI_CC=clang-19 mpicc -fopenmp -g -O1 -Wl,-rpath,/usr/lib/llvm-19/lib hybrid.c -o hybrid -lm
 * Run:   mpirun -np 2 -x OMP_NUM_THREADS=2 ./hybrid      (~1-3 s)
 * Options: hybrid [scale]   (scale multiplies the work; default 1)
 */
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4000          /* iterations of the triangular loops */
#define STEPS 2         /* outer time steps */
#define BARRIER_STEPS 1000
#define RING_DOUBLES 4096
#define A2A_DOUBLES 1024

static double work(long n, double x) {
    /* n units of dependent floating-point work; the compiler cannot drop it. */
    for (long k = 0; k < n; k++) x = x * 1.0000001 + 1e-9;
    return x;
}

static double triangular_static(int scale) {
    double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int i = 0; i < N; i++) sum += work((long)i * 8 * scale, 1.0);
    return sum;
}

static double triangular_runtime(int scale) {
    double sum = 0.0;
#pragma omp parallel for schedule(runtime) reduction(+ : sum)
    for (int i = 0; i < N; i++) sum += work((long)i * 8 * scale, 1.0);
    return sum;
}

static double barrier_heavy(int scale) {
    static double cell[64];
    double total = 0.0;
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        for (int s = 0; s < BARRIER_STEPS; s++) {
            /* Thread t does (t + 1) units per step: the others wait at every barrier. */
            cell[t] = work(20000L * (t + 1) * scale, cell[t] + s);
#pragma omp barrier
        }
#pragma omp single
        for (int k = 0; k < omp_get_num_threads(); k++) total += cell[k];
    }
    return total;
}

static double master_allreduce(int scale) {
    double local = 0.0, global = 0.0;
#pragma omp parallel
    {
#pragma omp master
        {
            /* The master computes and communicates while the others wait. */
            local = work(300000L * scale, 2.0);
            MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
#pragma omp barrier
    }
    return global;
}

static double ring_exchange(int rank, int size) {
    static double out[RING_DOUBLES], in_left[RING_DOUBLES], in_right[RING_DOUBLES];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request req[4];
    for (int i = 0; i < RING_DOUBLES; i++) out[i] = rank + i * 1e-6;
    MPI_Irecv(in_left, RING_DOUBLES, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in_right, RING_DOUBLES, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(out, RING_DOUBLES, MPI_DOUBLE, right, 10, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(out, RING_DOUBLES, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    return in_left[0] + in_right[0];
}

static double alltoall(int rank, int size) {
    double *send = malloc(sizeof(double) * A2A_DOUBLES * size);
    double *recv = malloc(sizeof(double) * A2A_DOUBLES * size);
    for (int i = 0; i < A2A_DOUBLES * size; i++) send[i] = rank;
    MPI_Alltoall(send, A2A_DOUBLES, MPI_DOUBLE, recv, A2A_DOUBLES, MPI_DOUBLE, MPI_COMM_WORLD);
    double s = recv[A2A_DOUBLES * size - 1];
    free(send);
    free(recv);
    return s;
}

/* The phases the report shows, annotated either way; without hyscope the
 * calls do nothing and there is nothing to link:
 * - include/hyscope.h (the default build, `make`);
 * - NVTX (`make hybrid-nvtx`, -DHYBRID_NVTX): an NVTX-annotated program
 *   that `hyscope record` reads through NVTX_INJECTION64_PATH. NVTX has no
 *   time steps: the report counts a repeated phase's occurrences instead. */
#ifdef HYBRID_NVTX
#include <nvtx3/nvToolsExt.h>
#define hyscope_phase_begin(name) nvtxRangePushA(name)
#define hyscope_phase_end(name) nvtxRangePop()
#define hyscope_iteration(step) ((void)(step))
#else
#include <hyscope.h>
#endif

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1) scale = 1;

    double t0 = MPI_Wtime(), check = 0.0;
    hyscope_phase_begin("solver");
    for (int step = 0; step < STEPS; step++) {
        hyscope_iteration(step);
        hyscope_phase_begin("step");
        check += triangular_static(scale);
        check += triangular_runtime(scale);
        check += barrier_heavy(scale);
        check += master_allreduce(scale);
        hyscope_phase_begin("halo");
        check += ring_exchange(rank, size);
        hyscope_phase_end("halo");
        hyscope_phase_end("step");
    }
    hyscope_phase_end("solver");
    hyscope_phase_begin("alltoall");
    check += alltoall(rank, size);
    hyscope_phase_end("alltoall");
    double t = MPI_Wtime() - t0;

    if (rank == 0)
        printf("hybrid: %d ranks x %d threads, %.3f s (check %.6g)\n", size,
               omp_get_max_threads(), t, check);
    MPI_Finalize();
    return 0;
}
