//! The analysis panels beside the timeline: summary and POP tree, regions,
//! loops with recommendations, MPI profile and matrix, memory, energy, and
//! with two traces open the [`differences`] between them. Each returns what
//! the user asked the timeline to show.

use eframe::egui::{self, Color32, RichText};
use hyscope_analyzer::{Analysis, Observable, PopNode};

use crate::units;

pub mod differences;

/// Cells per side of the message matrix at most (ranks are summed in blocks
/// beyond): a grid of buttons per rank pair of a 4,096-rank job would not draw.
const MATRIX_CELLS: usize = 32;

/// Which panel is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Summary,
    Regions,
    Loops,
    Mpi,
    Memory,
    Energy,
    /// The comparison of the two traces opened (`--compare`).
    Differences,
}

impl Tab {
    pub const ALL: [Tab; 7] = [
        Tab::Summary,
        Tab::Regions,
        Tab::Loops,
        Tab::Mpi,
        Tab::Memory,
        Tab::Energy,
        Tab::Differences,
    ];
    /// Whether the tab is offered with `traces` traces open: the
    /// differences with two only.
    pub fn offered(self, traces: usize) -> bool {
        self != Tab::Differences || traces > 1
    }
    pub fn name(self) -> &'static str {
        match self {
            Tab::Summary => "Summary",
            Tab::Regions => "Regions",
            Tab::Loops => "Loops",
            Tab::Mpi => "MPI",
            Tab::Memory => "Memory",
            Tab::Energy => "Energy",
            Tab::Differences => "Differences",
        }
    }
}

/// What a panel asks the timeline to do.
pub enum Action {
    /// Highlight the instances of a code address.
    Highlight { address: u64, label: String },
    /// Highlight a code location on both timelines: its id in A and in B
    /// (None where that run does not have it).
    HighlightBoth {
        addresses: [Option<u64>; 2],
        label: String,
    },
    /// Show only the messages between two ranks.
    RankPair(u32, u32),
}

fn not_observable<T>(ui: &mut egui::Ui, o: &Observable<T>) -> bool {
    if let Some(r) = o.reason() {
        ui.weak(format!("not observable: {r}"));
        true
    } else {
        false
    }
}

pub fn show(ui: &mut egui::Ui, tab: Tab, a: &Analysis, filter: &str) -> Option<Action> {
    let mut action = None;
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            // Wrap text at the panel's edge: nothing may widen the content.
            ui.set_max_width(ui.available_width());
            match tab {
                Tab::Summary => summary(ui, a, &mut action),
                Tab::Regions => regions(ui, a, filter, &mut action),
                Tab::Loops => loops(ui, a, filter, &mut action),
                Tab::Mpi => mpi(ui, a, &mut action),
                Tab::Memory => memory(ui, a),
                Tab::Energy => energy(ui, a),
                // Two analyses: the application draws it (`differences::show`).
                Tab::Differences => {
                    ui.weak("open a second trace to compare: hyscope gui A --compare B");
                }
            }
        });
    action
}

