//! The spool codec: exact round trips for any values, and bad files (cut,
//! corrupt, wrong table) give an error naming the file or, for a cut last
//! frame, every complete frame and `truncated()`, never a panic.

use std::path::{Path, PathBuf};

use hyscope_format::spool::{
    FRAME_HEADER_LEN, HEADER_LEN, RECORD_ROOM, SpoolReader, SpoolRecord, SpoolWriter, read_all,
};
use hyscope_format::synthetic::{OmpGenerator, OmpTraceSpec};
use hyscope_format::{MpiRecord, OmpRecord, Table};

/// xorshift64*: deterministic random values for the tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Extremes of every width, as u64 bit patterns (signed ones sign-extended).
const EXTREMES: [u64; 14] = [
    0,
    1,
    u64::MAX, // -1
    i64::MAX as u64,
    i64::MIN as u64,
    u64::MAX - 1,
    u32::MAX as u64,
    i32::MAX as u64,
    i32::MIN as i64 as u64,
    u16::MAX as u64,
    u8::MAX as u64,
    0x7f,
    0x80,
    (1 << 21) - 1,
];

/// A value following `prev` the way real fields do, or not at all: unchanged,
/// a small step either way, a big jump, an extreme, or anything.
fn next_value(rng: &mut Rng, prev: u64) -> u64 {
    match rng.below(6) {
        0 => prev,
        1 => prev.wrapping_add(rng.below(64)),
        2 => prev.wrapping_sub(rng.below(20_000)),
        3 => prev.wrapping_add(rng.below(1 << 40)),
        4 => EXTREMES[rng.below(EXTREMES.len() as u64) as usize],
        _ => rng.next(),
    }
}

fn random_omp(rng: &mut Rng, p: &OmpRecord) -> OmpRecord {
    let mut v = |prev: u64| next_value(rng, prev);
    OmpRecord {
        thread: v(p.thread.into()) as u32,
        kind: v(p.kind.into()) as u8,
        variant: v(p.variant.into()) as u8,
        start_ns: v(p.start_ns as u64) as i64,
        end_ns: v(p.end_ns as u64) as i64,
        parallel_id: v(p.parallel_id),
        task_id: v(p.task_id),
        codeptr: v(p.codeptr),
        team_size: v(p.team_size.into()) as u32,
        requested_team_size: v(p.requested_team_size.into()) as u32,
        count: v(p.count),
        chunk_start: v(p.chunk_start),
        flags: v(p.flags.into()) as u32,
    }
}

fn random_mpi(rng: &mut Rng, p: &MpiRecord) -> MpiRecord {
    let in_parallel = rng.below(4) == 0;
    let mut v = |prev: u64| next_value(rng, prev);
    MpiRecord {
        thread: v(p.thread.into()) as u32,
        call: v(p.call.into()) as u16,
        start_ns: v(p.start_ns as u64) as i64,
        end_ns: v(p.end_ns as u64) as i64,
        peer: v(p.peer as u64) as i32,
        tag: v(p.tag as u64) as i32,
        bytes_sent: v(p.bytes_sent),
        bytes_recv: v(p.bytes_recv),
        comm_id: v(p.comm_id),
        root: v(p.root as u64) as i32,
        request_id: v(p.request_id),
        in_parallel,
        callsite: v(p.callsite),
        recv_peer: v(p.recv_peer as u64) as i32,
        recv_tag: v(p.recv_tag as u64) as i32,
        calls: v(p.calls.into()) as u32,
    }
}

/// Every field at the extreme `x` (`end_ns` too, so durations wrap).
fn extreme_omp(x: u64) -> OmpRecord {
    OmpRecord {
        thread: x as u32,
        kind: x as u8,
        variant: x as u8,
        start_ns: x as i64,
        end_ns: x.rotate_left(17) as i64,
        parallel_id: x,
        task_id: !x,
        codeptr: x,
        team_size: x as u32,
        requested_team_size: (x >> 32) as u32,
        count: x,
        chunk_start: x.wrapping_neg(),
        flags: x as u32,
    }
}

