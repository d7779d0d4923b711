/* Prints, per rank, which of libpsm2 and libpsm_infinipath are loaded right
 * after MPI_Init returns (collector/tests/mpi_keep_loaded.rs): Open MPI
 * unloads them when it closes the components it did not select, and the
 * collector keeps them loaded for MPI_T (collector/src/mpi/keep_loaded.rs);
 * and whether the collector's MPI_T thread runs then (it opens MPI_T in the
 * background only where that loads them: collector/src/mpi/mpit_background.rs). */
#define _GNU_SOURCE
#include <dirent.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int found(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *want = data;
    return info->dlpi_name && strstr(info->dlpi_name, want) ? 1 : 0;
}

static int loaded(const char *name) {
    return dl_iterate_phdr(found, (void *)name);
}

/* Whether a thread of this process is named `name`. */
static int thread_named(const char *name) {
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int seen = 0;
    struct dirent *e;
    while (!seen && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        seen = strcmp(comm, name) == 0;
    }
    closedir(d);
    return seen;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int psm2 = loaded("libpsm2.so"), psm = loaded("libpsm_infinipath.so");
    /* A new thread names itself once it runs: look for 100 ms (the thread
       loading those libraries lives ≈ 0.2 s). */
    int mpit_thread = 0;
    for (int i = 0; i < 100 && mpit_thread == 0; i++) {
        mpit_thread = thread_named("hyscope-mpit");
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    printf("rank %d psm2 %d psm_infinipath %d mpit_thread %d\n", rank, psm2, psm, mpit_thread);
    MPI_Finalize();
    return 0;
}
