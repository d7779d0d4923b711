//! Write with the writer, read back with the reader: equal, with parts, ranks,
//! projection, rank filter and time-range filter (row-group pruning included).

use crate::common;

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use hyscope_format::{
    Manifest, MpiRecord, OmpRecord, PartScan, PartWriter, RankInfo, SampleRecord, ScanOptions,
    SymbolRecord, Table, Trace, mpi_call, part_path, read_part_records,
};

use common::*;

fn two_rank_trace(dir: &std::path::Path) -> BTreeMap<u32, Vec<OmpRecord>> {
    let mut per_rank = BTreeMap::new();
    for rank in [0u32, 1] {
        let mut rows = chunks(0, 250, 1_000_000);
        rows.extend(chunks(1, 250, 1_000_500));
        per_rank.insert(rank, rows);
    }
    let list: Vec<_> = per_rank.iter().map(|(r, v)| (*r, v.clone())).collect();
    // 500 rows per rank, 120 rows per part -> 5 parts per rank; 40 rows per row group.
    write_omp_trace(dir, &list, &small(120, 40));
    per_rank
}

#[test]
fn several_parts_and_ranks_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let expected = two_rank_trace(dir.path());
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.ranks(), vec![0, 1]);
    let parts = trace.parts(Table::Omp);
    assert_eq!(parts.len(), 10);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!((p.rank, p.index), (i as u32 / 5, i as u32 % 5));
        assert_eq!(p.path, part_path(dir.path(), Table::Omp, p.rank, p.index));
        assert!(p.bytes > 0);
    }
    assert_eq!(
        trace.table_bytes(Table::Omp),
        parts.iter().map(|p| p.bytes).sum::<u64>()
    );
    assert!(trace.parts(Table::Mpi).is_empty());

    let rows: Vec<(u32, OmpRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    let want: Vec<(u32, OmpRecord)> = expected
        .iter()
        .flat_map(|(r, v)| v.iter().map(move |x| (*r, *x)))
        .collect();
    assert_eq!(rows, want);

    // The streaming scan gives the same rows, with the rank column first.
    let mut n = 0;
    let mut rank_rows = BTreeMap::<u32, usize>::new();
    for batch in trace.scan(Table::Omp, &ScanOptions::default()) {
        let batch = batch.unwrap();
        assert_eq!(batch.schema().field(0).name(), "rank");
        assert_eq!(
            batch.num_columns(),
            1 + Table::Omp.file_schema().fields().len()
        );
        for r in batch.column(0).as_primitive::<UInt32Type>().values() {
            *rank_rows.entry(*r).or_default() += 1;
        }
        n += batch.num_rows();
    }
    assert_eq!(n, 1000);
    assert_eq!(rank_rows, BTreeMap::from([(0, 500), (1, 500)]));
}