fn extreme_mpi(x: u64) -> MpiRecord {
    MpiRecord {
        thread: x as u32,
        call: x as u16,
        start_ns: x as i64,
        end_ns: x.rotate_left(17) as i64,
        peer: x as i32,
        tag: (x >> 32) as i32,
        bytes_sent: x,
        bytes_recv: !x,
        comm_id: x,
        root: !x as i32,
        request_id: x.wrapping_neg(),
        in_parallel: x & 1 == 1,
        callsite: x,
        recv_peer: (x >> 16) as i32,
        recv_tag: !x as i32,
        calls: (x >> 8) as u32,
    }
}

/// Frames exercising everything: random walks, extremes in every order
/// (every pair of consecutive extremes), an empty frame, a single row.
fn test_frames<R: SpoolRecord>(
    random: fn(&mut Rng, &R) -> R,
    extreme: fn(u64) -> R,
) -> Vec<Vec<R>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut frames = Vec::new();
    for len in [1000, 1, 0, 3000, 17] {
        let mut frame = Vec::with_capacity(len);
        let mut prev = R::default();
        for _ in 0..len {
            prev = random(&mut rng, &prev);
            frame.push(prev);
        }
        frames.push(frame);
    }
    let mut pairs = Vec::new();
    for &a in &EXTREMES {
        for &b in &EXTREMES {
            pairs.push(extreme(a));
            pairs.push(extreme(b));
        }
    }
    frames.push(pairs);
    frames.push(vec![extreme(u64::MAX)]);
    frames
}

fn write_frames<R: SpoolRecord>(path: &Path, frames: &[Vec<R>]) -> u64 {
    let mut w = SpoolWriter::<R>::create(path).unwrap();
    for frame in frames {
        w.append(frame).unwrap();
    }
    let rows: usize = frames.iter().map(Vec::len).sum();
    assert_eq!(w.rows(), rows as u64);
    assert_eq!(w.path(), path);
    let bytes = w.bytes();
    drop(w);
    assert_eq!(std::fs::metadata(path).unwrap().len(), bytes);
    bytes
}

/// Reads frame by frame: each frame's rows exactly, then the end.
fn assert_reads_back<R: SpoolRecord + PartialEq + std::fmt::Debug>(path: &Path, frames: &[Vec<R>]) {
    let mut r = SpoolReader::<R>::open(path).unwrap();
    let mut out = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        out.clear();
        assert!(r.next_frame(&mut out).unwrap(), "frame {i} missing");
        assert_eq!(&out, frame, "frame {i}");
    }
    assert!(!r.next_frame(&mut out).unwrap());
    assert!(!r.next_frame(&mut out).unwrap(), "the end stays the end");
    assert!(!r.truncated());
    let (all, truncated) = read_all::<R>(path).unwrap();
    assert!(!truncated);
    assert!(all.iter().eq(frames.iter().flatten()));
}

/// The per-record API and the writer's frame encoder give the same bytes, and
/// `decode` reads them back.
fn assert_codec_paths_agree<R: SpoolRecord + PartialEq + std::fmt::Debug>(frame: &[R]) {
    // Each record against the frame's last record with the same key.
    let mut per_record = Vec::new();
    let mut bases = vec![R::default(); R::KEYS];
    for r in frame {
        let at = per_record.len();
        per_record.resize(at + RECORD_ROOM, 0);
        let room = (&mut per_record[at..]).try_into().unwrap();
        let len = R::put_in(&bases, r, room);
        per_record.truncate(at + len);
        bases[r.key()] = *r;
    }
    // A dirty, reused buffer, as the writer's.
    let mut buf = vec![0xa5; 5];
    let end = R::encode_rows(frame, &mut buf, 3);
    assert_eq!(&buf[3..end], &per_record[..]);
    let mut input = &per_record[..];
    let mut bases = vec![R::default(); R::KEYS];
    for r in frame {
        let back = R::decode_in(&bases, &mut input).expect("decodes");
        assert_eq!(&back, r);
        bases[r.key()] = back;
    }
    assert!(input.is_empty());
}

#[test]
fn omp_frames_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("omp.spool");
    let frames = test_frames(random_omp, extreme_omp);
    write_frames(&path, &frames);
    assert_reads_back(&path, &frames);
    for frame in &frames {
        assert_codec_paths_agree(frame);
    }
}

