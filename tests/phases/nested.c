/* Three nested named phases of durations the program measures itself.
 *
 * Every rank: "setup" (sleeps 40 ms), then "solver" around STEPS time steps
 * (hyscope_iteration(step)), each a "step" around a "halo" exchange (a ring
 * MPI_Sendrecv and a sleep of 20 ms) and an OpenMP loop; step SLOW sleeps
 * 100 ms more than the others (30 ms), so it is the slowest. The program
 * prints each phase interval it measured around its begin/end calls:
 *   phase <rank> <name> <step> <ns>
 * and a result line that does not depend on timing:
 *   result <rank> <sum>
 * Built without hyscope (nothing preloaded), it runs and prints the same. */
#include <hyscope.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
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

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);

    long long t0 = now_ns();
    hyscope_phase_begin("setup");
    long long t0b = now_ns();
    sleep_ms(40);
    long long t1a = now_ns();
    hyscope_phase_end("setup");
    printf("phase %d setup -1 %lld %lld\n", rank, now_ns() - t0, t1a - t0b);

    double sum = 0;
    long long s0 = now_ns();
    hyscope_phase_begin("solver");
    long long s0b = now_ns();
    for (int step = 0; step < STEPS; step++) {
        hyscope_iteration(step);
        long long p0 = now_ns();
        hyscope_phase_begin("step");
        long long p0b = now_ns();
        long long h0 = now_ns();
        hyscope_phase_begin("halo");
        long long h0b = now_ns();
        double out = rank + step, in = -1;
        MPI_Sendrecv(&out, 1, MPI_DOUBLE, (rank + 1) % size, step, &in, 1, MPI_DOUBLE,
                     (rank + size - 1) % size, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sleep_ms(20);
        long long h1a = now_ns();
        hyscope_phase_end("halo");
        long long h1 = now_ns();
        sum += in;
#pragma omp parallel for num_threads(2) reduction(+ : sum)
        for (int i = 0; i < 1000; i++)
            sum += i % 7;
        sleep_ms(step == SLOW ? 130 : 30);
        long long p1a = now_ns();
        hyscope_phase_end("step");
        long long p1 = now_ns();
        printf("phase %d halo %d %lld %lld\n", rank, step, h1 - h0, h1a - h0b);
        printf("phase %d step %d %lld %lld\n", rank, step, p1 - p0, p1a - p0b);
    }
    long long s1a = now_ns();
    hyscope_phase_end("solver");
    printf("phase %d solver -1 %lld %lld\n", rank, now_ns() - s0, s1a - s0b);
    printf("result %d %.1f\n", rank, sum);
    MPI_Finalize();
    return 0;
}
