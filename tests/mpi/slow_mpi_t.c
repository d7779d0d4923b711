/* An MPI_T_init_thread that sleeps before it initialises MPI_T: as a
 * component stuck in its constructor would (collector/tests/mpi_keep_loaded.rs).
 * Preloaded before the collector, it is the PMPI_T_init_thread the collector
 * calls; SLOW_MPI_T_S says how many seconds each call sleeps (none unset). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

int PMPI_T_init_thread(int required, int *provided) {
    static int (*real)(int, int *);
    if (!real)
        real = (int (*)(int, int *))dlsym(RTLD_NEXT, "PMPI_T_init_thread");
    const char *s = getenv("SLOW_MPI_T_S");
    if (s)
        sleep((unsigned)atoi(s));
    return real ? real(required, provided) : 1;
}
