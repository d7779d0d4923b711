// Parallel regions with known counts (hyscope collector tests).
// R = 4 regions x 2 threads, 1 if(0) region, 1 nested region (2 outer x 2 inner).
#include <omp.h>
#include <stdio.h>

int main(void) {
    int sum = 0;
    omp_set_max_active_levels(2);
    for (int r = 0; r < 4; r++) {
#pragma omp parallel num_threads(2) reduction(+ : sum)
        sum += 1;
    }
    int serial = 0;
#pragma omp parallel if (0)
    serial = omp_get_num_threads();
    int inner = 0;
#pragma omp parallel num_threads(2) reduction(+ : inner)
    {
#pragma omp parallel num_threads(2) reduction(+ : inner)
        inner += 1;
    }
    printf("sum=%d serial=%d inner=%d\n", sum, serial, inner);
    return sum == 8 && serial == 1 && inner == 4 ? 0 : 1;
}
