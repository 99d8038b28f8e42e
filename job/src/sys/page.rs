//! The page the keeper shares with this process (its layout, its mapping and unmapping), and the `pre_exec` hook
//! that starts the keeper in the child std forks for the spawn.

use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// What the keeper and this process share (see `keeper/page.rs` for who writes what): atomics only, valid for every
/// bit pattern (the page starts zero-filled) and shareable with another process.
#[repr(C)]
pub(crate) struct Shared {
    /// The command's pid, written by the keeper before the spawn returns.
    pub(crate) command: AtomicU32,
    /// The verdict this process gives once the command exited (0 until then).
    pub(crate) verdict: AtomicU32,
    /// Set by this process once the spawn returned.
    pub(crate) spawned: AtomicU32,
    /// Set by the keeper once the command exited and left something running.
    pub(crate) exited: AtomicU32,
    /// The signal that last stopped the command, set by the keeper, taken by this process.
    pub(crate) stopped: AtomicU32,
    /// Set by the keeper just before it exits on its own.
    pub(crate) leaving: AtomicU32,
    /// Set by this process during a kill of a reaper job: the keeper leaves the job's exited orphans unreaped.
    pub(crate) hold: AtomicU32,
    /// Set by the keeper before it fails the spawn for a reason its errno alone does not tell.
    pub(crate) why: AtomicU32,
    /// The death plan (`DeathPlan::parts`), set by this process, read by the keeper once this process died.
    pub(crate) death_signal: AtomicU32,
    pub(crate) death_grace_ms: AtomicU32,
    /// What the job used, written by the keeper before it removes the job's folder and before it exits: which of
    /// the figures below it wrote (`keeper::page`'s `USED_*` bits), user and system CPU time in microseconds, the
    /// peak memory in bytes, the peak count of processes.
    pub(crate) used: AtomicU32,
    pub(crate) user_us: AtomicU64,
    pub(crate) system_us: AtomicU64,
    pub(crate) memory: AtomicU64,
    pub(crate) processes: AtomicU64,
}

/// The page's length: one page on every system (a `Shared` is far smaller).
const PAGE: usize = 4096;

/// One anonymous page mapped `MAP_SHARED` before the spawn: the keeper (a fork) shares it with this process; the
/// command loses it at `exec`. Unmapped when dropped.
#[derive(Debug)]
pub(crate) struct SharedPage {
    /// The mapping's address (a `usize`, so that the value is `Send` and `Sync`: only atomics live there).
    addr: usize,
}

impl SharedPage {
    pub(crate) fn new() -> io::Result<SharedPage> {
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choice; no existing memory is touched.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedPage {
            addr: addr as usize,
        })
    }

    /// What the page holds.
    pub(crate) fn shared(&self) -> &Shared {
        // SAFETY: the page is mapped (zero-filled, page-aligned) for as long as `self` lives, and holds only a
        // `Shared`, whose atomics are valid for every bit pattern and may be shared with another process.
        unsafe { &*(self.addr as *const Shared) }
    }

    /// The page as the keeper finds it after the fork (see [`PageRef`]).
    pub(crate) fn for_keeper(&self) -> PageRef {
        PageRef { addr: self.addr }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of that length; nothing refers to it once `self` is gone (a `PageRef` is
        // read only in the child std forked for a spawn, which has its own mapping of the page).
        unsafe { libc::munmap(self.addr as *mut libc::c_void, PAGE) };
    }
}

/// The shared page's address, as the keeper's plan holds it (copied into the `pre_exec` hook, then onto the keeper's
/// stack): read only in the child std forked for the spawn ([`PageRef::get`] asks for [`Forked`]).
#[derive(Clone, Copy)]
pub(crate) struct PageRef {
    addr: usize,
}

