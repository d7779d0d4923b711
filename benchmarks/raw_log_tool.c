/* The floor of a per-event OMPT tracer on the application's threads: an OMPT
 * tool that registers the callbacks hyscope registers by default (as
 * tests/omp/empty_tool.c) and, in each, does the least any tracer must: read
 * the TSC and store one 24-byte entry (time, callback and endpoint, one
 * identifying word) in a per-thread ring. Nothing is matched, encoded or
 * written out: a real tracer does all of that on top, on this thread or on
 * another one.
 *
 * BASE_TOOL=benchmarks/raw_log_tool.c benchmarks/lulesh.sh puts it in the
 * place of the empty tool, so that its table "against the raw log tool" says
 * what hyscope adds beyond this floor; benchmarks/lulesh-instructions.sh
 * takes it as HYSCOPE_LIB=raw_log_tool.so for its instructions.
 *
 *   clang-19 -O2 -shared -fPIC benchmarks/raw_log_tool.c -o raw_log_tool.so
 */
#include <omp-tools.h>
#include <stdint.h>
#include <stdlib.h>
#include <x86intrin.h>

struct entry {
    uint64_t tsc;
    uint64_t word;
    uint32_t what;
    uint32_t pad;
};

#define RING (1u << 16) /* 1.5 MiB per thread, reused */

/* Initial-exec: the tool is preloaded, so its TLS is in the static block and
 * an access is one load off %fs, as hyscope's own (ompt-tool/src/tls.rs). */
static __thread struct entry *ring __attribute__((tls_model("initial-exec")));
static __thread uint32_t next __attribute__((tls_model("initial-exec")));

static inline void note(uint32_t what, uint64_t word) {
    struct entry *r = ring;
    if (__builtin_expect(r == NULL, 0)) {
        r = ring = calloc(RING, sizeof *r);
        if (r == NULL)
            return;
    }
    uint32_t i = next;
    next = (i + 1) & (RING - 1);
    r[i].tsc = __rdtsc();
    r[i].word = word;
    r[i].what = what;
}

static uint64_t value(const ompt_data_t *d) { return d ? d->value : 0; }

