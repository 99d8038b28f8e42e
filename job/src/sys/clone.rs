//! Making the command's process (`L`) and the group helper (`H`) in the keeper (`M`): `clone3` (or the legacy
//! `clone`) and, on x86-64, its return path on a stack of the keeper's own (`clone_here`); the helper that shares the
//! keeper's memory (`make_group`); the stacks they run on.

use std::os::fd::RawFd;

use super::page::Forked;
#[cfg(not(target_arch = "x86_64"))]
use super::signal_safe::check;
use super::signal_safe::{errno, waitpid, SYS_CLONE3};

/// `clone3`'s flag: the child starts in the cgroup named by `CloneArgs::cgroup` (Linux 5.7).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args` of Linux 5.7 (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Proof that the code holding it runs in the keeper (`M`) once the command's process exists: made only by
/// [`make_command`], in `M`, for the keeper's own code (`keeper`). What only `M` may do asks for it (see `shed.rs`).
pub(crate) struct InKeeper(Forked);

impl InKeeper {
    /// The keeper runs in the child std forked for the spawn.
    pub(crate) fn forked(&self) -> &Forked {
        &self.0
    }
}

/// What the keeper's code gets once the command's process exists: the caller's plan, the folder's descriptor (-1:
/// none), and the group helper whose group the keeper joins (made before the command: once it exists, nothing can
/// fail).
#[derive(Clone, Copy)]
pub(crate) struct Kept<P> {
    pub(crate) plan: P,
    pub(crate) folder_fd: RawFd,
    pub(crate) group: libc::pid_t,
}

/// The keeper's code, run in the keeper once the command's process `pid` exists; it never returns.
pub(crate) type Keeper<P> = fn(&Kept<P>, libc::pid_t, InKeeper) -> !;

/// How the command's process was made (in it, as [`make_command`] returns).
pub(crate) enum Made {
    /// By `clone3`, in the job's cgroup if there is one.
    Inside,
    /// By the legacy `clone` (`clone3` refused): outside the job's cgroup, if there is one (it then moves itself in: `keeper/spawn.rs`).
    Outside,
}

