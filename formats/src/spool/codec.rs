//! The spool: compact raw records the collector appends to a file while the
//! application runs, encoded to Parquet only after the run.
//!
//! Encoding Parquet inside the measured process costs ~195 ns of CPU per event
//! on the writer thread; encoding a spool record costs ~9 ns, plus the `write`
//! of its ~8 bytes (`examples/spool_bench.rs`).
//!
//! # File layout (all integers little-endian)
//!
//! ```text
//! header  8 B magic "HYSPOOL\0", u16 version (7), u8 table (0 omp, 1 mpi), 5 B reserved (0)
//! frame   u32 row count, u32 payload length, payload
//! frame   ...
//! ```
//!
//! Each frame is one [`SpoolWriter::append`] call and decodes on its own: the
//! delta state resets to `Default` at the start of every frame. A frame whose
//! row count has [`TAIL_FLAG`] set is a tail frame: a whole block whose first
//! records an earlier frame holds (written by the collector's crash handler,
//! and by its writer for a block it spooled part of before). A process
//! killed mid-write leaves a cut last frame, which the reader reports with
//! [`SpoolReader::truncated`] after returning every complete frame.
//!
//! # Record encoding
//!
//! A record is coded against its *base*: the frame's previous record with the
//! same key (for OpenMP records the kind, written first as one byte, so a
//! barrier is coded against the thread's previous barrier; MPI records have
//! one key, the previous record), the default record for the first of a key.
//! After the key byte, if any: a `u16` bitmask of the fields that differ from
//! the base, then, for each set bit in bit order, the LEB128 varint of
//! `zigzag(value - base value)` (wrapping, fields widened to 64 bits), so any
//! value round-trips. `end_ns` is coded as the duration `end_ns - start_ns`
//! (against the previous duration): consecutive intervals of one thread have
//! similar durations, while their ends move as much as their starts. A `bool`
//! field's value is written as one byte 0/1 when it differs.
//!
//! The bit order (modules `omp` and `mpi` below) puts the fields that change
//! from record to record first and the rarely changing ones last, so that a
//! decoder skips the latter with one test. Chunks of one OpenMP loop on one
//! thread take ~8 bytes: the kind, the mask, the start (+~2 µs), the duration
//! change and `chunk_start` (+chunk size). Version 2 added the keys.
//!
//! A record may instead be a *twin*: its key byte and a mask of bit 15 alone
//! (no field has that bit), and nothing else, for a record equal in every
//! field but the kind to the frame's last record of its twin kind
//! ([`SpoolRecord::put_in`]). With libomp a barrier's `sync_region` and its
//! `sync_region_wait` begin and end at the same times, so the barrier's record
//! is the twin of its wait's: three bytes, and no field encoded on the
//! application's thread. Version 3 added twins.
//!
//! An implicit task may instead be a *join* record: its key byte, a mask of
//! bit 14 alone, and the varint of its start's change against its base, for
//! an implicit task equal to its base but for the start, and for the end,
//! parallel region and task, which are those of the frame's last `SyncWait`
//! record. An implicit task ends with its join barrier
//! (`ompt_tool::callbacks::enter`), coded just before it: five bytes for
//! regions microseconds apart. Version 4 added joins.
//!
//! A parallel region may instead be a *region* record: its key byte, a mask
//! of bit 13 alone, and the varints of its start's and end's changes against
//! the frame's last `ImplicitTask` record's start and end, for a region whose
//! id, code address and team size are that implicit task's and whose other
//! fields are its base's. The primary thread's implicit task ends just
//! before its region (`ompt_tool::callbacks`), and carries the region's code
//! address and team size: seven bytes for a region that begins and ends
//! within 8 µs of its task, where coded field by field it changes its start,
//! duration, id and, between regions of different sites, code address, and
//! costs the collector ≈ 75 fewer instructions (LULESH's serialized regions,
//! callgrind). Version 7 added region records.
//!
//! Version 5 added two MPI fields, the receive side of a `Sendrecv`
//! (`recv_peer`, `recv_tag`), as mask bits 13 and 14, after every field of
//! version 4: a version-4 record never sets them and decodes unchanged, its
//! receive side the default's (none). Version 6 added `calls` (the polls a
//! folded row stands for) as mask bit 15, coded against a default of 1: a
//! record of an older version never sets it and reads as one call. Readers
//! take versions 4 to 7.

use std::fs::File;
use std::io::{IoSlice, Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use crate::error::FormatError;
use crate::schema::{MpiRecord, OmpKind, OmpRecord, Table};

/// First bytes of every spool file.
pub const MAGIC: [u8; 8] = *b"HYSPOOL\0";
/// Version of the spool layout and record encoding this crate writes.
pub const VERSION: u16 = 7;
/// The oldest version this crate reads (module docs: 5 and 6 only added
/// fields a version-4 record never has, 7 a record form older versions never
/// write).
pub const OLDEST_READ_VERSION: u16 = 4;
/// Set in a frame's row count: a *tail frame*. The payload is a whole block
/// of records (decoded to its end, the count is not known to the writer) and
/// the count's other bits are how many of its first records to skip, because
/// an earlier frame already holds them. The collector writes these from a
/// signal handler, where it cannot decode what it writes (version 5), and
/// from its writer thread, where decoding would take CPU from the
/// application.
pub const TAIL_FLAG: u32 = 1 << 31;
/// Bytes of the file header.
pub const HEADER_LEN: usize = 16;
/// Bytes of a frame header (row count, payload length).
pub const FRAME_HEADER_LEN: usize = 8;

/// A record type that can be spooled.
pub trait SpoolRecord: Copy + Default + Send + 'static {
    /// The table the records belong to; stored in the file header so a spool is
    /// never decoded as the wrong type.
    const TABLE: Table;

    /// How many delta bases a frame keeps: a record is encoded relative to
    /// the frame's last record with the same [`SpoolRecord::key`] (`Default`
    /// for the first of its key), so records of one kind interleaved with
    /// others still find a similar base. 1 = the previous record.
    const KEYS: usize = 1;

    /// This record's base, `< KEYS`.
    #[inline(always)]
    fn key(&self) -> usize {
        0
    }

    /// The key of the record at the start of `input`, before decoding it
    /// (records of types with several keys start with it); `None` if short.
    #[inline(always)]
    fn peek_key(_input: &[u8]) -> Option<usize> {
        Some(0)
    }

    /// Encode `cur` relative to `prev` (the frame's last record with the same
    /// key, `Default` for the first) into a [`RECORD_ROOM`]-byte slot and
    /// return the bytes used, at least one. The collector encodes in place
    /// into its per-thread blocks; bytes past the record may be overwritten.
    fn put(prev: &Self, cur: &Self, room: &mut [u8; RECORD_ROOM]) -> usize;

    /// Decode one record relative to `prev`, advancing `input`; `None` if the
    /// input is malformed or too short.
    fn decode(prev: &Self, input: &mut &[u8]) -> Option<Self>;

    /// Encode `cur` against the frame's `bases` (the last record of each key,
    /// `KEYS` of them) into a slot, as the collector and
    /// [`SpoolRecord::encode_rows`] do; the caller then makes `cur` the base
    /// of its key. By default [`SpoolRecord::put`] against its key's base;
    /// OpenMP records may be twins (module documentation).
    #[inline(always)]
    fn put_in(bases: &[Self], cur: &Self, room: &mut [u8; RECORD_ROOM]) -> usize {
        Self::put(&bases[cur.key()], cur, room)
    }

    /// Decode the record at the start of `input` against the frame's `bases`
    /// (the inverse of [`SpoolRecord::put_in`]); `None` if malformed or short.
    #[inline(always)]
    fn decode_in(bases: &[Self], input: &mut &[u8]) -> Option<Self> {
        let base = bases.get(Self::peek_key(input)?)?;
        Self::decode(base, input)
    }

    /// Append `cur` encoded relative to `prev` ([`SpoolRecord::put`] into a
    /// `Vec`).
    #[inline]
    fn encode(prev: &Self, cur: &Self, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + RECORD_ROOM, 0);
        let room = (&mut out[at..]).try_into().expect("room reserved");
        let len = Self::put(prev, cur, room);
        out.truncate(at + len);
    }

    /// Encode `rows` as one frame's payload into `buf` from offset `at`
    /// (`buf[..at]` is kept); returns where the payload ends. `buf` may be
    /// grown and holds anything after that end: [`SpoolWriter`] keeps it
    /// between frames, so records are written in place, with no per-record
    /// length bookkeeping or zeroing (1.7x faster than
    /// [`SpoolRecord::encode`] row by row). `buf` is grown (zeroed) only when
    /// the frame needs more room than any before.
    fn encode_rows(rows: &[Self], buf: &mut Vec<u8>, at: usize) -> usize {
        let need = at + rows.len() * RECORD_ROOM;
        if buf.len() < need {
            buf.resize(need, 0);
        }
        let mut bases = vec![Self::default(); Self::KEYS];
        let mut pos = at;
        for row in rows {
            let room = (&mut buf[pos..pos + RECORD_ROOM])
                .try_into()
                .expect("room reserved");
            pos += Self::put_in(&bases, row, room);
            bases[row.key()] = *row;
        }
        pos
    }
}

/// The file header of a spool of `table`.
pub fn file_header(table: Table) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..10].copy_from_slice(&VERSION.to_le_bytes());
    header[10] = table_code(table);
    header
}