fn summary(ui: &mut egui::Ui, a: &Analysis, action: &mut Option<Action>) {
    let r = &a.run;
    egui::Grid::new("run")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            let row = |ui: &mut egui::Ui, k: &str, v: String| {
                ui.label(k);
                // Long values (the MPI library string) end in "…"; hover for all of it.
                ui.add(egui::Label::new(v.as_str()).truncate())
                    .on_hover_text(v);
                ui.end_row();
            };
            row(ui, "command", r.command.join(" "));
            row(
                ui,
                "ranks",
                hyscope_analyzer::model::ranks_label(r.ranks, &r.children),
            );
            if let Some(analysed) = r.ranks_analysed_label() {
                row(ui, "ranks analysed", analysed);
            }
            // The processes beyond the ranks, as the report lists them:
            // whole, wrapped at the panel's edge.
            for p in r.process_lines() {
                ui.label(p.label);
                ui.add(egui::Label::new(p.text).wrap());
                ui.end_row();
            }
            row(
                ui,
                "threads per rank",
                threads_per_rank(&r.threads_per_rank),
            );
            row(ui, "hosts", r.hosts.join(", "));
            row(ui, "duration", units::secs(r.duration_s));
            row(
                ui,
                "MPI",
                r.mpi_library.clone().unwrap_or_else(|| "-".into()),
            );
            if r.collector_init_s > 0.0 {
                row(
                    ui,
                    "collector in MPI_Init",
                    crate::report::collector_in_mpi_init(r.collector_init_s),
                );
            }
            row(
                ui,
                "OpenMP",
                r.openmp_runtime.clone().unwrap_or_else(|| "-".into()),
            );
            row(ui, "events", crate::report::run::events_text(r));
        });
    ui.separator();
    ui.heading("Findings");
    for f in &a.findings {
        ui.horizontal_wrapped(|ui| {
            ui.strong(&f.title);
            if f.costs_time() {
                ui.label(format!(
                    "{} ({})",
                    units::secs(f.cost_s),
                    units::percent(f.share_of_run)
                ));
            } else {
                ui.label("—");
            }
            if let Some(loc) = &f.location
                && ui
                    .small_button(&loc.label)
                    .on_hover_text("highlight its instances")
                    .clicked()
            {
                *action = Some(Action::Highlight {
                    address: loc.address,
                    label: loc.label.clone(),
                });
            }
        });
        ui.label(RichText::new(&f.what_to_do).italics());
        ui.add_space(4.0);
    }
    ui.separator();
    ui.heading("POP efficiencies");
    match &a.pop {
        Observable::Observed(p) => {
            pop_node(ui, &p.tree);
            for line in p.scope.lines() {
                ui.label(line);
            }
        }
        Observable::NotObservable(r) => {
            ui.weak(format!("not observable: {r}"));
        }
    }
    let memory = crate::report::memory_warning_text(a);
    let count = a.warnings.len() + usize::from(memory.is_some());
    if count > 0 {
        ui.separator();
        ui.collapsing(counted(count as u64, "warning", "warnings"), |ui| {
            for w in a.warnings.iter().chain(&memory) {
                ui.label(w);
            }
        });
    }
}

fn pop_node(ui: &mut egui::Ui, n: &PopNode) {
    let value = match &n.value {
        Observable::Observed(v) => units::percent(*v),
        Observable::NotObservable(r) => format!("n/a ({r})"),
    };
    let text = format!("{}: {value}", n.name);
    if n.children.is_empty() {
        ui.label(text).on_hover_text(&n.formula);
    } else {
        egui::CollapsingHeader::new(text)
            .default_open(true)
            .show(ui, |ui| {
                for c in &n.children {
                    pop_node(ui, c);
                }
            })
            .header_response
            .on_hover_text(&n.formula);
    }
}

fn regions(ui: &mut egui::Ui, a: &Analysis, filter: &str, action: &mut Option<Action>) {
    if not_observable(ui, &a.regions) {
        return;
    }
    let regions = a.regions.get().map(|v| v.as_slice()).unwrap_or_default();
    let header = [
        "region",
        "instances",
        "time",
        "fork/join",
        "imbalance",
        "barrier wait",
    ];
    table_with(ui, "regions", &header, |ui| {
        for r in regions
            .iter()
            .filter(|r| matches(&r.location.label, filter))
        {
            if ui
                .link(&r.location.label)
                .on_hover_text("highlight its instances")
                .clicked()
            {
                *action = Some(Action::Highlight {
                    address: r.location.address,
                    label: r.location.label.clone(),
                });
            }
            ui.label(r.instances.to_string());
            ui.label(format!(
                "{} ({})",
                units::secs(r.time_s),
                units::percent(r.share_of_run)
            ));
            ui.label(units::percent(r.fork_join_fraction));
            // Not known per region in profile mode (per-thread totals only).
            if r.per_thread_observed() {
                ui.label(crate::units::imbalance(r.imbalance));
            } else {
                ui.weak("n/a");
            }
            if r.barrier.wait_observed {
                ui.label(units::secs(r.barrier.wait_s));
            } else {
                ui.weak("n/a");
            }
            ui.end_row();
        }
    });
}

