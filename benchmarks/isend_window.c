/* Windows of small nonblocking sends, as osu_bw posts them: rank 0 sends a
 * window of 64 one-byte MPI_Isend and completes them with one MPI_Waitall,
 * rank 1 receives them with 64 MPI_Irecv and a MPI_Waitall, then acknowledges
 * the window. Both MPI libraries complete such sends inline and hand back one
 * shared request handle for all of them. Prints the time per message.
 * usage: mpirun -np 2 isend_window [windows]   (default 20000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define WINDOW 64
int main(int argc, char **argv) {
    int windows = argc > 1 ? atoi(argv[1]) : 20000, rank;
    char buf[WINDOW], ack[4] = {0};
    MPI_Request q[WINDOW];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double t0 = MPI_Wtime();
    for (int i = 0; i < windows; i++) {
        if (rank == 0) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Isend(&buf[j], 1, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &q[j]);
            MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Irecv(&buf[j], 1, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &q[j]);
            MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("ns_per_message %.1f\n", t / windows / WINDOW * 1e9);
    MPI_Finalize();
    return 0;
}
