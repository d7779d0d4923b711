/* A process that replaces its program (exec), with known answers.
 *
 * The arguments are steps, done in order; the program execs itself with
 * the steps after an exec step, so each program (image) of the process does
 * its own share:
 *   N          run N parallel regions of 2 threads
 *   execv execve execvp execvpe execl execle execlp fexecve execveat
 *              exec this program again with the remaining steps, through
 *              that C library function (the p-variants by name: the test
 *              puts this program's directory first in PATH)
 *   true       execv("/bin/true"): the process ends as a program that
 *              records nothing
 *   missing    execv of a path that does not exist: fails (ENOENT), and
 *              this program goes on with the next step
 *   noexec     execv of an executable file that is no program (written next
 *              to this one): fails (ENOEXEC) after the file is found, and
 *              this program goes on
 *   busy K     a thread of its own runs K regions, then stays inside an
 *              endless parallel region of 2 threads: the exec that follows
 *              comes while other threads are inside OpenMP
 *   spin K     spin K ms on the initial thread, outside any parallel region
 *              (serial code: no OpenMP or MPI event marks it); prints
 *                spin <K> from <ns> to <ns>
 *              with CLOCK_MONOTONIC's times at its start and end
 *   fork N M   a child made by fork runs N regions of 1 thread (so that no
 *              new thread, and none of the collector's, starts in it), then
 *              execs this program to run M regions; this program waits
 *              for it
 *   vfork M    a child made by vfork execs this program to run M regions;
 *              this program waits for it
 *   crash      end with SIGSEGV
 *   init       MPI_Init (built with -DWITH_MPI)
 *   finalize   MPI_Allreduce, then MPI_Finalize
 * Each program prints, when it ends (exec, exit or crash),
 *   image pid <pid> rank <MPI rank, or -1> regions <n> end <exec HOW PATH | exit | crash>
 * with <n> the regions it ran to their end (its own thread's and the busy
 * thread's), and for each exec that failed
 *   failed <step> errno <errno>
 * so a test knows what each program of the process recorded and how it
 * ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef WITH_MPI
#include <mpi.h>
#endif

extern char **environ;

static volatile double sink;
static int regions_run;
static int mpi_rank = -1;

static int team = 2;

static void regions(int n) {
  for (int i = 0; i < n; i++) {
#pragma omp parallel num_threads(team)
    {
      double x = 0;
      for (int j = 0; j < 2000; j++)
        x += j * 0.5;
#pragma omp atomic
      sink += x;
    }
  }
}

static atomic_int busy_done;
static int busy_regions;

static void *busy(void *arg) {
  (void)arg;
  regions(busy_regions);
  atomic_store(&busy_done, 1);
#pragma omp parallel num_threads(2)
  {
    for (;;)
      sink += 1;
  }
  return NULL;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Spin `ms` ms outside OpenMP; print when. */
static void spin(int ms) {
  long long from = now_ns(), to = from;
  while (to - from < (long long)ms * 1000000LL) {
    sink += 1;
    to = now_ns();
  }
  printf("spin %d from %lld to %lld\n", ms, from, to);
  fflush(stdout);
}

static void image_end(const char *end) {
  printf("image pid %d rank %d regions %d end %s\n", (int)getpid(), mpi_rank, regions_run, end);
  fflush(stdout);
}

static void failed(const char *step) {
  printf("failed %s errno %d\n", step, errno);
  fflush(stdout);
}