/// Makes the command's process in the job's cgroup (`CLONE_INTO_CGROUP`) as this process's child: returns `Ok` in
/// it, the errno in this process if it could not be made; this process goes on in `keeper` (never returns) with `plan`,
/// `folder_fd` and the group helper (see [`Kept`]). Where
/// `clone3` is refused (see [`refused`]) the legacy `clone` makes it, outside the cgroup ([`Made::Outside`]).
///
/// On x86-64 the child shares this process's memory and this process sleeps until it execs or exits
/// (`CLONE_VM | CLONE_VFORK`, as `posix_spawn` does): no copy of the address space is made, and none is torn down at
/// the command's `exec`. The child returns on this stack, into std's code, so this process goes on on a stack of its
/// own. Elsewhere the child is a copy (as a fork).
#[cfg(target_arch = "x86_64")]
pub(crate) fn make_command<P: Copy>(
    plan: &P,
    folder_fd: RawFd,
    _page_size: usize,
    forked: Forked,
    keeper: Keeper<P>,
) -> Result<Made, i32> {
    /// x86-64's page size (always 4 KiB).
    const PAGE: usize = 4096;
    /// The keeper's stack from the command's start on (it runs `keep`, and `remove_below`'s one frame of about 4.5
    /// KiB), above the group helper's stack and one guard page; mapped lazily, never unmapped (the keeper ends in
    /// `_exit`).
    const STACK: usize = 256 * 1024;
    const HELPER_STACK: usize = 4 * PAGE;
    /// What the keeper's new stack holds at its top.
    struct Frame<P> {
        kept: Kept<P>,
        forked: Forked,
        keeper: Keeper<P>,
    }
    extern "C" fn entry<P>(pid: libc::c_long, frame: *const Frame<P>) -> ! {
        // SAFETY: `frame` points to the copy at the top of the keeper's own stack (below), written before the clone,
        // which lives as long as the keeper (never unmapped: the shed keeps the pages near this stack) and which no
        // one else writes (the command's process, while it shared our memory, ran on the old stack and had no pointer
        // to this one).
        let frame = unsafe { &*frame };
        (frame.keeper)(
            &frame.kept,
            libc::pid_t::try_from(pid).unwrap_or(0),
            InKeeper(frame.forked),
        )
    }
    // The mapping's addresses cannot overflow (it lies inside the address space).
    let base = map_stack(STACK + HELPER_STACK + PAGE, PAGE)?;
    // The helper runs beside us (no CLONE_VFORK: it makes its group while the command starts), on a stack of its own.
    let group = make_group(base + PAGE + HELPER_STACK)?;
    // Its group made from here at once (a parent may set a child's group until the child execs, and the helper never
    // does): the keeper joins it without waiting for the helper to run. Whichever call comes second does nothing.
    let _ = super::signal_safe::setpgid(group, group);
    let end = base + STACK + HELPER_STACK + PAGE;
    // The context at the top, the stack below it (16-byte aligned, as the ABI wants at a call).
    let at = (end - std::mem::size_of::<Frame<P>>()) & !15;
    let copy = at as *mut Frame<P>;
    // SAFETY: `copy` is inside the mapping (a `Frame`, a plan of a few KiB, is far smaller than the keeper's stack),
    // aligned (16 bytes, as much as a plan of integers and byte arrays needs), and nothing else uses that memory (the
    // helper runs at its bottom, below `STACK`).
    unsafe {
        copy.write(Frame {
            kept: Kept {
                plan: *plan,
                folder_fd,
                group,
            },
            forked,
            keeper,
        });
    }
    let top = at & !15;
    let shared_vm = (libc::CLONE_VM | libc::CLONE_VFORK) as u64;
    let args = CloneArgs {
        flags: into_cgroup(folder_fd) | shared_vm,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: u64::try_from(folder_fd).unwrap_or(0),
        ..CloneArgs::default()
    };
    let keeper: extern "C" fn(libc::c_long, *const Frame<P>) -> ! = entry::<P>;
    // SAFETY: `args` is a valid clone_args of the size passed, which lives across the call; `top`, `copy` and `keeper`
    // are the keeper's stack, its context there and its entry, as `clone_here` wants.
    let mut ret = unsafe {
        clone_here(
            SYS_CLONE3,
            (&raw const args) as u64,
            std::mem::size_of::<CloneArgs>() as u64,
            top,
            copy,
            keeper,
        )
    };
    let legacy = refused(ret);
    if legacy {
        // `clone3` refused (a container's seccomp profile): the legacy `clone`, with the same sharing and no new
        // stack (`newsp` 0: the child goes on with this stack pointer, as after `vfork`).
        // SAFETY: clone's flags (its exit signal in the low byte) and a null stack, as `clone_here` wants; the same
        // stack, context and entry as above (the refused call made no process).
        ret = unsafe {
            clone_here(
                libc::SYS_clone,
                shared_vm | libc::SIGCHLD as u64,
                0,
                top,
                copy,
                keeper,
            )
        };
    }
    if ret < 0 {
        let _ = waitpid(group, 0);
        // Unused once the helper, which ran on it, exited (reaped just now), as no process was made to run on the rest.
        unmap_stack(base, STACK + HELPER_STACK + PAGE);
        return Err(i32::try_from(ret.unsigned_abs()).unwrap_or(libc::EIO));
    }
    // The command's process (the keeper went on in `entry`).
    Ok(if legacy { Made::Outside } else { Made::Inside })
}

