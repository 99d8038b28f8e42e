//! The keeper of a contained job (Linux): the process std forks for the spawn (`M`, std's `Child`) stays between
//! this process and the command, and the command is its child (`L`), made inside the `pre_exec` hook.
//!
//! - `M` blocks every signal, asks for `SIGCONT` when this process (the thread that forked it) dies
//!   (`PR_SET_PDEATHSIG`), and makes `L` with `clone3`: with `CLONE_INTO_CGROUP` the command is born inside the job's
//!   cgroup, so it never migrates (a migration waits for an RCU grace period: 5-19 ms measured). `L` asks for `SIGKILL`
//!   when `M` dies (a wait sleeps until `L` exits) and returns from the hook with the caller's signal mask, and std
//!   applies the rest of the `Command` and execs it. On x86-64 `L` shares `M`'s memory until it execs, while `M` sleeps
//!   (`CLONE_VM | CLONE_VFORK`, as `posix_spawn` does: no copy of the address space is made, and none is torn down at
//!   the exec); `M` then goes on on a stack of its own, since `L` returned on `M`'s. Elsewhere `L` is a copy, as after
//!   a fork.
//! - Where `clone3` is refused (`ENOSYS`, as container runtimes' default seccomp profiles answer, or `EPERM`, as older
//!   ones did), `M` makes `L` with the legacy `clone` instead (the same sharing on x86-64; a fork-like copy
//!   elsewhere): one failed system call more per spawn, no state kept. Reaper mode needs nothing else. In cgroup mode
//!   `L` is then born outside the folder (no `CLONE_INTO_CGROUP`), so it moves itself in (`0` written to the folder's
//!   `cgroup.procs`, through the folder's descriptor, which is closed at its `exec`) before it returns from the hook:
//!   it runs no instruction of the command outside the job. That move is a migration: measured on Linux 6.18, a spawn
//!   and wait of `/bin/true` took 13.4 ms instead of 2.9 ms (medians, spawns 250 ms apart), 2.30 instead of 2.18 ms back
//!   to back (a move soon after another waits for no grace period; still 9 ms at the 90th percentile). If the move
//!   fails, `L` fails the spawn as a refused `clone3` does (the command never runs), and `M` removes the folder.
//! - `L` starts in `M`'s process group `G` (whose id is `M`'s pid, the `GroupChild`'s id); `M` then leaves `G` for a
//!   group of its own (made by a helper child before `L`, so that nothing can fail once `L` exists), so that the
//!   crate's group signals (and a terminal's) reach the command and not `M`.
//! - `M` closes every descriptor but the cgroup folder's (std's error pipe and the command's stdio included, so
//!   that the spawn returns when `L` execs), then waits for signals: `L` stopped (reported to this process, so
//!   that a supervisor sees the stop), `L` exited (if nothing else of the job runs, it ends the job at once; else
//!   it waits for this process's verdict: kill the job, or keep it), or this process died (`getppid()` changed: it
//!   follows the death plan this process left in the shared page, if any: a signal to the command's group, then up
//!   to a grace for the job to end; then it ends the job and removes the folder). Then it reaps `L` and exits as `L`
//!   did: the same exit code, or the same signal (core dumps off). Before the spawn returned (the `spawned` flag of
//!   the shared page), `L` may have failed its `exec`, and std then waits for `M`: `M` tells the two apart by what `L`
//!   left, never by `L`'s name or anything else `L` controls. An `L` that left nothing running is ended at once (a
//!   failed `exec` leaves nothing); one that left something ran its program, so `M` waits for the spawn's return (at
//!   most a second) and then for the verdict, and ends the job if the spawn has not returned by then. A stop of `L` is
//!   reported through the shared page and a `SIGCHLD` (the keeper never stops itself).
//! - Reaper mode (no cgroup folder): `M` makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`) before it makes
//!   `L` (without `CLONE_INTO_CGROUP`), so every orphan of the job is re-parented to it. While `L` runs it reaps the
//!   adopted orphans that exit (never `L` before the verdict); to end the job it kills `G`, then `L` and its other
//!   children (pinned until it reaps them: no pid names another process), reaps them and repeats with the orphans
//!   that brings until only `L` is left (bounded). It reads `/proc/thread-self/children` on a fixed buffer.
//! - Once `L` has run for 10 ms, `M` unmaps most of the memory its fork copied from this process, if that is 8 MiB
//!   or more (see `shed.rs` for what it keeps, and when it keeps everything): it needs none of it, and while it holds it, every page this
//!   process writes is copied.
//!
//! Everything `M` and `L` run before `exec` is async-signal-safe: raw system calls on memory copied by the fork (or
//! shared with this process through one anonymous page; `M`'s and `L`'s own, shared between them on x86-64, which
//! `M` only reads and writes once `L` is gone from it), no allocation, no lock. This process talks to `M` only
//! through that page and `SIGCONT`.
//!
//! The rooms: `page.rs` (what the caller sees: the shared page, the hook, a kept group's signal), `plan.rs` (what the
//! keeper needs, made before the fork), `spawn.rs` (steps 1-9 of `job/doc/keeper.md`: the hook's `start`, the
//! command's process, the keeper's first steps), `watch.rs` (the loop and the verdict), `end.rs` (the job's end, the
//! death plan, the keeper's exit) and `shed.rs` (the unmapping of the supervisor's memory). Imports go one way:
//! `spawn` uses `watch`, `end`, `plan` and `page`; `watch` uses `end`, `shed`, `plan` and `page`; `end` and `shed` use
//! `plan`; all of them `crate::sys`, which uses none of them.
//!
//! Where the unchecked calls are: nowhere here. Every system call `M` and `L` make goes through a safe wrapper of
//! `sys::signal_safe` (one `SAFETY` argument each, shared with the forked guard). The rest is special and argued in
//! `sys/` where it stands: the `pre_exec` hook itself (`sys::page::arm`: it never returns in `M`), the clone of `L`
//! and its return path (`sys::clone::make_command`, `clone_here`), the group helper that shares `M`'s memory and errno
//! (`make_group`), the shared page (`sys::page`), and the unmapping (`sys::shed::unmap`: its risk is bounded, since
//! `M` is a process of its own: a mistake kills `M`, and through `PR_SET_PDEATHSIG` the command, never this process's
//! memory; the one page shared with this process is never unmapped). Before the fork: `sys::shed::loaded` (what the
//! loader says, for the shed). What only the forked child, or only `M`, may do asks for a proof that only `sys` makes
//! there (`Forked`, `InKeeper`).
//!
//! No panic after the fork: a panic in `M` or `L` would unwind out of the hook into std's code and then the
//! caller's, running on in a copy of this process, instead of the job's orderly end; so none is reachable there. The
//! code after the fork indexes a slice only where the check right before keeps the range inside it (`shed.rs`'s
//! `copy_within`, after `parsed <= held`; the copy of a sub-folder's name in `sys/signal_safe/folder.rs`, whose length
//! was found inside the record and checked below the name's buffer); elsewhere `get`, `split`, `strip_suffix` and
//! iterators. It unwraps nothing (`unwrap_or`, `ok()?`), and its arithmetic cannot overflow:
//! sums of a buffer's offsets and lengths (at most a few KiB), counts of children, a page size that is never 0
//! (`Plan::page_size`) with saturating products, times in `Duration` with saturating sums, and `calls::monotonic`,
//! whose nanoseconds are clamped below a second so that `Duration::new` has no carry; the rest says why where it
//! stands (`close_all_but`, `nap_for`, `failed`).

mod end;
mod page;
mod plan;
mod shed;
mod spawn;
mod watch;

pub(crate) use page::KeeperFailure;
pub(crate) use spawn::{arm_keeper, with_kept_caps};