int main(int argc, char **argv) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    return 2;
  self[len] = 0;
  const char *name = strrchr(self, '/') + 1;
  for (int i = 1; i < argc; i++) {
    const char *step = argv[i];
    /* The vector of the next program: this one with the steps after i. */
    char *next[argc - i + 1];
    next[0] = argv[0];
    for (int k = i + 1; k < argc; k++)
      next[k - i] = argv[k];
    next[argc - i] = NULL;
    char end[PATH_MAX + 64];
    snprintf(end, sizeof end, "exec %s %s", step, self);
    if (step[0] >= '0' && step[0] <= '9') {
      int n = atoi(step);
      regions(n);
      regions_run += n;
    } else if (strcmp(step, "busy") == 0 && i + 1 < argc) {
      busy_regions = atoi(argv[++i]);
      pthread_t t;
      pthread_create(&t, NULL, busy, NULL);
      while (!atomic_load(&busy_done))
        usleep(1000);
      usleep(20000); /* the busy team is inside its endless region */
      regions_run += busy_regions;
    } else if (strcmp(step, "spin") == 0 && i + 1 < argc) {
      spin(atoi(argv[++i]));
    } else if (strcmp(step, "true") == 0) {
      image_end("exec true /bin/true");
      execv("/bin/true", (char *[]){"true", NULL});
      failed(step);
    } else if (strcmp(step, "missing") == 0) {
      execv("/nonexistent-hyscope-test/prog", next);
      failed(step);
    } else if (strcmp(step, "noexec") == 0) {
      char path[PATH_MAX + 16];
      snprintf(path, sizeof path, "%s.noexec", self);
      FILE *f = fopen(path, "w");
      if (!f)
        return 3;
      fputs("not a program\n", f);
      fclose(f);
      chmod(path, 0755);
      execv(path, next);
      failed(step);
    } else if (strcmp(step, "fork") == 0 && i + 2 < argc) {
      int n = atoi(argv[i + 1]);
      char *child[] = {argv[0], argv[i + 2], NULL};
      i += 2;
      pid_t pid = fork();
      if (pid == 0) {
        regions_run = 0;
        team = 1;
        regions(n);
        regions_run = n;
        snprintf(end, sizeof end, "exec execv %s", self);
        image_end(end);
        execv(self, child);
        _exit(127);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 8;
    } else if (strcmp(step, "vfork") == 0 && i + 1 < argc) {
      char *child[] = {argv[0], argv[++i], NULL};
      pid_t pid = vfork();
      if (pid == 0) {
        execv(self, child);
        _exit(127);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 8;
    } else if (strcmp(step, "crash") == 0) {
      image_end("crash");
      raise(SIGSEGV);
      return 4;
    } else if (strcmp(step, "init") == 0) {
#ifdef WITH_MPI
      MPI_Init(&argc, &argv);
      MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
#else
      return 5;
#endif
    } else if (strcmp(step, "finalize") == 0) {
#ifdef WITH_MPI
      double one = 1, sum = 0;
      MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Finalize();
#else
      return 5;
#endif
    } else {
      image_end(end);
      if (strcmp(step, "execv") == 0) {
        execv(self, next);
      } else if (strcmp(step, "execve") == 0) {
        execve(self, next, environ);
      } else if (strcmp(step, "execvp") == 0) {
        execvp(name, next);
      } else if (strcmp(step, "execvpe") == 0) {
        execvpe(name, next, environ);
      } else if (strcmp(step, "fexecve") == 0) {
        int fd = open(self, O_RDONLY);
        fexecve(fd, next, environ);
      } else if (strcmp(step, "execveat") == 0) {
        execveat(AT_FDCWD, self, next, environ, 0);
      } else if (strcmp(step, "execl") == 0 || strcmp(step, "execle") == 0 ||
                 strcmp(step, "execlp") == 0) {
        /* The variadic calls take the next program's steps one by one: at
         * most 6 of them (enough for the tests). execl and execlp get all
         * six, null after the last step, so that their arguments go past
         * the six a call passes in registers; execle needs its environment
         * right after the first null. */
        int count = argc - i - 1;
        if (count > 6)
          return 6;
        char *a[6] = {0};
        for (int k = 0; k < count; k++)
          a[k] = next[k + 1];
        if (strcmp(step, "execl") == 0)
          execl(self, argv[0], a[0], a[1], a[2], a[3], a[4], a[5], (char *)NULL);
        else if (strcmp(step, "execlp") == 0)
          execlp(name, argv[0], a[0], a[1], a[2], a[3], a[4], a[5], (char *)NULL);
        else if (count == 0)
          execle(self, argv[0], (char *)NULL, environ);
        else if (count == 1)
          execle(self, argv[0], a[0], (char *)NULL, environ);
        else if (count == 2)
          execle(self, argv[0], a[0], a[1], (char *)NULL, environ);
        else if (count == 3)
          execle(self, argv[0], a[0], a[1], a[2], (char *)NULL, environ);
        else if (count == 4)
          execle(self, argv[0], a[0], a[1], a[2], a[3], (char *)NULL, environ);
        else if (count == 5)
          execle(self, argv[0], a[0], a[1], a[2], a[3], a[4], (char *)NULL, environ);
        else
          execle(self, argv[0], a[0], a[1], a[2], a[3], a[4], a[5], (char *)NULL, environ);
      } else {
        fprintf(stderr, "unknown step %s\n", step);
        return 7;
      }
      failed(step);
      return 1;
    }
  }
  image_end("exit");
  return 0;
}