#[test]
fn mpi_frames_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mpi.spool");
    let frames = test_frames(random_mpi, extreme_mpi);
    write_frames(&path, &frames);
    assert_reads_back(&path, &frames);
    for frame in &frames {
        assert_codec_paths_agree(frame);
    }
}

/// Each field alone going from any extreme to any other: the others stay put,
/// so this catches a field decoded with another's width or sign.
#[test]
fn each_field_round_trips_between_extremes() {
    type Setter<R> = fn(&mut R, u64);
    let omp: [Setter<OmpRecord>; 13] = [
        |r, x| r.thread = x as u32,
        |r, x| r.kind = x as u8,
        |r, x| r.variant = x as u8,
        |r, x| r.start_ns = x as i64,
        |r, x| r.end_ns = x as i64,
        |r, x| r.parallel_id = x,
        |r, x| r.task_id = x,
        |r, x| r.codeptr = x,
        |r, x| r.team_size = x as u32,
        |r, x| r.requested_team_size = x as u32,
        |r, x| r.count = x,
        |r, x| r.chunk_start = x,
        |r, x| r.flags = x as u32,
    ];
    let mpi: [Setter<MpiRecord>; 13] = [
        |r, x| r.thread = x as u32,
        |r, x| r.call = x as u16,
        |r, x| r.start_ns = x as i64,
        |r, x| r.end_ns = x as i64,
        |r, x| r.peer = x as i32,
        |r, x| r.tag = x as i32,
        |r, x| r.bytes_sent = x,
        |r, x| r.bytes_recv = x,
        |r, x| r.comm_id = x,
        |r, x| r.root = x as i32,
        |r, x| r.request_id = x,
        |r, x| r.in_parallel = x & 1 == 1,
        |r, x| r.callsite = x,
    ];
    fn check<R: SpoolRecord + PartialEq + std::fmt::Debug>(setters: &[Setter<R>]) {
        for set in setters {
            let mut frame = Vec::new();
            for &a in &EXTREMES {
                for &b in &EXTREMES {
                    let (mut ra, mut rb) = (R::default(), R::default());
                    set(&mut ra, a);
                    set(&mut rb, b);
                    frame.extend([ra, rb]);
                }
            }
            assert_codec_paths_agree(&frame);
        }
    }
    check(&omp);
    check(&mpi);
}

#[test]
fn empty_spool_and_empty_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.spool");
    let w = SpoolWriter::<OmpRecord>::create(&path).unwrap();
    assert_eq!((w.rows(), w.bytes()), (0, HEADER_LEN as u64));
    drop(w);
    assert_eq!(read_all::<OmpRecord>(&path).unwrap(), (vec![], false));

    let frames: Vec<Vec<OmpRecord>> = vec![vec![], vec![], vec![OmpRecord::default()], vec![]];
    let bytes = write_frames(&path, &frames);
    // Four frame headers and one record that changes nothing: its kind and mask.
    assert_eq!(bytes, (HEADER_LEN + 4 * FRAME_HEADER_LEN + 1 + 2) as u64);
    assert_reads_back(&path, &frames);
}

