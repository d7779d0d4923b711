/* Three 2-thread parallel regions, then the program changes its working
 * directory to argv[1] and starts a shell (`system`), which inherits
 * LD_PRELOAD, before MPI_Finalize. A trace directory named by a relative
 * HYSCOPE_OUTPUT must stay where the job started: every rank's 3 regions in
 * it, nothing written under argv[1]. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static volatile double sink;
int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    for (int r = 0; r < 3; r++) {
#pragma omp parallel num_threads(2)
        sink += 1.0;
    }
    if (argc < 2 || chdir(argv[1]) != 0) {
        perror("chdir");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    int rc = system("true");
    printf("system=%d\n", rc);
    MPI_Finalize();
    return 0;
}
