//! Aggregated timeline lines for the TUI and the GUI: what a line of several
//! ranks shows is the analyzer's ([`hyscope_analyzer::timeline::Grouping`],
//! [`RankCells::aggregate`]); this module only decides where it is
//! computed. A line costs a query of every thread of its ranks (or of every
//! rank's bins in the coarse overview), so with thousands of ranks the lines
//! are computed on a worker thread and a frame draws the last lines
//! computed, placed by their own cells' times, while the worker catches up
//! with the current window and source: a frame never waits for the
//! aggregation. Small requests are computed at once, on the UI thread.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use hyscope_analyzer::timeline::{Group, GroupCell, GroupRow, Overview, RankCells, TimelineIndex};

/// What a timeline's lines are computed from: the index, else the coarse
/// overview (of the ranks read so far).
#[derive(Debug, Clone)]
pub enum Source {
    Index(Arc<TimelineIndex>),
    Coarse(Arc<Overview>),
}

impl Source {
    pub fn cells(&self) -> &dyn RankCells {
        match self {
            Source::Index(ix) => ix.as_ref(),
            Source::Coarse(o) => o.as_ref(),
        }
    }

    /// The same data (not merely equal).
    fn same(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Index(a), Source::Index(b)) => Arc::ptr_eq(a, b),
            (Source::Coarse(a), Source::Coarse(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// The lines of `req`: the index's on the shared pool; the overview's
    /// on the calling thread, not queued behind the index's loading on the
    /// pool (a few hundred milliseconds at 4,096 ranks on busy cores).
    fn compute(&self, req: &Request) -> Vec<GroupRow> {
        match self {
            Source::Index(ix) => ix.aggregate_all(&req.groups, req.t0, req.t1, req.columns),
            Source::Coarse(o) => req
                .groups
                .iter()
                .map(|&g| o.aggregate(g, req.t0, req.t1, req.columns))
                .collect(),
        }
    }
}

/// What the lines are computed for: a window of `columns` cells and the groups shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub t0: i64,
    pub t1: i64,
    pub columns: usize,
    pub groups: Vec<Group>,
}

/// Thread rows × cells at most computed on the UI thread (about a millisecond).
const INLINE_CELLS: usize = 1 << 16;

/// Computed lines: the last ones ready, the request a worker computes, and
/// the newest request waiting for it, each with its source.
#[derive(Debug, Default)]
pub struct GroupLines {
    ready: Option<(Source, Request, Arc<Vec<GroupRow>>)>,
    pending: Option<(Source, Request, Receiver<Vec<GroupRow>>, Instant)>,
    wanted: Option<(Source, Request)>,
    /// How long the last computation took (ms), for `--bench` and `--timing`.
    pub last_compute_ms: Option<f64>,
    /// Computations finished so far.
    pub computed: u64,
    /// Of them, from the coarse overview.
    pub computed_coarse: u64,
}

impl GroupLines {
    /// The lines for `req` from `src` if computed, else the last computed
    /// ones (for another window, other groups or the previous source: see
    /// [`GroupLines::line`]) while a worker computes these; None before the
    /// first lines.
    pub fn get(&mut self, src: &Source, req: Request) -> Option<Arc<Vec<GroupRow>>> {
        self.poll();
        let known = |s: &Source, r: &Request| s.same(src) && *r == req;
        let known = self.ready.as_ref().is_some_and(|(s, r, _)| known(s, r))
            || self
                .pending
                .as_ref()
                .is_some_and(|(s, r, _, _)| known(s, r));
        if !known {
            let cells = src.cells();
            let ranks = cells.rank_rows();
            let rows: usize = req
                .groups
                .iter()
                .map(|g| {
                    ranks[g.start.min(ranks.len())..g.end.min(ranks.len())]
                        .iter()
                        .map(|r| r.rows.len())
                        .sum::<usize>()
                })
                .sum();
            if rows * req.columns <= INLINE_CELLS {
                let t = Instant::now();
                let lines = src.compute(&req);
                self.finished(src.clone(), req, lines, t);
            } else if self.pending.is_none() {
                self.start(src.clone(), req);
            } else {
                self.wanted = Some((src.clone(), req));
            }
        }
        self.lines()
    }

    /// The last lines computed, whatever their request.
    pub fn lines(&self) -> Option<Arc<Vec<GroupRow>>> {
        self.ready.as_ref().map(|(_, _, l)| Arc::clone(l))
    }

    fn finished(&mut self, src: Source, req: Request, lines: Vec<GroupRow>, started: Instant) {
        self.last_compute_ms = Some(started.elapsed().as_secs_f64() * 1e3);
        self.computed += 1;
        self.computed_coarse += u64::from(matches!(src, Source::Coarse(_)));
        self.ready = Some((src, req, Arc::new(lines)));
    }

    fn start(&mut self, src: Source, req: Request) {
        let (tx, rx) = std::sync::mpsc::channel();
        let (s, r) = (src.clone(), req.clone());
        let spawned = std::thread::Builder::new()
            .name("hyscope-aggregate".into())
            .spawn(move || {
                let _ = tx.send(s.compute(&r));
            });
        if spawned.is_ok() {
            self.pending = Some((src, req, rx, Instant::now()));
        }
    }