fn loops(ui: &mut egui::Ui, a: &Analysis, filter: &str, action: &mut Option<Action>) {
    if not_observable(ui, &a.loops) {
        return;
    }
    for l in a
        .loops
        .get()
        .into_iter()
        .flatten()
        .filter(|l| matches(&l.location.label, filter))
    {
        let schedule = l.schedule.get().cloned().unwrap_or_else(|| "?".into());
        let title = format!(
            "{}  {} ({}), imbalance {}, {schedule}",
            l.location.label,
            units::secs(l.time_s),
            units::percent(l.share_of_run),
            units::imbalance(l.imbalance)
        );
        egui::CollapsingHeader::new(title)
            .id_salt(("loop", l.location.address))
            .show(ui, |ui| {
                if ui.button("highlight instances").clicked() {
                    *action = Some(Action::Highlight {
                        address: l.location.address,
                        label: l.location.label.clone(),
                    });
                }
                ui.label(format!(
                    "instances {}, trip count {}, team {}",
                    l.instances,
                    l.trip_count_text(),
                    l.team_size
                ));
                if let Some(c) = l.chunks.get() {
                    ui.label(format!("chunks {c}"));
                }
                match &l.recommendation {
                    Observable::Observed(r) => {
                        ui.colored_label(
                            Color32::from_rgb(60, 170, 90),
                            format!("recommend {} (OMP_SCHEDULE={})", r.clause, r.omp_schedule),
                        );
                        // The prediction is per instance, the saving over the whole run.
                        ui.label(format!(
                            "predicted {} per instance ({:.2}× faster); saves {} over the run",
                            units::secs(r.predicted_s),
                            r.predicted_speedup,
                            units::secs(r.predicted_gain_s)
                        ));
                        ui.label(RichText::new(&r.evidence).italics());
                    }
                    Observable::NotObservable(r) => {
                        ui.weak(format!("no recommendation: {r}"));
                    }
                }
                if let Some(sims) = l.simulations.get() {
                    egui::Grid::new(("sims", l.location.address))
                        .striped(true)
                        .show(ui, |ui| {
                            for h in ["schedule", "per instance", "speedup", "imbalance"] {
                                ui.strong(h);
                            }
                            ui.end_row();
                            for s in sims {
                                ui.label(&s.schedule);
                                ui.label(units::secs(s.predicted_s));
                                ui.label(format!("{:.2}×", s.speedup));
                                ui.label(crate::units::imbalance(s.imbalance));
                                ui.end_row();
                            }
                        });
                }
            });
    }
}

