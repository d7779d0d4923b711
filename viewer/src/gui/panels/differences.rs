//! The "Differences" tab of two traces opened together (`hyscope gui A
//! --compare B`): the analyzer's comparison (`hyscope_analyzer::compare`)
//! as `hyscope report A B` prints it — why the runs may not compare first,
//! which run is A and which B, the differences in a table sortable by any
//! column, what only one run has — every value written by the report's own
//! functions (`report::compare`).

use std::cmp::Ordering;
use std::sync::Arc;

use eframe::egui::{self, RichText};
use hyscope_analyzer::Analysis;
use hyscope_analyzer::model::{CompareRow, Comparison, NoiseVerdict};

use super::{Action, scrolled_grid};
use crate::report::compare as report;

/// The item column's width (points); longer names wrap.
const ITEM_WIDTH: f32 = 170.0;

/// The table's columns, as the report heads them.
pub const COLUMNS: [&str; 7] = report::COLUMNS;

/// What the table is sorted by: a column of [`COLUMNS`] and the direction;
/// None: the report's order (section by section).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sort {
    pub column: Option<usize>,
    pub descending: bool,
}

impl Sort {
    /// A click on `column`'s header: the other direction if the table is
    /// sorted by it, else by it, names A to Z and numbers largest first.
    pub fn click(&mut self, column: usize) {
        if self.column == Some(column) {
            self.descending = !self.descending;
        } else {
            *self = Sort {
                column: Some(column),
                descending: column >= 2,
            };
        }
    }

    /// The rows in this order (ties, and no column, in the report's).
    pub fn order<'a>(&self, rows: &[&'a CompareRow]) -> Vec<&'a CompareRow> {
        let mut out = rows.to_vec();
        let Some(column) = self.column else {
            return out;
        };
        let numbers = |x: f64, y: f64| x.total_cmp(&y);
        out.sort_by(|x, y| {
            let o = match column {
                0 => x.label().cmp(&y.label()),
                1 => report::metric(&x.metric).cmp(report::metric(&y.metric)),
                2 => numbers(x.a, y.a),
                3 => numbers(x.b, y.b),
                4 => numbers(x.delta, y.delta),
                // Beyond noise, then within, then without an estimate;
                // by how far beyond (t) within each.
                6 => noise_rank(x)
                    .cmp(&noise_rank(y))
                    .then_with(|| numbers(x.noise.t.unwrap_or(0.0), y.noise.t.unwrap_or(0.0))),
                // No ratio (A is 0) last either way.
                _ => {
                    return match (x.ratio, y.ratio) {
                        (Some(p), Some(q)) if self.descending => numbers(q, p),
                        (Some(p), Some(q)) => numbers(p, q),
                        (Some(_), None) => Ordering::Less,
                        (None, Some(_)) => Ordering::Greater,
                        (None, None) => Ordering::Equal,
                    };
                }
            };
            if self.descending { o.reverse() } else { o }
        });
        out
    }
}

/// The tab's state: the sort, and the comparison of the two analyses it
/// was computed from (again when either is analysed again, for a phase).
#[derive(Default)]
pub struct Differences {
    pub sort: Sort,
    computed: Option<(Arc<Analysis>, Arc<Analysis>, Arc<Comparison>)>,
}

impl Differences {
    /// The comparison of `a` and `b` ([`hyscope_analyzer::compare()`]).
    pub fn comparison(&mut self, a: &Arc<Analysis>, b: &Arc<Analysis>) -> Arc<Comparison> {
        match &self.computed {
            Some((x, y, c)) if Arc::ptr_eq(x, a) && Arc::ptr_eq(y, b) => Arc::clone(c),
            _ => {
                let c = Arc::new(hyscope_analyzer::compare(a, b));
                self.computed = Some((Arc::clone(a), Arc::clone(b), Arc::clone(&c)));
                c
            }
        }
    }
}

