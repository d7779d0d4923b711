//! Readable names for the symbols of C++, Rust and Fortran code.
//!
//! The trace keeps each symbol as the linker knows it (the JSON's `function`);
//! what a user reads — labels in the report, the TUI, the GUI and the exports —
//! goes through [`demangle`], the one place that knows the mangling schemes.

use std::borrow::Cow;

/// The readable form of a symbol: C++ (Itanium ABI, as GCC and Clang mangle it),
/// Rust (legacy and v0 schemes, without the hash) and gfortran module
/// procedures (`__mod_MOD_proc` → `mod::proc`); anything else is returned as is.
pub fn demangle(symbol: &str) -> Cow<'_, str> {
    if let Ok(d) = rustc_demangle::try_demangle(symbol) {
        // `{:#}` leaves out the hash suffix, which only tells builds apart.
        return Cow::Owned(format!("{d:#}"));
    }
    if symbol.starts_with("_Z")
        && let Ok(s) = cpp_demangle::Symbol::new(symbol)
        && let Ok(d) = s.demangle()
    {
        return Cow::Owned(d);
    }
    if let Some(d) = gfortran_module_procedure(symbol) {
        return Cow::Owned(d);
    }
    Cow::Borrowed(symbol)
}

/// gfortran names a module procedure `__<module>_MOD_<procedure>`.
fn gfortran_module_procedure(symbol: &str) -> Option<String> {
    let rest = symbol.strip_prefix("__")?;
    let (module, procedure) = rest.split_once("_MOD_")?;
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    (ident(module) && ident(procedure)).then(|| format!("{module}::{procedure}"))
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn cpp_rust_and_fortran_symbols_read_as_written() {
        assert_eq!(
            demangle("_ZN9LAMMPS_NS9CommBrick12reverse_commEv"),
            "LAMMPS_NS::CommBrick::reverse_comm()"
        );
        assert_eq!(
            demangle("_ZN5hello4main17h1234567890abcdefE"),
            "hello::main"
        );
        assert_eq!(demangle("__halo_MOD_exchange"), "halo::exchange");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("MPI_Send"), "MPI_Send");
        // Not a symbol of any scheme, though it looks like one: left alone.
        assert_eq!(demangle("_Znotmangled"), "_Znotmangled");
        assert_eq!(demangle("__x_MOD_"), "__x_MOD_");
    }
}
