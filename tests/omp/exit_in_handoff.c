/* An `exit` or an exec in a signal handler that interrupted the collector
 * while it held one of its locks (tests: viewer/tests/record_exit_in_handler.rs).
 *
 *   exit_in_handoff MODE        runs up to 400000 parallel regions, counting
 *                               those that ended; its SIGUSR1 handler prints
 *                               "regions K" (K: the regions that ended) and
 *                               then, for MODE
 *                                 exit   calls exit(5);
 *                                 exec   execs `/bin/sh -c 'exit 6'`.
 *
 * Run with HYSCOPE_TEST_SIGNAL_IN_HANDOFF=10 (SIGUSR1) and OMP_NUM_THREADS=1:
 * the collector raises the signal at the first full buffer it hands to its
 * writer, on this thread, while it holds the queue's lock, so the handler
 * runs there every time. The trace must then hold at least K regions (the
 * one that was ending may be in it too: K + 1). Without the signal it
 * prints "no signal" and returns 1. */
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long done;
static int exec_mode;

static void put(const char *s) { (void)!write(1, s, strlen(s)); }

static void on_usr1(int s) {
    (void)s;
    char buf[32], digits[24];
    int n = 0;
    long v = done;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    int at = 0;
    memcpy(buf, "regions ", 8);
    at = 8;
    while (n > 0) buf[at++] = digits[--n];
    buf[at++] = '\n';
    (void)!write(1, buf, (size_t)at);
    if (exec_mode) {
        execl("/bin/sh", "sh", "-c", "exit 6", (char *)NULL);
        put("exec failed\n");
        _exit(2);
    }
    exit(5);
}

int main(int argc, char **argv) {
    exec_mode = argc > 1 && strcmp(argv[1], "exec") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    double s = 0;
    for (long r = 0; r < 400000; r++) {
#pragma omp parallel reduction(+ : s)
        s += omp_get_thread_num();
        done = r + 1;
    }
    printf("no signal (sum %.0f)\n", s);
    return 1;
}