/// The tab: `a` and `b` are the two traces' analyses. A click on a
/// region's or loop's name asks to highlight it on both timelines.
pub fn show(
    ui: &mut egui::Ui,
    state: &mut Differences,
    a: &Arc<Analysis>,
    b: &Arc<Analysis>,
) -> Option<Action> {
    let c = state.comparison(a, b);
    let mut action = None;
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            ui.set_max_width(ui.available_width());
            caveats(ui, &c, a, b);
            for (name, side) in [("A", &c.side_a), ("B", &c.side_b)] {
                ui.label(format!("{name} = {}", report::describe(side)));
            }
            ui.separator();
            ui.strong(report::heading(&c));
            table(ui, &c, &mut state.sort, [a, b], &mut action);
            ui.label(report::noise_summary(&c));
            ui.weak(report::notes(&c).join(" "));
            for line in report::unestimated(&c) {
                ui.weak(line);
            }
            for (name, items) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
                if !items.is_empty() {
                    ui.separator();
                    ui.strong(format!("Only in {name}"));
                    ui.label(report::listed(items));
                }
            }
        });
    action
}

/// Why the runs may not compare as they stand, in the error colour: the
/// analyzer's caveats, and two analyses restricted to different phases.
fn caveats(ui: &mut egui::Ui, c: &Comparison, a: &Analysis, b: &Analysis) {
    let phase = |x: &Analysis| x.focus.as_ref().map(|f| f.phase.clone());
    let mut lines = c.caveats.clone();
    let (pa, pb) = (phase(a), phase(b));
    if pa != pb {
        let covers = |p: &Option<String>| {
            p.as_ref()
                .map_or("the whole run".into(), |p| format!("phase {p}"))
        };
        lines.push(format!(
            "different parts of the runs: A covers {}, B {} (the phase box of each)",
            covers(&pa),
            covers(&pb)
        ));
    } else if let Some(p) = pa {
        ui.label(format!("both runs restricted to phase {p}"));
    }
    if lines.is_empty() {
        return;
    }
    let color = ui.visuals().error_fg_color;
    ui.label(RichText::new(report::NOT_COMPARABLE).color(color).strong());
    for w in &lines {
        ui.colored_label(color, format!("! {w}"));
    }
    ui.separator();
}

/// The rows both runs have, under headers that sort them.
fn table(
    ui: &mut egui::Ui,
    c: &Comparison,
    sort: &mut Sort,
    analyses: [&Analysis; 2],
    action: &mut Option<Action>,
) {
    let rows: Vec<&CompareRow> = c.rows.iter().filter(|r| report::shown(r)).collect();
    if rows.is_empty() {
        ui.weak("no row: neither run has a value both measured");
        return;
    }
    let rows = sort.order(&rows);
    scrolled_grid(ui, "differences", COLUMNS.len(), |ui| {
        let mut clicked = None;
        for (k, name) in COLUMNS.iter().enumerate() {
            if ui
                .add(egui::Button::new(header(ui, name, *sort, k)).frame(false))
                .on_hover_text("sort by this column (again: the other way)")
                .clicked()
            {
                clicked = Some(k);
            }
        }
        ui.end_row();
        for r in rows {
            let name = r.label();
            let addresses = analyses.map(|x| location(x, &r.section, &r.item));
            if item_cell(ui, &name, addresses.iter().any(Option::is_some)) {
                *action = Some(Action::HighlightBoth {
                    addresses,
                    label: name,
                });
            }
            ui.label(report::row_metric(r));
            ui.label(report::value(r.unit, r.a));
            ui.label(report::value(r.unit, r.b));
            ui.label(report::difference(r.unit, r.delta));
            ui.label(report::ratio(r.ratio));
            let noise = ui.label(report::noise(&r.noise));
            if let Some(why) = &r.noise.why {
                noise.on_hover_text(why);
            } else if let (Some(t), Some(se)) = (r.noise.t, r.noise.standard_error) {
                noise.on_hover_text(format!(
                    "|B − A| = {t:.1} standard errors of {} ({} and {} {}); beyond from {:.1}",
                    report::value(r.unit, se),
                    r.noise.values_a,
                    r.noise.values_b,
                    r.noise.values,
                    r.noise.threshold.unwrap_or(f64::NAN)
                ));
            }
            ui.end_row();
        }
        if let Some(k) = clicked {
            sort.click(k);
        }
    });
}

/// A row's noise verdict in ascending order: without an estimate, too
/// few values, exact (a count), within noise, beyond it.
fn noise_rank(r: &CompareRow) -> u8 {
    match r.noise.verdict {
        NoiseVerdict::NotEstimated => 0,
        NoiseVerdict::TooFewValues => 1,
        NoiseVerdict::Exact => 2,
        NoiseVerdict::WithinNoise => 3,
        NoiseVerdict::BeyondNoise => 4,
    }
}