/// Frames of the collector's shape on the synthetic OpenMP trace: each
/// thread's rows in end-time order, 1024 at a time.
#[test]
fn synthetic_openmp_trace_takes_under_12_bytes_per_row() {
    let spec = OmpTraceSpec {
        threads: 4,
        events_per_rank: 100_000,
        ..OmpTraceSpec::default()
    };
    let mut per_thread = vec![Vec::new(); 4];
    for r in OmpGenerator::all(spec, 1) {
        per_thread[r.thread as usize].push(r);
    }
    let mut frames = Vec::new();
    for mut rows in per_thread {
        rows.sort_by_key(|r| r.end_ns);
        frames.extend(rows.chunks(1024).map(<[_]>::to_vec));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("omp.spool");
    let bytes = write_frames(&path, &frames);
    let rows: usize = frames.iter().map(Vec::len).sum();
    let per_row = bytes as f64 / rows as f64;
    assert!(per_row <= 12.0, "{per_row:.2} bytes per row");
    assert_reads_back(&path, &frames);
}

/// Writes `frames` and returns the file's bytes and each frame's offset.
fn spool_bytes<R: SpoolRecord>(path: &Path, frames: &[Vec<R>]) -> (Vec<u8>, Vec<usize>) {
    let mut w = SpoolWriter::<R>::create(path).unwrap();
    let mut offsets = Vec::new();
    for frame in frames {
        offsets.push(w.bytes() as usize);
        w.append(frame).unwrap();
    }
    drop(w);
    (std::fs::read(path).unwrap(), offsets)
}

fn small_omp_frames() -> Vec<Vec<OmpRecord>> {
    let mut rng = Rng(7);
    (0..3)
        .map(|_| {
            let mut prev = OmpRecord::default();
            (0..40)
                .map(|_| {
                    prev = random_omp(&mut rng, &prev);
                    prev
                })
                .collect()
        })
        .collect()
}

fn assert_names(err: &hyscope_format::FormatError, path: &Path) {
    let message = err.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "error does not name {}: {message}",
        path.display()
    );
    assert_eq!(err.path(), path);
}

/// A writer killed in the middle of its last frame: the complete frames are
/// all read, then the stream ends with `truncated()`; at a frame boundary it
/// is a complete, shorter spool.
#[test]
fn cut_last_frame_ends_the_stream_after_the_complete_frames() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.spool");
    let frames = small_omp_frames();
    let (bytes, offsets) = spool_bytes(&full, &frames);
    let last = offsets[2];
    let cut = dir.path().join("cut.spool");
    for len in last..=bytes.len() {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let mut r = SpoolReader::<OmpRecord>::open(&cut).unwrap();
        let mut out = Vec::new();
        for frame in &frames[..2] {
            out.clear();
            assert!(r.next_frame(&mut out).unwrap());
            assert_eq!(&out, frame);
        }
        out.clear();
        let complete = len == bytes.len();
        assert_eq!(r.next_frame(&mut out).unwrap(), complete, "cut at {len}");
        assert!(!r.next_frame(&mut out).unwrap());
        assert_eq!(r.truncated(), len != last && !complete, "cut at {len}");
        let (all, truncated) = read_all::<OmpRecord>(&cut).unwrap();
        assert_eq!(all.len(), if complete { 120 } else { 80 });
        assert_eq!(truncated, r.truncated());
    }
}

#[test]
fn cut_header_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.spool");
    let (bytes, _) = spool_bytes(&full, &small_omp_frames());
    let cut = dir.path().join("cut.spool");
    for len in 0..HEADER_LEN {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let err = SpoolReader::<OmpRecord>::open(&cut)
            .err()
            .expect("cut header");
        assert_names(&err, &cut);
        assert!(read_all::<OmpRecord>(&cut).is_err());
    }
    let missing = dir.path().join("missing.spool");
    assert_names(
        &SpoolReader::<OmpRecord>::open(&missing).err().unwrap(),
        &missing,
    );
}

/// Reads a whole (possibly corrupt) spool; an error must name the file.
fn read_checked(path: &Path) -> Result<usize, String> {
    match read_all::<OmpRecord>(path) {
        Ok((rows, _)) => Ok(rows.len()),
        Err(e) => {
            assert_names(&e, path);
            Err(e.to_string())
        }
    }
}

/// Rewrites `bytes` with `edit` applied, into `path`.
fn corrupt(path: &Path, bytes: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut b = bytes.to_vec();
    edit(&mut b);
    std::fs::write(path, &b).unwrap();
    path.to_path_buf()
}

