/* MPI inside and outside an OpenMP parallel region (clang + libomp, OMPT):
 * each rank sends 1 message to its partner from the master thread of a
 * 2-thread parallel region and 1 outside any region; it receives both outside. */
#include <mpi.h>
#include <omp.h>
int main(int argc, char **argv) {
    int provided, rank, b[2] = {0};
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int partner = rank ^ 1;
#pragma omp parallel num_threads(2)
    {
#pragma omp master
        MPI_Send(b, 1, MPI_INT, partner, 1, MPI_COMM_WORLD);
    }
    MPI_Send(b, 2, MPI_INT, partner, 2, MPI_COMM_WORLD);
    MPI_Recv(b, 1, MPI_INT, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(b, 2, MPI_INT, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
