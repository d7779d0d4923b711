//! The tooltip of a phase bar with no room for its name: hovering a bar
//! that does not hold its whole name (unnamed, named beside it, or cut to
//! "…") tells the phase's name, its depth and the phase it is in, its
//! duration and its rank and thread.

use eframe::egui::{self, Pos2, Rect};
use hyscope_analyzer::phases::{PhaseLanes, encloses};
use hyscope_format::PhaseRecord;

use crate::units;

/// A bar narrower than this (px) is found within this width around its
/// middle, so that a bar of one pixel can be pointed at.
const MIN_HIT_W: f32 = 6.0;

/// A phase bar drawn without its whole name inside it.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The bar as drawn.
    pub rect: Rect,
    pub rank: u32,
    pub phase: PhaseRecord,
}

/// The bar under `p`, of those in `hits`: one the pointer is on, else the
/// nearest whose widened hit area it is in; the narrowest of equals (an
/// inner range drawn over an outer one).
pub fn at(hits: &[Hit], p: Pos2) -> Option<&Hit> {
    hits.iter()
        .filter(|h| {
            let pad = ((MIN_HIT_W - h.rect.width()) / 2.0).max(0.0);
            h.rect.expand2(egui::vec2(pad, 0.0)).contains(p)
        })
        .min_by(|a, b| {
            let off = |h: &Hit| (h.rect.left() - p.x).max(p.x - h.rect.right()).max(0.0);
            off(a)
                .total_cmp(&off(b))
                .then(a.rect.width().total_cmp(&b.rect.width()))
        })
}

/// The tooltip's lines: the name; its depth and the phase it is in (`parent`);
/// its duration; its rank and thread.
pub fn lines(hit: &Hit, parent: Option<&str>) -> [String; 4] {
    let p = &hit.phase;
    let depth = match (p.depth, parent) {
        (0, _) => "depth 0 (outermost)".to_string(),
        (d, Some(parent)) => format!("depth {d}, in {parent}"),
        (d, None) => format!("depth {d}"),
    };
    [
        p.name.clone(),
        depth,
        format!(
            "duration {}",
            units::ns(p.end_ns.saturating_sub(p.start_ns) as f64)
        ),
        format!("rank {} thread {}", hit.rank, p.thread),
    ]
}

/// Show the tooltip of `hit` at the pointer over `resp`, its parent found
/// among its rank's phases in `lanes`.
pub fn show(resp: &egui::Response, lanes: &PhaseLanes, hit: &Hit) {
    let p = &hit.phase;
    let parent = lanes
        .in_window(hit.rank, p.start_ns, p.end_ns.max(p.start_ns + 1))
        .find(|outer| encloses(outer, p))
        .map(|outer| outer.name.clone());
    let [name, rest @ ..] = lines(hit, parent.as_deref());
    resp.clone().on_hover_ui_at_pointer(|ui| {
        ui.strong(name);
        for l in rest {
            ui.label(l);
        }
    });
}

#[cfg(test)]
mod tests {
    use eframe::egui::{Rect, pos2};
    use hyscope_format::PhaseRecord;

    use super::{Hit, at, lines};

    fn hit(x0: f32, x1: f32, name: &str) -> Hit {
        Hit {
            rect: Rect::from_min_max(pos2(x0, 0.0), pos2(x1, 16.0)),
            rank: 3,
            phase: PhaseRecord::api(1, name, 1_000, 13_500, 2),
        }
    }

    /// A one-pixel bar is found a few pixels off; of two, the one under
    /// the pointer, else the nearer; nothing far from both.
    #[test]
    fn a_narrow_bar_is_found_around_it() {
        let hits = [hit(100.0, 101.0, "a"), hit(104.0, 105.0, "b")];
        let name = |x: f32, y: f32| at(&hits, pos2(x, y)).map(|h| h.phase.name.clone());
        assert_eq!(name(98.5, 8.0).as_deref(), Some("a"));
        assert_eq!(name(100.5, 8.0).as_deref(), Some("a"));
        assert_eq!(name(103.0, 8.0).as_deref(), Some("b"));
        assert_eq!(name(104.5, 8.0).as_deref(), Some("b"));
        assert_eq!(name(110.0, 8.0), None);
        assert_eq!(name(100.5, 20.0), None, "below the lane");
    }

    #[test]
    fn the_lines_name_depth_parent_duration_and_rank() {
        let h = hit(0.0, 1.0, "halo");
        assert_eq!(
            lines(&h, Some("step")),
            [
                "halo".to_string(),
                "depth 2, in step".into(),
                format!("duration {}", crate::units::ns(12_500.0)),
                "rank 3 thread 1".into(),
            ]
        );
    }
}
