//! Spool → Parquet parts: every spooled row ends up in the trace exactly once,
//! whatever the number of encoder threads, and a killed process's spool is
//! recovered up to its last complete frame.

use std::path::Path;

use hyscope_format::spool::to_parquet::{leftover_spools, recover_spool, spool_to_parts};
use hyscope_format::{
    Manifest, MpiRecord, OmpRecord, Table, Trace, WriterOptions, spool::SpoolWriter,
};

/// `threads` threads × `per_thread` chunk-like rows, spooled in frames of 1024 rows of one thread.
fn omp_rows(threads: u32, per_thread: u64) -> Vec<OmpRecord> {
    let mut rows = Vec::new();
    for t in 0..threads {
        for i in 0..per_thread {
            rows.push(OmpRecord {
                thread: t,
                kind: 4,
                variant: 1,
                start_ns: 1_000_000 + i as i64 * 2_000 + t as i64,
                end_ns: 1_000_000 + i as i64 * 2_000 + 1_500 + t as i64,
                parallel_id: 1 << 40 | (i / 100),
                task_id: (t as u64 + 1) << 40 | 7,
                codeptr: 0x40_1000 + (i % 3) * 16,
                count: 16,
                chunk_start: i * 16,
                ..OmpRecord::default()
            });
        }
    }
    rows
}

fn spool_frames(path: &Path, rows: &[OmpRecord]) {
    let mut w = SpoolWriter::<OmpRecord>::create(path).unwrap();
    for frame in rows.chunks(1024) {
        w.append(frame).unwrap();
    }
}

fn small_parts() -> WriterOptions {
    WriterOptions {
        rows_per_part: 50_000,
        rows_per_row_group: 8_192,
        zstd_level: 3,
        ..WriterOptions::default()
    }
}

fn read_back(dir: &Path) -> Vec<OmpRecord> {
    Manifest::new().write(dir).unwrap();
    let trace = Trace::open(dir).unwrap();
    let mut rows: Vec<OmpRecord> = trace
        .read_records::<OmpRecord>(&Default::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    rows.sort_by_key(|r| (r.thread, r.start_ns));
    rows
}

#[test]
fn every_row_once_with_one_and_several_encoders() {
    let rows = omp_rows(3, 40_000); // 120 000 rows: several parts and row groups
    for threads in [1, 3] {
        let tmp = tempfile::tempdir().unwrap();
        let spool = tmp.path().join("omp.spool");
        spool_frames(&spool, &rows);
        let mut seen = 0u64;
        let mut note = |b: &[OmpRecord]| seen += b.len() as u64;
        let stats =
            spool_to_parts(&spool, tmp.path(), 0, threads, small_parts(), &mut note).unwrap();
        assert_eq!(stats.rows, 120_000);
        assert_eq!(seen, 120_000);
        assert!(!stats.truncated);
        assert_eq!(
            stats.parts, 3,
            "120 000 rows at 50 000 per part ({threads} encoders)"
        );
        let mut expected = rows.clone();
        expected.sort_by_key(|r| (r.thread, r.start_ns));
        assert_eq!(read_back(tmp.path()), expected, "{threads} encoders");
    }
}

#[test]
fn mpi_spool_round_trips_through_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let spool = tmp.path().join("mpi.spool");
    let rows: Vec<MpiRecord> = (0..5000)
        .map(|i| MpiRecord {
            thread: 0,
            call: 7,
            start_ns: i * 1000,
            end_ns: i * 1000 + 300,
            peer: (i % 4) as i32,
            tag: 9,
            bytes_sent: 4096,
            callsite: 0x40_2000,
            ..MpiRecord::default()
        })
        .collect();
    let mut w = SpoolWriter::<MpiRecord>::create(&spool).unwrap();
    w.append(&rows).unwrap();
    drop(w);
    let stats = spool_to_parts(
        &spool,
        tmp.path(),
        2,
        2,
        small_parts(),
        &mut |_: &[MpiRecord]| {},
    )
    .unwrap();
    assert_eq!(stats.rows, 5000);
    Manifest::new().write(tmp.path()).unwrap();
    let trace = Trace::open(tmp.path()).unwrap();
    assert_eq!(trace.ranks(), vec![2]);
    let back: Vec<MpiRecord> = trace
        .read_records::<MpiRecord>(&Default::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert_eq!(back, rows);
}

#[test]
fn a_killed_ranks_spool_is_recovered_up_to_its_last_complete_frame() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("omp-rank3-pid4242.spool");
    let rows = omp_rows(1, 3 * 1024);
    spool_frames(&path, &rows);
    // Cut the last frame short, as a process killed mid-write leaves it.
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 5).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a spool").unwrap();

    let found = leftover_spools(tmp.path());
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].table, found[0].rank), (Table::Omp, 3));
    let stats = recover_spool(tmp.path(), &found[0], 2).unwrap();
    assert!(stats.truncated);
    assert_eq!(stats.rows, 2 * 1024, "two complete frames of 1024 rows");
    assert!(!path.exists(), "the recovered spool is removed");
    let back = read_back(tmp.path());
    assert_eq!(back, rows[..2048].to_vec());
}

