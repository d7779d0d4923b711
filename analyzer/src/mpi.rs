//! MPI profile (per call and call site, message sizes, communication matrix)
//! and wait states from clock-corrected timestamps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use hyscope_format::mpi_call::{self as c, name as call_name};
use hyscope_format::{MpiRecord, SELF_COMM_ID, WORLD_COMM_ID, comm_name, communicators};

use crate::aligned::collectives::Member;
use crate::aligned::collectives::{is_blocking_collective, is_collective};
use crate::aligned::sides::OUTSIDE_FOCUS;
use crate::aligned::{CollectiveInstance, GlobalNs, MessageList, RankSides};
use crate::model::ns_to_s;
use crate::model::*;
use crate::trace_data::TraceData;

/// An eager limit in bytes and where it came from.
type Limit = (u64, String);

/// Eager limits to classify messages (Didelot 2014 §3.1.2: eager below,
/// rendezvous above): a message between two ranks of one host goes through
/// the shared-memory transport and its limit, one between hosts through the
/// network's.
pub struct EagerLimits<'a> {
    /// The shared-memory transport's (any transport's where none is named).
    within: Option<Limit>,
    /// The network transport's (any transport's where none is named).
    between: Option<Limit>,
    /// Each rank's host, where the job has several.
    host_of: Option<BTreeMap<u32, &'a str>>,
}

