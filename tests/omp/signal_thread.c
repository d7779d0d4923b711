/* Signals sent to the process go where they would without a tool: a tool's
 * own threads never take one, so the application's handler never runs on
 * them (tests: viewer/tests/record_signals.rs).
 *
 *   signal_thread N             runs 2000 parallel regions, blocks SIGUSR1 in
 *                               every thread of its own, sends itself SIGUSR1
 *                               N times, and prints "handled-by NAME COUNT"
 *                               for each thread that ran the handler (none is
 *                               right: the signal stays pending); then
 *                               unblocks it in the main thread and prints
 *                               "pending-to-main 1" when the main thread took
 *                               the one left pending.
 *   signal_thread N exit-in-handler
 *                               the same regions, then SIGTERM blocked in every
 *                               thread of its own and sent; its handler calls
 *                               exit(7) once the main thread unblocks it: the
 *                               exit status must be 7.
 *
 * Both print "regions 2000" or "sum 2000" for the 2000 regions (plus one
 * region in which the team blocks the signal: 2001 in the trace). */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t handled_tid;
static void on_usr1(int s) { (void)s; handled_tid = (sig_atomic_t)syscall(SYS_gettid); }
static void on_term(int s) { (void)s; exit(7); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    int term = argc > 2 && strcmp(argv[2], "exit-in-handler") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, term ? SIGTERM : SIGUSR1);
    double s = 0;
    for (int r = 0; r < 2000; r++) {
#pragma omp parallel reduction(+ : s)
        s += omp_get_thread_num();
    }
#pragma omp parallel
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (term) {
        /* The handler exits: it must run on this thread once it unblocks. */
        printf("regions 2000\n");
        fflush(stdout);
        kill(getpid(), SIGTERM);
        usleep(300000);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        return 0; /* not reached */
    }
    char names[16][32];
    int counts[16] = {0}, kinds = 0, main_tid = (int)syscall(SYS_gettid);
    for (int i = 0; i < n; i++) {
        handled_tid = 0;
        kill(getpid(), SIGUSR1);
        for (int w = 0; w < 200 && handled_tid == 0; w++)
            usleep(500);
        if (handled_tid == 0)
            continue; /* pending: every thread blocks it */
        char path[64], name[32] = "?";
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)handled_tid);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
            fclose(f);
        }
        int k = 0;
        while (k < kinds && strcmp(names[k], name) != 0) k++;
        if (k == kinds && kinds < 16) strcpy(names[kinds++], name);
        if (k < 16) counts[k]++;
    }
    for (int k = 0; k < kinds; k++) printf("handled-by %s %d\n", names[k], counts[k]);
    handled_tid = 0;
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    printf("pending-to-main %d\n", handled_tid == main_tid);
    printf("sum %.0f\n", s);
    return 0;
}
