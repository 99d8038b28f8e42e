//! The keeper's watch and verdict: its loop from the command's start until the command exited and the verdict (or
//! the supervisor's death) ends it: the helper reaped, the shed when due, a stop or an exit of the command reported
//! to the supervisor as its own would be, a signal to the keeper passed on to the command, the verdict carried out.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use super::end;
use super::page::{VERDICT_KEEP, VERDICT_KILL};
use super::plan::Plan;
use super::shed;
use crate::sys::clone::InKeeper;
use crate::sys::signal_safe as calls;

/// `siginfo_t::si_code` of a signal the kernel sent (a terminal's, say): not in libc 0.2.139.
const SI_KERNEL: libc::c_int = 0x80;

/// How long a keeper whose command exited before the spawn returned, leaving something running, waits for the spawn's
/// return (checked every millisecond) before it takes the command for one that failed its `exec` (std then waits for
/// the keeper) and ends the job. A spawn returns within microseconds of the command's `exec` unless this process is
/// held up (a loaded machine, a stop): only then does a job kept with `set_kill_leftovers(false)` lose what its
/// command left.
const SPAWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The keeper's life (see `job/doc/keeper.md`, "Watch" and "Verdict"); `helper` is the group helper until it was
/// reaped (0 then: the keeper then sheds the caller's memory, see `shed.rs`). Never returns.
pub(super) fn keep(
    plan: &Plan,
    folder_fd: RawFd,
    command: libc::pid_t,
    mut helper: libc::pid_t,
    me: &InKeeper,
) -> ! {
    let page = plan.page.get(me.forked());
    let all = calls::full_set();
    // The group the command started in has this id.
    let group = calls::getpid();
    let mut told = false;
    let mut shed = false;
    let started = calls::monotonic();
    // Since when the command, exited and not alone, waits for the spawn's return (see SPAWN_GRACE).
    let mut awaiting_spawn: Option<std::time::Duration> = None;
    loop {
        if helper > 0 && end::reaped(helper) {
            helper = 0;
        }
        // Not before the helper is gone (it ran on the stack below the keeper's, in the same mapping), and not for a
        // command that ends within SHED_AFTER_MS (the common short job, which then pays nothing for it).
        if helper == 0
            && !shed
            && calls::monotonic().saturating_sub(started).as_millis() >= shed::AFTER_MS.into()
        {
            shed = true;
            shed::shed(plan, me);
        }
        if calls::getppid() != plan.supervisor {
            end::give_grace(plan, me, folder_fd, group, command);
            end::end_job(plan, me, folder_fd, group, end::REMOVE_TRIES_ALONE);
            end::end_adopted(folder_fd, command, end::REMOVE_TRIES_ALONE);
            end::leave(plan, me, end::reap(command));
        }
        if page.hold.load(Ordering::Acquire) == 0 {
            end::reap_adopted(folder_fd, command);
        }
        if let Some(signal) = end::stopped(command) {
            // The supervisor hears of the stop as it would of its child's own: a report and a SIGCHLD.
            page.stopped.store(signal.unsigned_abs(), Ordering::Release);
            // The parent is the supervisor (checked above).
            let _ = calls::kill(plan.supervisor, libc::SIGCHLD);
            continue;
        }
        if end::exited(command) {
            match page.verdict.load(Ordering::Acquire) {
                VERDICT_KILL => {
                    end::end_job(plan, me, folder_fd, group, end::REMOVE_TRIES);
                    end::end_adopted(folder_fd, command, end::REMOVE_TRIES);
                    end::leave(plan, me, end::reap(command));
                }
                VERDICT_KEEP => {
                    // The job's use until the verdict: its folder stays, with what the command left.
                    end::record_cgroup_use(plan, me, folder_fd);
                    end::leave(plan, me, end::reap(command));
                }
                // Nothing of the job runs any more (the common end, and a command that failed its `exec`, for which
                // std waits for us): ending it and keeping it are the same, so no verdict is waited for. This process
                // then sees the keeper's own exit, one wake-up instead of a round trip through the shared page.
                _ if end::job_empty(folder_fd, command) => {
                    end::end_job(plan, me, folder_fd, group, end::REMOVE_TRIES);
                    end::leave(plan, me, end::reap(command));
                }
                // Before the spawn returned, a command that left something running ran its program (a failed `exec`
                // leaves nothing), so it waits for the verdict like any other, once the spawn returned. In case it
                // failed its `exec` all the same (a `pre_exec` hook of the caller's, run after ours, started a
                // process), std waits for us: past SPAWN_GRACE without the spawn's return, the job is ended as for
                // VERDICT_KILL. The command's name, or anything else it does, never makes the keeper leave without
                // ending the job.
                _ if page.spawned.load(Ordering::Acquire) == 0 => {
                    let since = *awaiting_spawn.get_or_insert_with(calls::monotonic);
                    if calls::monotonic().saturating_sub(since) >= SPAWN_GRACE {
                        end::end_job(plan, me, folder_fd, group, end::REMOVE_TRIES);
                        end::end_adopted(folder_fd, command, end::REMOVE_TRIES);
                        end::leave(plan, me, end::reap(command));
                    }
                }
                _ if !told => {
                    // The supervisor hears of the exit as it would without us: a SIGCHLD (a supervisor that takes
                    // its signals, such as the tool, wakes on it).
                    told = true;
                    awaiting_spawn = None;
                    page.exited.store(1, Ordering::Release);
                    // The parent is the supervisor (checked above).
                    let _ = calls::kill(plan.supervisor, libc::SIGCHLD);
                }
                _ => {}
            }
        }
        // Until the memory is shed, at most until it is due.
        let due = libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::c_long::from(shed::AFTER_MS) * 1_000_000,
        };
        // Every millisecond while the spawn's return is awaited (this process sends no signal then).
        let soon = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        let timeout = if awaiting_spawn.is_some() {
            Some(&soon)
        } else if shed {
            None
        } else {
            Some(&due)
        };
        // Every signal is blocked: one pending is taken, or waited for.
        let (signal, code) = calls::sigtimedwait(&all, timeout).unwrap_or((0, 0));
        // A signal sent to the keeper's pid (the job's id) is meant for the command, as it was for a leader without
        // a keeper: passed on, but for the keeper's own wake-ups, and but for one the kernel sent (`SI_KERNEL`): a
        // terminal's signal to the command's group, which the keeper is in for a moment after the command's exec
        // (on x86-64 it leaves the group only once it runs again), reached the command itself.
        let from_kernel = signal > 0 && code == SI_KERNEL;
        if signal > 0 && signal != libc::SIGCHLD && signal != libc::SIGCONT && !from_kernel {
            // The command is our unreaped child (its pid is pinned).
            let _ = calls::kill(command, signal);
        }
    }
}
