//! RAPL readers on fixture sysfs trees with the real layout, and on this machine.

use std::path::{Path, PathBuf};

use hyscope::samplers::rapl::{self, Accumulator, Rapl, Scale};
use hyscope::samplers::{Probe, Sampler};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// A writable copy of fixture trees merged into one root.
fn root_of(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for n in names {
        copy_tree(&fixture(n), dir.path());
    }
    dir
}

fn set_uj(root: &Path, zone: &str, uj: u64) {
    std::fs::write(
        root.join("class/powercap").join(zone).join("energy_uj"),
        format!("{uj}\n"),
    )
    .unwrap();
}

fn sample(r: &mut Rapl) -> Vec<(String, i64, f64)> {
    let mut out = Vec::new();
    r.sample(7, &mut |t, m, k, v| {
        assert_eq!(t, 7);
        out.push((m.to_string(), k, v));
    });
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    out
}

fn row(m: &str, k: i64, v: f64) -> (String, i64, f64) {
    (m.to_string(), k, v)
}

#[test]
fn powercap_two_packages_and_dram() {
    let root = root_of(&["sysfs-powercap"]);
    let zones = rapl::describe_powercap(root.path()).unwrap();
    let got: Vec<(&str, i64, u64)> = zones
        .iter()
        .map(|z| (z.metric, z.package, z.max_energy_range_uj))
        .collect();
    assert_eq!(
        got,
        vec![
            ("energy.pkg", 0, 262_143_328_850),
            ("energy.ram", 0, 65_712_999_613),
            ("energy.pkg", 1, 262_143_328_850),
            ("energy.ram", 1, 65_712_999_613),
        ]
    );

    let mut r = Rapl::new(root.path().to_path_buf(), true);
    let Probe::Available(what) = r.probe() else {
        panic!("powercap fixture must be available")
    };
    assert!(what.starts_with("powercap sysfs"), "{what}");
    // Nothing consumed yet: every counter starts at 0 J.
    assert_eq!(
        sample(&mut r),
        vec![
            row("energy.pkg", 0, 0.0),
            row("energy.pkg", 1, 0.0),
            row("energy.ram", 0, 0.0),
            row("energy.ram", 1, 0.0),
        ]
    );
    // +12.5 J, +2.5 J on package 0; +7.25 J, +1 J on package 1.
    set_uj(root.path(), "intel-rapl:0", 1_000_000 + 12_500_000);
    set_uj(root.path(), "intel-rapl:0:0", 500_000 + 2_500_000);
    set_uj(root.path(), "intel-rapl:1", 2_000_000 + 7_250_000);
    set_uj(root.path(), "intel-rapl:1:0", 700_000 + 1_000_000);
    assert_eq!(
        sample(&mut r),
        vec![
            row("energy.pkg", 0, 12.5),
            row("energy.pkg", 1, 7.25),
            row("energy.ram", 0, 2.5),
            row("energy.ram", 1, 1.0),
        ]
    );
    let units: Vec<(String, String)> = r.metrics().into_iter().map(|m| (m.name, m.unit)).collect();
    assert_eq!(
        units,
        vec![
            ("energy.pkg".to_string(), "J".to_string()),
            ("energy.ram".to_string(), "J".to_string())
        ]
    );
}

#[test]
fn powercap_counter_wraps_during_the_run() {
    let root = root_of(&["sysfs-powercap"]);
    set_uj(root.path(), "intel-rapl:0", 262_143_000_000);
    let mut r = Rapl::new(root.path().to_path_buf(), true);
    assert!(matches!(r.probe(), Probe::Available(_)));
    // Wraps at max_energy_range_uj = 262143328850: 328850 µJ to the top, then 500000 µJ.
    set_uj(root.path(), "intel-rapl:0", 500_000);
    let first = sample(&mut r);
    assert_eq!(first[0], row("energy.pkg", 0, 0.82885));
    set_uj(root.path(), "intel-rapl:0", 2_500_000);
    let second = sample(&mut r);
    assert_eq!(second[0], row("energy.pkg", 0, 2.82885));
}

