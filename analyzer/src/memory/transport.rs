//! Which network transport the run's MPI used between nodes, from what the
//! trace records (`formats/README.md`, the manifest's `mpi`: library
//! version, control variables, the components selected and the `UCX_*`
//! settings (format 1.8), and the `rdma` sampler's probe of rank 0's node),
//! so that the network buffers are charged by that transport's model, or
//! said not to be modelled, never by another library's defaults:
//!
//! - Open MPI's `ob1` PML over the `openib` BTL: its receive-queue specs
//!   (`super::network`, Didelot 2014 §3.4).
//! - Open MPI's `ob1` PML over the `tcp` BTL: each connection's endpoint
//!   cache (`btl_tcp_endpoint_cache`).
//! - UCX (Open MPI's `ucx` PML, MPICH's `ch4:ucx`) on nodes with RDMA
//!   devices: the transports `UCX_TLS` allows of rc, dc and ud, and rank
//!   0's RDMA devices (mlx5 devices have dc), modelled by `super::ucx`.
//! - UCX over TCP (no RDMA devices, or told to use TCP): no network
//!   buffers per connection of the library's own (the kernel's socket
//!   buffers are not modelled).
//! - Anything else (MPICH's `ch4:ofi`, Open MPI's `cm` PML, shared-memory
//!   transports only, a trace that does not say which was selected): not
//!   modelled, with the reason.

use hyscope_format::{Manifest, MpiInfo};

/// The transport between nodes the network model charges.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Transport {
    /// Open MPI's openib BTL (receive-queue specs).
    OpenIb,
    /// UCX over RDMA devices: which of its transports it may use.
    UcxRdma(UcxRdma),
    /// Open MPI's tcp BTL (an endpoint cache per connection).
    OpenMpiTcp,
    /// No network buffers per connection of the library's own (UCX over TCP).
    NoBuffers { what: String },
    /// No model: `what` the transport is and why.
    NotModelled { what: String },
}

/// UCX over RDMA devices: `via` (which MPI drives UCX), the transports
/// `UCX_TLS` allows (`ucp_tl_aliases`, UCX `src/ucp/core/ucp_context.c`:
/// `rc`/`rc_x`/`rc_v`, `dc`/`dc_x`, `ud`/`ud_x`/`ud_v`, `ib` for all), and
/// rank 0's RDMA devices as the `rdma` sampler named them (empty: not named).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct UcxRdma {
    pub via: String,
    pub rc: bool,
    pub dc: bool,
    pub ud: bool,
    pub devices: Vec<String>,
}

/// The RDMA devices the `rdma` sampler's probe named: `RDMA devices a,b
/// present …`, or `… on a,b` when it ran; none when it failed.
fn rdma_device_names(manifest: &Manifest) -> Vec<String> {
    let Some(s) = manifest.samplers.iter().find(|s| s.name == "rdma") else {
        return Vec::new();
    };
    let list = if s.available {
        s.reason.rsplit_once(" on ").map(|(_, l)| l)
    } else {
        s.reason
            .strip_prefix("RDMA devices ")
            .and_then(|r| r.split_whitespace().next())
    };
    list.map_or(Vec::new(), |l| {
        l.split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(String::from)
            .collect()
    })
}

/// Whether rank 0's node has RDMA devices, as the `rdma` sampler found.
fn rdma_devices(manifest: &Manifest) -> Option<bool> {
    let s = manifest.samplers.iter().find(|s| s.name == "rdma")?;
    // Past "no RDMA device" the probe found devices: it may still have
    // failed on the `rdma` tool (its reason then starts with the tool).
    if s.available || s.reason.starts_with("RDMA devices") || s.reason.starts_with('`') {
        Some(true)
    } else if s.reason.starts_with("no RDMA device") {
        Some(false)
    } else {
        None
    }
}

/// The device of an MPICH library version text (`MPICH Device:\tch4:ucx`).
pub(super) fn mpich_device(library_version: &str) -> Option<&str> {
    library_version
        .lines()
        .find_map(|l| l.trim().strip_prefix("MPICH Device:"))
        .map(str::trim)
}

