/* What hyscope's OMPT callbacks cost by themselves, without libomp: the
 * program plays the OpenMP runtime. It calls the preloaded tool's
 * ompt_start_tool and initialize with its own ompt_set_callback, which keeps
 * the callback pointers, then calls them in tight loops in the order libomp
 * dispatches them for common constructs on one thread (one team member's
 * view). No barrier spins, no other thread: the numbers are the tool's own
 * cost per callback, which the EPCC numbers of bench-ompt.sh include along
 * with libomp's dispatch and cache effects between threads.
 *
 *   clang-19 -O2 tests/omp/callback_cost.c -o callback_cost -ldl
 *   LD_PRELOAD=target/release/libhyscope.so HYSCOPE_OUTPUT=/tmp/t ./callback_cost [reps [sequence]]
 *
 * Prints one line per sequence: "name ns_per_callback=X callbacks=N".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp-tools.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ompt_callback_t registered[64];

static int set_callback(ompt_callbacks_t event, ompt_callback_t callback) {
    if ((unsigned)event < 64) registered[event] = callback;
    return ompt_set_always;
}

static ompt_interface_fn_t lookup(const char *name) {
    return strcmp(name, "ompt_set_callback") == 0 ? (ompt_interface_fn_t)set_callback : NULL;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

#define CB(type, id) ((type)registered[id])
#define CODE ((const void *)0x401234)

static ompt_data_t encountering, region, task;

/* The primary thread's callbacks for one `#pragma omp parallel` region. */
static void primary_region(void) {
    CB(ompt_callback_parallel_begin_t, ompt_callback_parallel_begin)
    (&encountering, NULL, &region, 2, ompt_parallel_team | ompt_parallel_invoker_runtime, CODE);
    CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task)
    (ompt_scope_begin, &region, &task, 2, 0, ompt_task_implicit);
    ompt_callback_sync_region_t sync = CB(ompt_callback_sync_region_t, ompt_callback_sync_region);
    ompt_callback_sync_region_t wait = CB(ompt_callback_sync_region_t, ompt_callback_sync_region_wait);
    sync(ompt_sync_region_barrier_implicit_parallel, ompt_scope_begin, &region, &task, CODE);
    wait(ompt_sync_region_barrier_implicit_parallel, ompt_scope_begin, &region, &task, CODE);
    wait(ompt_sync_region_barrier_implicit_parallel, ompt_scope_end, &region, &task, CODE);
    sync(ompt_sync_region_barrier_implicit_parallel, ompt_scope_end, &region, &task, CODE);
    CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task)
    (ompt_scope_end, &region, &task, 0, 0, ompt_task_implicit);
    CB(ompt_callback_parallel_end_t, ompt_callback_parallel_end)
    (&region, &encountering, ompt_parallel_team | ompt_parallel_invoker_runtime, CODE);
}

/* A worker thread's callbacks for one region: the previous region's
 * join-barrier ends, which libomp dispatches late, when the worker wakes;
 * its implicit task; the join barrier's begins. */
static void worker_region(void) {
    ompt_callback_sync_region_t sync = CB(ompt_callback_sync_region_t, ompt_callback_sync_region);
    ompt_callback_sync_region_t wait = CB(ompt_callback_sync_region_t, ompt_callback_sync_region_wait);
    ompt_callback_implicit_task_t implicit = CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task);
    wait(ompt_sync_region_barrier_implicit_parallel, ompt_scope_end, NULL, &task, NULL);
    sync(ompt_sync_region_barrier_implicit_parallel, ompt_scope_end, NULL, &task, NULL);
    implicit(ompt_scope_end, NULL, &task, 0, 1, ompt_task_implicit);
    implicit(ompt_scope_begin, &region, &task, 2, 1, ompt_task_implicit);
    sync(ompt_sync_region_barrier_implicit_parallel, ompt_scope_begin, &region, &task, CODE);
    wait(ompt_sync_region_barrier_implicit_parallel, ompt_scope_begin, &region, &task, CODE);
}

/* An explicit `#pragma omp barrier`. */
static void barrier(void) {
    ompt_callback_sync_region_t sync = CB(ompt_callback_sync_region_t, ompt_callback_sync_region);
    ompt_callback_sync_region_t wait = CB(ompt_callback_sync_region_t, ompt_callback_sync_region_wait);
    sync(ompt_sync_region_barrier_explicit, ompt_scope_begin, &region, &task, CODE);
    wait(ompt_sync_region_barrier_explicit, ompt_scope_begin, &region, &task, CODE);
    wait(ompt_sync_region_barrier_explicit, ompt_scope_end, &region, &task, CODE);
    sync(ompt_sync_region_barrier_explicit, ompt_scope_end, &region, &task, CODE);
}

/* A `#pragma omp critical` entered and left. */
static void critical(void) {
    CB(ompt_callback_mutex_acquire_t, ompt_callback_mutex_acquire)
    (ompt_mutex_critical, 0, 0, 0x1000, CODE);
    CB(ompt_callback_mutex_t, ompt_callback_mutex_acquired)(ompt_mutex_critical, 0x1000, CODE);
    CB(ompt_callback_mutex_t, ompt_callback_mutex_released)(ompt_mutex_critical, 0x1000, CODE);
}

