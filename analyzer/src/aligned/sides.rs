//! What one rank contributes to the cross-rank analyses: its message sides
//! and collective calls, taken from its `mpi` rows (on global time, in
//! [`super::sort_rows`] order) where they are read, with what the wait states
//! read of each (Scalasca's replay works the same way: each process keeps its
//! own ranks' events and exchanges only what the other side of a message or
//! collective needs). Matching ([`super::match_sides`]) reads these records,
//! never rows, so the rows of a rank can be dropped once its sides are taken.

use std::collections::HashMap;

use hyscope_format::{MpiRecord, mpi_call as c};
use serde::{Deserialize, Serialize};

use super::clock::GlobalNs;
use super::endpoints::{RequestKind, endpoints, is_collective, is_start, is_wait};

/// The sending side of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendSide {
    pub rank: u32,
    pub thread: u32,
    /// Index of the row that sent (the send call, or the `MPI_Start` of a
    /// persistent send) in its rank's rows.
    #[serde(skip)]
    pub row: usize,
    /// When the send started.
    pub time: GlobalNs,
    /// The sending call (the send, or the `MPI_Start` of a persistent one),
    /// when it ended, its call site and the bytes it sent: what the wait
    /// states read of it.
    #[serde(skip)]
    pub call: u16,
    #[serde(skip)]
    pub end: GlobalNs,
    #[serde(skip)]
    pub callsite: u64,
    #[serde(skip)]
    pub bytes_sent: u64,
}

/// The receiving side of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecvSide {
    pub rank: u32,
    pub thread: u32,
    /// Index of the row where the receive completed (the blocking receive,
    /// or the request's completion row) in its rank's rows.
    #[serde(skip)]
    pub row: usize,
    /// Index of the row that posted the receive (the receive itself, the
    /// `MPI_Irecv`, or the `MPI_Start` of a persistent receive).
    #[serde(skip)]
    pub post_row: usize,
    /// When the receive was posted.
    pub posted: GlobalNs,
    /// When the receive completed: the end of a blocking receive, the
    /// completion of a request.
    pub time: GlobalNs,
    /// The call the receive waited in: a blocking receive itself, or the
    /// wait/test call on the completing thread that contains the completion
    /// of a nonblocking or persistent one (none: it completed in no such call).
    #[serde(skip)]
    pub waiter: Option<Waiter>,
}

/// A call a receive waited in, as the wait states read it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiter {
    pub call: u16,
    pub callsite: u64,
    pub from: GlobalNs,
    pub to: GlobalNs,
}

impl Waiter {
    pub fn of(r: &MpiRecord) -> Waiter {
        Waiter {
            call: r.call,
            callsite: r.callsite,
            from: GlobalNs(r.start_ns),
            to: GlobalNs(r.end_ns),
        }
    }
}

/// One send, under its envelope's destination, communicator and tag, with
/// what the wait states read of the sending call (every field is sent
/// between the processes of a parallel analysis).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SendEnd {
    pub to: u32,
    pub comm: u64,
    pub tag: i32,
    /// Sends of one envelope are sent in this order: (start, row) over the
    /// whole run, whatever a focus keeps.
    pub order: (i64, usize),
    pub thread: u32,
    /// The sending row ([`SendSide::row`]; [`OUTSIDE_FOCUS`] when a focus
    /// left it out).
    pub row: usize,
    pub time: GlobalNs,
    pub call: u16,
    pub end: GlobalNs,
    pub callsite: u64,
    pub bytes_sent: u64,
    /// The message's bytes as the send gives them.
    pub bytes: u64,
}

impl SendEnd {
    pub fn side(&self, rank: u32) -> SendSide {
        SendSide {
            rank,
            thread: self.thread,
            row: self.row,
            time: self.time,
            call: self.call,
            end: self.end,
            callsite: self.callsite,
            bytes_sent: self.bytes_sent,
        }
    }
}

/// One receive, under its envelope's source, communicator and tag (the
/// status's: wildcards resolved).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RecvEnd {
    pub from: u32,
    pub comm: u64,
    pub tag: i32,
    /// Receives of one envelope are posted in this order: (post start,
    /// completion row) over the whole run.
    pub order: (i64, usize),
    pub thread: u32,
    pub row: usize,
    pub post_row: usize,
    pub posted: GlobalNs,
    pub time: GlobalNs,
    pub waiter: Option<Waiter>,
    pub bytes: u64,
}

