//! The keeper's shed: once the command has run for a while, the keeper unmaps most of the memory its fork copied
//! from the supervisor (which it never uses, and which costs the supervisor a copy of every page it writes meanwhile),
//! where that is worth it and known to be safe; what it keeps, and when it keeps everything.

use super::plan::{Plan, PATH_MAX};
use crate::sys::clone::InKeeper;
use crate::sys::shed::{unmap, ZERO_FILLED};
use crate::sys::signal_safe as calls;

/// How many ranges the shed keeps: around this stack, this thread's control block and its errno, and the loaded
/// objects' zero-filled data.
const KEPT: usize = 3 + ZERO_FILLED;

/// Sheds the caller's memory, where that is safe (see `sys::shed::Loaded::calls_safe`: bound at load, no interposer)
/// and worth it (see [`worth_shedding`]): everything [`shed_memory`] may unmap, but for the pages near this stack,
/// this thread's control block and its errno (with the program's static TLS), and every loaded object's zero-filled
/// data (its `.bss`), as the loader listed them before the fork.
pub(super) fn shed(plan: &Plan, me: &InKeeper) {
    if !plan.loaded.calls_safe || !worth_shedding(plan.page_size) {
        return;
    }
    // No signal handler runs in the keeper (every signal is blocked, and a fault's signal is then delivered with its
    // default action); the alternate stack, which may be memory shed here, is turned off all the same.
    calls::disable_alternate_stack();
    let page = plan.page_size.max(1);
    let around = |at: usize, distance: usize| {
        (
            at.saturating_sub(distance) / page * page,
            at.saturating_add(distance)
                .div_ceil(page)
                .saturating_mul(page),
        )
    };
    let on_this_stack = 0u8;
    let tls = KEPT_AROUND.saturating_add(plan.loaded.tls_span);
    let mut kept = [(0, 0); KEPT];
    let near = [
        around((&raw const on_this_stack) as usize, KEPT_AROUND),
        around(calls::control_block(), tls),
        around(calls::errno_address(), tls),
    ];
    let zero_filled = plan
        .loaded
        .zero_filled
        .map(|(from, to)| (from / page * page, to.div_ceil(page).saturating_mul(page)));
    for (slot, range) in kept.iter_mut().zip(near.into_iter().chain(zero_filled)) {
        *slot = range;
    }
    kept.sort_unstable();
    shed_memory(me, &kept);
}

/// Below this much of the caller's memory (anonymous and resident in the keeper, as the fork copied it), shedding is
/// not worth reading `/proc/self/maps` (up to about 0.1 ms per spawn, measured under load).
const SHED_FROM_RESIDENT: usize = 8 << 20;

/// Whether the keeper holds at least [`SHED_FROM_RESIDENT`] bytes of anonymous memory (`/proc/self/statm`: resident
/// minus shared pages; swapped-out pages are not counted), and has no shadow stack (x86-64 CET, arm64 GCS: an anonymous
/// writable mapping that the CPU uses at every return, which `shed_memory` cannot tell apart).
fn worth_shedding(page_size: usize) -> bool {
    if calls::shadow_stack() {
        return false;
    }
    let mut buf = [0u8; 128];
    let Some(text) = calls::read_start(libc::AT_FDCWD, c"/proc/self/statm", &mut buf) else {
        return false;
    };
    let mut pages = text
        .split(u8::is_ascii_whitespace)
        .map(|field| std::str::from_utf8(field).ok()?.parse::<usize>().ok());
    let (_size, Some(Some(resident)), Some(Some(shared))) =
        (pages.next(), pages.next(), pages.next())
    else {
        return false;
    };
    resident.saturating_sub(shared).saturating_mul(page_size) >= SHED_FROM_RESIDENT
}

/// How long after its start the keeper sheds the caller's memory (if the command still runs): a command that ends
/// sooner costs no read of `/proc`, and leaves its caller's pages copied for at most that long.
pub(super) const AFTER_MS: u16 = 10;

/// Mappings smaller than this are never shed.
const SHED_AT_LEAST: usize = 256 * 1024;
/// How much is kept on each side of an address the keeper uses, in a mapping it sheds: its stack (its deepest frame
/// is `remove_below`'s, about 4.5 KiB unoptimised, however deep the folders, below `keep`'s 8.5 KiB), and, with the
/// program's static TLS span added, its thread's control block and its errno.
const KEPT_AROUND: usize = 256 * 1024;

