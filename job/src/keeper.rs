//! The kept spawn (cgroup and reaper modes, Linux; `job/doc/keeper.md`, "Spawn"): the keeper program, embedded by
//! the build script and written once per process into a sealed memory file (its probe too), and the spawn itself.
//! The calling thread makes a child `C` that shares its memory and sleeps it until `C` execs (`sys::clone_vfork`;
//! in cgroup mode `C` makes the job's folder and, where it can, a successor born in it that goes on as `C`); `C` makes the command's group and leaves it, spawns the command with
//! std's own `Command::spawn` (every setting of the `Command`, the caller's `pre_exec` hooks included, applies to the
//! command's process alone), sends its standard streams and a pidfd of it back over the job's channel, and execs
//! the program, which keeps the job (`job/keeper/`). The caller's handle on the keeper is `contain/keeper.rs`.

use std::ffi::{c_int, CString};
use std::fs::OpenOptions;
use std::io::{self, Write as _};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use std::sync::OnceLock;

use crate::contain::keeper::Keeper;
use crate::protocol::{Keep, Start, KEEPER_NAME};
use crate::sys;

/// The keeper program, as the build script made it (empty where it could not: see `MISSING`).
static PROGRAM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gt-keeper"));
/// Why the build has no program (empty where it has one).
const MISSING: &str = env!("GROUPTIMEOUT_KEEPER_MISSING");

/// The program's memory file, made and probed by the first kept spawn of this process and kept open for its life
/// (the crate's one piece of process-wide state, made only by a contained spawn); or why it cannot be run here.
static EXECUTABLE: OnceLock<Result<OwnedFd, String>> = OnceLock::new();

/// The keeper program, ready to exec: its memory file, or why there is none (the build had none, the memory file
/// cannot be made or executed here: `vm.memfd_noexec` = 2, a seccomp rule on `memfd_create` or `execveat`).
pub(crate) fn program() -> Result<BorrowedFd<'static>, String> {
    // The memory file holds a descriptor for good: made only where a kept spawn has room for its own (the file, the
    // channel's two, the folder's), and not kept from a process that has too few.
    if EXECUTABLE.get().is_none() {
        crate::contain::room_for(4).map_err(|e| {
            format!("too few descriptors for a kept spawn (4 free at once, one of them kept): {e}")
        })?;
    }
    let made = EXECUTABLE.get_or_init(|| {
        if PROGRAM.is_empty() {
            return Err(format!(
                "this build of grouptimeout-job has no keeper program: {MISSING}"
            ));
        }
        let file = sys::program_file(PROGRAM).map_err(|e| {
            format!("the keeper program's memory file cannot be made (memfd_create): {e}")
        })?;
        probe(file.as_fd())?;
        Ok(file)
    });
    made.as_ref().map(AsFd::as_fd).map_err(Clone::clone)
}

/// Runs the program once with `--probe` the way a kept spawn will run it (`C`, then `execveat`), and waits for it:
/// `Err` with why unless it exited 0.
fn probe(program: BorrowedFd<'_>) -> Result<(), String> {
    let args = arguments(&Start::Probe);
    let mut failed = None;
    let mask = sys::block_signals();
    let made = sys::clone_vfork(None, &mut || {
        failed = Some(sys::exec_program(program, None, &mut sys::Argv::new(&args)));
        127
    });
    mask.set();
    let pid = made.map_err(|e| format!("the keeper program's probe cannot start (clone): {e}"))?;
    let status = sys::wait_status(pid);
    match (failed, status) {
        (Some(e), _) => Err(format!(
            "the keeper program cannot be executed here (execveat of its memory file): {e}"
        )),
        (None, Ok(status)) if status.success() => Ok(()),
        (None, Ok(status)) => Err(format!("the keeper program's probe failed here: {status}")),
        (None, Err(e)) => Err(format!(
            "the keeper program's probe could not be waited for: {e}"
        )),
    }
}

/// The program's `argv`.
fn arguments(start: &Start) -> Vec<CString> {
    std::iter::once(KEEPER_NAME.into())
        .chain(start.to_args())
        .filter_map(|arg| CString::new(arg.as_bytes()).ok())
        .collect()
}

