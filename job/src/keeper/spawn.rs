//! The keeper's spawn (steps 1 to 9 of `job/doc/keeper.md`): the plan made before the fork, the hook that runs in
//! the forked child (`start`: signals, name, PID namespace, rights, the folder or the subreaper, the command's
//! process), the command's process before it returns from the hook, and the keeper's first steps once it exists
//! (`kept`: the command's pid to the page, every descriptor closed, the helper's group joined).

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;

use super::end;
use super::page::{KeeperHook, KEEPER_FAILED, WHY_PID_NAMESPACE, WHY_USER};
use super::plan::{path_bytes, Plan};
use super::watch;
use crate::sys;
use crate::sys::clone::{self, InKeeper, Kept};
use crate::sys::page::SharedPage;
use crate::sys::signal_safe::{self as calls, CapData, CapHeader, CAPABILITY_VERSION_3};

/// The keeper's name (`comm`), so that killing the supervisor by its name (`pkill -x`, `killall`) spares the keeper,
/// which then ends the job.
const KEEPER_NAME: &CStr = c"group-keeper";

/// Makes every spawn of `command`, while the returned hook lives, go through a keeper (see `keeper/mod.rs`). With a
/// `folder` (cgroup mode) the keeper makes that cgroup (it must not exist), starts the command in it, ends it with
/// `cgroup.kill` and removes it. Without one (reaper mode) the keeper makes itself a child subreaper
/// (`PR_SET_CHILD_SUBREAPER`) before it starts the command: every orphan of the job is re-parented to it, and it
/// ends the job by killing its children and reaping them until only the command is left. `page` is the page the
/// keeper shares with this process; it must outlive the spawn.
///
/// This adds a `pre_exec` hook, so std forks and execs instead of using `posix_spawn`.
pub(crate) fn arm_keeper(
    command: &mut Command,
    folder: Option<&Path>,
    page: &SharedPage,
) -> io::Result<KeeperHook> {
    let plan = Plan {
        supervisor: calls::getpid(),
        uid: calls::getuid(),
        folder: folder.map(path_bytes).transpose()?,
        page: page.for_keeper(),
        // Never 0 (`kept_apart` divides by it).
        page_size: calls::page_size().filter(|&size| size > 0).unwrap_or(4096),
        loaded: sys::shed::loaded(),
    };
    Ok(KeeperHook {
        _armed: sys::page::arm(command, plan, start),
    })
}

