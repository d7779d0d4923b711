/* The variadic exec calls, as glibc defines them, but built on the
 * collector's exec (exec.rs, `hyscope_exec_variadic`): glibc's own call its
 * internal `__execve`, out of an interposer's reach. Each gathers its
 * arguments up to the terminating null pointer (and `execle` the
 * environment after it) into a vector on the stack, as glibc does. Reached
 * from the Rust symbols `execl`, `execlp` and `execle` (exec.rs), which jump
 * here: a shared library built by Rust exports only Rust's symbols. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* 0: execv, 1: execvp, 2: execve (exec.rs). */
int hyscope_exec_variadic(int how, const char *path, char *const argv[], char *const envp[]);

extern char **environ;

/* The arguments from `first` up to the null pointer (not counted); -1 with
 * E2BIG past INT_MAX - 1, as glibc. */
#define COUNT_ARGS(first, argc)                                                                    \
  do {                                                                                             \
    va_list count;                                                                                 \
    va_start(count, first);                                                                        \
    for (argc = 1; va_arg(count, const char *) != NULL; argc++) {                                  \
      if (argc == INT_MAX - 1) {                                                                   \
        va_end(count);                                                                             \
        errno = E2BIG;                                                                             \
        return -1;                                                                                 \
      }                                                                                            \
    }                                                                                              \
    va_end(count);                                                                                 \
  } while (0)

HIDDEN int hyscope_execl(const char *path, const char *arg, ...) {
  int argc;
  COUNT_ARGS(arg, argc);
  char *argv[argc + 1];
  va_list args;
  va_start(args, arg);
  argv[0] = (char *)arg;
  for (int i = 1; i <= argc; i++)
    argv[i] = va_arg(args, char *);
  va_end(args);
  return hyscope_exec_variadic(0, path, argv, environ);
}

HIDDEN int hyscope_execlp(const char *file, const char *arg, ...) {
  int argc;
  COUNT_ARGS(arg, argc);
  char *argv[argc + 1];
  va_list args;
  va_start(args, arg);
  argv[0] = (char *)arg;
  for (int i = 1; i <= argc; i++)
    argv[i] = va_arg(args, char *);
  va_end(args);
  return hyscope_exec_variadic(1, file, argv, environ);
}

HIDDEN int hyscope_execle(const char *path, const char *arg, ...) {
  int argc;
  COUNT_ARGS(arg, argc);
  char *argv[argc + 1];
  va_list args;
  va_start(args, arg);
  argv[0] = (char *)arg;
  for (int i = 1; i <= argc; i++)
    argv[i] = va_arg(args, char *);
  char *const *envp = va_arg(args, char *const *);
  va_end(args);
  return hyscope_exec_variadic(2, path, argv, envp);
}