#[test]
fn powercap_counter_reading_zero_is_unavailable_not_zero_joules() {
    let root = root_of(&["sysfs-powercap-zero"]);
    let mut r = Rapl::new(root.path().to_path_buf(), true);
    let why = match r.probe() {
        Probe::Unavailable(w) => w,
        Probe::Available(w) => panic!("a zero counter was accepted: {w}"),
    };
    let pmu = root.path().join("bus/event_source/devices/power");
    let cap = root.path().join("class/powercap");
    assert_eq!(
        why,
        format!(
            "no perf power PMU ({} absent); powercap sysfs ({}): energy.pkg (intel-rapl:0): reads 0",
            pmu.display(),
            cap.display()
        )
    );
    let mut n = 0;
    r.sample(1, &mut |_, _, _, _| n += 1);
    assert_eq!(n, 0, "no sample from an unavailable counter");
}

#[test]
fn pmu_directory_scale_unit_and_config() {
    let root = fixture("sysfs-pmu");
    let desc = rapl::describe_pmu(&root).unwrap();
    assert_eq!(desc.cpus, vec![(0, 0), (2, 1)]);
    assert!(desc.skipped.is_empty(), "{:?}", desc.skipped);
    let got: Vec<(&str, &str, f64, &str, u32, u64)> = desc
        .events
        .iter()
        .map(|e| {
            let b = perf_event::Builder::new(e.event);
            let a = b.attrs();
            (
                e.name.as_str(),
                e.metric,
                e.scale,
                e.unit.as_str(),
                a.type_,
                a.config,
            )
        })
        .collect();
    let s = 2f64.powi(-32);
    assert_eq!(
        got,
        vec![
            ("energy-cores", "energy.cores", s, "Joules", 4242, 1),
            ("energy-pkg", "energy.pkg", s, "Joules", 4242, 2),
            ("energy-psys", "energy.psys", s, "Joules", 4242, 5),
            ("energy-ram", "energy.ram", s, "Joules", 4242, 3),
        ]
    );
    // Counts → joules with the PMU's scale: 5.5 × 2^32 counts are 5.5 J exactly.
    assert_eq!(
        Scale::Mul(desc.events[1].scale).joules(5 * (1 << 32) + (1 << 31)),
        5.5
    );
}

#[test]
fn pmu_that_cannot_be_opened_falls_back_to_powercap() {
    let root = root_of(&["sysfs-pmu", "sysfs-powercap"]);
    let mut r = Rapl::new(root.path().to_path_buf(), true);
    let Probe::Available(what) = r.probe() else {
        panic!("powercap fallback expected")
    };
    assert!(what.starts_with("powercap sysfs"), "{what}");
    // Why the PMU was not used is stated: type 4242 does not exist.
    assert!(
        what.contains("energy-pkg on cpu 0: perf_event_open failed"),
        "{what}"
    );
    set_uj(root.path(), "intel-rapl:1", 2_000_000 + 3_000_000);
    assert_eq!(sample(&mut r)[1], row("energy.pkg", 1, 3.0));
}

#[test]
fn accumulator_without_wrap_ignores_resets() {
    let mut a = Accumulator::new(10, None);
    assert_eq!(a.update(15), 5);
    assert_eq!(a.update(3), 5);
    assert_eq!(a.update(4), 6);
}

#[test]
fn cpu_lists() {
    assert_eq!(rapl::parse_cpu_list("0"), vec![0]);
    assert_eq!(rapl::parse_cpu_list("0,18\n"), vec![0, 18]);
    assert_eq!(rapl::parse_cpu_list("0-3,8"), vec![0, 1, 2, 3, 8]);
    assert_eq!(rapl::parse_cpu_list("x,2"), vec![2]);
}

