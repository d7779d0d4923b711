/* A hybrid job whose MPI and OpenMP counts are known exactly at any number
 * of ranks P (the 64-rank recording test, viewer/tests/record_scale.rs):
 * every rank runs R rounds of
 *   - one parallel region of 2 threads (a `for` loop of 2 iterations);
 *   - a ring exchange: MPI_Sendrecv of (rank + 1) ints to rank + 1 from rank - 1;
 *   - one MPI_Allreduce of one double;
 * then one MPI_Bcast of 8 ints from rank 0 and one MPI_Barrier.
 * It prints each rank's received bytes and the checked sums so the test can
 * compare them with the report. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#define R 3
int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[1024] = {0}, in[1024];
    long received = 0;
    double total = 0;
    for (int r = 0; r < R; r++) {
        double s = 0;
#pragma omp parallel for num_threads(2) reduction(+ : s)
        for (int i = 0; i < 2; i++) s += omp_get_thread_num() + 1;
        MPI_Status st;
        MPI_Sendrecv(out, rank + 1, MPI_INT, next, r, in, prev + 1, MPI_INT, prev, r,
                     MPI_COMM_WORLD, &st);
        int n;
        MPI_Get_count(&st, MPI_INT, &n);
        received += n * (long)sizeof(int);
        double sum;
        MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        total += sum;
    }
    int b[8] = {rank, 1, 2, 3, 4, 5, 6, 7};
    MPI_Bcast(b, 8, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: received %ld bytes, allreduce total %g, bcast %d\n", rank, received, total,
           b[0]);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
