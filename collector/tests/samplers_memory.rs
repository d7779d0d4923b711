//! /proc parsers and the memory sampler.

use hyscope::samplers::memory::{self, ShmMaps, VmStatus};
use hyscope::samplers::{Probe, Sampler};

const STATUS: &str = "Name:\tlulesh2.0\nUmask:\t0022\nState:\tR (running)\nTgid:\t4242\n\
VmPeak:\t  912340 kB\nVmSize:\t  912100 kB\nVmLck:\t       0 kB\nVmPin:\t    2048 kB\n\
VmHWM:\t  204800 kB\nVmRSS:\t  153600 kB\nRssAnon:\t  120000 kB\nThreads:\t3\n";

#[test]
fn status_lines_in_bytes() {
    assert_eq!(
        memory::parse_status(STATUS),
        VmStatus {
            rss: Some(153_600 * 1024),
            hwm: Some(204_800 * 1024),
            pin: Some(2048 * 1024),
        }
    );
}

#[test]
fn status_with_missing_or_bad_lines() {
    // Kernel threads have no Vm lines; garbage never panics.
    assert_eq!(
        memory::parse_status("Name:\tkthreadd\nState:\tS\n"),
        VmStatus::default()
    );
    assert_eq!(
        memory::parse_status("VmRSS:\tlots kB\nVmHWM: 12 MB\nVmPin:\t7 kB\n\u{0}\u{1}"),
        VmStatus {
            rss: None,
            hwm: None,
            pin: Some(7 * 1024)
        }
    );
}

const MAPS: &str = "\
55d0c8a00000-55d0c8a2a000 r--p 00000000 fd:01 1835105                    /usr/bin/lulesh2.0
7f10a0000000-7f10a4000000 rw-s 00000000 00:1a 31                         /dev/shm/vader_segment.node01.5a3c0001.1
7f10a4000000-7f10a8000000 rw-s 00000000 00:1a 30                         /dev/shm/vader_segment.node01.5a3c0001.0
7f10b0000000-7f10b0400000 rw-s 00000000 00:1a 29                         /dev/shm/sm_segment.node01.0.5a3c0000.0 (deleted)
7f10b0400000-7f10b0401000 rw-s 00400000 00:1a 29                         /dev/shm/sm_segment.node01.0.5a3c0000.0 (deleted)
7f10c0000000-7f10c0021000 rw-p 00000000 00:00 0
7fafaaa00000-7fafaae00000 r--s 00000000 fe:00 10011565                   /tmp/ompi.vm.0/pid.15949/pmix_dstor_ds21_15949/smdataseg-1387462657-0
7fafb01f5000-7fafb01f6000 rw-s 00000000 fe:00 10011561                   /tmp/ompi.vm.0/pid.15949/pmix_dstor_ds21_15949/smlockseg-1387462657
7fafb0168000-7fafb016a000 rw-p 0000b000 fe:00 15696040                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so
7f10c1000000-7f10c1200000 rw-s 00000000 00:01 12                         /SYSV00000000 (deleted)
7ffd5e3c0000-7ffd5e3e1000 rw-p 00000000 00:00 0                          [stack]
garbage line
";

#[test]
fn dev_shm_mappings_summed() {
    // Two 64 MiB vader segments, one 4 MiB + 4 KiB sm segment (two mappings of one
    // file), and Open MPI 4.1's PMIx session files (lines recorded on this machine).
    assert_eq!(
        memory::parse_maps(MAPS),
        ShmMaps {
            dev_shm_bytes: 2 * (64 << 20) + (4 << 20) + 4096,
            vader_bytes: 2 * (64 << 20),
            // A 4 MiB PMIx data segment and a one-page lock segment; the vader
            // library's own (private) mapping is not a segment.
            session_bytes: (4 << 20) + 4096,
            files: 5,
        }
    );
    assert_eq!(memory::parse_maps(""), ShmMaps::default());
}

#[test]
fn sampler_reads_this_process() {
    let mut m = memory::Memory::new();
    assert!(matches!(m.probe(), Probe::Available(_)));
    // Touch 32 MiB so the RSS is at least that.
    let v = vec![1u8; 32 << 20];
    let mut rows = Vec::new();
    m.sample(5, &mut |t, name, key, val| {
        rows.push((t, name.to_string(), key, val))
    });
    assert_eq!(v.iter().map(|&b| b as usize).sum::<usize>(), 32 << 20);
    let names: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "mem.vmrss",
            "mem.vmhwm",
            "mem.vmpin",
            "mem.shm_mapped",
            "mem.shm_vader",
            "mem.shm_session"
        ]
    );
    assert!(rows.iter().all(|r| r.0 == 5 && r.2 == -1));
    assert!(rows[0].3 >= (32 << 20) as f64, "VmRSS {}", rows[0].3);
    assert!(rows[1].3 >= rows[0].3, "VmHWM below VmRSS");
    let units: Vec<(String, String)> = m.metrics().into_iter().map(|d| (d.name, d.unit)).collect();
    assert!(units.iter().all(|(_, u)| u == "bytes"));
    assert_eq!(memory::current_rss().map(|r| r >= 32 << 20), Some(true));
}