    /// Take the worker's lines if they are there, and start the newest
    /// request waiting. True when new lines arrived.
    pub fn poll(&mut self) -> bool {
        let Some((_, _, rx, _)) = &self.pending else {
            return false;
        };
        match rx.try_recv() {
            Ok(lines) => {
                let (src, req, _, started) = self.pending.take().expect("pending");
                self.finished(src, req, lines, started);
                if let Some((s, w)) = self.wanted.take() {
                    self.start(s, w);
                }
                true
            }
            Err(TryRecvError::Empty) => false,
            Err(TryRecvError::Disconnected) => {
                self.pending = None;
                false
            }
        }
    }

    /// Whether lines are being computed (the view will change when they arrive).
    pub fn busy(&self) -> bool {
        self.pending.is_some()
    }

    /// Wait until the worker has computed the newest request (tests, screenshots).
    pub fn wait(&mut self) {
        while let Some((src, req, rx, started)) = self.pending.take() {
            if let Ok(lines) = rx.recv() {
                self.finished(src, req, lines, started);
            }
            if let Some((s, w)) = self.wanted.take() {
                self.start(s, w);
            }
        }
    }
}

/// The line of `group` among `lines` (the last computed ones), if there.
pub fn line(lines: &[GroupRow], group: Group) -> Option<&GroupRow> {
    lines.iter().find(|l| l.group == group)
}

/// The cell of `row` covering time `t`, whatever window it was computed for
/// (None outside it).
pub fn cell_at(row: &GroupRow, t: i64) -> Option<&GroupCell> {
    let i = row.cells.partition_point(|c| c.worst.t1 <= t);
    row.cells.get(i).filter(|c| c.worst.t0 <= t)
}

/// A trace with more ranks than lines, for the viewers' tests.
#[cfg(test)]
pub(crate) mod test_trace {
    use std::path::Path;

    use hyscope_format::{
        Manifest, MpiRecord, OmpKind, OmpRecord, PartWriter, RankInfo, Table, WriterOptions,
        mpi_call,
    };

