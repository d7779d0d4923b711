/* hyscope.h — name the phases of a program for hyscope.
 *
 *   #include <hyscope.h>
 *   hyscope_phase_begin("solver");      ...  hyscope_phase_end("solver");
 *   hyscope_iteration(step);             the time step of the phases begun from here
 *   hyscope_phase_mark("I/O");           a phase that lasts until the next mark
 *
 * Header only: a program including it needs no library and no link flag,
 * and runs unchanged without hyscope. Each function looks its collector
 * entry point up once per process with dlsym(RTLD_DEFAULT, ...) and calls it
 * only when libhyscope.so is loaded (LD_PRELOAD by `hyscope record`);
 * otherwise a call is one load and one branch.
 *
 * Why dlsym and not weak undefined symbols: a weak reference the static
 * linker cannot resolve becomes 0 for good in a non-PIE executable (no
 * dynamic relocation is emitted, so a preloaded library can never supply
 * it), and whether it gets one depends on the linker and its flags. dlsym
 * finds the preloaded library's symbol with every compiler and linker, from
 * C, C++ and (through the same lookup) Fortran. glibc 2.34+ has dlsym in
 * libc; older glibc needs -ldl.
 *
 * Thread safety: every function may be called from any thread; phases are
 * per thread (begin and end on the same thread), nested; the names are
 * copied. Annotate phases, not inner loops: a call into hyscope takes a
 * lock, looks the name up and reads the clock.
 */
#ifndef HYSCOPE_H
#define HYSCOPE_H

#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RTLD_DEFAULT needs _GNU_SOURCE before the first include; glibc defines it as 0. */
#ifdef RTLD_DEFAULT
#define HYSCOPE_RTLD_DEFAULT_ RTLD_DEFAULT
#else
#define HYSCOPE_RTLD_DEFAULT_ ((void *)0)
#endif

/* The entry point `name` of libhyscope.so, looked up once: *cache holds it,
 * or the address of the cache itself once the lookup found nothing. Racing
 * threads store the same value. */
static inline void *hyscope_lookup_(void **cache, const char *name) {
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (f == (void *)0) {
        f = dlsym(HYSCOPE_RTLD_DEFAULT_, name);
        if (f == (void *)0)
            f = (void *)cache;
        __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    }
    return f == (void *)cache ? (void *)0 : f;
}

#define HYSCOPE_CALL_(fn, type, ...)                                          \
    do {                                                                     \
        static void *hyscope_cache_;                                         \
        void *hyscope_f_ = hyscope_lookup_(&hyscope_cache_, #fn);            \
        if (hyscope_f_)                                                      \
            ((type)hyscope_f_)(__VA_ARGS__);                                 \
    } while (0)

/* Begin the phase `name` on the calling thread (nested in the open ones). */
static inline void hyscope_phase_begin(const char *name) {
    HYSCOPE_CALL_(hyscope_phase_begin, void (*)(const char *), name);
}

/* End the calling thread's innermost open phase called `name`
 * (NULL: the innermost open phase). */
static inline void hyscope_phase_end(const char *name) {
    HYSCOPE_CALL_(hyscope_phase_end, void (*)(const char *), name);
}

/* End the calling thread's current mark phase and begin `name`
 * (NULL: only end it). A mark phase lasts until the next mark or the end. */
static inline void hyscope_phase_mark(const char *name) {
    HYSCOPE_CALL_(hyscope_phase_mark, void (*)(const char *), name);
}

/* The time step (iteration) of the phases begun from now on; the report
 * shows a repeated phase's steps with their spread and its slowest step. */
static inline void hyscope_iteration(long long step) {
    HYSCOPE_CALL_(hyscope_iteration, void (*)(long long), step);
}

#ifdef __cplusplus
}
#endif

#endif /* HYSCOPE_H */
