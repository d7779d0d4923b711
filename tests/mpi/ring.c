/* Ring of blocking sends with known sizes: rank r sends ROUNDS messages of
 * (r+1)*100 ints to (r+1)%n with tag r and receives from (r-1+n)%n. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define ROUNDS 3
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    int *out = calloc((rank + 1) * 100, sizeof(int));
    int *in = calloc((prev + 1) * 100, sizeof(int));
    for (int k = 0; k < ROUNDS; k++) {
        MPI_Status st;
        if (rank % 2 == 0) {
            MPI_Send(out, (rank + 1) * 100, MPI_INT, next, rank, MPI_COMM_WORLD);
            MPI_Recv(in, (prev + 1) * 100, MPI_INT, MPI_ANY_SOURCE, prev, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(in, (prev + 1) * 100, MPI_INT, prev, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(out, (rank + 1) * 100, MPI_INT, next, rank, MPI_COMM_WORLD);
        }
    }
    free(out);
    free(in);
    MPI_Finalize();
    if (rank == 0) {
        /* A rank that exits non-zero makes mpirun kill the others at once,
         * also while they write the few events recorded after MPI_Finalize's
         * last collective (the MPI_Finalize call itself): give them time, the
         * tests check every rank's MPI_Finalize. (Declared here, not included,
         * so that the MPI_Send lines the tests check stay where they are.) */
        extern int usleep(unsigned int);
        usleep(1000000);
    }
    return rank == 0 ? 3 : 0; /* a known exit code, to check it is preserved */
}
