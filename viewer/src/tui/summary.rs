//! Summary tab: run facts (from the manifest), the POP efficiency tree and the
//! top findings (from the analysis).

use hyscope_analyzer::{Observable, PopNode};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::app::App;
use super::{fmt, scroll, widgets};
use crate::units;

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    // What the trace lost or has damaged comes first, so no number below is read as whole.
    let integrity = app.data.analysis().map(|a| &a.integrity);
    let lines = integrity.map_or_else(Vec::new, |i| {
        problem_lines(&i.problems, area.width.saturating_sub(2) as usize)
    });
    let [problems, area] = Layout::vertical([
        Constraint::Length(if lines.is_empty() {
            0
        } else {
            lines.len() as u16 + 2
        }),
        Constraint::Min(0),
    ])
    .areas(area);
    if let Some(i) = integrity.filter(|_| !lines.is_empty()) {
        let color = if i.is_partial() {
            Color::Red
        } else {
            Color::Yellow
        };
        f.render_widget(
            Paragraph::new(
                lines
                    .into_iter()
                    .map(|l| Line::from(Span::styled(l, Style::default().fg(color))))
                    .collect::<Vec<_>>(),
            )
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(Style::default().fg(color))
                    .title(i.title()),
            ),
            problems,
        );
    }
    let width = area.width.saturating_sub(2) as usize;
    let mut facts_lines = run_facts(app, width);
    // The lines about the processes beyond the ranks, last: the run's
    // facts take at most two thirds of the tab, the POP tree and the
    // findings keep the rest.
    let room = (area.height as usize * 2 / 3).saturating_sub(2 + facts_lines.len());
    facts_lines.extend(
        process_lines(&app.data.manifest, width, room)
            .into_iter()
            .map(Line::from),
    );
    // On a short terminal the facts give way (marked) to a few lines of
    // the POP tree and the findings.
    let [facts, rest] = Layout::vertical([
        Constraint::Length(facts_lines.len() as u16 + 2),
        Constraint::Min(FINDINGS_MIN_H),
    ])
    .areas(area);
    widgets::lines(
        f,
        facts,
        format!("Run — {}", app.data.dir.display()),
        facts_lines,
    );
    let [pop, findings] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(rest);
    draw_pop(f, pop, app);
    draw_findings(f, findings, app);
}

/// Rows the POP tree and the findings keep under the run's facts on a
/// short terminal (borders included): two lines of each.
const FINDINGS_MIN_H: u16 = 4;

/// Lines the integrity box shows at most: the problems beyond them are
/// counted on its last line.
const PROBLEM_LINES: usize = 6;

/// The trace's problems, `! problem`, wrapped to `width`, on at most
/// [`PROBLEM_LINES`] lines ([`fmt::capped`]: those that do not fit whole
/// are counted on the last line, never cut silently).
fn problem_lines(problems: &[impl std::fmt::Display], width: usize) -> Vec<String> {
    let wrapped: Vec<Vec<String>> = problems
        .iter()
        .map(|p| fmt::wrap(&format!("! {p}"), width))
        .collect();
    fmt::capped(&wrapped, PROBLEM_LINES, width)
}

/// The width of the labels of the process lines (`child process`, `exec`):
/// each line's text wraps under its own start.
const PROCESS_LABEL_W: usize = hyscope_analyzer::ProcessLine::CHILD.len() + 1;

/// The run's lines about its processes beyond the ranks, as the report's
/// Run section lists them ([`hyscope_analyzer::process_lines`], from the
/// manifest, before the analysis is there): each after its label, wrapped
/// to `width` under the start of its text, on at most `room` lines (at
/// least 2; [`fmt::capped`] counts those that do not fit on the last).
fn process_lines(m: &hyscope_format::Manifest, width: usize, room: usize) -> Vec<String> {
    let children = hyscope_analyzer::processes::children(&m.ranks);
    let execs = hyscope_analyzer::processes::execs(&m.ranks);
    let text_w = width.saturating_sub(PROCESS_LABEL_W).max(20);
    let wrapped: Vec<Vec<String>> = hyscope_analyzer::process_lines(&children, &execs)
        .iter()
        .map(|p| {
            fmt::wrap(&p.text, text_w)
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    let label = if i == 0 { p.label } else { "" };
                    format!("{label:<PROCESS_LABEL_W$}{l}")
                })
                .collect()
        })
        .collect();
    fmt::capped(&wrapped, room.max(2), width)
}