/// Makes the command's process with system call `nr` (`clone3` or `clone`) and arguments `first` and `second` (the
/// rest 0), without a stack of its own: returns the call's result (a negative errno) in this process if it failed,
/// 0 in the child, which shares this stack; this process, once the child exists, switches to the stack below `top`
/// (where `ctx`, the keeper's context, is) and runs `keeper` with the child's pid, never to come back.
///
/// # Safety
///
/// The child must share this memory and this process must sleep until it execs or exits (`CLONE_VM | CLONE_VFORK`);
/// the call must give the child no stack of its own (`clone3` with `stack` 0, or `clone` with `newsp` 0); `top` must
/// be the 16-byte aligned top of a stack that nothing else uses, `ctx` a context that lives as long as the keeper.
#[cfg(target_arch = "x86_64")]
unsafe fn clone_here<T>(
    nr: libc::c_long,
    first: u64,
    second: u64,
    top: usize,
    ctx: *const T,
    keeper: extern "C" fn(libc::c_long, *const T) -> !,
) -> libc::c_long {
    let ret: libc::c_long;
    // SAFETY: the caller's contract. The whole argument, since no other comment holds it:
    //
    // - Two paths leave the `syscall`. The child (rax 0) and a failed call (rax negative, no process made) jump to
    //   `2:` and leave the block normally, with `ret` in rax, every other register as it was but rcx and r11 (which
    //   `syscall` clobbers, declared), and rsp unchanged: to the compiler, an ordinary end of the block. Only this
    //   process, once the child exists (rax positive), takes the other path, which never leaves the block: it loads
    //   rsp with `top`, calls `keeper` (pid in rdi, `ctx` in rsi, as the C ABI wants) and never returns (`ud2` traps
    //   if it did). `top` is 16-byte aligned, so the call is made with rsp aligned as the ABI wants.
    // - The child shares this memory (CLONE_VM) and has no stack of its own: it goes on with this stack pointer,
    //   returns 0 through the end of this function, `make_command`, `start` and the hook into std, and runs std's
    //   code on this stack until its `exec`. This process sleeps meanwhile (CLONE_VFORK: the kernel wakes it only
    //   when the child has exec'd or exited, and so left this address space), so the two never run on this memory at
    //   the same time. Once awake, this process never comes back to this stack, whose frames the child overwrote: it
    //   runs on the stack at `top` and reads only `ctx` (written there before the call, out of the child's reach),
    //   the shared page and its own new frames. The child also shares this thread's TLS (no CLONE_SETTLS: its errno
    //   is ours), which this process reads only after its own calls, once the child is gone.
    // - The compiler's view: the block is not `noreturn` (the child and an error do return), and it may use the stack
    //   (no `nostack`: no red zone is live across it). The registers the child returns with are those the compiler
    //   expects after the block, since the kernel copies them all to the child.
    // - Shadow stacks (x86-64 CET, Linux 6.6+, where the program enabled them): with CLONE_VFORK the kernel gives the
    //   child no shadow stack of its own; it uses this one, as its normal stack. The child's returns pop entries this
    //   thread pushed before the call (they match its frames), and its later calls push entries over the ones of
    //   frames this process had below `make_command`. This process never returns through those frames: it calls
    //   `keeper` (whose entry it pushes at its own shadow stack pointer, below which the child left nothing it still
    //   needs) and never returns from it, so every return it makes pops an entry it pushed itself. glibc's `vfork`
    //   goes the other way for its child (it leaves the shared shadow stack mismatched, so that a child that returns
    //   past `vfork`'s caller faults) because there the parent does return through the shared frames; here the
    //   parent does not, and the child must. The shed keeps clear of a shadow stack altogether (`keeper/shed.rs`).
    // - A caller's `pre_exec` hooks after the keeper's run in the child, in this memory, while this process sleeps:
    //   std's child side after a hook is the same code a fork's child runs, and a hook's writes land in memory this
    //   process never reads again (std's frames and heap; this process reads only `ctx`, out of their reach, the
    //   shared page, and its new frames). The child has its own signal handlers, descriptors, working directory and
    //   limits (no CLONE_SIGHAND, CLONE_FILES, CLONE_FS), and no `rseq` area (the kernel clears it for a CLONE_VM
    //   child). What a hook could still do to this process is what it could do to any memory: unmap or overwrite the
    //   keeper's stack mapping, which no sound hook knows of. A hook that blocks holds this process asleep, as it
    //   would hold std's spawn without a keeper. A hook that starts a process is the case `SPAWN_GRACE` is for.
    // - The calls' arguments: `clone3` reads two (rdi: its clone_args, rsi: their size) and ignores the rest; `clone`
    //   reads five (rdi: flags, rsi: the new stack, rdx and r10: where to write the thread ids, r8: the TLS), all 0
    //   but the flags, so it writes no id and sets no TLS; neither is given a stack for the child (the contract).
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jle 2f",
            "mov rsp, {top}",
            "mov rdi, rax",
            "mov rsi, {ctx}",
            "call {keeper}",
            "ud2",
            "2:",
            top = in(reg) top,
            ctx = in(reg) ctx,
            keeper = in(reg) keeper,
            inlateout("rax") nr => ret,
            in("rdi") first,
            in("rsi") second,
            in("rdx") 0u64,
            in("r10") 0u64,
            in("r8") 0u64,
            out("rcx") _,
            out("r11") _,
        );
    }
    ret
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn make_command<P: Copy>(
    plan: &P,
    folder_fd: RawFd,
    page_size: usize,
    forked: Forked,
    keeper: Keeper<P>,
) -> Result<Made, i32> {
    /// The group helper's stack: a few pages of its own above a guard page (see [`make_group`]); mapped lazily,
    /// unmapped only on a failed spawn (the keeper ends in `_exit`).
    const HELPER_STACK: usize = 16 * 1024;
    let page = page_size.max(1);
    let len = HELPER_STACK.next_multiple_of(page).saturating_add(page);
    let base = map_stack(len, page)?;
    // The helper runs beside us (no CLONE_VFORK), on its own stack: as on x86-64.
    let group = match make_group(base.saturating_add(len)) {
        Ok(group) => group,
        Err(e) => {
            unmap_stack(base, len);
            return Err(e);
        }
    };
    let _ = super::signal_safe::setpgid(group, group);
    let kept = Kept {
        plan: *plan,
        folder_fd,
        group,
    };
    // Without CLONE_VM: the child is a copy of this process, as after a fork.
    let mut pid = clone3_fork(
        into_cgroup(folder_fd),
        libc::SIGCHLD as u64,
        u64::try_from(folder_fd).unwrap_or(0),
    );
    let legacy = matches!(pid, Err(e) if refused(-libc::c_long::from(e)));
    if legacy {
        // `clone3` refused (a container's seccomp profile): the legacy `clone`, as a fork.
        pid = clone_fork(libc::SIGCHLD as libc::c_ulong);
    }
    match pid {
        Ok(0) if legacy => Ok(Made::Outside),
        Ok(0) => Ok(Made::Inside),
        Err(e) => {
            let _ = waitpid(group, 0);
            unmap_stack(base, len);
            Err(e)
        }
        Ok(pid) => keeper(
            &kept,
            libc::pid_t::try_from(pid).unwrap_or(0),
            InKeeper(forked),
        ),
    }
}

