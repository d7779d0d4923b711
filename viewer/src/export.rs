//! `hyscope export --format perfetto -o OUT <trace>`: convert a trace for the
//! tools people already have.
//!
//! Perfetto / Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing):
//! - one process per rank (`pid` = rank + 1, named `rank <r> (<host>)`), one
//!   thread per OpenMP thread (`tid` = thread + 1): pid/tid 0 mean "idle" to Perfetto;
//! - every row of the `omp` and `mpi` tables is one complete event (`ph: X`), or
//!   an instant (`ph: i`) when it has no duration;
//! - point-to-point messages are flow events (`ph: s` at the send's start, `ph: f`
//!   at the receive's completion): the analyzer's matched message list
//!   ([`hyscope_analyzer::aligned::messages`]), the one the report shows;
//! - the `samples` table becomes counter tracks (`ph: C`);
//! - the `phases` table: one phase track per thread that has phases (`tid` =
//!   [`phase_tid`], named `thread <t> phases`, sorted just above the thread),
//!   one complete event per phase (`cat: phase`, an instant for a mark), nested
//!   as the phases nest; a phase that crosses the end of the one it began in
//!   (an NVTX start/end range) goes to a further track of that thread, so each
//!   track nests properly (the trace-event format needs that of one track).
//!
//! Timestamps are microseconds (with ns decimals) since the start of the trace,
//! on global time ([`hyscope_analyzer::aligned::clock`]: every rank's clock
//! mapped to rank 0's with the offsets at `MPI_Init` and `MPI_Finalize`).
//!
//! The run's window ([`hyscope_analyzer::run_window`]), the one `hyscope
//! report` prints, computed first by the analysis's loader without the
//! rest of the analysis ([`run_notes`]): a track `run window`
//! (process `run (hyscope)`, above the ranks) holding one slice over it, and
//! the top-level `metadata` object `hyscope` with the window (`start_us`,
//! `end_us` on the events' time axis, `duration_ns`) and `notes`: what lies
//! outside the window (each such event has the argument
//! `outside_run_window`) and what the analysis clips that the export keeps
//! as recorded, with why.
//!
//! OTF2: see [`otf2`] (written through the OTF2 C library).
//!
//! Both read one rank's OpenMP and MPI rows at a time as they write it
//! ([`TraceData::rank_rows`]): the export's memory is the largest rank's
//! rows, the samples, phases and symbols, and the matched messages (matched
//! from each rank's message sides, [`hyscope_analyzer::aligned::sides`]).
//!
//! A rank the analysis leaves out for a damaged part (the list
//! [`hyscope_analyzer::run_extent`] gives, the analysis's own) is left out
//! here too: none of its rows, samples or phases are read or written, its
//! process (Perfetto) or rank (OTF2) stays, named as left out, empty; a
//! message whose other side is there gets no flow and no message event,
//! counted in a note as the analysis counts it; stderr names the first
//! rank and file left out (or other loss) in one `hyscope:` line, and the
//! export ends with status 0: the rule of every subcommand on a partial
//! trace ([`crate::partial`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::ValueEnum;
use hyscope_analyzer::aligned::{Clocks, Message, RankSides, match_sides_without};
use hyscope_analyzer::model::LeftOutPart;
use hyscope_format::{
    MpiRecord, NO_RANK, OmpKind, OmpRecord, PhaseRecord, SELF_COMM_ID, SampleRecord, ScanOptions,
    SymbolRecord, Table, Trace, mpi_call, mpi_call::is_send, variant_name,
};
use serde_json::{Value, json};

mod otf2;
mod run_notes;

use run_notes::RunNotes;

/// Above this many events, viewers get slow: say so and suggest a window.
const LARGE_EXPORT: usize = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing).
    Perfetto,
    /// OTF2 archive (Vampir, Scalasca, otf2-print): OUT is a directory holding OUT/traces.otf2.
    Otf2,
}

/// Convert a trace to Perfetto/Chrome JSON (or OTF2).
///
/// Examples:
///   hyscope export --format perfetto -o run.json hyscope-app-20261122-1012
///   hyscope export --format perfetto -o part.json --from 0.5s --to 0.8s trace
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum)]
    format: Format,
    /// Output file (perfetto) or directory (otf2).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// Only events ending at or after this time since the trace start (e.g. 0.5s, 200ms, 150us, 1000ns).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    from: Option<i64>,
    /// Only events starting at or before this time since the trace start.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    to: Option<i64>,
    /// The trace directory.
    trace: PathBuf,
}

/// The export reads and writes one rank at a time and frees it before the
/// next: glibc would give each rank's buffers (and OTF2's 1 MiB chunk per
/// location) back to the system and fault them in again for the next rank
/// (4.6 M page faults, 13 s of system time for 10^7 events of 1,024 ranks
/// to OTF2, against 0.5 M when the whole trace was held). Freed memory is
/// kept for reuse instead: the same export then takes 5,000 page faults and
/// 29 MB.
fn keep_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes the allocator's thresholds.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}

