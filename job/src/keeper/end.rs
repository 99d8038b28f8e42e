//! The keeper's end of the job: `SIGKILL` to the command's group, the cgroup's kill and the folder's removal (cgroup
//! mode), the adopted orphans killed and reaped (reaper mode), the death plan when the supervisor died, and the
//! keeper's own exit as the command's; and the reports of the keeper's children these rest on.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use super::page::{USED_CGROUP_CPU, USED_CHILDREN, USED_MEMORY_PEAK, USED_PIDS_PEAK};
use super::plan::Plan;
use crate::sys::clone::InKeeper;
use crate::sys::signal_safe::{self as calls, DeathPlan};

/// How many times (about a millisecond apart) a keeper tries to remove the emptied cgroup folder: about a second
/// when the supervisor lives (its own end of the job tries again), about 30 s when it died (no one else will).
pub(super) const REMOVE_TRIES: u32 = 1000;
pub(super) const REMOVE_TRIES_ALONE: u32 = 30_000;

/// Kills the job: the command's group, then the cgroup; waits (`tries` milliseconds at most) for it to empty and
/// removes the folder (a folder that holds sub-cgroups of the job's, or a process that does not die, is left to the
/// supervisor's own end of the job, or behind).
/// Before each try, what the job used is read into the shared page (`record_cgroup_use`): the read before the removal
/// that succeeds, of a folder that holds no process, is the whole job's.
pub(super) fn end_job(
    plan: &Plan,
    me: &InKeeper,
    folder_fd: RawFd,
    group: libc::pid_t,
    tries: u32,
) {
    // The group's id is our own pid (> 1), pinned while we live.
    let _ = calls::kill(-group, libc::SIGKILL);
    let Some(folder) = plan.folder().filter(|_| folder_fd >= 0) else {
        return;
    };
    // It succeeds on an empty folder without sub-cgroups (a command that left nothing: the common end), which then
    // needs no kill.
    record_cgroup_use(plan, me, folder_fd);
    if calls::rmdir(folder).is_ok() {
        return;
    }
    let _ = calls::write_control_at(folder_fd, c"cgroup.kill", b"1");
    for _ in 0..tries {
        record_cgroup_use(plan, me, folder_fd);
        if calls::rmdir(folder) != Err(libc::EBUSY) {
            return;
        }
        if !calls::populated(folder_fd) {
            // Empty, but it holds sub-cgroups of the job's: those go first, deepest first.
            calls::remove_below(folder_fd);
            if calls::rmdir(folder) != Err(libc::EBUSY) {
                return;
            }
        }
        calls::nap_for(1);
    }
}

/// Cgroup mode: what the job used so far, from its folder (open as `folder_fd`) into the shared page: `cpu.stat`'s
/// user and system time (every cgroup v2 folder has it), and `memory.peak` and `pids.peak` where their controllers
/// are on for the folder. A file that cannot be read leaves what the page held.
pub(super) fn record_cgroup_use(plan: &Plan, me: &InKeeper, folder_fd: RawFd) {
    if folder_fd < 0 {
        return;
    }
    let shared = plan.page.get(me.forked());
    let mut buf = [0u8; 1024];
    let mut used = 0;
    if let Some(text) = calls::read_start(folder_fd, c"cpu.stat", &mut buf) {
        if let (Some(user), Some(system)) =
            (field(text, b"user_usec "), field(text, b"system_usec "))
        {
            shared.user_us.store(user, Ordering::Relaxed);
            shared.system_us.store(system, Ordering::Relaxed);
            used |= USED_CGROUP_CPU;
        }
    }
    for (name, slot, bit) in [
        (c"memory.peak", &shared.memory, USED_MEMORY_PEAK),
        (c"pids.peak", &shared.processes, USED_PIDS_PEAK),
    ] {
        if let Some(n) = calls::read_start(folder_fd, name, &mut buf).and_then(number) {
            slot.store(n, Ordering::Relaxed);
            used |= bit;
        }
    }
    shared.used.fetch_or(used, Ordering::Release);
}

/// The number that follows `key` at the start of a line of `text`.
fn field(text: &[u8], key: &[u8]) -> Option<u64> {
    text.split(|&b| b == b'\n')
        .find_map(|line| line.strip_prefix(key))
        .and_then(number)
}

