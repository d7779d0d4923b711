//! A process's memory as the kernel reports it in `/proc/<pid>/status`: the
//! collector's memory sampler, and the report's check of its own peak against
//! `--memory`, read it with the same parser.

/// The three `VmXXX` lines of `/proc/<pid>/status` we sample, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmStatus {
    pub rss: Option<u64>,
    pub hwm: Option<u64>,
    pub pin: Option<u64>,
}

/// Parse `/proc/<pid>/status`: the kernel prints `VmRSS:\t  1234 kB`.
/// Unknown or malformed lines are skipped, never an error.
pub fn parse_status(text: &str) -> VmStatus {
    let mut s = VmStatus::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "VmRSS" => &mut s.rss,
            "VmHWM" => &mut s.hwm,
            "VmPin" => &mut s.pin,
            _ => continue,
        };
        *slot = parse_kb(rest);
    }
    s
}

fn parse_kb(rest: &str) -> Option<u64> {
    let mut it = rest.split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") | None => n.checked_mul(1024),
        _ => None,
    }
}

/// This process's peak resident memory (VmHWM) in bytes; None where
/// `/proc/self/status` is unreadable or has no such line.
pub fn peak_rss() -> Option<u64> {
    parse_status(&std::fs::read_to_string("/proc/self/status").ok()?).hwm
}
