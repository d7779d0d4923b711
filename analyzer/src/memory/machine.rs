//! The memory per core of the machine the analysis runs on, the
//! projection's default limit.

/// Memory per core of this machine: MemTotal / its online cores (not the
/// cores this process may run on: `mpirun` binds each process of a parallel
/// report to one, and the report must not depend on it).
pub(super) fn local_memory_per_core() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let cores = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|l| cpu_list_len(&l))
        .or_else(|| Some(std::thread::available_parallelism().ok()?.get() as u64))?;
    Some(kb * 1024 / cores.max(1))
}

/// The number of CPUs in a kernel CPU list (`0-3,8,10-11`).
fn cpu_list_len(list: &str) -> Option<u64> {
    let mut n = 0;
    for item in list.trim().split(',') {
        n += match item.split_once('-') {
            Some((a, b)) => b.parse::<u64>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => {
                item.parse::<u64>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(cpu_list_len("0-1\n"), Some(2));
        assert_eq!(cpu_list_len("0-3,8,10-11"), Some(7));
        assert_eq!(cpu_list_len("x"), None);
        assert_eq!(cpu_list_len("3-1"), None);
    }
}
