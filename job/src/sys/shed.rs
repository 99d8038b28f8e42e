//! The keeper's unmapping of the memory its fork copied from this process (the shed; what is unmapped, and when, is
//! chosen in `keeper/shed.rs`).

use super::clone::InKeeper;

/// Unmaps `from..to` (page-aligned, `from < to`) in the keeper.
///
/// The range must be one that `keeper/shed.rs` chose: part of a private, writable, anonymous mapping of at least
/// 256 KiB that `/proc/self/maps` listed in the keeper, outside every range the keeper keeps (its stack, its thread's
/// control block, errno and static TLS; every loaded object's zero-filled data, its `.bss`, as the loader listed them
/// before the fork), chosen only where nothing else may use such memory (no shadow stack, no sanitizer shadow, no
/// preloaded library, lazy binding ruled out, no alternate signal stack left on).
pub(crate) fn unmap(_: &InKeeper, from: usize, to: usize) {
    // SAFETY: the keeper's own address space (`InKeeper`: this runs in the keeper, a process of its own, once the
    // command's process exists). The range is memory the fork copied from the supervisor (its heap, its threads'
    // stacks, its large allocations), which nothing the keeper runs from here on uses: the keeper's plan is a copy on
    // its own stack (kept); it allocates nothing and frees nothing (the allocator's memory may go); it calls libc
    // through bindings resolved at load (the shed is skipped for an object bound lazily) that no preloaded library
    // interposes (skipped then), in code that no sanitizer instruments (skipped when its shadow is mapped); std's
    // frames above the `pre_exec` hook, and what they own, are never returned to (the hook never returns in the
    // keeper, which ends in `_exit`: no destructor runs); no signal handler runs in the keeper (every signal is
    // blocked, a fault's signal is then delivered with its default action, and the alternate signal stack is turned
    // off before the shed); the group helper, which ran on memory shared with the keeper, was reaped before, and on
    // x86-64 the command's process left the keeper's memory at its `exec` (`CLONE_VFORK`). The page shared with the
    // supervisor is `MAP_SHARED`, never chosen. The risk, if that argument were wrong, is bounded: the keeper is a
    // process of its own, so a fault kills the keeper alone (then the command, by its `PR_SET_PDEATHSIG`, and the
    // supervisor's wait sees its keeper killed and ends the job); the supervisor's memory is never touched.
    unsafe { libc::munmap(from as *mut libc::c_void, to.saturating_sub(from)) };
}

/// The sum of the sizes of the `PT_TLS` segments of this program and the libraries it has loaded (each rounded up to
/// its alignment): at least the size of a thread's static TLS blocks.
pub(crate) fn static_tls_span() -> usize {
    extern "C" fn add(
        info: *mut libc::dl_phdr_info,
        _: libc::size_t,
        sum: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid `info` whose `dlpi_phdr` points to `dlpi_phnum` program headers, and
        // our `sum` (a usize that lives across the call).
        unsafe {
            let info = &*info;
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
            for tls in headers.iter().filter(|h| h.p_type == libc::PT_TLS) {
                let size =
                    usize::try_from(tls.p_memsz.next_multiple_of(tls.p_align.max(1))).unwrap_or(0);
                *sum.cast::<usize>() = (*sum.cast::<usize>()).saturating_add(size);
            }
        }
        0
    }
    let mut sum = 0usize;
    // SAFETY: `add` matches the callback's signature and writes only to `sum`, which lives across the call.
    unsafe { libc::dl_iterate_phdr(Some(add), (&raw mut sum).cast()) };
    sum
}