/// The frame header of a tail frame ([`TAIL_FLAG`]) of `len` payload bytes
/// whose first `skip` records are to be dropped; None when `skip` does not fit.
pub fn tail_frame_header(skip: u32, len: u32) -> Option<[u8; FRAME_HEADER_LEN]> {
    if skip & TAIL_FLAG != 0 {
        return None;
    }
    let mut h = [0u8; FRAME_HEADER_LEN];
    h[..4].copy_from_slice(&(skip | TAIL_FLAG).to_le_bytes());
    h[4..].copy_from_slice(&len.to_le_bytes());
    Some(h)
}

/// The header's table code.
fn table_code(table: Table) -> u8 {
    match table {
        Table::Omp => 0,
        Table::Mpi => 1,
        Table::Samples => 2,
        Table::Symbols => 3,
        Table::Phases => 4,
    }
}

#[inline(always)]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Longest varint (a u64 needs 10 groups of 7 bits).
const MAX_VARINT: usize = 10;
/// Fields of the longest record (MPI's 16; OpenMP's has 13).
const FIELDS: usize = 16;
/// Room for one record: the mask and every field at its longest (+1: a
/// three-byte varint is written as one four-byte store).
pub const RECORD_ROOM: usize = 1 + 2 + FIELDS * MAX_VARINT + 1;

/// `cur - prev` (wrapping) zigzagged: small for close values of either sign.
#[inline(always)]
fn delta(prev: u64, cur: u64) -> u64 {
    zigzag(cur.wrapping_sub(prev) as i64)
}

/// The inverse of [`delta`]: `prev` plus the zigzagged difference `z`.
#[inline(always)]
fn undelta(prev: u64, z: u64) -> u64 {
    prev.wrapping_add(unzigzag(z) as u64)
}

/// Sign-extends a signed field to the 64-bit value its delta is taken on.
#[inline(always)]
fn wide(v: i64) -> u64 {
    v as u64
}

/// Duration coded in place of `end_ns` (wrapping, so any pair round-trips).
#[inline(always)]
fn duration(start_ns: i64, end_ns: i64) -> u64 {
    wide(end_ns.wrapping_sub(start_ns))
}

/// The plain LEB128 loop, for values of four bytes or more (rare: absolute
/// values at the start of a frame, big jumps).
#[inline]
fn put_varint(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        out[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

/// Reads a LEB128 varint byte by byte; `None` if cut or longer than a u64
/// (overflowing tenth byte, or more than ten bytes).
#[inline]
fn get_varint(input: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, &b) in input.iter().enumerate().take(MAX_VARINT) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            if i == MAX_VARINT - 1 && b > 1 {
                return None;
            }
            *input = &input[i + 1..];
            return Some(v);
        }
    }
    None
}

/// Reads a varint: one to three bytes with a branch each (predicted, so the
/// next read does not wait for this one's length: branch-free length
/// decoding is 1.5x slower), longer ones byte by byte.
#[inline(always)]
fn get_varint_fast(input: &mut &[u8]) -> Option<u64> {
    if let Some(&[b0, b1, b2]) = input.first_chunk::<3>() {
        let (v, len) = if b0 < 0x80 {
            (u64::from(b0), 1)
        } else if b1 < 0x80 {
            (u64::from(b0 & 0x7f) | u64::from(b1) << 7, 2)
        } else if b2 < 0x80 {
            let v = u64::from(b0 & 0x7f) | u64::from(b1 & 0x7f) << 7 | u64::from(b2) << 14;
            (v, 3)
        } else {
            return get_varint(input);
        };
        *input = &input[len..];
        return Some(v);
    }
    get_varint(input)
}

/// Writes one record into a [`RECORD_ROOM`]-byte slot: the fields are put in
/// order (field `k` is bit `k` of the mask), each only if it changed, then
/// [`Put::end`] writes the mask and gives the record's length.
///
/// Writing in place into a slice makes each varint one store, with no capacity
/// check per byte. (Assembling the record in a stack buffer and copying it out
/// is 2x slower: the copy's loads stall on the overlapping stores.)
struct Put<'a> {
    room: &'a mut [u8; RECORD_ROOM],
    pos: usize,
    /// Where the mask goes (after a key byte, if any).
    mask_at: usize,
    /// The mask's 16 bits, kept in a u32 (no zero-extension per field).
    mask: u32,
}

impl<'a> Put<'a> {
    #[inline(always)]
    fn begin(room: &'a mut [u8; RECORD_ROOM]) -> Self {
        Put {
            room,
            pos: 2,
            mask_at: 0,
            mask: 0,
        }
    }

    /// After a one-byte key.
    #[inline(always)]
    fn begin_keyed(room: &'a mut [u8; RECORD_ROOM], key: u8) -> Self {
        room[0] = key;
        Put {
            room,
            pos: 3,
            mask_at: 1,
            mask: 0,
        }
    }

    #[inline(always)]
    fn end(self) -> usize {
        let at = self.mask_at;
        self.room[at..at + 2].copy_from_slice(&(self.mask as u16).to_le_bytes());
        self.pos
    }

    /// A field widened to 64 bits (signed ones sign-extended): its change.
    ///
    /// # Safety
    /// As for [`Put::put`].
    #[inline(always)]
    unsafe fn field(&mut self, k: u32, prev: u64, cur: u64) {
        if prev != cur {
            // SAFETY: guaranteed by the caller.
            unsafe { self.put(k, delta(prev, cur)) };
        }
    }

    /// A field written as its value when it changes (the bool).
    ///
    /// # Safety
    /// As for [`Put::put`].
    #[inline(always)]
    unsafe fn raw(&mut self, k: u32, prev: u64, cur: u64) {
        if prev != cur {
            // SAFETY: guaranteed by the caller.
            unsafe { self.put(k, cur) };
        }
    }

    /// Put field `k`'s varint `v`.
    ///
    /// # Safety
    /// The record's fields are put in bit order, each at most once, and `k <
    /// FIELDS`: then each of the at most FIELDS varints takes at most
    /// MAX_VARINT bytes after the key and mask, a varint starts at most at
    /// 3 + (FIELDS - 1) * MAX_VARINT, and the stores below, which are not
    /// bounds-checked, stay inside the room. (A clamp of the position, one
    /// `cmov`, or a bounds check per field cost 3–4 instructions of every
    /// changed field, ≈ 15 of a fully coded record: `benchmarks/ompt.md`.)
    #[inline(always)]
    unsafe fn put(&mut self, k: u32, v: u64) {
        debug_assert!(self.mask >> k == 0, "fields are put in bit order");
        debug_assert!(k < FIELDS as u32);
        self.mask |= 1 << k;
        let pos = self.pos;
        debug_assert!(pos + MAX_VARINT <= RECORD_ROOM);
        let at = self.room.as_mut_ptr();
        if v < 1 << 7 {
            // SAFETY: pos + MAX_VARINT <= RECORD_ROOM (the caller's contract).
            unsafe { at.add(pos).write(v as u8) };
            self.pos = pos + 1;
        } else if v < 1 << 14 {
            let bytes = (v & 0x7f) | 0x80 | ((v << 1) & 0x7f00);
            // SAFETY: as above.
            unsafe {
                at.add(pos)
                    .cast::<[u8; 2]>()
                    .write((bytes as u16).to_le_bytes())
            };
            self.pos = pos + 2;
        } else if v < 1 << 21 {
            let bytes = (v & 0x7f) | 0x8080 | ((v << 1) & 0x7f00) | ((v << 2) & 0x7f_0000);
            // SAFETY: as above.
            unsafe {
                at.add(pos)
                    .cast::<[u8; 4]>()
                    .write((bytes as u32).to_le_bytes())
            };
            self.pos = pos + 3;
        } else {
            self.pos = pos + put_varint(&mut self.room[pos..], v);
        }
    }
}

/// Decode one record against its base among `bases` and make it that base.
#[inline(always)]
fn decode_next<R: SpoolRecord>(bases: &mut [R], input: &mut &[u8]) -> Option<R> {
    let row = R::decode_in(bases, input)?;
    *bases.get_mut(row.key())? = row;
    Some(row)
}

/// Reads one record: the mask, then each field in the encoder's order.
struct Get<'b> {
    input: &'b [u8],
    mask: u16,
}

impl<'b> Get<'b> {
    /// `None` if the input is short.
    #[inline(always)]
    fn begin(input: &'b [u8]) -> Option<Self> {
        let (m, rest) = input.split_first_chunk::<2>()?;
        let mask = u16::from_le_bytes(*m);
        Some(Get { input: rest, mask })
    }

    /// Whether any field from `k` on changed: one test skips the rarely
    /// changing fields, which come last. `None` if the mask names fields
    /// beyond the record's `fields` (checked here, off the common path).
    #[inline(always)]
    fn any_from(&self, k: u32, fields: u32) -> Option<bool> {
        let mask = u32::from(self.mask);
        if mask >> k == 0 {
            return Some(false);
        }
        (mask >> fields == 0).then_some(true)
    }

    /// Field `k` widened to 64 bits: `prev`, or `prev` plus the change read.
    #[inline(always)]
    fn field(&mut self, k: u32, prev: u64) -> Option<u64> {
        if self.mask & (1 << k) == 0 {
            return Some(prev);
        }
        Some(undelta(prev, get_varint_fast(&mut self.input)?))
    }

    /// A narrow unsigned field: a value out of its range is malformed.
    #[inline(always)]
    fn narrow<T: Into<u64> + TryFrom<u64>>(&mut self, k: u32, prev: T) -> Option<T> {
        T::try_from(self.field(k, prev.into())?).ok()
    }

    /// An `i32` field (sign-extended): a value out of its range is malformed.
    #[inline(always)]
    fn i32(&mut self, k: u32, prev: i32) -> Option<i32> {
        i32::try_from(self.field(k, wide(prev.into()))? as i64).ok()
    }