/// Starts the program as the guard of group `leader` (whose leader the caller holds unreaped), reading `pipe`: a
/// child that shares this process's memory until it execs (as a kept spawn's `C`), joins the group with every signal
/// blocked (so that none but `SIGKILL` can end it once it is in, the exec keeping the mask), and execs the program.
/// Its pid, once it exec'd (armed).
pub(crate) fn spawn_guard(program: BorrowedFd<'_>, leader: u32, pipe: &OwnedFd) -> io::Result<u32> {
    let group = sys::checked_pid(leader)?;
    // Made before the child joins the group: from then on it only makes system calls (a signal to the group must
    // never find it in the middle of an allocation of this process's).
    let args = arguments(&Start::Guard {
        pipe: pipe.as_raw_fd(),
        leader,
    });
    let mut pointers = sys::Argv::new(&args);
    let mut failed = None;
    let mask = sys::block_signals();
    let made = sys::clone_vfork(None, &mut || {
        failed = Some(match sys::join_group(group) {
            Ok(()) => sys::exec_program(program, Some(pipe.as_raw_fd()), &mut pointers),
            Err(e) => e,
        });
        127
    });
    mask.set();
    let pid = made?;
    if let Some(e) = failed {
        let _ = sys::wait_status(pid);
        return Err(e);
    }
    Ok(pid)
}

/// What a kept spawn gave.
pub(crate) enum Spawned {
    /// The command runs, kept: the keeper's pid (the `GroupChild`'s id), the command's standard streams, a pidfd of
    /// the command for the wait (`None`: none could be had), and the caller's handle on the keeper.
    Kept {
        keeper: u32,
        stdio: (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>),
        watch: Option<OwnedFd>,
        handle: Keeper,
    },
    /// The mode cannot be had, and why: nothing of the command ran (its process was never made).
    NotHad(io::Error),
    /// std's spawn failed (the command's own error: its program not found, say), or the command was started and
    /// then killed because its keeper could not be: an error of the spawn, no fallback (the command must never run
    /// twice).
    Failed(io::Error),
}

/// How far `C` got.
enum Stage {
    /// It never reported (it died before: the caller's `clone` says how).
    Nothing,
    /// A step before the command's spawn failed: the mode is not had.
    Refused(io::Error),
    /// std's spawn of the command failed.
    SpawnFailed(io::Error),
    /// The command runs: its pid; `C` goes on to exec the program.
    Spawned(u32),
    /// The command was started, but the keeper could not be: it was killed and reaped.
    Lost(io::Error),
}

/// Spawns `command` kept: in the cgroup `folder` (which the spawning child makes; the keeper moves to `own`, this
/// process's cgroup, to kill it), or, without one, under the keeper as the job's reaper.
pub(crate) fn spawn(
    command: &mut Command,
    program: BorrowedFd<'_>,
    cgroup: Option<(&Path, &Path)>,
) -> Spawned {
    let (ours, theirs) = match sys::socket_pair() {
        Ok(pair) => pair,
        Err(e) => return Spawned::NotHad(e),
    };
    let supervisor = std::process::id();
    let mut stage = Stage::Nothing;
    let mut successor = None;
    let mask = sys::block_signals();
    let made = sys::clone_vfork(None, &mut || {
        let mut start = Spawning {
            command: &mut *command,
            stage: &mut stage,
            mask: &mask,
            program,
            channel: theirs.as_fd(),
            cgroup,
            supervisor,
        };
        match cgroup {
            Some((folder, _)) => in_folder(&mut start, folder, &mut successor),
            None => start.command_and_keeper(),
        }
    });
    mask.set();
    drop(theirs);
    let pid = match made {
        Ok(pid) => pid,
        Err(e) => return Spawned::NotHad(e),
    };
    // In cgroup mode `C` made its successor in the folder (this process's child too), and exited.
    let pid = match successor {
        Some(successor) => {
            let _ = sys::wait_status(pid);
            successor
        }
        None => pid,
    };
    let end = |why: Option<&str>, e: io::Error| {
        sys::reap_child(pid);
        match why {
            Some(what) => io::Error::new(e.kind(), format!("{what}: {e}")),
            None => e,
        }
    };
    match stage {
        Stage::Spawned(command) => received(pid, command, ours),
        Stage::Refused(e) => Spawned::NotHad(end(None, e)),
        Stage::SpawnFailed(e) => Spawned::Failed(end(None, e)),
        Stage::Lost(e) => Spawned::Failed(end(
            Some(
                "the command was started, but its keeper could not be (so the command was killed)",
            ),
            e,
        )),
        Stage::Nothing => {
            let status = sys::wait_status(pid);
            Spawned::NotHad(io::Error::other(format!(
                "the child that spawns the command died before it did: {}",
                status.map_or_else(|e| e.to_string(), |s| s.to_string())
            )))
        }
    }
}