/// In the forked child (the keeper-to-be): returns `Ok` in the command's process, an error if the command's
/// process could not be made, and never in the keeper.
fn start(plan: &Plan, forked: sys::page::Forked) -> io::Result<()> {
    let all = calls::full_set();
    let mut old = calls::full_set();
    calls::set_mask(libc::SIG_SETMASK, &all, Some(&mut old));
    calls::prctl(libc::PR_SET_PDEATHSIG, libc::SIGCONT as libc::c_ulong).map_err(failed)?;
    // The supervisor died before the flag was set: no one waits.
    if calls::getppid() != plan.supervisor {
        return Err(failed(libc::ESRCH));
    }
    // Named before the command exists (the command's process inherits the name only until its `exec`), so that no
    // process of the command ever sees its parent under the supervisor's name, and a kill by the supervisor's name
    // never finds the keeper.
    calls::set_name(KEEPER_NAME);
    // A hook before ours unshared the PID namespace: the keeper's children would be born in it (its first, PID 1,
    // ending it at once). The keeper goes back to its own, and the command unshares it again for its own children,
    // as it would have without a keeper. A hook that joined an existing namespace (`setns`) is left as it is: the
    // command is born in it, which a cgroup holds, but whose orphans go to that namespace's init, not to a reaper.
    let renew_pid_namespace = match own_pid_namespace() {
        Ok(Namespace::Own) => false,
        Ok(Namespace::Renew) => true,
        Ok(Namespace::Joined) if plan.folder.is_some() => false,
        Ok(Namespace::Joined) => {
            plan.page
                .get(&forked)
                .why
                .store(WHY_PID_NAMESPACE, Ordering::Release);
            return Err(failed(libc::EINVAL));
        }
        Err(e) => {
            plan.page
                .get(&forked)
                .why
                .store(WHY_PID_NAMESPACE, Ordering::Release);
            return Err(failed(e));
        }
    };
    // std switched users before the hooks (`Command::uid`): the keeper keeps only what it needs of the rights this
    // process lent it across the switch (`with_kept_caps`): `CAP_DAC_OVERRIDE` to make the job's cgroup in this
    // process's and start the command in it; nothing in reaper mode.
    let switched = calls::getuid() != plan.uid;
    if switched {
        let keep = if plan.folder.is_some() {
            1 << CAP_DAC_OVERRIDE
        } else {
            0
        };
        if let Err(e) = limit_caps(keep) {
            plan.page
                .get(&forked)
                .why
                .store(WHY_USER, Ordering::Release);
            return Err(failed(e));
        }
    }
    let folder_fd = match plan.folder() {
        Some(folder) => make_folder(folder)?,
        None => become_reaper()?,
    };
    let keeper = calls::getpid();
    match clone::make_command(plan, folder_fd, plan.page_size, forked, kept) {
        Err(e) => {
            remove_folder(plan, folder_fd);
            return Err(failed(e));
        }
        // Made by the legacy `clone`: into the folder, or the command never runs (the folder is left to the keeper,
        // which removes it once this process exited).
        Ok(clone::Made::Outside) => join_folder(folder_fd).map_err(failed)?,
        Ok(clone::Made::Inside) => {}
    }
    // The command's process: none of the rights lent to the keeper, and its own children in a new PID namespace if
    // the caller's hook asked for one.
    if renew_pid_namespace {
        calls::unshare(libc::CLONE_NEWPID).map_err(failed)?;
    }
    if switched {
        limit_caps(0).map_err(failed)?;
        let _ = calls::prctl(libc::PR_SET_KEEPCAPS, 0);
    }
    // The command: it dies with its keeper (a job that killed its keeper, `kill -9 $PPID`, or an OOM kill), so that a
    // wait, which sleeps until the command exits, wakes and ends the job at once. Then the caller's mask back, and std
    // applies the rest of the `Command` and execs (an `exec` of a set-user-ID program clears the flag).
    // A parent in an outer PID namespace (a hook joined another one) reads as 0; one that died before the flag was set
    // has handed the command to another parent, which it sees.
    let orphaned = calls::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong).is_err()
        || ![0, keeper].contains(&calls::getppid());
    if orphaned {
        return Err(failed(libc::ESRCH));
    }
    calls::set_mask(libc::SIG_SETMASK, &old, None);
    Ok(())
}

/// The capability that lets the keeper of a command run as another user make the job's cgroup in this process's and
/// start the command in it (both need write access to root's `cgroup.procs`).
const CAP_DAC_OVERRIDE: u32 = 1;
/// `PR_CAP_AMBIENT` and its `PR_CAP_AMBIENT_CLEAR_ALL` (Linux 4.3).
const PR_CAP_AMBIENT: libc::c_int = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;

/// Limits this process's capabilities to `keep` (bits of the first 32), permitted and effective, none inheritable
/// or ambient; the errno (`EPERM`) if it does not have all of `keep` permitted.
fn limit_caps(keep: u32) -> Result<(), i32> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    calls::capget(&mut header, &mut data)?;
    let [first, _] = data;
    if first.permitted & keep != keep {
        return Err(libc::EPERM);
    }
    let data = [
        CapData {
            effective: keep,
            permitted: keep,
            inheritable: 0,
        },
        CapData::default(),
    ];
    // Lowering one's own capabilities is always allowed.
    calls::capset(&mut header, &data)?;
    let _ = calls::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL);
    Ok(())
}

