/* Three 2-thread parallel regions, then MPI_Finalize and _exit(0): no atexit
 * handler and no OpenMP shutdown runs, so the trace holds only what the
 * collector wrote inside MPI_Finalize. The primary thread's intervals of the
 * last region (its join barrier, implicit task and the region itself) must be
 * among them: 3 regions, 3 primary implicit tasks, 3 join barriers. */
#include <mpi.h>
#include <unistd.h>
static volatile double sink;
int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    for (int r = 0; r < 3; r++) {
#pragma omp parallel num_threads(2)
        sink += 1.0;
    }
    MPI_Finalize();
    _exit(0);
}