#[test]
fn part_boundaries_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let rows = chunks(0, 300, 0);
    let mut w = PartWriter::create(dir.path(), Table::Omp, 3, small(100, 30)).unwrap();
    // Uneven writes across part boundaries.
    w.write_records(&rows[..7]).unwrap();
    w.write_records(&rows[7..250]).unwrap();
    assert_eq!(w.rows(), 250);
    w.flush().unwrap(); // closes part 2 after 50 rows
    w.write_records(&rows[250..]).unwrap();
    let stats = w.finish().unwrap();
    assert_eq!((stats.rows, stats.parts), (300, 4));
    write_manifest(dir.path(), [3].into_iter());
    let trace = Trace::open(dir.path()).unwrap();
    let counts: Vec<usize> = trace
        .parts(Table::Omp)
        .iter()
        .map(|p| {
            read_part_records::<OmpRecord>(p, &ScanOptions::default())
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(counts, vec![100, 100, 50, 50]);
    let back: Vec<OmpRecord> = trace
        .read_records(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(r, x)| {
            assert_eq!(r, 3);
            x
        })
        .collect();
    assert_eq!(back, rows);
}

#[test]
fn a_second_writer_appends_after_existing_parts() {
    let dir = tempfile::tempdir().unwrap();
    let rows = chunks(0, 20, 0);
    for half in rows.chunks(10) {
        let mut w = PartWriter::create(dir.path(), Table::Omp, 0, small(100, 100)).unwrap();
        w.write_records(half).unwrap();
        w.finish().unwrap();
    }
    write_manifest(dir.path(), [0].into_iter());
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(
        trace
            .parts(Table::Omp)
            .iter()
            .map(|p| p.index)
            .collect::<Vec<_>>(),
        [0, 1]
    );
    let back: Vec<_> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect();
    assert_eq!(back, rows);
}

#[test]
fn write_omp_sorts_by_thread_kind_start_longest_first() {
    use hyscope_format::OmpKind;
    let dir = tempfile::tempdir().unwrap();
    let row = |thread, kind: OmpKind, start_ns, end_ns| OmpRecord {
        thread,
        kind: kind as u8,
        start_ns,
        end_ns,
        ..OmpRecord::default()
    };
    let rows = vec![
        row(1, OmpKind::Chunk, 50, 60),
        row(0, OmpKind::Sync, 90, 95),
        row(0, OmpKind::Chunk, 30, 40),
        row(0, OmpKind::ImplicitTask, 0, 100),
        row(0, OmpKind::Chunk, 10, 20),
        row(0, OmpKind::Parallel, 0, 100),
        row(1, OmpKind::ImplicitTask, 5, 99),
        row(0, OmpKind::Work, 5, 80),
        row(0, OmpKind::Work, 5, 88),
    ];
    let mut w = PartWriter::create(dir.path(), Table::Omp, 0, small(100, 100)).unwrap();
    w.write_omp(&rows).unwrap();
    w.finish().unwrap();
    write_manifest(dir.path(), [0].into_iter());
    let back: Vec<(u32, u8, i64, i64)> = Trace::open(dir.path())
        .unwrap()
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| (r.thread, r.kind, r.start_ns, r.end_ns))
        .collect();
    let k = |kind: OmpKind| kind as u8;
    assert_eq!(
        back,
        [
            (0, k(OmpKind::Parallel), 0, 100),
            (0, k(OmpKind::ImplicitTask), 0, 100),
            (0, k(OmpKind::Work), 5, 88),
            (0, k(OmpKind::Work), 5, 80),
            (0, k(OmpKind::Chunk), 10, 20),
            (0, k(OmpKind::Chunk), 30, 40),
            (0, k(OmpKind::Sync), 90, 95),
            (1, k(OmpKind::ImplicitTask), 5, 99),
            (1, k(OmpKind::Chunk), 50, 60),
        ]
    );
}

#[test]
fn projection_keeps_file_order_after_rank() {
    let dir = tempfile::tempdir().unwrap();
    let expected = two_rank_trace(dir.path());
    let trace = Trace::open(dir.path()).unwrap();
    let options = ScanOptions {
        columns: Some(vec!["start_ns".into(), "thread".into()]),
        ..ScanOptions::default()
    };
    let mut starts = Vec::new();
    for batch in trace.scan(Table::Omp, &options) {
        let batch = batch.unwrap();
        let names: Vec<_> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["rank", "thread", "start_ns"]);
        starts.extend_from_slice(batch.column(2).as_primitive::<Int64Type>().values());
    }
    let want: Vec<i64> = expected.values().flatten().map(|r| r.start_ns).collect();
    assert_eq!(starts, want);

    // A column that does not exist is an error naming the file, not a panic.
    let bad = ScanOptions {
        columns: Some(vec!["no_such".into()]),
        ..ScanOptions::default()
    };
    let err = trace.scan(Table::Omp, &bad).next().unwrap().unwrap_err();
    assert!(
        matches!(err, hyscope_format::FormatError::Schema { .. }),
        "{err}"
    );
    assert_eq!(err.path(), trace.parts(Table::Omp)[0].path);
    assert!(err.to_string().contains("no_such"));
}

