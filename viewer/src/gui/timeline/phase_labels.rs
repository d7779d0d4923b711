//! Where the names of a phase row's bars go: pure geometry, no painter.
//!
//! A phase row (`lane`) holds `levels` equal bands, the outermost phases in
//! the top one, and each bar lies in one band. A name goes, by preference:
//! wholly inside its bar; beside it (right, then left) on background that no
//! bar or name takes; or inside, cut to the bar's width with "…", when at
//! least [`MIN_ELIDED_CHARS`] characters of it fit. It is set in the bar's
//! own band when a font of at least [`MIN_SIZE`] points fits the band, else
//! over the bands next to it where these are free. No name overlaps another
//! name or a bar other than its own.

use std::collections::HashMap;
use std::ops::Range;

use eframe::egui::{FontId, Pos2, Rect, Vec2};

/// Names smaller than this many points are not drawn.
pub const MIN_SIZE: f32 = 7.0;
/// A cut name keeps at least this many characters before its "…".
pub const MIN_ELIDED_CHARS: usize = 2;
/// Space between a name and the edges of its bar.
const PAD: f32 = 2.0;
/// Space kept free between a name and any other bar or name.
const GAP: f32 = 1.0;
/// Space kept free after a name set beside its bar, so that it is not read
/// as the next bar's.
const FAR_GAP: f32 = 4.0;

/// A phase's bar: from `x0` to `x1` in band `level` (0: the top one).
#[derive(Debug, Clone, Copy)]
pub struct Bar<'a> {
    pub x0: f32,
    pub x1: f32,
    pub level: usize,
    pub name: &'a str,
}

/// A name placed: the bar it names (an index into the bars), the rectangle
/// of its text, the text (the name, or its cut form ending in "…"), the font,
/// and whether it stands beside its bar (on the background) rather than on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub bar: usize,
    pub rect: Rect,
    pub text: String,
    pub font: FontId,
    pub beside: bool,
}

/// The rectangle of `bar` in a row `lane` of `levels` bands.
pub fn bar_rect(lane: Rect, levels: usize, bar: &Bar) -> Rect {
    let h = lane.height() / levels.max(1) as f32;
    let top = lane.top() + bar.level as f32 * h;
    Rect::from_min_max(Pos2::new(bar.x0, top), Pos2::new(bar.x1, top + h))
}

