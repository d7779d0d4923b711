//! What the GUI loads from a trace, in a background thread: the timeline
//! index, symbols, counter tracks, point-to-point messages, and the analysis.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use hyscope_analyzer::aligned::series::{SampleSeries, is_energy, sample_series};
use hyscope_analyzer::code_map::CodeMap;
use hyscope_analyzer::timeline::TimelineIndex;
use hyscope_analyzer::{Analysis, AnalyzeOptions};
use hyscope_format::{
    MpiRecord, OmpKind, OmpRecord, SampleRecord, ScanOptions, SymbolRecord, Trace,
};

use crate::loading::{Coarse, Loading, open_timeline};
use crate::samples::{rate_steps, steps};

/// A counter track: one metric (and key) of the `samples` table.
#[derive(Debug, Clone)]
pub struct CounterTrack {
    /// E.g. `power pkg.0 rank 0 (W)`.
    pub name: String,
    /// The values' unit (`W`, `bytes`, `messages`; empty if the manifest has none).
    pub unit: String,
    /// (time on rank 0's clock in ns, value), as steps: a value holds until
    /// the next sample (to the end of the trace for the last one), since a
    /// sample is the state at that time, or a rate over the interval before
    /// it, not a point on a line.
    pub points: Vec<(i64, f64)>,
}

impl CounterTrack {
    /// The family it is plotted with: the metric's first word and its unit,
    /// so that one plot never mixes units (`mem · bytes`, `mpi_t · messages`).
    pub fn family(&self) -> String {
        let word = self.name.split([' ', '.']).next().unwrap_or("");
        if self.unit.is_empty() {
            word.to_string()
        } else {
            format!("{word} · {}", self.unit)
        }
    }
}

/// An instance of a code location on the timeline: (rank, thread, start, end), rank 0's clock.
pub type Instance = (u32, u32, i64, i64);

/// A matched point-to-point message ([`hyscope_analyzer::aligned::messages`]),
/// as the timeline draws it: an arrow from the send's start to the receive's
/// completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    pub from_rank: u32,
    pub from_thread: u32,
    pub send_ns: i64,
    pub to_rank: u32,
    pub to_thread: u32,
    pub recv_ns: i64,
    pub bytes: u64,
}

impl From<&hyscope_analyzer::aligned::Message> for Message {
    fn from(m: &hyscope_analyzer::aligned::Message) -> Message {
        Message {
            from_rank: m.send.rank,
            from_thread: m.send.thread,
            send_ns: m.send.time.ns(),
            to_rank: m.recv.rank,
            to_thread: m.recv.thread,
            recv_ns: m.recv.time.ns(),
            bytes: m.bytes,
        }
    }
}

/// Everything the timeline of one trace needs.
pub struct TraceData {
    pub index: Arc<TimelineIndex>,
    /// Whether the index came from the on-disk cache, and how long it took.
    pub index_cached: bool,
    pub index_s: f64,
    pub symbols: HashMap<(u32, u64), SymbolRecord>,
    /// Which code location each rank's addresses are, by the analysis's rule
    /// (the ids its locations carry).
    pub code: CodeMap,
    pub counters: Vec<CounterTrack>,
    pub messages: Vec<Message>,
    /// Recorded in profile mode: OpenMP totals only, no intervals to draw.
    pub profile_mode: bool,
    /// Each rank's phases on global time (the phase row above the rank).
    pub phases: hyscope_analyzer::phases::PhaseLanes,
}

impl TraceData {
    /// The analyzer's label of a rank's code address (`label_of`: `file:line`,
    /// without a line `function (module+0x…)`), else the address.
    pub fn location(&self, rank: u32, address: u64) -> String {
        match self.symbols.get(&(rank, address)) {
            Some(s) => hyscope_analyzer::load::label_of(s),
            None if address == 0 => "-".into(),
            None => format!("0x{address:x}"),
        }
    }
}

/// Progress of a background load, shared with the UI thread.
#[derive(Default)]
pub struct Progress {
    pub done: AtomicUsize,
    pub total: AtomicUsize,
    pub stage: Mutex<String>,
}

impl Progress {
    fn stage(&self, s: &str) {
        if let Ok(mut g) = self.stage.lock() {
            *g = s.to_string();
        }
    }
}

/// Load the timeline data of an opened trace; `cache`: use the on-disk
/// caches. The coarse overview goes to `overviews` as soon as there is one
/// (of the ranks read so far while the index is built).
pub fn load_trace(
    trace: &Trace,
    progress: &Progress,
    cache: bool,
    overviews: Sender<Arc<Coarse>>,
) -> Result<TraceData, String> {
    progress.stage("building the timeline index");
    let started = std::time::Instant::now();
    let report = |done, total| {
        progress.total.store(total, Ordering::Relaxed);
        progress.done.store(done, Ordering::Relaxed);
    };
    let (index, index_cached) = open_timeline(trace, cache, &report, overviews)?;
    let index_s = started.elapsed().as_secs_f64();
    progress.stage("reading symbols, samples, messages and phases");
    // A rank the index leaves out for a damaged part is left out whole:
    // none of its samples or MPI rows are read, and a message with its other
    // side there is counted apart, as the analysis does (no dangling line).
    let kept = kept_ranks(&index);
    let phases = hyscope_analyzer::phases::PhaseLanes::read(&index);
    let rows = trace
        .read_records::<SymbolRecord>(&ScanOptions::default())
        .map_err(|e| e.to_string())?;
    let code = CodeMap::new(rows.iter().cloned());
    let symbols = rows
        .into_iter()
        .map(|(rank, s)| ((rank, s.address), s))
        .collect();
    let samples = trace
        .read_records::<SampleRecord>(&kept)
        .map_err(|e| e.to_string())?;
    let series = sample_series(index.clocks(), samples);
    let counters = counter_tracks(trace, series, index.span().1);
    let left_out: Vec<u32> = index.left_out().iter().map(|p| p.rank).collect();
    let messages = hyscope_analyzer::aligned::read_messages_without(trace, &left_out)
        .map_err(|e| e.to_string())?
        .messages
        .iter()
        .map(Message::from)
        .collect();
    Ok(TraceData {
        index: Arc::new(index),
        index_cached,
        index_s,
        symbols,
        code,
        counters,
        messages,
        profile_mode: trace.manifest.mode == "profile",
        phases,
    })
}