impl PageRef {
    /// What the page holds, in the forked child.
    pub(crate) fn get(&self, _: &Forked) -> &Shared {
        // SAFETY: the page mapped by `SharedPage::new` (`MAP_SHARED`, page-aligned, zero-filled); the hook runs only
        // while armed, and the caller keeps the page mapped past the spawn while the hook is armed (`arm`); a fork
        // keeps the mapping, and nothing in the keeper unmaps it (the shed unmaps private mappings only); the
        // command's process loses it at its `exec`. It holds only a `Shared` (see there); each side only loads,
        // stores and swaps its atomics.
        unsafe { &*(self.addr as *const Shared) }
    }
}

/// Proof that the code holding it runs in the child std forked for a keeper spawn (the keeper, or the command's
/// process before it returns from the hook): made only by the hook of [`arm`] (copies stay in that child).
#[derive(Clone, Copy)]
pub(crate) struct Forked(());

/// The keeper hook on a `Command`, armed while this lives: dropping it disarms the hook (a later spawn of the same
/// `Command` then runs as without it).
#[derive(Debug)]
pub(crate) struct Armed {
    armed: Arc<AtomicBool>,
}

impl Drop for Armed {
    fn drop(&mut self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

/// Makes every spawn of `command`, while the returned [`Armed`] lives, run `start(&plan, Forked)` in the child std
/// forks (a `pre_exec` hook, so std forks and execs instead of using `posix_spawn`). The page that `plan` refers to
/// must stay mapped while the hook is armed, past the spawn.
///
/// `start` must be the keeper's (`keeper/spawn.rs`): its soundness is the argument below, which holds for its code
/// alone. It returns `Ok` only in the command's process, an error in the forked child that could not make it, and
/// never in the keeper.
pub(crate) fn arm<P: Copy + Send + Sync + 'static>(
    command: &mut Command,
    plan: P,
    start: fn(&P, Forked) -> io::Result<()>,
) -> Armed {
    let armed = Arc::new(AtomicBool::new(true));
    let hook = Arc::clone(&armed);
    // SAFETY: `pre_exec` asks that the hook be async-signal-safe: std runs it in the child it forked (with libc's
    // `fork`, so after any `pthread_atfork` child handlers of this program's libraries), a copy of this process of
    // which only the forking thread goes on, where a lock another thread held stays held. The hook (`start`, then the
    // keeper's watch in the keeper) makes system calls only through `signal_safe` (each async-signal-safe, see there)
    // and the few special blocks of `clone.rs`, `page.rs` and `shed.rs`, reads only memory the fork copied (`plan`,
    // copied into the closure and then onto the keeper's own stack) and the shared page (atomics only), and allocates
    // nothing, frees nothing, takes no lock, uses no Rust thread-local; no panic can be reached in it (see
    // `keeper/mod.rs`, "No panic after the fork"). While armed, the page is mapped (the caller keeps it past the
    // spawn).
    //
    // The hook returns in two cases only, as std expects: `Ok` in the command's process (`L`: std applies the rest of
    // the `Command` and execs), or an error in the forked child when the command's process could not be made (std
    // passes its OS error code to this process through its close-on-exec error pipe and reaps the child; the code is
    // `KEEPER_FAILED` plus the errno, see `KeeperHook::keeper_error`). In the keeper (`M`), once `L` exists, it never
    // returns: `M` goes on in the keeper's code (on a stack of its own on x86-64) and ends in `_exit`, without
    // unwinding: std's frames above the hook, and what they own (the `Command`, this closure, the error pipe's ends,
    // which `M` closes by number), are never returned to and never dropped there, as after any call that does not
    // return. Nothing in this process depends on `M` returning: std's parent side only reads the pipe (end of file
    // once `L` has exec'd and `M` closed its copy) and, on an error, waits for `M`'s exit.
    unsafe {
        command.pre_exec(move || {
            if !hook.load(Ordering::SeqCst) {
                return Ok(());
            }
            start(&plan, Forked(()))
        })
    };
    Armed { armed }
}
