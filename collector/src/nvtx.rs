//! NVTX ranges and marks as phases, through NVTX's own injection mechanism.
//!
//! An application annotated with the NVTX v3 headers (header-only) calls
//! nothing until its first NVTX call; that call loads the library named by
//! `NVTX_INJECTION64_PATH` (`dlopen`, `nvtxDetail/nvtxInit.h`) and calls its
//! `InitializeInjectionNvtx2` with NVTX's export-table getter. Through the
//! `NVTX_ETID_CALLBACKS` table ([`ExportTableCallbacks`]) the tool fills the
//! function slots of the modules it handles (`nvtxDetail/nvtxTypes.h`);
//! NVTX turns every slot left empty into a no-op. `hyscope record` points the
//! variable at the `libhyscope.so` it preloads, so the `dlopen` returns the
//! instance already loaded (the loader matches the file, not the string).
//!
//! Mapping onto [`crate::phases`] (source `nvtx`):
//! - push/pop ranges: phases on the thread's stack; each domain has its own
//!   push/pop stack, as NVTX defines (`nvToolsExt.h`, `nvtxDomainCreateA`);
//! - start/end ranges: phases of the thread that started them, ended by
//!   whichever thread calls `nvtxRangeEnd`;
//! - marks: phases of no duration;
//! - a range of a domain created by `nvtxDomainCreateA("D")` is named
//!   `D:message`; the default domain's are named by the message alone.
//!
//! Categories, colours, payloads and resource names are not kept. The
//! ABI types below are NVTX v3's (the header's struct layouts and ids,
//! which NVTX keeps stable across versions: new ids are only appended).

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Mutex;

use hyscope_format::phase_source::NVTX;

use crate::diag::lock;
use crate::phases;

/// `NVTX_ETID_CALLBACKS`.
const ETID_CALLBACKS: u32 = 1;
/// `NVTX_ETID_VERSIONINFO`.
const ETID_VERSIONINFO: u32 = 3;
/// `NVTX_CB_MODULE_CORE`, `NVTX_CB_MODULE_CORE2`.
const MODULE_CORE: c_int = 1;
const MODULE_CORE2: c_int = 5;

/// `NvtxFunctionPointer`: a slot's type, cast to each function's own.
type FunctionPointer = unsafe extern "C" fn();
/// `NvtxFunctionTable`: an array of pointers to the slots.
type FunctionTable = *mut *mut Option<FunctionPointer>;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: Option<
        unsafe extern "C" fn(
            module: c_int,
            out_table: *mut FunctionTable,
            out_size: *mut c_uint,
        ) -> c_int,
    >,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: Option<unsafe extern "C" fn(version: u32)>,
}

/// `NvtxGetExportTableFunc_t`.
type GetExportTable = Option<unsafe extern "C" fn(id: u32) -> *const c_void>;

/// `nvtxEventAttributes_v2`: only the message is read.
#[repr(C)]
struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: u64,
    message_type: i32,
    message: *const c_void,
}

/// `nvtxMessageType_t`.
const MESSAGE_ASCII: i32 = 1;
const MESSAGE_UNICODE: i32 = 2;
const MESSAGE_REGISTERED: i32 = 3;

/// The name of a range or mark without a message.
const UNNAMED: &str = "(unnamed)";

/// Domains (`nvtxDomainHandle_t` = index + 1) and registered strings
/// (`nvtxStringHandle_t` = index + 1): NVTX hands the handles back as they
/// are, so small integers serve and stay valid in a forked child.
#[derive(Default)]
struct Names {
    domains: Vec<String>,
    strings: Vec<String>,
}

static NAMES: Mutex<Names> = Mutex::new(Names {
    domains: Vec::new(),
    strings: Vec::new(),
});

/// The registered names' lock, to hold across a `fork` (see `forking`).
pub(crate) fn hold_for_fork() -> crate::diag::Held {
    crate::diag::hold(&NAMES)
}

/// The phase stack tag of a domain (see [`phases::push`]): 0 is
/// `hyscope_phase_begin`'s, 1 the default domain's, then one per domain.
fn tag(domain: *const c_void) -> u64 {
    1 + domain as u64
}

/// `D:message` for a domain's range, the message alone in the default domain.
fn qualified(domain: *const c_void, message: String) -> String {
    let i = domain as usize;
    if i == 0 {
        return message;
    }
    match lock(&NAMES).domains.get(i - 1) {
        Some(d) => format!("{d}:{message}"),
        None => message,
    }
}

