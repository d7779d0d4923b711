//! UCX's RDMA transports' memory per rank, from UCX's own configuration
//! tables (UCX 1.20, cited per figure) and the run's `UCX_*` settings:
//!
//! - rc: per process a shared receive queue (`RX_QUEUE_LEN` × `SEG_SIZE`)
//!   and the first chunk of its send-buffer pool (`TX_BUFS_GROW` ×
//!   `SEG_SIZE`); per endpoint a queue pair. UCX takes it for jobs of at
//!   most `UCX_RC_MAX_NUM_EPS` ranks when a scalable transport (dc, ud) is
//!   also allowed (`ucp_is_scalable_transport`, `src/ucp/core/ucp_worker.c`).
//! - dc (`dc_mlx5`, mlx5 devices): per process the same shared receive
//!   queue and send pool, `NUM_DCI` initiator QPs with `TX_QUEUE_LEN` WQEs
//!   each, whatever the number of peers; no QP per endpoint.
//! - ud: per process one QP, its receive queue (`RX_QUEUE_LEN` × the port's
//!   MTU + 40 B of GRH) and send pool; no QP per endpoint.
//!
//! Left out, and said so: each endpoint's own state (`uct_dc_mlx5_ep_t`,
//! `uct_ud_ep_t`: tens of bytes, their sizes are not configuration), UCP's
//! endpoint, the descriptors' headers, and ud's retransmission window,
//! whose buffers come out of the send pool while unacknowledged.

use std::collections::BTreeMap;

use super::buffers::{NetworkBuffers, qp_param};
use super::shm::param;
use super::transport::UcxRdma;
use crate::options::BufferParams;

/// rc's (and dc's) receive queue and segment: `uct_rc_iface_common_config_table`
/// (`src/uct/ib/rc/base/rc_iface.c`): `RX_QUEUE_LEN=4095;SEG_SIZE=8256`.
const RC_RX_QUEUE_LEN: u64 = 4095;
const RC_SEG_SIZE: u64 = 8256;
/// `UCX_RC_MAX_NUM_EPS`, `uct_rc_iface_config_table` (same file): 256.
const RC_MAX_NUM_EPS: u64 = 256;
/// `UCX_IB_TX_BUFS_GROW`, `uct_ib_iface_config_table`
/// (`src/uct/ib/base/ib_iface.c`, `UCT_IFACE_MPOOL_CONFIG_FIELDS("TX_", -1,
/// 1024, …)`): the send pool's first chunk (`uct_iface_mpool_init`,
/// `src/uct/base/uct_mem.c`; 0: the transport's send queue length).
const TX_BUFS_GROW: u64 = 1024;
/// `UCX_DC_MLX5_NUM_DCI`, `uct_dc_mlx5_iface_config_sub_table`
/// (`src/uct/ib/mlx5/dc/dc_mlx5.c`): 32 since UCX 1.18, 8 before.
const DC_NUM_DCI: u64 = 32;
/// A DCI's send queue: the same table's `IB_TX_QUEUE_LEN=128`.
const DC_TX_QUEUE_LEN: u64 = 128;
/// ud's queues: `uct_ib_iface_config_table`'s defaults, which ud keeps
/// (`src/uct/ib/ud/base/ud_iface.c`): `RX_QUEUE_LEN` 4096, `SEG_SIZE`
/// 8192, `TX_QUEUE_LEN` 256 (also rc's).
const UD_RX_QUEUE_LEN: u64 = 4096;
const UD_SEG_SIZE: u64 = 8192;
const IB_TX_QUEUE_LEN: u64 = 256;
/// ud's segment is `min(port MTU, SEG_SIZE) + UCT_IB_GRH_LEN` (40 B,
/// `src/uct/ib/base/ib_device.h`). The port's MTU is not recorded:
/// InfiniBand's largest, 4096 B, is taken (a bound: a smaller MTU, e.g. a
/// RoCE port's 1024, shrinks ud's buffers).
const IB_MTU_MAX: u64 = 4096;
const IB_GRH_LEN: u64 = 40;

/// An mlx5 send queue of `wqes` work requests, bytes:
/// `uct_ib_mlx5_wq_calc_sizes` (`src/uct/ib/mlx5/ib_mlx5.c`) rounds
/// `wqes × UCT_IB_MLX5_MAX_BB` (4) up to a power of two basic blocks of
/// `MLX5_SEND_WQE_BB` (64 B, rdma-core `mlx5dv.h`).
pub(super) fn mlx5_sq_bytes(wqes: u64) -> u64 {
    (wqes * 4).next_power_of_two() * 64
}