    /// A field written as its value (the bool): 0 or 1.
    #[inline(always)]
    fn bool(&mut self, k: u32, prev: bool) -> Option<bool> {
        if self.mask & (1 << k) == 0 {
            return Some(prev);
        }
        let (&b, rest) = self.input.split_first()?;
        self.input = rest;
        match b {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

/// Field order of [`OmpRecord`]: bit `k` of the mask is field `k`, and the
/// varints follow in that order. The fields that change from one chunk of a
/// loop to the next come first; the others, which change only between
/// constructs, after [`omp::RARE`]: a decoder skips them all with one test.
mod omp {
    pub const START: u32 = 0;
    /// `end_ns - start_ns`, in place of `end_ns`.
    pub const DURATION: u32 = 1;
    pub const CHUNK_START: u32 = 2;
    pub const COUNT: u32 = 3;
    pub const THREAD: u32 = 4;
    pub const KIND: u32 = 5;
    pub const VARIANT: u32 = 6;
    pub const PARALLEL_ID: u32 = 7;
    pub const TASK_ID: u32 = 8;
    pub const CODEPTR: u32 = 9;
    pub const TEAM_SIZE: u32 = 10;
    pub const REQUESTED_TEAM_SIZE: u32 = 11;
    pub const FLAGS: u32 = 12;
    /// The first of the rarely changing fields.
    pub const RARE: u32 = THREAD;
    /// Number of fields.
    pub const FIELDS: u32 = 13;
}

#[inline(always)]
fn put_omp(p: &OmpRecord, c: &OmpRecord, room: &mut [u8; RECORD_ROOM]) -> usize {
    use omp::*;
    // The small fields that change only between constructs (thread, kind,
    // variant, team sizes, flags) are mostly all equal to the base's: one
    // test for the six, and a record where one differs is coded out of line,
    // which keeps the registers of the common path free.
    if !small_fields_same(p, c) {
        return put_omp_all(p, c, room);
    }
    let mut e = Put::begin_keyed(room, c.kind);
    // SAFETY: each field once, in bit order (the small fields are equal).
    unsafe {
        e.field(START, wide(p.start_ns), wide(c.start_ns));
        e.field(
            DURATION,
            duration(p.start_ns, p.end_ns),
            duration(c.start_ns, c.end_ns),
        );
        e.field(CHUNK_START, p.chunk_start, c.chunk_start);
        e.field(COUNT, p.count, c.count);
        e.field(PARALLEL_ID, p.parallel_id, c.parallel_id);
        e.field(TASK_ID, p.task_id, c.task_id);
        e.field(CODEPTR, p.codeptr, c.codeptr);
    }
    e.end()
}

/// [`put_omp`] of every field.
#[cold]
#[inline(never)]
fn put_omp_all(p: &OmpRecord, c: &OmpRecord, room: &mut [u8; RECORD_ROOM]) -> usize {
    use omp::*;
    let mut e = Put::begin_keyed(room, c.kind);
    // SAFETY: each field once, in bit order.
    unsafe {
        e.field(START, wide(p.start_ns), wide(c.start_ns));
        e.field(
            DURATION,
            duration(p.start_ns, p.end_ns),
            duration(c.start_ns, c.end_ns),
        );
        e.field(CHUNK_START, p.chunk_start, c.chunk_start);
        e.field(COUNT, p.count, c.count);
        e.field(THREAD, p.thread.into(), c.thread.into());
        e.field(KIND, p.kind.into(), c.kind.into());
        e.field(VARIANT, p.variant.into(), c.variant.into());
        e.field(PARALLEL_ID, p.parallel_id, c.parallel_id);
        e.field(TASK_ID, p.task_id, c.task_id);
        e.field(CODEPTR, p.codeptr, c.codeptr);
        e.field(TEAM_SIZE, p.team_size.into(), c.team_size.into());
        e.field(
            REQUESTED_TEAM_SIZE,
            p.requested_team_size.into(),
            c.requested_team_size.into(),
        );
        e.field(FLAGS, p.flags.into(), c.flags.into());
    }
    e.end()
}

/// Delta bases of an OpenMP frame: one per kind (kinds above the last share it).
const OMP_KEYS: usize = 32;

#[inline(always)]
fn omp_key(kind: u8) -> usize {
    (kind as usize).min(OMP_KEYS - 1)
}

/// The bases a short form of kind `of` is decoded from (its own kind's and
/// the kind `from` it takes fields of), `None` when the record's `kind` is
/// not `of` (a malformed record).
#[inline(always)]
fn short_form(
    bases: &[OmpRecord],
    kind: u8,
    of: OmpKind,
    from: OmpKind,
) -> Option<(&OmpRecord, &OmpRecord)> {
    if kind != of as u8 {
        return None;
    }
    Some((bases.get(omp_key(kind))?, bases.get(omp_key(from as u8))?))
}

/// The mask of a twin record (module docs): a bit no field uses.
const TWIN: u16 = 1 << 15;

/// The mask of a join record (module docs): another bit no field uses.
const JOIN: u16 = 1 << 14;

/// The mask of a region record (module docs): a bit no OpenMP field uses
/// (they use bits 0 to 12).
const REGION: u16 = 1 << 13;

/// Whether two records are equal, field by field: what the derived `==`
/// does, but always inlined, so that the short forms' checks below, which
/// compare a record built from the bases with `cur`, compile to the compares
/// of the fields the bases give and nothing else (an outlined `==` on a
/// record built on the stack cost ≈ 40 instructions more per record).
#[inline(always)]
fn same(a: &OmpRecord, b: &OmpRecord) -> bool {
    // Every field named (no `..`): a field added to the record is a compile
    // error here until it is compared.
    let OmpRecord {
        start_ns,
        end_ns,
        parallel_id,
        task_id,
        codeptr,
        count,
        chunk_start,
        thread: _,
        team_size: _,
        requested_team_size: _,
        flags: _,
        kind: _,
        variant: _,
    } = *a;
    start_ns == b.start_ns
        && end_ns == b.end_ns
        && parallel_id == b.parallel_id
        && task_id == b.task_id
        && codeptr == b.codeptr
        && count == b.count
        && chunk_start == b.chunk_start
        && small_fields_same(a, b)
}

/// Whether the small fields that change only between constructs (thread,
/// team sizes, flags, kind, variant) are all equal in `a` and `b`.
#[inline(always)]
fn small_fields_same(a: &OmpRecord, b: &OmpRecord) -> bool {
    use std::mem::offset_of;
    const AT: usize = offset_of!(OmpRecord, thread);
    // The four 32-bit fields side by side, as the compiler lays them out
    // today: one 16-byte compare for all four; field by field otherwise.
    const TOGETHER: bool = offset_of!(OmpRecord, team_size) == AT + 4
        && offset_of!(OmpRecord, requested_team_size) == AT + 8
        && offset_of!(OmpRecord, flags) == AT + 12;
    let u32s_same = if TOGETHER {
        // SAFETY: the 16 bytes from AT are the four u32 fields (TOGETHER),
        // inside the record.
        let wide = |r: &OmpRecord| unsafe {
            std::ptr::read_unaligned((r as *const OmpRecord as *const u8).add(AT) as *const u128)
        };
        wide(a) == wide(b)
    } else {
        a.thread == b.thread
            && a.team_size == b.team_size
            && a.requested_team_size == b.requested_team_size
            && a.flags == b.flags
    };
    u32s_same && a.kind == b.kind && a.variant == b.variant
}

/// Whether `cur` is a parallel region coded just after its primary thread's
/// implicit task: its region id, code address and team size are those of
/// the frame's last `ImplicitTask` record, and every other field but the
/// start and end is its base's.
#[inline(always)]
fn is_region(bases: &[OmpRecord], cur: &OmpRecord) -> bool {
    let task = &bases[omp_key(OmpKind::ImplicitTask as u8)];
    let region = OmpRecord {
        start_ns: cur.start_ns,
        end_ns: cur.end_ns,
        kind: OmpKind::Parallel as u8,
        parallel_id: task.parallel_id,
        codeptr: task.codeptr,
        team_size: task.team_size,
        ..bases[omp_key(OmpKind::Parallel as u8)]
    };
    same(&region, cur)
}

/// Whether `cur` is an implicit task that ends with the join barrier just
/// coded (the frame's last `SyncWait`): the same end, region and task, and
/// every other field but the start its base's.
#[inline(always)]
fn is_join(bases: &[OmpRecord], cur: &OmpRecord) -> bool {
    let wait = &bases[omp_key(OmpKind::SyncWait as u8)];
    // The end first: one compare rejects the implicit tasks of regions
    // without a join barrier (serialized ones).
    if cur.end_ns != wait.end_ns {
        return false;
    }
    let joined = OmpRecord {
        start_ns: cur.start_ns,
        end_ns: wait.end_ns,
        parallel_id: wait.parallel_id,
        task_id: wait.task_id,
        ..bases[omp_key(OmpKind::ImplicitTask as u8)]
    };
    same(&joined, cur)
}

/// Whether `cur` (a `Sync`) is the twin of the frame's last record of its
/// twin kind: equal to it in every field but the kind.
#[inline(always)]
fn is_twin(bases: &[OmpRecord], cur: &OmpRecord) -> bool {
    match twin_of(cur.kind) {
        Some(twin) => {
            let of = OmpRecord {
                kind: cur.kind,
                ..bases[omp_key(twin)]
            };
            same(&of, cur)
        }
        None => false,
    }
}

/// The kind an OpenMP record of `kind` may be the twin of: a barrier's (or
/// taskwait's) `Sync` of its `SyncWait`, which libomp begins and ends at the
/// same times (`ompt_tool::callbacks::enter`).
#[inline(always)]
fn twin_of(kind: u8) -> Option<u8> {
    (kind == OmpKind::Sync as u8).then_some(OmpKind::SyncWait as u8)
}

impl SpoolRecord for OmpRecord {
    const TABLE: Table = Table::Omp;

    /// One base per kind: a thread's barrier is coded against its previous
    /// barrier (same construct, next region: a few small deltas), not against
    /// whatever interval ended just before it (every id and address differs).
    const KEYS: usize = OMP_KEYS;

    #[inline(always)]
    fn key(&self) -> usize {
        omp_key(self.kind)
    }

    #[inline(always)]
    fn peek_key(input: &[u8]) -> Option<usize> {
        input.first().map(|&k| omp_key(k))
    }

    #[inline(always)]
    fn put(prev: &Self, cur: &Self, room: &mut [u8; RECORD_ROOM]) -> usize {
        put_omp(prev, cur, room)
    }

    #[inline(always)]
    fn put_in(bases: &[Self], cur: &Self, room: &mut [u8; RECORD_ROOM]) -> usize {
        // The two short forms (module docs), each for one kind: one dispatch
        // on the kind, so other records (a loop's chunks) pay one test.
        const SYNC: u8 = OmpKind::Sync as u8;
        const IMPLICIT_TASK: u8 = OmpKind::ImplicitTask as u8;
        const PARALLEL: u8 = OmpKind::Parallel as u8;
        // As an array of the KEYS bases a stream keeps: no bounds check per
        // base below (`omp_key` < KEYS).
        let Ok(bases) = <&[Self; OMP_KEYS]>::try_from(bases) else {
            return put_omp(&bases[omp_key(cur.kind)], cur, room);
        };
        match cur.kind {
            SYNC if is_twin(bases, cur) => {
                room[0] = cur.kind;
                room[1..3].copy_from_slice(&TWIN.to_le_bytes());
                3
            }
            IMPLICIT_TASK if is_join(bases, cur) => {
                // Only the start's change: the Put of one field, JOIN as the mask.
                let base = &bases[omp_key(cur.kind)];
                let mut e = Put::begin_keyed(room, cur.kind);
                // SAFETY: one field.
                unsafe { e.put(omp::START, delta(wide(base.start_ns), wide(cur.start_ns))) };
                e.mask = JOIN as u32;
                e.end()
            }
            PARALLEL if is_region(bases, cur) => {
                // The start and end against the implicit task's, REGION as
                // the mask: the bits of the two fields are only the Put's.
                let task = &bases[omp_key(OmpKind::ImplicitTask as u8)];
                let mut e = Put::begin_keyed(room, cur.kind);
                // SAFETY: two fields, in bit order.
                unsafe {
                    e.put(omp::START, delta(wide(task.start_ns), wide(cur.start_ns)));
                    e.put(omp::DURATION, delta(wide(task.end_ns), wide(cur.end_ns)));
                }
                e.mask = REGION as u32;
                e.end()
            }
            _ => put_omp(&bases[omp_key(cur.kind)], cur, room),
        }
    }

    #[inline(always)]
    fn decode_in(bases: &[Self], input: &mut &[u8]) -> Option<Self> {
        let &[kind, m0, m1] = input.first_chunk::<3>()?;
        let mask = u16::from_le_bytes([m0, m1]);
        if mask == JOIN {
            let (base, wait) = short_form(bases, kind, OmpKind::ImplicitTask, OmpKind::SyncWait)?;
            *input = &input[3..];
            let start = undelta(wide(base.start_ns), get_varint_fast(input)?);
            return Some(OmpRecord {
                start_ns: start as i64,
                end_ns: wait.end_ns,
                parallel_id: wait.parallel_id,
                task_id: wait.task_id,
                ..*base
            });
        }
        if mask == REGION {
            let (base, task) = short_form(bases, kind, OmpKind::Parallel, OmpKind::ImplicitTask)?;
            *input = &input[3..];
            let start = undelta(wide(task.start_ns), get_varint_fast(input)?);
            let end = undelta(wide(task.end_ns), get_varint_fast(input)?);
            return Some(OmpRecord {
                start_ns: start as i64,
                end_ns: end as i64,
                kind,
                parallel_id: task.parallel_id,
                codeptr: task.codeptr,
                team_size: task.team_size,
                ..*base
            });
        }
        if mask != TWIN {
            return Self::decode(bases.get(omp_key(kind))?, input);
        }
        let twin = twin_of(kind)?;
        *input = &input[3..];
        Some(OmpRecord {
            kind,
            ..bases[omp_key(twin)]
        })
    }

    #[inline(always)]
    fn decode(p: &Self, input: &mut &[u8]) -> Option<Self> {
        use omp::*;
        let (&key, rest) = input.split_first()?;
        let mut d = Get::begin(rest)?;
        let mut r = *p;
        r.start_ns = d.field(START, wide(p.start_ns))? as i64;
        let dur = d.field(DURATION, duration(p.start_ns, p.end_ns))?;
        r.end_ns = r.start_ns.wrapping_add(dur as i64);
        r.chunk_start = d.field(CHUNK_START, p.chunk_start)?;
        r.count = d.field(COUNT, p.count)?;
        if d.any_from(RARE, omp::FIELDS)? {
            r.thread = d.narrow(THREAD, p.thread)?;
            r.kind = d.narrow(KIND, p.kind)?;
            r.variant = d.narrow(VARIANT, p.variant)?;
            r.parallel_id = d.field(PARALLEL_ID, p.parallel_id)?;
            r.task_id = d.field(TASK_ID, p.task_id)?;
            r.codeptr = d.field(CODEPTR, p.codeptr)?;
            r.team_size = d.narrow(TEAM_SIZE, p.team_size)?;
            r.requested_team_size = d.narrow(REQUESTED_TEAM_SIZE, p.requested_team_size)?;
            r.flags = d.narrow(FLAGS, p.flags)?;
        }
        if r.kind != key {
            return None; // the key byte is the record's kind
        }
        *input = d.input;
        Some(r)
    }
}

/// Field order of [`MpiRecord`], as for [`omp`]: the fields that change from
/// call to call in a communication loop first, then, after [`mpi::RARE`],
/// those that change rarely.
mod mpi {
    pub const START: u32 = 0;
    /// `end_ns - start_ns`, in place of `end_ns`.
    pub const DURATION: u32 = 1;
    pub const CALL: u32 = 2;
    pub const CALLSITE: u32 = 3;
    pub const PEER: u32 = 4;
    pub const TAG: u32 = 5;
    pub const BYTES_SENT: u32 = 6;
    pub const BYTES_RECV: u32 = 7;
    pub const REQUEST_ID: u32 = 8;
    pub const THREAD: u32 = 9;
    pub const COMM_ID: u32 = 10;
    pub const ROOT: u32 = 11;
    /// The bool: its value (0 or 1) when it changes, not a delta.
    pub const IN_PARALLEL: u32 = 12;
    /// Version 5: the receive side of a `Sendrecv`.
    pub const RECV_PEER: u32 = 13;
    pub const RECV_TAG: u32 = 14;
    /// Version 6: the polls a folded row stands for.
    pub const CALLS: u32 = 15;
    /// The first of the rarely changing fields.
    pub const RARE: u32 = THREAD;
    /// Number of fields.
    pub const FIELDS: u32 = 16;
}

#[inline(always)]
fn put_mpi(p: &MpiRecord, c: &MpiRecord, room: &mut [u8; RECORD_ROOM]) -> usize {
    use mpi::*;
    let mut e = Put::begin(room);
    // SAFETY: each field once, in bit order.
    unsafe {
        e.field(START, wide(p.start_ns), wide(c.start_ns));
        e.field(
            DURATION,
            duration(p.start_ns, p.end_ns),
            duration(c.start_ns, c.end_ns),
        );
        e.field(CALL, p.call.into(), c.call.into());
        e.field(CALLSITE, p.callsite, c.callsite);
        e.field(PEER, wide(p.peer.into()), wide(c.peer.into()));
        e.field(TAG, wide(p.tag.into()), wide(c.tag.into()));
        e.field(BYTES_SENT, p.bytes_sent, c.bytes_sent);
        e.field(BYTES_RECV, p.bytes_recv, c.bytes_recv);
        e.field(REQUEST_ID, p.request_id, c.request_id);
        e.field(THREAD, p.thread.into(), c.thread.into());
        e.field(COMM_ID, p.comm_id, c.comm_id);
        e.field(ROOT, wide(p.root.into()), wide(c.root.into()));
        e.raw(IN_PARALLEL, p.in_parallel.into(), c.in_parallel.into());
        e.field(
            RECV_PEER,
            wide(p.recv_peer.into()),
            wide(c.recv_peer.into()),
        );
        e.field(RECV_TAG, wide(p.recv_tag.into()), wide(c.recv_tag.into()));
        e.field(CALLS, p.calls.into(), c.calls.into());
    }
    e.end()
}

impl SpoolRecord for MpiRecord {
    const TABLE: Table = Table::Mpi;

    #[inline(always)]
    fn put(prev: &Self, cur: &Self, room: &mut [u8; RECORD_ROOM]) -> usize {
        put_mpi(prev, cur, room)
    }

    #[inline(always)]
    fn decode(p: &Self, input: &mut &[u8]) -> Option<Self> {
        use mpi::*;
        let mut d = Get::begin(input)?;
        let mut r = *p;
        r.start_ns = d.field(START, wide(p.start_ns))? as i64;
        let dur = d.field(DURATION, duration(p.start_ns, p.end_ns))?;
        r.end_ns = r.start_ns.wrapping_add(dur as i64);
        r.call = d.narrow(CALL, p.call)?;
        r.callsite = d.field(CALLSITE, p.callsite)?;
        r.peer = d.i32(PEER, p.peer)?;
        r.tag = d.i32(TAG, p.tag)?;
        r.bytes_sent = d.field(BYTES_SENT, p.bytes_sent)?;
        r.bytes_recv = d.field(BYTES_RECV, p.bytes_recv)?;
        r.request_id = d.field(REQUEST_ID, p.request_id)?;
        if d.any_from(RARE, mpi::FIELDS)? {
            r.thread = d.narrow(THREAD, p.thread)?;
            r.comm_id = d.field(COMM_ID, p.comm_id)?;
            r.root = d.i32(ROOT, p.root)?;
            r.in_parallel = d.bool(IN_PARALLEL, p.in_parallel)?;
            r.recv_peer = d.i32(RECV_PEER, p.recv_peer)?;
            r.recv_tag = d.i32(RECV_TAG, p.recv_tag)?;
            r.calls = d.narrow(CALLS, p.calls)?;
        }
        *input = d.input;
        Some(r)
    }
}

fn invalid(path: &Path, message: String) -> FormatError {
    FormatError::Invalid {
        path: path.to_path_buf(),
        message,
    }
}

/// Appends frames to a spool file.
///
/// Unbuffered on purpose: each frame is already one large `write_all`, and
/// nothing sits in a user-space buffer when the process dies. Its one buffer
/// is reused across frames: 154 bytes per row of the largest frame (154 KiB
/// for 1024 rows).
pub struct SpoolWriter<R: SpoolRecord> {
    path: PathBuf,
    file: File,
    /// Frame header and payload of the frame being written, reused across calls.
    scratch: Vec<u8>,
    rows: u64,
    bytes: u64,
    _record: PhantomData<R>,
}

impl<R: SpoolRecord> SpoolWriter<R> {
    /// Create (truncate) the file and write the header.
    pub fn create(path: &Path) -> Result<Self, FormatError> {
        // Appending: a crash handler may append frames of its own through
        // another descriptor (`TAIL_FLAG`); neither overwrites the other's.
        let io = |e| FormatError::io(path, e);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        file.set_len(0).map_err(io)?;
        file.write_all(&file_header(R::TABLE))
            .map_err(|e| FormatError::io(path, e))?;
        Ok(SpoolWriter {
            path: path.to_path_buf(),
            file,
            scratch: Vec::new(),
            rows: 0,
            bytes: HEADER_LEN as u64,
            _record: PhantomData,
        })
    }

    /// Encode `rows` as one frame (an empty slice gives an empty frame) and
    /// write it with one `write_all`. A frame whose payload would not fit its
    /// u32 length (tens of millions of rows) is refused.
    pub fn append(&mut self, rows: &[R]) -> Result<(), FormatError> {
        let buf = &mut self.scratch;
        let end = R::encode_rows(rows, buf, FRAME_HEADER_LEN);
        let payload = end - FRAME_HEADER_LEN;
        let (Ok(count), Ok(len)) = (u32::try_from(rows.len()), u32::try_from(payload)) else {
            return Err(invalid(
                &self.path,
                format!(
                    "spool frame of {} rows ({payload} bytes) is too large; append fewer rows at a time",
                    rows.len()
                ),
            ));
        };
        buf[..4].copy_from_slice(&count.to_le_bytes());
        buf[4..8].copy_from_slice(&len.to_le_bytes());
        self.file
            .write_all(&buf[..end])
            .map_err(|e| FormatError::io(&self.path, e))?;
        self.rows += rows.len() as u64;
        self.bytes += end as u64;
        Ok(())
    }

    /// Write one frame whose payload is already encoded: `rows` records, the
    /// first against the default record, each next against the one before
    /// (as [`SpoolRecord::put`] in a row leaves them). One `writev`.
    pub fn append_encoded(&mut self, rows: u32, payload: &[u8]) -> Result<(), FormatError> {
        let Ok(len) = u32::try_from(payload.len()) else {
            return Err(invalid(&self.path, "spool frame payload too large".into()));
        };
        let mut header = [0u8; FRAME_HEADER_LEN];
        header[..4].copy_from_slice(&rows.to_le_bytes());
        header[4..].copy_from_slice(&len.to_le_bytes());
        self.write_frame(&header, payload)?;
        self.rows += u64::from(rows);
        Ok(())
    }

    /// Write a tail frame ([`TAIL_FLAG`]): `payload` is a whole block of
    /// `rows` encoded records, of which an earlier frame holds the first
    /// `skip`. Costs the rewrite of those records' bytes, not their decoding
    /// and encoding again. One `writev`.
    pub fn append_tail(&mut self, skip: u32, rows: u32, payload: &[u8]) -> Result<(), FormatError> {
        let header = u32::try_from(payload.len())
            .ok()
            .filter(|_| skip <= rows)
            .and_then(|len| tail_frame_header(skip, len));
        let Some(header) = header else {
            return Err(invalid(&self.path, "spool tail frame out of range".into()));
        };
        self.write_frame(&header, payload)?;
        self.rows += u64::from(rows - skip);
        Ok(())
    }

    /// A frame's header and payload, in one `writev`.
    fn write_frame(
        &mut self,
        header: &[u8; FRAME_HEADER_LEN],
        payload: &[u8],
    ) -> Result<(), FormatError> {
        // Header and payload in one `writev`, straight from the caller's
        // block: no copy into the scratch buffer (a collector's blocks are
        // 256 KiB, written on another core: copying them first doubled the
        // cross-core reads).
        let mut parts = [IoSlice::new(header), IoSlice::new(payload)];
        let mut rest = &mut parts[..];
        while !rest.is_empty() {
            match self.file.write_vectored(rest) {
                Ok(0) => {
                    let e = std::io::Error::from(std::io::ErrorKind::WriteZero);
                    return Err(FormatError::io(&self.path, e));
                }
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(FormatError::io(&self.path, e)),
            }
        }
        self.bytes += (FRAME_HEADER_LEN + payload.len()) as u64;
        Ok(())
    }

    /// Rows appended so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written so far, header included (the file's size).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Decode a whole frame payload (records until the bytes end), appending to
/// `out`; None if it does not decode exactly (`out` is then left as it was).
pub fn decode_payload<R: SpoolRecord>(payload: &[u8], out: &mut Vec<R>) -> Option<()> {
    DecodeCursor::new().decode_more(payload, out)
}

/// Where the decoding of a payload that only grows stopped (a block still
/// being written): the bytes decoded and the bases after them, so that the
/// next time only what was appended since is decoded.
#[derive(Debug, Clone)]
pub struct DecodeCursor<R> {
    len: usize,
    bases: Vec<R>,
}

impl<R: SpoolRecord> Default for DecodeCursor<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: SpoolRecord> DecodeCursor<R> {
    /// At the start of a payload.
    pub fn new() -> Self {
        DecodeCursor {
            len: 0,
            bases: vec![R::default(); R::KEYS],
        }
    }

    /// Bytes of the payload decoded so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nothing decoded yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Decode `payload[self.len()..]` (`payload`: the whole payload, of which
    /// the first `len()` bytes are the ones decoded before), appending to
    /// `out`; None if it does not decode exactly (`out` and the cursor are
    /// then left as they were).
    pub fn decode_more(&mut self, payload: &[u8], out: &mut Vec<R>) -> Option<()> {
        let mut rest = payload.get(self.len..)?;
        let start = out.len();
        let mut bases = self.bases.clone();
        while !rest.is_empty() {
            let Some(row) = decode_next(&mut bases, &mut rest) else {
                out.truncate(start);
                return None;
            };
            out.push(row);
        }
        self.len = payload.len();
        self.bases = bases;
        Some(())
    }
}

/// Reads a spool file frame by frame.
///
/// The file is read in chunks of 4 MiB into one buffer that frames are decoded
/// from in place, so a spool of any size is read in bounded memory (a chunk, or
/// the largest frame) with one copy out of the page cache.
pub struct SpoolReader<R: SpoolRecord> {
    path: PathBuf,
    file: File,
    /// File size at open: tells a cut last frame from a complete one.
    len: u64,
    /// Byte offset in the file of the next frame.
    offset: u64,
    /// `buf[pos..end]` holds the file's bytes from `offset` on.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    truncated: bool,
    done: bool,
    /// Offset of the frame that failed: an error is final.
    failed: Option<u64>,
    _record: PhantomData<R>,
}

/// Bytes read from the file at a time.
const READ_CHUNK: usize = 4 << 20;

impl<R: SpoolRecord> SpoolReader<R> {
    /// Open and check the header (magic, version, table).
    pub fn open(path: &Path) -> Result<Self, FormatError> {
        let io = |e| FormatError::io(path, e);
        let mut file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < HEADER_LEN as u64 {
            return Err(invalid(
                path,
                format!("truncated spool header ({len} bytes, the header has {HEADER_LEN})"),
            ));
        }
        let mut header = [0u8; HEADER_LEN];
        file.read_exact(&mut header).map_err(io)?;
        if header[..8] != MAGIC {
            return Err(invalid(path, "not a hyscope spool file (bad magic)".into()));
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if !(OLDEST_READ_VERSION..=VERSION).contains(&version) {
            return Err(invalid(
                path,
                format!(
                    "spool version {version} is not supported (this hyscope reads {OLDEST_READ_VERSION} to {VERSION})"
                ),
            ));
        }
        let want = table_code(R::TABLE);
        if header[10] != want {
            let found = Table::ALL
                .into_iter()
                .find(|&t| table_code(t) == header[10])
                .map_or_else(
                    || format!("unknown table code {}", header[10]),
                    |t| format!("`{t}`"),
                );
            return Err(invalid(
                path,
                format!("spool holds the {found} table, expected `{}`", R::TABLE),
            ));
        }
        Ok(SpoolReader {
            path: path.to_path_buf(),
            file,
            len,
            offset: HEADER_LEN as u64,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            truncated: false,
            done: false,
            failed: None,
            _record: PhantomData,
        })
    }

    /// Decode the next frame, appending its rows to `out`; `Ok(false)` at the end.
    ///
    /// A cut last frame ends the stream (`Ok(false)`, [`Self::truncated`] true):
    /// that is a frame whose header or payload runs past the end of the file,
    /// which is also how a corrupt length in a frame's header shows. A frame
    /// that is corrupt otherwise (rows that do not decode, bytes left over) is
    /// an error naming the file and the frame's offset; `out` is then left as
    /// it was, and every later call fails too.
    pub fn next_frame(&mut self, out: &mut Vec<R>) -> Result<bool, FormatError> {
        if let Some(at) = self.failed {
            return Err(self.corrupt(at, "reading stopped at this corrupt frame".into()));
        }
        if self.done {
            return Ok(false);
        }
        let at = self.offset;
        match self.read_frame(at, out) {
            Ok(more) => Ok(more),
            Err(e) => {
                self.failed = Some(at);
                Err(e)
            }
        }
    }

    fn read_frame(&mut self, at: u64, out: &mut Vec<R>) -> Result<bool, FormatError> {
        let remaining = self.len - at;
        if remaining == 0 {
            self.done = true;
            return Ok(false);
        }
        if remaining < FRAME_HEADER_LEN as u64 {
            return Ok(self.cut());
        }
        self.fill(FRAME_HEADER_LEN)?;
        let head = &self.buf[self.pos..self.pos + FRAME_HEADER_LEN];
        let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        if count & TAIL_FLAG != 0 {
            return self.read_tail_frame(at, (count & !TAIL_FLAG) as usize, len, remaining, out);
        }
        let rows = count as usize;
        if rows > len {
            // Every record takes at least one byte.
            return Err(self.corrupt(at, format!("{rows} rows cannot fit in {len} bytes")));
        }
        if len as u64 > remaining - FRAME_HEADER_LEN as u64 {
            return Ok(self.cut());
        }
        self.fill(FRAME_HEADER_LEN + len)?;
        let from = self.pos + FRAME_HEADER_LEN;
        let mut input = &self.buf[from..from + len];

        let start = out.len();
        if out.try_reserve(rows).is_err() {
            return Err(self.corrupt(at, format!("{rows} rows do not fit in memory")));
        }
        let mut bases = vec![R::default(); R::KEYS];
        for i in 0..rows {
            let Some(row) = decode_next(&mut bases, &mut input) else {
                out.truncate(start);
                return Err(self.corrupt(at, format!("row {i} of {rows} does not decode")));
            };
            out.push(row);
        }
        if !input.is_empty() {
            out.truncate(start);
            let left = input.len();
            return Err(self.corrupt(
                at,
                format!("{left} bytes left after the last of {rows} rows"),
            ));
        }
        self.pos += FRAME_HEADER_LEN + len;
        self.offset = at + (FRAME_HEADER_LEN + len) as u64;
        Ok(true)
    }

    /// A tail frame ([`TAIL_FLAG`]): every record of the payload decoded, the
    /// first `skip` of them dropped (spooled before by a frame of their own).
    fn read_tail_frame(
        &mut self,
        at: u64,
        skip: usize,
        len: usize,
        remaining: u64,
        out: &mut Vec<R>,
    ) -> Result<bool, FormatError> {
        if len as u64 > remaining - FRAME_HEADER_LEN as u64 {
            return Ok(self.cut());
        }
        self.fill(FRAME_HEADER_LEN + len)?;
        let from = self.pos + FRAME_HEADER_LEN;
        let start = out.len();
        if decode_payload(&self.buf[from..from + len], out).is_none() {
            return Err(self.corrupt(at, "the records of a tail frame do not decode".into()));
        }
        let decoded = out.len() - start;
        if skip > decoded {
            out.truncate(start);
            return Err(self.corrupt(
                at,
                format!("a tail frame skips {skip} of its {decoded} rows"),
            ));
        }
        out.drain(start..start + skip);
        self.pos += FRAME_HEADER_LEN + len;
        self.offset = at + (FRAME_HEADER_LEN + len) as u64;
        Ok(true)
    }

    /// Makes `buf[pos..]` hold at least `need` bytes of the file (which has
    /// them: the caller checked against its length), reading a chunk or more.
    fn fill(&mut self, need: usize) -> Result<(), FormatError> {
        if self.end - self.pos >= need {
            return Ok(());
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        // A chunk, or the rest of the file if smaller (the caller checked it
        // holds `need` bytes). `buf[..end]` is the file from `offset` on.
        let rest = usize::try_from(self.len - self.offset).unwrap_or(usize::MAX);
        let want = need.max(READ_CHUNK.min(rest));
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let stop = self.buf.len().min(rest);
        while self.end < need {
            match self.file.read(&mut self.buf[self.end..stop]) {
                Ok(0) => {
                    let e = std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the spool file shrank while being read",
                    );
                    return Err(FormatError::io(&self.path, e));
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(FormatError::io(&self.path, e)),
            }
        }
        Ok(())
    }

    /// The last frame is cut: end of stream.
    fn cut(&mut self) -> bool {
        self.truncated = true;
        self.done = true;
        false
    }

    fn corrupt(&self, at: u64, what: String) -> FormatError {
        invalid(
            &self.path,
            format!("corrupt spool frame at byte offset {at}: {what}"),
        )
    }

    /// True once the stream ended on a cut last frame (the writer was killed mid-write).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Read a whole spool file: its rows, and whether its last frame was cut.
pub fn read_all<R: SpoolRecord>(path: &Path) -> Result<(Vec<R>, bool), FormatError> {
    let mut reader = SpoolReader::<R>::open(path)?;
    let mut rows = Vec::new();
    while reader.next_frame(&mut rows)? {}
    Ok((rows, reader.truncated()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::OmpKind;

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0, 1, -1, 63, -64, 64, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    /// Values around every 7-bit group boundary, and the extremes.
    fn varint_values() -> Vec<u64> {
        let mut v = vec![0, 1, u64::MAX - 1, u64::MAX];
        for bits in (7..64).step_by(7) {
            v.extend([(1u64 << bits) - 1, 1u64 << bits, (1u64 << bits) + 1]);
        }
        v
    }

    fn encoded(v: u64) -> Vec<u8> {
        let mut buf = [0u8; MAX_VARINT];
        let n = put_varint(&mut buf, v);
        assert!(n <= MAX_VARINT);
        buf[..n].to_vec()
    }

    #[test]
    fn fast_varints_match_the_plain_loop() {
        for v in varint_values() {
            let plain = encoded(v);
            // The record writer's paths (one to three bytes, then the loop).
            let mut room = [0u8; RECORD_ROOM];
            let mut put = Put::begin(&mut room);
            // SAFETY: one field.
            unsafe { put.put(0, v) };
            let len = put.end();
            assert_eq!(&room[2..len], &plain[..], "{v:#x}");
            // Fast read with and without bytes after, and cut.
            let mut padded = plain.clone();
            padded.extend([0xff; 8]);
            let mut input = &padded[..];
            assert_eq!(get_varint_fast(&mut input), Some(v), "{v:#x}");
            assert_eq!(input.len(), 8);
            let mut input = &plain[..];
            assert_eq!(get_varint_fast(&mut input), Some(v), "{v:#x}");
            assert!(input.is_empty());
            assert_eq!(get_varint_fast(&mut &plain[..plain.len() - 1]), None);
        }
    }

    #[test]
    fn overlong_and_cut_varints_are_malformed() {
        // u64::MAX is ten bytes, the last 0x01; a larger tenth byte overflows.
        let mut max = encoded(u64::MAX);
        assert_eq!((max.len(), max[9]), (10, 1));
        max[9] = 2;
        assert_eq!(get_varint_fast(&mut &max[..]), None);
        // Eleven bytes, or a cut varint, are malformed.
        assert_eq!(get_varint_fast(&mut &[0x80u8; 11][..]), None);
        assert_eq!(get_varint_fast(&mut &[0x80u8, 0x80][..]), None);
        assert_eq!(get_varint_fast(&mut &[][..]), None);
    }

    #[test]
    fn unknown_mask_bits_are_malformed() {
        let input = (1u16 << 13).to_le_bytes();
        assert_eq!(
            OmpRecord::decode(&OmpRecord::default(), &mut &input[..]),
            None
        );
        // Every bit of an MPI mask names a field (bit 15: `calls`, version
        // 6); a mask naming one with no varint after it is cut.
        let input = (1u16 << 15).to_le_bytes();
        assert_eq!(
            MpiRecord::decode(&MpiRecord::default(), &mut &input[..]),
            None
        );
    }

    #[test]
    fn loop_chunks_take_about_eight_bytes() {
        let chunk = |i: i64| OmpRecord {
            thread: 1,
            kind: 6,
            variant: 3,
            start_ns: 7_200_000_000_000 + 2_000 * i,
            end_ns: 7_200_000_000_000 + 2_000 * i + 1_800 + (i % 3) * 100,
            parallel_id: 5,
            task_id: 1_012,
            codeptr: 0x40_1a20,
            team_size: 2,
            count: 32,
            chunk_start: 32 * i as u64,
            ..OmpRecord::default()
        };
        let mut out = Vec::new();
        OmpRecord::encode(&chunk(0), &chunk(1), &mut out);
        // Kind, mask, start (+2000), duration (+100), chunk_start (+32).
        assert_eq!(out.len(), 1 + 2 + 2 + 2 + 1);
    }

    /// A barrier interval (`kind` Sync or SyncWait) of thread 1 in region
    /// `region`, one every 5 µs, 700 ns long.
    fn barrier_of(kind: OmpKind, variant: u8, region: u64) -> OmpRecord {
        OmpRecord {
            thread: 1,
            kind: kind as u8,
            variant,
            start_ns: 1_000_000 + 5_000 * region as i64,
            end_ns: 1_000_000 + 5_000 * region as i64 + 700,
            parallel_id: (2 << 40) | region,
            task_id: (2 << 40) | (100 + region),
            codeptr: 0x40_1a20,
            ..OmpRecord::default()
        }
    }

    #[test]
    fn records_are_coded_against_the_last_of_their_kind() {
        let barrier = |region: u64| barrier_of(OmpKind::Sync, 9, region);
        let chunk = |region: u64| OmpRecord {
            kind: OmpKind::Chunk as u8,
            variant: 1,
            start_ns: 1_000_000 + 5_000 * region as i64 + 100,
            end_ns: 1_000_000 + 5_000 * region as i64 + 600,
            parallel_id: 77 << 40,
            codeptr: 0x40_2b30,
            count: 16,
            ..barrier(region)
        };
        // Barrier, chunk, barrier, chunk: each second record of a kind is
        // coded against the first of its kind, not against the other kind.
        let rows = [barrier(0), chunk(0), barrier(1), chunk(1)];
        let mut buf = Vec::new();
        let end = OmpRecord::encode_rows(&rows, &mut buf, 0);
        let mut one = Vec::new();
        OmpRecord::encode(&barrier(0), &barrier(1), &mut one);
        // Kind, mask, start (+5000), parallel_id (+1), task_id (+1).
        assert_eq!(one.len(), 1 + 2 + 2 + 1 + 1);
        let mut back: Vec<OmpRecord> = Vec::new();
        assert_eq!(decode_payload(&buf[..end], &mut back), Some(()));
        assert_eq!(back, rows);
        // A key byte that is not the record's kind is malformed.
        let mut bad = buf[..end].to_vec();
        bad[0] = OmpKind::Chunk as u8;
        assert_eq!(decode_payload::<OmpRecord>(&bad, &mut Vec::new()), None);
    }

    #[test]
    fn a_cursor_decodes_only_what_was_appended_and_agrees_with_one_decode() {
        let rows: Vec<OmpRecord> = (0..40)
            .map(|i| {
                if i % 3 == 0 {
                    barrier_of(OmpKind::Sync, 9, i)
                } else {
                    barrier_of(OmpKind::SyncWait, 3, i)
                }
            })
            .collect();
        let mut buf = Vec::new();
        let end = OmpRecord::encode_rows(&rows, &mut buf, 0);
        // Record boundaries: the ends of the prefixes' encodings.
        let ends: Vec<usize> = (0..=rows.len())
            .map(|k| OmpRecord::encode_rows(&rows[..k], &mut Vec::new(), 0))
            .collect();
        assert_eq!(ends[rows.len()], end);
        for k in [1, 7, 20, 39] {
            let mut cursor = DecodeCursor::<OmpRecord>::new();
            let mut first = Vec::new();
            assert_eq!(cursor.decode_more(&buf[..ends[k]], &mut first), Some(()));
            assert_eq!((first.as_slice(), cursor.len()), (&rows[..k], ends[k]));
            // Cut inside the next record: nothing decoded, the cursor stays.
            let mut none = Vec::new();
            assert_eq!(cursor.decode_more(&buf[..ends[k + 1] - 1], &mut none), None);
            assert!(none.is_empty());
            assert_eq!(cursor.len(), ends[k]);
            let mut second = Vec::new();
            assert_eq!(cursor.decode_more(&buf[..end], &mut second), Some(()));
            assert_eq!(second, rows[k..]);
        }
    }

    #[test]
    fn a_barrier_with_its_wait_times_is_three_bytes() {
        let (w0, w1) = (
            barrier_of(OmpKind::SyncWait, 3, 0),
            barrier_of(OmpKind::SyncWait, 3, 1),
        );
        // Region 0: the barrier spans exactly its wait (libomp); region 1:
        // it ends 40 ns after its wait, so it is coded field by field.
        let s0 = barrier_of(OmpKind::Sync, 3, 0);
        let s1 = OmpRecord {
            end_ns: w1.end_ns + 40,
            ..barrier_of(OmpKind::Sync, 3, 1)
        };
        let rows = [w0, s0, w1, s1];
        let mut buf = Vec::new();
        let end = OmpRecord::encode_rows(&rows, &mut buf, 0);
        let mut per_row = [0; 4];
        let mut bases = [OmpRecord::default(); OMP_KEYS];
        for (i, r) in rows.iter().enumerate() {
            per_row[i] = OmpRecord::put_in(&bases, r, &mut [0; RECORD_ROOM]);
            bases[r.key()] = *r;
        }
        assert_eq!(per_row[1], 3, "twin of its wait");
        assert!(per_row[3] > 3, "not a twin: other end");
        let twin = &buf[per_row[0]..per_row[0] + 3];
        assert_eq!(twin, [OmpKind::Sync as u8, 0, 0x80]);
        let mut back: Vec<OmpRecord> = Vec::new();
        assert_eq!(decode_payload(&buf[..end], &mut back), Some(()));
        assert_eq!(back, rows);
        // Only a barrier has a twin kind: a chunk's twin mask is malformed.
        let bad = [OmpKind::Chunk as u8, 0, 0x80];
        assert_eq!(decode_payload::<OmpRecord>(&bad, &mut Vec::new()), None);
    }

    /// The bytes each of `rows` takes, coded in order as one frame.
    fn record_sizes(rows: &[OmpRecord]) -> Vec<usize> {
        let mut bases = [OmpRecord::default(); OMP_KEYS];
        let mut sizes = Vec::new();
        for r in rows {
            sizes.push(OmpRecord::put_in(&bases, r, &mut [0; RECORD_ROOM]));
            bases[r.key()] = *r;
        }
        sizes
    }

    #[test]
    fn an_implicit_task_ending_with_its_join_barrier_is_five_bytes() {
        // A worker's regions: its implicit task from `start` to the end of
        // its join barrier (wait and barrier, twins), three regions.
        let region = |r: u64, start: i64| {
            let wait = barrier_of(OmpKind::SyncWait, 9, r);
            let task = OmpRecord {
                kind: OmpKind::ImplicitTask as u8,
                start_ns: start,
                team_size: 2,
                count: 1,
                flags: 2,
                ..wait
            };
            [wait, barrier_of(OmpKind::Sync, 9, r), task]
        };
        let mut rows: Vec<OmpRecord> = Vec::new();
        for (r, start) in [(0, 999_000), (1, 1_003_900), (2, 1_008_950)] {
            rows.extend(region(r, start));
        }
        // Not a join: the implicit task ends 30 ns after its barrier.
        let mut late = region(3, 1_014_000);
        late[2].end_ns += 30;
        rows.extend(late);
        let sizes = record_sizes(&rows);
        // The first is coded field by field (its base is the default record).
        assert!(sizes[2] > 4, "{sizes:?}");
        assert_eq!((sizes[5], sizes[8]), (5, 5), "kind, mask, a 2-byte start");
        assert!(sizes[11] > 5, "{sizes:?}");
        let mut buf = Vec::new();
        let end = OmpRecord::encode_rows(&rows, &mut buf, 0);
        let mut back: Vec<OmpRecord> = Vec::new();
        assert_eq!(decode_payload(&buf[..end], &mut back), Some(()));
        assert_eq!(back, rows);
        // Only an implicit task can be a join: another kind's join mask is
        // malformed.
        let bad = [OmpKind::Chunk as u8, 0, 0x40, 0];
        assert_eq!(decode_payload::<OmpRecord>(&bad, &mut Vec::new()), None);
    }

    #[test]
    fn a_region_coded_after_its_primary_implicit_task_is_seven_bytes() {
        // A serialized region (a team of one) of a thread's stream: its loop,
        // its implicit task, then the region, whose id, code address and
        // team size its implicit task carries; four regions of two sites.
        let region = |r: u64, at: i64, site: u64| {
            let id = (1 << 40) | (3 * r);
            let task = OmpRecord {
                kind: OmpKind::ImplicitTask as u8,
                start_ns: at + 180,
                end_ns: at + 2_400,
                parallel_id: id,
                task_id: id + 1,
                team_size: 1,
                flags: 2,
                codeptr: site,
                ..OmpRecord::default()
            };
            let lp = OmpRecord {
                kind: OmpKind::Work as u8,
                variant: 1,
                start_ns: at + 300,
                end_ns: at + 2_300,
                count: 1_000,
                codeptr: site + 40,
                ..task
            };
            let parallel = OmpRecord {
                kind: OmpKind::Parallel as u8,
                start_ns: at,
                end_ns: at + 2_610,
                task_id: 7,
                requested_team_size: 1,
                flags: 0x8000_0001,
                ..task
            };
            [lp, task, parallel]
        };
        let mut rows: Vec<OmpRecord> = Vec::new();
        for (r, at, site) in [(0, 1_000_000, 0x40_1000), (1, 1_004_000, 0x40_2000)] {
            rows.extend(region(r, at, site));
        }
        rows.extend(region(2, 1_009_000, 0x40_1000));
        // A region ending before its task, far after it: any times round-trip.
        let mut odd = region(3, 1_013_000, 0x40_1000);
        odd[2].end_ns = odd[1].end_ns - 90;
        odd[2].start_ns = odd[1].start_ns + 5_000_000_000;
        rows.extend(odd);
        // Not a region record: the region's code address is not its task's.
        let mut other = region(4, 1_017_000, 0x40_2000);
        other[2].codeptr = 0x40_3000;
        rows.extend(other);
        // Nor one whose encountering task changed.
        let mut moved = region(5, 1_021_000, 0x40_2000);
        moved[2].task_id = 8;
        rows.extend(moved);
        let sizes = record_sizes(&rows);
        // The first is coded field by field (its base is the default record);
        // the next two are region records (changes of ±64 ns or more take
        // two bytes).
        assert!(sizes[2] > 5, "{sizes:?}");
        assert_eq!(
            (sizes[5], sizes[8]),
            (7, 7),
            "kind, mask, two 2-byte changes: {sizes:?}"
        );
        assert!(sizes[14] > 7 && sizes[17] > 7, "{sizes:?}");
        assert!(
            sizes[11] > 7 && sizes[11] < 20,
            "a region record of long changes: {sizes:?}"
        );
        let mut buf = Vec::new();
        let end = OmpRecord::encode_rows(&rows, &mut buf, 0);
        let at: usize = sizes[..11].iter().sum();
        assert_eq!(buf[at..at + 3], [OmpKind::Parallel as u8, 0, 0x20]);
        let mut back: Vec<OmpRecord> = Vec::new();
        assert_eq!(decode_payload(&buf[..end], &mut back), Some(()));
        assert_eq!(back, rows);
        // Only a parallel region can be a region record: another kind's
        // region mask is malformed.
        let bad = [OmpKind::ImplicitTask as u8, 0, 0x20, 0, 0];
        assert_eq!(decode_payload::<OmpRecord>(&bad, &mut Vec::new()), None);
    }

    /// One OpenMP record as the module documentation describes its bytes,
    /// written the plain way (a `Vec`, a loop per varint, each short form's
    /// condition spelled out): the reference for the encoder's fast paths.
    fn described(bases: &[OmpRecord], c: &OmpRecord) -> Vec<u8> {
        fn varint(out: &mut Vec<u8>, mut v: u64) {
            while v >= 0x80 {
                out.push(v as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        let change = |p: u64, q: u64| zigzag(q.wrapping_sub(p) as i64);
        let at = |kind: OmpKind| &bases[omp_key(kind as u8)];
        let base = &bases[omp_key(c.kind)];
        let mut out = vec![c.kind];
        let (wait, task) = (at(OmpKind::SyncWait), at(OmpKind::ImplicitTask));
        if c.kind == OmpKind::Sync as u8
            && (OmpRecord {
                kind: c.kind,
                ..*wait
            }) == *c
        {
            out.extend(TWIN.to_le_bytes());
            return out;
        }
        let joined = OmpRecord {
            start_ns: c.start_ns,
            end_ns: wait.end_ns,
            parallel_id: wait.parallel_id,
            task_id: wait.task_id,
            ..*base
        };
        if c.kind == OmpKind::ImplicitTask as u8 && joined == *c {
            out.extend(JOIN.to_le_bytes());
            varint(&mut out, change(base.start_ns as u64, c.start_ns as u64));
            return out;
        }
        let region = OmpRecord {
            start_ns: c.start_ns,
            end_ns: c.end_ns,
            kind: c.kind,
            parallel_id: task.parallel_id,
            codeptr: task.codeptr,
            team_size: task.team_size,
            ..*base
        };
        if c.kind == OmpKind::Parallel as u8 && region == *c {
            out.extend(REGION.to_le_bytes());
            varint(&mut out, change(task.start_ns as u64, c.start_ns as u64));
            varint(&mut out, change(task.end_ns as u64, c.end_ns as u64));
            return out;
        }
        let dur = |r: &OmpRecord| r.end_ns.wrapping_sub(r.start_ns) as u64;
        let fields = |r: &OmpRecord| {
            [
                r.start_ns as u64,
                dur(r),
                r.chunk_start,
                r.count,
                r.thread.into(),
                r.kind.into(),
                r.variant.into(),
                r.parallel_id,
                r.task_id,
                r.codeptr,
                r.team_size.into(),
                r.requested_team_size.into(),
                r.flags.into(),
            ]
        };
        let (mut mask, mut body) = (0u16, Vec::new());
        for (k, (p, q)) in fields(base).into_iter().zip(fields(c)).enumerate() {
            if p != q {
                mask |= 1 << k;
                varint(&mut body, change(p, q));
            }
        }
        out.extend(mask.to_le_bytes());
        out.extend(body);
        out
    }

    /// Every form and field path of the OpenMP encoder gives the bytes the
    /// format documentation describes: serialized regions with loops (region
    /// records, implicit tasks without a join), teams with join barriers
    /// (twins, joins), and records whose fields change by every varint length
    /// (one to ten bytes), each field alone and several together, the small
    /// fields (thread, kind, variant, team sizes, flags) too.
    #[test]
    fn the_encoder_writes_the_bytes_the_format_describes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut rows: Vec<OmpRecord> = Vec::new();
        let mut t = 7_000_000_000_000i64;
        for r in 0..200u64 {
            let id = (1 << 40) | (4 * r);
            t += 900 + (next() % 40_000) as i64;
            // Serialized regions of three sites, then a team's of one.
            let team = if r < 100 { 1 } else { 2 };
            let site = 0x40_1000 + 0x100 * (next() % 3) * u64::from(2 - team);
            let task = OmpRecord {
                kind: OmpKind::ImplicitTask as u8,
                start_ns: t + 150,
                end_ns: t + 150 + (next() % 9_000) as i64,
                parallel_id: id,
                task_id: id + 1,
                team_size: team,
                flags: 2,
                codeptr: site,
                ..OmpRecord::default()
            };
            let lp = OmpRecord {
                kind: OmpKind::Work as u8,
                variant: if r % 7 == 0 { 2 } else { 1 },
                start_ns: task.start_ns + 50,
                end_ns: task.end_ns - 40,
                count: 1_000 + next() % 3,
                codeptr: site + 40,
                ..task
            };
            rows.push(lp);
            if team > 1 {
                // The join barrier (a twin of its wait) and a task ending with it.
                let wait = OmpRecord {
                    kind: OmpKind::SyncWait as u8,
                    variant: 9,
                    start_ns: lp.end_ns,
                    end_ns: task.end_ns,
                    team_size: 0,
                    count: 0,
                    codeptr: 0,
                    ..task
                };
                rows.push(wait);
                rows.push(OmpRecord {
                    kind: OmpKind::Sync as u8,
                    ..wait
                });
            }
            rows.push(task);
            rows.push(OmpRecord {
                kind: OmpKind::Parallel as u8,
                start_ns: t,
                end_ns: task.end_ns + 200 + (next() % 300) as i64,
                task_id: 7,
                requested_team_size: team,
                flags: 0x8000_0001,
                ..task
            });
        }
        // Each field alone, then several, by changes of every length.
        let template = rows[0];
        let mut base = template;
        for i in 0..2_000u64 {
            let mut rec = base;
            let bits = 1 + next() % 63;
            let big = next() & ((1u64 << bits) - 1);
            let change = if next() % 2 == 0 {
                big
            } else {
                big.wrapping_neg()
            };
            let fields = if i % 3 == 0 { 1 + next() % 5 } else { 1 };
            for _ in 0..fields {
                match next() % 13 {
                    0 => rec.start_ns = rec.start_ns.wrapping_add(change as i64),
                    1 => rec.end_ns = rec.end_ns.wrapping_add(change as i64),
                    2 => rec.chunk_start = rec.chunk_start.wrapping_add(change),
                    3 => rec.count = rec.count.wrapping_add(change),
                    4 => rec.thread = rec.thread.wrapping_add(change as u32),
                    5 => rec.kind = (change % 20) as u8,
                    6 => rec.variant = rec.variant.wrapping_add(change as u8),
                    7 => rec.parallel_id = rec.parallel_id.wrapping_add(change),
                    8 => rec.task_id = rec.task_id.wrapping_add(change),
                    9 => rec.codeptr = rec.codeptr.wrapping_add(change),
                    10 => rec.team_size = rec.team_size.wrapping_add(change as u32),
                    11 => {
                        rec.requested_team_size =
                            rec.requested_team_size.wrapping_add(change as u32)
                    }
                    _ => rec.flags = rec.flags.wrapping_add(change as u32),
                }
            }
            rows.push(rec);
            base = if i % 50 == 49 { template } else { rec };
        }
        let mut bases = vec![OmpRecord::default(); OMP_KEYS];
        let mut want = Vec::new();
        for row in &rows {
            want.extend(described(&bases, row));
            bases[row.key()] = *row;
        }
        let mut buf = Vec::new();
        let end = OmpRecord::encode_rows(&rows, &mut buf, 0);
        let sizes = record_sizes(&rows);
        let mut at = 0;
        for (i, size) in sizes.iter().enumerate() {
            assert_eq!(
                buf[at..at + size],
                want[at..(at + size).min(want.len())],
                "record {i}: {:?}",
                rows[i]
            );
            at += size;
        }
        assert_eq!(buf[..end], want[..]);
        let forms = |mask: u16| {
            let mut at = 0;
            sizes
                .iter()
                .filter(|&&size| {
                    let hit = u16::from_le_bytes([buf[at + 1], buf[at + 2]]) == mask;
                    at += size;
                    hit
                })
                .count()
        };
        let counts = (forms(TWIN), forms(JOIN), forms(REGION));
        assert!(
            counts.0 > 90 && counts.1 > 90 && counts.2 > 150,
            "{counts:?}"
        );
    }
}