impl RecvEnd {
    pub fn side(&self, rank: u32) -> RecvSide {
        RecvSide {
            rank,
            thread: self.thread,
            row: self.row,
            post_row: self.post_row,
            posted: self.posted,
            time: self.time,
            waiter: self.waiter,
        }
    }
}

/// The row index of a side or collective call that a focus
/// ([`crate::focus`]) left out: its message or instance is matched with the
/// whole run's, then dropped.
pub const OUTSIDE_FOCUS: usize = usize::MAX;

/// One collective call of a rank.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct CollectiveCall {
    pub comm: u64,
    pub call: u16,
    pub root: i32,
    pub row: usize,
    pub start: GlobalNs,
    pub end: GlobalNs,
    pub callsite: u64,
}

/// A rank's message sides and collective calls, in row order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RankSides {
    pub rank: u32,
    pub sends: Vec<SendEnd>,
    pub recvs: Vec<RecvEnd>,
    /// Receives completed without a known source (no status): unmatched.
    pub unknown_source: u64,
    pub collectives: Vec<CollectiveCall>,
}

impl RankSides {
    /// The sides of rank `rank`'s rows.
    pub fn of(rank: u32, rows: &[MpiRecord]) -> RankSides {
        let mut out = RankSides {
            rank,
            ..RankSides::default()
        };
        // Wait/test rows in row order (so by start): where a nonblocking
        // receive's completion was waited for.
        let waits: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| is_wait(r.call))
            .map(|(i, _)| i)
            .collect();
        // Requests by id: the row that created them and what they are.
        let mut requests: HashMap<u64, (usize, RequestKind)> = HashMap::new();
        // The latest `MPI_Start` of each persistent request, and the latest
        // `MPI_Startall` of each thread (its row names no single request).
        let mut started: HashMap<u64, usize> = HashMap::new();
        let mut start_all: HashMap<u32, usize> = HashMap::new();
        let send = |to: u32, comm: u64, tag: i32, i: usize, r: &MpiRecord, bytes: u64| SendEnd {
            to,
            comm,
            tag,
            order: (r.start_ns, i),
            thread: r.thread,
            row: i,
            time: GlobalNs(r.start_ns),
            call: r.call,
            end: GlobalNs(r.end_ns),
            callsite: r.callsite,
            bytes_sent: r.bytes_sent,
            bytes,
        };
        for (i, r) in rows.iter().enumerate() {
            if is_collective(r.call) {
                out.collectives.push(CollectiveCall {
                    comm: r.comm_id,
                    call: r.call,
                    root: r.root,
                    row: i,
                    start: GlobalNs(r.start_ns),
                    end: GlobalNs(r.end_ns),
                    callsite: r.callsite,
                });
            }
            let e = endpoints(r);
            if let Some(s) = e.send {
                out.sends
                    .push(send(s.peer as u32, s.comm, s.tag, i, r, s.bytes));
            }
            if let Some(v) = e.recv {
                out.recvs.push(RecvEnd {
                    from: v.peer as u32,
                    comm: v.comm,
                    tag: v.tag,
                    order: (r.start_ns, i),
                    thread: r.thread,
                    row: i,
                    post_row: i,
                    posted: GlobalNs(r.start_ns),
                    time: GlobalNs(r.end_ns),
                    // A blocking receive waits in itself.
                    waiter: Some(Waiter::of(r)),
                    bytes: v.bytes,
                });
            }
            if let Some(kind) = e.request
                && r.request_id != 0
            {
                requests.insert(r.request_id, (i, kind));
            }
            if is_start(r.call) {
                if r.request_id != 0 {
                    started.insert(r.request_id, i);
                } else {
                    start_all.insert(r.thread, i);
                }
            }
            if r.call != c::REQUEST_COMPLETE {
                continue;
            }
            let Some(&(created, kind)) = requests.get(&r.request_id) else {
                continue;
            };
            let init = &rows[created];
            // The row that (re)activated the request: its last start for a
            // persistent one (or the thread's last Startall), else its creation.
            let post = match kind {
                RequestKind::Recv => created,
                _ => started
                    .get(&r.request_id)
                    .copied()
                    .into_iter()
                    .chain(start_all.get(&r.thread).copied())
                    .filter(|&s| s > created)
                    .max()
                    .unwrap_or(created),
            };
            let post_row = &rows[post];
            let comm = if r.comm_id != 0 {
                r.comm_id
            } else {
                init.comm_id
            };
            // The status names the real peer and tag, else the creation does.
            let (peer, tag) = if r.peer >= 0 {
                (r.peer, r.tag)
            } else {
                (init.peer, init.tag)
            };
            match kind {
                RequestKind::PersistentSend => {
                    if peer < 0 {
                        continue;
                    }
                    let bytes = if post_row.request_id == r.request_id {
                        post_row.bytes_sent
                    } else {
                        0
                    };
                    out.sends
                        .push(send(peer as u32, comm, tag, post, post_row, bytes));
                }
                RequestKind::Recv | RequestKind::PersistentRecv => {
                    if peer < 0 {
                        // Cancelled, or no status: nothing was received from
                        // a known rank. A PROC_NULL receive is no message.
                        if peer != hyscope_format::PROC_NULL {
                            out.unknown_source += 1;
                        }
                        continue;
                    }
                    out.recvs.push(RecvEnd {
                        from: peer as u32,
                        comm,
                        tag,
                        order: (post_row.start_ns, i),
                        thread: r.thread,
                        row: i,
                        post_row: post,
                        posted: GlobalNs(post_row.start_ns),
                        time: GlobalNs(r.start_ns),
                        waiter: waiter_of(rows, &waits, r.thread, r.start_ns),
                        bytes: r.bytes_recv,
                    });
                }
            }
        }
        out
    }
}

