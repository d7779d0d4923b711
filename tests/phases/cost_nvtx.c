/* The cost of an NVTX push/pop pair on the calling thread: CPU time
 * (CLOCK_THREAD_CPUTIME_ID, so the writer thread's work and other load on
 * the host do not count) per pair over 20 000 pairs, 3 rounds. Run it plain
 * (no NVTX tool: after the first call NVTX's stubs are empty slots) and
 * under `hyscope record` (NVTX_INJECTION64_PATH: the pairs are phases). */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <time.h>

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void) {
    const int n = 20000;
    nvtxInitialize(NULL); /* the tool (if any) loads here, outside the rounds */
    for (int round = 0; round < 3; round++) {
        long long t0 = cpu_ns();
        for (int i = 0; i < n; i++) {
            nvtxRangePushA("p");
            nvtxRangePop();
        }
        long long t1 = cpu_ns();
        printf("nvtxRangePushA+nvtxRangePop pair %.1f ns\n", (double)(t1 - t0) / n);
    }
    return 0;
}