fn mpi(ui: &mut egui::Ui, a: &Analysis, action: &mut Option<Action>) {
    if not_observable(ui, &a.mpi) {
        return;
    }
    let Some(m) = a.mpi.get() else { return };
    ui.label(format!(
        "MPI time {} ({})",
        units::secs(m.total_s),
        units::percent(m.share_of_run)
    ));
    let header = ["call", "count", "time", "bytes sent", "cv", "polls folded"];
    table_with(ui, "mpi_calls", &header, |ui| {
        for c in &m.calls {
            ui.label(&c.call);
            ui.label(c.count.to_string());
            ui.label(units::secs(c.total_s));
            ui.label(units::bytes(c.bytes_sent as f64));
            ui.label(format!("{:.2}", c.cv));
            // Unsuccessful polls the collector folded (trace `mpi.calls`).
            ui.label(if c.folded_polls > 0 {
                format!(
                    "{} in {}",
                    c.folded_polls,
                    counted(c.folded_rows, "row", "rows")
                )
            } else {
                String::new()
            });
            ui.end_row();
        }
    });
    ui.separator();
    let n = m.matrix.ranks as usize;
    // More ranks than cells: each cell sums a block of ranks, as in the TUI.
    let per = n.div_ceil(MATRIX_CELLS).max(1);
    let cells = n.div_ceil(per);
    ui.strong(if per == 1 {
        "Message matrix (bytes, sender -> receiver; click a cell to show its messages)".to_string()
    } else {
        format!("Message matrix (bytes, sender -> receiver; {per} ranks per cell)")
    });
    let grid = m.matrix.block_bytes(per);
    let max = grid.iter().flatten().copied().max().unwrap_or(0).max(1);
    let ranks = |cell: usize| {
        let (lo, hi) = (cell * per, ((cell + 1) * per).min(n) - 1);
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    };
    egui::Grid::new("matrix")
        .spacing([2.0, 2.0])
        .show(ui, |ui| {
            ui.label("");
            for j in 0..cells {
                ui.label((j * per).to_string());
            }
            ui.end_row();
            for (i, row) in grid.iter().enumerate() {
                ui.label((i * per).to_string());
                for (j, &b) in row.iter().enumerate() {
                    let v = (b as f64 / max as f64).sqrt();
                    let color =
                        Color32::from_rgb((40.0 + 200.0 * v) as u8, 60, (200.0 - 150.0 * v) as u8);
                    let resp = ui.add(egui::Button::new("  ").fill(if b == 0 {
                        Color32::TRANSPARENT
                    } else {
                        color
                    }));
                    let hover = format!("{} -> {}: {}", ranks(i), ranks(j), units::bytes(b as f64));
                    if resp.on_hover_text(hover).clicked() && per == 1 {
                        *action = Some(Action::RankPair(i as u32, j as u32));
                    }
                }
                ui.end_row();
            }
        });
    ui.separator();
    if let Some(w) = a.wait_states.get() {
        ui.strong(format!("Wait states: {}", units::secs(w.total_s)));
        for e in &w.by_kind {
            ui.label(format!(
                "{}: {} in {}",
                e.kind.name(),
                units::secs(e.seconds),
                counted(e.instances, "instance", "instances")
            ));
        }
    }
}

/// A table of labels, scrolled sideways when wider than the panel.
fn table(ui: &mut egui::Ui, id: &str, header: &[&str], rows: Vec<Vec<RichText>>) {
    table_with(ui, id, header, |ui| {
        for row in rows {
            for cell in row {
                ui.label(cell);
            }
            ui.end_row();
        }
    });
}

/// A table under `header` whose rows `body` adds (cells, then `end_row`),
/// scrolled sideways when wider than the panel: no column is ever cut.
fn table_with(ui: &mut egui::Ui, id: &str, header: &[&str], body: impl FnOnce(&mut egui::Ui)) {
    scrolled_grid(ui, id, header.len(), |ui| {
        for h in header {
            ui.strong(*h);
        }
        ui.end_row();
        body(ui);
    });
}

/// A striped grid of `columns` whose rows `body` adds, header included,
/// scrolled sideways when wider than the panel.
fn scrolled_grid(ui: &mut egui::Ui, id: &str, columns: usize, body: impl FnOnce(&mut egui::Ui)) {
    ui.scope(|ui| {
        // A solid bar, shown when not hovered: it tells that columns are cut.
        ui.spacing_mut().scroll = egui::style::ScrollStyle::solid();
        egui::ScrollArea::horizontal()
            .id_salt(id)
            .auto_shrink([false, true])
            .show(ui, |ui| {
                egui::Grid::new(id)
                    .num_columns(columns)
                    .striped(true)
                    .show(ui, body);
            });
    });
}

