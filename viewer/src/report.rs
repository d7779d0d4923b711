//! `hyscope report <trace> [B] [--json]`: the analysis as readable text (or
//! JSON), or the comparison of two traces.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use hyscope_analyzer::*;

mod phases;

/// How the barrier wait was measured when the runtime's own wait events do
/// not split it (libomp: they span the whole barrier).
const ARRIVAL_NOTE: &str = "  barrier wait = until the team's last thread arrived, sync = the rest (release, last gather): libomp's wait events span the whole barrier\n";

#[derive(clap::Args)]
pub struct Args {
    /// The trace directory.
    pub trace: PathBuf,
    /// A second trace: compare TRACE (A) with it (B).
    pub other: Option<PathBuf>,
    /// Print JSON (the analyzer's result model) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Rank counts to project the MPI memory footprint to.
    #[arg(long, value_delimiter = ',', default_values_t = [1_024u64, 32_768, 1_048_576])]
    pub project: Vec<u64>,
    /// Memory per core in bytes for the projection warning (default: this machine's).
    #[arg(long)]
    pub memory_per_core: Option<u64>,
    /// HCAs per node (H of the queue-pair formulas).
    #[arg(long, default_value_t = 1)]
    pub hcas: u32,
    /// Rows per table (findings, call sites...).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Show only this phase (a name of the report's phase table): its
    /// time per rank, repetitions, OpenMP and MPI time inside it.
    #[arg(long)]
    pub phase: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = AnalyzeOptions {
        projection_ranks: args.project.clone(),
        memory_per_core: args.memory_per_core,
        hcas_per_node: args.hcas,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..AnalyzeOptions::default()
    };
    let a = analyze(&args.trace, &options)?;
    let out = if let Some(other) = &args.other {
        let b = analyze(other, &options)?;
        let cmp = compare(&a, &b);
        if args.json {
            serde_json::to_string_pretty(&cmp)?
        } else {
            render_comparison(&cmp)
        }
    } else if let Some(name) = &args.phase {
        let found = a
            .phases
            .get()
            .and_then(|ps| ps.iter().find(|p| &p.name == name));
        match (found, args.json) {
            (None, _) => {
                anyhow::bail!(
                    "{}: no phase named \"{name}\"; {}",
                    args.trace.display(),
                    phases::phase_names(&a)
                )
            }
            (Some(p), true) => serde_json::to_string_pretty(p)?,
            (Some(_), false) => phases::render_phase(&a, name).unwrap_or_default(),
        }
    } else if args.json {
        serde_json::to_string_pretty(&a)?
    } else {
        render(&a, args.top)
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a message.
    if let Err(e) = writeln!(stdout, "{out}")
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    Ok(ExitCode::SUCCESS)
}

/// Seconds with a unit that keeps 3 significant digits.
pub fn fmt_time(s: f64) -> String {
    let a = s.abs();
    if a == 0.0 {
        "0".into()
    } else if a < 1e-6 {
        format!("{:.0} ns", s * 1e9)
    } else if a < 1e-3 {
        format!("{:.2} µs", s * 1e6)
    } else if a < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

pub fn fmt_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", units[i])
    } else {
        format!("{v:.1} {}", units[i])
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn count(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.2} M", n / 1e6)
    } else if n >= 1e4 {
        format!("{:.1} k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// A text table: the first column left-aligned, the others right-aligned.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    fn render(&self, out: &mut String) {
        let n = self.header.len();
        let mut w = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &[String], out: &mut String| {
            let mut s = String::from("  ");
            for (i, wi) in w.iter().enumerate() {
                let c = r.get(i).map(String::as_str).unwrap_or("");
                let pad = wi.saturating_sub(c.chars().count());
                if i == 0 {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str("  ");
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&self.header, out);
        let total: usize = w.iter().sum::<usize>() + 2 * (n - 1);
        out.push_str(&format!("  {}\n", "─".repeat(total)));
        for r in &self.rows {
            line(r, out);
        }
    }
}

fn section(out: &mut String, title: &str) {
    let _ = write!(out, "\n{title}\n{}\n", "═".repeat(title.chars().count()));
}

fn not_obs<T>(out: &mut String, o: &Observable<T>) -> bool {
    if let Some(r) = o.reason() {
        let _ = writeln!(out, "  not observable: {r}");
        true
    } else {
        false
    }
}

/// The whole text report.
pub fn render(a: &Analysis, top: usize) -> String {
    let mut out = String::new();
    let r = &a.run;
    let _ = writeln!(out, "hyscope report — {}", a.trace_dir);
    render_integrity(&mut out, &a.integrity);
    section(&mut out, "Run");
    let mut kv = |k: &str, v: String| {
        let _ = writeln!(out, "  {k:<22} {v}");
    };
    if !r.command.is_empty() {
        kv("command", r.command.join(" "));
    }
    if !r.start_time.is_empty() {
        kv("started", r.start_time.clone());
    }
    let threads = r.threads_per_rank.iter().copied().max().unwrap_or(1);
    kv(
        "ranks × threads",
        format!(
            "{} × {} on {} host(s): {}",
            r.ranks,
            threads,
            r.hosts.len(),
            r.hosts.join(", ")
        ),
    );
    kv("duration", fmt_time(r.duration_s));
    for p in r.placement.iter().filter(|p| p.threads_share_cpus()) {
        kv(
            "CPU placement",
            format!(
                "rank {}: {} OpenMP threads on CPU {} ({} of {}'s {}{}{})",
                p.rank,
                p.threads,
                p.cpu_list(),
                p.run_cpus().len(),
                p.host,
                if p.host_cpus > 0 {
                    p.host_cpus.to_string()
                } else {
                    "?".into()
                },
                if p.host_oversubscribed() {
                    format!("; {} threads on the host", p.host_threads)
                } else {
                    String::new()
                },
                if p.pinned_together() {
                    format!(
                        "; bound there by the OpenMP runtime, the rank may use CPU {}",
                        hyscope_analyzer::placement::cpu_list(&p.cpus)
                    )
                } else {
                    String::new()
                }
            ),
        );
    }
    if let Some(m) = &r.mpi_library {
        kv("MPI", m.lines().next().unwrap_or("").to_string());
    }
    if let (Some(q), Some(p)) = (&r.thread_level_requested, &r.thread_level_provided) {
        kv("thread level", format!("requested {q}, provided {p}"));
    }
    if let Some(o) = &r.openmp_runtime {
        kv("OpenMP runtime", o.clone());
    }
    kv(
        "events",
        format!(
            "{} OpenMP, {} MPI, {} samples{}",
            count(r.omp_events as f64),
            count(r.mpi_events as f64),
            count(r.sample_events as f64),
            if r.dropped_events > 0 {
                format!(", {} DROPPED", r.dropped_events)
            } else {
                String::new()
            }
        ),
    );
    kv(
        "clocks",
        if r.clock_corrected {
            format!("offsets applied (± {})", fmt_time(r.clock_error_s))
        } else {
            "one clock (no offsets applied)".into()
        },
    );
    if r.serialized_regions > 0 {
        kv("serialized regions", r.serialized_regions.to_string());
    }
    if r.clipped_join_waits > 0 {
        kv(
            "normalised",
            format!(
                "{} late worker join-barrier ends clipped at parallel end ({})",
                r.clipped_join_waits,
                fmt_time(r.clipped_join_wait_s)
            ),
        );
    }
    for m in &r.missing {
        kv("not observable", m.clone());
    }

    phases::render_phases(&mut out, a);
    section(&mut out, "Top findings");
    if a.findings.is_empty() {
        out.push_str("  nothing significant\n");
    }
    for (i, f) in a.findings.iter().take(top).enumerate() {
        let _ = writeln!(
            out,
            "  {:>2}. {:>10} {:>7}  {}\n      → {}",
            i + 1,
            fmt_time(f.cost_s),
            pct(f.share_of_run),
            f.title,
            f.what_to_do
        );
    }

    section(&mut out, "POP efficiency");
    if !not_obs(&mut out, &a.pop)
        && let Some(p) = a.pop.get()
    {
        fn walk(n: &PopNode, depth: usize, out: &mut String) {
            let v = match &n.value {
                Observable::Observed(v) => format!("{:5.1} %", v * 100.0),
                Observable::NotObservable(r) => format!("  n/a   ({r})"),
            };
            let name = format!("{}{}", "  ".repeat(depth), n.name);
            let _ = writeln!(out, "  {name:<48} {v}   {}", n.formula);
            for c in &n.children {
                walk(c, depth + 1, out);
            }
        }
        walk(&p.tree, 0, &mut out);
        let _ = writeln!(
            out,
            "\n  additive (fractions of {} cores × {}):",
            p.cores,
            fmt_time(p.elapsed_s)
        );
        let _ = writeln!(
            out,
            "  {:<48} {:5.1} %",
            "parallel efficiency",
            p.tree.value.get().copied().unwrap_or(0.0) * 100.0
        );
        for l in &p.additive {
            let _ = writeln!(
                out,
                "  {:<48} {:5.1} %   {}",
                format!("loss: {}", l.name),
                l.fraction * 100.0,
                l.formula
            );
        }
    }

    section(&mut out, "OpenMP parallel regions");
    if !not_obs(&mut out, &a.regions)
        && let Some(regions) = a.regions.get()
    {
        let mut t = Table::new(&[
            "region",
            "inst",
            "team",
            "time",
            "% run",
            "fork/join",
            "f/j %",
            "barrier",
            "wait",
            "sync ovh",
            "imbal",
        ]);
        for x in regions.iter().take(top) {
            let per_thread = x.per_thread_observed();
            let na = || "n/a".to_string();
            t.row(vec![
                x.location.label.clone(),
                count(x.instances as f64),
                x.team_size.to_string(),
                fmt_time(x.time_s),
                pct(x.share_of_run),
                fmt_time(x.fork_join_s),
                pct(x.fork_join_fraction),
                if per_thread {
                    fmt_time(x.barrier.total_s)
                } else {
                    na()
                },
                if x.barrier.wait_observed {
                    fmt_time(x.barrier.wait_s)
                } else {
                    na()
                },
                if x.barrier.wait_observed {
                    fmt_time(x.barrier.sync_overhead_s)
                } else {
                    na()
                },
                if per_thread {
                    format!("{:.2}", x.imbalance)
                } else {
                    na()
                },
            ]);
        }
        t.render(&mut out);
        out.push_str("  fork/join = region − implicit task (002 §6.6.3); sync ovh = barrier − wait (002 §6.7); imbal = max/mean busy\n");
        if regions.iter().any(|x| !x.per_thread_observed()) {
            out.push_str("  profile mode keeps each thread's totals over the run, not per region: barrier and imbalance per region need trace mode (the fine-grain model and POP below use the totals)\n");
        }
        if regions.iter().any(|x| x.barrier.wait_from_arrivals) {
            out.push_str(ARRIVAL_NOTE);
        }
        if let Some(x) = regions.first().filter(|x| x.per_thread_observed()) {
            let _ = writeln!(out, "\n  per thread of {}:", x.location.label);
            let mut t = Table::new(&[
                "rank.thread",
                "task",
                "busy",
                "barrier",
                "wait",
                "activation",
                "release",
            ]);
            for p in x.per_thread.iter().take(64) {
                t.row(vec![
                    format!("{}.{}", p.rank, p.thread),
                    fmt_time(p.implicit_task_s),
                    fmt_time(p.busy_s),
                    fmt_time(p.barrier.total_s),
                    fmt_time(p.barrier.wait_s),
                    fmt_time(p.activation_s),
                    fmt_time(p.release_s),
                ]);
            }
            t.render(&mut out);
        }
    }

    section(&mut out, "Loops and schedule tuning");
    if !not_obs(&mut out, &a.loops)
        && let Some(loops) = a.loops.get()
    {
        let mut t = Table::new(&[
            "loop",
            "schedule",
            "trip",
            "inst",
            "time",
            "% run",
            "imbal",
            "chunks",
            "dispatch",
            "sched ovh",
            "advice",
        ]);
        for l in loops.iter().take(top) {
            t.row(vec![
                l.location.label.clone(),
                l.schedule.get().cloned().unwrap_or_else(|| "?".into()),
                if l.trip_count == 0 {
                    l.trip_count_text()
                } else {
                    count(l.trip_count as f64)
                },
                count(l.instances as f64),
                fmt_time(l.time_s),
                pct(l.share_of_run),
                format!("{:.2}", l.imbalance),
                l.chunks.get().map_or("n/a".into(), |c| count(*c as f64)),
                l.dispatch_cost_s
                    .get()
                    .map_or("n/a".into(), |d| fmt_time(*d)),
                l.scheduling_overhead_s
                    .get()
                    .map_or("n/a".into(), |d| fmt_time(*d)),
                l.recommendation
                    .get()
                    .map_or("n/a".into(), |r| r.clause.clone()),
            ]);
        }
        t.render(&mut out);
        for l in loops.iter().take(top) {
            match &l.recommendation {
                Observable::Observed(r) => {
                    let _ = writeln!(out, "  • {}\n      rule: {}", r.evidence, r.rule);
                    if let Some(sims) = l.simulations.get() {
                        let best: Vec<String> = sims
                            .iter()
                            .take(5)
                            .map(|s| format!("{} {:.2}×", s.schedule, s.speedup))
                            .collect();
                        let _ = writeln!(out, "      simulated best: {}", best.join(", "));
                    }
                }
                Observable::NotObservable(why) => {
                    let _ = writeln!(out, "  • {}: no advice — {why}", l.location.label);
                }
            }
        }
    }

    section(&mut out, "OpenMP runtime overhead");
    if !not_obs(&mut out, &a.openmp)
        && let Some(o) = a.openmp.get()
    {
        let _ = writeln!(out, "  fork/join total        {}", fmt_time(o.fork_join_s));
        let _ = writeln!(
            out,
            "  barriers               {} total, {} wait, {} synchronisation",
            fmt_time(o.barrier.total_s),
            if o.barrier.wait_observed {
                fmt_time(o.barrier.wait_s)
            } else {
                "n/a".into()
            },
            if o.barrier.wait_observed {
                fmt_time(o.barrier.sync_overhead_s)
            } else {
                "n/a".into()
            },
        );
        if o.barrier.wait_from_arrivals {
            out.push_str(ARRIVAL_NOTE);
        }
        match &o.scheduling_s {
            Observable::Observed(s) => {
                // The gaps between a thread's chunks: none where each chunk
                // ends at the next dispatch (libomp 19), so say where it went.
                let why = if *s == 0.0 {
                    " (no gaps between a thread's chunks: each ends at the next dispatch, whose cost is inside it)"
                } else {
                    " (gaps between a thread's chunks)"
                };
                let _ = writeln!(out, "  loop scheduling        {}{why}", fmt_time(*s));
            }
            Observable::NotObservable(r) => {
                let _ = writeln!(out, "  loop scheduling        not observable: {r}");
            }
        }
        match &o.tasks {
            Observable::Observed(t) => {
                let _ = writeln!(
                    out,
                    "  tasks                  {} created, {} running (mean {}), {} in taskwait",
                    t.created,
                    fmt_time(t.run_s),
                    fmt_time(t.mean_task_s),
                    fmt_time(t.taskwait_s)
                );
            }
            Observable::NotObservable(r) => {
                let _ = writeln!(out, "  tasks                  not observable: {r}");
            }
        }
        match &o.mutexes {
            Observable::Observed(m) if !m.is_empty() => {
                let mut t = Table::new(&[
                    "lock / critical",
                    "kind",
                    "acquired",
                    "wait",
                    "hold",
                    "max wait",
                ]);
                for x in m.iter().take(top) {
                    t.row(vec![
                        x.location.label.clone(),
                        x.kind.clone(),
                        count(x.acquisitions as f64),
                        fmt_time(x.wait_s),
                        fmt_time(x.hold_s),
                        fmt_time(x.max_wait_s),
                    ]);
                }
                t.render(&mut out);
            }
            Observable::Observed(_) => out.push_str("  locks                  none used\n"),
            Observable::NotObservable(r) => {
                let _ = writeln!(out, "  locks                  not observable: {r}");
            }
        }
        out.push_str(
            "\n  fine-grain model (000 §5, 002 §3.3.1): T = T_seq + T_comm + T_compute/P\n",
        );
        let mut t = Table::new(&[
            "rank",
            "P",
            "T",
            "T_compute",
            "T_comm",
            "T_seq",
            "fork/join",
            "regions",
            "bound",
            "idle serial",
            "idle MPI",
        ]);
        for f in o.fine_grain.iter().take(64) {
            t.row(vec![
                f.rank.to_string(),
                f.threads.to_string(),
                fmt_time(f.t_total_s),
                fmt_time(f.t_compute_s),
                fmt_time(f.t_comm_s),
                fmt_time(f.t_seq_s),
                fmt_time(f.fork_join_s),
                count(f.regions as f64),
                f.speedup_bound.map_or("∞".into(), |b| format!("{b:.1}×")),
                format!("{} core", fmt_time(f.idle_serial_core_s)),
                format!("{} core", fmt_time(f.idle_mpi_core_s)),
            ]);
        }
        t.render(&mut out);
    }

    section(&mut out, "MPI profile");
    if !not_obs(&mut out, &a.mpi)
        && let Some(m) = a.mpi.get()
    {
        let _ = writeln!(
            out,
            "  MPI time {} ({} of rank time); inside parallel regions {}, outside {}; up to {} calling thread(s) per rank",
            fmt_time(m.total_s),
            pct(m.share_of_run),
            fmt_time(m.inside_parallel_s),
            fmt_time(m.outside_parallel_s),
            m.calling_threads
        );
        let call_table = |rows: &[MpiCallStats], first: &str, out: &mut String| {
            let mut t = Table::new(&[
                first,
                "count",
                "total",
                "% run",
                "min rank",
                "mean rank",
                "max rank",
                "CV",
                "sent",
                "received",
            ]);
            for c in rows.iter().take(top) {
                let name = match &c.location {
                    Some(l) => format!("{} @ {}", c.call, l.label),
                    None => c.call.clone(),
                };
                t.row(vec![
                    name,
                    count(c.count as f64),
                    fmt_time(c.total_s),
                    pct(c.share_of_run),
                    fmt_time(c.min_rank_s),
                    fmt_time(c.mean_rank_s),
                    fmt_time(c.max_rank_s),
                    format!("{:.2}", c.cv),
                    fmt_bytes(c.bytes_sent as f64),
                    fmt_bytes(c.bytes_recv as f64),
                ]);
            }
            t.render(out);
        };
        call_table(&m.calls, "call", &mut out);
        out.push('\n');
        call_table(&m.callsites, "call site", &mut out);
        match &m.eager_limit {
            Observable::Observed((l, src)) => {
                let _ = writeln!(
                    out,
                    "\n  message sizes (eager ≤ {} from {src}): {} eager, {} rendezvous",
                    fmt_bytes(*l as f64),
                    m.eager_messages,
                    m.rendezvous_messages
                );
            }
            Observable::NotObservable(r) => {
                let _ = writeln!(out, "\n  message sizes (protocol not observable: {r})");
            }
        }
        if !m.histogram.is_empty() {
            let mut t = Table::new(&["size", "messages", "bytes", "eager", "rendezvous"]);
            for b in &m.histogram {
                t.row(vec![
                    format!("[{}, {})", fmt_bytes(b.lo as f64), fmt_bytes(b.hi as f64)),
                    count(b.messages as f64),
                    fmt_bytes(b.bytes as f64),
                    count(b.eager as f64),
                    count(b.rendezvous as f64),
                ]);
            }
            t.render(&mut out);
        }
        let n = m.matrix.ranks as usize;
        if n > 0 && n <= 16 && m.matrix.messages.iter().flatten().any(|&x| x > 0) {
            out.push_str("\n  communication matrix (messages / bytes, row = sender):\n");
            let mut head = vec!["from\\to".to_string()];
            head.extend((0..n).map(|i| i.to_string()));
            let mut t = Table {
                header: head,
                rows: Vec::new(),
            };
            for s in 0..n {
                let mut row = vec![s.to_string()];
                for d in 0..n {
                    let msgs = m.matrix.messages[s][d];
                    row.push(if msgs == 0 {
                        "·".into()
                    } else {
                        format!(
                            "{} / {}",
                            count(msgs as f64),
                            fmt_bytes(m.matrix.bytes[s][d] as f64)
                        )
                    });
                }
                t.row(row);
            }
            t.render(&mut out);
        }
        if m.communicators.iter().any(|c| c.id != 1) {
            out.push_str("\n  communicators:\n");
            let mut t = Table::new(&["communicator", "ranks", "messages", "bytes", "collectives"]);
            for c in &m.communicators {
                let colls: Vec<String> = c
                    .collectives
                    .iter()
                    .map(|(name, n)| format!("{name} ×{n}"))
                    .collect();
                t.row(vec![
                    c.name.clone(),
                    if c.size > 0 {
                        c.size.to_string()
                    } else {
                        "?".into()
                    },
                    count(c.messages as f64),
                    fmt_bytes(c.bytes as f64),
                    colls.join(", "),
                ]);
            }
            t.render(&mut out);
        }
    }

    section(&mut out, "Wait states");
    if !not_obs(&mut out, &a.wait_states)
        && let Some(w) = a.wait_states.get()
    {
        let _ = writeln!(
            out,
            "  total {} (clock error ± {}, {} unmatched messages)",
            fmt_time(w.total_s),
            fmt_time(w.clock_error_s),
            w.unmatched_messages
        );
        let mut t = Table::new(&["kind", "time", "instances"]);
        for e in &w.by_kind {
            t.row(vec![
                e.kind.name().into(),
                fmt_time(e.seconds),
                count(e.instances as f64),
            ]);
        }
        t.render(&mut out);
        if !w.per_callsite.is_empty() {
            out.push('\n');
            let mut t = Table::new(&["call site", "call", "kind", "time", "instances"]);
            for e in w.per_callsite.iter().take(top) {
                t.row(vec![
                    e.location.as_ref().map_or("?".into(), |l| l.label.clone()),
                    e.call.clone().unwrap_or_default(),
                    e.kind.name().into(),
                    fmt_time(e.seconds),
                    count(e.instances as f64),
                ]);
            }
            t.render(&mut out);
        }
        if !w.per_rank.is_empty() {
            out.push('\n');
            let mut t = Table::new(&["rank", "kind", "time", "instances"]);
            for e in w.per_rank.iter().take(top * 4) {
                t.row(vec![
                    e.rank.map_or("?".into(), |r| r.to_string()),
                    e.kind.name().into(),
                    fmt_time(e.seconds),
                    count(e.instances as f64),
                ]);
            }
            t.render(&mut out);
        }
    }

    section(&mut out, "MPI memory footprint");
    if !not_obs(&mut out, &a.memory)
        && let Some(m) = a.memory.get()
    {
        let _ = writeln!(
            out,
            "  job: N = {} node(s), C = {} rank(s) per node, H = {} HCA(s); pattern: {}",
            m.nodes, m.cores_per_node, m.hcas_per_node, m.pattern
        );
        let mut t = Table::new(&[
            "rank",
            "host",
            "peers",
            "connections",
            "measured",
            "RSS Δ MPI_Init",
            "RSS peak",
            "shm",
            "buffers (model)",
        ]);
        for p in m.per_rank.iter().take(64) {
            let opt = |v: Option<u64>| v.map_or("n/a".into(), |b| fmt_bytes(b as f64));
            t.row(vec![
                p.rank.to_string(),
                p.host.clone(),
                p.peers_observed.to_string(),
                p.connections_estimated.to_string(),
                p.connections_measured
                    .map_or("n/a".into(), |c| c.to_string()),
                opt(p.mpi_init_delta),
                opt(p.rss_peak),
                opt(p.shm_mapped),
                fmt_bytes(p.buffer_bytes_observed),
            ]);
        }
        t.render(&mut out);
        out.push_str("\n  queue pairs per node (000 Table 3.4):\n");
        let mut t = Table::new(&["transport", "formula", "observed graph", "fully connected"]);
        for q in &m.qp_table {
            t.row(vec![
                q.transport.clone(),
                q.formula.clone(),
                count(q.observed_per_node),
                count(q.full_per_node),
            ]);
        }
        t.render(&mut out);
        out.push_str("\n  model parameters:\n");
        for p in &m.parameters {
            let _ = writeln!(
                out,
                "    {:<36} {:>12}  {}",
                p.name,
                fmt_bytes(p.value),
                p.source
            );
        }
        let _ = writeln!(
            out,
            "    {:<36} {:>12}  (sum of per-connection items)",
            "bytes per connection",
            fmt_bytes(m.bytes_per_connection)
        );
        let _ = writeln!(
            out,
            "    communicators: {}, group maps {} per rank (001 §3.1)",
            m.communicators,
            fmt_bytes(m.group_map_bytes_per_rank)
        );
        for c in &m.full_connection_calls {
            let _ = writeln!(
                out,
                "  ! {} at {} forces full connection ({} calls on {} rank(s))",
                c.call,
                c.location.as_ref().map_or("?".into(), |l| l.label.clone()),
                c.count,
                c.ranks.len()
            );
        }
        let _ = writeln!(
            out,
            "\n  projection (memory per core: {}):",
            m.memory_per_core
                .map_or("unknown".into(), |b| fmt_bytes(b as f64))
        );
        let mut t = Table::new(&[
            "ranks",
            "nodes",
            "conn/rank",
            "RC QP/node",
            "XRC QP/node",
            "UD QP/node",
            "buffers/rank",
            "QPs/rank",
            "groups/rank",
            "total/rank",
            "",
        ]);
        for p in &m.projections {
            t.row(vec![
                count(p.ranks as f64),
                count(p.nodes as f64),
                count(p.connections_per_rank),
                count(p.qp_rc_per_node),
                count(p.qp_xrc_per_node),
                count(p.qp_ud_per_node),
                fmt_bytes(p.buffer_bytes_per_rank),
                fmt_bytes(p.qp_bytes_per_rank),
                fmt_bytes(p.group_bytes_per_rank),
                fmt_bytes(p.total_bytes_per_rank),
                if p.exceeds_memory_per_core == Some(true) {
                    "EXCEEDS memory/core".into()
                } else {
                    String::new()
                },
            ]);
        }
        t.render(&mut out);
    }

    section(&mut out, "Energy");
    match &a.energy {
        Observable::NotObservable(r) => {
            let _ = writeln!(out, "  {r}");
        }
        Observable::Observed(e) => {
            let _ = writeln!(
                out,
                "  total {:.1} J, average power {:.1} W, energy-delay product {:.1} J·s",
                e.total_joules, e.avg_power_w, e.edp_js
            );
            let mut t = Table::new(&["host", "rank", "domain", "package", "joules", "power"]);
            for d in &e.domains {
                t.row(vec![
                    d.host.clone(),
                    d.rank.to_string(),
                    d.metric.clone(),
                    d.package.to_string(),
                    format!("{:.1} J", d.joules),
                    format!("{:.1} W", d.avg_power_w),
                ]);
            }
            t.render(&mut out);
            let mut t = Table::new(&["phase", "time per rank", "joules"]);
            for p in &e.phases {
                t.row(vec![
                    p.phase.clone(),
                    fmt_time(p.seconds),
                    format!("{:.1} J", p.joules),
                ]);
            }
            t.render(&mut out);
        }
    }

    if !a.warnings.is_empty() {
        section(&mut out, "Warnings");
        for w in &a.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

/// What was lost or found damaged, before any number, so none is read as whole.
fn render_integrity(out: &mut String, integrity: &TraceIntegrity) {
    if integrity.problems.is_empty() {
        return;
    }
    section(out, integrity.title());
    for p in &integrity.problems {
        let _ = writeln!(out, "  ! {p}");
    }
}

/// The comparison of two traces as a table.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hyscope report — A = {}\n                 B = {}",
        c.a, c.b
    );
    let mut t = Table::new(&["section", "item", "metric", "A", "B", "B − A", "B / A"]);
    for r in &c.rows {
        let v = |x: f64| {
            if r.metric.ends_with("_s") {
                fmt_time(x)
            } else {
                format!("{x:.3}")
            }
        };
        t.row(vec![
            r.section.clone(),
            r.item.clone(),
            r.metric.clone(),
            v(r.a),
            v(r.b),
            v(r.delta),
            r.ratio.map_or("—".into(), |x| format!("{x:.2}")),
        ]);
    }
    t.render(&mut out);
    out
}