/* One chunk of a schedule(dynamic) loop. */
static uint64_t next_iteration;
static void chunk(void) {
    ompt_dispatch_chunk_t c = {next_iteration, 4};
    next_iteration += 4;
    ompt_data_t instance = {.ptr = &c};
    CB(ompt_callback_dispatch_t, ompt_callback_dispatch)
    (&region, &task, ompt_dispatch_ws_loop_chunk, instance);
}

static const char *only; /* argv[2]: measure only this sequence */

/* The same chunk as Debian's libomp 19 hands it out: its __kmpc_dispatch_next_4
 * formats strings (about three vsnprintf calls) for every chunk, tool or not,
 * which evicts the tool's code and data from the first-level caches between
 * two callbacks. Compare with the empty tool's line: the difference is the
 * tool's cost in place. */
static char scratch[256];
static void chunk_libomp19(void) {
    for (int i = 0; i < 3; i++)
        snprintf(scratch, sizeof scratch, "__kmp_dispatch_next: T#%d %s lb:%lld ub:%lld st:%lld p_last:%p",
                 i, "dynamic", (long long)next_iteration, (long long)next_iteration + 3, 1LL, (void *)scratch);
    chunk();
}

static void measure(const char *name, void (*sequence)(void), int callbacks, long reps) {
    if (only && strcmp(only, name) != 0) return;
    for (long i = 0; i < reps / 10; i++) sequence(); /* warm up */
    double t0 = now_ns();
    for (long i = 0; i < reps; i++) sequence();
    double t1 = now_ns();
    printf("%s ns_per_callback=%.1f callbacks=%d\n", name, (t1 - t0) / ((double)reps * callbacks),
           callbacks);
}

int main(int argc, char **argv) {
    long reps = argc > 1 ? atol(argv[1]) : 1000000;
    only = argc > 2 ? argv[2] : NULL;
    ompt_start_tool_result_t *(*start)(unsigned, const char *) =
        (ompt_start_tool_result_t * (*)(unsigned, const char *)) dlsym(RTLD_DEFAULT, "ompt_start_tool");
    if (!start) {
        fprintf(stderr, "callback_cost: no ompt_start_tool (preload a tool)\n");
        return 1;
    }
    ompt_start_tool_result_t *tool = start(201611, "callback_cost");
    if (!tool || !tool->initialize(lookup, 0, &tool->tool_data)) {
        fprintf(stderr, "callback_cost: the tool declined\n");
        return 1;
    }
    ompt_data_t thread = {0};
    CB(ompt_callback_thread_begin_t, ompt_callback_thread_begin)(ompt_thread_initial, &thread);
    CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task)
    (ompt_scope_begin, NULL, &encountering, 1, 1, ompt_task_initial);

    measure("parallel", primary_region, 8, reps);
    /* The worker's sequence starts with the ends of a region it is in. */
    CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task)
    (ompt_scope_begin, &region, &task, 2, 1, ompt_task_implicit);
    CB(ompt_callback_sync_region_t, ompt_callback_sync_region)
    (ompt_sync_region_barrier_implicit_parallel, ompt_scope_begin, &region, &task, CODE);
    CB(ompt_callback_sync_region_t, ompt_callback_sync_region_wait)
    (ompt_sync_region_barrier_implicit_parallel, ompt_scope_begin, &region, &task, CODE);
    measure("parallel-worker", worker_region, 6, reps);
    worker_region(); /* leaves the barrier's begins open: end them as the next region would */
    CB(ompt_callback_sync_region_t, ompt_callback_sync_region_wait)
    (ompt_sync_region_barrier_implicit_parallel, ompt_scope_end, NULL, &task, NULL);
    CB(ompt_callback_sync_region_t, ompt_callback_sync_region)
    (ompt_sync_region_barrier_implicit_parallel, ompt_scope_end, NULL, &task, NULL);
    CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task)
    (ompt_scope_end, NULL, &task, 0, 1, ompt_task_implicit);
    /* barrier and critical run inside a region, as they would. */
    CB(ompt_callback_parallel_begin_t, ompt_callback_parallel_begin)
    (&encountering, NULL, &region, 2, ompt_parallel_team | ompt_parallel_invoker_runtime, CODE);
    CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task)
    (ompt_scope_begin, &region, &task, 2, 0, ompt_task_implicit);
    measure("barrier", barrier, 4, reps);
    measure("critical", critical, 3, reps);
    if (registered[ompt_callback_dispatch]) {
        CB(ompt_callback_work_t, ompt_callback_work)
        (ompt_work_loop_dynamic, ompt_scope_begin, &region, &task, 1ul << 40, CODE);
        measure("dynamic", chunk, 1, reps * 4);
        measure("dynamic-in-libomp19", chunk_libomp19, 1, reps);
        CB(ompt_callback_work_t, ompt_callback_work)
        (ompt_work_loop_dynamic, ompt_scope_end, &region, &task, 0, CODE);
    }
    CB(ompt_callback_implicit_task_t, ompt_callback_implicit_task)
    (ompt_scope_end, &region, &task, 0, 0, ompt_task_implicit);
    CB(ompt_callback_parallel_end_t, ompt_callback_parallel_end)
    (&region, &encountering, ompt_parallel_team | ompt_parallel_invoker_runtime, CODE);
    return 0;
}