#[test]
fn rank_filter() {
    let dir = tempfile::tempdir().unwrap();
    let expected = two_rank_trace(dir.path());
    let trace = Trace::open(dir.path()).unwrap();
    let options = ScanOptions {
        ranks: Some(vec![1]),
        ..ScanOptions::default()
    };
    let rows: Vec<(u32, OmpRecord)> = trace.read_records(&options).unwrap();
    assert_eq!(rows.len(), 500);
    assert!(rows.iter().all(|(r, _)| *r == 1));
    assert_eq!(
        rows.into_iter().map(|x| x.1).collect::<Vec<_>>(),
        expected[&1]
    );
    let scanned: usize = trace
        .scan(Table::Omp, &options)
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(scanned, 500);
    let none = ScanOptions {
        ranks: Some(vec![7]),
        ..ScanOptions::default()
    };
    assert_eq!(trace.scan(Table::Omp, &none).count(), 0);
}

#[test]
fn time_range_filter_keeps_overlapping_rows() {
    let dir = tempfile::tempdir().unwrap();
    let expected = two_rank_trace(dir.path());
    let trace = Trace::open(dir.path()).unwrap();
    for (from, to) in [
        (1_050_000, 1_060_000),
        (0, 999_999),
        (1_000_950, 1_000_999),
        (1_249_000, 2_000_000),
    ] {
        let options = ScanOptions {
            time_range: Some((from, to)),
            ..ScanOptions::default()
        };
        let got: Vec<(u32, OmpRecord)> = trace.read_records(&options).unwrap();
        let want: Vec<(u32, OmpRecord)> = expected
            .iter()
            .flat_map(|(r, v)| v.iter().map(move |x| (*r, *x)))
            .filter(|(_, x)| x.start_ns <= to && x.end_ns >= from)
            .collect();
        assert_eq!(got, want, "window {from}..{to}");
        // The same rows one at a time, and their times alone.
        let mut streamed = Vec::new();
        trace
            .for_each_record::<OmpRecord>(&options, |r, x| streamed.push((r, x)))
            .unwrap();
        assert_eq!(streamed, want);
        let mut times = Vec::new();
        trace
            .for_each_time(Table::Omp, &options, |r, s, e| times.push((r, s, e)))
            .unwrap();
        let want_times: Vec<(u32, i64, i64)> = want
            .iter()
            .map(|(r, x)| (*r, x.start_ns, x.end_ns))
            .collect();
        assert_eq!(times, want_times);
        // Same through the projected scan (time columns not projected).
        let projected = ScanOptions {
            columns: Some(vec!["count".into()]),
            time_range: Some((from, to)),
            ..ScanOptions::default()
        };
        let n: usize = trace
            .scan(Table::Omp, &projected)
            .map(|b| {
                let b = b.unwrap();
                assert_eq!(b.num_columns(), 2);
                b.num_rows()
            })
            .sum();
        assert_eq!(n, want.len());
    }
    // Exact counts for one window: thread 0 rows 50..=60 overlap [1_050_000, 1_060_000]
    // (row 49 ends at 1_049_900), thread 1 rows 49..=59 (starts 1_049_500 .. 1_059_500), per rank.
    let options = ScanOptions {
        time_range: Some((1_050_000, 1_060_000)),
        ..ScanOptions::default()
    };
    assert_eq!(
        trace.read_records::<OmpRecord>(&options).unwrap().len(),
        2 * (11 + 11)
    );
}

#[test]
fn time_range_prunes_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    // One part of 1000 rows in 10 row groups of 100 rows, sorted by start.
    let rows = chunks(0, 1000, 0);
    write_omp_trace(dir.path(), &[(0, rows.clone())], &small(10_000, 100));
    let trace = Trace::open(dir.path()).unwrap();
    let part = &trace.parts(Table::Omp)[0];
    let all = PartScan::open(part, &ScanOptions::default()).unwrap();
    assert_eq!((all.row_groups_read(), all.row_groups_total()), (10, 10));
    // Rows 250..=349 start in [250_000, 349_000]: groups 2 and 3 only.
    let window = ScanOptions {
        time_range: Some((250_000, 349_000)),
        ..ScanOptions::default()
    };
    let scan = PartScan::open(part, &window).unwrap();
    assert_eq!((scan.row_groups_read(), scan.row_groups_total()), (2, 10));
    let n: usize = scan.map(|b| b.unwrap().num_rows()).sum();
    // Row 249 ends at 249_900 < 250_000; row 349 starts at 349_000.
    assert_eq!(n, 100);
    // A window inside one group reads one group.
    let one = ScanOptions {
        time_range: Some((512_000, 512_100)),
        ..ScanOptions::default()
    };
    let scan = PartScan::open(part, &one).unwrap();
    assert_eq!(scan.row_groups_read(), 1);
    assert_eq!(scan.map(|b| b.unwrap().num_rows()).sum::<usize>(), 1);
    // A window after the end reads nothing.
    let after = ScanOptions {
        time_range: Some((5_000_000, 6_000_000)),
        ..ScanOptions::default()
    };
    let scan = PartScan::open(part, &after).unwrap();
    assert_eq!(scan.row_groups_read(), 0);
    assert_eq!(scan.count(), 0);
}