/// The names of `bars` in the row `lane` of `levels` bands, in `font` or
/// smaller (down to [`MIN_SIZE`]); `measure` gives the size of a text in a
/// font. Wider bars are named first. A bar with no room for a readable name
/// goes without.
pub fn place(
    bars: &[Bar],
    lane: Rect,
    levels: usize,
    font: &FontId,
    measure: &dyn Fn(&str, &FontId) -> Vec2,
) -> Vec<Label> {
    let levels = levels.max(1);
    let band_h = lane.height() / levels as f32;
    let mut taken = Taken::new(lane, levels);
    for b in bars {
        taken.mark(b.level..b.level + 1, b.x0, b.x1);
    }
    let spans: Vec<Vec<Range<usize>>> = (0..levels).map(|own| spans(own, levels)).collect();
    let mut texts = Texts::new(font, measure);
    let mut order: Vec<usize> = (0..bars.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        let w = |i: usize| bars[i].x1 - bars[i].x0;
        w(b).total_cmp(&w(a))
            .then(bars[a].x0.total_cmp(&bars[b].x0))
    });
    let mut out = Vec::new();
    for i in order {
        let bar = bars[i];
        if bar.level >= levels || bar.name.is_empty() {
            continue;
        }
        let own = (bar.level, taken.cols(bar.x0, bar.x1));
        let inner = (bar.x0 + PAD, bar.x1 - PAD);
        // No room inside, nor on either side in its own band: the lot of
        // most bars when thousands are in view.
        let band = bar.level..bar.level + 1;
        if inner.1 <= inner.0
            && !taken.free(band.clone(), bar.x1 + PAD - GAP, bar.x1 + PAD, &own)
            && !taken.free(band, bar.x0 - PAD, bar.x0 - PAD + GAP, &own)
        {
            continue;
        }
        for span in &spans[bar.level] {
            let (y0, y1) = (
                lane.top() + span.start as f32 * band_h,
                lane.top() + span.end as f32 * band_h,
            );
            let Some((f, t)) = texts.fit(bar.name, y1 - y0) else {
                continue;
            };
            let at =
                |x: f32, t: Vec2| Rect::from_min_size(Pos2::new(x, (y0 + y1) / 2.0 - t.y / 2.0), t);
            // Free from `before` left of `r` to `after` right of it.
            let free = |r: Rect, (before, after): (f32, f32)| {
                r.left() >= lane.left()
                    && r.right() <= lane.right()
                    && taken.free(span.clone(), r.left() - before, r.right() + after, &own)
            };
            // Inside, right of the bar, left of it; a name beside its bar
            // keeps clear of what follows on its far side.
            let whole = [
                (t.x <= inner.1 - inner.0).then(|| (at(inner.0, t), (GAP, GAP), false)),
                Some((at(bar.x1 + PAD, t), (GAP, FAR_GAP), true)),
                Some((at(bar.x0 - PAD - t.x, t), (FAR_GAP, GAP), true)),
            ]
            .into_iter()
            .flatten()
            .find(|&(r, margins, _)| free(r, margins));
            let placed = match whole {
                Some((rect, _, beside)) => Some((rect, bar.name.to_string(), beside)),
                None => texts
                    .cut(bar.name, &f, inner.1 - inner.0)
                    .map(|(text, t)| (at(inner.0, t), text))
                    .filter(|(r, _)| free(*r, (GAP, GAP)))
                    .map(|(r, text)| (r, text, false)),
            };
            if let Some((rect, text, beside)) = placed {
                taken.mark(span.clone(), rect.left(), rect.right());
                out.push(Label {
                    bar: i,
                    rect,
                    text,
                    font: f,
                    beside,
                });
                break;
            }
        }
    }
    out
}

/// The runs of bands a name of a bar in band `own` may take, fewest bands
/// first (of as many, those reaching down first: a bar's inner phases, and
/// so the free space of a phase without any, are below it).
fn spans(own: usize, levels: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for n in 1..=levels {
        for lo in (own.saturating_sub(n - 1)..=own).rev() {
            if lo + n <= levels {
                out.push(lo..lo + n);
            }
        }
    }
    out
}

