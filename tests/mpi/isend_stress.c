/* MPI_THREAD_MULTIPLE request stress: T = 4 threads per rank, each posting
 * N MPI_Irecv and N MPI_Isend of one int with its partner rank (rank ^ 1),
 * tag = thread, all pending at once, then one MPI_Waitall over its 2N
 * requests. Every rank holds 2 * T * N = 16000 requests pending at the peak;
 * Open MPI completes small sends inline and hands back one shared request
 * handle for them. The program checks every value it receives and prints
 * what it did. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define T 4
#define N 2000
static int partner, rank, errors[T];
static void *work(void *arg) {
    int t = (int)(long)arg;
    int *out = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
    MPI_Request *q = malloc(2 * N * sizeof(MPI_Request));
    for (int i = 0; i < N; i++) {
        in[i] = -1;
        MPI_Irecv(&in[i], 1, MPI_INT, partner, t, MPI_COMM_WORLD, &q[i]);
    }
    for (int i = 0; i < N; i++) {
        out[i] = rank * 1000000 + t * 10000 + i;
        MPI_Isend(&out[i], 1, MPI_INT, partner, t, MPI_COMM_WORLD, &q[N + i]);
    }
    MPI_Waitall(2 * N, q, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++)
        if (in[i] != partner * 1000000 + t * 10000 + i) errors[t]++;
    free(out);
    free(in);
    free(q);
    return NULL;
}
int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) { fprintf(stderr, "no MPI_THREAD_MULTIPLE\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    partner = rank ^ 1;
    pthread_t th[T];
    for (long t = 0; t < T; t++) pthread_create(&th[t], NULL, work, (void *)t);
    int bad = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        bad += errors[t];
    }
    printf("rank %d: %d threads x %d isend+irecv pending, %d wrong values\n", rank, T, N, bad);
    MPI_Finalize();
    return bad != 0;
}
