/* Every kind of point-to-point message the aligned layer pairs, between 2
 * ranks with 2 OpenMP threads each: blocking Send/Recv, Isend/Irecv with an
 * ANY_SOURCE receive on a split communicator carrying the same tag between
 * the same pair, persistent requests, Mprobe/Mrecv and Probe/Recv with
 * ANY_SOURCE, and an Allreduce on each communicator. Rank 0 prints the
 * number of messages of the job and how many went over the split
 * communicator. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>

#define ITERATIONS 4

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int other = 1 - rank;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &sub);
    double s = 0, sum = 0, buf[4] = {1, 2, 3, 4}, in[4];
    int messages = 0, on_sub = 0;
    for (int it = 0; it < ITERATIONS; it++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
        /* Blocking, tag 1 on MPI_COMM_WORLD: 0 → 1, then 1 → 0. */
        if (rank == 0) {
            MPI_Send(buf, 4, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(in, 4, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, 4, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 4, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
        }
        messages += 2;
        /* The same tag between the same pair on the split communicator,
         * nonblocking, the receive from ANY_SOURCE. */
        MPI_Request req[2];
        MPI_Irecv(in, 4, MPI_DOUBLE, MPI_ANY_SOURCE, 1, sub, &req[0]);
        MPI_Isend(buf, 4, MPI_DOUBLE, other, 1, sub, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        messages += 2;
        on_sub += 2;
        /* Persistent requests, tag 3. */
        MPI_Request p[2];
        MPI_Recv_init(in, 2, MPI_DOUBLE, other, 3, MPI_COMM_WORLD, &p[0]);
        MPI_Send_init(buf, 2, MPI_DOUBLE, other, 3, MPI_COMM_WORLD, &p[1]);
        MPI_Start(&p[0]);
        MPI_Start(&p[1]);
        MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
        MPI_Request_free(&p[0]);
        MPI_Request_free(&p[1]);
        messages += 2;
        /* Mprobe/Mrecv from ANY_SOURCE, tag 4: 1 → 0. */
        if (rank == 1) {
            MPI_Send(buf, 1, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD);
        } else {
            MPI_Message m;
            MPI_Status st;
            MPI_Mprobe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &m, &st);
            MPI_Mrecv(in, 1, MPI_DOUBLE, &m, MPI_STATUS_IGNORE);
        }
        messages += 1;
        /* Probe then Recv from the probed source, tag 5: 0 → 1. */
        if (rank == 0) {
            MPI_Send(buf, 3, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            MPI_Probe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
            MPI_Recv(in, 3, MPI_DOUBLE, st.MPI_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        messages += 1;
        MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, sub);
        MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("messages %d on_sub %d sum %g\n", messages, on_sub, sum);
    MPI_Comm_free(&sub);
    MPI_Finalize();
    return 0;
}
