/* nested.c's three nested phases, annotated with NVTX (the v3 headers,
 * header-only) instead of hyscope.h, and built without any hyscope header
 * or library: hyscope sees them through NVTX_INJECTION64_PATH.
 *
 * Every rank: "setup" (nvtxRangePushA, sleeps 40 ms), then "solver" around
 * STEPS steps, each a "step" (nvtxRangePushEx, an ASCII message) around a
 * "halo" exchange (nvtxRangePushW, a wide string: a ring MPI_Sendrecv and a sleep of
 * 20 ms) and an OpenMP loop; step SLOW sleeps 100 ms more than the others.
 * Besides:
 * - "io:checkpoint": a range of the domain "io" (nvtxDomainRangePushEx with
 *   a registered string) after the solver, sleeping 10 ms, with a mark
 *   "io:written" (nvtxDomainMarkEx) inside it;
 * - "overlap": a start/end range started by the main thread at the start of
 *   step 1 and ended by OpenMP thread 1 in step 2's loop (another thread).
 * It prints each interval it measured around the NVTX calls and between
 * them (the recorded interval lies between the two):
 *   phase <rank> <name> <step> <outer ns> <inner ns>
 * a result line that does not depend on timing:
 *   result <rank> <sum>
 * and how many copies of libhyscope.so the process has mapped (0 without
 * hyscope, 1 under hyscope record: NVTX's dlopen found the preloaded one):
 *   instances <rank> <n> */
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STEPS 4
#define SLOW 2

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Mappings of libhyscope.so at file offset 0: one per loaded copy. */
static int hyscope_instances(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int n = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        char offset[32];
        if (strstr(line, "/libhyscope") && sscanf(line, "%*s %*s %31s", offset) == 1 &&
            strspn(offset, "0") == strlen(offset))
            n++;
    }
    fclose(f);
    return n;
}

static nvtxEventAttributes_t message(const char *text) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text;
    return a;
}

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* NVTX loads its tool on the first call: here, not inside "setup". */
    nvtxInitialize(NULL);
    MPI_Barrier(MPI_COMM_WORLD);

    long long t0 = now_ns();
    nvtxRangePushA("setup");
    long long t0b = now_ns();
    sleep_ms(40);
    long long t1a = now_ns();
    nvtxRangePop();
    printf("phase %d setup -1 %lld %lld\n", rank, now_ns() - t0, t1a - t0b);

    double sum = 0;
    nvtxRangeId_t overlap = 0;
    long long o0 = 0, o0b = 0, o1 = 0, o1a = 0;
    long long s0 = now_ns();
    nvtxRangePushA("solver");
    long long s0b = now_ns();
    for (int step = 0; step < STEPS; step++) {
        long long p0 = now_ns();
        nvtxEventAttributes_t step_attr = message("step");
        nvtxRangePushEx(&step_attr);
        long long p0b = now_ns();
        if (step == 1) {
            o0 = now_ns();
            overlap = nvtxRangeStartA("overlap");
            o0b = now_ns();
        }
        long long h0 = now_ns();
        nvtxRangePushW(L"halo");
        long long h0b = now_ns();
        double out = rank + step, in = -1;
        MPI_Sendrecv(&out, 1, MPI_DOUBLE, (rank + 1) % size, step, &in, 1, MPI_DOUBLE,
                     (rank + size - 1) % size, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sleep_ms(20);
        long long h1a = now_ns();
        nvtxRangePop();
        long long h1 = now_ns();
        sum += in;
#pragma omp parallel num_threads(2) reduction(+ : sum)
        {
#pragma omp for
            for (int i = 0; i < 1000; i++)
                sum += i % 7;
            if (step == 2 && omp_get_thread_num() == 1) {
                o1a = now_ns();
                nvtxRangeEnd(overlap);
                o1 = now_ns();
            }
        }
        sleep_ms(step == SLOW ? 130 : 30);
        long long p1a = now_ns();
        nvtxRangePop();
        long long p1 = now_ns();
        printf("phase %d halo %d %lld %lld\n", rank, step, h1 - h0, h1a - h0b);
        printf("phase %d step %d %lld %lld\n", rank, step, p1 - p0, p1a - p0b);
    }
    long long s1a = now_ns();
    nvtxRangePop();
    printf("phase %d solver -1 %lld %lld\n", rank, now_ns() - s0, s1a - s0b);
    printf("phase %d overlap -1 %lld %lld\n", rank, o1 - o0, o1a - o0b);

    nvtxDomainHandle_t io = nvtxDomainCreateA("io");
    nvtxEventAttributes_t ck = message(NULL);
    ck.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    ck.message.registered = nvtxDomainRegisterStringA(io, "checkpoint");
    long long c0 = now_ns();
    nvtxDomainRangePushEx(io, &ck);
    long long c0b = now_ns();
    sleep_ms(10);
    nvtxEventAttributes_t written = message("written");
    nvtxDomainMarkEx(io, &written);
    long long c1a = now_ns();
    nvtxDomainRangePop(io);
    printf("phase %d io:checkpoint -1 %lld %lld\n", rank, now_ns() - c0, c1a - c0b);
    nvtxDomainDestroy(io);

    printf("result %d %.1f\n", rank, sum);
    printf("instances %d %d\n", rank, hyscope_instances());
    MPI_Finalize();
    return 0;
}
