/* A polling loop like MPICH's threads/pt2pt/greq_test: a generalized
 * request that a second thread completes after SECONDS (argument, default
 * 3), polled by the main thread with MPI_Test, then MPI_Testsome, then
 * MPI_Testall, each followed by sched_yield (not with a second argument
 * `spin`: then the loop is the polls alone). Prints the polls made and the
 * seconds the three loops took (MPI_Wtime): polls per second is the cost
 * of one poll, tool or not. */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static double seconds = 3.0;

static int query_fn(void *extra, MPI_Status *status) {
    (void)extra;
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    MPI_Status_set_cancelled(status, 0);
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    return 0;
}
static int free_fn(void *extra) { (void)extra; return 0; }
static int cancel_fn(void *extra, int complete) { (void)extra; (void)complete; return 0; }

static void *work(void *arg) {
    usleep((useconds_t)(seconds * 1e6));
    MPI_Grequest_complete(*(MPI_Request *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    int provided, flag, outcount, index;
    long polls = 0;
    MPI_Request request, shared;
    MPI_Status status;
    pthread_t t;
    int yield = !(argc > 2 && argv[2][0] == 's');
    if (argc > 1) seconds = atof(argv[1]);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        printf("MPI_THREAD_MULTIPLE is needed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t0 = MPI_Wtime();
    for (int loop = 0; loop < 3; loop++) {
        MPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, &request);
        shared = request;
        pthread_create(&t, NULL, work, &shared);
        flag = outcount = 0;
        while (!flag && !outcount) {
            if (loop == 0) MPI_Test(&request, &flag, &status);
            else if (loop == 1) MPI_Testsome(1, &request, &outcount, &index, &status);
            else MPI_Testall(1, &request, &flag, &status);
            polls++;
            if (yield) sched_yield();
        }
        pthread_join(t, NULL);
    }
    double t1 = MPI_Wtime();
    printf("polls %ld\nseconds %.3f\n", polls, t1 - t0);
    MPI_Finalize();
    return 0;
}