/// What `C` is given: the spawn's whole state.
struct Spawning<'a> {
    command: &'a mut Command,
    stage: &'a mut Stage,
    mask: &'a sys::Mask,
    program: BorrowedFd<'a>,
    channel: BorrowedFd<'a>,
    cgroup: Option<(&'a Path, &'a Path)>,
    supervisor: u32,
}

/// In `C`, cgroup mode: makes the job's folder (here, not in the caller: a caller that dies now leaves `C` to go on
/// and start the keeper, which removes it), then on x86-64 its successor in it (`clone3` with `CLONE_INTO_CGROUP`,
/// a child of the caller: `CLONE_PARENT`), which goes on with the spawn (`successor`: its pid) while `C` exits; where
/// `clone3` is refused, `C` moves itself into the folder and goes on itself. Its exit status if it does not exec.
fn in_folder(start: &mut Spawning<'_>, folder: &Path, successor: &mut Option<u32>) -> c_int {
    let made = std::fs::create_dir(folder).and_then(|()| {
        if folder.join("cgroup.kill").exists() {
            return std::fs::File::open(folder);
        }
        let _ = std::fs::remove_dir(folder);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "cgroup v2 without cgroup.kill (Linux before 5.14)",
        ))
    });
    let dir = match made {
        Ok(dir) => dir,
        Err(e) => return start.refused(e, "cannot make the job's cgroup"),
    };
    match sys::clone_vfork(Some(dir.as_fd()), &mut || start.command_and_keeper()) {
        Ok(pid) => {
            *successor = Some(pid);
            return 0;
        }
        Err(e) if !matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
            return start.refused(e, "cannot start a process in the job's cgroup");
        }
        Err(_) => {}
    }
    // Born outside the folder: into it before anything of the command exists (a migration, which waits for an RCU
    // grace period).
    let moved = OpenOptions::new()
        .write(true)
        .open(folder.join("cgroup.procs"))
        .and_then(|mut procs| procs.write_all(b"0"));
    if let Err(e) = moved {
        return start.refused(e, "cannot move into the job's cgroup");
    }
    start.command_and_keeper()
}

impl Spawning<'_> {
    /// The mode is not had: `what` failed, for `e`.
    fn refused(&mut self, e: io::Error, what: &str) -> c_int {
        *self.stage = Stage::Refused(sys::os_error_or(e, |e| format!("{what}: {e}")));
        127
    }

    /// What `C` (or, in cgroup mode, its successor) does from the subreaper on (see the module docs); its exit
    /// status if it does not exec the program.
    fn command_and_keeper(&mut self) -> c_int {
        // Every orphan of the job comes to the keeper, from the command's first instruction on (the flag survives the
        // `exec` of the program).
        if let Err(e) = sys::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) {
            return self.refused(e, "cannot become a child subreaper");
        }
        let holder = match sys::leave_own_group() {
            Ok(holder) => holder,
            Err(e) => return self.refused(e, "cannot make the command's process group"),
        };
        let (command, stage, mask, program, channel, cgroup, supervisor) = (
            &mut *self.command,
            &mut *self.stage,
            self.mask,
            self.program,
            self.channel,
            self.cgroup,
            self.supervisor,
        );
        let group = std::process::id();
        sys::quiet_handlers();
        mask.set();
        command.process_group(i32::try_from(group).unwrap_or(0));
        let spawned = match command.spawn() {
            // glibc's `posix_spawn` under a seccomp profile that refuses `clone3` with `EPERM` (older container
            // runtimes): a fork works there (the `Command` keeps taking that path).
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                sys::spawn_by_fork(command);
                command.spawn()
            }
            spawned => spawned,
        };
        let _ = sys::block_signals();
        sys::reap_child(holder);
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                *stage = Stage::SpawnFailed(e);
                return 127;
            }
        };
        let pid = child.id();
        if cgroup.is_none() && joined_pid_namespace(pid) {
            let _ = sys::kill(-i32::try_from(group).unwrap_or(0), libc::SIGKILL);
            let _ = sys::kill(i32::try_from(pid).unwrap_or(0), libc::SIGKILL);
            sys::reap_child(pid);
            *stage = Stage::Lost(io::Error::new(
            io::ErrorKind::Unsupported,
            "a `pre_exec` hook put the command's children in another, existing PID namespace (setns), whose \
             orphans go to its own init: the job's reaper cannot hold them (a cgroup can)",
        ));
            return 127;
        }
        // The command is this process's unreaped child: a pidfd opened now names it for good.
        #[cfg(not(grouptimeout_no_pidfd))]
        let pidfd = sys::pidfd_open(pid).ok();
        #[cfg(grouptimeout_no_pidfd)]
        let pidfd: Option<OwnedFd> = None;
        let stdio: [Option<OwnedFd>; 4] = [
            child.stdin.take().map(OwnedFd::from),
            child.stdout.take().map(OwnedFd::from),
            child.stderr.take().map(OwnedFd::from),
            pidfd,
        ];
        let present = stdio
            .iter()
            .enumerate()
            .fold(0u8, |bits, (i, fd)| bits | u8::from(fd.is_some()) << i);
        let fds: Vec<_> = stdio.iter().flatten().map(AsRawFd::as_raw_fd).collect();
        let mut kept = sys::send_with_fds(channel, &[present], &fds)
            .and_then(|()| sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGCONT as libc::c_ulong));
        if kept.is_ok() {
            *stage = Stage::Spawned(pid);
            let start = Start::Keep(Keep {
                channel: channel.as_raw_fd(),
                command: pid,
                supervisor,
                cgroup: cgroup.map(|(folder, own)| (folder.to_owned(), own.to_owned())),
            });
            let args = arguments(&start);
            kept = Err(sys::exec_program(
                program,
                Some(channel.as_raw_fd()),
                &mut sys::Argv::new(&args),
            ));
        }
        // The keeper could not be: the command (our child, pinned until reaped) and its group end here.
        let _ = sys::kill(-i32::try_from(group).unwrap_or(0), libc::SIGKILL);
        let _ = sys::kill(i32::try_from(pid).unwrap_or(0), libc::SIGKILL);
        sys::reap_child(pid);
        *stage = Stage::Lost(kept.err().unwrap_or_else(|| io::Error::other("lost")));
        127
    }
}

