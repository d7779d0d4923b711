/* Ranks that finish at different times: each rank sends K messages of
 * (rank + 1) ints to rank + 1 and receives K from rank - 1 (a ring,
 * Isend + Recv + Wait), then waits a rank-dependent time before
 * MPI_Finalize (0 to 310 ms, in an order that is not the rank order), so
 * that some ranks write their trace while others still run. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#define K 200
int main(int argc, char **argv) {
    int rank, size, out[64] = {0}, in[64];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, got = 0;
    for (int k = 0; k < K; k++) {
        MPI_Request q;
        MPI_Isend(out, rank + 1, MPI_INT, next, k, MPI_COMM_WORLD, &q);
        MPI_Recv(in, prev + 1, MPI_INT, prev, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        got++;
    }
    long ms = (rank * 7 % 32) * 10;
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    printf("rank %d: sent %d received %d\n", rank, K, got);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