    /// `ranks` ranks of one thread computing over [0, 1 ms) (an implicit
    /// task), rank r in an `MPI_Allreduce` over [0.6 ms, 0.6 ms + 20·(r mod 16) µs):
    /// in any group of consecutive ranks within a block of 16, the last one
    /// waits most.
    pub fn write(dir: &Path, ranks: u32) {
        const US: i64 = 1000;
        let mut manifest = Manifest::new();
        for r in 0..ranks {
            let o = WriterOptions::default();
            let mut w = PartWriter::create(dir, Table::Omp, r, o.clone()).unwrap();
            w.write_omp(&[OmpRecord {
                thread: 0,
                kind: OmpKind::ImplicitTask as u8,
                start_ns: 0,
                end_ns: 1000 * US,
                ..OmpRecord::default()
            }])
            .unwrap();
            w.finish().unwrap();
            let mut w = PartWriter::create(dir, Table::Mpi, r, o).unwrap();
            w.write_mpi(&mut [MpiRecord {
                thread: 0,
                call: mpi_call::MPI_Allreduce,
                start_ns: 600 * US,
                end_ns: 600 * US + 20 * US * i64::from(r % 16),
                peer: -1,
                root: -1,
                ..MpiRecord::default()
            }])
            .unwrap();
            w.finish().unwrap();
            manifest.ranks.push(RankInfo {
                rank: r,
                host: "node0".into(),
                ..RankInfo::default()
            });
        }
        manifest.write(dir).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use crate::tui;

    fn render(app: &mut tui::app::App, w: u16, h: u16) -> String {
        tui::draw::render_text(app, w, h)
    }

    fn key(app: &mut tui::app::App, c: KeyCode) {
        app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
    }

    /// A fresh directory holding the test trace of `ranks` ranks.
    fn written(name: &str, ranks: u32) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("hyscope-agg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        super::test_trace::write(&dir, ranks);
        dir
    }

    /// Until the index is loaded the timeline draws the coarse overview,
    /// labelled so, with the same aggregated lines; then the detailed one.
    #[test]
    fn tui_shows_the_coarse_overview_until_the_index_is_loaded() {
        let dir = written("coarse", 64);
        let mut data = tui::data::Data::open_blocking(&dir).unwrap();
        let index = data.timeline_arc().cloned().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        data.timeline = crate::loading::Loading::Pending(rx);
        assert!(data.timeline().is_none() && data.overview().is_some());
        let mut app = tui::app::App::new(data);
        key(&mut app, KeyCode::Char('2'));
        let s = render(&mut app, 120, 30);
        println!("{s}");
        assert!(s.contains("coarse overview, bins of"), "{s}");
        assert!(s.contains("detail loading…"), "{s}");
        for k in 0..16u32 {
            let (a, b) = (4 * k, 4 * k + 3);
            assert!(
                s.contains(&format!("ranks {a}–{b} worst {b}")),
                "line {k}: {s}"
            );
        }
        let first = s.lines().find(|l| l.contains("ranks 0–3 worst 3")).unwrap();
        assert!(first.contains("████"), "{first}");
        assert!(
            s.contains("rank 0 (worst of ranks 0–3): coarse overview"),
            "{s}"
        );
        // A line opens into its ranks from the overview too.
        key(&mut app, KeyCode::Enter);
        let s = render(&mut app, 120, 30);
        assert!(
            s.contains("▸rank 2 ") && s.contains("ranks 4–7 worst 7"),
            "{s}"
        );
        // The index arrives: the detailed timeline, the same lines.
        tx.send(Ok(index)).unwrap();
        assert!(app.data.poll());
        let s = render(&mut app, 120, 30);
        println!("{s}");
        assert!(!s.contains("coarse overview"), "{s}");
        assert!(
            s.contains("▸rank 2 ") && s.contains("ranks 4–7 worst 7"),
            "{s}"
        );
        assert!(s.contains("rank 0 thread 0: "), "{s}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// While the index is built, the overview of the ranks read so far:
    /// their lines only, and the title says how many are in.
    #[test]
    fn tui_shows_the_ranks_read_so_far() {
        use std::sync::Arc;

        use hyscope_analyzer::timeline::build_with_overview;

        let dir = written("partial", 64);
        let trace = hyscope_format::Trace::open(&dir).unwrap();
        let mut forty = None;
        build_with_overview(&trace, &|_, _| {}, std::time::Duration::ZERO, &mut |u| {
            if u.ranks_loaded == 40 {
                forty = Some(u);
            }
        })
        .unwrap();
        let u = forty.expect("an overview per rank");
        let mut data = tui::data::Data::open_blocking(&dir).unwrap();
        let (_keep, rx) = std::sync::mpsc::channel();
        data.timeline = crate::loading::Loading::Pending(rx);
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(Arc::new(crate::loading::Coarse {
            overview: Arc::new(u.overview),
            ranks_loaded: u.ranks_loaded,
            ranks: u.ranks,
            warning: None,
        }))
        .unwrap();
        data.overview = crate::loading::Latest::new(rx);
        assert!(data.poll());
        let mut app = tui::app::App::new(data);
        key(&mut app, KeyCode::Char('2'));
        let s = render(&mut app, 120, 30);
        println!("{s}");
        assert!(
            s.contains("coarse overview (40 of 64 ranks read), bins of"),
            "{s}"
        );
        assert!(s.contains("ranks 0–") && s.contains("–39 worst 39"), "{s}");
        assert!(
            !s.contains("rank 40") && !s.contains("–40 ") && !s.contains("–63"),
            "{s}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// 64 ranks in a 30-line terminal: 16 lines of 4 ranks, each naming its
    /// worst rank; Enter opens a line into its ranks, Backspace closes it.
    #[test]
    fn tui_aggregates_ranks_and_opens_a_line() {
        let dir = written("tui", 64);
        let data = tui::data::Data::open_blocking(&dir).unwrap();
        let mut app = tui::app::App::new(data);
        key(&mut app, KeyCode::Char('2'));
        let s = render(&mut app, 120, 30);
        println!("{s}");
        assert!(app.timeline.aggregated(&app.data, ""));
        for k in 0..16u32 {
            let (a, b) = (4 * k, 4 * k + 3);
            assert!(s.contains(&format!("ranks {a}–{b} worst {b}")), "line {k}");
        }
        assert!(!s.contains("rank 1 "), "no single-rank line yet");
        // The details of the cursor's cell name its worst rank (the cursor
        // starts in the first column, where every rank computes).
        assert!(s.contains("rank 0 thread 0 (worst of ranks 0–3)"), "{s}");
        assert!(
            s.contains("waiting 0.0 %–0.0 % of the cell across the ranks"),
            "{s}"
        );
        // Cells: every rank computes alone before 0.6 ms, solid blocks.
        let first = s.lines().find(|l| l.contains("ranks 0–3 worst 3")).unwrap();
        assert!(first.contains("████"), "{first}");

        key(&mut app, KeyCode::Enter);
        let s = render(&mut app, 120, 30);
        println!("{s}");
        for r in 0..4 {
            assert!(s.contains(&format!("▸rank {r} ")), "rank {r}");
        }
        assert!(s.contains("ranks 4–7 worst 7"));
        // A single rank opens into its threads.
        key(&mut app, KeyCode::Down);
        key(&mut app, KeyCode::Enter);
        let s = render(&mut app, 120, 30);
        assert!(s.contains("▾rank 1 ") && s.contains(" thread 0"), "{s}");
        key(&mut app, KeyCode::Backspace);
        let s = render(&mut app, 120, 30);
        assert!(
            s.contains("ranks 0–3 worst 3") && !s.contains("▸rank 2 "),
            "{s}"
        );
        // A filter shows the matching ranks one per line.
        app.filter = "rank 63".into();
        let s = render(&mut app, 120, 30);
        assert!(s.contains("▸rank 63 ") && !s.contains("worst"), "{s}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