/// A duration with a unit (s, ms, us, ns; plain numbers are seconds) → ns.
fn parse_time(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        (s, 1e9)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a time (examples: 0.5s, 200ms, 150us, 1000ns)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}` must be a non-negative time"));
    }
    Ok((v * scale).round() as i64)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let (Some(f), Some(t)) = (args.from, args.to)
        && f > t
    {
        bail!("--from is after --to");
    }
    let trace = Trace::open(&args.trace)
        .with_context(|| format!("cannot open the trace {}", args.trace.display()))?;
    // A partial or damaged trace is said, never exported as if whole: its
    // notices one line each, its losses (rows lost, ranks left out for a
    // damaged part) in the one line of `crate::partial`.
    let (lost, notices): (Vec<_>, Vec<_>) = trace.problems().iter().partition(|p| p.data_lost);
    for p in notices {
        eprintln!("hyscope: {}: {}", p.path.display(), p.what);
    }
    keep_freed_memory();
    let data = TraceData::load(&trace, args.from, args.to)?;
    let losses: Vec<String> = lost
        .iter()
        .map(|p| format!("{}: {}", p.path.display(), p.what))
        .chain(data.run.left_out.iter().map(LeftOutPart::says))
        .collect();
    if let Some(line) = crate::partial::losses_line(&args.trace, &losses) {
        eprintln!("{line}; this export has the rest");
    }
    if args.format == Format::Otf2 {
        let stats = otf2::write(&data, &args.output)?;
        let archive = args.output.join("traces.otf2");
        eprintln!(
            "hyscope: wrote {} ({} locations, {} regions entered, {} sends, {} receives, {} collectives, {} metric values)",
            archive.display(),
            stats.locations,
            stats.enters,
            stats.sends,
            stats.recvs,
            stats.collectives,
            stats.metrics
        );
        for note in otf2::notes(&data, &stats) {
            eprintln!("hyscope: note: {note}");
        }
        eprintln!("hyscope: next: otf2-print {} | less", archive.display());
        return Ok(ExitCode::SUCCESS);
    }
    let stats = write_perfetto(&data, &args.output)?;
    if stats.events > LARGE_EXPORT {
        eprintln!(
            "hyscope: warning: {} events exported; Perfetto and Chrome become slow above ~1 M events: \
             use --from/--to to export a time window",
            stats.events
        );
    }
    eprintln!(
        "hyscope: wrote {} ({} events, {} flows, {} counter values, {} phases, {} ranks)",
        args.output.display(),
        stats.events,
        stats.flows,
        stats.counters,
        stats.phases,
        stats.ranks
    );
    for note in data.run.notes(PERFETTO_OUTSIDE) {
        eprintln!("hyscope: note: {note}");
    }
    eprintln!(
        "hyscope: next: open https://ui.perfetto.dev and drop {} on it",
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// What the export keeps of a trace while it writes it, times on global
/// time: the samples, phases, symbols and matched messages of every rank.
/// The OpenMP and MPI rows, the bulk of a trace, are read one rank at a time
/// ([`TraceData::rank_rows`]) as the rank is written, so the export's memory
/// does not grow with the trace's events.
struct TraceData<'t> {
    trace: &'t Trace,
    clocks: Clocks,
    /// The window: events ending at or after `from` and starting at or
    /// before `to` (rank 0's clock), and the scan options that prune row
    /// groups outside it.
    from: Option<i64>,
    to: Option<i64>,
    scan: ScanOptions,
    /// Time 0 of the export, ns on rank 0's clock.
    base_ns: i64,
    /// The manifest's wall-clock start and the clock reading taken with it.
    start_unix_ns: i64,
    start_clock_ns: i64,
    ranks: Vec<RankMeta>,
    samples: Vec<(u32, SampleRecord)>,
    /// Named phases, sorted by rank, thread, start and depth.
    phases: Vec<(u32, PhaseRecord)>,
    symbols: HashMap<(u32, u64), SymbolRecord>,
    /// The communicators besides world and self, with their members.
    communicators: Vec<hyscope_format::Communicator>,
    /// Whether a row of the window is on `MPI_COMM_SELF`.
    self_used: bool,
    /// The matched messages whose both sides are in the export.
    messages: Vec<Message>,
    /// The run's window and what the export keeps outside it or longer than
    /// the analysis counts it.
    run: RunNotes,
}

/// One rank's rows in the export's window, on global time.
struct RankRows {
    rank: u32,
    omp: Vec<OmpRecord>,
    /// In the aligned layer's row order.
    mpi: Vec<MpiRecord>,
}

struct RankMeta {
    rank: u32,
    host: String,
    /// Left out for a damaged part (the first of its files): none of its
    /// rows are read, its process or rank is named so and stays empty.
    left_out: Option<LeftOutPart>,
}

impl RankMeta {
    /// What the export adds to the name of the rank's process (Perfetto)
    /// or rank (OTF2) when it is left out, saying why it is empty: `: rank 0
    /// left out: omp/rank=0/part-0.parquet cannot be read (…)`.
    fn left_out_note(&self) -> String {
        self.left_out
            .as_ref()
            .map_or(String::new(), |p| format!(": {}", p.says()))
    }
}