/// The MPI memory footprint as the report lays it out: per rank, the queue
/// pairs, the model's parameters and its projection to larger jobs.
fn memory(ui: &mut egui::Ui, a: &Analysis) {
    if not_observable(ui, &a.memory) {
        return;
    }
    let Some(m) = a.memory.get() else { return };
    use crate::report::memory as report;
    let cells = |rows: Vec<Vec<String>>| -> Vec<Vec<RichText>> {
        rows.into_iter()
            .map(|r| r.into_iter().map(RichText::new).collect())
            .collect()
    };
    ui.heading("MPI memory footprint");
    ui.label(format!(
        "job: N = {} node(s), C = {} rank(s) per node, H = {} HCA(s)",
        m.nodes, m.cores_per_node, m.hcas_per_node
    ));
    ui.label(format!("pattern: {}", m.pattern));
    if m.network_not_modelled.is_some() {
        ui.colored_label(ui.visuals().warn_fg_color, report::network_statement(m));
    } else {
        ui.label(report::network_statement(m));
    }
    let (header, rows) = report::rank_table(m, report::RANKS_LISTED);
    table(ui, "memory_ranks", &header, cells(rows));
    if m.per_rank.len() > report::RANKS_LISTED {
        ui.weak(format!(
            "… {} not listed",
            counted(
                (m.per_rank.len() - report::RANKS_LISTED) as u64,
                "more rank",
                "more ranks"
            )
        ));
    }
    ui.separator();
    ui.strong("Queue pairs per node (Didelot 2014 Table 3.4)");
    let (header, rows) = report::qp_table(m);
    table(ui, "memory_qps", &header, cells(rows));
    ui.separator();
    ui.strong("Model parameters (hover for the source)");
    egui::Grid::new("memory_parameters")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            for p in &m.parameters {
                ui.label(&p.name).on_hover_text(&p.source);
                ui.label(units::bytes(p.value)).on_hover_text(&p.source);
                ui.end_row();
            }
            ui.label(report::BUFFER_BYTES_PER_CONNECTION)
                .on_hover_text(report::BUFFER_BYTES_PER_CONNECTION_MEANS);
            ui.label(report::modelled_bytes(m.bytes_per_connection))
                .on_hover_text(report::network_statement(m));
            ui.end_row();
            ui.label("group maps per rank")
                .on_hover_text("Kamal 2013 §3.1");
            ui.label(units::bytes(m.group_map_bytes_per_rank));
            ui.end_row();
            ui.label("communicators");
            ui.label(m.communicators.to_string());
            ui.end_row();
        });
    for c in &m.full_connection_calls {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "! {} at {} forces full connection ({} on {})",
                c.call,
                c.location.as_ref().map_or("?", |l| l.label.as_str()),
                counted(c.count, "call", "calls"),
                counted(c.ranks.len() as u64, "rank", "ranks")
            ),
        );
    }
    ui.separator();
    ui.strong(format!(
        "Projection (memory per core: {})",
        m.memory_per_core
            .map_or("unknown".into(), |b| units::bytes(b as f64))
    ));
    ui.label(report::ranks_per_node_assumed(m));
    let (header, rows) = report::projection_table(m);
    let total = header.iter().position(|h| *h == "total/rank");
    let rows = cells(rows)
        .into_iter()
        .zip(&m.projections)
        .map(|(mut row, p)| {
            // A total over the memory per core in red, as the report marks it.
            if let Some(t) = total
                && p.exceeds_memory_per_core == Some(true)
            {
                row[t] = row[t].clone().color(ui.visuals().error_fg_color).strong();
            }
            row
        })
        .collect();
    table(ui, "memory_projection", &header, rows);
    if m.projections
        .iter()
        .any(|p| p.exceeds_memory_per_core == Some(true))
    {
        ui.colored_label(
            ui.visuals().error_fg_color,
            "totals in red exceed the memory per core",
        );
    }
}

fn energy(ui: &mut egui::Ui, a: &Analysis) {
    if not_observable(ui, &a.energy) {
        return;
    }
    let Some(e) = a.energy.get() else { return };
    ui.label(format!(
        "total {}, average power {}, EDP {}",
        units::joules(e.total_joules),
        units::watts(e.avg_power_w),
        units::joule_seconds(e.edp_js)
    ));
    egui::Grid::new("phases").striped(true).show(ui, |ui| {
        for h in ["phase", "time", "energy"] {
            ui.strong(h);
        }
        ui.end_row();
        for p in &e.phases {
            ui.label(&p.phase);
            ui.label(units::secs(p.seconds));
            ui.label(units::joules(p.joules));
            ui.end_row();
        }
    });
    json_section(ui, "domains", &e.domains);
}