fn set_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[test]
fn corrupt_frames_are_errors_naming_the_file_and_frame() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.spool");
    let (bytes, offsets) = spool_bytes(&full, &small_omp_frames());
    let mid = offsets[1];
    let (rows, len) = (get_u32(&bytes, mid), get_u32(&bytes, mid + 4));
    let bad = dir.path().join("bad.spool");
    let frame_error = |edit: &dyn Fn(&mut Vec<u8>)| {
        let path = corrupt(&bad, &bytes, |b| edit(b));
        let message = read_checked(&path).expect_err("corrupt frame");
        assert!(message.contains(&format!("byte offset {mid}")), "{message}");
    };
    // Lengths that do not match the rows.
    frame_error(&|b| set_u32(b, mid, rows + 1));
    frame_error(&|b| set_u32(b, mid, rows - 1));
    frame_error(&|b| set_u32(b, mid + 4, len - 1));
    frame_error(&|b| set_u32(b, mid + 4, len + 1));
    frame_error(&|b| set_u32(b, mid, len + 1));
    // A mask naming fields a record lacks; a varint running past its frame.
    frame_error(&|b| b[mid + FRAME_HEADER_LEN + 1] |= 0xe0);
    frame_error(&|b| b[offsets[2] - 1] = 0x80);
    // Any byte flipped: an error naming the file, or rows (a flipped value
    // that still decodes cannot be told from a real one), never a panic.
    for at in HEADER_LEN..bytes.len() {
        for flip in [0xff, 0x80, 0x01] {
            let path = corrupt(&bad, &bytes, |b| b[at] ^= flip);
            let _ = read_checked(&path);
        }
    }
    // Garbage after a good header.
    let mut rng = Rng(99);
    for _ in 0..200 {
        let n = rng.below(300) as usize;
        let path = corrupt(&bad, &bytes, |b| {
            b.truncate(HEADER_LEN);
            b.extend((0..n).map(|_| rng.next() as u8));
        });
        let _ = read_checked(&path);
    }
}

/// A corrupt frame stops the reader for good, and leaves `out` as it was.
#[test]
fn errors_are_final_and_leave_out_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.spool");
    let frames = small_omp_frames();
    let (bytes, offsets) = spool_bytes(&full, &frames);
    let bad = corrupt(&dir.path().join("bad.spool"), &bytes, |b| {
        let at = offsets[1];
        let rows = get_u32(b, at);
        set_u32(b, at, rows + 1);
    });
    let mut r = SpoolReader::<OmpRecord>::open(&bad).unwrap();
    let mut out = Vec::new();
    assert!(r.next_frame(&mut out).unwrap());
    assert_eq!(out, frames[0]);
    assert!(r.next_frame(&mut out).is_err());
    assert_eq!(out, frames[0]);
    assert_names(&r.next_frame(&mut out).unwrap_err(), &bad);
    assert_eq!(r.path(), bad);
}

#[test]
fn wrong_table_magic_or_version_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("omp.spool");
    let (bytes, _) = spool_bytes(&path, &small_omp_frames());
    let err = SpoolReader::<MpiRecord>::open(&path)
        .err()
        .expect("omp opened as mpi");
    assert_names(&err, &path);
    assert!(err.to_string().contains("`omp`"), "{err}");
    assert!(read_all::<MpiRecord>(&path).is_err());

    let bad = dir.path().join("bad.spool");
    for (what, edit) in [
        ("magic", (|b: &mut Vec<u8>| b[0] = b'X') as fn(&mut Vec<u8>)),
        ("version", |b| b[8] = 9),
        ("table code", |b| b[10] = 9),
    ] {
        corrupt(&bad, &bytes, edit);
        let err = SpoolReader::<OmpRecord>::open(&bad).err().expect(what);
        assert_names(&err, &bad);
    }
    let empty_mpi = dir.path().join("mpi.spool");
    SpoolWriter::<MpiRecord>::create(&empty_mpi).unwrap();
    assert!(SpoolReader::<OmpRecord>::open(&empty_mpi).is_err());
    assert_eq!(<MpiRecord as SpoolRecord>::TABLE, Table::Mpi);
}

