// Explicit tasks run inside a barrier (hyscope analyzer test): 2 threads, one
// creates T = 40 tasks of S = 1 ms each in a `single`; both threads run them
// at the single's barrier. Each thread is busy ≈ T × S / 2 = 20 ms: the tasks
// are work, not barrier time.
#include <omp.h>
#include <stdio.h>
#include <time.h>

#define T 40
#define S_NS 1000000L

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(void) {
    int done = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        for (int i = 0; i < T; i++) {
#pragma omp task shared(done)
            {
                long t0 = now_ns();
                while (now_ns() - t0 < S_NS) {
                }
#pragma omp atomic
                done++;
            }
        }
    }
    printf("tasks %d\n", done);
    return 0;
}
