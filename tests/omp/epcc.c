// EPCC-syncbench-style construct overheads (hyscope OMPT benchmark).
// usage: epcc TEST [inner_reps] [outer_reps] [delay]
//   TEST: parallel | for | barrier | critical | lock | ordered | dynamic
// Prints "TEST overhead_us=<median over outer reps> constructs=<per outer rep>".
// Overhead = (time with the construct - reference time with the same delay work) / constructs,
// as in EPCC syncbench (Bull, "Measuring synchronisation and scheduling overheads in OpenMP").
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int delay_len = 50;
static volatile double sink;

static void delay(int n) {
    double a = 0.0;
    for (int i = 0; i < n; i++) a += i * 0.5;
    if (a < 0) sink = a;
}

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void reference(int reps) {
    for (int r = 0; r < reps; r++) delay(delay_len);
}

static void test_parallel(int reps) {
    for (int r = 0; r < reps; r++) {
#pragma omp parallel
        delay(delay_len);
    }
}

static void test_for(int reps) {
#pragma omp parallel
    {
        int nt = omp_get_num_threads();
        for (int r = 0; r < reps; r++) {
#pragma omp for
            for (int i = 0; i < nt; i++) delay(delay_len);
        }
    }
}

static void test_barrier(int reps) {
#pragma omp parallel
    for (int r = 0; r < reps; r++) {
        delay(delay_len);
#pragma omp barrier
    }
}

static void test_critical(int reps) {
#pragma omp parallel
    {
        int nt = omp_get_num_threads();
        for (int r = 0; r < reps / nt; r++) {
#pragma omp critical
            delay(delay_len);
        }
    }
}

static void test_lock(int reps) {
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel
    {
        int nt = omp_get_num_threads();
        for (int r = 0; r < reps / nt; r++) {
            omp_set_lock(&lock);
            delay(delay_len);
            omp_unset_lock(&lock);
        }
    }
    omp_destroy_lock(&lock);
}

// As EPCC's ORDERED: one iteration per construct, in order across the team.
static void test_ordered(int reps) {
#pragma omp parallel
    {
#pragma omp for schedule(static, 1) ordered
        for (int i = 0; i < reps; i++) {
#pragma omp ordered
            delay(delay_len);
        }
    }
}

// One chunk of one iteration per construct: the per-chunk scheduling cost.
static void test_dynamic(int reps) {
#pragma omp parallel
    {
        int nt = omp_get_num_threads();
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < reps * nt; i++) delay(delay_len);
    }
}

int main(int argc, char **argv) {
    const char *test = argc > 1 ? argv[1] : "parallel";
    int inner = argc > 2 ? atoi(argv[2]) : 2000;
    int outer = argc > 3 ? atoi(argv[3]) : 21;
    if (argc > 4) delay_len = atoi(argv[4]);
    void (*f)(int) = NULL;
    if (!strcmp(test, "parallel")) f = test_parallel;
    else if (!strcmp(test, "for")) f = test_for;
    else if (!strcmp(test, "barrier")) f = test_barrier;
    else if (!strcmp(test, "critical")) f = test_critical;
    else if (!strcmp(test, "lock")) f = test_lock;
    else if (!strcmp(test, "ordered")) f = test_ordered;
    else if (!strcmp(test, "dynamic")) f = test_dynamic;
    if (!f) {
        fprintf(stderr, "unknown test %s\n", test);
        return 2;
    }
    f(inner); // warm up the thread pool
    double *ov = malloc(outer * sizeof *ov);
    for (int o = 0; o < outer; o++) {
        double t0 = omp_get_wtime();
        reference(inner);
        double t1 = omp_get_wtime();
        f(inner);
        double t2 = omp_get_wtime();
        ov[o] = ((t2 - t1) - (t1 - t0)) / inner * 1e6;
    }
    printf("%s overhead_us=%.4f constructs=%d\n", test, median(ov, outer), inner * (outer + 1));
    free(ov);
    return 0;
}