/// The transport of the run described by `manifest`.
pub(super) fn of(manifest: &Manifest) -> Transport {
    let Some(mpi) = manifest.mpi.as_ref() else {
        return not("an MPI library the trace does not describe");
    };
    let rdma = rdma_devices(manifest);
    let devices = rdma_device_names(manifest);
    if mpi.flavour == "mpich" {
        return match mpich_device(&mpi.library_version) {
            Some(d) if d.ends_with(":ucx") => ucx(mpi, rdma, devices, format!("MPICH {d}")),
            Some(d) if d.ends_with(":ofi") => {
                let provider = mpi
                    .environment
                    .get("FI_PROVIDER")
                    .or_else(|| mpi.control_variables.get("MPIR_CVAR_OFI_USE_PROVIDER"))
                    .filter(|p| !p.trim().is_empty())
                    .map_or(String::new(), |p| format!(", provider {p}"));
                not(&format!("MPICH {d} (libfabric{provider})"))
            }
            Some(d) => not(&format!("MPICH {d}")),
            None => not("MPICH (its device is not recorded)"),
        };
    }
    open_mpi(mpi, rdma, devices)
}

fn not(what: &str) -> Transport {
    Transport::NotModelled { what: what.into() }
}

/// Open MPI: the selected PML and BTLs (format 1.8), else what the
/// control variables impose.
fn open_mpi(mpi: &MpiInfo, rdma: Option<bool>, devices: Vec<String>) -> Transport {
    let has = |c: &str| mpi.components.iter().any(|x| x == c);
    let (pml, btls): (Option<String>, Vec<String>) = if !mpi.components.is_empty() {
        let pml = mpi
            .components
            .iter()
            .find_map(|c| c.strip_prefix("pml_"))
            .map(String::from);
        let btls = mpi
            .components
            .iter()
            .filter_map(|c| c.strip_prefix("btl_"))
            .map(String::from)
            .collect();
        (pml, btls)
    } else {
        // Older traces: only a PML named outright, with its BTLs named outright.
        let pml = mpi
            .control_variables
            .get("pml")
            .map(|p| p.trim().to_string())
            .filter(|p| ["ob1", "ucx", "cm"].contains(&p.as_str()));
        let btls = match mpi.control_variables.get("btl") {
            Some(b) if !b.trim().is_empty() && !b.starts_with('^') => mpi.transports.clone(),
            _ => Vec::new(),
        };
        (pml, btls)
    };
    match pml.as_deref() {
        Some("ucx") => ucx(mpi, rdma, devices, "Open MPI's ucx PML".into()),
        Some("ob1") => {
            let net: Vec<&String> = btls
                .iter()
                .filter(|b| !["self", "vader", "sm", "smcuda"].contains(&b.as_str()))
                .collect();
            match net.as_slice() {
                [] if btls.is_empty() => {
                    not("Open MPI's ob1 PML (which BTLs it selected is not recorded)")
                }
                // A job across nodes would need a network BTL: which, the
                // trace cannot say.
                [] => not(&format!(
                    "Open MPI ob1 with shared-memory BTLs only ({}): no network transport to project",
                    btls.join(",")
                )),
                _ if net.iter().any(|b| *b == "openib") && !has("pml_ucx") => Transport::OpenIb,
                [t] if *t == "tcp" => Transport::OpenMpiTcp,
                _ => not(&format!(
                    "Open MPI ob1 over the {} BTL(s)",
                    net.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",")
                )),
            }
        }
        Some(p) => not(&format!(
            "Open MPI's {p} PML{}",
            mpi.components
                .iter()
                .filter_map(|c| c.strip_prefix("mtl_"))
                .map(|m| format!(", {m} MTL"))
                .collect::<String>()
        )),
        None => not("Open MPI (which PML it selected is not recorded)"),
    }
}