/// # Safety
/// `s` is NULL or NUL-terminated.
unsafe fn ascii(s: *const c_char) -> String {
    if s.is_null() {
        return UNNAMED.to_string();
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// # Safety
/// `s` is NULL or a `wchar_t` (UTF-32 on Linux) string ending in 0.
unsafe fn wide(s: *const libc::wchar_t) -> String {
    if s.is_null() {
        return UNNAMED.to_string();
    }
    let mut out = String::new();
    for i in 0.. {
        // SAFETY: within the string, up to its terminating 0.
        let c = unsafe { *s.add(i) };
        if c == 0 {
            break;
        }
        out.push(char::from_u32(c as u32).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    out
}

/// The message of an event's attributes.
///
/// # Safety
/// `attr` is NULL or points to an `nvtxEventAttributes_t` of its own `size`.
unsafe fn message(attr: *const EventAttributes) -> String {
    // SAFETY: per the contract; the message is read only if the struct holds it.
    let Some(a) = (unsafe { attr.as_ref() }) else {
        return UNNAMED.to_string();
    };
    if (a.size as usize) < std::mem::size_of::<EventAttributes>() {
        return UNNAMED.to_string();
    }
    match a.message_type {
        // SAFETY: NVTX's contract for the message of this type.
        MESSAGE_ASCII => unsafe { ascii(a.message.cast()) },
        // SAFETY: as above.
        MESSAGE_UNICODE => unsafe { wide(a.message.cast()) },
        MESSAGE_REGISTERED => {
            let i = a.message as usize;
            lock(&NAMES)
                .strings
                .get(i.wrapping_sub(1))
                .cloned()
                .unwrap_or_else(|| UNNAMED.to_string())
        }
        _ => UNNAMED.to_string(),
    }
}

/// Run a handler: a panic becomes a warning and `fallback` is returned.
fn guarded<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    let mut out = Some(fallback);
    crate::guarded(|| out = Some(f()));
    out.expect("set above or left as the fallback")
}

fn push(domain: *const c_void, name: String) -> c_int {
    guarded(-1, || {
        phases::push(&qualified(domain, name), NVTX, tag(domain)) as c_int
    })
}

fn pop(domain: *const c_void) -> c_int {
    guarded(-1, || match phases::pop(tag(domain)) {
        Some(level) => level as c_int,
        None => {
            crate::diag::warn("nvtxRangePop without an open range on its thread; ignored");
            -1
        }
    })
}

fn start(domain: *const c_void, name: String) -> u64 {
    guarded(0, || phases::start(&qualified(domain, name), NVTX))
}

fn end(id: u64) {
    guarded((), || {
        if !phases::stop(id) {
            crate::diag::warn("nvtxRangeEnd of a range not started (or ended twice); ignored");
        }
    })
}

fn mark(domain: *const c_void, name: String) {
    guarded((), || phases::instant(&qualified(domain, name), NVTX))
}

// The handlers, one per NVTX function (`nvToolsExt.h`). Each takes what
// the NVTX function takes; the pointers are the application's (NULL or
// valid, as NVTX requires).

unsafe extern "C" fn mark_ex(attr: *const EventAttributes) {
    // SAFETY: NVTX's contract (see above).
    mark(std::ptr::null(), unsafe { message(attr) })
}
unsafe extern "C" fn mark_a(msg: *const c_char) {
    // SAFETY: NVTX's contract.
    mark(std::ptr::null(), unsafe { ascii(msg) })
}
unsafe extern "C" fn mark_w(msg: *const libc::wchar_t) {
    // SAFETY: NVTX's contract.
    mark(std::ptr::null(), unsafe { wide(msg) })
}
unsafe extern "C" fn range_start_ex(attr: *const EventAttributes) -> u64 {
    // SAFETY: NVTX's contract.
    start(std::ptr::null(), unsafe { message(attr) })
}
unsafe extern "C" fn range_start_a(msg: *const c_char) -> u64 {
    // SAFETY: NVTX's contract.
    start(std::ptr::null(), unsafe { ascii(msg) })
}
unsafe extern "C" fn range_start_w(msg: *const libc::wchar_t) -> u64 {
    // SAFETY: NVTX's contract.
    start(std::ptr::null(), unsafe { wide(msg) })
}
extern "C" fn range_end(id: u64) {
    end(id)
}
unsafe extern "C" fn range_push_ex(attr: *const EventAttributes) -> c_int {
    // SAFETY: NVTX's contract.
    push(std::ptr::null(), unsafe { message(attr) })
}
unsafe extern "C" fn range_push_a(msg: *const c_char) -> c_int {
    // SAFETY: NVTX's contract.
    push(std::ptr::null(), unsafe { ascii(msg) })
}
unsafe extern "C" fn range_push_w(msg: *const libc::wchar_t) -> c_int {
    // SAFETY: NVTX's contract.
    push(std::ptr::null(), unsafe { wide(msg) })
}
extern "C" fn range_pop() -> c_int {
    pop(std::ptr::null())
}
unsafe extern "C" fn domain_mark_ex(domain: *const c_void, attr: *const EventAttributes) {
    // SAFETY: NVTX's contract.
    mark(domain, unsafe { message(attr) })
}
unsafe extern "C" fn domain_range_start_ex(
    domain: *const c_void,
    attr: *const EventAttributes,
) -> u64 {
    // SAFETY: NVTX's contract.
    start(domain, unsafe { message(attr) })
}
extern "C" fn domain_range_end(_domain: *const c_void, id: u64) {
    end(id)
}
unsafe extern "C" fn domain_range_push_ex(
    domain: *const c_void,
    attr: *const EventAttributes,
) -> c_int {
    // SAFETY: NVTX's contract.
    push(domain, unsafe { message(attr) })
}
extern "C" fn domain_range_pop(domain: *const c_void) -> c_int {
    pop(domain)
}

/// Register `s` in `list` (the same string gets the same handle), as a handle.
fn register(list: impl FnOnce(&mut Names) -> &mut Vec<String>, s: String) -> *const c_void {
    guarded(std::ptr::null(), || {
        let mut names = lock(&NAMES);
        let v = list(&mut names);
        let i = match v.iter().position(|x| *x == s) {
            Some(i) => i,
            None => {
                v.push(s);
                v.len() - 1
            }
        };
        (i + 1) as *const c_void
    })
}
unsafe extern "C" fn domain_register_string_a(
    _domain: *const c_void,
    s: *const c_char,
) -> *const c_void {
    // SAFETY: NVTX's contract.
    register(|n| &mut n.strings, unsafe { ascii(s) })
}
unsafe extern "C" fn domain_register_string_w(
    _domain: *const c_void,
    s: *const libc::wchar_t,
) -> *const c_void {
    // SAFETY: NVTX's contract.
    register(|n| &mut n.strings, unsafe { wide(s) })
}
unsafe extern "C" fn domain_create_a(name: *const c_char) -> *const c_void {
    // SAFETY: NVTX's contract.
    register(|n| &mut n.domains, unsafe { ascii(name) })
}
unsafe extern "C" fn domain_create_w(name: *const libc::wchar_t) -> *const c_void {
    // SAFETY: NVTX's contract.
    register(|n| &mut n.domains, unsafe { wide(name) })
}
/// A destroyed domain's name stays: its handle may still name open ranges.
extern "C" fn domain_destroy(_domain: *const c_void) {}
extern "C" fn initialize(_reserved: *const c_void) {}

/// Erase a handler's type into NVTX's generic slot type.
macro_rules! slot {
    ($f:expr, $t:ty) => {
        // SAFETY: NVTX casts the slot back to the function's own type
        // before calling it; function pointers have one size.
        Some(unsafe { std::mem::transmute::<$t, FunctionPointer>($f) })
    };
}

/// The CORE module's slots (`NVTX_CBID_CORE_*`).
fn core_slots() -> Vec<(usize, Option<FunctionPointer>)> {
    type Attr = *const EventAttributes;
    type Wide = *const libc::wchar_t;
    vec![
        (1, slot!(mark_ex, unsafe extern "C" fn(Attr))),
        (2, slot!(mark_a, unsafe extern "C" fn(*const c_char))),
        (3, slot!(mark_w, unsafe extern "C" fn(Wide))),
        (4, slot!(range_start_ex, unsafe extern "C" fn(Attr) -> u64)),
        (
            5,
            slot!(range_start_a, unsafe extern "C" fn(*const c_char) -> u64),
        ),
        (6, slot!(range_start_w, unsafe extern "C" fn(Wide) -> u64)),
        (7, slot!(range_end, extern "C" fn(u64))),
        (8, slot!(range_push_ex, unsafe extern "C" fn(Attr) -> c_int)),
        (
            9,
            slot!(range_push_a, unsafe extern "C" fn(*const c_char) -> c_int),
        ),
        (10, slot!(range_push_w, unsafe extern "C" fn(Wide) -> c_int)),
        (11, slot!(range_pop, extern "C" fn() -> c_int)),
    ]
}

/// The CORE2 module's slots (`NVTX_CBID_CORE2_*`).
fn core2_slots() -> Vec<(usize, Option<FunctionPointer>)> {
    type Attr = *const EventAttributes;
    type Domain = *const c_void;
    type Wide = *const libc::wchar_t;
    vec![
        (1, slot!(domain_mark_ex, unsafe extern "C" fn(Domain, Attr))),
        (
            2,
            slot!(
                domain_range_start_ex,
                unsafe extern "C" fn(Domain, Attr) -> u64
            ),
        ),
        (3, slot!(domain_range_end, extern "C" fn(Domain, u64))),
        (
            4,
            slot!(
                domain_range_push_ex,
                unsafe extern "C" fn(Domain, Attr) -> c_int
            ),
        ),
        (5, slot!(domain_range_pop, extern "C" fn(Domain) -> c_int)),
        (
            10,
            slot!(
                domain_register_string_a,
                unsafe extern "C" fn(Domain, *const c_char) -> Domain
            ),
        ),
        (
            11,
            slot!(
                domain_register_string_w,
                unsafe extern "C" fn(Domain, Wide) -> Domain
            ),
        ),
        (
            12,
            slot!(
                domain_create_a,
                unsafe extern "C" fn(*const c_char) -> Domain
            ),
        ),
        (
            13,
            slot!(domain_create_w, unsafe extern "C" fn(Wide) -> Domain),
        ),
        (14, slot!(domain_destroy, extern "C" fn(Domain))),
        (15, slot!(initialize, extern "C" fn(Domain))),
    ]
}

/// Fill the slots of `module`; false if NVTX does not have the module.
///
/// # Safety
/// `callbacks` is NVTX's callbacks export table.
unsafe fn install(
    callbacks: &ExportTableCallbacks,
    module: c_int,
    slots: &[(usize, Option<FunctionPointer>)],
) -> bool {
    let Some(get) = callbacks.get_module_function_table else {
        return false;
    };
    let mut table: FunctionTable = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: NVTX's function, with out-pointers to locals.
    if unsafe { get(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(id, f) in slots {
        if id >= size as usize {
            continue; // an older NVTX without this function
        }
        // SAFETY: `table` has `size` entries, each NULL or a slot pointer.
        let slot = unsafe { *table.add(id) };
        if !slot.is_null() {
            // SAFETY: a slot of NVTX's table; NVTX reads the slots only
            // after the tool's initialisation returns (`nvtxInit.h`: other
            // threads wait for `NVTX_INIT_STATE_COMPLETE`).
            unsafe { *slot = f };
        }
    }
    true
}

/// The tool's entry point, called by NVTX on the application's first NVTX
/// call (`nvtxDetail/nvtxInit.h`): 1 installs the handlers, 0 tells NVTX
/// to unload the tool and make every call a no-op.
///
/// # Safety
/// Called by NVTX with its export-table getter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get_export_table: GetExportTable) -> c_int {
    let mut ok = 0;
    crate::guarded(|| {
        let Some(get) = get_export_table else {
            return;
        };
        // SAFETY: NVTX's getter returns NULL or the table of that id.
        let callbacks = unsafe { get(ETID_CALLBACKS).cast::<ExportTableCallbacks>().as_ref() };
        let Some(callbacks) = callbacks else {
            crate::diag::warn("NVTX gave no callback table: NVTX ranges are not recorded");
            return;
        };
        if callbacks.struct_size < std::mem::size_of::<ExportTableCallbacks>() {
            return;
        }
        // SAFETY: NVTX's callbacks table.
        if !unsafe { install(callbacks, MODULE_CORE, &core_slots()) } {
            crate::diag::warn("NVTX has no CORE module: NVTX ranges are not recorded");
            return;
        }
        // SAFETY: as above; an NVTX without CORE2 has no domains.
        unsafe { install(callbacks, MODULE_CORE2, &core2_slots()) };
        // SAFETY: NVTX's getter returns NULL or the table of that id.
        let version = unsafe {
            get(ETID_VERSIONINFO)
                .cast::<ExportTableVersionInfo>()
                .as_ref()
        };
        if let Some(v) = version
            && v.struct_size >= std::mem::size_of::<ExportTableVersionInfo>()
            && let Some(set) = v.set_injection_nvtx_version
        {
            // SAFETY: NVTX's function; 3 is the NVTX API version these handlers implement.
            unsafe { set(3) };
        }
        ok = 1;
    });
    ok
}
