// A loop-heavy program for whole-program overhead (hyscope OMPT benchmark):
// a 1-D stencil swept STEPS times with schedule(dynamic, 16): ~250 chunks per
// sweep of ~8 µs each on 2 threads, about 1 M OpenMP events per second on the
// benchmark machine (`loopheavy 6000 24`: ~2.5 M events/s).
// usage: loopheavy [steps] [work]; prints the elapsed seconds and a checksum.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4002

static double a[N], b[N];

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 8000;
    int work = argc > 2 ? atoi(argv[2]) : 80;
    for (int i = 0; i < N; i++) a[i] = i % 7;
    double t0 = omp_get_wtime();
    for (int s = 0; s < steps; s++) {
#pragma omp parallel for schedule(dynamic, 16)
        for (int i = 1; i < N - 1; i++) {
            double v = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
            for (int k = 0; k < work; k++) v = v * 0.999 + 0.001;
            b[i] = v;
        }
#pragma omp parallel for schedule(static)
        for (int i = 1; i < N - 1; i++) a[i] = b[i];
    }
    double sum = 0;
    for (int i = 0; i < N; i++) sum += a[i];
    printf("elapsed=%.4f checksum=%.6f\n", omp_get_wtime() - t0, sum);
    return 0;
}