/// A UCX size setting (`8256`, `8k`, `1m`), bytes.
fn size(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let v = v.strip_suffix('b').unwrap_or(&v);
    let (num, mult) = match v.chars().last()? {
        'k' => (&v[..v.len() - 1], 1 << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    Some(num.trim().parse::<u64>().ok()? * mult)
}

/// The run's `UCX_*` settings, read as UCX reads them: the most specific
/// prefix wins (`ucs_config_apply_config_vars`, `src/ucs/config/parser.c`).
struct Settings<'a>(Option<&'a BTreeMap<String, String>>);

impl Settings<'_> {
    /// `field` under the first of `prefixes` the run set, else `default`;
    /// with its name and where it came from.
    fn get(&self, prefixes: &[&str], field: &str, default: u64) -> (u64, String) {
        prefixes
            .iter()
            .find_map(|p| {
                let name = format!("UCX_{p}_{field}");
                let v = size(self.0?.get(&name)?)?;
                Some((v, format!("{name} {v} (environment)")))
            })
            .unwrap_or_else(|| {
                (
                    default,
                    format!("UCX_{}_{field} {default} (UCX default)", prefixes[0]),
                )
            })
    }
}

const RC: &[&str] = &["RC_MLX5", "RC_VERBS", "RC", "IB"];
const DC: &[&str] = &["DC_MLX5", "DC", "RC", "IB"];
const UD: &[&str] = &["UD_MLX5", "UD_VERBS", "UD", "IB"];

/// The send pool's first chunk of `seg`-byte buffers (`tx_len`: the
/// transport's send queue length, taken when `TX_BUFS_GROW` is 0).
fn send_pool(s: &Settings, prefixes: &[&str], seg: u64, tx_len: u64) -> (u64, String) {
    let (grow, src) = s.get(prefixes, "TX_BUFS_GROW", TX_BUFS_GROW);
    let n = if grow == 0 { tx_len } else { grow };
    (n * seg, format!("{src}: {n} × {seg} B"))
}

/// The model of UCX over RDMA devices: rc up to its limit, then dc or ud,
/// or the one transport `UCX_TLS` leaves.
pub(super) fn model(
    u: &UcxRdma,
    env: Option<&BTreeMap<String, String>>,
    p: &BufferParams,
) -> NetworkBuffers {
    let s = Settings(env);
    let via = &u.via;
    // dc needs an mlx5 device; not named: dc or ud, which is not known.
    let mlx5 = (!u.devices.is_empty()).then(|| u.devices.iter().all(|d| d.starts_with("mlx5")));
    let scalable = match (u.dc, u.ud, mlx5) {
        (true, _, Some(true)) | (true, false, _) => Some(dc(&s, via)),
        (_, true, Some(_)) | (false, true, None) => Some(ud(&s, via, mlx5 == Some(true))),
        (true, true, None) => Some(NetworkBuffers::not_modelled(format!(
            "UCX dc or ud ({via}: dc on mlx5 devices, else ud; the trace does not name rank 0's RDMA devices)"
        ))),
        (false, false, _) => None,
    };
    if !u.rc {
        return scalable.expect("UCX over RDMA allows rc, dc or ud");
    }
    let mut rc = rc(&s, via, p);
    let Some(above) = scalable else {
        // No scalable transport to take instead: rc at every size.
        rc.transport = format!("UCX rc ({via}; UCX_TLS leaves no dc or ud: rc at every size)");
        return rc;
    };
    // "inf" (or a negative number): rc at any size.
    let limit = RC
        .iter()
        .take(3)
        .find_map(|n| env?.get(&format!("UCX_{n}_MAX_NUM_EPS")))
        .map(|v| v.trim());
    rc.max_ranks = match limit {
        Some(v) if v == "inf" || v.starts_with('-') => None,
        Some(v) => Some(v.parse().unwrap_or(RC_MAX_NUM_EPS)),
        None => Some(RC_MAX_NUM_EPS),
    };
    if let Some(n) = rc.max_ranks {
        rc.transport = format!(
            "UCX rc ({via}), jobs of at most {n} ranks (UCX_RC_MAX_NUM_EPS); above, {}",
            above.transport
        );
        rc.parameters.extend(above.parameters.iter().cloned());
        rc.above = Some(Box::new(above));
    }
    rc
}

/// rc: the shared receive queue and send pool per process, a QP per endpoint.
fn rc(s: &Settings, via: &str, p: &BufferParams) -> NetworkBuffers {
    let (len, len_src) = s.get(RC, "RX_QUEUE_LEN", RC_RX_QUEUE_LEN);
    let (seg, seg_src) = s.get(RC, "SEG_SIZE", RC_SEG_SIZE);
    let (tx_len, _) = s.get(RC, "TX_QUEUE_LEN", IB_TX_QUEUE_LEN);
    let (pool, pool_src) = send_pool(s, RC, seg, tx_len);
    let mut parameters = vec![
        param(
            "UCX rc shared receive queue per process",
            (len * seg) as f64,
            format!(
                "{via}: {len_src} × {seg_src}; one per process with a connection to another node (and per RDMA device it uses); per endpoint only its queue pair"
            ),
        ),
        param(
            "UCX rc send buffers per process",
            pool as f64,
            format!("the send pool's first chunk, {pool_src} (descriptor headers not modelled)"),
        ),
    ];
    parameters.push(qp_param(p));
    NetworkBuffers {
        parameters,
        bytes_per_connection: Some(0.0),
        rq_shared: len * seg + pool,
        qp_bytes: p.qp_bytes as f64,
        qp_per_process: 0.0,
        transport: format!("UCX rc ({via})"),
        label: "UCX rc".into(),
        max_ranks: None,
        above: None,
        not_modelled: None,
    }
}

