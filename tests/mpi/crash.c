/* A job whose rank 1 ends badly, with known counts.
 *
 * crash MODE: every rank runs ITERS iterations of one parallel region of 2
 * threads and one MPI_Allreduce, then prints what it did
 * ("rank R regions N allreduce N"). Rank 1 then waits 1.5 s (so everything it
 * recorded is older than a second) and ends by MODE:
 *   abort  MPI_Abort(MPI_COMM_WORLD, 3)
 *   segv   a write through a null pointer (SIGSEGV)
 *   kill   SIGKILL to itself (no handler runs: as `kill -9`)
 *   none   it does not: both ranks finish normally.
 * Rank 0 waits in MPI_Barrier for rank 1 (the launcher then ends it). */
#include <mpi.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ITERS 100

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "none";
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double s = 0;
    int regions = 0, reduces = 0;
    for (int i = 0; i < ITERS; i++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
        regions++;
        double in = s, out = 0;
        MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        reduces++;
    }
    printf("rank %d regions %d allreduce %d\n", rank, regions, reduces);
    fflush(stdout);
    if (rank == 1 && strcmp(mode, "none") != 0) {
        struct timespec wait = {1, 500000000};
        nanosleep(&wait, NULL);
        if (!strcmp(mode, "abort"))
            MPI_Abort(MPI_COMM_WORLD, 3);
        if (!strcmp(mode, "segv")) {
            volatile int *nowhere = NULL;
            *nowhere = 1;
        }
        if (!strcmp(mode, "kill"))
            raise(SIGKILL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
