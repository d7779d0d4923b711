//! The parts of `omp-tools.h` (OpenMP 5.1 OMPT) a host tool needs, written in Rust.
//! Enum values are plain integers here: the runtime may pass values this
//! version does not know, and a Rust enum holding them would be undefined behaviour.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `ompt_data_t`: a tool-owned word attached to a thread, region or task.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ompt_data_t {
    pub value: u64,
    pub ptr: *mut c_void,
}

pub type ompt_interface_fn_t = Option<unsafe extern "C" fn()>;
pub type ompt_function_lookup_t =
    Option<unsafe extern "C" fn(interface_function_name: *const c_char) -> ompt_interface_fn_t>;
pub type ompt_callback_t = Option<unsafe extern "C" fn()>;
pub type ompt_set_callback_t =
    unsafe extern "C" fn(event: c_uint, callback: ompt_callback_t) -> c_int;
pub type ompt_initialize_t = Option<
    unsafe extern "C" fn(
        lookup: ompt_function_lookup_t,
        initial_device_num: c_int,
        tool_data: *mut ompt_data_t,
    ) -> c_int,
>;
pub type ompt_finalize_t = Option<unsafe extern "C" fn(tool_data: *mut ompt_data_t)>;

#[repr(C)]
pub struct ompt_start_tool_result_t {
    pub initialize: ompt_initialize_t,
    pub finalize: ompt_finalize_t,
    pub tool_data: ompt_data_t,
}

/// `ompt_frame_t` (only passed through).
#[repr(C)]
pub struct ompt_frame_t {
    pub exit_frame: ompt_data_t,
    pub enter_frame: ompt_data_t,
    pub exit_frame_flags: c_int,
    pub enter_frame_flags: c_int,
}

#[repr(C)]
pub struct ompt_dependence_t {
    pub variable: ompt_data_t,
    pub dependence_type: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ompt_dispatch_chunk_t {
    pub start: u64,
    pub iterations: u64,
}

pub type ompt_wait_id_t = u64;

// ompt_scope_endpoint_t
pub const OMPT_SCOPE_BEGIN: c_uint = 1;
pub const OMPT_SCOPE_END: c_uint = 2;
pub const OMPT_SCOPE_BEGINEND: c_uint = 3;

/// `ompt_sync_region_barrier_implicit_parallel`: the barrier ending a parallel region.
pub const OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL: c_uint = 9;

// ompt_task_flag_t
pub const OMPT_TASK_INITIAL: c_int = 0x1;
pub const OMPT_TASK_IMPLICIT: c_int = 0x2;
pub const OMPT_TASK_EXPLICIT: c_int = 0x4;

// ompt_work_t
pub const OMPT_WORK_LOOP: c_uint = 1;
pub const OMPT_WORK_SINGLE_OTHER: c_uint = 4;
pub const OMPT_WORK_LOOP_STATIC: c_uint = 10;
pub const OMPT_WORK_LOOP_OTHER: c_uint = 13;
pub const OMPT_WORK_TASKLOOP: c_uint = 7;
pub const OMPT_WORK_DISTRIBUTE: c_uint = 6;

// ompt_dispatch_t
pub const OMPT_DISPATCH_ITERATION: c_uint = 1;
pub const OMPT_DISPATCH_SECTION: c_uint = 2;
pub const OMPT_DISPATCH_WS_LOOP_CHUNK: c_uint = 3;
pub const OMPT_DISPATCH_TASKLOOP_CHUNK: c_uint = 4;
pub const OMPT_DISPATCH_DISTRIBUTE_CHUNK: c_uint = 5;

// ompt_task_status_t
pub const OMPT_TASK_COMPLETE: c_uint = 1;
pub const OMPT_TASK_CANCEL: c_uint = 3;
pub const OMPT_TASK_LATE_FULFILL: c_uint = 6;

// ompt_set_result_t
pub const OMPT_SET_ERROR: c_int = 0;
pub const OMPT_SET_NEVER: c_int = 1;

/// Host callbacks (`ompt_callbacks_t`): (id, name). Device callbacks are not registered.
pub const HOST_CALLBACKS: &[(c_uint, &str)] = &[
    (1, "ompt_callback_thread_begin"),
    (2, "ompt_callback_thread_end"),
    (3, "ompt_callback_parallel_begin"),
    (4, "ompt_callback_parallel_end"),
    (5, "ompt_callback_task_create"),
    (6, "ompt_callback_task_schedule"),
    (7, "ompt_callback_implicit_task"),
    (11, "ompt_callback_control_tool"),
    (16, "ompt_callback_sync_region_wait"),
    (17, "ompt_callback_mutex_released"),
    (18, "ompt_callback_dependences"),
    (19, "ompt_callback_task_dependence"),
    (20, "ompt_callback_work"),
    (21, "ompt_callback_masked"),
    (23, "ompt_callback_sync_region"),
    (24, "ompt_callback_lock_init"),
    (25, "ompt_callback_lock_destroy"),
    (26, "ompt_callback_mutex_acquire"),
    (27, "ompt_callback_mutex_acquired"),
    (28, "ompt_callback_nest_lock"),
    (29, "ompt_callback_flush"),
    (30, "ompt_callback_cancel"),
    (31, "ompt_callback_reduction"),
    (32, "ompt_callback_dispatch"),
    (37, "ompt_callback_error"),
];
