//! The RDMA resource-dump parser on recorded `rdma -j res show` output, and the
//! sampler on this machine (no RDMA device).

use std::path::{Path, PathBuf};

use hyscope::samplers::rdma::{self, Rdma, ResCount};
use hyscope::samplers::{Probe, Sampler};

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rdma")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn counts_of_one_pid() {
    let mut c = ResCount::default();
    rdma::count_qps(&fixture("res-qp.json"), 4242, &mut c).unwrap();
    rdma::count_cqs(&fixture("res-cq.json"), 4242, &mut c).unwrap();
    rdma::count_mrs(&fixture("res-mr.json"), 4242, &mut c).unwrap();
    assert_eq!(
        c,
        ResCount {
            qps: 5,
            qps_by_type: [("RC".to_string(), 4), ("UD".to_string(), 1)]
                .into_iter()
                .collect(),
            rc_rts: 3,
            cqs: 2,
            cqes: 4095 + 255,
            mrs: 3,
            mr_bytes: 1_048_576 + 65_536 + 4096,
        }
    );
    let mut other = ResCount::default();
    rdma::count_qps(&fixture("res-qp.json"), 5151, &mut other).unwrap();
    assert_eq!((other.qps, other.rc_rts), (2, 1));
    // Kernel QPs (SMI, GSI) have no pid and belong to nobody.
    let mut none = ResCount::default();
    rdma::count_qps(&fixture("res-qp.json"), 0, &mut none).unwrap();
    assert_eq!(none, ResCount::default());
}

#[test]
fn nested_arrays_and_bad_input() {
    let mut c = ResCount::default();
    rdma::count_qps(&fixture("res-qp-nested.json"), 4242, &mut c).unwrap();
    assert_eq!((c.qps, c.rc_rts), (2, 1));
    let mut c = ResCount::default();
    assert!(
        rdma::count_qps("[{\"pid\":1", 1, &mut c)
            .unwrap_err()
            .starts_with("not JSON")
    );
    assert!(rdma::count_qps("[1,2]", 1, &mut c).is_err());
    assert_eq!(c, ResCount::default());
    rdma::count_qps("[]", 1, &mut c).unwrap();
    assert_eq!(c.qps, 0);
}

#[test]
fn no_device_here_is_unavailable() {
    let sys = PathBuf::from("/sys");
    if !rdma::devices(&sys).is_empty() {
        eprintln!("this machine has RDMA devices; nothing to check");
        return;
    }
    let mut r = Rdma::new(sys);
    assert_eq!(
        r.probe(),
        Probe::Unavailable(
            "no RDMA device (/sys/class/infiniband absent or empty); QPs are estimated from connections"
                .into()
        )
    );
}
