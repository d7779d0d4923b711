/* Late sender through each way of writing a 2-rank exchange, with a known
 * answer: rank 0 is late by a delay it measures itself.
 *
 * Usage: late_sender VARIANT [DELAY_MS]
 *   send      MPI_Send / MPI_Recv (rank 0 sends then receives, rank 1 the reverse)
 *   sendrecv  MPI_Sendrecv
 *   replace   MPI_Sendrecv_replace
 *   isend     MPI_Irecv + MPI_Isend + MPI_Waitall
 *
 * EXCHANGES times: both ranks leave a barrier; rank 0 sleeps DELAY_MS
 * (default 10) and adds the time it measured with MPI_Wtime to its total;
 * then the ranks exchange 8 doubles (eager) on MPI_COMM_WORLD with tag 3.
 * Rank 1's receive therefore waits for rank 0's send by that delay each
 * time; rank 0's receives find rank 1's sends already started. Rank 0 prints
 * `late_sender_total_s <seconds>`: the late-sender time a tool must report. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXCHANGES 20
#define N 8
#define TAG 3

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *variant = argc > 1 ? argv[1] : "send";
    double delay_ms = argc > 2 ? atof(argv[2]) : 10.0;
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "late_sender: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int other = 1 - rank;
    double out[N], in[N], total = 0;
    for (int i = 0; i < N; i++) out[i] = rank * 100 + i;
    struct timespec d = {(time_t)(delay_ms / 1000), (long)((delay_ms - 1000 * (long)(delay_ms / 1000)) * 1e6)};
    for (int x = 0; x < EXCHANGES; x++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double t0 = MPI_Wtime();
            nanosleep(&d, NULL);
            total += MPI_Wtime() - t0;
        }
        if (!strcmp(variant, "send")) {
            if (rank == 0) {
                MPI_Send(out, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD);
                MPI_Recv(in, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(in, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(out, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD);
            }
        } else if (!strcmp(variant, "sendrecv")) {
            /* The receive names a wildcard source and tag: the trace has
             * them from the status. */
            MPI_Sendrecv(out, N, MPI_DOUBLE, other, TAG, in, N, MPI_DOUBLE, MPI_ANY_SOURCE,
                         MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (!strcmp(variant, "replace")) {
            memcpy(in, out, sizeof in);
            MPI_Sendrecv_replace(in, N, MPI_DOUBLE, other, TAG, other, TAG, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE);
        } else if (!strcmp(variant, "isend")) {
            MPI_Request q[2];
            MPI_Irecv(in, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(out, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        } else {
            if (rank == 0) fprintf(stderr, "late_sender: unknown variant %s\n", variant);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (in[0] != other * 100) {
            fprintf(stderr, "rank %d: wrong data %g\n", rank, in[0]);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    if (rank == 0) printf("late_sender_total_s %.9f\n", total);
    MPI_Finalize();
    return 0;
}
