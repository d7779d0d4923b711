// Regions separated by serial code, with known times (hyscope analyzer test
// of profile mode): R = 20 regions of 2 threads; in each, thread 1 spins for
// 200 µs and thread 0 for 100 µs, then both meet at the join barrier; between
// regions thread 0 spins for 300 µs alone. libomp ends a worker's join
// barrier only when it wakes for the next region, so unclipped, thread 1's
// barriers would also hold the 20 × 300 µs = 6 ms of serial code.
#include <omp.h>
#include <stdio.h>
#include <time.h>

#define R 20
#define WORKER_NS 200000L
#define PRIMARY_NS 100000L
#define SERIAL_NS 300000L

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void spin(long ns) {
    long t0 = now_ns();
    while (now_ns() - t0 < ns) {
    }
}

int main(void) {
    int regions = 0;
    for (int r = 0; r < R; r++) {
#pragma omp parallel num_threads(2)
        {
            spin(omp_get_thread_num() == 1 ? WORKER_NS : PRIMARY_NS);
#pragma omp master
            regions++;
        }
        spin(SERIAL_NS);
    }
    printf("regions %d\n", regions);
    return regions == R ? 0 : 1;
}