#[test]
fn mpi_samples_symbols_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mpi: Vec<MpiRecord> = (0..50)
        .map(|i| MpiRecord {
            thread: 0,
            call: if i % 2 == 0 {
                mpi_call::MPI_Isend
            } else {
                mpi_call::REQUEST_COMPLETE
            },
            start_ns: 100 * i,
            end_ns: 100 * i + 40,
            peer: 1,
            tag: 7,
            bytes_sent: 4096,
            bytes_recv: 0,
            comm_id: 1,
            root: -1,
            request_id: 1 + i as u64 / 2,
            in_parallel: i % 3 == 0,
            callsite: 0x401000,
            ..MpiRecord::default()
        })
        .collect();
    let samples: Vec<SampleRecord> = (0..30)
        .map(|i| SampleRecord {
            time_ns: 1_000_000 * i,
            metric: if i % 2 == 0 {
                "mem.vmrss"
            } else {
                "energy.pkg.0"
            }
            .into(),
            key: -1,
            value: i as f64 * 1.5,
        })
        .collect();
    let symbols = vec![
        SymbolRecord {
            address: 0x401a20,
            module: "/app".into(),
            function: Some("main._omp_fn.0".into()),
            file: Some("app.c".into()),
            line: Some(42),
            module_offset: Some(0x401a20),
            module_build_id: Some("9f2c6a0e4b1d".into()),
        },
        SymbolRecord {
            address: 0x7f00_0000_1000,
            module: "/usr/lib/libm.so.6".into(),
            function: None,
            file: None,
            line: None,
            module_offset: Some(0x1000),
            module_build_id: None,
        },
    ];
    let opts = small(16, 8);
    let mut w = PartWriter::create(dir.path(), Table::Mpi, 0, opts.clone()).unwrap();
    w.write_records(&mpi).unwrap();
    assert_eq!(w.finish().unwrap().parts, 4);
    let mut w = PartWriter::create(dir.path(), Table::Samples, 1, opts.clone()).unwrap();
    w.write_records(&samples).unwrap();
    w.finish().unwrap();
    let mut w = PartWriter::create(dir.path(), Table::Symbols, 0, opts).unwrap();
    w.write_records(&symbols).unwrap();
    w.finish().unwrap();
    write_manifest(dir.path(), [0, 1].into_iter());

    let trace = Trace::open(dir.path()).unwrap();
    let all = ScanOptions::default();
    let back: Vec<_> = trace
        .read_records::<MpiRecord>(&all)
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect();
    assert_eq!(back, mpi);
    let back: Vec<_> = trace.read_records::<SampleRecord>(&all).unwrap();
    assert!(back.iter().all(|(r, _)| *r == 1));
    assert_eq!(back.into_iter().map(|x| x.1).collect::<Vec<_>>(), samples);
    let back: Vec<_> = trace
        .read_records::<SymbolRecord>(&all)
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect();
    assert_eq!(back, symbols);
    // Time filter on samples uses time_ns; symbols have no time column and ignore it.
    let window = ScanOptions {
        time_range: Some((2_000_000, 4_000_000)),
        ..ScanOptions::default()
    };
    assert_eq!(
        trace.read_records::<SampleRecord>(&window).unwrap().len(),
        3
    );
    assert_eq!(
        trace.read_records::<SymbolRecord>(&window).unwrap().len(),
        2
    );
    assert_eq!(trace.read_records::<MpiRecord>(&window).unwrap().len(), 0);
}