/// The decimal number at the start of `text` (`None` without a digit there); saturates rather than overflows.
fn number(text: &[u8]) -> Option<u64> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit());
    let n = digits.clone().fold(0u64, |n, &b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    });
    (digits.count() > 0).then_some(n)
}

/// The supervisor died: its death plan (`Shared::death_signal`), if it set one, before the job is ended. Sends the
/// plan's signal to the command's group `group` and to the command by its pid (as the supervisor's own timeout would,
/// GNU's way: then `SIGCONT` unless the signal stops), then waits up to the plan's grace for the job to end: the
/// command exited and nothing else of the job is left (`job_empty`; the adopted orphans that exit meanwhile are
/// reaped). The caller then ends whatever is left with `SIGKILL`.
pub(super) fn give_grace(
    plan: &Plan,
    me: &InKeeper,
    folder_fd: RawFd,
    group: libc::pid_t,
    command: libc::pid_t,
) {
    let shared = plan.page.get(me.forked());
    let plan = DeathPlan::from_parts(
        shared.death_signal.load(Ordering::Acquire).into(),
        shared.death_grace_ms.load(Ordering::Acquire).into(),
    );
    // The group's id is our own pid (> 1), pinned while we live, and the command (> 1) is our unreaped child, pinned
    // too.
    plan.give([-group, command], || {
        reap_adopted(folder_fd, command);
        exited(command) && job_empty(folder_fd, command)
    });
}

