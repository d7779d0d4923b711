//! Exported MPI symbols as trampolines that hand the call site to the wrapper.
//!
//! Stable Rust has no `__builtin_return_address`, and the collector is built
//! without frame pointers, so the exported symbol is a naked function: it
//! reads the return address at `[rsp]` and calls the wrapper with it as an
//! extra *first* argument, shifting the others by one register (r9 moves to
//! the stack; the caller's stack arguments are copied: as many as the
//! signature has, at most 8, enough for MPI's longest signatures of 14
//! arguments). A handful of moves.
//!
//! When the program uses the other MPI flavour (see `mpi::foreign`), the shim
//! jumps straight to the program's `PMPI_*` with the registers untouched: a
//! wrapper typed for one flavour would truncate the other's handles (MPICH's
//! are 32-bit ints, Open MPI's 64-bit pointers). Fast path: one compare of
//! `FLAVOUR_CHECK` against 1 ("ours"); anything else goes to [`resolve`].
//!
//! Stack at entry: `[rsp]` return address, `[rsp+8+8i]` stack argument i.
//! After `sub rsp, 72` (which also restores 16-byte alignment for the call):
//! new stack argument 0 = old r9 at `[rsp]`, old stack argument i at
//! `[rsp+80+8i]` copied to `[rsp+8+8i]`.

/// `shim!(path::to::inner => "SYMBOL", "symbol_", ...)`: export each symbol as
/// a trampoline to `inner(callsite, args...)`.
/// `shim!(path::to::inner, args = N => ...)`: the same for a function of N
/// arguments (callsite not counted), which copies only the stack arguments
/// it has (none up to 6 arguments) instead of the 8 the longest signatures need.
#[macro_export]
#[doc(hidden)]
macro_rules! mpi_shim {
    ($inner:path => $($export:expr),+ $(,)?) => {
        $crate::mpi_shim!($inner, args = 14 => $($export),+);
    };
    ($inner:path, args = $n:expr => $($export:expr),+ $(,)?) => {$(
        const _: () = {
            // Caller's stack arguments to move (the 7th and later; the 6th
            // moves from r9 to the stack).
            const N: usize = $n;
            const COPIES: usize = N.saturating_sub(6);
            const _: () = assert!(COPIES <= 8, "the shim copies at most 8 stack arguments");
            static NAME: &str = concat!($export, "\0");
            static REAL: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
            #[unsafe(naked)]
            #[unsafe(export_name = $export)]
            unsafe extern "C" fn shim() {
                core::arch::naked_asm!(
                    "cmp byte ptr [rip + {check}], 1",
                    "jne 2f",
                    "3:",
                    "mov r11, [rsp]",
                    "sub rsp, 72",
                    "mov [rsp], r9",
                    // Old stack argument i at [rsp+80+8i] to [rsp+8+8i], i < COPIES.
                    ".set hyscope_shim_i, 0",
                    ".rept {copies}",
                    "mov r10, [rsp + 80 + 8 * hyscope_shim_i]",
                    "mov [rsp + 8 + 8 * hyscope_shim_i], r10",
                    ".set hyscope_shim_i, hyscope_shim_i + 1",
                    ".endr",
                    "mov r9, r8",
                    "mov r8, rcx",
                    "mov rcx, rdx",
                    "mov rdx, rsi",
                    "mov rsi, rdi",
                    "mov rdi, r11",
                    "call {inner}",
                    "add rsp, 72",
                    "ret",
                    // Not known to be ours: save the argument registers (6 pushes
                    // + 8 keep the call aligned), ask resolve, restore them.
                    "2:",
                    "push rdi", "push rsi", "push rdx", "push rcx", "push r8", "push r9",
                    "sub rsp, 8",
                    "lea rdi, [rip + {name}]",
                    "lea rsi, [rip + {real}]",
                    "call {resolve}",
                    "add rsp, 8",
                    "pop r9", "pop r8", "pop rcx", "pop rdx", "pop rsi", "pop rdi",
                    "test rax, rax",
                    "jz 3b",
                    "jmp rax",
                    inner = sym $inner,
                    copies = const COPIES,
                    check = sym $crate::mpi::FLAVOUR_CHECK,
                    name = sym NAME,
                    real = sym REAL,
                    resolve = sym $crate::mpi::shim::resolve,
                );
            }
        };
    )+};
}

/// Where a shim goes when the flavour is not known to be ours: 0 to run the
/// wrapper (this library's MPI), else the address of the program's own
/// `PMPI_*`/`pmpi_*` for `name` (cached in `real`).
///
/// # Safety
/// `name` points to a `&'static str` ending in NUL.
pub unsafe extern "C" fn resolve(
    name: &&'static str,
    real: &std::sync::atomic::AtomicUsize,
) -> usize {
    use std::sync::atomic::Ordering;
    if !super::foreign() {
        return 0;
    }
    let cached = real.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    let name = name.trim_end_matches('\0');
    let prefix = if name.starts_with('M') { "P" } else { "p" };
    let Ok(pname) = std::ffi::CString::new(format!("{prefix}{name}")) else {
        return 0;
    };
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT finds the program's MPI
    // first (it precedes this library's own MPI dependency in load order).
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, pname.as_ptr()) } as usize;
    real.store(p, Ordering::Relaxed);
    // Not found: the wrapper passes the call through as before.
    p
}
