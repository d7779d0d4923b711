! hyscope.f90 — the phases of hyscope.h for Fortran (iso_c_binding).
!
!   use hyscope
!   call hyscope_phase_begin("solver")  ...  call hyscope_phase_end("solver")
!   call hyscope_iteration(step)          the time step of the phases begun from here
!   call hyscope_phase_mark("I/O")        a phase that lasts until the next mark
!   call hyscope_phase_end()              ends the innermost open phase
!
! Compile this file with the program (gfortran -c hyscope.f90); it needs no
! library. As in hyscope.h, each entry point of libhyscope.so is looked up
! once with dlsym(RTLD_DEFAULT, ...) and called only when the library is
! loaded (`hyscope record`); otherwise a call does nothing. Names are passed
! trimmed of trailing blanks.
module hyscope
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: hyscope_phase_begin, hyscope_phase_end, hyscope_phase_mark, hyscope_iteration

  interface
    ! void *dlsym(void *handle, const char *name): glibc's RTLD_DEFAULT is NULL.
    function c_dlsym(handle, name) bind(C, name="dlsym") result(f)
      import :: c_ptr, c_funptr, c_char
      type(c_ptr), value :: handle
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_funptr) :: f
    end function c_dlsym
  end interface

  abstract interface
    subroutine name_fn(name) bind(C)
      import :: c_ptr
      type(c_ptr), value :: name
    end subroutine name_fn
    subroutine step_fn(step) bind(C)
      import :: c_long_long
      integer(c_long_long), value :: step
    end subroutine step_fn
  end interface

  procedure(name_fn), pointer, save :: p_begin => null(), p_end => null(), p_mark => null()
  procedure(step_fn), pointer, save :: p_iteration => null()
  logical, save :: looked_up = .false.

contains

  subroutine look_up()
    type(c_funptr) :: f
    if (looked_up) return
    f = c_dlsym(c_null_ptr, "hyscope_phase_begin"//c_null_char)
    if (c_associated(f)) call c_f_procpointer(f, p_begin)
    f = c_dlsym(c_null_ptr, "hyscope_phase_end"//c_null_char)
    if (c_associated(f)) call c_f_procpointer(f, p_end)
    f = c_dlsym(c_null_ptr, "hyscope_phase_mark"//c_null_char)
    if (c_associated(f)) call c_f_procpointer(f, p_mark)
    f = c_dlsym(c_null_ptr, "hyscope_iteration"//c_null_char)
    if (c_associated(f)) call c_f_procpointer(f, p_iteration)
    looked_up = .true.
  end subroutine look_up

  ! Call `fn` with `name` as a C string, or NULL when it is absent.
  subroutine call_named(fn, name)
    procedure(name_fn), pointer, intent(in) :: fn
    character(len=*), intent(in), optional :: name
    character(kind=c_char, len=:), allocatable, target :: buf
    if (.not. associated(fn)) return
    if (present(name)) then
      buf = trim(name)//c_null_char
      call fn(c_loc(buf))
    else
      call fn(c_null_ptr)
    end if
  end subroutine call_named

  !> Begin the phase `name` on the calling thread (nested in the open ones).
  subroutine hyscope_phase_begin(name)
    character(len=*), intent(in) :: name
    call look_up()
    call call_named(p_begin, name)
  end subroutine hyscope_phase_begin

  !> End the innermost open phase called `name` (absent: the innermost one).
  subroutine hyscope_phase_end(name)
    character(len=*), intent(in), optional :: name
    call look_up()
    call call_named(p_end, name)
  end subroutine hyscope_phase_end

  !> End the current mark phase and begin `name` (absent: only end it).
  subroutine hyscope_phase_mark(name)
    character(len=*), intent(in), optional :: name
    call look_up()
    call call_named(p_mark, name)
  end subroutine hyscope_phase_mark

  !> The time step of the phases begun from now on.
  subroutine hyscope_iteration(step)
    integer, intent(in) :: step
    call look_up()
    if (associated(p_iteration)) call p_iteration(int(step, c_long_long))
  end subroutine hyscope_iteration

end module hyscope