/// Reaper mode (no cgroup folder, `folder_fd` -1): reaps the orphans the keeper adopted that have exited, never the
/// command. `waitid(P_ALL, WNOWAIT)` names the first child that exited; once that is the command (a zombie until the
/// verdict), the keeper's children are listed instead and each but the command is reaped if it exited.
pub(super) fn reap_adopted(folder_fd: RawFd, command: libc::pid_t) {
    if folder_fd >= 0 {
        return;
    }
    loop {
        // P_ALL with WNOWAIT reaps nothing.
        let pid = calls::waitid(
            libc::P_ALL,
            0,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
        .map_or(0, |report| report.pid);
        if pid <= 0 {
            return;
        }
        if pid == command {
            for_each_child(|child| {
                if child != command {
                    let _ = calls::waitpid(child, libc::WNOHANG);
                }
            });
            return;
        }
        // An adopted orphan of ours that has exited, not the command.
        let _ = calls::waitpid(pid, libc::WNOHANG);
    }
}

/// Whether no process of the job but the command (exited) is alive: the cgroup says `populated 0`; in reaper mode
/// the keeper has no other child (its orphans that exited were reaped: an unreaped one counts). `false` when it
/// cannot tell.
pub(super) fn job_empty(folder_fd: RawFd, command: libc::pid_t) -> bool {
    if folder_fd >= 0 {
        return !calls::populated(folder_fd);
    }
    let mut others = 0;
    for_each_child(|child| others += usize::from(child != command)) && others == 0
}

/// Reaper mode: ends the rest of the job after its group (`end_job`): kills the command (our unreaped child: its pid
/// is pinned) and every other child of the keeper's, reaps those, and repeats with the orphans that brings until the
/// command, dead, is the only child left, for at most about `tries` milliseconds. A child of ours is pinned until we
/// reap it, so no pid names another process.
pub(super) fn end_adopted(folder_fd: RawFd, command: libc::pid_t, tries: u32) {
    if folder_fd >= 0 {
        return;
    }
    // The command is our unreaped child.
    let _ = calls::kill(command, libc::SIGKILL);
    for _ in 0..tries {
        // Asked before the children are listed: once the command is a zombie, the kernel has already handed its
        // children to us, so the list below holds them (listed first, a dying command's children could be missed).
        let command_dead = exited(command);
        let mut others = 0;
        for_each_child(|child| {
            if child != command {
                // At most one per child of ours: no overflow.
                others += 1;
                // A child of ours (pinned until reaped).
                let _ = calls::kill(child, libc::SIGKILL);
                let _ = calls::waitpid(child, libc::WNOHANG);
            }
        });
        // Done once the command has died too: until then its children are still its own, and are re-parented to us
        // only when it dies.
        if others == 0 && command_dead {
            return;
        }
        calls::nap_for(1);
    }
}

/// Calls `f` with the pid of each child of this (single-threaded) process, alive or exited and not reaped, as
/// `/proc/thread-self/children` lists them (read on a fixed buffer, a number split between two reads put together);
/// `false` if the list could not be read to its end.
fn for_each_child(mut f: impl FnMut(libc::pid_t)) -> bool {
    let Ok(fd) = calls::open(
        c"/proc/thread-self/children",
        libc::O_RDONLY | libc::O_CLOEXEC,
    ) else {
        return false;
    };
    let mut buf = [0u8; 1024];
    let mut pid: libc::pid_t = 0;
    let read_all = loop {
        let Ok(n) = calls::read(fd, &mut buf) else {
            break false;
        };
        if n == 0 {
            break true;
        }
        // A read returns at most the buffer's length (`get` all the same); `b - b'0'` is a digit's value.
        for &b in buf.get(..n).unwrap_or_default() {
            if b.is_ascii_digit() {
                pid = pid
                    .saturating_mul(10)
                    .saturating_add(libc::pid_t::from(b - b'0'));
            } else {
                if pid > 1 {
                    f(pid);
                }
                pid = 0;
            }
        }
    };
    if pid > 1 {
        f(pid);
    }
    calls::close(fd);
    read_all
}

/// Exits as the command did (`exit_as`), after telling this process that the keeper leaves on its own.
pub(super) fn leave(plan: &Plan, me: &InKeeper, report: Option<calls::Report>) -> ! {
    let shared = plan.page.get(me.forked());
    // What the children it reaped used (all of the job in reaper mode): the CPU time where the cgroup's was not
    // read, the memory (the largest child's) where `memory.peak` was not.
    let (user, system, max_rss) = calls::children_usage();
    let written = shared.used.load(Ordering::Relaxed);
    if written & USED_CGROUP_CPU == 0 {
        shared.user_us.store(user, Ordering::Relaxed);
        shared.system_us.store(system, Ordering::Relaxed);
    }
    if written & USED_MEMORY_PEAK == 0 {
        shared
            .memory
            .store(max_rss.saturating_mul(1024), Ordering::Relaxed);
    }
    shared.used.fetch_or(USED_CHILDREN, Ordering::Release);
    shared.leaving.store(1, Ordering::Release);
    exit_as(report)
}

/// Exits as the command did: its exit code, or death by its signal (no core dump). Without a report (cannot
/// happen: the command is our child), status 1.
pub(super) fn exit_as(report: Option<calls::Report>) -> ! {
    if let Some(report) = report {
        let status = report.status;
        if report.code == libc::CLD_EXITED {
            calls::exit(status);
        }
        let _ = calls::prctl(libc::PR_SET_DUMPABLE, 0);
        calls::no_core();
        calls::default_action(status);
        calls::set_mask(libc::SIG_UNBLOCK, &calls::only(status), None);
        let _ = calls::kill(calls::getpid(), status);
    }
    calls::exit(1)
}

/// Whether our child `pid` had exited and is now reaped (without waiting), here or already (`ECHILD`: reaper mode
/// reaps the children that exited).
pub(super) fn reaped(pid: libc::pid_t) -> bool {
    match calls::waitpid(pid, libc::WNOHANG) {
        Ok(got) => got == pid,
        Err(e) => e == libc::ECHILD,
    }
}

/// `waitid` on our child `pid` with `flags` (plus `WNOHANG`): the report, if there is one.
fn wait_report(pid: libc::pid_t, flags: libc::c_int) -> Option<calls::Report> {
    calls::waitid(libc::P_PID, pid.unsigned_abs(), flags | libc::WNOHANG)
        .ok()
        .filter(|report| report.pid != 0)
}

/// The signal that stopped the command, if it stopped since the last report (which this consumes).
pub(super) fn stopped(command: libc::pid_t) -> Option<libc::c_int> {
    wait_report(command, libc::WSTOPPED).map(|report| report.status)
}

/// Whether the command exited (not reaped).
pub(super) fn exited(command: libc::pid_t) -> bool {
    wait_report(command, libc::WEXITED | libc::WNOWAIT).is_some()
}

/// Reaps the command (waiting for its exit).
pub(super) fn reap(command: libc::pid_t) -> Option<calls::Report> {
    loop {
        match calls::waitid(libc::P_PID, command.unsigned_abs(), libc::WEXITED) {
            Ok(report) => return Some(report),
            Err(libc::EINTR) => {}
            Err(_) => return None,
        }
    }
}
