/* A phase and a parallel region run a given number of times, each instance
 * as long whatever the count: the known answer of the comparison's rows per
 * instance (`viewer/tests/compare_per_instance.rs`).
 *
 * `per_instance N` (N a multiple of 4), on every rank: a first parallel
 * region that starts the team's threads, then N times:
 *   MPI_Pcontrol(2);   -> begins the phase "Pcontrol 2"
 *   a parallel region of 2 threads whose static loop of 2 iterations
 *   sleeps 10 * (k % 4) + 2 ms on each thread (2, 12, 22, 32 ms: 17 ms on
 *   average over any 4);
 *   MPI_Barrier;       -> the MPI time inside the phase
 *   MPI_Pcontrol(1);   -> ends it
 * So on 2 ranks the phase and the second region have 2 N instances (N on
 * each rank), each about 17 ms long on average whatever N: 3 N is three
 * times the instances and the time, each instance as long. Prints the
 * instances it ran. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void msleep(double ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000 * (long)(ms / 1000)) * 1e6)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = argc > 1 ? atoi(argv[1]) : 8;
    int started = 0;
#pragma omp parallel num_threads(2) reduction(+ : started)
    started += 1;
    for (int k = 0; k < n; k++) {
        double d = 10.0 * (k % 4) + 2.0;
        MPI_Pcontrol(2);
#pragma omp parallel num_threads(2)
        {
#pragma omp for schedule(static)
            for (int i = 0; i < 2; i++) msleep(d);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Pcontrol(1);
    }
    if (rank == 0) printf("instances per rank: %d phase, %d region\n", n, n);
    MPI_Finalize();
    return 0;
}
