//! OpenMP tab: the parallel regions, sortable by any numeric column, with a
//! drill-down to the threads of the selected region, and the runtime costs
//! that are not per region (locks, tasks, fine-grain model).

use hyscope_analyzer::RegionStats;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;

use super::app::{App, Scroll, Tab};
use super::fmt;
use super::widgets::{self, loc};
use crate::units;

const HEADER: [&str; 8] = [
    "region",
    "inst",
    "team",
    "time",
    "fork/join",
    "bar.wait",
    "sync ovh",
    "imbal",
];
/// How much each column matters: on a narrow terminal the lowest go first.
const KEEP: [u8; 8] = [9, 3, 2, 9, 7, 6, 4, 5];
/// Sort keys, in `s` order; the column each marks.
const KEYS: [widgets::SortKey<RegionStats>; 7] = [
    (3, |r| r.time_s),
    (4, |r| r.fork_join_s),
    (5, |r| r.barrier.wait_s),
    (7, |r| r.imbalance),
    (6, |r| r.barrier.sync_overhead_s),
    (1, |r| r.instances as f64),
    (2, |r| r.team_size as f64),
];

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(a) = app.data.analysis() else {
        return widgets::not_ready(f, area, app, "OpenMP");
    };
    let [top, bottom] = Layout::vertical([Constraint::Min(6), Constraint::Length(5)]).areas(area);
    let Some(regions) = widgets::observed(f, top, "OpenMP regions", &a.regions) else {
        overhead(f, bottom, app);
        return;
    };
    let mut items: Vec<&RegionStats> = regions
        .iter()
        .filter(|r| app.matches(&loc(&r.location)))
        .collect();
    let nav = &mut app.nav[Tab::OpenMp.index()];
    let keys: Vec<fn(&RegionStats) -> f64> = KEYS.iter().map(|k| k.1).collect();
    widgets::sort_by(&mut items, nav, &keys);
    let sorted_col = KEYS[nav.sort % KEYS.len()].0;
    let selected = nav.selected;
    let detail = nav.detail;
    let ascending = nav.ascending;

    let (list_area, detail_area) = if detail {
        let [l, d] = Layout::vertical([Constraint::Length(6), Constraint::Min(4)]).areas(top);
        (l, Some(d))
    } else {
        (top, None)
    };
    let rows = items
        .iter()
        .map(|r| {
            vec![
                loc(&r.location),
                fmt::count(r.instances),
                r.team_size.to_string(),
                units::secs(r.time_s),
                format!(
                    "{} {}",
                    units::secs(r.fork_join_s),
                    units::percent(r.fork_join_fraction)
                ),
                // Not known per region in profile mode (per-thread totals only).
                units::secs_or_na(r.barrier.wait_observed.then_some(r.barrier.wait_s)),
                units::secs_or_na(r.barrier.wait_observed.then_some(r.barrier.sync_overhead_s)),
                if r.per_thread_observed() {
                    crate::units::imbalance(r.imbalance)
                } else {
                    "n/a".into()
                },
            ]
        })
        .collect();
    widgets::fit_table(
        f,
        list_area,
        format!("OpenMP regions ({})  s: sort  Enter: threads", items.len()),
        &widgets::Fit {
            header: &HEADER,
            keep: &KEEP,
            flex: 0,
            flex_min: 12,
            sorted_col: Some(sorted_col),
            ascending,
        },
        rows,
        Some(selected),
    );
    if let (Some(d), Some(r)) = (detail_area, items.get(selected)) {
        threads(f, d, r, &mut nav.scroll);
    }
    overhead(f, bottom, app);
}

/// The threads of one region (the scrolling keys scroll them).
fn threads(f: &mut Frame, area: Rect, r: &RegionStats, scroll: &mut Scroll) {
    let rows = r
        .per_thread
        .iter()
        .map(|t| {
            vec![
                t.rank.to_string(),
                t.thread.to_string(),
                units::secs(t.implicit_task_s),
                units::secs(t.busy_s),
                units::secs(t.barrier.wait_s),
                units::secs(t.barrier.sync_overhead_s),
                units::secs(t.activation_s),
                units::secs(t.release_s),
            ]
        })
        .collect();
    widgets::scroll_table(
        f,
        area,
        format!("threads of {}  (Esc: back)", loc(&r.location)),
        &widgets::Fit {
            header: &[
                "rank", "thread", "task", "busy", "bar.wait", "sync", "activ.", "release",
            ],
            keep: &[9, 9, 8, 8, 7, 6, 5, 4],
            flex: 0,
            flex_min: 4,
            sorted_col: None,
            ascending: false,
        },
        rows,
        scroll,
    );
}

/// Runtime costs that are not per region.
fn overhead(f: &mut Frame, area: Rect, app: &App) {
    let Some(a) = app.data.analysis() else { return };
    let Some(o) = a.openmp.get() else {
        widgets::not_observable(f, area, "OpenMP runtime", a.openmp.reason().unwrap_or(""));
        return;
    };
    // Without an observed wait (profile mode, runtimes without
    // sync_region_wait) the barrier is not split.
    let split = if o.barrier.wait_observed {
        format!(
            "wait {}{}, sync {}",
            units::secs(o.barrier.wait_s),
            if o.barrier.wait_from_arrivals {
                " for the last arrival"
            } else {
                ""
            },
            units::secs(o.barrier.sync_overhead_s)
        )
    } else {
        "wait/sync n/a".to_string()
    };
    let mut lines = vec![Line::from(format!(
        "fork/join {}  barriers {} ({split})  scheduling {}",
        units::secs(o.fork_join_s),
        units::secs(o.barrier.total_s),
        o.scheduling_s
            .get()
            .map(|v| units::secs(*v))
            .unwrap_or_else(|| "not observable".into()),
    ))];
    lines.push(Line::from(match o.mutexes.get() {
        Some(m) => {
            let wait: f64 = m.iter().map(|x| x.wait_s).sum();
            let acq: u64 = m.iter().map(|x| x.acquisitions).sum();
            format!(
                "locks/critical: {} sites, {} acquisitions, wait {}",
                m.len(),
                fmt::count(acq),
                units::secs(wait)
            )
        }
        None => format!("locks: {}", o.mutexes.reason().unwrap_or("")),
    }));
    lines.push(Line::from(match o.tasks.get() {
        Some(t) => format!(
            "tasks: {} created, run {}, mean {}, taskwait {}",
            fmt::count(t.created),
            units::secs(t.run_s),
            units::secs(t.mean_task_s),
            units::secs(t.taskwait_s)
        ),
        None => format!("tasks: {}", o.tasks.reason().unwrap_or("")),
    }));
    if let Some(m) = o.fine_grain.first() {
        lines.push(Line::from(format!(
            "rank {}: T_seq {} T_comm {} T_compute {} on {} threads → speedup bound {}",
            m.rank,
            units::secs(m.t_seq_s),
            units::secs(m.t_comm_s),
            units::secs(m.t_compute_s),
            m.threads,
            m.speedup_bound
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "none".into())
        )));
    }
    widgets::lines(f, area, "OpenMP runtime", lines);
}
