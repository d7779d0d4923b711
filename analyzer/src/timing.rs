//! `HYSCOPE_TIMING`: when set, the analysis says on stderr when each of its
//! steps ends, in seconds since the analysis began (and, set to `ranks`, how
//! long each rank's decoding and pass took).

use std::sync::OnceLock;
use std::time::Instant;

/// `HYSCOPE_TIMING`'s value (read once).
fn value() -> Option<&'static str> {
    static VALUE: OnceLock<Option<String>> = OnceLock::new();
    VALUE
        .get_or_init(|| hyscope_format::settings::TIMING.from_env().0)
        .as_deref()
}

/// Whether `HYSCOPE_TIMING` is set.
pub fn enabled() -> bool {
    value().is_some()
}

/// Whether each rank's steps are wanted too (`HYSCOPE_TIMING=ranks`).
pub(crate) fn ranks() -> bool {
    value() == Some("ranks")
}

/// When the analysis began: the first call (made as it starts).
fn origin() -> Instant {
    static AT: OnceLock<Instant> = OnceLock::new();
    *AT.get_or_init(Instant::now)
}

/// Start the clock (at the analysis's start).
pub(crate) fn start() {
    origin();
}

/// Say that `what` ended, with the time since [`start`].
pub(crate) fn step(what: impl FnOnce() -> String) {
    if enabled() {
        say(&format!(
            "{} at {:.2} s",
            what(),
            origin().elapsed().as_secs_f64()
        ));
    }
}

/// `hyscope: {line}` on stderr in one write, so that the lines of the
/// processes of `mpirun hyscope report`, which the launcher forwards
/// through one stream, do not cut into each other (`eprintln!` writes its
/// pieces one by one on the unbuffered stderr).
pub fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("hyscope: {line}\n").as_bytes());
}

/// "1 thread", "2 threads".
pub fn threads(n: usize) -> String {
    format!("{n} thread{}", if n == 1 { "" } else { "s" })
}
