//! The rows of MPI: the profile's calls, the wait states, and the matched
//! point-to-point messages of the aligned layer.

use super::diff::Diff;
use super::noise::Spread;
use super::per_count::Per;
use super::row::SUMMED;
use super::value::{Items, counted, observed, total};
use crate::model::{Analysis, CompareUnit::*, Scatter};

/// Each MPI call's time, count and bytes.
pub(super) fn calls(d: &mut Diff, a: &Analysis, b: &Analysis) {
    let calls = |x: &Analysis| -> Items {
        observed(&x.mpi, |m| {
            m.calls
                .iter()
                .map(|c| {
                    let rows = c.scatter.map_or(c.count.min(1), |s| s.values);
                    let v = vec![
                        total(c.total_s, Spread::sum("calls", rows, c.scatter)),
                        counted(c.count as f64),
                        counted(c.bytes_sent as f64),
                        counted(c.bytes_recv as f64),
                    ];
                    (c.call.clone(), v)
                })
                .collect()
        })
    };
    d.section(
        "mpi",
        "the MPI profile",
        calls(a),
        calls(b),
        &[
            ("total_s", Seconds, SUMMED),
            ("count", Count, SUMMED),
            ("bytes_sent", Bytes, SUMMED),
            ("bytes_received", Bytes, SUMMED),
        ],
        Some(&Per {
            count: 1,
            totals: &[(0, 1, "time_per_call_s")],
        }),
    );
}

/// Each wait state's time and instances.
pub(super) fn waits(d: &mut Diff, a: &Analysis, b: &Analysis) {
    let waits = |x: &Analysis| -> Items {
        observed(&x.wait_states, |w| {
            w.by_kind
                .iter()
                .map(|e| {
                    (
                        e.kind.name().to_string(),
                        vec![
                            total(e.seconds, Spread::sum("instances", e.instances, e.scatter)),
                            counted(e.instances as f64),
                        ],
                    )
                })
                .collect()
        })
    };
    d.section(
        "wait",
        "MPI wait states",
        waits(a),
        waits(b),
        &[("time_s", Seconds, SUMMED), ("instances", Count, SUMMED)],
        Some(&Per {
            count: 1,
            totals: &[(0, 1, "time_per_instance_s")],
        }),
    );
}

/// The matched message lists of the aligned layer: a change of the
/// communication pattern, or of what could not be matched.
pub(super) fn messages(d: &mut Diff, a: &Analysis, b: &Analysis) {
    if a.messages.messages.is_empty() && b.messages.messages.is_empty() {
        return;
    }
    let messages = |x: &Analysis| -> Items {
        let m = &x.messages.messages;
        let bytes = m.iter().map(|m| m.bytes as f64).sum();
        let ns: Vec<i64> = m
            .iter()
            .map(|m| (m.recv.time - m.send.time).max(0))
            .collect();
        let scatter = Scatter::of_ns(
            ns.len() as u64,
            ns.iter().map(|&t| t as i128).sum(),
            ns.iter().map(|&t| (t as u128) * (t as u128)).sum(),
        );
        let transit = ns.iter().sum::<i64>() as f64 * 1e-9;
        let v = vec![
            counted(m.len() as f64),
            counted(bytes),
            total(transit, Spread::sum("messages", ns.len() as u64, scatter)),
            counted(x.messages.unmatched() as f64),
        ];
        Ok(vec![("point-to-point".into(), v)])
    };
    d.section(
        "messages",
        "messages",
        messages(a),
        messages(b),
        &[
            ("count", Count, SUMMED),
            ("bytes", Bytes, SUMMED),
            ("send_to_receive_s", Seconds, SUMMED),
            ("unmatched", Count, SUMMED),
        ],
        Some(&Per {
            count: 0,
            totals: &[(2, 0, "send_to_receive_per_message_s")],
        }),
    );
}
