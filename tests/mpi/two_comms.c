/* Two communicators carrying messages with the same tag between the same
 * pair of ranks, with known counts (2 ranks).
 *
 * `split` is MPI_Comm_split of MPI_COMM_WORLD with one color and key -rank:
 * both ranks, in reverse order (world rank 1 is rank 0 of `split`).
 * Rank 0 sends to rank 1, tag 5, interleaved: WORLD_MSGS messages of 4 ints
 * on MPI_COMM_WORLD and SPLIT_MSGS of 16 ints on `split`; rank 1 receives all
 * of `split`'s first, then world's (the envelopes differ by communicator
 * only, so a matcher that ignores it pairs them wrongly). Then
 * SPLIT_ALLREDUCES MPI_Allreduce on `split`, one MPI_Barrier on world. */
#include <mpi.h>
#include <stdio.h>

#define WORLD_MSGS 3
#define SPLIT_MSGS 5
#define SPLIT_ALLREDUCES 2
#define TAG 5

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "two_comms: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &split);
    int srank;
    MPI_Comm_rank(split, &srank);
    int small[4] = {1, 2, 3, 4}, big[16] = {0};
    /* world, split, world, split, split, world, split, split */
    const int on_split[WORLD_MSGS + SPLIT_MSGS] = {0, 1, 0, 1, 1, 0, 1, 1};
    if (rank == 0) {
        for (int i = 0; i < WORLD_MSGS + SPLIT_MSGS; i++) {
            if (on_split[i])
                MPI_Send(big, 16, MPI_INT, 0 /* world rank 1 in split */, TAG, split);
            else
                MPI_Send(small, 4, MPI_INT, 1, TAG, MPI_COMM_WORLD);
        }
    } else {
        for (int i = 0; i < SPLIT_MSGS; i++)
            MPI_Recv(big, 16, MPI_INT, 1 /* world rank 0 in split */, TAG, split, MPI_STATUS_IGNORE);
        for (int i = 0; i < WORLD_MSGS; i++)
            MPI_Recv(small, 4, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double x = srank, sum = 0;
    for (int i = 0; i < SPLIT_ALLREDUCES; i++)
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, split);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&split);
    if (rank == 0) printf("sum %g\n", sum);
    MPI_Finalize();
    return 0;
}