/// The names' fonts and sizes, measured once per name and height (a frame
/// may hold thousands of bars of a few names).
struct Texts<'a, 'm> {
    font: &'m FontId,
    measure: &'m dyn Fn(&str, &FontId) -> Vec2,
    /// Per name and height: the font it fits in, with its size there.
    fits: HashMap<(&'a str, u32), Option<(FontId, Vec2)>>,
    /// Per name and font size: its cuts, longest first, with their sizes.
    cuts: HashMap<(&'a str, u32), Vec<(String, Vec2)>>,
}

impl<'a, 'm> Texts<'a, 'm> {
    fn new(font: &'m FontId, measure: &'m dyn Fn(&str, &FontId) -> Vec2) -> Texts<'a, 'm> {
        Texts {
            font,
            measure,
            fits: HashMap::new(),
            cuts: HashMap::new(),
        }
    }

    /// The largest size of the font, in whole points down to [`MIN_SIZE`],
    /// in which `name` is at most `height` high, with its size in it.
    fn fit(&mut self, name: &'a str, height: f32) -> Option<(FontId, Vec2)> {
        let (font, measure) = (self.font, self.measure);
        self.fits
            .entry((name, height.to_bits()))
            .or_insert_with(|| {
                let mut size = font.size.min(height);
                while size >= MIN_SIZE {
                    let f = FontId::new(size, font.family.clone());
                    let t = measure(name, &f);
                    if t.y <= height + 0.01 {
                        return Some((f, t));
                    }
                    size -= 1.0;
                }
                None
            })
            .clone()
    }

    /// The longest cut of `name` (at least [`MIN_ELIDED_CHARS`] characters
    /// and "…") at most `width` wide in `font`, with its size.
    fn cut(&mut self, name: &'a str, font: &FontId, width: f32) -> Option<(String, Vec2)> {
        let measure = self.measure;
        let cuts = self
            .cuts
            .entry((name, font.size.to_bits()))
            .or_insert_with(|| {
                let chars: Vec<char> = name.chars().collect();
                (MIN_ELIDED_CHARS..chars.len())
                    .rev()
                    .map(|k| {
                        let text: String = chars[..k].iter().chain(['…'].iter()).collect();
                        let t = measure(&text, font);
                        (text, t)
                    })
                    .collect()
            });
        cuts.iter().find(|(_, t)| t.x <= width).cloned()
    }
}

/// How many bars and names take each pixel column of each band (a bar's
/// columns counted whole, so that no fraction of one is taken for free).
struct Taken {
    left: f32,
    bands: Vec<Vec<u16>>,
}

impl Taken {
    fn new(lane: Rect, levels: usize) -> Taken {
        let cols = lane.width().max(0.0).ceil() as usize + 1;
        Taken {
            left: lane.left(),
            bands: vec![vec![0; cols]; levels],
        }
    }

    fn cols(&self, x0: f32, x1: f32) -> Range<usize> {
        let n = self.bands.first().map_or(0, Vec::len);
        let a = ((x0 - self.left).floor().max(0.0) as usize).min(n);
        let b = ((x1 - self.left).ceil().max(0.0) as usize).min(n);
        a..b.max(a)
    }

    fn mark(&mut self, bands: Range<usize>, x0: f32, x1: f32) {
        let cols = self.cols(x0, x1);
        for band in &mut self.bands[bands] {
            for c in &mut band[cols.clone()] {
                *c = c.saturating_add(1);
            }
        }
    }

    /// Whether nothing takes the columns from `x0` to `x1` in `bands` but
    /// the bar `own` (its band, its columns).
    fn free(&self, bands: Range<usize>, x0: f32, x1: f32, own: &(usize, Range<usize>)) -> bool {
        let cols = self.cols(x0, x1);
        let first = bands.start;
        self.bands[bands].iter().enumerate().all(|(i, band)| {
            band[cols.clone()]
                .iter()
                .zip(cols.clone())
                .all(|(&n, c)| n == 0 || (n == 1 && first + i == own.0 && own.1.contains(&c)))
        })
    }
}

#[cfg(test)]
mod tests {
    use eframe::egui::{FontId, Rect, Vec2, pos2};

    use super::{Bar, Label, MIN_ELIDED_CHARS, MIN_SIZE, bar_rect, place};

    /// Text as egui's proportional font about sets it.
    fn measure(t: &str, f: &FontId) -> Vec2 {
        Vec2::new(0.55 * f.size * t.chars().count() as f32, 1.25 * f.size)
    }

    /// Whether `a` and `b` share more than an edge.
    fn overlap(a: Rect, b: Rect) -> bool {
        a.left() < b.right() && b.left() < a.right() && a.top() < b.bottom() && b.top() < a.bottom()
    }

    fn bar(x0: f32, x1: f32, level: usize, name: &str) -> Bar<'_> {
        Bar {
            x0,
            x1,
            level,
            name,
        }
    }

    /// What holds for any bars: each name is its bar's, whole or cut to at
    /// least two characters and "…", readable, in the lane, on its own bar
    /// or beside it, and overlaps no other name and no other bar.
    fn check(bars: &[Bar], lane: Rect, levels: usize, labels: &[Label]) {
        for l in labels {
            let b = &bars[l.bar];
            let own = bar_rect(lane, levels, b);
            assert!(l.font.size >= MIN_SIZE, "{l:?}");
            assert!(
                lane.expand(0.01).contains_rect(l.rect),
                "{l:?} leaves {lane:?}"
            );
            let cut = l.text.strip_suffix('…');
            match cut {
                None => assert_eq!(l.text, b.name),
                Some(p) => {
                    assert!(
                        b.name.starts_with(p) && p.chars().count() >= MIN_ELIDED_CHARS,
                        "{l:?}"
                    )
                }
            }
            if l.beside {
                assert!(!overlap(l.rect, own), "{l:?} beside {own:?} overlaps it");
                assert!(cut.is_none(), "{l:?}");
            } else {
                assert!(
                    b.x0 <= l.rect.left() && l.rect.right() <= b.x1,
                    "{l:?} leaves its bar {own:?}"
                );
            }
            for (j, other) in bars.iter().enumerate() {
                let r = bar_rect(lane, levels, other);
                assert!(
                    j == l.bar || !overlap(l.rect, r),
                    "{l:?} overlaps bar {j} {other:?}"
                );
            }
        }
        for (i, a) in labels.iter().enumerate() {
            for b in &labels[i + 1..] {
                assert!(!overlap(a.rect, b.rect), "{a:?} overlaps {b:?}");
            }
        }
    }

    fn named<'a>(bars: &[Bar<'a>], labels: &[Label]) -> Vec<(&'a str, String)> {
        let mut out: Vec<_> = labels
            .iter()
            .map(|l| (bars[l.bar].name, l.text.clone()))
            .collect();
        out.sort();
        out
    }

    /// `tests/phases/nested.c` at the default window size, a line per
    /// depth (16 px bars, a 495 px wide timeline): `setup`, too narrow for
    /// its name, has it on its left; of the steps too narrow for theirs, the
    /// first has it on its left, the second cut; the halos, all too narrow,
    /// have theirs beside them where the gap to the next one holds it.
    #[test]
    fn nested_phases_are_named_at_the_default_size() {
        let font = FontId::proportional(12.0);
        let lane = Rect::from_min_max(pos2(0.0, 0.0), pos2(495.0, 16.0));
        let depth0 = [
            bar(190.0, 215.0, 0, "setup"),
            bar(215.0, 445.0, 0, "solver"),
        ];
        let depth1 = [
            bar(215.0, 240.0, 0, "step"),
            bar(240.0, 266.0, 0, "step"),
            bar(266.0, 400.0, 0, "step"),
            bar(400.0, 445.0, 0, "step"),
        ];
        let depth2 = [
            bar(215.0, 227.0, 0, "halo"),
            bar(240.0, 252.0, 0, "halo"),
            bar(266.0, 278.0, 0, "halo"),
            bar(400.0, 412.0, 0, "halo"),
        ];
        let l0 = place(&depth0, lane, 1, &font, &measure);
        check(&depth0, lane, 1, &l0);
        assert_eq!(
            named(&depth0, &l0),
            [("setup", "setup".into()), ("solver", "solver".into())]
        );
        assert!(l0.iter().any(|l| l.beside && l.rect.right() <= 190.0));
        let l1 = place(&depth1, lane, 1, &font, &measure);
        check(&depth1, lane, 1, &l1);
        assert_eq!(
            named(&depth1, &l1),
            [
                ("step", "step".into()),
                ("step", "step".into()),
                ("step", "step".into()),
                ("step", "st…".into()),
            ]
        );
        let l2 = place(&depth2, lane, 1, &font, &measure);
        check(&depth2, lane, 1, &l2);
        // The second halo has a halo 14 px after it and the first's name
        // before it: no room.
        let mut halos: Vec<usize> = l2.iter().map(|l| l.bar).collect();
        halos.sort();
        assert_eq!(halos, [0, 2, 3], "{l2:?}");
        assert!(l2.iter().all(|l| l.text == "halo" && l.beside));
    }

    /// In a line of one band, every bar wide enough for a cut name gets a
    /// name (its own inside is free for it: names beside other bars never
    /// take it); in any case no name overlaps another or another bar.
    #[test]
    fn every_bar_wide_enough_for_a_cut_name_is_named() {
        let font = FontId::proportional(12.0);
        let n = 2.0 * super::PAD + measure("ab…", &font).x;
        let lane = Rect::from_min_max(pos2(0.0, 0.0), pos2(600.0, 16.0));
        let names = ["solver", "step", "halo", "alltoall", "io:checkpoint", "x"];
        let mut seed = 7u64;
        let mut next = move |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for _ in 0..300 {
            let mut bars = Vec::new();
            let mut x = next(20) as f32;
            while x < 590.0 {
                let w = 1.0 + next(80) as f32 + next(10) as f32 / 10.0;
                let x1 = (x + w).min(600.0);
                bars.push(bar(x, x1, 0, names[next(6) as usize]));
                x = x1 + [0.0, 0.0, 3.0, 30.0][next(4) as usize];
            }
            let labels = place(&bars, lane, 1, &font, &measure);
            check(&bars, lane, 1, &labels);
            for (i, b) in bars.iter().enumerate() {
                if b.x1 - b.x0 >= n {
                    assert!(labels.iter().any(|l| l.bar == i), "{b:?} unnamed");
                }
            }
        }
        // Stacked bands, bars anywhere (NVTX start/end ranges may overlap
        // in a band): no name overlaps another or a bar not its own.
        for height in [10.0, 16.0, 24.0, 40.0] {
            let lane = Rect::from_min_max(pos2(0.0, 0.0), pos2(600.0, height));
            for _ in 0..100 {
                let bars: Vec<Bar> = (0..next(40))
                    .map(|_| {
                        let x = next(600) as f32 + next(10) as f32 / 10.0;
                        let w = 1.0 + next(120) as f32;
                        bar(
                            x,
                            (x + w).min(600.0),
                            next(3) as usize,
                            names[next(6) as usize],
                        )
                    })
                    .collect();
                let labels = place(&bars, lane, 3, &font, &measure);
                check(&bars, lane, 3, &labels);
            }
        }
    }

    /// Every depth stacked in one thin line (a small window): the bands are
    /// too thin for a name, so names stand over free bands only: `setup`,
    /// with nothing inside it, across the whole line; `solver`, covered by
    /// its steps, and the steps and halos, without room, go unnamed.
    #[test]
    fn stacked_bands_name_only_where_the_bands_above_are_free() {
        let font = FontId::proportional(12.0);
        let lane = Rect::from_min_max(pos2(0.0, 0.0), pos2(300.0, 12.0));
        let bars = [
            bar(10.0, 60.0, 0, "setup"),
            bar(60.0, 300.0, 0, "solver"),
            bar(60.0, 180.0, 1, "step"),
            bar(180.0, 300.0, 1, "step"),
            bar(60.0, 70.0, 2, "halo"),
            bar(180.0, 190.0, 2, "halo"),
        ];
        let labels = place(&bars, lane, 3, &font, &measure);
        check(&bars, lane, 3, &labels);
        assert_eq!(named(&bars, &labels), [("setup", "setup".into())]);
        assert!(labels[0].rect.height() > lane.height() / 3.0);
        // The same in bands of a readable height: all named, within their
        // own bands (inside, or beside where the band is free).
        let tall = Rect::from_min_max(pos2(0.0, 0.0), pos2(300.0, 48.0));
        let labels = place(&bars, tall, 3, &font, &measure);
        check(&bars, tall, 3, &labels);
        assert_eq!(labels.len(), bars.len(), "{labels:?}");
        for l in &labels {
            let band = bar_rect(tall, 3, &bars[l.bar]);
            assert!(band.top() <= l.rect.top() && l.rect.bottom() <= band.bottom());
        }
    }

    /// A band one line of text high keeps the full font; a name that fits
    /// no band is left out.
    #[test]
    fn the_font_shrinks_to_the_band_and_no_further_than_readable() {
        let font = FontId::proportional(12.0);
        let tall = Rect::from_min_max(pos2(0.0, 0.0), pos2(400.0, 16.0));
        let bars = [bar(0.0, 400.0, 0, "solver")];
        assert_eq!(place(&bars, tall, 1, &font, &measure)[0].font.size, 12.0);
        let thin = Rect::from_min_max(pos2(0.0, 0.0), pos2(400.0, 10.0));
        assert_eq!(place(&bars, thin, 1, &font, &measure)[0].font.size, 8.0);
        let thinner = Rect::from_min_max(pos2(0.0, 0.0), pos2(400.0, 8.0));
        assert!(place(&bars, thinner, 1, &font, &measure).is_empty());
    }
}
