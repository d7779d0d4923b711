//! How a compared item is named wherever a comparison is shown (the text of
//! `report A B`, the TUI's and the GUI's Differences): its section's noun,
//! then its name, unless the name already says what it is.

use crate::model::{CompareItem, CompareRow};

/// `region k.c:33`, `loop k.c:35`, `phase solver`, `POP MPI load
/// balance`; an MPI call by its name (`MPI_Allreduce`), a wait state as
/// MPI's (`MPI late sender`, `MPI wait at N×N`: never a second "wait");
/// the messages as `point-to-point messages`; the run's own values
/// (duration, energy) as `run`.
pub fn label(section: &str, item: &str) -> String {
    match section {
        "run" | "energy" => "run".into(),
        "mpi" => item.into(),
        "wait" => format!("MPI {item}"),
        "pop" => format!("POP {item}"),
        "messages" => format!("{item} messages"),
        _ => format!("{section} {item}"),
    }
}

impl CompareRow {
    /// Its item's [`label`].
    pub fn label(&self) -> String {
        label(&self.section, &self.item)
    }
}

impl CompareItem {
    /// Its [`label`].
    pub fn label(&self) -> String {
        label(&self.section, &self.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WaitKind;

    /// No label says a word twice: not the wait states (the kinds' own
    /// names say "wait"), not the MPI calls (`MPI_…`).
    #[test]
    fn no_label_repeats_a_word() {
        let mut items: Vec<(&str, &str)> =
            WaitKind::ALL.iter().map(|k| ("wait", k.name())).collect();
        items.extend([
            ("mpi", "MPI_Allreduce"),
            ("run", "job"),
            ("energy", "job"),
            ("pop", "MPI parallel efficiency"),
            ("messages", "point-to-point"),
            ("region", "k.c:33"),
            ("loop", "k.c:35"),
            ("phase", "solver"),
        ]);
        for (section, item) in items {
            let l = label(section, item);
            let words: Vec<String> = l
                .split(|c: char| c.is_whitespace() || c == '_')
                .map(str::to_lowercase)
                .collect();
            for (i, w) in words.iter().enumerate() {
                assert!(!words[i + 1..].contains(w), "{l:?} says {w:?} twice");
            }
        }
        assert_eq!(label("wait", "wait at N×N"), "MPI wait at N×N");
        assert_eq!(label("wait", "late sender"), "MPI late sender");
        assert_eq!(label("mpi", "MPI_Recv"), "MPI_Recv");
        assert_eq!(label("region", "k.c:33"), "region k.c:33");
        assert_eq!(label("run", "job"), "run");
    }
}
