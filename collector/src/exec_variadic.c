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
#define EXECV 0
#define EXECVP 1
#define EXECVE 2

extern char **environ;

/* The exec `how` of `path` with `first` and the arguments after it in
 * `*args` up to the null pointer, and for EXECVE the environment after
 * that (the others: `environ`). The arguments are counted first (-1 with
 * E2BIG past INT_MAX - 1, as glibc), then gathered into a vector on the
 * stack: no allocation, nothing but `va_*` between a `fork` and the exec. */
static int exec_list(int how, const char *path, const char *first, va_list *args) {
  va_list count;
  va_copy(count, *args);
  int argc = 1;
  for (; va_arg(count, const char *) != NULL; argc++) {
    if (argc == INT_MAX - 1) {
      va_end(count);
      errno = E2BIG;
      return -1;
    }
  }
  va_end(count);
  char *argv[argc + 1];
  argv[0] = (char *)first;
  for (int i = 1; i <= argc; i++)
    argv[i] = va_arg(*args, char *);
  char *const *envp = how == EXECVE ? va_arg(*args, char *const *) : environ;
  return hyscope_exec_variadic(how, path, argv, envp);
}

HIDDEN int hyscope_execl(const char *path, const char *arg, ...) {
  va_list args;
  va_start(args, arg);
  int result = exec_list(EXECV, path, arg, &args);
  va_end(args);
  return result;
}

HIDDEN int hyscope_execlp(const char *file, const char *arg, ...) {
  va_list args;
  va_start(args, arg);
  int result = exec_list(EXECVP, file, arg, &args);
  va_end(args);
  return result;
}

HIDDEN int hyscope_execle(const char *path, const char *arg, ...) {
  va_list args;
  va_start(args, arg);
  int result = exec_list(EXECVE, path, arg, &args);
  va_end(args);
  return result;
}
