//! Every system test of the hyscope command and its viewers, in one test binary: one link and one
//! executable instead of one per file keeps the build small enough for a CI
//! machine with little disk. Each module is one file of tests; run one with
//! `cargo test -p <crate> --test system <module>::`.

mod damage_support;
mod record_support;
mod tui_common;
mod tui_frame;

mod compare_noise;
mod compare_per_instance;
mod damaged_trace;
mod export_otf2;
mod export_perfetto;
mod fuzz_trace;
mod gui_screenshot;
mod partial_exit;
mod record_build_id;
mod record_crash;
mod record_cxx;
mod record_damaged_part;
mod record_duration;
mod record_exec;
mod record_exec_energy;
mod record_exec_window;
mod record_exit_in_handler;
mod record_fork;
mod record_gcc;
mod record_install;
mod record_memory;
mod record_mpi;
mod record_mpich;
mod record_mpmd;
mod record_no_debug_info;
mod record_omp;
mod record_p2p;
mod record_phases;
mod record_polls;
mod record_scale;
mod record_settings;
mod record_signals;
mod record_two_nodes;
mod report_compare;
mod report_parallel;
mod run_window;
mod timeline_cache_rot;
mod tui_compare;
mod tui_cut;
mod tui_damaged;
mod tui_phases;
mod tui_processes;
mod tui_recorded;
mod tui_render;
mod tui_tmux;
mod tune_outcome;
mod views_agree;
