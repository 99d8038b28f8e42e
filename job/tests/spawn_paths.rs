//! What a contained spawn leaves of its caller, and how it fails, on the paths beside the usual one: the calling
//! thread's `PR_SET_KEEPCAPS` (the spawn sets it around a root `Command::uid` job's fork, and must leave it as it
//! was), and a keeper that dies before the command's process exists (killed by a seccomp filter on a call only the
//! keeper makes: the command never ran, so the mode is not had, and the next one is tried).
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;
#[path = "common/job.rs"]
mod job;

use std::io;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use grouptimeout::GroupChild;
use grouptimeout_job::{Contain, Containment, JobChildExt as _};

/// One test at a time: each checks what its own spawns left (the folders this process made).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// This thread's `PR_SET_KEEPCAPS`.
fn keepcaps() -> i32 {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_GET_KEEPCAPS, 0, 0, 0, 0) }
}

/// Sets this thread's `PR_SET_KEEPCAPS` to `on`.
fn set_keepcaps(on: bool) {
    // SAFETY: prctl with integer arguments.
    let set = unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, libc::c_ulong::from(on), 0, 0, 0) };
    assert_eq!(set, 0, "PR_SET_KEEPCAPS: {}", io::Error::last_os_error());
}

/// Waits for `child` (a job of `true`), at most 10 s.
fn finish(mut child: GroupChild) {
    let outcome = child
        .wait_timeout(Duration::from_secs(10))
        .expect("the job ends");
    assert!(
        !outcome.timed_out() && outcome.status().success(),
        "{outcome:?}"
    );
}

/// Runs `f` on a thread of its own (the flag is a thread's), and gives its result.
fn on_a_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    thread::spawn(f).join().expect("the test's thread")
}

/// A caller's `PR_SET_KEEPCAPS`, on or off, is as it was after contained spawns of every kept mode: the default
/// (a cgroup as root, else the reaper) and the reaper, which never needs the flag. The spawn used to clear it
/// (a `Restore` built and dropped at once), so that the caller's own later `setuid` lost its capabilities.
#[test]
fn a_spawn_leaves_the_callers_keepcaps_as_it_was() {
    let _one = one_at_a_time();
    for on in [true, false] {
        let got = on_a_thread(move || {
            set_keepcaps(on);
            let mut seen = Vec::new();
            for cgroup in [true, false] {
                let mut contain = Contain::new();
                contain.cgroup(cgroup);
                let child = contain
                    .spawn(&mut Command::new("true"))
                    .expect("spawn_contained");
                let mode = child.containment();
                finish(child);
                seen.push((mode, keepcaps()));
            }
            seen
        });
        for (mode, flag) in got {
            assert_eq!(
                flag,
                i32::from(on),
                "a {mode:?} spawn changed the calling thread's PR_SET_KEEPCAPS from {on}"
            );
        }
    }
}

/// As root, a `Command::uid` job spawned from a thread that has `PR_SET_KEEPCAPS` on gets its cgroup (its keeper keeps
/// its capabilities across std's user switch, as the spawn would have arranged), and the flag stays on. It used to be
/// cleared before the fork, so that the keeper lost `CAP_DAC_OVERRIDE` and the job fell back to the reaper, saying
/// that the keeper could not keep the capability.
#[test]
fn a_root_uid_job_from_a_thread_with_keepcaps_gets_its_cgroup() {
    let test = "a_root_uid_job_from_a_thread_with_keepcaps_gets_its_cgroup";
    let _one = one_at_a_time();
    if !common::is_root() {
        common::skipped(test, "runs as root only (Command::uid to another user)");
        return;
    }
    if job::cgroup_or_skip(test).is_none() {
        return;
    }
    let (mode, why, flag) = on_a_thread(|| {
        set_keepcaps(true);
        let child = Contain::new()
            .spawn(Command::new("true").uid(65534).gid(65534))
            .expect("spawn_contained");
        let got = (
            child.containment(),
            child.fallback_reason().map(str::to_owned),
        );
        finish(child);
        (got.0, got.1, keepcaps())
    });
    assert_eq!(
        (mode, why.as_deref()),
        (Containment::Cgroup, None),
        "a root Command::uid job from a thread with PR_SET_KEEPCAPS on"
    );
    assert_eq!(flag, 1, "the thread's PR_SET_KEEPCAPS was cleared");
}

/// `SECCOMP_RET_KILL_PROCESS`, `SECCOMP_RET_ALLOW`.
const KILL_PROCESS: u32 = 0x8000_0000;
const ALLOW: u32 = 0x7fff_0000;

