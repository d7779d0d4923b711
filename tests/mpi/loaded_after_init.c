/* Prints, per rank, which of libpsm2 and libpsm_infinipath are loaded right
 * after MPI_Init returns (collector/tests/mpi_keep_loaded.rs): Open MPI
 * unloads them when it closes the components it did not select, and the
 * collector keeps them loaded for MPI_T (collector/src/mpi/keep_loaded.rs). */
#define _GNU_SOURCE
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int found(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *want = data;
    return info->dlpi_name && strstr(info->dlpi_name, want) ? 1 : 0;
}

static int loaded(const char *name) {
    return dl_iterate_phdr(found, (void *)name);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d psm2 %d psm_infinipath %d\n", rank, loaded("libpsm2.so"),
           loaded("libpsm_infinipath.so"));
    MPI_Finalize();
    return 0;
}