/// Unmaps the large private, writable, anonymous mappings that the fork copied from the supervisor (its heap, its large
/// allocations, its threads' stacks), but for the pages within a distance of each address in `keep` (`(address,
/// distance)`: this stack, this thread's control block and errno, whose distance covers the program's static TLS, where
/// libc may keep the thread's `rseq` area, which the kernel writes). One that begins where a file's data (a private,
/// writable mapping of a file) ends is kept whole: it holds that program's or library's `.bss` (adjacent anonymous
/// mappings are merged into one), such as the data of the keeper's libc, which a static build places anywhere in the
/// program's. Until then the keeper shares that memory with the supervisor copy-on-write: each page the supervisor
/// writes while the job runs is copied, and the keeper holds the old one (a supervisor that rewrote a 512 MiB heap took
/// 0.4-2 s instead of 3 ms, and its keeper held 512 MiB). The keeper uses nothing of it: its plan is on its own stack,
/// it allocates nothing, uses no Rust thread-local, and calls libc through bindings resolved at load (Rust links with
/// `-z now`). Best effort: without `/proc`, the keeper keeps the copy; a line of `/proc/self/maps` longer than the
/// buffer ends the unmapping.
fn shed_memory(me: &InKeeper, kept: &[(usize, usize)]) {
    let Ok(maps) = calls::open(c"/proc/self/maps", libc::O_RDONLY | libc::O_CLOEXEC) else {
        return;
    };
    // A line is at most a path (PATH_MAX) and its fields: two always fit.
    let mut buf = [0u8; 2 * PATH_MAX];
    // How much of `buf` holds what was read and not yet parsed: at most its length (a read gets no more than the
    // free part), so every range below is inside it (`get` all the same: nothing here can panic).
    let mut held = 0;
    // Where the last line's mapping ended, if it was a file's data.
    let mut data_end = None;
    while let Some(free) = buf.get_mut(held..) {
        let Ok(got @ 1..) = calls::read(maps, free) else {
            break;
        };
        held = held.saturating_add(got).min(buf.len());
        let text = buf.get(..held).unwrap_or_default();
        // The complete lines: each but the last (partial) one ends with a newline.
        let mut parsed = 0;
        for line in text.split_inclusive(|&b| b == b'\n') {
            let Some(line) = line.strip_suffix(b"\n") else {
                break;
            };
            parsed += line.len() + 1;
            match mapping(line) {
                Some(Mapping::Sheddable(from, to)) => {
                    if data_end != Some(from) {
                        // See `sys::shed::unmap` for why nothing the keeper runs from here on uses it.
                        kept_apart(from, to, kept, |from, to| unmap(me, from, to));
                    }
                    data_end = None;
                }
                Some(Mapping::Data(to)) => data_end = Some(to),
                _ => data_end = None,
            }
        }
        // `parsed` <= `held` (the lines are parts of `text`): the range is inside `buf`.
        if parsed > held {
            break;
        }
        buf.copy_within(parsed..held, 0);
        held -= parsed;
        if held == buf.len() {
            break;
        }
    }
    calls::close(maps);
}

/// Calls `f` with each part of `from..to` outside every range of `kept` (sorted by their starts, page-aligned): each
/// part non-empty (`from < to`), in order.
fn kept_apart(from: usize, to: usize, kept: &[(usize, usize)], mut f: impl FnMut(usize, usize)) {
    let mut next = from;
    for &(kept_from, kept_to) in kept {
        if next >= to {
            return;
        }
        let gap_end = kept_from.min(to);
        if next < gap_end {
            f(next, gap_end);
        }
        next = next.max(kept_to);
    }
    if next < to {
        f(next, to);
    }
}

/// A line of `/proc/self/maps`, as `shed_memory` sees it.
enum Mapping {
    /// A private, writable, anonymous mapping of at least [`SHED_AT_LEAST`] bytes: its range.
    Sheddable(usize, usize),
    /// A private, writable mapping of a file (a program's or library's data, which its `.bss` follows): where it
    /// ends.
    Data(usize),
    Other,
}

/// Reads a line of `/proc/self/maps`: `FROM-TO PERMS OFFSET DEVICE INODE [NAME]`.
fn mapping(line: &[u8]) -> Option<Mapping> {
    let hex = |digits: &[u8]| usize::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok();
    let mut fields = line.split(|&b| b == b' ').filter(|field| !field.is_empty());
    let (range, perms, _offset, _device, inode) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let dash = range.iter().position(|&b| b == b'-')?;
    let (from, to) = (hex(range.get(..dash)?)?, hex(range.get(dash + 1..)?)?);
    let private_writable = perms.get(1) == Some(&b'w') && perms.get(3) == Some(&b'p');
    Some(if !private_writable {
        Mapping::Other
    } else if inode != b"0" {
        Mapping::Data(to)
    } else if to.saturating_sub(from) >= SHED_AT_LEAST {
        Mapping::Sheddable(from, to)
    } else {
        Mapping::Other
    })
}
