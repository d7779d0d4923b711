/* MPI_THREAD_MULTIPLE: T = 4 threads per rank, each doing K exchanges of
 * (t+1) ints with its partner rank (rank ^ 1), tag = thread: Isend + Recv + Wait. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#define T 4
#define K 50
static int partner;
static void *work(void *arg) {
    int t = (int)(long)arg, out[T] = {0}, in[T];
    for (int k = 0; k < K; k++) {
        MPI_Request q;
        MPI_Isend(out, t + 1, MPI_INT, partner, t, MPI_COMM_WORLD, &q);
        MPI_Recv(in, t + 1, MPI_INT, partner, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    return NULL;
}
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) { fprintf(stderr, "no MPI_THREAD_MULTIPLE\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    partner = rank ^ 1;
    pthread_t th[T];
    for (long t = 0; t < T; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    MPI_Finalize();
    return 0;
}
