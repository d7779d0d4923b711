! Fortran: ring of ROUNDS blocking sends of (rank+1)*10 integers to the next
! rank, one isend/irecv pair completed by wait and one by waitall (4 integers),
! barrier, bcast (5 integers from 0), reduce and allreduce (3 integers).
program fring
  use mpi
  implicit none
  integer, parameter :: ROUNDS = 2
  integer :: ierr, rank, nprocs, nxt, prv, k, provided
  integer :: outb(100), inb(100), st(MPI_STATUS_SIZE), reqs(2), sts(MPI_STATUS_SIZE, 2)
  integer :: req
  outb = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  nxt = mod(rank + 1, nprocs)
  prv = mod(rank - 1 + nprocs, nprocs)
  do k = 1, ROUNDS
    if (mod(rank, 2) == 0) then
      call MPI_SEND(outb, (rank + 1) * 10, MPI_INTEGER, nxt, rank, MPI_COMM_WORLD, ierr)
      call MPI_RECV(inb, (prv + 1) * 10, MPI_INTEGER, prv, prv, MPI_COMM_WORLD, st, ierr)
    else
      call MPI_RECV(inb, (prv + 1) * 10, MPI_INTEGER, prv, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_SEND(outb, (rank + 1) * 10, MPI_INTEGER, nxt, rank, MPI_COMM_WORLD, ierr)
    end if
  end do
  call MPI_IRECV(inb, 4, MPI_INTEGER, prv, 50, MPI_COMM_WORLD, req, ierr)
  call MPI_ISEND(outb, 4, MPI_INTEGER, nxt, 50, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_WAIT(req, st, ierr)
  if (st(MPI_SOURCE) /= prv) stop 9
  call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
  call MPI_IRECV(inb, 4, MPI_INTEGER, prv, 51, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(outb, 4, MPI_INTEGER, nxt, 51, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_WAITALL(2, reqs, sts, ierr)
  if (sts(MPI_SOURCE, 1) /= prv) stop 10
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_BCAST(outb, 5, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_REDUCE(outb, inb, 3, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  outb(1:3) = 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, outb, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (outb(1) /= nprocs) stop 11
  call MPI_FINALIZE(ierr)
end program fring
