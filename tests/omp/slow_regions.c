/* 6000 parallel regions of 2 threads over about 2 s (the primary thread
 * sleeps 0.3 ms in each): the collector's writer flushes the threads'
 * current blocks every 0.4 s while they are still being written, and hands
 * off full ones that a flush took part of. Every region must be in the trace
 * exactly once. Prints the number of regions the program ran. */
#include <omp.h>
#include <stdio.h>
#include <time.h>

#define REGIONS 6000

int main(void) {
    int ran = 0;
    struct timespec nap = {0, 300000L};
    for (int i = 0; i < REGIONS; i++) {
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                ran++;
                nanosleep(&nap, NULL);
            }
        }
    }
    printf("regions=%d\n", ran);
    return 0;
}