/// Whether `ret`, a raw `clone3`'s result, says that the call itself was refused (`ENOSYS`: the answer of container
/// runtimes' default seccomp profiles, and of kernels before 5.3; `EPERM`: that of older runtimes' profiles): the
/// command's process is then made with the legacy `clone`, and, in cgroup mode, moves itself into the folder.
fn refused(ret: libc::c_long) -> bool {
    ret == -libc::c_long::from(libc::ENOSYS) || ret == -libc::c_long::from(libc::EPERM)
}

/// `clone3`'s flag for the command's process: `CLONE_INTO_CGROUP` with a folder (cgroup mode), none without.
fn into_cgroup(folder_fd: RawFd) -> u64 {
    if folder_fd >= 0 {
        CLONE_INTO_CGROUP
    } else {
        0
    }
}

/// The group helper's whole life: a group of its own (0), or -1 (its exit status then 255; cannot happen: a child
/// that is no session leader may always make its own group).
extern "C" fn own_group(_: *mut libc::c_void) -> libc::c_int {
    super::signal_safe::setpgid(0, 0).map_or(-1, |()| 0)
}

/// A group for this process (the leader of the command's group-to-be) to move to once the command exists: a child
/// made with `CLONE_VM` (no copy of the address space) makes a new group and exits; its zombie, until reaped,
/// keeps the group (its id is the child's pid). It runs beside this process on the stack below `top`: the top of a
/// mapping of [`map_stack`]'s, whose lowest page is a guard, which outlives it.
fn make_group(top: usize) -> Result<libc::pid_t, i32> {
    // SAFETY: the helper shares this process's memory (CLONE_VM) and, since it is given no TLS of its own (no
    // CLONE_SETTLS), its thread pointer, hence its errno; the kernel gives it no `rseq` area (cleared for a CLONE_VM
    // child). It runs `own_group` on the stack below `top` (libc's wrapper aligns it; the function reads no
    // argument), which it uses alone: the bottom of a fresh mapping (`map_stack`), above its guard page, so that a
    // deeper stack than ours faults in the helper instead of writing over this process's memory (on x86-64 the
    // keeper's own stack is above it in the same mapping). The mapping is never unmapped while the helper may run
    // (the keeper sheds memory only once it reaped the helper; a failed spawn unmaps it only after reaping it).
    // `own_group` makes one system call (no allocation, no lock), and writes nothing but its stack and, if its
    // `setpgid` failed, the shared errno; it cannot fail (a process that is no session leader may always make a group
    // of its own), so no errno that this process, or the command's process that shares its memory on x86-64, reads
    // is ever the helper's. The wrapper is async-signal-safe, and ends the helper with the function's return value
    // as its exit status (an `exit` system call: no `atexit`, nothing of this process's state).
    let child = unsafe {
        libc::clone(
            own_group,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::SIGCHLD,
            std::ptr::null_mut(),
        )
    };
    if child < 0 {
        return Err(errno());
    }
    Ok(child)
}