/// Whether the command `pid` (our child) has its children born in an existing PID namespace other than ours (a
/// `pre_exec` hook that called `setns`): its `pid_for_children` names a namespace that has an init already, which is
/// not a child of the command's. A namespace the command made (`unshare`) has none until its first child, which is
/// its init, and which dies with the job (a namespace dies with its init).
fn joined_pid_namespace(pid: u32) -> bool {
    let link = |path: String| std::fs::read_link(path).ok();
    let Some(theirs) = link(format!("/proc/{pid}/ns/pid_for_children")) else {
        return false;
    };
    if link("/proc/self/ns/pid".into()).is_none_or(|own| own == theirs) {
        return false;
    }
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    !children.split_whitespace().any(|child| {
        let status = std::fs::read_to_string(format!("/proc/{child}/status")).unwrap_or_default();
        link(format!("/proc/{child}/ns/pid")).as_ref() == Some(&theirs)
            && status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .is_some_and(|ids| ids.split_whitespace().last() == Some("1"))
    })
}

/// The command runs and `C` exec'd the keeper `keeper`: the command's streams and pidfd, from the channel.
fn received(keeper: u32, command: u32, channel: OwnedFd) -> Spawned {
    let mut present = [0u8; 1];
    let fds = sys::receive_with_fds(channel.as_fd(), &mut present)
        .map_or_else(|_| Vec::new(), |(_, fds)| fds);
    let mut fds = fds.into_iter();
    let mut next = |bit: u8| (present[0] & (1 << bit) != 0).then(|| fds.next()).flatten();
    let stdio = (
        next(0).map(ChildStdin::from),
        next(1).map(ChildStdout::from),
        next(2).map(ChildStderr::from),
    );
    let pidfd = next(3);
    // The keeper is our unreaped child: a pidfd opened now names it.
    let keeper_fd = pidfd.as_ref().and_then(|_| sys::pidfd_open(keeper).ok());
    // A wait sleeps until the command exits, or its keeper does (killed: the command would run on unwatched).
    let watch = match (&pidfd, &keeper_fd) {
        (Some(command), Some(keeper)) => {
            let pidfds = [
                (command.as_fd(), libc::EPOLLIN),
                (keeper.as_fd(), libc::EPOLLIN),
            ];
            sys::readable_when_any(&pidfds).ok()
        }
        _ => None,
    };
    Spawned::Kept {
        keeper,
        stdio,
        watch,
        handle: Keeper::new(channel, command, pidfd, keeper_fd),
    }
}