#[test]
fn open_tmp_parts_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let rows = chunks(0, 10, 0);
    let mut w = PartWriter::create(dir.path(), Table::Omp, 0, small(4, 4)).unwrap();
    w.write_records(&rows).unwrap(); // parts 0 and 1 closed, part 2 open with 2 rows
    let tmp = part_path(dir.path(), Table::Omp, 0, 2).with_extension("parquet.tmp");
    assert!(tmp.exists());
    write_manifest(dir.path(), [0].into_iter());
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.parts(Table::Omp).len(), 2);
    assert_eq!(
        trace
            .read_records::<OmpRecord>(&ScanOptions::default())
            .unwrap()
            .len(),
        8
    );
    // A leftover tmp from a crashed writer (garbage) is ignored too.
    std::fs::write(
        part_path(dir.path(), Table::Omp, 0, 9).with_extension("parquet.tmp"),
        b"junk",
    )
    .unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(
        trace
            .read_records::<OmpRecord>(&ScanOptions::default())
            .unwrap()
            .len(),
        8
    );
    drop(w); // drop closes the open part
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(
        trace
            .read_records::<OmpRecord>(&ScanOptions::default())
            .unwrap()
            .len(),
        10
    );
}

#[test]
fn manifest_round_trip_and_rank_files_merge() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Manifest::new();
    m.command = vec!["./app".into(), "-n".into(), "3".into()];
    m.hosts = vec!["node0".into()];
    m.world_size = 2;
    m.ranks = vec![RankInfo {
        rank: 0,
        host: "node0".into(),
        ..RankInfo::default()
    }];
    m.metrics.insert(
        "mem.vmrss".into(),
        hyscope_format::MetricInfo {
            unit: "bytes".into(),
            description: "RSS".into(),
        },
    );
    m.write(dir.path()).unwrap();
    assert_eq!(Manifest::read(dir.path()).unwrap(), m);
    // No temp file is left behind by the atomic write.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["manifest.json"]);

    let r1 = RankInfo {
        rank: 1,
        host: "node0".into(),
        pid: 42,
        finished: true,
        ..RankInfo::default()
    };
    r1.write(dir.path()).unwrap();
    let r0 = RankInfo {
        rank: 0,
        host: "node0".into(),
        pid: 41,
        dropped_events: 3,
        ..RankInfo::default()
    };
    r0.write(dir.path()).unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.ranks(), vec![0, 1]);
    assert_eq!(trace.manifest.ranks, vec![r0, r1]);
}

#[test]
fn parts_decode_into_a_buffer_by_row_group_ranges() {
    use hyscope_format::{part_row_group_rows, read_part_records_into, read_part_row_groups_into};
    let dir = tempfile::tempdir().unwrap();
    let rows = chunks(0, 300, 0);
    let mut w = PartWriter::create(dir.path(), Table::Omp, 3, small(100, 30)).unwrap();
    w.write_records(&rows).unwrap();
    w.finish().unwrap();
    write_manifest(dir.path(), [3].into_iter());
    let trace = Trace::open(dir.path()).unwrap();
    let o = ScanOptions::default();
    // Pieces of one row group, then a whole part, into one reused buffer.
    let mut buf = vec![OmpRecord::default(); 300];
    let mut n = 0;
    for p in trace.parts(Table::Omp) {
        let groups = part_row_group_rows(p, &o).unwrap();
        assert_eq!(groups, vec![30, 30, 30, 10]);
        for (g, &len) in groups.iter().enumerate() {
            let k = read_part_row_groups_into(p, &o, g..g + 1, &mut buf[n..n + len]).unwrap();
            assert_eq!(k, len);
            n += k;
        }
    }
    assert_eq!(buf, rows);
    buf.fill(OmpRecord::default());
    let p = &trace.parts(Table::Omp)[1];
    assert_eq!(read_part_records_into(p, &o, &mut buf).unwrap(), 100);
    assert_eq!(buf[..100], rows[100..200]);
    // A buffer too small is an error, not a panic.
    assert!(read_part_records_into(p, &o, &mut buf[..99]).is_err());
}
