//! The forked guard's `unsafe fn`, `die_with_parent_forked` (re-exported as `host::die_with_parent_forked`): the
//! caller's promise that a `fork` of this process is sound (its `# Safety`), passed on to `grouptimeout-job`.

use std::io;

use grouptimeout::GroupChild;

/// [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent) with a guard forked from this process (`fork(2)` without `exec`) instead of a
/// `/bin/sh` spawned through `posix_spawn`; what it guarantees, and how it ends, is the same.
///
/// In a small process, such as a command-line supervisor, a fork costs a fraction of a shell's start; from the
/// bench's 26.5 MiB process the two cost about the same (`BENCHMARKS.md`, row 8). `fork` copies this process's page
/// tables, so it costs more the more memory this process maps (milliseconds at hundreds of MiB), which is why the
/// library's default is the shell. The forked child calls only async-signal-safe functions, but libc's `fork` also
/// runs the `pthread_atfork` handlers of this process's libraries (see "Safety"). The child ignores every
/// catchable signal, only then joins the command's group, closes every
/// descriptor but its pipe (on Linux with `close_range`; elsewhere those below the `RLIMIT_NOFILE` soft limit, at
/// most 65,536), and waits. A job with a keeper (a cgroup of its own or its own reaper, see
/// [`spawn_contained`](grouptimeout_job::JobCommandExt::spawn_contained)) gets no forked guard: its keeper guards it. For a job
/// in a cgroup without a keeper (not made by this crate's spawns today) the guard also keeps the job's `cgroup.kill` open, leads a process group of its own instead of joining the command's
/// (see [`die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent)), and ends the cgroup as the shell guard does:
/// `cgroup.kill`, then the removal of the folder and of the sub-cgroups the job made in it, deepest first, once
/// they are empty (tried for about 10 s). Since a signal cannot disarm it before it joins its group, this returns right after the
/// fork, without waiting for the guard to run; if the group has no process left to join by then, the guard exits
/// quietly (there is nothing to guard).
///
/// # Its name
///
/// On Linux (and Android) the guard renames itself `group-guard` (`prctl(PR_SET_NAME)`, the first thing it does), so
/// that killing this program by its name (`pkill -x NAME`, `killall NAME`) does not kill the guard too, which then
/// kills the group as it should. Its command line (`/proc/PID/cmdline`) and executable stay this program's, so
/// `pkill -f` and `killall /path/to/program` still match it; so does any kill by name in the microseconds between the
/// fork and the rename. Elsewhere no async-signal-safe call renames a process: the guard keeps this program's name,
/// and a kill by name reaches it too (the shell guard of [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent) is named `sh`).
///
/// # Memory
///
/// The guard shares this process's memory copy-on-write for as long as the command runs: every page this process
/// writes after the fork is copied, and the guard keeps the old copy. Measured here: a process that filled a 512 MiB
/// heap, forked the guard and then rewrote the heap left the guard holding 512 MiB of private memory
/// (`Private_Dirty: 524328 kB` in `/proc/PID/smaps_rollup`), where the shell guard of the same process held 0.1 MiB;
/// the fork itself took 7.5-8.4 ms there, the shell guard 2.4-2.6 ms. Prefer the shell guard in a process of more
/// than a few tens of MiB, or one that keeps rewriting its memory; the fork pays off in a small one (such as the
/// `grouptimeout` tool, a few MiB).
///
/// # Safety
///
/// Either no other thread of this process runs during the call, or every `pthread_atfork` child handler registered
/// in this process (by any library it links; the C library's own are fine) is async-signal-safe. libc's `fork` runs
/// those handlers in the child, a copy of this process with one thread, taken in whatever state the other threads
/// left (a lock one of them held stays held for good there): a handler that takes such a lock, allocates, or calls
/// anything else not async-signal-safe is undefined behaviour there, as it is in any forked child that does not
/// `exec`. No check can tell what the libraries of a process registered, so the caller vouches for it. A program in
/// which no other thread runs at the call meets it whatever it links (the `grouptimeout` tool starts none, nor does
/// anything it links), and so does one that links no library registering such handlers (std, `libc` and this
/// workspace's crates register none).
/// [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent), whose guard is spawned (a
/// `posix_spawn` runs no such handler), has no such condition.
///
/// # Examples
///
/// ```
/// use grouptimeout::GroupCommandExt as _;
///
/// # fn main() -> std::io::Result<()> {
/// let mut child = std::process::Command::new("true").spawn_group()?;
/// // SAFETY: no other thread runs here (this program starts none).
/// unsafe { grouptimeout_cli::host::die_with_parent_forked(&mut child) }?;
/// assert!(child.wait()?.success());
/// # Ok(())
/// # }
/// ```
///
/// Without `unsafe`, where the caller says why the condition holds, the call is refused:
///
/// ```compile_fail,E0133
/// use grouptimeout::GroupCommandExt as _;
///
/// let mut child = std::process::Command::new("true").spawn_group().unwrap();
/// grouptimeout_cli::host::die_with_parent_forked(&mut child).unwrap();
/// ```
///
/// # Errors
///
/// As for [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent); `fork` can also fail for lack of memory or processes.
pub unsafe fn die_with_parent_forked(child: &mut GroupChild) -> io::Result<()> {
    // SAFETY: this function's own contract (`# Safety`) is the promise's.
    let sound = unsafe { grouptimeout_job::__private::ForkIsSound::promise() };
    grouptimeout_job::__private::die_with_parent_forked(child, sound)
}