/// The run's facts, each on one line of `width` characters: what does not
/// fit is clipped with `…` at that width, never before.
fn run_facts(app: &App, width: usize) -> Vec<Line<'static>> {
    // A fact after its 10-character label, clipped to the line.
    let fact = |label: &str, text: &str| {
        let w = width.saturating_sub(label.chars().count());
        format!("{label}{}", fmt::clip(text, w))
    };
    let m = &app.data.manifest;
    let threads: Vec<u32> = m.ranks.iter().map(|r| r.threads).collect();
    let tmin = threads.iter().min().copied().unwrap_or(0);
    let tmax = threads.iter().max().copied().unwrap_or(0);
    let threads = if tmin == tmax {
        format!("{tmax}")
    } else {
        format!("{tmin}–{tmax}")
    };
    let children = hyscope_analyzer::processes::children(&m.ranks);
    let ranks =
        hyscope_analyzer::model::ranks_label(m.world_size.max(m.ranks.len() as u32), &children);
    let mpi = m.mpi.as_ref().map_or("none".to_string(), |x| {
        let lvl = x
            .thread_level_provided
            .clone()
            .unwrap_or_else(|| "?".into());
        // The library's version gives way to the rest of the line.
        let rest = format!(" (thread level {lvl})");
        let w = width.saturating_sub(10 + x.flavour.chars().count() + 1 + rest.chars().count());
        format!(
            "{} {}{rest}",
            x.flavour,
            fmt::clip(x.library_version.lines().next().unwrap_or(""), w)
        )
    });
    let omp = m
        .openmp
        .as_ref()
        .map_or("none".to_string(), |o| o.runtime_version.clone());
    let mut missing: Vec<String> = m
        .openmp
        .as_ref()
        .map(|o| o.missing.clone())
        .unwrap_or_default();
    missing.extend(
        m.samplers
            .iter()
            .filter(|s| !s.available)
            .map(|s| format!("{} ({})", s.name, s.reason)),
    );
    // The analysis's counts once it is there (those of the ranks analysed,
    // and which they are when ranks were left out), the manifest's before.
    let run = app.data.analysis().map(|a| &a.run);
    let (events, dropped) = match run {
        Some(r) => (
            r.omp_events + r.mpi_events + r.sample_events,
            r.dropped_events,
        ),
        None => (
            m.ranks
                .iter()
                .map(|r| r.events.omp + r.events.mpi + r.events.samples)
                .sum(),
            m.ranks.iter().map(|r| r.dropped_events).sum(),
        ),
    };
    let counted = run
        .and_then(|r| r.counted_ranks())
        .map_or(String::new(), |c| format!(" — {c}"));
    let duration = app
        .data
        .duration_ns()
        .map(units::ns)
        .unwrap_or_else(|| "…".into());
    // The analysis's warnings (and its memory limit's), as the report's Warnings section.
    let warnings: Vec<String> = app
        .data
        .analysis()
        .map(|a| {
            a.warnings
                .iter()
                .cloned()
                .chain(crate::report::memory_warning_text(a))
                .collect()
        })
        .unwrap_or_default();
    // The counts, on as many lines as they take (a count is never cut).
    let counts = fmt::pack(
        [
            format!("ranks {ranks}"),
            format!("threads/rank {threads}"),
            format!("nodes {}", m.hosts.len()),
            format!("duration {duration}"),
            format!("mode {}", m.mode),
        ],
        "  ",
        width,
        fmt::Long::Clip,
    );
    // Where the lines after the counts go.
    let after = 1 + counts.len();
    let mut lines = vec![Line::from(fact("command   ", &m.command.join(" ")))];
    lines.extend(counts.into_iter().map(Line::from));
    lines.extend([
        Line::from(fact("MPI       ", &mpi)),
        Line::from(fact("OpenMP    ", &omp)),
        Line::from(format!(
            "events    {}  dropped {}{counted}  started {}",
            fmt::count(events),
            fmt::count(dropped),
            m.start_time
        )),
        Line::from(fact(
            "missing   ",
            &if missing.is_empty() {
                "nothing".to_string()
            } else {
                missing.join("; ")
            },
        )),
    ]);
    // Ranks a damaged part left out of the analysis, as the report says it.
    if let Some(analysed) = app
        .data
        .analysis()
        .and_then(|a| a.run.ranks_analysed_label())
    {
        lines.insert(after, Line::from(fact("analysed  ", &analysed)));
    }
    // The collector's own work at the end of MPI_Init, as the report says it.
    let init_ns = m.collector_init_ns();
    if init_ns > 0 {
        lines.insert(
            after + 1,
            Line::from(format!(
                "collector in MPI_Init {}",
                crate::report::collector_in_mpi_init(hyscope_analyzer::model::ns_to_s(
                    i64::try_from(init_ns).unwrap_or(i64::MAX)
                ))
            )),
        );
    }
    if let Some(first) = warnings.first() {
        let more = match warnings.len() {
            1 => String::new(),
            n => format!(" (and {} more: hyscope report lists them)", n - 1),
        };
        lines.push(Line::from(Span::styled(
            format!(
                "warnings  {}{more}",
                fmt::clip(
                    first,
                    width.saturating_sub(10 + more.chars().count()).max(20)
                )
            ),
            Style::default().fg(Color::Yellow),
        )));
    }
    lines
}

