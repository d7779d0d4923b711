/* Per-call cost of the wrappers: (1) 0-byte ping-pong between ranks 0 and 1,
 * (2) a tight loop of MPI_Iprobe that finds nothing (a cheap wrapped call).
 * Prints ns per one-way message and ns per Iprobe from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, flag;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    char b = 0;
    for (int rep = 0; rep < 2; rep++) { /* rep 0 warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        double pp = (MPI_Wtime() - t0) / (2.0 * n) * 1e9;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        double ip = (MPI_Wtime() - t0) / n * 1e9;
        if (rank == 0 && rep == 1) printf("pingpong_oneway_ns %.1f iprobe_ns %.1f\n", pp, ip);
    }
    MPI_Finalize();
    return 0;
}
