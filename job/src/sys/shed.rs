//! The keeper's unmapping of the memory its fork copied from this process (the shed; what is unmapped, and when, is
//! chosen in `keeper/shed.rs`).

use super::clone::InKeeper;

/// Unmaps `from..to` (page-aligned, `from < to`) in the keeper.
///
/// The range must be one that `keeper/shed.rs` chose: part of a private, writable, anonymous mapping of at least
/// 256 KiB that `/proc/self/maps` listed in the keeper, outside every range the keeper keeps (its stack, its thread's
/// control block, errno and static TLS; every loaded object's zero-filled data, its `.bss`, as the loader listed them
/// before the fork), chosen only where nothing the keeper calls may use such memory ([`Loaded::calls_safe`]: bound at
/// load, no interposer, such as a preloaded library or a sanitizer's runtime; no shadow stack; the alternate signal
/// stack turned off).
pub(crate) fn unmap(_: &InKeeper, from: usize, to: usize) {
    // SAFETY: the keeper's own address space (`InKeeper`: this runs in the keeper, a process of its own, once the
    // command's process exists). The range is memory the fork copied from the supervisor (its heap, its threads'
    // stacks, its large allocations), which nothing the keeper runs from here on uses: the keeper's plan is a copy on
    // its own stack (kept); it allocates nothing and frees nothing (the allocator's memory may go); it calls libc
    // through bindings resolved at load (the shed is skipped for an object bound lazily) that no preloaded library
    // or sanitizer runtime interposes (skipped then: `Loaded::calls_safe`); std's
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

/// How many zero-filled ranges (`.bss`) of loaded objects a keeper's plan holds: past that, the keeper keeps its copy.
pub(crate) const ZERO_FILLED: usize = 64;

/// What the loader says of this process before the fork (`dl_iterate_phdr`, no system call): what the keeper's shed
/// must keep, and whether it may shed at all.
#[derive(Clone, Copy)]
pub(crate) struct Loaded {
    /// The sum of the sizes of the `PT_TLS` segments of this program and its libraries (each rounded up to its
    /// alignment): at least the size of a thread's static TLS blocks (how far from the thread pointer libc may keep a
    /// thread's data: its errno, its `rseq` area).
    pub(crate) tls_span: usize,
    /// The zero-filled part (`.bss`: memory size past file size) of each loaded segment, the first [`ZERO_FILLED`].
    pub(crate) zero_filled: [(usize, usize); ZERO_FILLED],
    /// Whether the keeper's calls are safe from the shed: the object holding this code was bound at load (no lazy
    /// `PLT` entry, whose first call would need the dynamic linker's data), every C library function the keeper calls
    /// after the fork lies in the object that holds errno (no preloaded library, sanitizer runtime or other
    /// interposer, whose state may be anonymous memory), and every zero-filled range fits in `zero_filled`.
    pub(crate) calls_safe: bool,
}

/// The C library functions the keeper calls after the fork (its `signal_safe`, `clone`, `page` and `shed` blocks),
/// first the reference: `__errno_location`, which no interposer replaces.
fn keeper_calls() -> [usize; 41] {
    [
        libc::__errno_location as *const () as usize,
        libc::getpid as *const () as usize,
        libc::getppid as *const () as usize,
        libc::getuid as *const () as usize,
        libc::prctl as *const () as usize,
        libc::sigfillset as *const () as usize,
        libc::sigemptyset as *const () as usize,
        libc::sigaddset as *const () as usize,
        libc::sigprocmask as *const () as usize,
        libc::sigtimedwait as *const () as usize,
        libc::sigaltstack as *const () as usize,
        libc::waitid as *const () as usize,
        libc::waitpid as *const () as usize,
        libc::kill as *const () as usize,
        libc::setpgid as *const () as usize,
        libc::unshare as *const () as usize,
        libc::setns as *const () as usize,
        libc::syscall as *const () as usize,
        libc::stat as *const () as usize,
        libc::lstat as *const () as usize,
        libc::open as *const () as usize,
        libc::openat as *const () as usize,
        libc::close as *const () as usize,
        libc::read as *const () as usize,
        libc::write as *const () as usize,
        libc::lseek as *const () as usize,
        libc::mkdir as *const () as usize,
        libc::rmdir as *const () as usize,
        libc::faccessat as *const () as usize,
        libc::unlinkat as *const () as usize,
        libc::getrlimit as *const () as usize,
        libc::setrlimit as *const () as usize,
        libc::signal as *const () as usize,
        libc::clock_gettime as *const () as usize,
        libc::nanosleep as *const () as usize,
        libc::_exit as *const () as usize,
        libc::pthread_self as *const () as usize,
        libc::clone as *const () as usize,
        libc::mmap as *const () as usize,
        libc::mprotect as *const () as usize,
        libc::munmap as *const () as usize,
    ]
}

/// What `loaded`'s walk gathers.
struct Walk {
    loaded: Loaded,
    /// How many zero-filled ranges were seen (possibly more than fit).
    zero_seen: usize,
    /// The keeper's calls, and the number (1 on) of the object each lies in (0: none found yet).
    calls: [usize; 41],
    owner: [usize; 41],
    /// An address in this code, and whether its object was bound at load (`None`: not found).
    here: usize,
    here_bound: Option<bool>,
    objects: usize,
}

/// `d_tag`s and flags of the dynamic section (`elf.h`).
const DT_NULL: i64 = 0;
const DT_JMPREL: i64 = 23;
const DT_BIND_NOW: i64 = 24;
const DT_FLAGS: i64 = 30;
const DF_BIND_NOW: u64 = 0x8;
const DT_FLAGS_1: i64 = 0x6fff_fffb;
const DF_1_NOW: u64 = 0x1;

/// One entry of a dynamic section (`Elf64_Dyn` or `Elf32_Dyn`, as the pointer width).
#[repr(C)]
#[derive(Clone, Copy)]
struct Dyn {
    tag: isize,
    val: usize,
}

/// Whether an object with these dynamic entries has nothing bound lazily: no `PLT` relocations, or bound at load.
fn bound_at_load(entries: &[Dyn]) -> bool {
    let mut plt = false;
    let mut now = false;
    for entry in entries.iter().take_while(|e| e.tag as i64 != DT_NULL) {
        match (entry.tag as i64, entry.val as u64) {
            (DT_JMPREL, _) => plt = true,
            (DT_BIND_NOW, _) => now = true,
            (DT_FLAGS, flags) => now |= flags & DF_BIND_NOW != 0,
            (DT_FLAGS_1, flags) => now |= flags & DF_1_NOW != 0,
            _ => {}
        }
    }
    now || !plt
}

/// What the loader says of this process (see [`Loaded`]). Before the fork: it takes the loader's lock.
pub(crate) fn loaded() -> Loaded {
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the ELF addresses and sizes of this process's own objects fit its pointer width"
    )]
    extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _: libc::size_t,
        walk: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid `info` whose `dlpi_phdr` points to `dlpi_phnum` program headers, and
        // our `walk` (a `Walk` that lives across the call, which no one else uses meanwhile).
        let (info, headers, walk) = unsafe {
            let info = &*info;
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
            (info, headers, &mut *walk.cast::<Walk>())
        };
        walk.objects += 1;
        let base = info.dlpi_addr as usize;
        let mut here = false;
        let mut dynamic = None;
        for header in headers {
            let start = base.wrapping_add(header.p_vaddr as usize);
            let end = start.saturating_add(header.p_memsz as usize);
            match header.p_type {
                libc::PT_LOAD => {
                    for (call, owner) in walk.calls.iter().zip(walk.owner.iter_mut()) {
                        if (start..end).contains(call) {
                            *owner = walk.objects;
                        }
                    }
                    here |= (start..end).contains(&walk.here);
                    if header.p_memsz > header.p_filesz {
                        let zero = (start.saturating_add(header.p_filesz as usize), end);
                        if let Some(slot) = walk.loaded.zero_filled.get_mut(walk.zero_seen) {
                            *slot = zero;
                        }
                        walk.zero_seen += 1;
                    }
                }
                libc::PT_TLS => {
                    let size =
                        usize::try_from(header.p_memsz.next_multiple_of(header.p_align.max(1)))
                            .unwrap_or(0);
                    walk.loaded.tls_span = walk.loaded.tls_span.saturating_add(size);
                }
                libc::PT_DYNAMIC => dynamic = Some((start, header.p_memsz as usize)),
                _ => {}
            }
        }
        if here {
            walk.here_bound = Some(dynamic.is_none_or(|(at, len)| {
                // SAFETY: the object's dynamic section, as its PT_DYNAMIC header places it: mapped (inside one of
                // its loaded segments) and readable while the loader holds the object (during this callback),
                // `len` bytes of `Dyn` entries, aligned as the ELF format requires.
                let entries = unsafe {
                    std::slice::from_raw_parts(at as *const Dyn, len / std::mem::size_of::<Dyn>())
                };
                bound_at_load(entries)
            }));
        }
        0
    }
    let mut walk = Walk {
        loaded: Loaded {
            tls_span: 0,
            zero_filled: [(0, 0); ZERO_FILLED],
            calls_safe: false,
        },
        zero_seen: 0,
        calls: keeper_calls(),
        owner: [0; 41],
        here: loaded as *const () as usize,
        here_bound: None,
        objects: 0,
    };
    // SAFETY: `visit` matches the callback's signature and writes only to `walk`, which lives across the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut walk).cast()) };
    let errno_owner = walk.owner[0];
    walk.loaded.calls_safe = walk.here_bound == Some(true)
        && errno_owner != 0
        && walk.owner.iter().all(|&owner| owner == errno_owner)
        && walk.zero_seen <= ZERO_FILLED;
    walk.loaded
}
