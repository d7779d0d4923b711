// Barrier imbalance with a known answer (hyscope analyzer test): 2 threads,
// B = 200 explicit barriers; before each, thread 1 spins for S = 50 µs and
// thread 0 does nothing. Thread 0 waits at least B × S = 10 ms for the last
// arrival in all, plus what thread 1 left each barrier after it (libomp
// releases the team one thread after the other: ≈ 25 µs more per barrier
// on a loaded 2-core VM, 14.9 ms in all); thread 1 arrives last and waits
// for nobody.
#include <omp.h>
#include <stdio.h>
#include <time.h>

#define B 200
#define S_NS 50000L

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(void) {
    int barriers = 0;
#pragma omp parallel num_threads(2) reduction(+ : barriers)
    {
        for (int b = 0; b < B; b++) {
            if (omp_get_thread_num() == 1) {
                long t0 = now_ns();
                while (now_ns() - t0 < S_NS) {
                }
            }
#pragma omp barrier
            barriers++;
        }
    }
    printf("barriers %d\n", barriers);
    return 0;
}
