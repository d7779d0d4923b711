/* The smallest hybrid job: MPI_Init, one parallel region, a barrier,
 * MPI_Finalize. What a recorded run of it costs beyond the plain run is
 * the collector's fixed cost (benchmarks/fixed-cost.sh). An optional
 * argument sleeps that many milliseconds after the region: the application's
 * own time, during which work the collector does in the background is hidden. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  double s = 0;
#pragma omp parallel reduction(+ : s)
  s += omp_get_thread_num();
  if (argc > 1) {
    long ms = atol(argv[1]);
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return s < 0;
}
