/* Per-call cost of the wrappers, side by side in one run: the same loops
 * through the wrapped MPI_* symbols and directly through PMPI_* (which the
 * collector does not intercept), alternating, REPS times; the minimum of each
 * is printed by rank 0.
 *  - iprobe: a tight loop of MPI_Iprobe that finds nothing (a cheap call);
 *  - pingpong: 0-byte ping-pong between ranks 0 and 1 (needs 2 ranks);
 *  - exchange: ranks 0 and 1 swap 0 bytes with MPI_Irecv + MPI_Isend +
 *    MPI_Waitall (needs 2 ranks): the request table's insert and take;
 *  - iprobe_short: SHORT_REPS alternating loops of n/50 Iprobes each; the
 *    minimum is a rep the writer thread (which encodes the rows on another
 *    core, or on this one) did not disturb: the cost on the calling thread;
 *    the median includes that interference.
 * Without the collector preloaded both columns measure the bare MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define REPS 7
#define SHORT_REPS 101
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double iprobe_loop(int n, int wrapped) {
    int flag;
    double t0 = MPI_Wtime();
    if (wrapped)
        for (int i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    else
        for (int i = 0; i < n; i++) PMPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return (MPI_Wtime() - t0) / n * 1e9;
}
static double pingpong_loop(int n, int rank, int wrapped) {
    char b = 0;
    int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm) = wrapped ? MPI_Send : PMPI_Send;
    int (*recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *) = wrapped ? MPI_Recv : PMPI_Recv;
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            send(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            recv(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            recv(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            send(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * n) * 1e9; /* one way = one send + one recv per rank */
}
static double exchange_loop(int n, int rank, int wrapped) {
    char in = 0, out = 0;
    MPI_Request q[2];
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank < 2)
        for (int i = 0; i < n; i++) {
            if (wrapped) {
                MPI_Irecv(&in, 0, MPI_BYTE, 1 - rank, 1, MPI_COMM_WORLD, &q[0]);
                MPI_Isend(&out, 0, MPI_BYTE, 1 - rank, 1, MPI_COMM_WORLD, &q[1]);
                MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
            } else {
                PMPI_Irecv(&in, 0, MPI_BYTE, 1 - rank, 1, MPI_COMM_WORLD, &q[0]);
                PMPI_Isend(&out, 0, MPI_BYTE, 1 - rank, 1, MPI_COMM_WORLD, &q[1]);
                PMPI_Waitall(2, q, MPI_STATUSES_IGNORE);
            }
        }
    return (MPI_Wtime() - t0) / n * 1e9; /* per exchange: 3 calls, 2 completions */
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    double ip[2] = {1e30, 1e30}, pp[2] = {1e30, 1e30}, ex[2] = {1e30, 1e30};
    for (int rep = 0; rep < REPS; rep++) {
        for (int w = 0; w < 2; w++) {
            double t = iprobe_loop(n, w);
            if (t < ip[w]) ip[w] = t;
            if (size >= 2) {
                t = pingpong_loop(n / 4, rank, w);
                if (t < pp[w]) pp[w] = t;
                t = exchange_loop(n / 4, rank, w);
                if (t < ex[w]) ex[w] = t;
            }
        }
    }
    double sp[SHORT_REPS], sw[SHORT_REPS];
    for (int rep = 0; rep < SHORT_REPS; rep++) {
        sp[rep] = iprobe_loop(n / 50, 0);
        sw[rep] = iprobe_loop(n / 50, 1);
    }
    qsort(sp, SHORT_REPS, sizeof(double), cmp_double);
    qsort(sw, SHORT_REPS, sizeof(double), cmp_double);
    if (rank == 0) {
        printf("iprobe_ns pmpi %.1f wrapped %.1f added %.1f\n", ip[0], ip[1], ip[1] - ip[0]);
        printf("iprobe_short_ns min: pmpi %.1f wrapped %.1f added %.1f; median: pmpi %.1f wrapped %.1f added %.1f\n",
               sp[0], sw[0], sw[0] - sp[0], sp[SHORT_REPS / 2], sw[SHORT_REPS / 2],
               sw[SHORT_REPS / 2] - sp[SHORT_REPS / 2]);
        if (size >= 2) {
            printf("pingpong_oneway_ns pmpi %.1f wrapped %.1f added %.1f\n", pp[0], pp[1], pp[1] - pp[0]);
            printf("exchange_ns pmpi %.1f wrapped %.1f added %.1f\n", ex[0], ex[1], ex[1] - ex[0]);
        }
    }
    MPI_Finalize();
    return 0;
}
