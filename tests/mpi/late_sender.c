/* Late sender through each way of writing a 2-rank exchange, with a known
 * answer: rank 0 is late, and the program measures by how much.
 *
 * Usage: late_sender VARIANT [DELAY_MS]
 *   send      MPI_Send / MPI_Recv (rank 0 sends then receives, rank 1 the reverse)
 *   sendrecv  MPI_Sendrecv (the receive names MPI_ANY_SOURCE and MPI_ANY_TAG)
 *   replace   MPI_Sendrecv_replace
 *   isend     MPI_Irecv + MPI_Isend + MPI_Waitall
 *
 * EXCHANGES times: both ranks leave a barrier; rank 0 sleeps DELAY_MS
 * (default 10); then the ranks exchange 8 doubles (eager) on MPI_COMM_WORLD
 * with tag 3. Each rank reads CLOCK_MONOTONIC (one clock for every process
 * of a host) right before the call that starts its send and right before
 * the call that waits for its receive (the Recv, Sendrecv or Waitall).
 * A receive waits for a late sender from the second to the first, when
 * positive (Scalasca's definition); rank 0 gathers both ranks' times and
 * prints `late_sender_total_s <seconds>`, the total over both ranks: mostly
 * rank 1 waiting for rank 0's sleep, plus whatever the scheduler adds on a
 * busy machine. `slept_s` is what rank 0's sleeps took. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXCHANGES 20
#define N 8
#define TAG 3

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

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
    double out[N], in[N], slept = 0;
    /* Per exchange: when this rank started its send, and its receive's wait. */
    double send_at[EXCHANGES], wait_at[EXCHANGES];
    for (int i = 0; i < N; i++) out[i] = rank * 100 + i;
    struct timespec d = {(time_t)(delay_ms / 1000), (long)((delay_ms - 1000 * (long)(delay_ms / 1000)) * 1e6)};
    for (int x = 0; x < EXCHANGES; x++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double t0 = now();
            nanosleep(&d, NULL);
            slept += now() - t0;
        }
        if (!strcmp(variant, "send")) {
            if (rank == 0) {
                send_at[x] = now();
                MPI_Send(out, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD);
                wait_at[x] = now();
                MPI_Recv(in, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                wait_at[x] = now();
                MPI_Recv(in, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                send_at[x] = now();
                MPI_Send(out, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD);
            }
        } else if (!strcmp(variant, "sendrecv")) {
            send_at[x] = wait_at[x] = now();
            MPI_Sendrecv(out, N, MPI_DOUBLE, other, TAG, in, N, MPI_DOUBLE, MPI_ANY_SOURCE,
                         MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (!strcmp(variant, "replace")) {
            memcpy(in, out, sizeof in);
            send_at[x] = wait_at[x] = now();
            MPI_Sendrecv_replace(in, N, MPI_DOUBLE, other, TAG, other, TAG, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE);
        } else if (!strcmp(variant, "isend")) {
            MPI_Request q[2];
            MPI_Irecv(in, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, &q[0]);
            send_at[x] = now();
            MPI_Isend(out, N, MPI_DOUBLE, other, TAG, MPI_COMM_WORLD, &q[1]);
            wait_at[x] = now();
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
    /* Collectives only: no message of the measurement's own. */
    double sends[2 * EXCHANGES], waits[2 * EXCHANGES];
    MPI_Gather(send_at, EXCHANGES, MPI_DOUBLE, sends, EXCHANGES, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(wait_at, EXCHANGES, MPI_DOUBLE, waits, EXCHANGES, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double total = 0;
        for (int r = 0; r < 2; r++)
            for (int x = 0; x < EXCHANGES; x++) {
                double late = sends[(1 - r) * EXCHANGES + x] - waits[r * EXCHANGES + x];
                if (late > 0) total += late;
            }
        printf("slept_s %.9f\n", slept);
        printf("late_sender_total_s %.9f\n", total);
    }
    MPI_Finalize();
    return 0;
}
