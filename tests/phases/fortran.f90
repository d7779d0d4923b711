! Phases from Fortran through the hyscope module: "start" (sleeps 10 ms:
! the first call into hyscope also starts its collector, so this one's
! begin is late), then "outer" around 3 time steps of "inner" (each sleeps
! 30 ms, step 1 sleeps 80 ms), then a mark "tail" (sleeps 20 ms) that lasts
! until the end. Prints each interval it measured around the calls
! (phase <name> <step> <ns>) and a result line; without hyscope it runs
! and prints the same result.
program phases_fortran
  use hyscope
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
  integer(8) :: t0, t1, o0, o1, rate
  integer :: step, rc, total
  total = 0
  call system_clock(count_rate=rate)
  call hyscope_phase_begin("start")
  rc = usleep(10000_c_int)
  call hyscope_phase_end("start")
  call system_clock(o0)
  call hyscope_phase_begin("outer")
  do step = 0, 2
    call hyscope_iteration(step)
    call system_clock(t0)
    call hyscope_phase_begin("inner")
    if (step == 1) then
      rc = usleep(80000_c_int)
    else
      rc = usleep(30000_c_int)
    end if
    total = total + step
    call hyscope_phase_end("inner")
    call system_clock(t1)
    print '(a,i0,a,i0)', 'phase inner ', step, ' ', (t1 - t0) * (1000000000_8 / rate)
  end do
  call hyscope_phase_end()
  call system_clock(o1)
  print '(a,i0)', 'phase outer -1 ', (o1 - o0) * (1000000000_8 / rate)
  call hyscope_phase_mark("tail")
  rc = usleep(20000_c_int)
  print '(a,i0)', 'result ', total
end program phases_fortran
