//! Building the timeline index: read parts in parallel, flatten each row.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyscope_format::reader::PartScan;
use hyscope_format::records::Record;
use hyscope_format::schema::{MpiRecord, OmpRecord, Table};
use hyscope_format::{FormatError, PartFile, ScanOptions, Trace};
use rayon::prelude::*;

use super::{
    BLOCK, Block, LAYER_STATE, MAX_OFFSET, RowData, RowInfo, STATES, State, TimelineIndex,
    mpi_layer, omp_layer,
};

/// A compact interval: start, end (rank clock), priority layer.
type Iv = (i64, i64, u8);

pub(super) fn build(
    trace: &Trace,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<TimelineIndex, FormatError> {
    let total = trace.parts(Table::Omp).len() + trace.parts(Table::Mpi).len();
    let done = AtomicUsize::new(0);
    progress(0, total);
    let mut rows: Vec<(RowInfo, RowData)> = Vec::new();
    // One rank at a time bounds memory to one rank's compact intervals.
    for rank in trace.ranks() {
        let info = trace.manifest.ranks.iter().find(|r| r.rank == rank);
        let host = info.map(|i| i.host.clone()).unwrap_or_default();
        // rank_clock - offset = rank 0 clock (manifest ClockOffset).
        let shift_ns = info
            .and_then(|i| i.clock_offsets.first())
            .map_or(0, |o| -o.offset_ns);
        let parts: Vec<&PartFile> = trace
            .parts(Table::Omp)
            .iter()
            .chain(trace.parts(Table::Mpi))
            .filter(|p| p.rank == rank)
            .collect();
        let per_part: Vec<Result<BTreeMap<u32, Vec<Iv>>, FormatError>> = parts
            .par_iter()
            .map(|p| {
                let r = read_part(p);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                r
            })
            .collect();
        let mut threads: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
        for part in per_part {
            for (thread, mut ivs) in part? {
                threads.entry(thread).or_default().append(&mut ivs);
            }
        }
        let built: Vec<(u32, RowData)> = threads
            .into_par_iter()
            .map(|(thread, ivs)| (thread, flatten(ivs, shift_ns)))
            .collect();
        for (thread, data) in built {
            rows.push((
                RowInfo {
                    rank,
                    thread,
                    host: host.clone(),
                    shift_ns,
                },
                data,
            ));
        }
    }
    rows.sort_by(|a, b| (&a.0.host, a.0.rank, a.0.thread).cmp(&(&b.0.host, b.0.rank, b.0.thread)));
    let (rows, data) = rows.into_iter().unzip();
    Ok(TimelineIndex::from_parts(trace, rows, data))
}

/// Read one part into compact intervals per thread, batch by batch (memory
/// stays at one decoded batch plus the compact intervals).
fn read_part(part: &PartFile) -> Result<BTreeMap<u32, Vec<Iv>>, FormatError> {
    let mut out: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
    let scan = PartScan::open(part, &ScanOptions::default())?;
    let schema_error = |message: String| FormatError::Schema {
        path: part.path.clone(),
        table: part.table.to_string(),
        message,
    };
    for batch in scan {
        let batch = batch?;
        match part.table {
            Table::Omp => {
                for r in OmpRecord::from_batch(&batch).map_err(schema_error)? {
                    if let Some(layer) = omp_layer(&r)
                        && r.end_ns > r.start_ns
                    {
                        out.entry(r.thread)
                            .or_default()
                            .push((r.start_ns, r.end_ns, layer));
                    }
                }
            }
            Table::Mpi => {
                for r in MpiRecord::from_batch(&batch).map_err(schema_error)? {
                    if let Some(layer) = mpi_layer(&r)
                        && r.end_ns > r.start_ns
                    {
                        out.entry(r.thread)
                            .or_default()
                            .push((r.start_ns, r.end_ns, layer));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Sweep the begin/end points of a row's intervals: at every instant the state
/// is that of the highest open layer (serial when none is open).
pub(super) fn flatten(ivs: Vec<Iv>, shift_ns: i64) -> RowData {
    let mut events: Vec<(i64, i8)> = Vec::with_capacity(ivs.len() * 2);
    for (s, e, l) in ivs {
        if e > s {
            events.push((s, l as i8 + 1));
            events.push((e, -(l as i8 + 1)));
        }
    }
    events.sort_unstable_by_key(|e| e.0);
    let mut counts = [0i32; LAYER_STATE.len()];
    let mut mask: u16 = 0;
    let mut builder = RowBuilder::default();
    if events.is_empty() {
        return RowData::new(Vec::new(), Vec::new(), 0);
    }
    let mut i = 0;
    while i < events.len() {
        let t = events[i].0;
        while i < events.len() && events[i].0 == t {
            let (_, code) = events[i];
            let layer = (code.unsigned_abs() - 1) as usize;
            counts[layer] += code.signum() as i32;
            if counts[layer] > 0 {
                mask |= 1 << layer;
            } else {
                mask &= !(1 << layer);
            }
            i += 1;
        }
        if i == events.len() {
            builder.finish(t + shift_ns);
        } else {
            let state = if mask == 0 {
                State::Serial
            } else {
                LAYER_STATE[15 - mask.leading_zeros() as usize]
            };
            builder.push(t + shift_ns, state);
        }
    }
    builder.data
}

/// Appends segments, merging equal neighbours and cutting blocks.
#[derive(Default)]
struct RowBuilder {
    data: RowData,
    current: Option<(i64, State)>,
    running: [u64; STATES],
}

impl RowBuilder {
    fn push(&mut self, t: i64, state: State) {
        if let Some((start, s)) = self.current {
            if s == state {
                return;
            }
            self.running[s as usize] += (t - start) as u64;
        }
        let d = &mut self.data;
        let new_block = match d.blocks.last() {
            None => true,
            Some(b) => d.packed.len() - b.first as usize >= BLOCK || t - b.base > MAX_OFFSET,
        };
        if new_block {
            d.blocks.push(Block {
                base: t,
                first: d.packed.len() as u32,
                cum: self.running,
            });
        }
        let base = d.blocks.last().expect("pushed above").base;
        d.packed.push(((t - base) as u32) << 4 | state as u32);
        self.current = Some((t, state));
    }

    fn finish(&mut self, t: i64) {
        let d = std::mem::take(&mut self.data);
        let (mut blocks, mut packed) = (d.blocks, d.packed);
        packed.shrink_to_fit();
        blocks.shrink_to_fit();
        self.data = RowData::new(blocks, packed, t);
    }
}
