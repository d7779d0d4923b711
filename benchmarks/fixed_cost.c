/* The smallest hybrid job: MPI_Init, one parallel region, a barrier,
 * MPI_Finalize. What a recorded run of it costs beyond the plain run is
 * the collector's fixed cost (benchmarks/fixed-cost.sh). */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  double s = 0;
#pragma omp parallel reduction(+ : s)
  s += omp_get_thread_num();
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return s < 0;
}