/// An item's name, wrapped on more lines where wider than [`ITEM_WIDTH`]
/// (laid out here: a grid's cells do not wrap), so the values keep their
/// room in the panel. A link (true when clicked) where it is a code
/// location to highlight.
fn item_cell(ui: &mut egui::Ui, name: &str, link: bool) -> bool {
    let wrap = Some(egui::TextWrapMode::Wrap);
    let text =
        egui::WidgetText::from(name).into_galley(ui, wrap, ITEM_WIDTH, egui::TextStyle::Body);
    if link {
        ui.add(egui::Link::new(text))
            .on_hover_text("highlight its instances on both timelines")
            .clicked()
    } else {
        ui.label(text);
        false
    }
}

/// Column `k`'s header, `name` in strong text, and the sort's arrow after
/// it if the table is sorted by it (▲ ascending, ▼ descending; from the
/// monospace font: egui's proportional one has no arrow).
fn header(ui: &egui::Ui, name: &str, sort: Sort, k: usize) -> egui::text::LayoutJob {
    let body = egui::TextStyle::Body.resolve(ui.style());
    let color = ui.visuals().strong_text_color();
    let mut job = egui::text::LayoutJob::default();
    job.append(name, 0.0, egui::TextFormat::simple(body.clone(), color));
    if sort.column == Some(k) {
        let arrow = if sort.descending { "▼" } else { "▲" };
        let mono = egui::FontId::monospace(body.size);
        job.append(arrow, 4.0, egui::TextFormat::simple(mono, color));
    }
    job
}

/// The code location a row's item names in analysis `x` (the comparison
/// matches regions and loops by their location's label): its id, for the
/// highlight. None for items that are no code location.
fn location(x: &Analysis, section: &str, item: &str) -> Option<u64> {
    let found = match section {
        "region" => x
            .regions
            .get()?
            .iter()
            .find(|r| r.location.label == item)
            .map(|r| &r.location),
        "loop" => x
            .loops
            .get()?
            .iter()
            .find(|l| l.location.label == item)
            .map(|l| &l.location),
        _ => None,
    };
    found.map(|l| l.address)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_analyzer::model::CompareUnit;

    fn row(item: &str, a: f64, b: f64, unit: CompareUnit) -> CompareRow {
        CompareRow {
            section: "loop".into(),
            item: item.into(),
            metric: "time_s".into(),
            a,
            b,
            delta: b - a,
            ratio: (a != 0.0).then(|| b / a),
            unit,
            per_rank: false,
            noise: Default::default(),
        }
    }

    /// Each header sorts by its column, a second click the other way; a
    /// row without a ratio stays last; ties keep the report's order.
    #[test]
    fn headers_sort_by_their_column() {
        let rows = [
            row("k.c:1", 2.0, 3.0, CompareUnit::Seconds),
            row("k.c:2", 0.0, 5.0, CompareUnit::Seconds),
            row("k.c:3", 4.0, 2.0, CompareUnit::Seconds),
        ];
        let refs: Vec<&CompareRow> = rows.iter().collect();
        let items =
            |s: &Sort| -> Vec<String> { s.order(&refs).iter().map(|r| r.item.clone()).collect() };
        let mut s = Sort::default();
        assert_eq!(items(&s), ["k.c:1", "k.c:2", "k.c:3"]);
        s.click(4);
        assert_eq!(
            items(&s),
            ["k.c:2", "k.c:1", "k.c:3"],
            "B − A, largest first"
        );
        s.click(4);
        assert_eq!(items(&s), ["k.c:3", "k.c:1", "k.c:2"]);
        s.click(5);
        assert_eq!(
            items(&s),
            ["k.c:1", "k.c:3", "k.c:2"],
            "B / A: 1.5, 0.5, none"
        );
        s.click(5);
        assert_eq!(items(&s), ["k.c:3", "k.c:1", "k.c:2"]);
        s.click(0);
        assert_eq!(items(&s), ["k.c:1", "k.c:2", "k.c:3"], "names A to Z");
        s.click(1);
        assert_eq!(
            items(&s),
            ["k.c:1", "k.c:2", "k.c:3"],
            "ties keep the order"
        );
    }
}
