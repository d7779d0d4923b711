//! A value computed on a background thread, so a view draws its first frame
//! before the analysis or the timeline index is ready: the TUI's and the
//! GUI's loaders, the GUI's hover details and highlights all hold one.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::Duration;

use hyscope_analyzer::timeline::{Overview, TimelineIndex};
use hyscope_format::Trace;

pub enum Loading<T> {
    /// Still being computed; the result arrives on this channel.
    Pending(Receiver<Result<T, String>>),
    Ready(T),
    Failed(String),
}

const LOST: &str = "loader thread ended without a result";

impl<T> Loading<T> {
    /// A value already computed (or its error), as a loaded one.
    pub fn from_result(r: Result<T, String>) -> Loading<T> {
        match r {
            Ok(v) => Loading::Ready(v),
            Err(e) => Loading::Failed(e),
        }
    }

    pub fn ready(&self) -> Option<&T> {
        match self {
            Loading::Ready(v) => Some(v),
            _ => None,
        }
    }

    pub fn is_pending(&self) -> bool {
        matches!(self, Loading::Pending(_))
    }

    /// Take the result if it arrived; true when it did this call.
    pub fn poll(&mut self) -> bool {
        let Loading::Pending(rx) = self else {
            return false;
        };
        *self = match rx.try_recv() {
            Ok(r) => Loading::from_result(r),
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => Loading::Failed(LOST.into()),
        };
        true
    }

    /// Wait for the result (tests, the GUI's screenshot mode).
    pub fn wait(&mut self) {
        if let Loading::Pending(rx) = self {
            *self = match rx.recv() {
                Ok(r) => Loading::from_result(r),
                Err(_) => Loading::Failed(LOST.into()),
            };
        }
    }
}

impl<T: Send + 'static> Loading<T> {
    /// Compute `f` on a new thread.
    pub fn spawn(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Loading<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        Loading::Pending(rx)
    }
}

/// Compute `first`, then `second`, on one new thread: a quick result to show
/// while the slow one is computed, without the two competing for the cores.
/// `second` runs whatever `first` returned.
pub fn spawn_two<A: Send + 'static, B: Send + 'static>(
    first: impl FnOnce() -> Result<A, String> + Send + 'static,
    second: impl FnOnce() -> Result<B, String> + Send + 'static,
) -> (Loading<A>, Loading<B>) {
    let (tx_a, rx_a) = std::sync::mpsc::channel();
    let (tx_b, rx_b) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx_a.send(first());
        let _ = tx_b.send(second());
    });
    (Loading::Pending(rx_a), Loading::Pending(rx_b))
}

/// Successive versions of a value computed on a background thread (the
/// coarse overview of the ranks read so far): the newest arrived is kept.
pub struct Latest<T> {
    rx: Option<Receiver<T>>,
    value: Option<T>,
}

impl<T> Latest<T> {
    pub fn new(rx: Receiver<T>) -> Latest<T> {
        Latest {
            rx: Some(rx),
            value: None,
        }
    }

    pub fn ready(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// Take the versions that arrived, keeping the newest; true when one did.
    pub fn poll(&mut self) -> bool {
        let Some(rx) = &self.rx else {
            return false;
        };
        let mut changed = false;
        loop {
            match rx.try_recv() {
                Ok(v) => {
                    self.value = Some(v);
                    changed = true;
                }
                Err(TryRecvError::Empty) => return changed,
                Err(TryRecvError::Disconnected) => {
                    self.rx = None;
                    return changed;
                }
            }
        }
    }

    /// Wait for the first version (tests, the GUI's screenshot mode), then
    /// take any newer one already there.
    pub fn wait(&mut self) {
        if self.value.is_none()
            && let Some(rx) = &self.rx
        {
            match rx.recv() {
                Ok(v) => self.value = Some(v),
                Err(_) => self.rx = None,
            }
        }
        self.poll();
    }
}

/// The coarse overview a viewer draws while the index loads.
#[derive(Debug)]
pub struct Coarse {
    pub overview: Arc<Overview>,
    /// Ranks it holds, of `ranks` in the trace.
    pub ranks_loaded: usize,
    pub ranks: usize,
    /// A damaged overview cache, named (kept on every later version).
    pub warning: Option<String>,
}

impl Coarse {
    /// How much of the trace it holds, for the viewers' labels:
    /// `1,234 of 4,096 ranks read` while the pass goes on, else empty.
    pub fn ranks_note(&self) -> String {
        if self.ranks_loaded >= self.ranks {
            return String::new();
        }
        format!("{} of {} ranks read", self.ranks_loaded, self.ranks)
    }
}

/// Time between two overviews handed to a viewer while the index is built:
/// each costs a copy of the bins (tens of milliseconds at 4,096 ranks).
const OVERVIEW_EVERY: Duration = Duration::from_millis(1000);

/// Open the timeline of `trace` ([`TimelineIndex::open_progressive`]):
/// each overview goes to `overviews` as soon as there is one, then the
/// index is returned with whether it came from the cache.
pub fn open_timeline(
    trace: &Trace,
    cache: bool,
    progress: &(dyn Fn(usize, usize) + Sync),
    overviews: Sender<Arc<Coarse>>,
) -> Result<(TimelineIndex, bool), String> {
    let mut warning = None;
    TimelineIndex::open_progressive(trace, cache, progress, OVERVIEW_EVERY, &mut |u| {
        if u.warning.is_some() {
            warning = u.warning;
        }
        let _ = overviews.send(Arc::new(Coarse {
            overview: Arc::new(u.overview),
            ranks_loaded: u.ranks_loaded,
            ranks: u.ranks,
            warning: warning.clone(),
        }));
    })
    .map_err(|e| e.to_string())
}

/// Run `f` (the viewers' analysis) on a pool of low-priority threads, so
/// that beside it the timeline's loading on the shared pool gets the cores
/// first: on 2 cores the two sharing them evenly made the first open's
/// overview wait for the analysis. Threads at nice 10 (Linux sets it per
/// thread); an unbuilt pool runs `f` on the calling thread.
pub fn in_background<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("hyscope-analysis-{i}"))
            .start_handler(|_| {
                // SAFETY: setpriority on the calling thread (who = 0) has no
                // memory effects; a failure leaves its priority as it was.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, 0, 10);
                }
            })
            .build()
            .ok()
    });
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_then_ready_or_failed() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut l: Loading<u32> = Loading::Pending(rx);
        assert!(!l.poll() && l.is_pending());
        tx.send(Ok(7)).unwrap();
        assert!(l.poll());
        assert_eq!(l.ready(), Some(&7));
        assert!(!l.poll(), "a loaded value reports no change");

        let mut l = Loading::<u32>::spawn(|| Err("no trace".into()));
        l.wait();
        assert!(matches!(l, Loading::Failed(ref e) if e == "no trace"));

        let (tx, rx) = std::sync::mpsc::channel::<Result<u32, String>>();
        drop(tx);
        let mut l = Loading::Pending(rx);
        assert!(l.poll());
        assert!(matches!(l, Loading::Failed(ref e) if e == LOST));

        // The second runs after the first, whatever the first returned.
        let (mut a, mut b) = spawn_two(|| Err::<u32, _>("no overview".into()), || Ok(9u64));
        a.wait();
        b.wait();
        assert!(matches!(a, Loading::Failed(ref e) if e == "no overview"));
        assert_eq!(b.ready(), Some(&9));
    }
}
