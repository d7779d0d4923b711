/* The cost of a hyscope.h begin/end pair on the calling thread: CPU time
 * (CLOCK_THREAD_CPUTIME_ID, so the writer thread's work and other load on
 * the host do not count) per pair over 20 000 pairs, 3 rounds, and of
 * hyscope_iteration. Run it plain and under `hyscope record`. */
#include <hyscope.h>
#include <stdio.h>
#include <time.h>

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void) {
    const int n = 20000;
    for (int round = 0; round < 3; round++) {
        long long t0 = cpu_ns();
        for (int i = 0; i < n; i++)
            hyscope_iteration(i);
        long long t1 = cpu_ns();
        for (int i = 0; i < n; i++) {
            hyscope_phase_begin("p");
            hyscope_phase_end("p");
        }
        long long t2 = cpu_ns();
        printf("hyscope_iteration %.1f ns, begin+end pair %.1f ns\n", (double)(t1 - t0) / n,
               (double)(t2 - t1) / n);
    }
    return 0;
}