/// Runs `f` (a spawn through the keeper hook) with this thread's `PR_SET_KEEPCAPS` on, where this process's real user
/// is root and `on` (not for a set-user-ID program, whose keeper would otherwise keep root's rights unnoticed: it
/// compares real user ids): a keeper that std switches to another user (`Command::uid`) then keeps the permitted capabilities it
/// needs to make the job's cgroup (it keeps only those, and the command none: see `start`). The flag is this
/// thread's, read by the kernel only when a user id changes. It is left exactly as the caller had it: set here only
/// where it was off (and cleared again before this returns), left on where this thread had it on already (the
/// keeper keeps its capabilities then too), and never touched otherwise (not `on`, not root). Where it cannot be set
/// (`SECBIT_KEEP_CAPS_LOCKED`) the keeper fails as another user, saying why.
pub(crate) fn with_kept_caps<T>(on: bool, f: impl FnOnce() -> T) -> T {
    /// Clears the flag that `with_kept_caps` set; made only once it was set (a `Restore` dropped clears the flag).
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = calls::prctl(libc::PR_SET_KEEPCAPS, 0);
        }
    }
    let set = on
        && calls::getuid() == 0
        && calls::prctl(libc::PR_GET_KEEPCAPS, 0) == Ok(0)
        && calls::prctl(libc::PR_SET_KEEPCAPS, 1) == Ok(0);
    // Not `set.then_some(Restore)`: that makes a `Restore` whatever `set` is, and drops it at once when `set` is false,
    // clearing a flag the caller had on.
    let _restore = if set { Some(Restore) } else { None };
    f()
}

/// Where this process's children would be born, as a hook before the keeper's left it.
enum Namespace {
    /// In this process's own PID namespace (or `/proc` does not tell: no `/proc`, Linux before 4.12).
    Own,
    /// In a new one that has no process yet (`unshare(CLONE_NEWPID)`): this process went back to its own (`setns`),
    /// and the command's process is to unshare it again.
    Renew,
    /// In an existing one (`setns` to another namespace), left as it is.
    Joined,
}

/// Where this process's children would be born (see [`Namespace`]), going back to its own PID namespace if a hook
/// unshared it; the errno if it cannot.
fn own_pid_namespace() -> Result<Namespace, i32> {
    let Ok(own) = calls::stat(c"/proc/self/ns/pid") else {
        return Ok(Namespace::Own);
    };
    match calls::stat(c"/proc/self/ns/pid_for_children") {
        Ok(children) if children != own => return Ok(Namespace::Joined),
        // The kernel names no namespace for children before its PID 1 exists: one made by `unshare` just now (the
        // own namespace always has one), where the link itself exists (Linux 4.12+).
        Err(libc::ENOENT) => {
            if !calls::lstat_ok(c"/proc/self/ns/pid_for_children") {
                return Ok(Namespace::Own);
            }
        }
        _ => return Ok(Namespace::Own),
    }
    let fd = calls::open(c"/proc/self/ns/pid", libc::O_RDONLY | libc::O_CLOEXEC)?;
    let back = calls::setns(fd, libc::CLONE_NEWPID);
    calls::close(fd);
    back.map(|()| Namespace::Renew)
}

