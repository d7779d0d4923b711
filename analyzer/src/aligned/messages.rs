//! The matched point-to-point message list: every send paired with its
//! receive, or counted as unmatched.
//!
//! Pairing follows MPI's non-overtaking rule (MPI 4.0 §3.5): messages with the
//! same envelope (source, destination, communicator, tag) are received in the
//! order they were sent, so the k-th send of an envelope is the k-th receive
//! of it, sends ordered by start and receives by when they were posted.
//! Receives name their actual source and tag (the status of a blocking
//! receive, or of the completion of a nonblocking or persistent one), so
//! wildcards are resolved before matching.

use std::collections::HashMap;

use hyscope_format::{MpiRecord, mpi_call as c};
use serde::{Deserialize, Serialize};

use super::clock::GlobalNs;
use super::endpoints::{RequestKind, endpoints, is_start};

/// One rank's `mpi` rows on global time, in [`super::sort_rows`] order.
#[derive(Debug, Clone, Copy)]
pub struct RankRows<'a> {
    pub rank: u32,
    pub rows: &'a [MpiRecord],
}

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
}

/// A matched message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub send: SendSide,
    pub recv: RecvSide,
    /// The communicator's id (`comm_id` of the rows).
    pub comm: u64,
    pub tag: i32,
    /// Bytes sent (the receive's count when the send's is unknown).
    pub bytes: u64,
}

/// Every message of a trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageList {
    /// Ordered by send time, then sender and row.
    pub messages: Vec<Message>,
    /// Sends no receive was found for.
    pub unmatched_sends: u64,
    /// Receives no send was found for (or whose source stayed unknown).
    pub unmatched_recvs: u64,
}

impl MessageList {
    pub fn unmatched(&self) -> u64 {
        self.unmatched_sends + self.unmatched_recvs
    }

    /// One warning line when messages stayed unmatched, None otherwise.
    pub fn warning(&self) -> Option<String> {
        (self.unmatched() > 0).then(|| {
            format!(
                "{} point-to-point sends and {} receives have no matching other side in the trace \
                 (events dropped, a rank's file missing, or a call this version does not pair); \
                 they are left out of the message list and the wait states",
                self.unmatched_sends, self.unmatched_recvs
            )
        })
    }
}

/// (source, destination, communicator, tag).
type Envelope = (u32, u32, u64, i32);

struct PendingSend {
    order: i64,
    side: SendSide,
    bytes: u64,
}

struct PendingRecv {
    order: i64,
    side: RecvSide,
    bytes: u64,
}

