//! Exported MPI symbols as trampolines that hand the call site to the wrapper.
//!
//! Stable Rust has no `__builtin_return_address`, and the collector is built
//! without frame pointers, so the exported symbol is a naked function: it
//! reads the return address at `[rsp]` and calls the wrapper with it as an
//! extra *first* argument, shifting the others by one register (r9 moves to
//! the stack; up to 8 stack arguments are copied, enough for MPI's longest
//! signatures of 14 arguments). About a dozen moves: ~2 ns.
//!
//! Stack at entry: `[rsp]` return address, `[rsp+8+8i]` stack argument i.
//! After `sub rsp, 72` (which also restores 16-byte alignment for the call):
//! new stack argument 0 = old r9 at `[rsp]`, old stack argument i at
//! `[rsp+80+8i]` copied to `[rsp+8+8i]`.

/// `shim!(path::to::inner => "SYMBOL", "symbol_", ...)`: export each symbol as
/// a trampoline to `inner(callsite, args...)`.
#[macro_export]
#[doc(hidden)]
macro_rules! mpi_shim {
    ($inner:path => $($export:expr),+ $(,)?) => {$(
        const _: () = {
            #[unsafe(naked)]
            #[unsafe(export_name = $export)]
            unsafe extern "C" fn shim() {
                core::arch::naked_asm!(
                    "mov r11, [rsp]",
                    "sub rsp, 72",
                    "mov [rsp], r9",
                    "mov r10, [rsp + 80]",
                    "mov [rsp + 8], r10",
                    "mov r10, [rsp + 88]",
                    "mov [rsp + 16], r10",
                    "mov r10, [rsp + 96]",
                    "mov [rsp + 24], r10",
                    "mov r10, [rsp + 104]",
                    "mov [rsp + 32], r10",
                    "mov r10, [rsp + 112]",
                    "mov [rsp + 40], r10",
                    "mov r10, [rsp + 120]",
                    "mov [rsp + 48], r10",
                    "mov r10, [rsp + 128]",
                    "mov [rsp + 56], r10",
                    "mov r10, [rsp + 136]",
                    "mov [rsp + 64], r10",
                    "mov r9, r8",
                    "mov r8, rcx",
                    "mov rcx, rdx",
                    "mov rdx, rsi",
                    "mov rsi, rdi",
                    "mov rdi, r11",
                    "call {inner}",
                    "add rsp, 72",
                    "ret",
                    inner = sym $inner,
                );
            }
        };
    )+};
}
