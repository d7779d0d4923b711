//! The report's energy section.

use std::fmt::Write as _;

use hyscope_analyzer::*;

use super::table::{Table, section};
use crate::units;

/// Energy and power per domain and per phase (RAPL), or why not measured.
pub fn energy(out: &mut String, a: &Analysis) {
    section(out, "Energy");
    match &a.energy {
        Observable::NotObservable(r) => {
            let _ = writeln!(out, "  {r}");
        }
        Observable::Observed(e) => {
            let _ = writeln!(
                out,
                "  total {}, average power {}, energy-delay product {}",
                units::joules(e.total_joules),
                units::watts(e.avg_power_w),
                units::joule_seconds(e.edp_js)
            );
            let mut t = Table::new(&["host", "rank", "domain", "package", "joules", "power"]);
            for d in &e.domains {
                t.row(vec![
                    d.host.clone(),
                    d.rank.to_string(),
                    d.metric.clone(),
                    d.package.to_string(),
                    units::joules(d.joules),
                    units::watts(d.avg_power_w),
                ]);
            }
            t.render(out);
            if !e.phases.is_empty() {
                super::phases::missing(out, a, Some(""));
            }
            let mut t = Table::new(&["phase", "time per rank", "joules"]);
            for p in &e.phases {
                t.row(vec![
                    p.phase.clone(),
                    units::secs(p.seconds),
                    units::joules(p.joules),
                ]);
            }
            t.render(out);
        }
    }
}