/// Match the messages of all ranks.
pub fn match_messages(ranks: &[RankRows<'_>]) -> MessageList {
    let mut sends: HashMap<Envelope, Vec<PendingSend>> = HashMap::new();
    let mut recvs: HashMap<Envelope, Vec<PendingRecv>> = HashMap::new();
    let mut unknown_source = 0u64;
    for rr in ranks {
        let me = rr.rank;
        // Requests by id: the row that created them and what they are.
        let mut requests: HashMap<u64, (usize, RequestKind)> = HashMap::new();
        // The latest `MPI_Start` of each persistent request, and the latest
        // `MPI_Startall` of each thread (its row names no single request).
        let mut started: HashMap<u64, usize> = HashMap::new();
        let mut start_all: HashMap<u32, usize> = HashMap::new();
        for (i, r) in rr.rows.iter().enumerate() {
            let e = endpoints(r);
            if let Some(s) = e.send {
                sends
                    .entry((me, s.peer as u32, s.comm, s.tag))
                    .or_default()
                    .push(PendingSend {
                        order: r.start_ns,
                        side: SendSide {
                            rank: me,
                            thread: r.thread,
                            row: i,
                            time: GlobalNs(r.start_ns),
                        },
                        bytes: s.bytes,
                    });
            }
            if let Some(v) = e.recv {
                recvs
                    .entry((v.peer as u32, me, v.comm, v.tag))
                    .or_default()
                    .push(PendingRecv {
                        order: r.start_ns,
                        side: RecvSide {
                            rank: me,
                            thread: r.thread,
                            row: i,
                            post_row: i,
                            posted: GlobalNs(r.start_ns),
                            time: GlobalNs(r.end_ns),
                        },
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
            let init = &rr.rows[created];
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
            let post_row = &rr.rows[post];
            let comm = if r.comm_id != 0 {
                r.comm_id
            } else {
                init.comm_id
            };
            match kind {
                RequestKind::PersistentSend => {
                    let (peer, tag) = if r.peer >= 0 {
                        (r.peer, r.tag)
                    } else {
                        (init.peer, init.tag)
                    };
                    if peer < 0 {
                        continue;
                    }
                    let bytes = if post_row.request_id == r.request_id {
                        post_row.bytes_sent
                    } else {
                        0
                    };
                    sends
                        .entry((me, peer as u32, comm, tag))
                        .or_default()
                        .push(PendingSend {
                            order: post_row.start_ns,
                            side: SendSide {
                                rank: me,
                                thread: post_row.thread,
                                row: post,
                                time: GlobalNs(post_row.start_ns),
                            },
                            bytes,
                        });
                }
                RequestKind::Recv | RequestKind::PersistentRecv => {
                    // The status names the real source and tag.
                    let (src, tag) = if r.peer >= 0 {
                        (r.peer, r.tag)
                    } else {
                        (init.peer, init.tag)
                    };
                    if src < 0 {
                        // Cancelled, or no status: nothing was received from
                        // a known rank. A PROC_NULL receive is no message.
                        if src != hyscope_format::PROC_NULL {
                            unknown_source += 1;
                        }
                        continue;
                    }
                    recvs
                        .entry((src as u32, me, comm, tag))
                        .or_default()
                        .push(PendingRecv {
                            order: post_row.start_ns,
                            side: RecvSide {
                                rank: me,
                                thread: r.thread,
                                row: i,
                                post_row: post,
                                posted: GlobalNs(post_row.start_ns),
                                time: GlobalNs(r.start_ns),
                            },
                            bytes: r.bytes_recv,
                        });
                }
            }
        }
    }
    let mut out = MessageList {
        unmatched_recvs: unknown_source,
        ..MessageList::default()
    };
    for (key, mut s) in sends {
        let mut r = recvs.remove(&key).unwrap_or_default();
        s.sort_by_key(|p| (p.order, p.side.row));
        r.sort_by_key(|p| (p.order, p.side.row));
        let n = s.len().min(r.len());
        out.unmatched_sends += (s.len() - n) as u64;
        out.unmatched_recvs += (r.len() - n) as u64;
        out.messages.extend(s.iter().zip(&r).map(|(s, r)| Message {
            send: s.side,
            recv: r.side,
            comm: key.2,
            tag: key.3,
            bytes: if s.bytes > 0 { s.bytes } else { r.bytes },
        }));
    }
    out.unmatched_recvs += recvs.values().map(|v| v.len() as u64).sum::<u64>();
    out.messages.sort_by_key(|m| {
        (
            m.send.time,
            m.send.rank,
            m.send.row,
            m.recv.rank,
            m.recv.row,
        )
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_format::{ANY, NO_RANK};

    fn row(call: u16, peer: i32, tag: i32, start: i64, req: u64) -> MpiRecord {
        MpiRecord {
            call,
            peer,
            tag,
            start_ns: start,
            end_ns: start + 10,
            comm_id: 1,
            request_id: req,
            root: NO_RANK,
            ..MpiRecord::default()
        }
    }

    /// (rank, row) of a send and of its receive.
    type Pair = ((u32, usize), (u32, usize));

    fn pairs(ranks: &[(u32, Vec<MpiRecord>)]) -> (Vec<Pair>, MessageList) {
        let rr: Vec<RankRows> = ranks
            .iter()
            .map(|(rank, rows)| RankRows { rank: *rank, rows })
            .collect();
        let m = match_messages(&rr);
        let p = m
            .messages
            .iter()
            .map(|m| ((m.send.rank, m.send.row), (m.recv.rank, m.recv.row)))
            .collect();
        (p, m)
    }

    #[test]
    fn fifo_per_envelope_with_requests_and_wildcards() {
        let r0 = vec![
            row(c::MPI_Send, 1, 5, 100, 0),         // 0
            row(c::MPI_Isend, 1, 5, 200, 7),        // 1
            row(c::MPI_Irecv, ANY, 6, 300, 3),      // 2: ANY_SOURCE ...
            row(c::REQUEST_COMPLETE, 1, 6, 600, 3), // 3: ... resolved by the status
        ];
        let r1 = vec![
            row(c::MPI_Irecv, 0, 5, 50, 9),         // 0: posted first
            row(c::MPI_Recv, 0, 5, 60, 0),          // 1: posted second
            row(c::REQUEST_COMPLETE, 0, 5, 300, 9), // 2: completes the Irecv
            row(c::MPI_Send, 0, 6, 400, 0),         // 3
            row(c::MPI_Send, 0, 99, 500, 0),        // 4: never received
        ];
        let (p, m) = pairs(&[(0, r0), (1, r1)]);
        assert_eq!(
            p,
            vec![((0, 0), (1, 2)), ((0, 1), (1, 1)), ((1, 3), (0, 3))]
        );
        assert_eq!((m.unmatched_sends, m.unmatched_recvs), (1, 0));
        assert_eq!(m.messages[0].recv.posted, GlobalNs(50));
        assert_eq!(m.messages[0].recv.time, GlobalNs(300));
        assert!(m.warning().is_some());
    }

    #[test]
    fn communicators_separate_equal_envelopes() {
        let mut a = row(c::MPI_Send, 1, 5, 100, 0);
        a.comm_id = 2;
        let b = row(c::MPI_Send, 1, 5, 200, 0);
        let x = row(c::MPI_Recv, 0, 5, 50, 0);
        let mut y = row(c::MPI_Recv, 0, 5, 60, 0);
        y.comm_id = 2;
        let (p, m) = pairs(&[(0, vec![a, b]), (1, vec![x, y])]);
        assert_eq!(p, vec![((0, 0), (1, 1)), ((0, 1), (1, 0))]);
        assert_eq!(m.unmatched(), 0);
    }

    #[test]
    fn persistent_requests_match_per_start() {
        let r0 = vec![
            row(c::MPI_Send_init, 1, 4, 10, 11),     // 0
            row(c::MPI_Start, 1, 4, 100, 11),        // 1
            row(c::REQUEST_COMPLETE, 1, 4, 150, 11), // 2
            row(c::MPI_Start, 1, 4, 200, 11),        // 3
            row(c::REQUEST_COMPLETE, 1, 4, 250, 11), // 4
        ];
        let r1 = vec![
            row(c::MPI_Recv_init, 0, 4, 5, 21),      // 0
            row(c::MPI_Startall, NO_RANK, 0, 90, 0), // 1
            row(c::REQUEST_COMPLETE, 0, 4, 160, 21), // 2
            row(c::MPI_Start, 0, 4, 190, 21),        // 3
            row(c::REQUEST_COMPLETE, 0, 4, 260, 21), // 4
        ];
        let (p, m) = pairs(&[(0, r0), (1, r1)]);
        assert_eq!(p, vec![((0, 1), (1, 2)), ((0, 3), (1, 4))]);
        assert_eq!(m.messages[0].recv.post_row, 1);
        assert_eq!(m.messages[1].recv.post_row, 3);
        assert_eq!(m.unmatched(), 0);
    }
}