/// Installs, on the calling thread (in a `pre_exec` hook: the process std forked, the keeper-to-be), a seccomp filter
/// that kills the process at system call `nr` (with `first` as its first argument, if given) and allows every other
/// call (any call made through another architecture's convention too). Async-signal-safe: system calls on a filter
/// built on the stack. Core dumps off first (a process killed by `SIGSYS` dumps core by default).
fn kill_at(nr: libc::c_long, first: Option<u32>) -> io::Result<()> {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JA: u16 = 0x05; // BPF_JMP | BPF_JA
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    compile_error!("kill_at knows the audit architecture of x86-64 and aarch64 only");
    let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let nr = u32::try_from(nr).unwrap_or(u32::MAX);
    // seccomp_data: `nr` at offset 0, `arch` at 4, the first argument's low 32 bits at 16 (little-endian). Without
    // `first`, its test is an always-taken jump to the kill.
    let test_first = match first {
        Some(first) => [insn(LD_W_ABS, 0, 0, 16), insn(JEQ_K, 0, 1, first)],
        None => [insn(JA, 0, 0, 0), insn(JA, 0, 0, 0)],
    };
    let mut filter = [
        insn(LD_W_ABS, 0, 0, 4),
        insn(JEQ_K, 0, 5, ARCH),
        insn(LD_W_ABS, 0, 0, 0),
        insn(JEQ_K, 0, 3, nr),
        test_first[0],
        test_first[1],
        insn(RET_K, 0, 0, KILL_PROCESS),
        insn(RET_K, 0, 0, ALLOW),
    ];
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).unwrap_or(0),
        filter: filter.as_mut_ptr(),
    };
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit and prctl with integer arguments, or with pointers to `no_core` and `program` (and its
    // filter), which live across the calls; async-signal-safe system calls.
    unsafe {
        if libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core) != 0
            || (libc::geteuid() != 0 && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &raw const program,
            ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `true`, under a filter that kills at system call `nr` (see [`kill_at`]).
fn true_killed_at(nr: libc::c_long, first: Option<libc::c_int>) -> Command {
    let first = first.map(libc::c_int::unsigned_abs);
    let mut command = Command::new("true");
    // SAFETY: kill_at is async-signal-safe and allocates nothing.
    unsafe { command.pre_exec(move || kill_at(nr, first)) };
    command
}

/// `true`, under a filter that kills at `prctl(option, …)`.
fn true_killed_at_prctl(option: libc::c_int) -> Command {
    true_killed_at(libc::SYS_prctl, Some(option))
}

/// A keeper killed before the command's process exists (here by a seccomp filter, at the `PR_SET_CHILD_SUBREAPER`
/// that only a reaper keeper makes) is a mode not had: the command never ran, so the spawn falls back (to lineage),
/// says why (the signal named), and with `require(Reaper)` fails. It used to return `Ok` with the keeper's death as
/// the job's outcome ("killed by signal 31"), the command never run.
#[test]
fn a_reaper_keeper_killed_before_the_command_is_a_mode_not_had() {
    let _one = one_at_a_time();
    let mut reaper = Contain::new();
    reaper.cgroup(false);
    let child = reaper
        .spawn(&mut true_killed_at_prctl(libc::PR_SET_CHILD_SUBREAPER))
        .expect("the spawn falls back");
    let mode = child.containment();
    let why = child.fallback_reason().unwrap_or_default().to_owned();
    let mut child = child;
    let status = child
        .wait_timeout(Duration::from_secs(10))
        .expect("the job ends");
    assert_eq!(
        (mode, status.status().signal(), status.status().code()),
        (Containment::Lineage, None, Some(0)),
        "a keeper killed before the command: got {mode:?} ({why}), {status:?}"
    );
    assert!(
        why.starts_with("reaper: ") && why.contains("signal 31"),
        "the reason names the mode and the keeper's signal: {why}"
    );
    reaper.require(Containment::Reaper);
    let e = reaper
        .spawn(&mut true_killed_at_prctl(libc::PR_SET_CHILD_SUBREAPER))
        .map(finish)
        .expect_err("require(Reaper) with a keeper that is killed");
    assert!(
        e.to_string().contains("signal 31") && e.raw_os_error().is_none(),
        "{e}"
    );
}

/// The same in cgroup mode (root: the filter kills the keeper at its first call, `PR_SET_PDEATHSIG`, before it made
/// the folder): the reaper, whose keeper the filter kills too, and then lineage; no folder left.
#[test]
fn a_cgroup_keeper_killed_before_the_command_is_a_mode_not_had() {
    let _one = one_at_a_time();
    let test = "a_cgroup_keeper_killed_before_the_command_is_a_mode_not_had";
    let Some(mut cgroup) = job::cgroup_or_skip(test) else {
        return;
    };
    let me = std::process::id();
    let child = Contain::new()
        .spawn(&mut true_killed_at_prctl(libc::PR_SET_PDEATHSIG))
        .expect("the spawn falls back");
    let mode = child.containment();
    let why = child.fallback_reason().unwrap_or_default().to_owned();
    finish(child);
    assert_eq!(mode, Containment::Lineage, "{why}");
    assert!(
        why.starts_with("cgroup: ")
            && why.contains("; reaper: ")
            && why.matches("signal 31").count() == 2,
        "the reason names both modes and the keepers' signal: {why}"
    );
    let e = cgroup
        .require(Containment::Cgroup)
        .spawn(&mut true_killed_at_prctl(libc::PR_SET_PDEATHSIG))
        .map(finish)
        .expect_err("require(Cgroup) with a keeper that is killed");
    assert!(e.to_string().contains("signal 31"), "{e}");
    assert_eq!(
        common::job_folders_made_by(me),
        Vec::<std::path::PathBuf>::new(),
        "a killed keeper's job left its folder"
    );
}

/// A cgroup keeper killed after it made the job's folder (at the `clone3` that makes the command's process): the
/// folder is removed, and the job falls back as above (the reaper's keeper is killed at its `clone3` too).
#[test]
fn a_cgroup_keeper_killed_after_its_folder_leaves_no_folder() {
    let _one = one_at_a_time();
    let test = "a_cgroup_keeper_killed_after_its_folder_leaves_no_folder";
    if job::cgroup_or_skip(test).is_none() {
        return;
    }
    let me = std::process::id();
    let child = Contain::new()
        .spawn(&mut true_killed_at(435, None))
        .expect("the spawn falls back");
    let mode = child.containment();
    let why = child.fallback_reason().unwrap_or_default().to_owned();
    finish(child);
    assert_eq!(mode, Containment::Lineage, "{why}");
    assert!(
        why.starts_with("cgroup: ") && why.matches("signal 31").count() == 2,
        "{why}"
    );
    assert_eq!(
        common::job_folders_made_by(me),
        Vec::<std::path::PathBuf>::new(),
        "a killed keeper's job left its folder"
    );
}
