/* Nonblocking exchanges between partners (rank ^ 1), each completed by a
 * different completion call. Phase p (0..7) exchanges (p+1)*2 ints each way.
 * Then: persistent requests (2 Startall rounds of 3 ints), Probe+Recv,
 * Mprobe+Mrecv, Sendrecv, Sendrecv_replace (all 5 ints). Needs an even size. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int partner = rank ^ 1;
    int out[64] = {0}, in[64];
    MPI_Request rq[2];
    MPI_Status st[2];
    int flag = 0, idx, outcount, indices[2], done;
    for (int p = 0; p < 8; p++) {
        int n = (p + 1) * 2;
        MPI_Irecv(in, n, MPI_INT, partner, p, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(out, n, MPI_INT, partner, p, MPI_COMM_WORLD, &rq[1]);
        switch (p) {
        case 0: MPI_Wait(&rq[0], &st[0]); MPI_Wait(&rq[1], MPI_STATUS_IGNORE); break;
        case 1: MPI_Waitall(2, rq, MPI_STATUSES_IGNORE); break;
        case 2: for (done = 0; done < 2; done++) MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE); break;
        case 3: for (done = 0; done < 2; done += outcount) MPI_Waitsome(2, rq, &outcount, indices, st); break;
        case 4:
            for (int i = 0; i < 2; i++) do { MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE); } while (!flag);
            break;
        case 5: do { MPI_Testall(2, rq, &flag, st); } while (!flag); break;
        case 6:
            for (done = 0; done < 2;) { MPI_Testany(2, rq, &idx, &flag, MPI_STATUS_IGNORE); if (flag && idx != MPI_UNDEFINED) done++; }
            break;
        case 7: for (done = 0; done < 2; done += outcount) MPI_Testsome(2, rq, &outcount, indices, MPI_STATUSES_IGNORE); break;
        }
    }
    /* persistent: 2 rounds */
    MPI_Request pr[2];
    MPI_Recv_init(in, 3, MPI_INT, partner, 100, MPI_COMM_WORLD, &pr[0]);
    MPI_Send_init(out, 3, MPI_INT, partner, 100, MPI_COMM_WORLD, &pr[1]);
    for (int k = 0; k < 2; k++) {
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    /* probes */
    MPI_Status s;
    MPI_Message msg;
    if (rank % 2 == 0) {
        MPI_Send(out, 5, MPI_INT, partner, 200, MPI_COMM_WORLD);
        MPI_Send(out, 5, MPI_INT, partner, 201, MPI_COMM_WORLD);
    } else {
        MPI_Probe(partner, 200, MPI_COMM_WORLD, &s);
        MPI_Recv(in, 5, MPI_INT, partner, 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Mprobe(MPI_ANY_SOURCE, 201, MPI_COMM_WORLD, &msg, &s);
        MPI_Mrecv(in, 5, MPI_INT, &msg, MPI_STATUS_IGNORE);
    }
    MPI_Sendrecv(out, 5, MPI_INT, partner, 300, in, 5, MPI_INT, partner, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv_replace(out, 5, MPI_INT, partner, 301, partner, 301, MPI_COMM_WORLD, &s);
    MPI_Finalize();
    return 0;
}
