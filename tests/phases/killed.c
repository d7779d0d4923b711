/* A process killed without warning keeps its finished phases: "before"
 * (10 ms), then 3 time steps of "step" (5 ms each), then "open", which is
 * never ended; after 1 s (the writer thread spools every 0.4 s) the process
 * sends itself SIGKILL. No MPI. */
#include <hyscope.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int main(void) {
    hyscope_phase_begin("before");
    sleep_ms(10);
    hyscope_phase_end("before");
    for (int i = 0; i < 3; i++) {
        hyscope_iteration(i);
        hyscope_phase_begin("step");
        sleep_ms(5);
        hyscope_phase_end("step");
    }
    hyscope_phase_begin("open");
    printf("ready\n");
    fflush(stdout);
    sleep_ms(1000);
    raise(SIGKILL);
    return 0;
}
