//! Which point-to-point endpoints an `mpi` row stands for: the one decision
//! every message consumer shares. A row may start a send, complete a receive,
//! or create a request whose completion row is the endpoint.

use hyscope_format::{MpiRecord, mpi_call as c};

/// The envelope of one side of a message, as the row gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// The other side's `MPI_COMM_WORLD` rank (negative: none, `MPI_PROC_NULL`, `ANY`).
    pub peer: i32,
    pub tag: i32,
    pub comm: u64,
    pub bytes: u64,
}

/// What a row contributes to point-to-point messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// A send that starts at the row's start (blocking or nonblocking).
    pub send: Option<Envelope>,
    /// A receive that completes at the row's end (blocking receives: the
    /// row's peer and tag come from the status, wildcards resolved).
    pub recv: Option<Envelope>,
    /// The row creates or starts a request whose completion row
    /// ([`c::REQUEST_COMPLETE`] with the same `request_id`) is a receive
    /// (`Some(true)`) or a persistent send (`Some(false)`) endpoint.
    pub request: Option<RequestKind>,
}

/// A request created by a row, seen from its completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// `MPI_Irecv`, `MPI_Imrecv`: the completion receives (status = actual source and tag).
    Recv,
    /// `MPI_Recv_init`: each completion of an active instance receives.
    PersistentRecv,
    /// `MPI_*send_init`: each `MPI_Start` of it sends.
    PersistentSend,
}

/// The endpoints of one row: the direct send and receive sides are the
/// format's one definition ([`MpiRecord::p2p_endpoints`], both sides of
/// `MPI_Sendrecv` included); this adds the requests whose completion rows are
/// the endpoints (nonblocking receives, persistent requests).
pub fn endpoints(r: &MpiRecord) -> Endpoints {
    let env = |e: hyscope_format::Endpoint| Envelope {
        peer: e.peer,
        tag: e.tag,
        comm: e.comm_id,
        bytes: e.bytes,
    };
    let mut e = Endpoints::default();
    match r.call {
        c::MPI_Irecv | c::MPI_Imrecv => e.request = Some(RequestKind::Recv),
        c::MPI_Recv_init => e.request = Some(RequestKind::PersistentRecv),
        c::MPI_Send_init | c::MPI_Ssend_init | c::MPI_Bsend_init | c::MPI_Rsend_init => {
            e.request = Some(RequestKind::PersistentSend)
        }
        _ => {
            let sides = r.p2p_endpoints();
            e.send = sides.send.map(env);
            e.recv = sides.recv.map(env);
        }
    }
    // MPI_PROC_NULL and unknown peers carry no message.
    e.send = e.send.filter(|s| s.peer >= 0);
    e.recv = e.recv.filter(|s| s.peer >= 0);
    e
}

/// Blocking and nonblocking collectives (the `mpi_call` codes 50–86).
pub fn is_collective(call: u16) -> bool {
    (c::MPI_Barrier..=c::MPI_Iexscan).contains(&call)
}

/// Blocking collectives (`MPI_Barrier` … `MPI_Exscan`).
pub fn is_blocking_collective(call: u16) -> bool {
    (c::MPI_Barrier..=c::MPI_Exscan).contains(&call)
}

/// A wait or test call on requests.
pub fn is_wait(call: u16) -> bool {
    (c::MPI_Wait..=c::MPI_Testsome).contains(&call)
}

/// Persistent-request starts.
pub fn is_start(call: u16) -> bool {
    matches!(call, c::MPI_Start | c::MPI_Startall)
}

/// The ranks a row names as the other side of a point-to-point exchange:
/// both sides of an `MPI_Sendrecv`, the peer of a request the row creates
/// (a nonblocking receive from a known source, a persistent request), and
/// the peer a completion row carries (the source a wildcard receive's
/// status resolved, a send's destination). What the memory model counts as
/// a rank's connections: a ring of `MPI_Sendrecv` connects each rank to two.
pub fn peers_of(r: &MpiRecord) -> impl Iterator<Item = u32> {
    let e = endpoints(r);
    let named = (e.request.is_some() || r.call == c::REQUEST_COMPLETE) && r.peer >= 0;
    e.send
        .map(|s| s.peer as u32)
        .into_iter()
        .chain(e.recv.map(|v| v.peer as u32))
        .chain(named.then_some(r.peer as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both sides of a `MPI_Sendrecv`; a wildcard receive's source from its
    /// completion row; none for `MPI_PROC_NULL` or a collective.
    #[test]
    fn peers_are_every_side_a_row_names() {
        let row = |call: u16, peer: i32, recv_peer: i32| MpiRecord {
            call,
            peer,
            recv_peer,
            bytes_sent: 8,
            bytes_recv: 8,
            ..MpiRecord::default()
        };
        let peers = |r: &MpiRecord| peers_of(r).collect::<Vec<u32>>();
        assert_eq!(peers(&row(c::MPI_Sendrecv, 3, 1)), [3, 1]);
        assert_eq!(peers(&row(c::MPI_Send, 3, -1)), [3]);
        assert_eq!(peers(&row(c::MPI_Irecv, -1, -1)), Vec::<u32>::new());
        assert_eq!(peers(&row(c::REQUEST_COMPLETE, 5, -1)), [5]);
        assert_eq!(peers(&row(c::MPI_Send, -2, -1)), Vec::<u32>::new());
        assert_eq!(peers(&row(c::MPI_Allreduce, -1, -1)), Vec::<u32>::new());
    }
}