/// The wait/test call on `thread` that contains the completion at `t` of a
/// nonblocking or persistent receive, if one does (`waits` in row order).
fn waiter_of(rows: &[MpiRecord], waits: &[usize], thread: u32, t: i64) -> Option<Waiter> {
    // The last wait starting at or before the completion is the one
    // containing it, if any does.
    let i = waits.partition_point(|&w| rows[w].start_ns <= t);
    waits[..i]
        .iter()
        .rev()
        .map(|&w| &rows[w])
        .find(|w| w.thread == thread && t <= w.end_ns)
        .map(Waiter::of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_format::NO_RANK;

    fn row(call: u16, thread: u32, peer: i32, start: i64, end: i64, req: u64) -> MpiRecord {
        MpiRecord {
            call,
            thread,
            peer,
            tag: 3,
            start_ns: start,
            end_ns: end,
            comm_id: 1,
            request_id: req,
            root: NO_RANK,
            callsite: 0x1000 + u64::from(call),
            ..MpiRecord::default()
        }
    }

    /// A nonblocking receive waits in the wait call of its completing thread
    /// that contains the completion; one completed outside any wait call
    /// waited nowhere; a blocking receive waits in itself.
    #[test]
    fn receives_carry_the_call_they_waited_in() {
        let rows = vec![
            row(c::MPI_Irecv, 0, 1, 50, 60, 7),             // 0
            row(c::MPI_Irecv, 0, 1, 70, 80, 8),             // 1
            row(c::MPI_Test, 1, NO_RANK, 240, 900, 0),      // 2: another thread's
            row(c::MPI_Waitall, 0, NO_RANK, 250, 400, 0),   // 3
            row(c::REQUEST_COMPLETE, 0, 1, 300, 300, 7),    // 4: inside row 3
            row(c::REQUEST_COMPLETE, 0, 1, 500, 500, 8),    // 5: in no wait call
            row(c::MPI_Recv, 0, 1, 600, 700, 0),            // 6
            row(c::MPI_Allreduce, 0, NO_RANK, 800, 850, 0), // 7
        ];
        let s = RankSides::of(4, &rows);
        assert_eq!(s.recvs.len(), 3);
        let w = s.recvs.iter().map(|r| r.waiter).collect::<Vec<_>>();
        assert_eq!(
            w[0],
            Some(Waiter {
                call: c::MPI_Waitall,
                callsite: 0x1000 + u64::from(c::MPI_Waitall),
                from: GlobalNs(250),
                to: GlobalNs(400),
            })
        );
        assert_eq!(w[1], None);
        assert_eq!(
            w[2].map(|w| (w.call, w.from, w.to)),
            Some((c::MPI_Recv, GlobalNs(600), GlobalNs(700)))
        );
        assert_eq!((s.recvs[0].post_row, s.recvs[0].row), (0, 4));
        assert_eq!(s.recvs[0].posted, GlobalNs(50));
        assert_eq!(s.collectives.len(), 1);
        assert_eq!(
            (s.collectives[0].row, s.collectives[0].end),
            (7, GlobalNs(850))
        );
        assert!(s.sends.is_empty());
    }
}