/// A tail frame (what the collector's crash handler writes: a whole block
/// whose first rows an earlier frame holds) yields only the rows after them.
#[test]
fn a_tail_frame_adds_only_the_rows_after_those_spooled_before() {
    use hyscope_format::spool::{SpoolReader, SpoolRecord, tail_frame_header};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("omp-rank0-pid1.spool");
    let rows = omp_rows(1, 10);
    let mut w = SpoolWriter::<OmpRecord>::create(&path).unwrap();
    w.append(&rows[..4]).unwrap();
    drop(w);
    // The whole block of 10 rows as one payload, the first 4 to be skipped.
    let mut payload = Vec::new();
    let end = OmpRecord::encode_rows(&rows, &mut payload, 0);
    payload.truncate(end);
    let head = tail_frame_header(4, payload.len() as u32).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&head);
    bytes.extend_from_slice(&payload);
    std::fs::write(&path, bytes).unwrap();
    let mut reader = SpoolReader::<OmpRecord>::open(&path).unwrap();
    let mut back = Vec::new();
    while reader.next_frame(&mut back).unwrap() {}
    assert_eq!(back, rows);
}

/// A block spooled in parts as the collector's writer does while its thread
/// still fills it: the published bytes as a frame (no flush took any), then
/// the whole block again as tail frames skipping what was spooled, each from
/// one snapshot of (rows, bytes) published together. Every row reads back
/// once, in order, and the writer's row count matches.
#[test]
fn a_block_spooled_in_parts_as_it_fills_reads_back_every_row_once() {
    use hyscope_format::spool::SpoolReader;
    use hyscope_format::spool::block::{Block, Stream};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("omp-rank0-pid1.spool");
    let rows = omp_rows(1, 3000);
    let stream = Stream::<OmpRecord>::new();
    let block = Block::<OmpRecord>::new().unwrap();
    stream.install(&*block as *const Block<OmpRecord> as *mut Block<OmpRecord>);
    let mut w = SpoolWriter::<OmpRecord>::create(&path).unwrap();
    let mut spooled = 0;
    for part in [700, 1300, 2000, 3000] {
        for r in &rows[spooled..part] {
            // SAFETY: as above.
            assert!(unsafe { stream.push(r) }, "room for 3000 rows");
        }
        let (n, len) = block.published();
        assert_eq!(n, part);
        // SAFETY: len was read with acquire.
        let bytes = unsafe { block.bytes(len) };
        if spooled == 0 {
            w.append_encoded(n as u32, bytes).unwrap();
        } else {
            w.append_tail(spooled as u32, n as u32, bytes).unwrap();
        }
        spooled = n;
    }
    assert_eq!(w.rows(), 3000);
    assert!(w.append_tail(5, 4, &[]).is_err(), "a skip past the block");
    drop(w);
    let mut reader = SpoolReader::<OmpRecord>::open(&path).unwrap();
    let mut back = Vec::new();
    while reader.next_frame(&mut back).unwrap() {}
    assert_eq!(back, rows);
}

#[test]
fn end_notes_round_trip_at_their_fixed_size() {
    use hyscope_format::ProcessEnd;
    use hyscope_format::spool::to_parquet::{END_NOTE_BYTES, EndNote};
    for end in [
        ProcessEnd::Running,
        ProcessEnd::Finished,
        ProcessEnd::Killed,
        ProcessEnd::Signal { signal: 11 },
        ProcessEnd::Aborted { code: -3 },
        ProcessEnd::Exec {
            path: String::new(),
        },
    ] {
        let note = EndNote {
            disk_full: end == ProcessEnd::Finished,
            end,
            dropped: u64::MAX,
        };
        let bytes = note.encode();
        assert_eq!(bytes.len(), END_NOTE_BYTES);
        let back = EndNote::parse(std::str::from_utf8(&bytes).unwrap()).unwrap();
        assert_eq!(
            back,
            EndNote {
                dropped: i64::MAX as u64,
                ..note
            }
        );
    }
    assert_eq!(EndNote::parse("not a note"), None);
    // An exec's path does not fit the note: its rank file has it.
    let exec = EndNote {
        end: ProcessEnd::Exec {
            path: "/usr/bin/next-program".into(),
        },
        disk_full: false,
        dropped: 0,
    };
    let back = EndNote::parse(std::str::from_utf8(&exec.encode()).unwrap()).unwrap();
    assert_eq!(
        back.end,
        ProcessEnd::Exec {
            path: String::new()
        }
    );
}

/// A program that ended by an exec but could not encode its spool (a full
/// disk) left it with an end note saying `exec`, and a rank file that names
/// the program it exec'd: recovery encodes the spool and keeps that path.
#[test]
fn a_spool_left_at_an_exec_keeps_the_programs_path() {
    use hyscope_format::spool::to_parquet::{
        EndNote, end_note_name, leftover_processes, recover_process,
    };
    use hyscope_format::{Layout, ProcessEnd, RankInfo};
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    let rows = omp_rows(1, 100);
    let mut w = SpoolWriter::<OmpRecord>::create(&spool.join("omp-rank0-pid4242.spool")).unwrap();
    w.append(&rows).unwrap();
    drop(w);
    let exec = |path: &str| ProcessEnd::Exec { path: path.into() };
    let note = EndNote {
        end: exec("/usr/bin/next"),
        disk_full: true,
        dropped: 0,
    };
    std::fs::write(spool.join(end_note_name(0, 4242)), note.encode()).unwrap();
    RankInfo {
        rank: 0,
        pid: 4242,
        end: Some(exec("/usr/bin/next")),
        ..RankInfo::default()
    }
    .write_in(dir.path(), Layout::Flat)
    .unwrap();
    let left = leftover_processes(dir.path());
    assert_eq!(left.len(), 1);
    let got = recover_process(dir.path(), &left[0], 1).unwrap();
    assert_eq!(got.events.omp, 100);
    assert_eq!(got.end, Some(exec("/usr/bin/next")));
    let info = RankInfo::read(&Layout::Flat.rank_file(dir.path(), 0)).unwrap();
    assert_eq!(info.end, Some(exec("/usr/bin/next")));
    assert!(info.disk_full && info.recovered);
}