/// A stack, `len` bytes (a fresh private anonymous mapping), its lowest page (`page` bytes) made a guard: its base.
fn map_stack(len: usize, page: usize) -> Result<usize, i32> {
    // SAFETY: a fresh private anonymous mapping at an address of the kernel's choice (no existing memory is
    // touched), then the first page of that mapping made inaccessible (nothing refers to it yet).
    unsafe {
        let base = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return Err(errno());
        }
        libc::mprotect(base, page, libc::PROT_NONE);
        Ok(base as usize)
    }
}

/// Unmaps a stack of [`map_stack`]'s, `len` bytes at `base`, once no process runs on it.
fn unmap_stack(base: usize, len: usize) {
    // SAFETY: the mapping `map_stack` made, of that length; the callers unmap it only once no process runs on it (the
    // helper reaped, no command's process made) and nothing refers to it any more.
    unsafe { libc::munmap(base as *mut libc::c_void, len) };
}

/// A child made as `fork` makes one (`clone3` without `CLONE_VM`, with `args`' flags and exit signal; no stack,
/// no thread ids, no TLS): its pid here, 0 in it (a copy of this address space, returning from this call).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn clone3_fork(flags: u64, exit_signal: u64, cgroup: u64) -> Result<libc::c_long, i32> {
    let args = CloneArgs {
        flags: flags
            & !(libc::CLONE_VM as u64 | libc::CLONE_VFORK as u64 | libc::CLONE_THREAD as u64),
        exit_signal,
        cgroup,
        ..CloneArgs::default()
    };
    // SAFETY: clone3 without CLONE_VM (nor CLONE_THREAD): the child gets a copy of this address space and returns
    // 0 here, like fork; `args` is a valid clone_args of the size passed, with no stack, no thread-id pointer
    // and no TLS, and lives across the call.
    check(unsafe {
        libc::syscall(
            SYS_CLONE3,
            &raw const args,
            std::mem::size_of::<CloneArgs>(),
        )
    })
}

/// The same with the legacy `clone` (its exit signal in the flags' low byte; no new stack, no thread ids, no TLS:
/// the other arguments, whose order differs between architectures, are all 0).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn clone_fork(exit_signal: libc::c_ulong) -> Result<libc::c_long, i32> {
    // SAFETY: as above: a copy of this address space, 0 returned in the child; nothing is written through the
    // null pointers.
    check(unsafe { libc::syscall(libc::SYS_clone, exit_signal & 0xff, 0, 0, 0, 0) })
}
