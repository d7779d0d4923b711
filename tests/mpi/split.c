/* MPI_Comm_split by color = rank % 2 (key = rank), then in each half a ring of
 * one MPI_Send of 8 ints to the next local rank, a Bcast from local root 0,
 * a Comm_dup of the half, a Barrier on the dup, and Comm_free of both. */
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hr, hn, buf[8] = {0};
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    if (hn > 1) {
        MPI_Request q;
        MPI_Irecv(buf, 8, MPI_INT, MPI_ANY_SOURCE, 5, half, &q);
        MPI_Send(buf, 8, MPI_INT, (hr + 1) % hn, 5, half);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    MPI_Bcast(buf, 8, MPI_INT, 0, half);
    MPI_Comm_dup(half, &dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