impl<'t> TraceData<'t> {
    /// Every rank's MPI rows and the times of its OpenMP rows are read here
    /// (for the export's time 0, the message sides and the communicators
    /// used), and its rows once more as it is written: one rank's rows in
    /// memory at a time.
    fn load(trace: &'t Trace, from: Option<i64>, to: Option<i64>) -> anyhow::Result<TraceData<'t>> {
        let m = &trace.manifest;
        let clocks = Clocks::from_manifest(m);
        // Each rank's exit on rank 0's clock: the analysis ends its rows there.
        let exits = m
            .ranks
            .iter()
            .filter_map(|r| Some((r.rank, clocks.to_global(r.rank, r.exit_ns?).ns())))
            .collect();
        let mut run = RunNotes::analyse(&trace.dir, exits);
        let ranks: Vec<RankMeta> = trace
            .ranks()
            .into_iter()
            .map(|r| RankMeta {
                rank: r,
                host: m
                    .ranks
                    .iter()
                    .find(|i| i.rank == r)
                    .map(|i| i.host.clone())
                    .unwrap_or_default(),
                left_out: run.left_out.iter().find(|p| p.rank == r).cloned(),
            })
            .collect();
        let left_out: Vec<u32> = ranks
            .iter()
            .filter(|r| r.left_out.is_some())
            .map(|r| r.rank)
            .collect();
        // The samples and phases of the ranks kept only.
        let kept = (!left_out.is_empty()).then(|| {
            ranks
                .iter()
                .filter(|r| r.left_out.is_none())
                .map(|r| r.rank)
                .collect()
        });

        // The window is relative to the trace start on global time; the scan
        // filters on rank clocks, so it is widened by the largest offset (and
        // a millisecond for drift beyond the measurements) and cut exactly below.
        let start = m.start_clock_ns;
        let slack = 2 * clocks.max_abs_offset() + 1_000_000;
        let window = (from.is_some() || to.is_some()).then(|| {
            (
                from.map_or(i64::MIN, |f| start + f - slack),
                to.map_or(i64::MAX, |t| start + t + slack),
            )
        });
        let scan = ScanOptions {
            time_range: window,
            ranks: kept,
            ..ScanOptions::default()
        };
        let mut data = TraceData {
            trace,
            clocks,
            from: from.map(|f| start + f),
            to: to.map(|t| start + t),
            scan,
            base_ns: 0,
            start_unix_ns: m.start_unix_ns,
            start_clock_ns: m.start_clock_ns,
            ranks,
            samples: Vec::new(),
            phases: Vec::new(),
            symbols: HashMap::new(),
            communicators: hyscope_format::communicators(&m.ranks),
            self_used: false,
            messages: Vec::new(),
            run: RunNotes::default(),
        };
        // Messages are matched over the whole trace (as the report does),
        // from each rank's sides, then those with both sides in the window
        // are kept.
        let mut sides = Vec::with_capacity(data.ranks.len());
        let mut first: Option<i64> = None;
        let read = data.ranks.iter().filter(|r| r.left_out.is_none());
        for rank in read.map(|r| r.rank) {
            let mut mpi = data.mpi_rows(rank)?;
            sides.push(RankSides::of(rank, &mpi));
            mpi.retain(|r| data.in_window(r.start_ns, r.end_ns));
            data.self_used |= mpi.iter().any(|r| r.comm_id == SELF_COMM_ID);
            for r in &mpi {
                run.tally_row(rank, r.start_ns, r.end_ns);
            }
            first = first
                .into_iter()
                .chain(mpi.iter().map(|r| r.start_ns))
                .min();
            // Of the OpenMP rows, only their times are read here.
            let opts = ScanOptions {
                ranks: Some(vec![rank]),
                ..data.scan.clone()
            };
            trace.for_each_time(Table::Omp, &opts, |_, s, e| {
                let (s, e) = (data.global(rank, s), data.global(rank, e));
                if data.in_window(s, e) {
                    first = Some(first.map_or(s, |f| f.min(s)));
                    run.tally_row(rank, s, e);
                }
            })?;
        }
        // A message whose other side is on a rank left out is counted
        // apart, as the analysis counts it: no flow, no message event.
        let (messages, _) = match_sides_without(sides, &left_out);
        run.partner_left_out(
            messages.partner_left_out_sends,
            messages.partner_left_out_recvs,
        );
        data.messages = messages
            .messages
            .into_iter()
            .filter(|x| {
                data.in_window(x.send.time.ns(), x.send.time.ns())
                    && data.in_window(x.recv.time.ns(), x.recv.time.ns())
            })
            .collect();
        let mut samples: Vec<(u32, SampleRecord)> = trace.read_records(&data.scan)?;
        for (r, rec) in &mut samples {
            rec.time_ns = data.global(*r, rec.time_ns);
        }
        samples.retain(|(_, r)| data.in_window(r.time_ns, r.time_ns));
        // A damaged phases part leaves its rank's phases out, said in the
        // notes, as every other view does (`damaged_parts`).
        let (mut phases, damaged) =
            hyscope_analyzer::damaged_parts::read_phase_rows(trace, &data.scan);
        for d in &damaged {
            run.unread_phases(d, &trace.dir);
        }
        for (r, rec) in &mut phases {
            rec.start_ns = data.global(*r, rec.start_ns);
            rec.end_ns = data.global(*r, rec.end_ns);
        }
        phases.retain(|(_, r)| data.in_window(r.start_ns, r.end_ns));
        phases.sort_by_key(|(r, p)| (*r, p.thread, p.start_ns, p.depth));
        for (_, p) in &phases {
            run.tally_phase(p.start_ns, p.end_ns);
        }
        for (_, r) in &samples {
            run.tally_sample(r.time_ns);
        }
        data.symbols = trace
            .read_records::<SymbolRecord>(&ScanOptions::default())?
            .into_iter()
            .map(|(r, s)| ((r, s.address), s))
            .collect();

        // Time 0: the trace start, or the first event if one came earlier
        // (another rank's library may start before rank 0's).
        let first = first
            .into_iter()
            .chain(samples.iter().map(|(_, r)| r.time_ns))
            .chain(phases.iter().map(|(_, r)| r.start_ns))
            .min();
        data.base_ns = match (start, first) {
            (s, Some(f)) if s > 0 => s.min(f),
            (_, Some(f)) => f,
            (s, None) => s,
        };
        data.samples = samples;
        data.phases = phases;
        data.run = run;
        Ok(data)
    }

    fn global(&self, rank: u32, t: i64) -> i64 {
        self.clocks.to_global(rank, t).ns()
    }

    fn in_window(&self, s: i64, e: i64) -> bool {
        self.from.is_none_or(|f| e >= f) && self.to.is_none_or(|t| s <= t)
    }

    /// Rank `rank`'s MPI rows, all of them, on global time in the aligned
    /// layer's order.
    fn mpi_rows(&self, rank: u32) -> anyhow::Result<Vec<MpiRecord>> {
        Ok(hyscope_analyzer::aligned::rank_rows(
            self.trace,
            &self.clocks,
            rank,
        )?)
    }

    /// Rank `rank`'s OpenMP and MPI rows in the window (none of a rank
    /// left out).
    fn rank_rows(&self, rank: u32) -> anyhow::Result<RankRows> {
        if self.is_left_out(rank) {
            return Ok(RankRows {
                rank,
                omp: Vec::new(),
                mpi: Vec::new(),
            });
        }
        let mpi = self.mpi_rows(rank)?;
        self.rank_rows_from(rank, mpi)
    }

    /// Whether `rank` is left out for a damaged part.
    fn is_left_out(&self, rank: u32) -> bool {
        self.ranks
            .iter()
            .any(|r| r.rank == rank && r.left_out.is_some())
    }

    /// [`Self::rank_rows`] with the rank's MPI rows read already.
    fn rank_rows_from(&self, rank: u32, mut mpi: Vec<MpiRecord>) -> anyhow::Result<RankRows> {
        mpi.retain(|r| self.in_window(r.start_ns, r.end_ns));
        let opts = ScanOptions {
            ranks: Some(vec![rank]),
            ..self.scan.clone()
        };
        let mut omp: Vec<OmpRecord> = self
            .trace
            .read_records(&opts)?
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        for rec in &mut omp {
            rec.start_ns = self.global(rank, rec.start_ns);
            rec.end_ns = self.global(rank, rec.end_ns);
        }
        omp.retain(|r| self.in_window(r.start_ns, r.end_ns));
        Ok(RankRows { rank, omp, mpi })
    }
}

#[derive(Debug, Default)]
struct Stats {
    /// Complete and instant events (one per row of `omp` and `mpi`).
    events: usize,
    flows: usize,
    counters: usize,
    /// Phase slices (not in `events`).
    phases: usize,
    ranks: usize,
}

fn pid(rank: u32) -> u64 {
    u64::from(rank) + 1
}

fn tid(thread: u32) -> u64 {
    u64::from(thread) + 1
}

/// The `tid` of track `lane` of a thread's phases: above every thread's
/// `tid` (threads are numbered below 2^16, as the OTF2 locations assume) and
/// below 2^31 (Perfetto reads a `tid` as a 32-bit integer). Tracks past
/// the 256th share the last one.
fn phase_tid(thread: u32, lane: usize) -> u64 {
    (1 << 24) + (u64::from(thread & 0xffff) << 8) + lane.min(255) as u64
}

/// The track of each phase of one thread (`phases` sorted by start, then
/// depth): 0 for phases that nest in the ones open on track 0, else the
/// first further track where they nest.
fn phase_lanes(phases: &[&PhaseRecord]) -> Vec<usize> {
    // Per track, the ends of the phases open on it, innermost last.
    let mut open: Vec<Vec<i64>> = Vec::new();
    phases
        .iter()
        .map(|p| {
            let lane = (0..)
                .find(|&l| {
                    if open.len() <= l {
                        open.push(Vec::new());
                    }
                    let ends = &mut open[l];
                    while ends.last().is_some_and(|&e| e <= p.start_ns) {
                        ends.pop();
                    }
                    ends.last().is_none_or(|&e| p.end_ns <= e)
                })
                .expect("an empty track always fits");
            open[lane].push(p.end_ns);
            lane
        })
        .collect()
}

/// A duration of `d` ns as microseconds, exact to the nanosecond in decimal
/// (1234567 → `1234.567`, never `1234.5670000001`).
fn write_us(w: &mut impl Write, d: i64) -> std::io::Result<()> {
    if d < 0 {
        w.write_all(b"-")?;
    }
    let a = d.unsigned_abs();
    write!(w, "{}.{:03}", a / 1000, a % 1000)
}

/// `s` as a JSON string literal.
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The `args` object of an event, built as text (events are written by hand:
/// a `serde_json::Value` per event was the export's main cost).
struct ArgsText(String);

impl ArgsText {
    fn new() -> ArgsText {
        ArgsText(String::from("{"))
    }

    fn sep(&mut self) {
        if self.0.len() > 1 {
            self.0.push(',');
        }
    }

    fn num(&mut self, key: &str, v: impl std::fmt::Display) {
        use std::fmt::Write as _;
        self.sep();
        let _ = write!(self.0, "\"{key}\":{v}");
    }

    /// `json` is already a JSON literal.
    fn raw(&mut self, key: &str, json: &str) {
        self.sep();
        self.0.push('"');
        self.0.push_str(key);
        self.0.push_str("\":");
        self.0.push_str(json);
    }

    fn finish(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// Writes the `traceEvents` array, one event per line.
struct EventsOut<W: Write> {
    w: W,
    first: bool,
}

impl<W: Write> EventsOut<W> {
    fn next(&mut self) -> std::io::Result<&mut W> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        Ok(&mut self.w)
    }

    fn value(&mut self, v: &Value) -> anyhow::Result<()> {
        let w = self.next()?;
        serde_json::to_writer(w, v)?;
        Ok(())
    }

    /// A complete event, or an instant when it has no duration.
    #[allow(clippy::too_many_arguments)]
    fn interval(
        &mut self,
        cat: &str,
        name_json: &str,
        pid: u64,
        tid: u64,
        base: i64,
        start: i64,
        end: i64,
        args: &str,
    ) -> std::io::Result<()> {
        let w = self.next()?;
        let ph = if end > start { "X" } else { "i\",\"s\":\"t" };
        write!(
            w,
            "{{\"ph\":\"{ph}\",\"cat\":\"{cat}\",\"name\":{name_json},\"pid\":{pid},\"tid\":{tid},\"ts\":"
        )?;
        write_us(w, start - base)?;
        if end > start {
            w.write_all(b",\"dur\":")?;
            write_us(w, end - start)?;
        }
        write!(w, ",\"args\":{args}}}")
    }
}

fn ts(base: i64, ns: i64) -> Value {
    let mut v = Vec::new();
    let _ = write_us(&mut v, ns - base);
    serde_json::from_slice(&v).unwrap_or(Value::Null)
}

/// The `pid` of the run's own track: above every rank's (`rank + 1`), below
/// 2^31 (Perfetto reads a `pid` as a 32-bit integer).
const RUN_PID: u64 = (1 << 31) - 1;

/// How the Perfetto export marks an event outside the run's window.
const PERFETTO_OUTSIDE: &str = "; each such event has the argument outside_run_window";

/// The top-level `metadata` object: the run's window on the events' time
/// axis (null when the analysis could not give it) and the notes.
fn perfetto_metadata(data: &TraceData) -> Value {
    let base = data.base_ns;
    let window = data.run.window.map(|w| {
        json!({
            "start_us": ts(base, w.start_ns),
            "end_us": ts(base, w.end_ns),
            "duration_ns": w.duration_ns(),
            "duration": crate::units::secs(w.duration_s()),
        })
    });
    json!({"hyscope": {"run_window": window, "notes": data.run.notes(PERFETTO_OUTSIDE)}})
}

/// The run's track: one slice over the run's window, its duration and the
/// notes as arguments, sorted above the ranks.
fn write_run_window<W: Write>(data: &TraceData, o: &mut EventsOut<W>) -> anyhow::Result<()> {
    let Some(w) = data.run.window else {
        return Ok(());
    };
    o.value(&json!({"ph": "M", "name": "process_name", "pid": RUN_PID, "args": {"name": "run (hyscope)"}}))?;
    o.value(&json!({"ph": "M", "name": "process_sort_index", "pid": RUN_PID, "args": {"sort_index": -1}}))?;
    o.value(&json!({"ph": "M", "name": "thread_name", "pid": RUN_PID, "tid": 1, "args": {"name": "run window"}}))?;
    o.value(
        &json!({"ph": "X", "cat": "run", "name": "run window", "pid": RUN_PID, "tid": 1,
                    "ts": ts(data.base_ns, w.start_ns), "dur": ts(0, w.duration_ns()),
                    "args": {"duration_ns": w.duration_ns(),
                             "duration": crate::units::secs(w.duration_s()),
                             "notes": data.run.notes(PERFETTO_OUTSIDE)}}),
    )
}

fn write_perfetto(data: &TraceData, out: &Path) -> anyhow::Result<Stats> {
    let file =
        std::fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"metadata\":")?;
    serde_json::to_writer(&mut w, &perfetto_metadata(data))?;
    w.write_all(b",\"traceEvents\":[\n")?;
    let mut o = EventsOut { w, first: true };
    let mut stats = Stats {
        ranks: data.ranks.iter().filter(|r| r.left_out.is_none()).count(),
        ..Stats::default()
    };
    let base = data.base_ns;

    // Names of processes.
    for rm in &data.ranks {
        let name = if rm.host.is_empty() {
            format!("rank {}{}", rm.rank, rm.left_out_note())
        } else {
            format!("rank {} ({}){}", rm.rank, rm.host, rm.left_out_note())
        };
        o.value(&json!({"ph": "M", "name": "process_name", "pid": pid(rm.rank), "args": {"name": name}}))?;
        o.value(&json!({"ph": "M", "name": "process_sort_index", "pid": pid(rm.rank), "args": {"sort_index": rm.rank}}))?;
    }
    write_run_window(data, &mut o)?;
    // Then each rank's threads and events, one rank's rows read at a time.
    for rm in &data.ranks {
        let rows = data.rank_rows(rm.rank)?;
        write_rank(data, &rows, &mut o, &mut stats)?;
    }
    write_phases(data, &mut o, &mut stats)?;
    for (i, m) in data.messages.iter().enumerate() {
        let (s, r) = (&m.send, &m.recv);
        let id = i + 1;
        let name = format!("message {} → {}", s.rank, r.rank);
        o.value(
            &json!({"ph": "s", "id": id, "name": name, "cat": "mpi.message",
                        "pid": pid(s.rank), "tid": tid(s.thread), "ts": ts(base, s.time.ns()),
                        "args": {"tag": m.tag, "comm_id": m.comm, "bytes": m.bytes}}),
        )?;
        o.value(
            &json!({"ph": "f", "bp": "e", "id": id, "name": name, "cat": "mpi.message",
                        "pid": pid(r.rank), "tid": tid(r.thread), "ts": ts(base, r.time.ns())}),
        )?;
        stats.flows += 1;
    }
    for (r, s) in &data.samples {
        let name = if s.key >= 0 {
            format!("{}[{}]", s.metric, s.key)
        } else {
            s.metric.clone()
        };
        o.value(
            &json!({"ph": "C", "name": name, "pid": pid(*r), "ts": ts(base, s.time_ns),
                        "args": {"value": s.value}}),
        )?;
        stats.counters += 1;
    }
    o.w.write_all(b"\n]}\n")?;
    o.w.flush()
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(stats)
}

/// One rank's threads (their names) and its OpenMP and MPI rows as events.
fn write_rank<W: Write>(
    data: &TraceData,
    rows: &RankRows,
    o: &mut EventsOut<W>,
    stats: &mut Stats,
) -> anyhow::Result<()> {
    let (rank, base) = (rows.rank, data.base_ns);
    let threads: std::collections::BTreeSet<u32> = rows
        .omp
        .iter()
        .map(|r| r.thread)
        .chain(rows.mpi.iter().map(|r| r.thread))
        .collect();
    for t in threads {
        o.value(
            &json!({"ph": "M", "name": "thread_name", "pid": pid(rank), "tid": tid(t),
                        "args": {"name": format!("thread {t}")}}),
        )?;
        o.value(
            &json!({"ph": "M", "name": "thread_sort_index", "pid": pid(rank), "tid": tid(t),
                        "args": {"sort_index": 2 * u64::from(t) + 1}}),
        )?;
    }
    // Names and source locations, once per (kind, variant, code address) of the rank.
    type LabelKey = (u8, u8, u64);
    let mut labels: HashMap<LabelKey, (String, Option<String>)> = HashMap::new();
    for rec in &rows.omp {
        let (name, source) = labels
            .entry((rec.kind, rec.variant, rec.codeptr))
            .or_insert_with(|| {
                let label = omp_label(data, rank, rec);
                let source = label.file.map(|file| {
                    let base_name = Path::new(file)
                        .file_name()
                        .map_or(file.to_string(), |n| n.to_string_lossy().into_owned());
                    json_str(&match label.line {
                        Some(l) => format!("{base_name}:{l}"),
                        None => base_name,
                    })
                });
                (json_str(&label.name), source)
            });
        let mut args = ArgsText::new();
        match source {
            Some(s) => args.raw("source", s),
            None if rec.codeptr != 0 => args.raw("codeptr", &format!("\"{:#x}\"", rec.codeptr)),
            None => {}
        }
        for (k, v) in [
            ("parallel_id", rec.parallel_id),
            ("task_id", rec.task_id),
            ("count", rec.count),
            ("chunk_start", rec.chunk_start),
            ("team_size", u64::from(rec.team_size)),
            ("requested_team_size", u64::from(rec.requested_team_size)),
            ("flags", u64::from(rec.flags)),
        ] {
            if v != 0 {
                args.num(k, v);
            }
        }
        if data.run.outside(rec.start_ns, rec.end_ns) {
            args.num("outside_run_window", true);
        }
        o.interval(
            "omp",
            name,
            pid(rank),
            tid(rec.thread),
            base,
            rec.start_ns,
            rec.end_ns,
            &args.finish(),
        )?;
        stats.events += 1;
    }
    for rec in &rows.mpi {
        let name = if rec.call == mpi_call::REQUEST_COMPLETE {
            "request complete"
        } else {
            mpi_call::name(rec.call)
        };
        let mut args = ArgsText::new();
        if rec.peer != NO_RANK {
            args.num("peer", rec.peer);
            args.num("tag", rec.tag);
        }
        if rec.root != NO_RANK {
            args.num("root", rec.root);
        }
        for (k, v) in [
            ("bytes_sent", rec.bytes_sent),
            ("bytes_recv", rec.bytes_recv),
            ("comm_id", rec.comm_id),
            ("request_id", rec.request_id),
        ] {
            if v != 0 {
                args.num(k, v);
            }
        }
        if rec.in_parallel {
            args.num("in_parallel", true);
        }
        // A run of folded unsuccessful polls (trace `mpi.calls`): one event.
        if rec.is_folded() {
            args.num("polls_folded", rec.calls);
        }
        if rec.callsite != 0 {
            match data.symbols.get(&(rank, rec.callsite)) {
                Some(sym) if sym.file.is_some() => {
                    let file = sym.file.as_deref().unwrap_or_default();
                    let base_name = Path::new(file)
                        .file_name()
                        .map_or(file.to_string(), |n| n.to_string_lossy().into_owned());
                    let source = match sym.line {
                        Some(l) => format!("{base_name}:{l}"),
                        None => base_name,
                    };
                    args.raw("source", &json_str(&source));
                }
                Some(sym) if sym.function.is_some() => {
                    args.raw("source", &json_str(&hyscope_analyzer::load::label_of(sym)));
                }
                _ => args.raw("callsite", &format!("\"{:#x}\"", rec.callsite)),
            }
        }
        if data.run.outside(rec.start_ns, rec.end_ns) {
            args.num("outside_run_window", true);
        }
        o.interval(
            "mpi",
            &json_str(name),
            pid(rank),
            tid(rec.thread),
            base,
            rec.start_ns,
            rec.end_ns,
            &args.finish(),
        )?;
        stats.events += 1;
    }
    Ok(())
}

/// The phase tracks: per thread, its tracks' names and the phases as
/// complete events (instants for marks), with the phase's depth, source
/// and time step as arguments.
fn write_phases<W: Write>(
    data: &TraceData,
    o: &mut EventsOut<W>,
    stats: &mut Stats,
) -> anyhow::Result<()> {
    let base = data.base_ns;
    let mut at = 0;
    while at < data.phases.len() {
        let (rank, thread) = (data.phases[at].0, data.phases[at].1.thread);
        let n = data.phases[at..]
            .iter()
            .take_while(|(r, p)| *r == rank && p.thread == thread)
            .count();
        let run: Vec<&PhaseRecord> = data.phases[at..at + n].iter().map(|(_, p)| p).collect();
        at += n;
        let lanes = phase_lanes(&run);
        for lane in 0..=lanes.iter().copied().max().unwrap_or(0) {
            let name = match lane {
                0 => format!("thread {thread} phases"),
                l => format!("thread {thread} phases ({})", l + 1),
            };
            let t = phase_tid(thread, lane);
            o.value(
                &json!({"ph": "M", "name": "thread_name", "pid": pid(rank), "tid": t,
                            "args": {"name": name}}),
            )?;
            // Just above the thread's own track (sort index 2 × thread + 1).
            o.value(
                &json!({"ph": "M", "name": "thread_sort_index", "pid": pid(rank), "tid": t,
                            "args": {"sort_index": 2 * u64::from(thread)}}),
            )?;
        }
        for (p, lane) in run.iter().zip(lanes) {
            let mut args = ArgsText::new();
            args.num("depth", p.depth);
            args.raw(
                "source",
                &json_str(hyscope_format::phase_source::name(p.source)),
            );
            if p.iteration != hyscope_format::NO_ITERATION {
                args.num("iteration", p.iteration);
            }
            if data.run.outside(p.start_ns, p.end_ns) {
                args.num("outside_run_window", true);
            }
            o.interval(
                "phase",
                &json_str(&p.name),
                pid(rank),
                phase_tid(thread, lane),
                base,
                p.start_ns,
                p.end_ns,
                &args.finish(),
            )?;
            stats.phases += 1;
        }
    }
    Ok(())
}

/// What an `omp` row is called: kind and variant, the function of its code
/// address when known (`code_label`); and its source location (file name,
/// line) if resolved.
pub(crate) struct OmpLabel<'a> {
    pub name: String,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
}

fn omp_label<'a>(data: &'a TraceData, rank: u32, rec: &OmpRecord) -> OmpLabel<'a> {
    let kind = OmpKind::from_u8(rec.kind);
    let kind_name = kind.map_or("unknown", OmpKind::name);
    let variant = kind.map_or("", |k| variant_name(k, rec.variant));
    let mut name = if variant.is_empty() || variant == "unknown" {
        kind_name.to_string()
    } else {
        format!("{kind_name} {variant}")
    };
    let sym = (rec.codeptr != 0)
        .then(|| data.symbols.get(&(rank, rec.codeptr)))
        .flatten();
    // The function; without a line, with its place in the module, so that
    // the constructs of one function built without `-g` keep apart.
    if let Some(code) = sym.and_then(hyscope_analyzer::load::code_label) {
        name = format!("{name} @ {code}");
    }
    OmpLabel {
        name,
        file: sym.and_then(|s| s.file.as_deref()),
        line: sym.and_then(|s| s.line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("0.5s"), Ok(500_000_000));
        assert_eq!(parse_time("200ms"), Ok(200_000_000));
        assert_eq!(parse_time("150us"), Ok(150_000));
        assert_eq!(parse_time("1000ns"), Ok(1000));
        assert_eq!(parse_time("2"), Ok(2_000_000_000));
        assert!(parse_time("soon").is_err());
        assert!(parse_time("-1s").is_err());
    }

    #[test]
    fn phases_that_cross_go_to_a_further_track() {
        let p = |start, end, depth| PhaseRecord::api(0, "p", start, end, depth);
        let rows = [
            p(0, 100, 0),   // solver
            p(10, 40, 1),   // step 1
            p(20, 70, 2),   // a start/end range begun in step 1, ended in step 2
            p(25, 30, 2),   // inside step 1
            p(40, 40, 2),   // a mark at step 1's end
            p(50, 90, 1),   // step 2
            p(60, 80, 2),   // inside step 2
            p(65, 68, 2),   // crosses nothing on track 1 either
            p(100, 120, 0), // after the solver
        ];
        let refs: Vec<&PhaseRecord> = rows.iter().collect();
        assert_eq!(phase_lanes(&refs), [0, 0, 1, 0, 0, 0, 0, 0, 0]);
        // Each track nests: no interval crosses an earlier one of its track.
        let lanes = phase_lanes(&refs);
        for (i, a) in rows.iter().enumerate() {
            for (j, b) in rows.iter().enumerate().skip(i + 1) {
                if lanes[i] == lanes[j] && b.start_ns < a.end_ns {
                    assert!(b.end_ns <= a.end_ns, "{i} and {j} cross");
                }
            }
        }
        assert_ne!(phase_tid(0, 1), phase_tid(0, 0));
        assert!(phase_tid(u32::MAX, usize::MAX) < 1 << 31);
        assert!(phase_tid(0, 0) > tid(u32::from(u16::MAX)));
    }

    #[test]
    fn timestamps_are_exact() {
        assert_eq!(ts(1000, 1_235_567).to_string(), "1234.567");
        assert_eq!(ts(0, 5).to_string(), "0.005");
        assert_eq!(ts(10, 5).to_string(), "-0.005");
    }
}
