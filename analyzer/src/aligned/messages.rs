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

use serde::{Deserialize, Serialize};

use super::sides::{OUTSIDE_FOCUS, RankSides};
pub use super::sides::{RecvSide, SendSide, Waiter};

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
    /// Sends to a rank left out of the analysis (a part of it cannot be
    /// read, `crate::damaged_parts`): their other side is not read, so they
    /// are not in `messages`, nor counted as unmatched.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partner_left_out_sends: u64,
    /// Receives from a rank left out of the analysis.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partner_left_out_recvs: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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

    /// One note when messages had their other side on a rank left out of
    /// the analysis, None otherwise.
    pub fn left_out_note(&self) -> Option<String> {
        let (s, r) = (self.partner_left_out_sends, self.partner_left_out_recvs);
        (s + r > 0).then(|| {
            format!(
                "{s} point-to-point sends and {r} receives have their other side on a rank left out of the analysis \
                 (a part of it cannot be read: see the trace's problems); they are left out of the message list and the wait states"
            )
        })
    }
}

/// Match the messages of the ranks analysed (`ranks`) when the ranks
/// `left_out` were left out of the analysis: a send to or a receive from
/// one of them has no other side to find, and is counted apart from the
/// unmatched ([`MessageList::partner_left_out_sends`]).
pub fn match_messages_without(ranks: &mut [RankSides], left_out: &[u32]) -> MessageList {
    let (mut sends, mut recvs) = (0u64, 0u64);
    for rs in ranks.iter() {
        sends += rs.sends.iter().filter(|s| left_out.contains(&s.to)).count() as u64;
        recvs += rs
            .recvs
            .iter()
            .filter(|r| left_out.contains(&r.from))
            .count() as u64;
    }
    let mut out = match_messages(ranks);
    // Those sides found no match (their partner's sides are not read).
    out.unmatched_sends = out.unmatched_sends.saturating_sub(sends);
    out.unmatched_recvs = out.unmatched_recvs.saturating_sub(recvs);
    out.partner_left_out_sends = sends;
    out.partner_left_out_recvs = recvs;
    out
}

/// (source, destination, communicator, tag).
type Envelope = (u32, u32, u64, i32);

/// A side waiting for its match: its order under its envelope, the side, its bytes.
type Pending<S> = ((i64, usize), S, u64);

/// The order of the message list: the whole run's send (time, sender, row),
/// then the receiver and its row.
type ListOrder = (i64, u32, usize, u32, usize);

/// Match the messages of all ranks from their sides (taken out of `ranks`).
pub fn match_messages(ranks: &mut [RankSides]) -> MessageList {
    let mut sends: HashMap<Envelope, Vec<Pending<SendSide>>> = HashMap::new();
    let mut recvs: HashMap<Envelope, Vec<Pending<RecvSide>>> = HashMap::new();
    let mut unknown_source = 0u64;
    for rs in ranks.iter_mut() {
        let me = rs.rank;
        for s in std::mem::take(&mut rs.sends) {
            sends.entry((me, s.to, s.comm, s.tag)).or_default().push((
                s.order,
                s.side(me),
                s.bytes,
            ));
        }
        for r in std::mem::take(&mut rs.recvs) {
            recvs.entry((r.from, me, r.comm, r.tag)).or_default().push((
                r.order,
                r.side(me),
                r.bytes,
            ));
        }
        unknown_source += rs.unknown_source;
    }
    let mut out = MessageList {
        unmatched_recvs: unknown_source,
        ..MessageList::default()
    };
    let mut keyed: Vec<(ListOrder, Message)> = Vec::new();
    for (key, mut s) in sends {
        let mut r = recvs.remove(&key).unwrap_or_default();
        s.sort_by_key(|p| p.0);
        r.sort_by_key(|p| p.0);
        let n = s.len().min(r.len());
        out.unmatched_sends += (s.len() - n) as u64;
        out.unmatched_recvs += (r.len() - n) as u64;
        // Ordered by the whole run's send time, sender and rows.
        keyed.extend(s.iter().zip(&r).map(|(s, r)| {
            let key_of = (s.0.0, s.1.rank, s.0.1, r.1.rank, r.0.1);
            let m = Message {
                send: s.1,
                recv: r.1,
                comm: key.2,
                tag: key.3,
                bytes: if s.2 > 0 { s.2 } else { r.2 },
            };
            (key_of, m)
        }));
    }
    out.unmatched_recvs += recvs.values().map(|v| v.len() as u64).sum::<u64>();
    keyed.sort_unstable_by_key(|(k, _)| *k);
    // Matched over the whole run, kept where a focus kept every row.
    out.messages = keyed
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| ![m.send.row, m.recv.row, m.recv.post_row].contains(&OUTSIDE_FOCUS))
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aligned::GlobalNs;
    use hyscope_format::{ANY, MpiRecord, NO_RANK, mpi_call as c};

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
        let mut sides: Vec<RankSides> = ranks
            .iter()
            .map(|(rank, rows)| RankSides::of(*rank, rows))
            .collect();
        let m = match_messages(&mut sides);
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