/// This machine: the answer depends on what its kernel exposes, and each case has
/// its own exact answer: no power PMU at all; a power PMU that lists no energy
/// events; or one that lists some, each of which is then either used or named in
/// the reason it is not (unreadable, or reads 0 as on VMs whose only event is
/// energy-psys).
#[test]
fn this_machine_reports_rapl_with_the_reason_for_what_it_has() {
    let sys = PathBuf::from("/sys");
    let pmu = sys.join("bus/event_source/devices/power");
    let cap = sys.join("class/powercap");
    if cap.join("intel-rapl:0/energy_uj").exists() {
        eprintln!("this machine has powercap RAPL; nothing to check");
        return;
    }
    let mut r = Rapl::new(sys, true);
    let probe = r.probe();
    if !pmu.exists() {
        assert_eq!(
            probe,
            Probe::Unavailable(format!(
                "no perf power PMU ({} absent); no powercap ({} absent)",
                pmu.display(),
                cap.display()
            ))
        );
        return;
    }
    let events: Vec<String> = std::fs::read_dir(pmu.join("events"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("energy-") && !n.contains('.'))
                .collect()
        })
        .unwrap_or_default();
    match probe {
        Probe::Unavailable(why) if events.is_empty() => {
            assert!(
                why.starts_with("perf power PMU has no energy events"),
                "{why}"
            );
        }
        Probe::Unavailable(why) => {
            for e in &events {
                assert!(why.contains(e.as_str()), "{e} not named in: {why}");
            }
        }
        Probe::Available(what) => {
            assert!(
                !events.is_empty(),
                "available without energy events: {what}"
            );
            assert!(
                events.iter().any(|e| what.contains(e.as_str())),
                "none of {events:?} in: {what}"
            );
        }
    }
}

/// The perf path (perf-event2 dynamic PMU → perf_event_open on one CPU per
/// package → enable → read) on a real system-wide kernel counter: this machine
/// has no `power` PMU, so the fixture's PMU directory is pointed at the `msr` PMU
/// and its `tsc` event (also system-wide, also `event=` in `config:0-63`).
/// The values are TSC ticks × 2^-32, not energy: only the plumbing is tested.
#[test]
fn perf_path_on_a_real_system_wide_pmu() {
    let msr = Path::new("/sys/bus/event_source/devices/msr");
    let Ok(ty) = std::fs::read_to_string(msr.join("type")) else {
        eprintln!("no msr PMU on this machine; nothing to check");
        return;
    };
    let root = root_of(&["sysfs-pmu"]);
    let pmu = root.path().join("bus/event_source/devices/power");
    std::fs::write(pmu.join("type"), ty).unwrap();
    std::fs::write(pmu.join("cpumask"), "0\n").unwrap();
    std::fs::write(pmu.join("format/event"), "config:0-63\n").unwrap();
    for e in ["cores", "ram", "psys"] {
        for suffix in ["", ".scale", ".unit"] {
            std::fs::remove_file(pmu.join(format!("events/energy-{e}{suffix}"))).unwrap();
        }
    }
    std::fs::write(pmu.join("events/energy-pkg"), "event=0x00\n").unwrap();
    let mut r = Rapl::new(root.path().to_path_buf(), true);
    match r.probe() {
        Probe::Available(what) => {
            assert_eq!(
                what,
                format!("perf power PMU ({}): energy-pkg pkg 0", pmu.display())
            );
        }
        // Containers may forbid system-wide perf events: then the reason says so.
        Probe::Unavailable(why) => {
            assert!(
                why.contains("energy-pkg on cpu 0: perf_event_open failed"),
                "{why}"
            );
            eprintln!("perf_event_open not permitted here: {why}");
            return;
        }
    }
    let a = sample(&mut r);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = sample(&mut r);
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].0.as_str(), a[0].1), ("energy.pkg", 0));
    // 20 ms of a GHz-class TSC is > 1e7 ticks, i.e. > 0.002 after the 2^-32 scale.
    assert!(b[0].2 - a[0].2 > 0.002, "{a:?} {b:?}");
}
