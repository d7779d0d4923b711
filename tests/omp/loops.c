// Worksharing loops of N iterations under three schedules (hyscope collector tests).
#include <omp.h>
#include <stdio.h>

#define N 1000

int main(void) {
    static int hits[3][N];
#pragma omp parallel num_threads(2)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) hits[0][i]++;
#pragma omp for schedule(dynamic, 7)
        for (int i = 0; i < N; i++) hits[1][i]++;
#pragma omp for schedule(guided, 5)
        for (int i = 0; i < N; i++) hits[2][i]++;
    }
    int ok = 1;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < N; i++) ok &= hits[s][i] == 1;
    printf("loops ok=%d\n", ok);
    return ok ? 0 : 1;
}