/// The POP tree, indented, with the additive losses below it.
fn draw_pop(f: &mut Frame, area: Rect, app: &App) {
    let Some(a) = app.data.analysis() else {
        return widgets::not_ready(f, area, app, "POP efficiency");
    };
    let Some(pop) = widgets::observed(f, area, "POP efficiency", &a.pop) else {
        return;
    };
    let mut lines = Vec::new();
    // Names are clipped so that the values stay visible in a narrow column.
    let width = area.width.saturating_sub(2) as usize;
    fn walk(n: &PopNode, depth: usize, width: usize, out: &mut Vec<Line<'static>>) {
        let v = match &n.value {
            Observable::Observed(v) => units::percent(*v),
            Observable::NotObservable(_) => "n/a".into(),
        };
        let color = match n.value.get() {
            Some(v) if *v >= 0.8 => Color::Green,
            Some(v) if *v >= 0.6 => Color::Yellow,
            Some(_) => Color::Red,
            None => Color::Gray,
        };
        let name_w = width.saturating_sub(depth * 2 + 7);
        out.push(Line::from(vec![
            Span::raw(format!(
                "{:d$}{:name_w$}",
                "",
                fmt::clip(&n.name, name_w),
                d = depth * 2
            )),
            Span::styled(format!("{v:>7}"), Style::default().fg(color)),
        ]));
        for c in &n.children {
            walk(c, depth + 1, width, out);
        }
    }
    walk(&pop.tree, 0, width, &mut lines);
    for line in pop.scope.lines() {
        lines.extend(fmt::wrap(&line, width).into_iter().map(Line::from));
    }
    if !pop.additive.is_empty() {
        lines.push(Line::from("losses (share of core-time):"));
        for l in &pop.additive {
            lines.push(Line::from(format!(
                "  {} {}",
                l.name,
                units::percent(l.fraction)
            )));
        }
    }
    widgets::lines(
        f,
        area,
        format!(
            "POP efficiency ({} cores, {})",
            pop.cores,
            units::ns(pop.elapsed_s * 1e9)
        ),
        lines,
    );
}

/// Findings, biggest cost first, filtered by `/`: each keeps its rank (the
/// report's number), the title says how many of them are shown, and the
/// scroll (↑ ↓) stops where the last line is at the bottom.
fn draw_findings(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(a) = app.data.analysis() else {
        return widgets::not_ready(f, area, app, "Findings");
    };
    let width = area.width.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    let mut shown = 0;
    for (i, x) in a
        .findings
        .iter()
        .enumerate()
        .filter(|(_, x)| app.matches(&x.title) || app.matches(&x.category))
    {
        shown += 1;
        // The cost stays whole on the last line of the title (no-break spaces
        // while wrapping).
        // A finding without a time cost (the memory projection's) says `—`,
        // as the report's list.
        let cost = if x.costs_time() {
            format!(
                "{} ({})",
                units::secs(x.cost_s),
                units::percent(x.share_of_run)
            )
        } else {
            "—".to_string()
        }
        .replace(' ', "\u{a0}");
        let head = fmt::wrap(&format!("{}. {} {cost}", i + 1, x.title), width);
        let last = head.len() - 1;
        for (j, l) in head.into_iter().enumerate() {
            let l = l.replace('\u{a0}', " ");
            let bold = Style::default().add_modifier(Modifier::BOLD);
            if j < last {
                lines.push(Line::styled(l, bold));
                continue;
            }
            let cost = cost.replace('\u{a0}', " ");
            let (title, cost) = match l.strip_suffix(&cost) {
                Some(title) => (title, cost.as_str()),
                None => (l.as_str(), ""),
            };
            lines.push(Line::from(vec![
                Span::styled(title.to_string(), bold),
                Span::styled(cost.to_string(), Style::default().fg(Color::Yellow)),
            ]));
        }
        for l in fmt::wrap(&x.what_to_do, width.saturating_sub(3)) {
            lines.push(Line::from(format!("   {l}")));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from("no findings"));
    }
    let title = if shown < a.findings.len() {
        format!("Findings ({shown} of {})", a.findings.len())
    } else {
        format!("Findings ({})", a.findings.len())
    };
    let room = area.height.saturating_sub(2) as usize;
    let nav = &mut app.nav[super::app::Tab::Summary.index()];
    let window = scroll::Window::from(lines.len(), room, nav.selected);
    nav.last = Some(lines.len().saturating_sub(room));
    nav.selected = window.first;
    f.render_widget(
        Paragraph::new(lines)
            .scroll((window.first as u16, 0))
            .block(scroll::marked(
                &title,
                area.width,
                &window,
                scroll::Noun::Lines,
            )),
        area,
    );
}
