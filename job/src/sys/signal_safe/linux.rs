//! The Linux calls of the async-signal-safe module (see `mod.rs`): `prctl`, capabilities and namespaces, signals
//! waited for, `close_range`, `getdents64`, and this thread's own addresses (for the shed).

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;

use super::{check, errno};

/// `close_range` and `clone3`: the same numbers on every Linux architecture (the table is shared from 424 on).
pub(crate) const SYS_CLOSE_RANGE: libc::c_long = 436;
pub(crate) const SYS_CLONE3: libc::c_long = 435;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
pub(crate) const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// The header of `capget`/`capset`.
#[repr(C)]
pub(crate) struct CapHeader {
    pub(crate) version: u32,
    pub(crate) pid: libc::c_int,
}

/// One word of each capability set (version 3 has two).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct CapData {
    pub(crate) effective: u32,
    pub(crate) permitted: u32,
    pub(crate) inheritable: u32,
}

/// `prctl(option, arg, 0, 0, 0)`, for the options that take integers only: the call's result.
pub(crate) fn prctl(option: libc::c_int, arg: libc::c_ulong) -> Result<libc::c_int, i32> {
    // SAFETY: prctl with integer arguments (the callers' options read no memory through them).
    check(unsafe { libc::prctl(option, arg, 0, 0, 0) })
}

/// This process's name (`PR_SET_NAME`: the kernel reads at most 16 bytes, and stops at the NUL).
pub(crate) fn set_name(name: &CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string, which `name` is, for the call's length.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
}

/// Whether this thread has a shadow stack enabled (`false` where the kernel knows none).
pub(crate) fn shadow_stack() -> bool {
    let mut features: u64 = 0;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: arch_prctl(ARCH_SHSTK_STATUS) writes a u64 of features to the address given, which lives across the
    // call; a kernel without it fails with EINVAL and writes nothing.
    let asked = unsafe { libc::syscall(libc::SYS_arch_prctl, 0x5005, &raw mut features) };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: prctl(PR_GET_SHADOW_STACK_STATUS) writes a u64 of flags to the address given, which lives across
    // the call; a kernel without it fails with EINVAL and writes nothing.
    let asked = libc::c_long::from(unsafe { libc::prctl(74, &raw mut features, 0, 0, 0) });
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let asked: libc::c_long = -1;
    asked == 0 && features & 1 != 0
}

/// Takes a pending signal of `set` (which must be blocked), or waits for one, no longer than `timeout` (if any):
/// its number and its `si_code`.
pub(crate) fn sigtimedwait(
    set: &libc::sigset_t,
    timeout: Option<&libc::timespec>,
) -> Result<(libc::c_int, libc::c_int), i32> {
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    let timeout = timeout.map_or(std::ptr::null(), std::ptr::from_ref);
    // SAFETY: `set`, `info` and `timeout` (or null) live across the call; `info` is zeroed, possibly filled in:
    // every bit pattern is a valid siginfo_t (integers).
    let (signal, info) = unsafe {
        (
            libc::sigtimedwait(set, info.as_mut_ptr(), timeout),
            info.assume_init(),
        )
    };
    check(signal).map(|signal| (signal, info.si_code))
}

pub(crate) fn unshare(flags: libc::c_int) -> Result<(), i32> {
    // SAFETY: unshare with an integer argument.
    check(unsafe { libc::unshare(flags) }).map(drop)
}

pub(crate) fn setns(fd: RawFd, nstype: libc::c_int) -> Result<(), i32> {
    // SAFETY: setns with integer arguments.
    check(unsafe { libc::setns(fd, nstype) }).map(drop)
}

/// This process's capabilities (version 3: two words of each set).
pub(crate) fn capget(header: &mut CapHeader, data: &mut [CapData; 2]) -> Result<(), i32> {
    // SAFETY: capget reads the header and writes two `CapData` (version 3) into `data`; both live across the
    // call (a raw system call).
    check(unsafe {
        libc::syscall(
            libc::SYS_capget,
            std::ptr::from_mut(header),
            data.as_mut_ptr(),
        )
    })
    .map(drop)
}

pub(crate) fn capset(header: &mut CapHeader, data: &[CapData; 2]) -> Result<(), i32> {
    // SAFETY: capset reads the header (and may write its version) and two `CapData`; both live across the call.
    check(unsafe { libc::syscall(libc::SYS_capset, std::ptr::from_mut(header), data.as_ptr()) })
        .map(drop)
}

/// `close_range(first, last, 0)` (Linux 5.9).
pub(crate) fn close_range(first: libc::c_uint, last: libc::c_uint) -> Result<(), i32> {
    // SAFETY: close_range with integer arguments; it closes only descriptors.
    check(unsafe { libc::syscall(SYS_CLOSE_RANGE, first, last, 0 as libc::c_uint) }).map(drop)
}

/// The next directory records of `dir` (`getdents64`), into `buf` (8-byte aligned, as the records are): the bytes
/// written (empty at the end).
pub(crate) fn getdents64(dir: RawFd, buf: &mut [u64; 512]) -> Result<&[u8], i32> {
    // SAFETY: getdents64 writes at most the buffer's length into it, and says how much; those bytes (of a buffer
    // of integers, initialised) are then viewed as bytes, borrowed from `buf`.
    unsafe {
        let n = libc::syscall(
            libc::SYS_getdents64,
            dir,
            buf.as_mut_ptr(),
            std::mem::size_of_val(buf),
        );
        let len = usize::try_from(n).map_err(|_| errno())?;
        Ok(std::slice::from_raw_parts(
            buf.as_ptr().cast::<u8>(),
            len.min(std::mem::size_of_val(buf)),
        ))
    }
}

/// The address of this thread's errno (in its TLS block).
pub(crate) fn errno_address() -> usize {
    // SAFETY: __errno_location has no preconditions.
    unsafe { libc::__errno_location() as usize }
}

/// This thread's control block (the thread pointer, or next to it), as `pthread_self` gives it: an integer in
/// glibc, a pointer in musl.
pub(crate) fn control_block() -> usize {
    // SAFETY: pthread_self has no preconditions (it reads the thread pointer).
    let me = unsafe { libc::pthread_self() };
    #[cfg(target_env = "musl")]
    return me as usize;
    #[cfg(not(target_env = "musl"))]
    usize::try_from(me).unwrap_or(0)
}

/// Turns this thread's alternate signal stack off (`sigaltstack(SS_DISABLE)`), if it has one and is not running on it.
pub(crate) fn disable_alternate_stack() {
    let off = libc::stack_t {
        ss_sp: std::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    // SAFETY: sigaltstack reads the `stack_t` given, which lives across the call (its null stack is not used with
    // SS_DISABLE); no old one is asked for.
    unsafe { libc::sigaltstack(&raw const off, std::ptr::null_mut()) };
}
