//! A per-thread pointer that the hot path reads with one `%fs`-relative load.
//!
//! Rust's `thread_local!` in a shared library uses the general-dynamic TLS
//! model: every access calls `__tls_get_addr` (a call and ≈ 11 instructions,
//! on every OMPT callback and MPI wrapper). A library loaded at start-up, as
//! `LD_PRELOAD` does, may use the initial-exec model instead: the slot's offset
//! from the thread pointer is in the GOT, and a read is one load through `%fs`
//! (glibc's static TLS block; a `dlopen` of the library also works, from the
//! static TLS surplus glibc keeps for such libraries). Stable Rust cannot choose
//! the model, so on x86-64 Linux the slot is declared in assembly; elsewhere it
//! is a `thread_local!` `Cell`.
//!
//! Like a `const` `Cell` thread-local, the slot has no destructor: callbacks
//! that arrive after the thread's TLS destructors ran (at exit, docs/platform.md
//! "Quirks") still read it.

/// Declares `mod $name` with `get() -> *mut T` and `set(*mut T)`, a null
/// pointer per thread until `set`. `$symbol` is the slot's assembly name,
/// unique in the program (the symbol is hidden, so other libraries are not
/// concerned).
#[macro_export]
macro_rules! thread_ptr {
    ($(#[$doc:meta])* $vis:vis mod $name:ident: $ty:ty = $symbol:literal) => {
        $(#[$doc])*
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            ::core::arch::global_asm!(concat!(
                ".pushsection .tbss.", $symbol, ",\"awT\",@nobits\n",
                ".p2align 3\n",
                ".globl ", $symbol, "\n",
                ".hidden ", $symbol, "\n",
                ".type ", $symbol, ",@object\n",
                ".size ", $symbol, ",8\n",
                $symbol, ":\n",
                ".zero 8\n",
                ".popsection\n",
            ));

            /// The calling thread's pointer (null until [`set`]).
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            #[inline(always)]
            pub fn get() -> *mut $ty {
                let p: *mut $ty;
                // SAFETY: reads this thread's 8-byte TLS slot declared above.
                unsafe {
                    ::core::arch::asm!(
                        concat!("mov {p}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                        "mov {p}, qword ptr fs:[{p}]",
                        p = out(reg) p,
                        options(nostack, readonly, preserves_flags, pure),
                    );
                }
                p
            }

            /// Set the calling thread's pointer.
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            #[inline]
            pub fn set(value: *mut $ty) {
                // SAFETY: writes this thread's 8-byte TLS slot declared above.
                unsafe {
                    ::core::arch::asm!(
                        concat!("mov {off}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                        "mov qword ptr fs:[{off}], {v}",
                        off = out(reg) _,
                        v = in(reg) value,
                        options(nostack, preserves_flags),
                    );
                }
            }

            #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
            ::std::thread_local! {
                static SLOT: ::std::cell::Cell<*mut $ty> =
                    const { ::std::cell::Cell::new(::std::ptr::null_mut()) };
            }

            /// The calling thread's pointer (null until [`set`]).
            #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
            #[inline(always)]
            pub fn get() -> *mut $ty {
                SLOT.with(|s| s.get())
            }

            /// Set the calling thread's pointer.
            #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
            #[inline]
            pub fn set(value: *mut $ty) {
                SLOT.with(|s| s.set(value))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    struct Payload(u64);

    crate::thread_ptr! {
        mod slot: Payload = "hyscope_ompt_tls_test_slot"
    }

    #[test]
    fn each_thread_has_its_own_pointer() {
        assert!(slot::get().is_null());
        let mine = Box::leak(Box::new(Payload(7)));
        slot::set(mine);
        assert_eq!(slot::get(), mine as *mut Payload);
        let other = std::thread::spawn(|| {
            let before = slot::get().is_null();
            let theirs = Box::leak(Box::new(Payload(9)));
            slot::set(theirs);
            // SAFETY: just set to a leaked box.
            (before, unsafe { (*slot::get()).0 })
        })
        .join()
        .unwrap();
        assert_eq!(other, (true, 9));
        // SAFETY: still this thread's leaked box.
        assert_eq!(unsafe { (*slot::get()).0 }, 7);
    }
}
