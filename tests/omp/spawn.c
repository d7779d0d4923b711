/* A process that starts two more: one exec'd (this program again, as
 * "exec-child") and one forked that keeps running without exec. Each
 * process runs its own number of parallel regions and prints
 * "<role> pid <pid> ppid <ppid> regions <n>", so a test knows exactly which
 * process recorded what. With "mpi" as the first argument the parent is an
 * MPI rank (MPI_Init before the children start, MPI_Finalize after) and the
 * children never call MPI. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef WITH_MPI
#include <mpi.h>
#endif

static volatile double sink;

static void regions(int n) {
  for (int i = 0; i < n; i++) {
#pragma omp parallel
    {
      double x = 0;
      for (int j = 0; j < 2000; j++)
        x += j * 0.5;
#pragma omp atomic
      sink += x;
    }
  }
}

static void report(const char *role, int n) {
  printf("%s pid %d ppid %d regions %d\n", role, (int)getpid(), (int)getppid(), n);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
    regions(30);
    report("exec-child", 30);
    return 0;
  }
  int rank = 0;
#ifdef WITH_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
  regions(50); /* the parent is recording before its children start */
  pid_t forked = fork();
  if (forked == 0) {
    regions(20);
    report("fork-child", 20);
    exit(0);
  }
  pid_t execd = fork();
  if (execd == 0) {
    execl("/proc/self/exe", argv[0], "exec-child", (char *)NULL);
    _exit(127);
  }
  int status = 0, ok = 1;
  waitpid(forked, &status, 0);
  ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  waitpid(execd, &status, 0);
  ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  regions(40);
  char role[32];
  snprintf(role, sizeof role, "parent-%d", rank);
  report(role, 90);
#ifdef WITH_MPI
  MPI_Finalize();
#endif
  return ok ? 0 : 1;
}
