/* An OMPT tool that registers the callbacks hyscope registers by default
 * (ompt-tool/src/callbacks.rs `needed` with every group on) and does nothing
 * in them. tests/omp/bench-ompt.sh preloads it to measure the floor: what
 * libomp's callback dispatch alone costs, before any tool does any work.
 *
 *   clang-19 -O2 -shared -fPIC tests/omp/empty_tool.c -o empty_tool.so
 *   LD_PRELOAD=./empty_tool.so OMP_NUM_THREADS=2 ./epcc parallel
 *
 * Every callback is one empty function: on x86-64 System V the caller owns
 * the argument registers, so a function that reads no arguments can stand
 * for any callback signature.
 */
#include <omp-tools.h>
#include <stddef.h>

static void empty_callback(void) {}

/* Same ids as hyscope's default registration (thread, parallel, implicit task,
 * tasks and dependences, work, dispatch, sync regions and their waits, mutexes,
 * lock init/destroy, masked, flush, cancel, reduction). */
static const int callbacks[] = {
    ompt_callback_thread_begin,    ompt_callback_thread_end,
    ompt_callback_parallel_begin,  ompt_callback_parallel_end,
    ompt_callback_task_create,     ompt_callback_task_schedule,
    ompt_callback_implicit_task,   ompt_callback_sync_region_wait,
    ompt_callback_mutex_released,  ompt_callback_dependences,
    ompt_callback_task_dependence, ompt_callback_work,
    ompt_callback_masked,          ompt_callback_sync_region,
    ompt_callback_lock_init,       ompt_callback_lock_destroy,
    ompt_callback_mutex_acquire,   ompt_callback_mutex_acquired,
    ompt_callback_flush,           ompt_callback_cancel,
    ompt_callback_reduction,       ompt_callback_dispatch,
};

static int initialize(ompt_function_lookup_t lookup, int initial_device_num,
                      ompt_data_t *tool_data) {
    (void)initial_device_num;
    (void)tool_data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (set == NULL)
        return 0;
    for (size_t i = 0; i < sizeof callbacks / sizeof callbacks[0]; i++)
        set((ompt_callbacks_t)callbacks[i], (ompt_callback_t)empty_callback);
    return 1; /* keep the tool active */
}

static void finalize(ompt_data_t *tool_data) { (void)tool_data; }

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                          const char *runtime_version) {
    (void)omp_version;
    (void)runtime_version;
    static ompt_start_tool_result_t result = {initialize, finalize, {0}};
    return &result;
}
