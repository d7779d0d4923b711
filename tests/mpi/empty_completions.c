/* Every completion call with no requests and null arrays, as the MPI standard
 * allows (count 0): each must return MPI_SUCCESS with its documented "nothing
 * to do" answer, under the collector as without it. Prints one line per call
 * and "empty completions ok" when every answer was right. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int errs = 0, flag = 0, index = 0, outcount = 0, rc;
    MPI_Status status;
    rc = MPI_Testall(0, NULL, &flag, NULL);
    printf("Testall rc %d flag %d\n", rc, flag);
    errs += rc != MPI_SUCCESS || !flag;
    rc = MPI_Waitall(0, NULL, NULL);
    printf("Waitall rc %d\n", rc);
    errs += rc != MPI_SUCCESS;
    flag = 0;
    rc = MPI_Testany(0, NULL, &index, &flag, &status);
    printf("Testany rc %d flag %d index_undefined %d\n", rc, flag, index == MPI_UNDEFINED);
    errs += rc != MPI_SUCCESS || !flag || index != MPI_UNDEFINED;
    rc = MPI_Waitany(0, NULL, &index, &status);
    printf("Waitany rc %d index_undefined %d\n", rc, index == MPI_UNDEFINED);
    errs += rc != MPI_SUCCESS || index != MPI_UNDEFINED;
    rc = MPI_Testsome(0, NULL, &outcount, NULL, NULL);
    printf("Testsome rc %d outcount_undefined %d\n", rc, outcount == MPI_UNDEFINED);
    errs += rc != MPI_SUCCESS || outcount != MPI_UNDEFINED;
    rc = MPI_Waitsome(0, NULL, &outcount, NULL, NULL);
    printf("Waitsome rc %d outcount_undefined %d\n", rc, outcount == MPI_UNDEFINED);
    errs += rc != MPI_SUCCESS || outcount != MPI_UNDEFINED;
    if (errs == 0)
        printf("empty completions ok\n");
    MPI_Finalize();
    return errs != 0;
}
