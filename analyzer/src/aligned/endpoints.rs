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

/// A wait or test call on requests.
pub fn is_wait(call: u16) -> bool {
    (c::MPI_Wait..=c::MPI_Testsome).contains(&call)
}

/// Persistent-request starts.
pub fn is_start(call: u16) -> bool {
    matches!(call, c::MPI_Start | c::MPI_Startall)
}

/// The rank a point-to-point row names as its other side (sends, receives,
/// and the rows that create requests with a known peer).
pub fn peer_of(r: &MpiRecord) -> Option<u32> {
    let e = endpoints(r);
    match (e.send, e.recv, e.request) {
        (Some(s), _, _) => Some(s.peer as u32),
        (_, Some(v), _) => Some(v.peer as u32),
        (_, _, Some(_)) if r.peer >= 0 => Some(r.peer as u32),
        _ => None,
    }
}
