/* Every blocking and nonblocking collective once on MPI_COMM_WORLD, with
 * C = 10 ints per block and root 0 where rooted. */
#include <mpi.h>
#include <stdlib.h>
#define C 10
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *s = calloc(C * n, sizeof(int)), *r = calloc(C * n, sizeof(int));
    int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int));
    MPI_Datatype *types = malloc(n * sizeof(MPI_Datatype));
    for (int i = 0; i < n; i++) { counts[i] = C; displs[i] = i * C; types[i] = MPI_INT; }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(s, C, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Reduce(s, r, C, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(s, C, MPI_INT, r, C, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gatherv(s, C, MPI_INT, r, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatter(s, C, MPI_INT, r, C, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(s, counts, displs, MPI_INT, r, C, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allgather(s, C, MPI_INT, r, C, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgatherv(s, C, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(s, C, MPI_INT, r, C, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD);
    int *bd = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) bd[i] = i * C * (int)sizeof(int);
    MPI_Alltoallw(s, counts, bd, types, r, counts, bd, types, MPI_COMM_WORLD);
    MPI_Reduce_scatter(s, r, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Request q[17];
    MPI_Ibarrier(MPI_COMM_WORLD, &q[0]);
    MPI_Waitall(1, q, MPI_STATUSES_IGNORE);
    MPI_Ibcast(s, C, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Ireduce(s, r, C, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Iallreduce(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Igather(s, C, MPI_INT, r, C, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Igatherv(s, C, MPI_INT, r, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Iscatter(s, C, MPI_INT, r, C, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Iscatterv(s, counts, displs, MPI_INT, r, C, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Iallgather(s, C, MPI_INT, r, C, MPI_INT, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Iallgatherv(s, C, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Ialltoall(s, C, MPI_INT, r, C, MPI_INT, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Ialltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Ialltoallw(s, counts, bd, types, r, counts, bd, types, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Ireduce_scatter(s, r, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Ireduce_scatter_block(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Iscan(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Iexscan(s, r, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
