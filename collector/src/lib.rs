//! hyscope-collector: the measurement system inside the application.
//!
//! Built as `libhyscope.so` (preloaded into the application) and as an rlib.
//!
//! The modules in layers: each imports only modules of the layers before it
//! (ARCHITECTURE.md, "The collector's modules"; `tests/module_graph.rs`
//! checks it).
//!
//! - [`settings`]: the `HYSCOPE_*` settings; [`diag`]: warnings, `guarded`, `lock`;
//!   [`threads`]: the collector's own threads, started with the process's signals blocked;
//! - [`clock`]: the one monotonic clock (`now_ns`); [`slots`]: the per-thread
//!   slots; [`symbols`]: code addresses → function, file:line, with
//!   [`loaded_images`]: the modules as the loader mapped them (bias, build-id);
//! - [`state`]: configuration, rank and identity, trace directory, manifest, rank info;
//! - [`spooling`]: the spool, the writer thread that fills it, `flush_all`, the hot path;
//! - [`crash`]: fatal-signal handlers that spool every recorded event first;
//!   [`phases`]: named phases (`hyscope.h`, `MPI_Pcontrol` levels, `omp_control_tool`);
//!   [`nvtx`]: NVTX ranges as phases, through NVTX's injection (`InitializeInjectionNvtx2`);
//! - [`lifecycle`]: the start and exit paths;
//! - [`samplers`]: sampled metrics; [`mpi`]: PMPI wrappers;
//! - [`exec`]: the exec calls, which write the program's end before another
//!   program takes the process over;
//! - [`forking`]: every lock held across a `fork`, so that the child finds them free.
//!
//! The OMPT adapter lives in the `hyscope-ompt` crate; this crate exports
//! `ompt_start_tool` and is its sink.

pub mod clock;
pub mod crash;
pub mod diag;
pub mod exec;
pub mod forking;
pub mod lifecycle;
pub mod loaded_images;
pub mod mpi;
pub mod nvtx;
pub mod phases;
pub mod samplers;
pub mod settings;
pub mod slots;
pub mod spooling;
pub mod state;
pub mod symbols;
pub mod threads;

use std::ffi::{c_char, c_uint};

use hyscope_format::OmpRecord;
use hyscope_ompt::ffi::ompt_start_tool_result_t;

use diag::guarded;

/// The collector as the OMPT adapter's sink.
struct CollectorSink;

impl hyscope_ompt::Sink for CollectorSink {
    #[inline(always)]
    fn now_ns(&self) -> i64 {
        clock::now_ns()
    }
    #[inline]
    fn record(&self, rec: OmpRecord) {
        spooling::record_omp(rec);
    }
    fn thread_handle(&self) -> usize {
        slots::slot() as *const slots::ThreadSlot as usize
    }
    fn omp_stream(&self) -> Option<&'static hyscope_format::spool::block::Stream<OmpRecord>> {
        Some(slots::slot().omp_stream())
    }
    #[inline]
    fn record_on(&self, handle: usize, rec: &OmpRecord) {
        if handle == 0 {
            spooling::record_omp(*rec);
        } else {
            // SAFETY: handles are leaked ThreadSlots of the calling thread (thread_handle).
            unsafe { &*(handle as *const slots::ThreadSlot) }.record_omp(rec);
        }
    }
    fn thread_index(&self) -> u32 {
        slots::thread_index()
    }
    fn bind_parallel_depth(&self, depth: &'static std::sync::atomic::AtomicU32) {
        slots::bind_parallel_depth(depth);
    }
    fn warn(&self, msg: &str) {
        diag::warn(msg);
    }
    fn finalize(&self) {
        guarded(lifecycle::finish);
    }
    fn control(&self, command: hyscope_ompt::Control) {
        guarded(|| match command {
            hyscope_ompt::Control::Start => phases::resume(),
            hyscope_ompt::Control::Pause | hyscope_ompt::Control::End => phases::pause(),
            hyscope_ompt::Control::Flush => lifecycle::flush_all(),
        });
    }
}

static SINK: CollectorSink = CollectorSink;

/// Called by the OpenMP runtime when it looks for a tool (OpenMP 5.x, §4.2.1).
///
/// # Safety
/// Called by the runtime with a NUL-terminated version string (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ompt_start_tool(
    omp_version: c_uint,
    runtime_version: *const c_char,
) -> *mut ompt_start_tool_result_t {
    if !settings::settings().ompt {
        return std::ptr::null_mut();
    }
    start();
    // An OpenMP program: write the rank's files at exit even if (profile mode) no
    // interval reached the buffers before.
    spooling::mark_active();
    // SAFETY: forwarded from the runtime.
    unsafe { hyscope_ompt::start_tool(omp_version, runtime_version) }
}

/// One-time start: session, OMPT configuration and sink, exit hook.
fn start() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        guarded(|| {
            lifecycle::init(samplers::first_readings);
            hyscope_ompt::configure(&hyscope_ompt::ToolConfig::from_settings(
                settings::settings(),
            ));
            hyscope_ompt::set_sink(&SINK);
            // SAFETY: registering a plain extern "C" function.
            unsafe { libc::atexit(at_exit) };
            forking::install();
            exec::install();
            crash::install();
            samplers::start();
        });
    });
}

extern "C" fn at_exit() {
    guarded(lifecycle::finish);
}

extern "C" fn constructor() {
    start();
}

/// Library constructor: initialise before `main` (and before the OpenMP
/// runtime looks for a tool, whichever comes first).
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = constructor;
