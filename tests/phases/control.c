/* MPI_Pcontrol levels and omp_control_tool pause/start, with known counts.
 *
 * Every rank, in order:
 *   3 parallel regions (2 threads);
 *   MPI_Pcontrol(2); 5 MPI_Barrier;   -> phase "Pcontrol 2" holds 5 barriers
 *   MPI_Pcontrol(3); 2 MPI_Barrier;   -> phase "Pcontrol 3" holds 2 barriers
 *   MPI_Pcontrol(1);                  -> no level phase from here
 *   omp_control_tool(pause): 4 parallel regions, 6 MPI_Barrier and a phase
 *     "hidden", all absent from the trace; omp_control_tool(start);
 *   1 parallel region, 1 MPI_Barrier.
 * So each rank's trace holds 4 parallel regions and 8 barriers, and one
 * "paused" phase with none inside. Prints what omp_control_tool returned
 * (0 = success with a tool, -2 = no tool) and a result line. */
#include <hyscope.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>

static double regions(int n) {
    double s = 0;
    for (int r = 0; r < n; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
    }
    return s;
}

static void barriers(int n) {
    for (int i = 0; i < n; i++)
        MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double s = regions(3);
    MPI_Pcontrol(2);
    barriers(5);
    MPI_Pcontrol(3);
    barriers(2);
    MPI_Pcontrol(1);
    int paused = omp_control_tool(omp_control_tool_pause, 0, NULL);
    s += regions(4);
    barriers(6);
    hyscope_phase_begin("hidden");
    hyscope_phase_end("hidden");
    int started = omp_control_tool(omp_control_tool_start, 0, NULL);
    s += regions(1);
    barriers(1);
    printf("control %d %d %d\n", rank, paused, started);
    printf("result %d %.1f\n", rank, s);
    MPI_Finalize();
    return 0;
}