static void thread_begin(ompt_thread_t type, ompt_data_t *data) { note(1u << 16 | type, value(data)); }
static void thread_end(ompt_data_t *data) { note(2u << 16, value(data)); }
static void parallel_begin(ompt_data_t *task, const ompt_frame_t *frame, ompt_data_t *parallel,
                           unsigned int requested, int flags, const void *codeptr) {
    (void)task, (void)frame, (void)parallel, (void)flags;
    note(3u << 16 | requested, (uint64_t)codeptr);
}
static void parallel_end(ompt_data_t *parallel, ompt_data_t *task, int flags, const void *codeptr) {
    (void)parallel, (void)task, (void)flags;
    note(4u << 16, (uint64_t)codeptr);
}
static void implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
                          unsigned int team, unsigned int index, int flags) {
    (void)parallel, (void)task, (void)flags;
    note(7u << 16 | endpoint << 8 | (team & 0xff), index);
}
static void work(ompt_work_t type, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
                 uint64_t count, const void *codeptr) {
    (void)parallel, (void)task, (void)count;
    note(20u << 16 | endpoint << 8 | type, (uint64_t)codeptr);
}
static void dispatch(ompt_data_t *parallel, ompt_data_t *task, ompt_dispatch_t kind, ompt_data_t instance) {
    (void)parallel, (void)task;
    note(32u << 16 | kind, instance.value);
}
static void sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                        ompt_data_t *task, const void *codeptr) {
    (void)parallel, (void)task;
    note(23u << 16 | endpoint << 8 | kind, (uint64_t)codeptr);
}
static void sync_region_wait(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                             ompt_data_t *task, const void *codeptr) {
    (void)parallel, (void)task;
    note(16u << 16 | endpoint << 8 | kind, (uint64_t)codeptr);
}
static void masked(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
                   const void *codeptr) {
    (void)parallel, (void)task;
    note(21u << 16 | endpoint << 8, (uint64_t)codeptr);
}
static void mutex_acquire(ompt_mutex_t kind, unsigned int hint, unsigned int impl, ompt_wait_id_t wait_id,
                          const void *codeptr) {
    (void)hint, (void)impl, (void)codeptr;
    note(26u << 16 | kind, wait_id);
}
static void mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr) {
    (void)codeptr;
    note(27u << 16 | kind, wait_id);
}
static void mutex_released(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr) {
    (void)codeptr;
    note(17u << 16 | kind, wait_id);
}
static void lock_init(ompt_mutex_t kind, unsigned int hint, unsigned int impl, ompt_wait_id_t wait_id,
                      const void *codeptr) {
    (void)hint, (void)impl, (void)codeptr;
    note(24u << 16 | kind, wait_id);
}
static void lock_destroy(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr) {
    (void)codeptr;
    note(25u << 16 | kind, wait_id);
}
static void task_create(ompt_data_t *parent, const ompt_frame_t *frame, ompt_data_t *task, int flags,
                        int has_dependences, const void *codeptr) {
    (void)parent, (void)frame, (void)task, (void)flags, (void)has_dependences;
    note(5u << 16, (uint64_t)codeptr);
}
static void task_schedule(ompt_data_t *prior, ompt_task_status_t status, ompt_data_t *next_task) {
    (void)prior, (void)next_task;
    note(6u << 16 | status, 0);
}
static void dependences(ompt_data_t *task, const ompt_dependence_t *deps, int ndeps) {
    (void)task, (void)deps;
    note(18u << 16, (uint64_t)ndeps);
}
static void task_dependence(ompt_data_t *src, ompt_data_t *sink) {
    (void)src, (void)sink;
    note(19u << 16, 0);
}
static void flush(ompt_data_t *thread, const void *codeptr) {
    (void)thread;
    note(29u << 16, (uint64_t)codeptr);
}
static void cancel(ompt_data_t *task, int flags, const void *codeptr) {
    (void)task;
    note(30u << 16 | (flags & 0xffff), (uint64_t)codeptr);
}
static void reduction(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                      ompt_data_t *task, const void *codeptr) {
    (void)parallel, (void)task;
    note(31u << 16 | endpoint << 8 | kind, (uint64_t)codeptr);
}

static int initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data) {
    (void)initial_device_num, (void)tool_data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (set == NULL)
        return 0;
#define SET(event, f) set(event, (ompt_callback_t)f)
    SET(ompt_callback_thread_begin, thread_begin);
    SET(ompt_callback_thread_end, thread_end);
    SET(ompt_callback_parallel_begin, parallel_begin);
    SET(ompt_callback_parallel_end, parallel_end);
    SET(ompt_callback_task_create, task_create);
    SET(ompt_callback_task_schedule, task_schedule);
    SET(ompt_callback_implicit_task, implicit_task);
    SET(ompt_callback_sync_region_wait, sync_region_wait);
    SET(ompt_callback_mutex_released, mutex_released);
    SET(ompt_callback_dependences, dependences);
    SET(ompt_callback_task_dependence, task_dependence);
    SET(ompt_callback_work, work);
    SET(ompt_callback_masked, masked);
    SET(ompt_callback_sync_region, sync_region);
    SET(ompt_callback_lock_init, lock_init);
    SET(ompt_callback_lock_destroy, lock_destroy);
    SET(ompt_callback_mutex_acquire, mutex_acquire);
    SET(ompt_callback_mutex_acquired, mutex_acquired);
    SET(ompt_callback_flush, flush);
    SET(ompt_callback_cancel, cancel);
    SET(ompt_callback_reduction, reduction);
    SET(ompt_callback_dispatch, dispatch);
#undef SET
    return 1;
}

static void finalize(ompt_data_t *tool_data) { (void)tool_data; }

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
    (void)omp_version, (void)runtime_version;
    static ompt_start_tool_result_t result = {initialize, finalize, {0}};
    return &result;
}