impl<'a> EagerLimits<'a> {
    pub fn of(data: &'a TraceData, run: &RunFacts) -> EagerLimits<'a> {
        EagerLimits::new(&data.manifest, run.hosts.len() > 1)
    }

    /// The limits of the job `manifest` describes, ran on several hosts or one.
    pub fn new(manifest: &'a hyscope_format::Manifest, several_hosts: bool) -> EagerLimits<'a> {
        let limits = manifest.mpi.as_ref().map(|m| &m.eager_limits);
        let pick = |keys: &[&str]| {
            let limits = limits?;
            keys.iter()
                .find_map(|k| limits.iter().find(|(n, _)| n.contains(k)))
                .map(|(n, v)| (*v, format!("{n} eager limit (manifest)")))
        };
        EagerLimits {
            within: pick(&["vader", "sm", "shm", "self"]).or_else(|| pick(&[""])),
            between: pick(&["openib", "ucx", "ofi", "tcp", "ch4", "nemesis"])
                .or_else(|| pick(&[""])),
            host_of: several_hosts.then(|| manifest.rank_hosts()),
        }
    }

    /// The limit of a message from rank `from` to rank `to`.
    pub fn for_message(&self, from: u32, to: u32) -> Option<u64> {
        let one_host = self
            .host_of
            .as_ref()
            .is_none_or(|h| matches!((h.get(&from), h.get(&to)), (Some(a), Some(b)) if a == b));
        if one_host {
            &self.within
        } else {
            &self.between
        }
        .as_ref()
        .map(|l| l.0)
    }

    /// The limit a job's messages are classified by (between hosts where
    /// the job has several, else within its one host), and on several
    /// hosts the one within a host where it differs.
    fn described(self) -> (Option<Limit>, Option<Limit>) {
        if self.host_of.is_none() {
            return (self.within, None);
        }
        let within = self.within.filter(|w| self.between.as_ref() != Some(w));
        (self.between, within)
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct CallAcc {
    count: u64,
    per_rank: BTreeMap<u32, i64>,
    bytes_sent: u64,
    bytes_recv: u64,
    /// Rows of single calls (the shortest and longest of them below).
    single: u64,
    min: i64,
    max: i64,
    folded_polls: u64,
    folded_rows: u64,
    /// Rows, and the sum of their times' squares, ns² (their scatter:
    /// `Scatter::of_ns`).
    #[serde(default)]
    rows: u64,
    #[serde(default)]
    sum_sq: u128,
}

impl CallAcc {
    /// A row: one call, or a run of folded polls (`calls` of them; its time
    /// is the run's span, and it has no single call's duration), and the
    /// bytes that arrived for the receives it posted ([`received_by_post`]).
    fn add(&mut self, rank: u32, r: &MpiRecord, received: u64) {
        let d = (r.end_ns - r.start_ns).max(0);
        if r.is_folded() {
            self.folded_polls += u64::from(r.calls);
            self.folded_rows += 1;
        } else {
            if self.single == 0 || d < self.min {
                self.min = d;
            }
            self.max = self.max.max(d);
            self.single += 1;
        }
        self.count += u64::from(r.calls.max(1));
        self.rows += 1;
        self.sum_sq += (d as u128) * (d as u128);
        *self.per_rank.entry(rank).or_default() += d;
        self.bytes_sent += r.bytes_sent;
        // A probe's bytes are the size of the message it found, which the
        // receive that takes the message counts.
        let probed = matches!(
            r.call,
            c::MPI_Probe | c::MPI_Iprobe | c::MPI_Mprobe | c::MPI_Improbe
        );
        self.bytes_recv += if probed { 0 } else { r.bytes_recv } + received;
    }

    /// Another rank's accumulation of the same call (integer sums: the
    /// order ranks are added in does not change them).
    fn merge(&mut self, o: CallAcc) {
        if o.single > 0 {
            if self.single == 0 || o.min < self.min {
                self.min = o.min;
            }
            self.max = self.max.max(o.max);
        }
        self.single += o.single;
        self.count += o.count;
        for (rank, d) in o.per_rank {
            *self.per_rank.entry(rank).or_default() += d;
        }
        self.bytes_sent += o.bytes_sent;
        self.bytes_recv += o.bytes_recv;
        self.folded_polls += o.folded_polls;
        self.folded_rows += o.folded_rows;
        self.rows += o.rows;
        self.sum_sq += o.sum_sq;
    }

    fn stats(&self, call: &str, location: Option<CodeLocation>, run_s: f64) -> MpiCallStats {
        let v: Vec<f64> = self.per_rank.values().map(|&x| ns_to_s(x)).collect();
        let n = v.len().max(1) as f64;
        let total: f64 = v.iter().sum();
        let mean = total / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        MpiCallStats {
            call: call.to_string(),
            location,
            count: self.count,
            total_s: total,
            min_rank_s: v.iter().cloned().fold(f64::INFINITY, f64::min).min(total),
            max_rank_s: v.iter().cloned().fold(0.0, f64::max),
            mean_rank_s: mean,
            cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            bytes_sent: self.bytes_sent,
            bytes_recv: self.bytes_recv,
            min_call_s: ns_to_s(self.min),
            max_call_s: ns_to_s(self.max),
            share_of_run: if run_s > 0.0 { total / run_s } else { 0.0 },
            folded_polls: self.folded_polls,
            folded_rows: self.folded_rows,
            scatter: Scatter::of_ns(
                self.rows,
                self.per_rank.values().map(|&x| x as i128).sum(),
                self.sum_sq,
            ),
        }
    }
}

/// Messages in a size bin: (messages, bytes, eager, rendezvous).
type BinAcc = [u64; 4];

/// Point-to-point traffic and collectives on one communicator: (messages,
/// bytes, collective calls by call).
type CommAcc = (u64, u64, BTreeMap<u16, u64>);

/// What the MPI profile reads of one rank's rows ([`ProfilePart::of`], where
/// the rows are), added to the other ranks' in rank order
/// ([`ProfilePart::merge`]): every sum is of integers but for the rank's own
/// time, so the profile is the same however the ranks were split.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct ProfilePart {
    calls: BTreeMap<u16, CallAcc>,
    /// By call and the code location of the call site ([`crate::code_map`]).
    sites: BTreeMap<(u16, u64), CallAcc>,
    /// By size bin (0: empty messages, k: [2^(k−1), 2^k) bytes).
    bins: BTreeMap<usize, BinAcc>,
    /// (sender, receiver) → (messages, bytes).
    pairs: BTreeMap<(u32, u32), (u64, u64)>,
    inside: i64,
    outside: i64,
    /// Each rank's MPI time, s (summed call by call within the rank).
    rank_s: BTreeMap<u32, f64>,
    eager: u64,
    rendezvous: u64,
    calling_threads: u32,
    per_comm: BTreeMap<u64, CommAcc>,
    /// Rows of the ranks added (request completions included).
    pub rows: u64,
}

/// The bytes that arrived for the receives each of a rank's rows posted,
/// as (row, bytes) sorted by row, rows that posted none left out. A
/// nonblocking receive's bytes are known at its completion
/// (`REQUEST_COMPLETE`, from the status), and the profile counts them as
/// received by the call that posted it: `MPI_Irecv`, `MPI_Imrecv`, or the
/// `MPI_Start`/`MPI_Startall` that activated a persistent receive (as a
/// nonblocking send's bytes are its `MPI_Isend`'s, a persistent send's its
/// `MPI_Start`'s), never by the `MPI_Wait*`/`MPI_Test*` it completed in.
/// Read from the rank's message sides, the one pairing of completions with
/// their posts, with the rows' numbering (the focus's, if any: a receive
/// posted outside it is left out).
pub fn received_by_post(sides: &RankSides) -> Vec<(usize, u64)> {
    let mut out: Vec<(usize, u64)> = sides
        .recvs
        .iter()
        // A blocking receive is its own post and has its bytes in its row.
        .filter(|v| v.row != v.post_row && v.post_row != OUTSIDE_FOCUS && v.bytes > 0)
        .map(|v| (v.post_row, v.bytes))
        .collect();
    out.sort_unstable();
    out.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
    out
}

/// A message a rank sent, by the row that sent it ([`sent_by_row`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentMessage {
    pub row: usize,
    pub to: u32,
    pub comm: u64,
    pub bytes: u64,
}

/// The messages a rank's rows sent, sorted by row: a send call's, and a
/// persistent send's by the `MPI_Start`/`MPI_Startall` that started it
/// (its envelope is its `MPI_Send_init`'s, the message known at its
/// completion). Read from the rank's message sides, the one pairing of
/// completions with their posts, as [`received_by_post`] (a send a focus
/// left out is left out): the size bins, the communication matrix and the
/// communicators' messages count the messages the message list matches.
pub fn sent_by_row(sides: &RankSides) -> Vec<SentMessage> {
    let mut out: Vec<SentMessage> = sides
        .sends
        .iter()
        .filter(|s| s.row != OUTSIDE_FOCUS)
        .map(|s| SentMessage {
            row: s.row,
            to: s.to,
            comm: s.comm,
            bytes: s.bytes,
        })
        .collect();
    out.sort_by_key(|s| s.row);
    out
}

impl ProfilePart {
    /// Rank `rank`'s rows (on global time), with the bytes received by the
    /// receives they posted ([`received_by_post`]) and the messages they
    /// sent ([`sent_by_row`]), messages classified by
    /// `limits`. Call sites stay the rank's own: [`ProfilePart::canonical`].
    pub fn of(
        rank: u32,
        rows: &[MpiRecord],
        received: &[(usize, u64)],
        sent: &[SentMessage],
        limits: &EagerLimits,
    ) -> ProfilePart {
        let mut p = ProfilePart {
            rows: rows.len() as u64,
            ..ProfilePart::default()
        };
        let mut threads: Vec<u32> = Vec::new();
        let mut rank_s = 0.0;
        let mut received = received.iter().peekable();
        let mut sent = sent.iter().peekable();
        for (i, r) in rows.iter().enumerate() {
            let mut posted = 0;
            while let Some(&&(row, b)) = received.peek()
                && row <= i
            {
                if row == i {
                    posted += b;
                }
                received.next();
            }
            if r.call == c::REQUEST_COMPLETE {
                continue;
            }
            if !threads.contains(&r.thread) {
                threads.push(r.thread);
            }
            let d = (r.end_ns - r.start_ns).max(0);
            p.calls.entry(r.call).or_default().add(rank, r, posted);
            // By the rank's own address: made canonical by `canonical`.
            p.sites
                .entry((r.call, r.callsite))
                .or_default()
                .add(rank, r, posted);
            if r.in_parallel {
                p.inside += d;
            } else {
                p.outside += d;
            }
            rank_s += ns_to_s(d);
            if is_collective(r.call) {
                *p.per_comm
                    .entry(r.comm_id)
                    .or_default()
                    .2
                    .entry(r.call)
                    .or_default() += 1;
            }
            while let Some(send) = sent.next_if(|s| s.row <= i) {
                if send.row < i {
                    continue;
                }
                let b = send.bytes;
                let on = p.per_comm.entry(send.comm).or_default();
                on.0 += 1;
                on.1 += b;
                let k = if b == 0 {
                    0
                } else {
                    (64 - b.leading_zeros()) as usize
                };
                if k <= MAX_BIN {
                    let bin = p.bins.entry(k).or_default();
                    bin[0] += 1;
                    bin[1] += b;
                    if let Some(l) = limits.for_message(rank, send.to) {
                        if b <= l {
                            bin[2] += 1;
                            p.eager += 1;
                        } else {
                            bin[3] += 1;
                            p.rendezvous += 1;
                        }
                    }
                }
                let pair = p.pairs.entry((rank, send.to)).or_default();
                pair.0 += 1;
                pair.1 += b;
            }
        }
        p.rank_s.insert(rank, rank_s);
        p.calling_threads = threads.len() as u32;
        p
    }

    /// The same with the rank's call sites made the ids of their code
    /// locations by `canon` (the rank's own symbols, [`crate::code_map`]:
    /// each rank loads its program at its own address; one location, one row).
    pub fn canonical(mut self, canon: &dyn Fn(u64) -> u64) -> ProfilePart {
        let sites = std::mem::take(&mut self.sites);
        for ((call, site), a) in sites {
            self.sites.entry((call, canon(site))).or_default().merge(a);
        }
        self
    }

    /// Add the next rank's (ranks added in rank order).
    pub fn merge(&mut self, o: ProfilePart) {
        for (k, a) in o.calls {
            self.calls.entry(k).or_default().merge(a);
        }
        for (k, a) in o.sites {
            self.sites.entry(k).or_default().merge(a);
        }
        for (k, b) in o.bins {
            let e = self.bins.entry(k).or_default();
            for (x, y) in e.iter_mut().zip(b) {
                *x += y;
            }
        }
        for (k, (m, b)) in o.pairs {
            let e = self.pairs.entry(k).or_default();
            e.0 += m;
            e.1 += b;
        }
        self.inside += o.inside;
        self.outside += o.outside;
        self.rank_s.extend(o.rank_s);
        self.eager += o.eager;
        self.rendezvous += o.rendezvous;
        self.calling_threads = self.calling_threads.max(o.calling_threads);
        for (id, (m, b, calls)) in o.per_comm {
            let e = self.per_comm.entry(id).or_default();
            e.0 += m;
            e.1 += b;
            for (call, n) in calls {
                *e.2.entry(call).or_default() += n;
            }
        }
        self.rows += o.rows;
    }
}

/// The last size bin: [2^39, 2^40) bytes.
const MAX_BIN: usize = 40;

/// The MPI profile from every rank's [`ProfilePart`], merged in rank order.
pub fn analyze_mpi(data: &TraceData, run: &RunFacts, part: ProfilePart) -> Observable<MpiProfile> {
    if part.rows == 0 {
        return Observable::not(if data.manifest.mpi.is_none() {
            "no MPI calls: not an MPI program, or the PMPI wrappers were not loaded"
        } else {
            "no MPI calls were recorded"
        });
    }
    let n = run.ranks as usize;
    let run_s: f64 = run.rank_duration_s.iter().sum::<f64>().max(1e-12);
    let limits = EagerLimits::of(data, run);
    let mut hist: Vec<SizeBin> = (0..=MAX_BIN)
        .map(|k| {
            let [messages, bytes, eager, rendezvous] =
                part.bins.get(&k).copied().unwrap_or_default();
            SizeBin {
                lo: if k == 0 { 0 } else { 1u64 << (k - 1) },
                hi: 1u64 << k,
                messages,
                bytes,
                eager,
                rendezvous,
            }
        })
        .collect();
    let mut per_rank = vec![0.0; n];
    for (rank, s) in &part.rank_s {
        if let Some(p) = per_rank.get_mut(*rank as usize) {
            *p += s;
        }
    }
    let per_comm: BTreeMap<u64, CommStats> = part
        .per_comm
        .into_iter()
        .map(|(id, (messages, bytes, calls))| {
            let mut stats = CommStats {
                messages,
                bytes,
                ..CommStats::default()
            };
            for (call, n) in calls {
                *stats
                    .collectives
                    .entry(call_name(call).to_string())
                    .or_default() += n;
            }
            (id, stats)
        })
        .collect();
    let first = hist.iter().position(|b| b.messages > 0).unwrap_or(0);
    let last = hist
        .iter()
        .rposition(|b| b.messages > 0)
        .map_or(0, |i| i + 1);
    hist = if last > first {
        hist[first..last].to_vec()
    } else {
        Vec::new()
    };
    let mut call_list: Vec<MpiCallStats> = part
        .calls
        .iter()
        .map(|(k, a)| a.stats(call_name(*k), None, run_s))
        .collect();
    call_list.sort_by(|a, b| b.total_s.total_cmp(&a.total_s));
    let mut site_list: Vec<MpiCallStats> = part
        .sites
        .iter()
        .map(|((k, site), a)| a.stats(call_name(*k), Some(data.location(*site)), run_s))
        .collect();
    site_list.sort_by(|a, b| b.total_s.total_cmp(&a.total_s));
    let total: f64 = per_rank.iter().sum();
    let communicators = comm_stats(data, per_comm);
    let pairs: Vec<CommPair> = part
        .pairs
        .into_iter()
        .filter(|((from, to), _)| (*from as usize) < n && (*to as usize) < n)
        .map(|((from, to), (messages, bytes))| CommPair {
            from,
            to,
            messages,
            bytes,
        })
        .collect();
    let matrix = CommMatrix {
        ranks: n as u32,
        pairs,
    };
    let (limit, limit_within_host) = limits.described();
    Observable::Observed(MpiProfile {
        calls: call_list,
        callsites: site_list,
        eager_limit: match limit {
            Some(l) => Observable::Observed(l),
            None => {
                Observable::not("no eager limit in the manifest (MPI control variables not read)")
            }
        },
        eager_limit_within_host: limit_within_host,
        histogram: hist,
        eager_messages: part.eager,
        rendezvous_messages: part.rendezvous,
        matrix,
        inside_parallel_s: ns_to_s(part.inside),
        outside_parallel_s: ns_to_s(part.outside),
        per_rank_s: per_rank,
        total_s: total,
        share_of_run: total / run_s,
        calling_threads: part.calling_threads,
        communicators,
    })
}

/// Names, sizes and members of the communicators that carried traffic
/// (from the ranks' files), world first, then in order of creation.
fn comm_stats(data: &TraceData, mut used: BTreeMap<u64, CommStats>) -> Vec<CommStats> {
    let defined = communicators(&data.manifest.ranks);
    let world = data.manifest.world_size.max(data.ranks.len() as u32);
    used.remove(&0);
    used.into_iter()
        .map(|(id, mut stats)| {
            stats.id = id;
            stats.name = comm_name(id, &defined);
            let def = defined.iter().find(|c| c.id == id);
            (stats.size, stats.members) = match (id, def) {
                (WORLD_COMM_ID, _) => (world, (0..world).collect()),
                (SELF_COMM_ID, _) => (1, Vec::new()),
                (_, Some(c)) => (c.size, c.members.clone()),
                _ => (0, Vec::new()),
            };
            stats
        })
        .collect()
}

/// A call a receive waited in: (rank, thread, start, end, call, call site).
type LateSenderCall = (u32, u32, i64, i64, u16, u64);

#[derive(Default)]
/// Wait time in integer ns and instance counts: integer sums do not depend on
/// the order the matching passes visit messages in (they iterate hash maps),
/// so the same trace always gives the same report.
struct WaitAcc {
    by_kind: BTreeMap<WaitKind, WaitSum>,
    per_rank: BTreeMap<(WaitKind, u32), WaitSum>,
    per_site: BTreeMap<(WaitKind, u16, u64), WaitSum>,
}

/// Waits: their total (ns), how many, and the sum of their squares (ns²).
type WaitSum = (i64, u64, u128);

impl WaitAcc {
    fn add(&mut self, kind: WaitKind, rank: u32, call: u16, site: u64, wait_ns: i64) {
        if wait_ns <= 0 {
            return;
        }
        for e in [
            self.by_kind.entry(kind).or_default(),
            self.per_rank.entry((kind, rank)).or_default(),
            self.per_site.entry((kind, call, site)).or_default(),
        ] {
            e.0 += wait_ns;
            e.1 += 1;
            e.2 += (wait_ns as u128) * (wait_ns as u128);
        }
    }
}

/// Wait states (Scalasca definitions) over all ranks, from the matched
/// messages and collective instances of [`crate::aligned`].
pub fn wait_states(
    data: &TraceData,
    run: &RunFacts,
    messages: &MessageList,
    collectives: &[CollectiveInstance],
) -> Observable<WaitStates> {
    if data.ranks.iter().all(|r| r.mpi_rows == 0) {
        return Observable::not("no MPI calls were recorded");
    }
    if run.hosts.len() > 1 && !data.clock_corrected {
        return Observable::not(
            "ranks on several hosts without clock offsets in the manifest: cross-rank waits would be clock skew",
        );
    }
    let limits = EagerLimits::of(data, run);
    let mut acc = WaitAcc::default();
    // Late sender, per call waited in: the call waits from its start until
    // the latest of its receives' sends starts. A call that completes several
    // receives (`MPI_Waitall`, `MPI_Waitsome`, …) is one wait of that length,
    // as Scalasca counts it, not one per message: their waits overlap.
    let mut late_senders: Vec<(LateSenderCall, i64)> = Vec::new();
    for m in &messages.messages {
        if let Some(w) = m.recv.waiter {
            let ls = (m.send.time.min(w.to) - w.from).max(0);
            let call = (
                m.recv.rank,
                m.recv.thread,
                w.from.ns(),
                w.to.ns(),
                w.call,
                w.callsite,
            );
            late_senders.push((call, ls));
        }
        // Late receiver: a blocking synchronous or rendezvous send waits for the receive's post.
        let s = &m.send;
        let sync = s.call == c::MPI_Ssend
            || limits
                .for_message(s.rank, m.recv.rank)
                .is_some_and(|l| s.bytes_sent > l);
        let blocking = matches!(
            s.call,
            c::MPI_Send | c::MPI_Ssend | c::MPI_Sendrecv | c::MPI_Sendrecv_replace
        );
        if sync && blocking {
            let lr = (m.recv.posted.min(s.end) - s.time).max(0);
            acc.add(
                WaitKind::LateReceiver,
                s.rank,
                s.call,
                data.canon(s.rank, s.callsite),
                lr,
            );
        }
    }

    late_senders.sort_unstable();
    for same_call in late_senders.chunk_by(|a, b| a.0 == b.0) {
        // Sorted by call, then wait: a call's last entry has its longest.
        let &((rank, _, _, _, call, site), ls) = same_call.last().expect("a chunk is never empty");
        acc.add(WaitKind::LateSender, rank, call, data.canon(rank, site), ls);
    }

    for inst in collectives {
        if !inst.consistent() || !is_blocking_collective(inst.call) {
            continue;
        }
        let call = inst.call;
        let members = &inst.members;
        let last_start = inst.last_start();
        let clampw = |m: &Member, until: GlobalNs| (until.min(m.end) - m.start).max(0);
        let mut add = |kind, m: &Member, wait_ns| {
            acc.add(kind, m.rank, call, data.canon(m.rank, m.callsite), wait_ns)
        };
        match call {
            c::MPI_Barrier => {
                for m in members {
                    add(WaitKind::BarrierWait, m, clampw(m, last_start));
                }
            }
            c::MPI_Allreduce
            | c::MPI_Allgather
            | c::MPI_Allgatherv
            | c::MPI_Alltoall
            | c::MPI_Alltoallv
            | c::MPI_Alltoallw
            | c::MPI_Reduce_scatter
            | c::MPI_Reduce_scatter_block => {
                for m in members {
                    add(WaitKind::WaitAtNxN, m, clampw(m, last_start));
                }
            }
            c::MPI_Reduce | c::MPI_Gather | c::MPI_Gatherv => {
                let root = inst.root;
                let last_other = members
                    .iter()
                    .filter(|m| m.rank as i32 != root)
                    .map(|m| m.start)
                    .max();
                if let (Some(r), Some(lo)) =
                    (members.iter().find(|m| m.rank as i32 == root), last_other)
                {
                    add(WaitKind::EarlyReduce, r, clampw(r, lo));
                }
            }
            c::MPI_Bcast | c::MPI_Scatter | c::MPI_Scatterv => {
                let root = inst.root;
                if let Some(rr) = members.iter().find(|m| m.rank as i32 == root) {
                    for m in members.iter().filter(|m| m.rank as i32 != root) {
                        add(WaitKind::LateBroadcast, m, clampw(m, rr.start));
                    }
                }
            }
            _ => {}
        }
    }
    let unmatched = messages.unmatched();
    let entry =
        |kind, rank, call: Option<u16>, site: Option<u64>, (ns, n, sq): WaitSum| WaitEntry {
            kind,
            rank,
            call: call.map(|c| call_name(c).to_string()),
            location: site.map(|a| data.location(a)),
            seconds: ns_to_s(ns),
            instances: n,
            scatter: Scatter::of_ns(n, ns as i128, sq),
        };
    let by_kind: Vec<WaitEntry> = acc
        .by_kind
        .iter()
        .map(|(k, v)| entry(*k, None, None, None, *v))
        .collect();
    let per_rank: Vec<WaitEntry> = acc
        .per_rank
        .iter()
        .map(|((k, r), v)| entry(*k, Some(*r), None, None, *v))
        .collect();
    let mut per_callsite: Vec<WaitEntry> = acc
        .per_site
        .iter()
        .map(|((k, call, site), v)| entry(*k, None, Some(*call), Some(*site), *v))
        .collect();
    per_callsite.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    Observable::Observed(WaitStates {
        total_s: by_kind.iter().map(|e| e.seconds).sum(),
        by_kind,
        per_rank,
        per_callsite,
        unmatched_messages: unmatched,
        clock_error_s: ns_to_s(data.clock_error_ns),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_format::{Manifest, NO_RANK};

    fn row(call: u16, peer: i32, start: i64, req: u64, bytes_sent: u64) -> MpiRecord {
        MpiRecord {
            call,
            peer,
            tag: 3,
            start_ns: start,
            end_ns: start + 10,
            comm_id: 1,
            request_id: req,
            root: NO_RANK,
            bytes_sent,
            ..MpiRecord::default()
        }
    }

    /// A persistent send is a message of the size bins, the communication
    /// matrix and its communicator, counted at the `MPI_Start` that sent it,
    /// as the message list matches it (tests/mpi/messages.c: 32 messages
    /// matched, 24 in the matrix before).
    #[test]
    fn persistent_sends_are_counted_as_messages() {
        let rows = vec![
            row(c::MPI_Send, 1, 10, 0, 32),         // 0: 32 B
            row(c::MPI_Send_init, 1, 20, 11, 0),    // 1
            row(c::MPI_Start, 1, 30, 11, 16),       // 2: 16 B
            row(c::REQUEST_COMPLETE, 1, 40, 11, 0), // 3
            row(c::MPI_Start, 1, 50, 11, 16),       // 4: 16 B
            row(c::REQUEST_COMPLETE, 1, 60, 11, 0), // 5
        ];
        let sides = RankSides::of(0, &rows);
        let sent = sent_by_row(&sides);
        assert_eq!(
            sent.iter()
                .map(|s| (s.row, s.to, s.bytes))
                .collect::<Vec<_>>(),
            vec![(0, 1, 32), (2, 1, 16), (4, 1, 16)]
        );
        let manifest = Manifest::default();
        let limits = EagerLimits::new(&manifest, false);
        let p = ProfilePart::of(0, &rows, &received_by_post(&sides), &sent, &limits);
        assert_eq!(p.pairs.get(&(0, 1)), Some(&(3, 64)));
        assert_eq!(p.per_comm.get(&1).map(|c| (c.0, c.1)), Some((3, 64)));
        let binned: u64 = p.bins.values().map(|b| b[0]).sum();
        assert_eq!(binned, 3);
        assert_eq!(p.bins.get(&5).map(|b| b[0]), Some(2), "[16 B, 32 B)");
        // The call profile's bytes are unchanged: the Starts' 32 B.
        assert_eq!(p.calls[&c::MPI_Start].bytes_sent, 32);
    }
}
