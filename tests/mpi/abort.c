/* Rank 1 sends 2 messages of 4 ints to rank 0, waits for an ack, then calls
 * MPI_Abort(…, 7); rank 0 then blocks forever in MPI_Recv and is killed. */
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, buf[4] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        MPI_Send(buf, 4, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Send(buf, 4, MPI_INT, 0, 2, MPI_COMM_WORLD);
        MPI_Recv(buf, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Abort(MPI_COMM_WORLD, 7);
    } else if (rank == 0) {
        MPI_Recv(buf, 4, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(buf, 4, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
        MPI_Recv(buf, 4, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* never matched */
    }
    MPI_Finalize();
    return 0;
}