/// Any serde value as a collapsible tree (for the sections without a dedicated layout).
fn json_section<T: serde::Serialize>(ui: &mut egui::Ui, name: &str, value: &T) {
    match serde_json::to_value(value) {
        Ok(v) => json_tree(ui, name, &v, 0),
        Err(e) => {
            ui.weak(e.to_string());
        }
    }
}

fn json_tree(ui: &mut egui::Ui, name: &str, v: &serde_json::Value, depth: usize) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            egui::CollapsingHeader::new(name)
                .id_salt((name, depth, map.len()))
                .default_open(depth < 1)
                .show(ui, |ui| {
                    for (k, v) in map {
                        json_tree(ui, k, v, depth + 1);
                    }
                });
        }
        Value::Array(items) => {
            egui::CollapsingHeader::new(format!("{name} [{}]", items.len()))
                .id_salt((name, depth, items.len()))
                .show(ui, |ui| {
                    for (i, v) in items.iter().enumerate().take(500) {
                        json_tree(ui, &i.to_string(), v, depth + 1);
                    }
                });
        }
        Value::Number(n) => {
            let s = n.as_f64().map_or_else(
                || n.to_string(),
                |f| {
                    if f.fract() == 0.0 {
                        format!("{f:.0}")
                    } else {
                        format!("{f:.4}")
                    }
                },
            );
            ui.label(format!("{name}: {s}"));
        }
        other => {
            ui.label(format!("{name}: {other}"));
        }
    }
}

/// A count with its noun, singular for one: `1 warning`, `2 warnings`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn matches(label: &str, filter: &str) -> bool {
    filter.is_empty() || label.to_lowercase().contains(&filter.to_lowercase())
}

/// Search results over the analysis: regions, loops and MPI call sites whose
/// label, function or file contains `q`. (label, address)
pub fn search(a: &Analysis, q: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    if q.is_empty() {
        return out;
    }
    let hit = |l: &hyscope_analyzer::CodeLocation| {
        [Some(&l.label), l.function.as_ref(), l.file.as_ref()]
            .into_iter()
            .flatten()
            .any(|s| matches(s, q))
    };
    for r in a.regions.get().into_iter().flatten() {
        if hit(&r.location) {
            out.push((format!("region {}", r.location.label), r.location.address));
        }
    }
    for l in a.loops.get().into_iter().flatten() {
        if hit(&l.location) {
            out.push((format!("loop {}", l.location.label), l.location.address));
        }
    }
    for c in a
        .mpi
        .get()
        .map(|m| m.callsites.as_slice())
        .unwrap_or_default()
    {
        if let Some(loc) = &c.location
            && (hit(loc) || matches(&c.call, q))
        {
            out.push((format!("{} {}", c.call, loc.label), loc.address));
        }
    }
    out
}

/// Threads per rank in a line: one number when every rank ran as many, else
/// the range and the ranks' list (cut after 16: thousands of ranks).
fn threads_per_rank(threads: &[u32]) -> String {
    let (Some(lo), Some(hi)) = (threads.iter().min(), threads.iter().max()) else {
        return "-".into();
    };
    if lo == hi {
        return if threads.len() > 1 {
            format!("{lo} on every rank")
        } else {
            lo.to_string()
        };
    }
    let shown: Vec<String> = threads.iter().take(16).map(u32::to_string).collect();
    let more = if threads.len() > 16 { ", …" } else { "" };
    format!("{lo}–{hi} (by rank: {}{more})", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::threads_per_rank;

    #[test]
    fn threads_per_rank_reads_as_one_number_when_uniform() {
        assert_eq!(threads_per_rank(&[]), "-");
        assert_eq!(threads_per_rank(&[4]), "4");
        assert_eq!(threads_per_rank(&[2; 256]), "2 on every rank");
        assert_eq!(threads_per_rank(&[2, 4, 2]), "2–4 (by rank: 2, 4, 2)");
        let many: Vec<u32> = (0..20).map(|r| 1 + r % 2).collect();
        assert_eq!(
            threads_per_rank(&many),
            "1–2 (by rank: 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, …)"
        );
    }
}