/// dc: the shared receive queue, send pool and DCIs per process.
fn dc(s: &Settings, via: &str) -> NetworkBuffers {
    let (len, len_src) = s.get(DC, "RX_QUEUE_LEN", RC_RX_QUEUE_LEN);
    let (seg, seg_src) = s.get(DC, "SEG_SIZE", RC_SEG_SIZE);
    let (ndci, ndci_src) = s.get(&DC[..2], "NUM_DCI", DC_NUM_DCI);
    let (tx_len, tx_src) = s.get(DC, "TX_QUEUE_LEN", DC_TX_QUEUE_LEN);
    let (pool, pool_src) = send_pool(s, DC, seg, tx_len);
    let dci = mlx5_sq_bytes(tx_len);
    let ndci_note = if ndci_src.ends_with("(UCX default)") {
        " (UCX 1.18 and later; 8 before, and the trace does not record UCX's version)"
    } else {
        ""
    };
    NetworkBuffers {
        parameters: vec![
            param(
                "UCX dc shared receive queue per process",
                (len * seg) as f64,
                format!(
                    "{via}: {len_src} × {seg_src}; one per process with a connection to another node, whatever its peers (the DC target receives into it)"
                ),
            ),
            param(
                "UCX dc send buffers per process",
                pool as f64,
                format!(
                    "the send pool's first chunk, {pool_src} (descriptor headers not modelled)"
                ),
            ),
            param(
                "UCX dc initiator QPs per process",
                (ndci * dci) as f64,
                format!(
                    "{ndci_src}{ndci_note} × a send queue of {tx_src}, {dci} B (mlx5: ⌈{tx_len} × 4⌉ basic blocks of 64 B); no QP per endpoint, whose own state (tens of bytes) is not modelled"
                ),
            ),
        ],
        bytes_per_connection: Some(0.0),
        rq_shared: len * seg + pool,
        qp_bytes: 0.0,
        qp_per_process: (ndci * dci) as f64,
        transport: format!("UCX dc_mlx5 ({via})"),
        label: "UCX dc".into(),
        max_ranks: None,
        above: None,
        not_modelled: None,
    }
}

/// ud: one QP per process, its receive queue and send pool; `mlx5`: ud_mlx5
/// (its send queue's size is known), else ud_verbs (the provider's).
fn ud(s: &Settings, via: &str, mlx5: bool) -> NetworkBuffers {
    let (len, len_src) = s.get(UD, "RX_QUEUE_LEN", UD_RX_QUEUE_LEN);
    let (seg_set, seg_src) = s.get(UD, "SEG_SIZE", UD_SEG_SIZE);
    let seg = seg_set.min(IB_MTU_MAX) + IB_GRH_LEN;
    let (tx_len, tx_src) = s.get(UD, "TX_QUEUE_LEN", IB_TX_QUEUE_LEN);
    let (pool, pool_src) = send_pool(s, UD, seg, tx_len);
    let sq = if mlx5 { mlx5_sq_bytes(tx_len) } else { 0 };
    let seg_words = format!(
        "{seg} B segments (min(port MTU, {seg_src}) + 40 B GRH; the port's MTU is not recorded, InfiniBand's largest, 4096 B, taken)"
    );
    NetworkBuffers {
        parameters: vec![
            param(
                "UCX ud receive queue per process",
                (len * seg) as f64,
                format!(
                    "{via}: {len_src} × {seg_words}; one per process with a connection to another node, whatever its peers"
                ),
            ),
            param(
                "UCX ud send buffers per process",
                pool as f64,
                format!(
                    "the send pool's first chunk, {pool_src} (descriptor headers not modelled); each endpoint's retransmission window (at most UCX_UD_MAX_WINDOW 1025 unacknowledged sends) holds buffers of this pool, which grows past its first chunk only while they are unacknowledged"
                ),
            ),
            param(
                "UCX ud QP per process",
                sq as f64,
                if mlx5 {
                    format!(
                        "one UD QP, a send queue of {tx_src}, {sq} B (mlx5: ⌈{tx_len} × 4⌉ basic blocks of 64 B); no QP per endpoint, whose own state (tens of bytes) is not modelled"
                    )
                } else {
                    "ud_verbs: one UD QP whose send queue the verbs provider sizes (not modelled); no QP per endpoint, whose own state is not modelled".into()
                },
            ),
        ],
        bytes_per_connection: Some(0.0),
        rq_shared: len * seg + pool,
        qp_bytes: 0.0,
        qp_per_process: sq as f64,
        transport: format!("UCX ud ({via})"),
        label: "UCX ud".into(),
        max_ranks: None,
        above: None,
        not_modelled: None,
    }
}
