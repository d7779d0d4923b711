//! Loops tab: the schedule recommendations with their predicted gain and
//! evidence, and per-thread bars of the selected loop.

use hyscope_analyzer::LoopStats;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::app::{App, Tab};
use super::fmt;
use super::widgets::{self, loc};
use crate::units;

const HEADER: [&str; 7] = [
    "loop", "sched", "time", "imbal", "advice", "speedup", "gain",
];

fn gain(l: &LoopStats) -> f64 {
    l.recommendation.get().map_or(0.0, |r| r.predicted_gain_s)
}

fn speedup(l: &LoopStats) -> f64 {
    l.recommendation.get().map_or(1.0, |r| r.predicted_speedup)
}

const KEYS: [widgets::SortKey<LoopStats>; 4] = [
    (6, gain),
    (2, |l| l.time_s),
    (3, |l| l.imbalance),
    (5, speedup),
];

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(a) = app.data.analysis() else {
        return widgets::not_ready(f, area, app, "Loops");
    };
    let Some(loops) = widgets::observed(f, area, "Loops", &a.loops) else {
        return;
    };
    let mut items: Vec<&LoopStats> = loops
        .iter()
        .filter(|l| app.matches(&loc(&l.location)))
        .collect();
    let nav = &mut app.nav[Tab::Loops.index()];
    let keys: Vec<fn(&LoopStats) -> f64> = KEYS.iter().map(|k| k.1).collect();
    widgets::sort_by(&mut items, nav, &keys);
    let sorted_col = KEYS[nav.sort % KEYS.len()].0;
    let (selected, ascending) = (nav.selected, nav.ascending);

    let list_h = (items.len() as u16 + 3).clamp(4, 9);
    let [list, below] =
        Layout::vertical([Constraint::Length(list_h), Constraint::Min(6)]).areas(area);
    let rows = items
        .iter()
        .map(|l| {
            let (advice, sp, g) = match l.recommendation.get() {
                Some(r) => (
                    r.clause.clone(),
                    format!("{:.2}×", r.predicted_speedup),
                    units::secs(r.predicted_gain_s),
                ),
                None => ("—".into(), "—".into(), "—".into()),
            };
            vec![
                loc(&l.location),
                l.schedule.get().cloned().unwrap_or_else(|| "?".into()),
                units::secs(l.time_s),
                crate::units::imbalance(l.imbalance),
                advice,
                sp,
                g,
            ]
        })
        .collect();
    // The advice may be long (`schedule(dynamic,64)`): it gives way before
    // the loop's name does, and the gain and speedup stay whole.
    widgets::fit_table(
        f,
        list,
        format!("Loops ({})  s: sort", items.len()),
        &widgets::Fit {
            header: &HEADER,
            keep: &[9, 6, 8, 5, 7, 4, 7],
            flex: 0,
            flex_min: 10,
            sorted_col: Some(sorted_col),
            ascending,
        },
        rows,
        Some(selected),
    );
    let Some(l) = items.get(selected) else { return };
    let [bars, evidence] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(below);
    thread_bars(f, bars, l);
    evidence_text(f, evidence, l);
}

/// Busy time of each thread as a bar, against the slowest thread's loop time.
fn thread_bars(f: &mut Frame, area: Rect, l: &LoopStats) {
    let max = l
        .per_thread
        .iter()
        .map(|t| t.time_s)
        .fold(0.0_f64, f64::max)
        .max(1e-12);
    let w = area.width.saturating_sub(22) as usize;
    let lines: Vec<Line<'static>> = l
        .per_thread
        .iter()
        .map(|t| {
            Line::from(vec![
                Span::raw(format!("r{}t{:<3}", t.rank, t.thread)),
                Span::styled(
                    fmt::bar(t.busy_s / max, w),
                    Style::default().fg(Color::Green),
                ),
                Span::raw(format!(" {}", units::secs(t.busy_s))),
            ])
        })
        .collect();
    widgets::lines(
        f,
        area,
        format!("busy per thread, {}", loc(&l.location)),
        lines,
    );
}

fn evidence_text(f: &mut Frame, area: Rect, l: &LoopStats) {
    let plain = Style::default();
    let mut lines: Vec<(String, Style)> = Vec::new();
    match l.recommendation.get() {
        Some(r) => {
            lines.push((
                format!(
                    "{}  (OMP_SCHEDULE={})  {:.2}×, saves {}",
                    r.clause,
                    r.omp_schedule,
                    r.predicted_speedup,
                    units::secs(r.predicted_gain_s)
                ),
                Style::default().fg(Color::Yellow),
            ));
            lines.push((r.evidence.clone(), plain));
            lines.push((format!("rule: {}", r.rule), plain));
        }
        None => lines.push((
            format!(
                "no recommendation: {}",
                l.recommendation.reason().unwrap_or("")
            ),
            plain,
        )),
    }
    lines.push((
        format!(
            "{} instances, trip count {}, team {}, {} of run",
            fmt::count(l.instances),
            l.trip_count_text(),
            l.team_size,
            units::percent(l.share_of_run)
        ),
        plain,
    ));
    if let Some(c) = l.cost_profile.get() {
        lines.push((format!("cost: {} ({})", c.shape, c.source), plain));
    }
    if let Some(best) = l.fastest_simulated(4) {
        lines.push((format!("simulated: {best}"), plain));
    }
    widgets::text(f, area, "recommendation and evidence", &lines);
}
