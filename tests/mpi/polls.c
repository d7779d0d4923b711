/* Polling loops whose unsuccessful polls the program counts itself: rank 0
 * spins on MPI_Test, MPI_Iprobe, MPI_Testany, MPI_Testsome and MPI_Testall,
 * each on a message rank 1 sends only after sleeping NAP_US, then polls two
 * requests in turns of at most 3 polls each from one call site
 * (`poll_three`). Rank 0 prints `<loop> <unsuccessful polls>` per loop.
 * With an argument `kill`, rank 0 ends by SIGKILL after a last 1.5 s
 * MPI_Test loop on a message that never comes, whose polls it prints
 * (and flushes) first; with `segv`, by a write through a null pointer
 * after 0.3 s of such a loop. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NAP_US 150000

/* Up to 3 MPI_Test polls of `r` (one call site for every request). */
__attribute__((noinline)) static void poll_three(MPI_Request *r, int *done, long *fails) {
    for (int k = 0; k < 3 && !*done; k++) {
        MPI_Test(r, done, MPI_STATUS_IGNORE);
        if (!*done) (*fails)++;
    }
}

int main(int argc, char **argv) {
    int rank, flag = 0, x = 42, buf[8] = {0};
    int kill_at_end = argc > 1 && strcmp(argv[1], "kill") == 0;
    int segv_at_end = argc > 1 && strcmp(argv[1], "segv") == 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        for (int tag = 1; tag <= 7; tag++) {
            usleep(NAP_US);
            MPI_Send(&x, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
        }
    } else {
        MPI_Request r, rs[1], a, b;
        long fails = 0;
        MPI_Irecv(&buf[0], 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &r);
        do {
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            if (!flag) fails++;
        } while (!flag);
        printf("test %ld\n", fails);

        fails = 0;
        do {
            MPI_Iprobe(1, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            if (!flag) fails++;
        } while (!flag);
        MPI_Recv(&buf[1], 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("iprobe %ld\n", fails);

        int index, outcount = 0, indices[1];
        fails = 0;
        MPI_Irecv(&buf[2], 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &rs[0]);
        do {
            MPI_Testany(1, rs, &index, &flag, MPI_STATUS_IGNORE);
            if (!flag) fails++;
        } while (!flag);
        printf("testany %ld\n", fails);

        fails = 0;
        MPI_Irecv(&buf[3], 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &rs[0]);
        do {
            MPI_Testsome(1, rs, &outcount, indices, MPI_STATUSES_IGNORE);
            if (outcount == 0) fails++;
        } while (outcount == 0);
        printf("testsome %ld\n", fails);

        fails = 0;
        MPI_Irecv(&buf[4], 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &rs[0]);
        do {
            MPI_Testall(1, rs, &flag, MPI_STATUSES_IGNORE);
            if (!flag) fails++;
        } while (!flag);
        printf("testall %ld\n", fails);

        /* Two requests polled in turns of up to 3 polls each. */
        long fails_a = 0, fails_b = 0;
        int done_a = 0, done_b = 0;
        MPI_Irecv(&buf[5], 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &a);
        MPI_Irecv(&buf[6], 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &b);
        while (!done_a || !done_b) {
            poll_three(&a, &done_a, &fails_a);
            poll_three(&b, &done_b, &fails_b);
        }
        printf("interleaved_a %ld\n", fails_a);
        printf("interleaved_b %ld\n", fails_b);

        if (kill_at_end || segv_at_end) {
            /* Polls (a message rank 1 never sends) for longer than a run
             * spans (0.1 s) and the writer's spooling interval (0.4 s),
             * then dies without warning. */
            double until = MPI_Wtime() + (kill_at_end ? 1.5 : 0.3);
            fails = 0;
            MPI_Irecv(&buf[7], 1, MPI_INT, 1, 8, MPI_COMM_WORLD, &r);
            do {
                MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
                if (!flag) fails++;
            } while (MPI_Wtime() < until);
            printf("killed_loop %ld\n", fails);
            fflush(stdout);
            if (kill_at_end) raise(SIGKILL);
            volatile int *nowhere = NULL;
            *nowhere = 1;
        }
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