/// UCX, driven by `via`: the RDMA transports `UCX_TLS` allows where the
/// nodes have RDMA devices, TCP where they have none.
fn ucx(mpi: &MpiInfo, rdma: Option<bool>, devices: Vec<String>, via: String) -> Transport {
    let tls = mpi.environment.get("UCX_TLS").map(|t| t.trim().to_string());
    let (mut rc, mut dc, mut ud) = (true, true, true);
    if let Some(tls) = tls.as_deref().filter(|t| !t.is_empty() && *t != "all") {
        let (excluded, list) = match tls.strip_prefix('^') {
            Some(l) => (true, l),
            None => (false, tls),
        };
        let names: Vec<&str> = list.split(',').map(str::trim).collect();
        let named = |p: &str| names.iter().any(|n| n.starts_with(p) || *n == "ib");
        (rc, dc, ud) = (
            named("rc") != excluded,
            named("dc") != excluded,
            named("ud") != excluded,
        );
        if !(rc || dc || ud) {
            if names.contains(&"tcp") == excluded {
                return not(&format!("{via} (UCX_TLS={tls}: no network transport)"));
            }
            return Transport::NoBuffers {
                what: format!("TCP ({via}, UCX_TLS={tls}: no RDMA transport)"),
            };
        }
    }
    match rdma {
        Some(true) => Transport::UcxRdma(UcxRdma {
            via,
            rc,
            dc,
            ud,
            devices,
        }),
        Some(false) => Transport::NoBuffers {
            what: format!("TCP ({via}: no RDMA device on rank 0's node)"),
        },
        _ => not(&format!(
            "{via} (the trace does not record whether UCX used RDMA devices)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_format::SamplerInfo;

    fn manifest(mpi: MpiInfo, rdma: Option<&str>) -> Manifest {
        let mut m = Manifest {
            mpi: Some(mpi),
            ..Manifest::default()
        };
        if let Some(reason) = rdma {
            m.samplers.push(SamplerInfo {
                name: "rdma".into(),
                available: false,
                reason: reason.into(),
                ranks: vec![],
            });
        }
        m
    }

    fn open_mpi(components: &[&str], cvars: &[(&str, &str)]) -> MpiInfo {
        MpiInfo {
            flavour: "openmpi".into(),
            components: components.iter().map(|c| c.to_string()).collect(),
            control_variables: cvars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..MpiInfo::default()
        }
    }

    fn mpich(device: &str, env: &[(&str, &str)]) -> MpiInfo {
        MpiInfo {
            flavour: "mpich".into(),
            library_version: format!("MPICH Version:\t4.0.2\nMPICH Device:\t{device}\n"),
            components: vec!["ucx".into()],
            environment: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..MpiInfo::default()
        }
    }

    const NO_HCA: Option<&str> = Some(
        "no RDMA device (/sys/class/infiniband absent or empty); QPs are estimated from connections",
    );
    const HCA: Option<&str> =
        Some("RDMA devices mlx5_0 present but the `rdma` tool (iproute2) is not installed");

    #[test]
    fn each_library_and_transport_gets_its_model_or_none() {
        let no_buffers = |t: Transport| match t {
            Transport::NoBuffers { what } => what,
            t => panic!("{t:?}"),
        };
        let not_modelled = |t: Transport| match t {
            Transport::NotModelled { what } => what,
            t => panic!("{t:?}"),
        };
        // Open MPI, as 1.8 records the selected components.
        let m = open_mpi(&["btl_openib", "btl_self", "btl_vader", "pml_ob1"], &[]);
        assert_eq!(of(&manifest(m, HCA)), Transport::OpenIb);
        let m = open_mpi(&["btl_self", "btl_tcp", "btl_vader", "pml_ob1"], &[]);
        assert_eq!(of(&manifest(m, NO_HCA)), Transport::OpenMpiTcp);
        // Shared memory only: what a job across nodes would use is unknown.
        let m = open_mpi(&["btl_self", "btl_vader", "pml_ob1"], &[]);
        assert!(not_modelled(of(&manifest(m, None))).contains("shared-memory BTLs only"));
        let m = open_mpi(&["btl_self", "btl_uct", "pml_ob1"], &[]);
        assert_eq!(
            not_modelled(of(&manifest(m, HCA))),
            "Open MPI ob1 over the uct BTL(s)"
        );
        let m = open_mpi(&["mtl_psm2", "pml_cm"], &[]);
        assert_eq!(
            not_modelled(of(&manifest(m, HCA))),
            "Open MPI's cm PML, psm2 MTL"
        );
        let m = open_mpi(&["pml_ucx", "ucx"], &[]);
        let rdma = |via: &str, rc: bool, dc: bool, ud: bool| {
            Transport::UcxRdma(UcxRdma {
                via: via.into(),
                rc,
                dc,
                ud,
                devices: vec!["mlx5_0".into()],
            })
        };
        assert_eq!(
            of(&manifest(m.clone(), HCA)),
            rdma("Open MPI's ucx PML", true, true, true)
        );
        assert!(
            no_buffers(of(&manifest(m.clone(), NO_HCA))).starts_with("TCP (Open MPI's ucx PML")
        );
        assert!(
            not_modelled(of(&manifest(m.clone(), None)))
                .contains("does not record whether UCX used RDMA")
        );
        // Devices present, the `rdma` tool failing on them: still devices.
        let failed =
            Some("`/usr/sbin/rdma res show qp` failed (RDMA netlink unavailable or not permitted)");
        match of(&manifest(m, failed)) {
            Transport::UcxRdma(u) => assert!(u.devices.is_empty()),
            t => panic!("{t:?}"),
        }
        // Older traces: only what the control variables impose. This
        // machine's Debian defaults (pml ^ucx, btl ^uct,openib,ofi) leave
        // the choice to Open MPI: not known.
        let m = open_mpi(&[], &[("pml", "^ucx"), ("btl", "^uct,openib,ofi")]);
        assert_eq!(
            not_modelled(of(&manifest(m, NO_HCA))),
            "Open MPI (which PML it selected is not recorded)"
        );
        let mut m = open_mpi(&[], &[("pml", "ob1"), ("btl", "self,vader,tcp")]);
        m.transports = vec!["self".into(), "vader".into(), "tcp".into()];
        assert_eq!(of(&manifest(m, None)), Transport::OpenMpiTcp);
        let m = open_mpi(&[], &[("pml", "ucx")]);
        assert!(matches!(of(&manifest(m, HCA)), Transport::UcxRdma(_)));
        // MPICH: its device, UCX's settings and the node's devices.
        assert_eq!(
            of(&manifest(mpich("ch4:ucx", &[]), HCA)),
            rdma("MPICH ch4:ucx", true, true, true)
        );
        assert!(
            no_buffers(of(&manifest(mpich("ch4:ucx", &[]), NO_HCA)))
                .starts_with("TCP (MPICH ch4:ucx")
        );
        let m = mpich("ch4:ucx", &[("UCX_TLS", "tcp,sm,self")]);
        assert!(no_buffers(of(&manifest(m, HCA))).contains("UCX_TLS=tcp,sm,self"));
        let m = mpich("ch4:ucx", &[("UCX_TLS", "sm,self")]);
        assert!(not_modelled(of(&manifest(m, HCA))).contains("no network transport"));
        // UCX_TLS names the transports UCX may take (its aliases).
        let m = mpich("ch4:ucx", &[("UCX_TLS", "dc_x,sm")]);
        assert_eq!(
            of(&manifest(m, HCA)),
            rdma("MPICH ch4:ucx", false, true, false)
        );
        let m = mpich("ch4:ucx", &[("UCX_TLS", "rc,ud,sm,self")]);
        assert_eq!(
            of(&manifest(m, HCA)),
            rdma("MPICH ch4:ucx", true, false, true)
        );
        let m = mpich("ch4:ucx", &[("UCX_TLS", "^dc")]);
        assert_eq!(
            of(&manifest(m, HCA)),
            rdma("MPICH ch4:ucx", true, false, true)
        );
        let m = mpich("ch4:ucx", &[("UCX_TLS", "^ib")]);
        assert!(no_buffers(of(&manifest(m, HCA))).contains("UCX_TLS=^ib"));
        // The probe that ran names the devices after " on ".
        let mut m = manifest(mpich("ch4:ucx", &[]), None);
        m.samplers.push(SamplerInfo {
            name: "rdma".into(),
            available: true,
            reason: "/usr/sbin/rdma -j res show qp/cq/mr pid 7 every 1 s on mlx5_0,mlx5_1".into(),
            ranks: vec![],
        });
        match of(&m) {
            Transport::UcxRdma(u) => assert_eq!(u.devices, ["mlx5_0", "mlx5_1"]),
            t => panic!("{t:?}"),
        }
        let m = mpich("ch4:ofi", &[("FI_PROVIDER", "verbs")]);
        assert_eq!(
            not_modelled(of(&manifest(m, HCA))),
            "MPICH ch4:ofi (libfabric, provider verbs)"
        );
        assert_eq!(
            not_modelled(of(&Manifest::default())),
            "an MPI library the trace does not describe"
        );
    }
}
