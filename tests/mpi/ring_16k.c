/* A ring of 16 KiB messages whose eager/rendezvous split is known on two
 * nodes (viewer/tests/record_two_nodes.rs): ROUNDS times, every rank sends
 * 2048 doubles to each neighbour (MPI_Isend, MPI_Irecv, MPI_Waitall). With 4
 * ranks placed by slot on two nodes of 2 slots, ranks 0 and 1 share a node,
 * and 2 and 3 the other: half of the 4 × 2 × ROUNDS messages stay on a node,
 * above Open MPI's shared-memory eager limit (vader, 4 KiB), and half cross
 * the network, below its TCP eager limit (64 KiB). Each rank prints how many
 * of its sends went to a rank of its own node (by MPI_COMM_TYPE_SHARED). */
#include <mpi.h>
#include <stdio.h>

#define ROUNDS 3
#define DOUBLES 2048

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Group world_group, node_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(node, &node_group);
    int peers[2] = {left, right}, on_node[2];
    MPI_Group_translate_ranks(world_group, 2, peers, node_group, on_node);
    int within = 0;
    static double out[DOUBLES], in[2][DOUBLES];
    for (int i = 0; i < DOUBLES; i++) out[i] = rank;
    for (int r = 0; r < ROUNDS; r++) {
        MPI_Request q[4];
        MPI_Irecv(in[0], DOUBLES, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(in[1], DOUBLES, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(out, DOUBLES, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(out, DOUBLES, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        for (int s = 0; s < 2; s++) within += on_node[s] != MPI_UNDEFINED;
    }
    int total_within = 0;
    MPI_Reduce(&within, &total_within, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("messages %d\n", 2 * ROUNDS * size);
        printf("within_node %d\n", total_within);
    }
    MPI_Group_free(&node_group);
    MPI_Group_free(&world_group);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
