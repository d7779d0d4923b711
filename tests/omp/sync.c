// Barriers, critical sections, locks and tasks with known counts (hyscope collector tests).
// 2 threads; B = 3 explicit barriers; K = 10 critical entries; L = 6 lock acquisitions;
// M = 20 tasks followed by one taskwait.
#include <omp.h>
#include <stdio.h>

int main(void) {
    int crit = 0, locked = 0, tasks = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel num_threads(2)
    {
        for (int b = 0; b < 3; b++) {
#pragma omp barrier
        }
#pragma omp for
        for (int k = 0; k < 10; k++) {
#pragma omp critical
            crit++;
        }
#pragma omp for
        for (int l = 0; l < 6; l++) {
            omp_set_lock(&lock);
            locked++;
            omp_unset_lock(&lock);
        }
#pragma omp single
        {
            for (int m = 0; m < 20; m++) {
#pragma omp task shared(tasks)
                {
#pragma omp atomic
                    tasks++;
                }
            }
#pragma omp taskwait
        }
    }
    omp_destroy_lock(&lock);
    printf("crit=%d locked=%d tasks=%d\n", crit, locked, tasks);
    return crit == 10 && locked == 6 && tasks == 20 ? 0 : 1;
}