/// What reads every rank's rows reads: every rank but those the index
/// leaves out (all of them when none is).
fn kept_ranks(index: &TimelineIndex) -> ScanOptions {
    let ranks = (!index.left_out().is_empty()).then(|| {
        index
            .trace()
            .ranks()
            .into_iter()
            .filter(|&r| !index.is_left_out(r))
            .collect()
    });
    ScanOptions {
        ranks,
        ..ScanOptions::default()
    }
}

/// The sample series as step tracks ([`steps`]) up to `end`; cumulative
/// energy (unit J) becomes power (W) over each sampling interval.
fn counter_tracks(trace: &Trace, series: Vec<SampleSeries>, end: i64) -> Vec<CounterTrack> {
    let mut out = Vec::new();
    for SampleSeries {
        metric,
        key,
        rank,
        points,
    } in series
    {
        let points: Vec<(i64, f64)> = points.into_iter().map(|(t, v)| (t.ns(), v)).collect();
        let unit = trace
            .manifest
            .metrics
            .get(&metric)
            .map(|m| m.unit.clone())
            .unwrap_or_default();
        let key_label = if key >= 0 {
            format!(" [{key}]")
        } else {
            String::new()
        };
        if unit == "J" || is_energy(&metric) {
            out.push(CounterTrack {
                name: format!("power {metric}{key_label} rank {rank} (W)"),
                unit: "W".into(),
                points: rate_steps(&points),
            });
        } else {
            let shown = if unit.is_empty() {
                String::new()
            } else {
                format!(" ({unit})")
            };
            out.push(CounterTrack {
                name: format!("{metric}{key_label} rank {rank}{shown}"),
                unit,
                points: steps(&points, Some(end)),
            });
        }
    }
    out
}

/// Instances of a code location (loop, region, MPI call site), named by the
/// id the analysis gives it, on every rank: the rows whose rank's own symbols
/// make their address that location ([`CodeMap::matches`], the rule the
/// analysis merges ranks by): (rank, thread, start, end) on rank 0's clock,
/// at most `limit`.
pub fn instances_of(data: &TraceData, address: u64, limit: usize) -> Result<Vec<Instance>, String> {
    let trace = data.index.trace();
    let clocks = data.index.clocks();
    let global = |rank: u32, t: i64| clocks.to_global(rank, t).ns();
    let location = |rank: u32, a: u64| data.code.matches(address, rank, a);
    // The ranks left out are not read (their parts are damaged).
    let kept = kept_ranks(&data.index);
    // The whole trace searched batch by batch, never held.
    let mut out = Vec::new();
    let mut found = |rank: u32, thread: u32, start: i64, end: i64| {
        out.push((rank, thread, global(rank, start), global(rank, end)))
    };
    // A region's code address is on its primary thread's rows only: its
    // other threads' implicit tasks are found by the region's id, in a
    // second pass when a region matched.
    let mut regions: std::collections::HashSet<(u32, u64)> = std::collections::HashSet::new();
    trace
        .for_each_record::<OmpRecord>(&kept, |rank, r| {
            let kind = OmpKind::from_u8(r.kind);
            if matches!(
                kind,
                Some(OmpKind::Work | OmpKind::Parallel | OmpKind::ImplicitTask)
            ) && location(rank, r.codeptr)
            {
                found(rank, r.thread, r.start_ns, r.end_ns);
                if kind == Some(OmpKind::Parallel) {
                    regions.insert((rank, r.parallel_id));
                }
            }
        })
        .map_err(|e| e.to_string())?;
    if !regions.is_empty() {
        trace
            .for_each_record::<OmpRecord>(&kept, |rank, r| {
                if r.kind == OmpKind::ImplicitTask as u8
                    && !location(rank, r.codeptr)
                    && regions.contains(&(rank, r.parallel_id))
                {
                    found(rank, r.thread, r.start_ns, r.end_ns);
                }
            })
            .map_err(|e| e.to_string())?;
    }
    trace
        .for_each_record::<MpiRecord>(&kept, |rank, r| {
            if r.end_ns > r.start_ns && location(rank, r.callsite) {
                found(rank, r.thread, r.start_ns, r.end_ns);
            }
        })
        .map_err(|e| e.to_string())?;
    out.sort_by_key(|i| (i.2, i.0, i.1));
    out.truncate(limit);
    Ok(out)
}

/// Start the analysis of a trace in the background, restricted to `phase`
/// when one is given.
pub fn spawn_analysis(path: PathBuf, phase: Option<String>) -> Loading<Arc<Analysis>> {
    Loading::spawn(move || {
        let options = AnalyzeOptions {
            phase,
            ..AnalyzeOptions::default()
        };
        crate::loading::in_background(|| hyscope_analyzer::analyze(&path, &options))
            .map(Arc::new)
            .map_err(|e| e.to_string())
    })
}