/// The keeper, once the command's process `command` exists (it started in the keeper's group, `G`): leaves `G` for
/// the helper's group, closes every descriptor but the folder's, and keeps the job (which reaps the helper once it
/// exited). Never returns.
#[allow(
    clippy::needless_pass_by_value,
    reason = "the keeper's proof is handed over once, by `sys::clone`"
)]
fn kept(ctx: &Kept<Plan>, command: libc::pid_t, me: InKeeper) -> ! {
    let plan = &ctx.plan;
    plan.page
        .get(me.forked())
        .command
        .store(command.unsigned_abs(), Ordering::Release);
    // Out of `G` before the spawn can return (it returns once this process and the command's have closed their
    // copies of std's error pipe, below): a caller that kills the command's group right after the spawn (a job that
    // ends at once, or a `wait_timeout` at the deadline on a busy machine) must not kill its keeper with it, which
    // would take the job's orphans along (to init, unrecorded) in reaper mode.
    let mut joined = calls::setpgid(0, ctx.group);
    if joined.is_err() {
        // The helper's group was not made yet (our own `setpgid` of it failed): once the helper exited (its zombie
        // keeps the group until reaped), it has made it.
        let _ = calls::waitid(
            libc::P_PID,
            ctx.group.unsigned_abs(),
            libc::WEXITED | libc::WNOWAIT,
        );
        joined = calls::setpgid(0, ctx.group);
    }
    // Then every descriptor (std's error pipe among them): the spawn returns once the command's process, which has a
    // copy of each, has exec'd and closed its own.
    calls::close_all_but(ctx.folder_fd);
    // Reaped once it exited (now, or in `keep`): the keeper does not wait for it.
    let helper = if end::reaped(ctx.group) { 0 } else { ctx.group };
    if joined.is_err() {
        // Cannot happen (the helper's group is in our session, kept by the helper or its zombie until reaped). The
        // command must not run in a group with its keeper: it ends, and the keeper exits as it did (killed).
        end::end_job(plan, &me, ctx.folder_fd, calls::getpid(), end::REMOVE_TRIES);
        end::exit_as(end::reap(command));
    }
    watch::keep(plan, ctx.folder_fd, command, helper, &me)
}

/// In the command's process made by the legacy `clone` (no `CLONE_INTO_CGROUP`), before it returns from the hook: in
/// cgroup mode (a folder descriptor), it moves itself into the job's folder (`0` written to its `cgroup.procs`), so
/// that it runs no instruction of the command outside it. A migration: it waits for an RCU grace period (see the
/// module docs). The errno if that fails: the command must then never run (the spawn fails as for a refused
/// `clone3`, and the keeper, which sees it exit before the spawn returned, removes the folder).
fn join_folder(folder_fd: RawFd) -> Result<(), i32> {
    if folder_fd < 0 {
        return Ok(());
    }
    calls::write_control_at(folder_fd, c"cgroup.procs", b"0")
}

/// Reaper mode: makes this process (the keeper) a child subreaper; -1, the folder descriptor it has not.
fn become_reaper() -> io::Result<RawFd> {
    calls::prctl(libc::PR_SET_CHILD_SUBREAPER, 1).map_err(failed)?;
    Ok(-1)
}

/// Makes the job's cgroup folder and opens it (`O_DIRECTORY`); fails (and removes it) where it has no
/// `cgroup.kill` (before Linux 5.14).
fn make_folder(folder: &CStr) -> io::Result<RawFd> {
    calls::mkdir(folder, 0o755).map_err(failed)?;
    let opened = calls::open(folder, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .and_then(
            |fd| match calls::faccessat(fd, c"cgroup.kill", libc::F_OK) {
                Ok(()) => Ok(fd),
                Err(e) => {
                    calls::close(fd);
                    Err(e)
                }
            },
        );
    if opened.is_err() {
        let _ = calls::rmdir(folder);
    }
    opened.map_err(failed)
}

/// Closes `fd` (if one) and removes the (empty) folder (if one).
pub(super) fn remove_folder(plan: &Plan, fd: RawFd) {
    if fd >= 0 {
        calls::close(fd);
    }
    if let Some(folder) = plan.folder() {
        let _ = calls::rmdir(folder);
    }
}

/// The hook's error for `errno`: the keeper could not start the command (see [`KEEPER_FAILED`]).
fn failed(errno: i32) -> io::Error {
    // An errno is below 4096: no overflow (saturating all the same, so that nothing here can panic).
    io::Error::from_raw_os_error(KEEPER_FAILED.saturating_add(errno))
}