/// A record type of its own: the trait's frame encoder and the reader work
/// for any `SpoolRecord`.
#[test]
fn other_record_types_use_the_trait_frame_encoder() {
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    struct Tick(u64);
    impl SpoolRecord for Tick {
        const TABLE: Table = Table::Samples;
        fn put(prev: &Self, cur: &Self, room: &mut [u8; RECORD_ROOM]) -> usize {
            room[..8].copy_from_slice(&(cur.0 ^ prev.0).to_le_bytes());
            8
        }
        fn decode(prev: &Self, input: &mut &[u8]) -> Option<Self> {
            let (b, rest) = input.split_first_chunk::<8>()?;
            *input = rest;
            Some(Tick(u64::from_le_bytes(*b) ^ prev.0))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ticks.spool");
    let frames = vec![
        (0..100).map(Tick).collect::<Vec<_>>(),
        vec![],
        vec![Tick(u64::MAX)],
    ];
    let bytes = write_frames(&path, &frames);
    assert_eq!(bytes, (HEADER_LEN + 3 * FRAME_HEADER_LEN + 101 * 8) as u64);
    assert_reads_back(&path, &frames);
    assert!(SpoolReader::<OmpRecord>::open(&path).is_err());
}

/// A frame handed over already encoded (a collector's block, written with one
/// `writev`) gives the same file, byte for byte, as the rows appended one
/// frame at a time, and the writer's counters match the file.
#[test]
fn pre_encoded_frames_give_the_same_file_as_appended_rows() {
    let dir = tempfile::tempdir().unwrap();
    let frames = test_frames(random_omp, extreme_omp);
    let appended = dir.path().join("appended.spool");
    write_frames(&appended, &frames);
    let encoded = dir.path().join("encoded.spool");
    let mut w = SpoolWriter::<OmpRecord>::create(&encoded).unwrap();
    let mut payload = Vec::new();
    for frame in &frames {
        let end = OmpRecord::encode_rows(frame, &mut payload, 0);
        w.append_encoded(frame.len() as u32, &payload[..end])
            .unwrap();
    }
    let rows: usize = frames.iter().map(Vec::len).sum();
    assert_eq!(w.rows(), rows as u64);
    let bytes = w.bytes();
    drop(w);
    let file = std::fs::read(&encoded).unwrap();
    assert_eq!(file.len() as u64, bytes);
    assert!(file == std::fs::read(&appended).unwrap(), "same bytes");
    assert_reads_back(&encoded, &frames);
}

/// A spool of version 4 (the previous hyscope's, e.g. left behind by a
/// killed process) still reads, its MPI records with no receive side. The
/// file is written byte by byte from the version-4 layout (module docs of
/// `spool`), not by this crate's encoder.
#[test]
fn version_4_spools_read_with_no_receive_side() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mpi-rank0.spool");
    let mut bytes = b"HYSPOOL\0".to_vec();
    bytes.extend([4, 0, 1, 0, 0, 0, 0, 0]); // version 4, table mpi
    bytes.extend([2, 0, 0, 0, 17, 0, 0, 0]); // 2 rows, 17 bytes
    // An MPI_Send of 64 bytes to rank 1, tag 7, on world, at 1000 ns for
    // 500 ns: mask of start, duration, call, peer, tag, bytes_sent, comm_id,
    // root, then their zigzag varints against the default record.
    bytes.extend([
        0x77, 0x0c, 0xd0, 0x0f, 0xe8, 0x07, 0x14, 0x02, 0x0e, 0x80, 0x01, 0x02, 0x01,
    ]);
    // The same 1000 ns later: the start's change only.
    bytes.extend([0x01, 0x00, 0xd0, 0x0f]);
    std::fs::write(&path, &bytes).unwrap();
    let (back, truncated) = read_all::<MpiRecord>(&path).unwrap();
    assert!(!truncated);
    let send = MpiRecord {
        call: 10,
        start_ns: 1000,
        end_ns: 1500,
        peer: 1,
        tag: 7,
        bytes_sent: 64,
        comm_id: 1,
        root: -1,
        ..MpiRecord::default()
    };
    let later = MpiRecord {
        start_ns: 2000,
        end_ns: 2500,
        ..send
    };
    assert_eq!(back, [send, later]);
    assert!(back.iter().all(|r| (r.recv_peer, r.recv_tag) == (-1, -1)));
    // Nor `calls` (version 6): one call each.
    assert!(back.iter().all(|r| r.calls == 1));
    // Versions before 4 and after this crate's are refused, naming the file.
    for v in [3u16, hyscope_format::spool::VERSION + 1] {
        bytes[8..10].copy_from_slice(&v.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let e = read_all::<MpiRecord>(&path).unwrap_err().to_string();
        assert!(
            e.contains("mpi-rank0.spool") && e.contains(&format!("spool version {v}")),
            "{e}"
        );
    }
}
