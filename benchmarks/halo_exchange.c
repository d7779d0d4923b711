/* A halo exchange with one neighbour, 8 fields: each iteration posts 8
 * receives, sends 8 one-byte messages and completes the 16 requests in one
 * MPI_Waitall. The sends complete inline and share one request handle (queued
 * in the collector's request table); the receives' handles are unique.
 * Callgrind, per rank: benchmarks/mpi.md, "A halo exchange". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    int peer = 1 - rank;
    char sbuf[8], rbuf[8];
    MPI_Request req[16];
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        for (int k = 0; k < 8; k++) MPI_Irecv(&rbuf[k], 1, MPI_CHAR, peer, k, MPI_COMM_WORLD, &req[k]);
        for (int k = 0; k < 8; k++) MPI_Isend(&sbuf[k], 1, MPI_CHAR, peer, k, MPI_COMM_WORLD, &req[8 + k]);
        MPI_Waitall(16, req, MPI_STATUSES_IGNORE);
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("%d iterations, %.1f ns per message\n", iters, t / iters / 16 * 1e9);
    MPI_Finalize();
    return 0;
}
