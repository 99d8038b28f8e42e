//! The keeper as a program of its own (issues 43 and 42.4): what the caller puts around a spawn binds the command
//! alone, never the keeper. A `pre_exec` hook's seccomp filter, a preloaded sanitizer runtime, and the caller's own
//! refusal of the calls the program needs to run (then the keeper modes are not had, and say why). Death is read
//! from `/proc/PID/stat`; every wait is bounded.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;
#[path = "common/job.rs"]
mod job_common;

use common::*;
use job_common::*;

use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use grouptimeout::GroupChild;
use grouptimeout_job::{Contain, Containment, JobChildExt as _};

/// `SECCOMP_RET_KILL_PROCESS`, `SECCOMP_RET_ERRNO` (with `EPERM`), `SECCOMP_RET_ALLOW`.
const KILL_PROCESS: u32 = 0x8000_0000;
const REFUSE: u32 = 0x0005_0000 | 1;
const ALLOW: u32 = 0x7fff_0000;

/// The calls that a caller's hook refused the keeper when the keeper was the process std forked for the spawn (its
/// hooks ran there): `waitid` (it never saw the command exit), `kill` (a job that outlived its caller),
/// `rt_sigtimedwait` (a keeper that spun), `getrusage` (a keeper killed: the outcome "signal 31").
const CALLS: [(&str, libc::c_long); 4] = [
    ("waitid", libc::SYS_waitid),
    ("kill", libc::SYS_kill),
    ("rt_sigtimedwait", libc::SYS_rt_sigtimedwait),
    ("getrusage", libc::SYS_getrusage),
];

/// Installs, on the calling thread (a `pre_exec` hook: the command's process), a seccomp filter that answers system
/// call `nr` with `action` and allows every other call (and any made through another architecture's convention).
/// Async-signal-safe: system calls on a filter built on the stack. Core dumps off first.
fn filter(nr: libc::c_long, action: u32) -> io::Result<()> {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    compile_error!("filter knows the audit architecture of x86-64 and aarch64 only");
    let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let nr = u32::try_from(nr).unwrap_or(u32::MAX);
    // seccomp_data: `nr` at offset 0, `arch` at 4.
    let mut program = [
        insn(LD_W_ABS, 0, 0, 4),
        insn(JEQ_K, 0, 3, ARCH),
        insn(LD_W_ABS, 0, 0, 0),
        insn(JEQ_K, 0, 1, nr),
        insn(RET_K, 0, 0, action),
        insn(RET_K, 0, 0, ALLOW),
    ];
    let program = libc::sock_fprog {
        len: u16::try_from(program.len()).unwrap_or(0),
        filter: program.as_mut_ptr(),
    };
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit and prctl with integers, or with pointers to `no_core` and `program` (and its filter), which
    // live across the calls; async-signal-safe system calls.
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

/// How a test spawns in `mode`: `None` (skipped, said why) where the mode cannot be had here.
fn contain(test: &str, mode: Containment) -> Option<Contain> {
    if mode == Containment::Cgroup {
        return cgroup_or_skip(test);
    }
    let mut how = Contain::new();
    how.cgroup(false).require(Containment::Reaper);
    Some(how)
}

/// A job whose command runs under a filter (a `pre_exec` hook) that answers `nr` with `action`: a `setsid` escapee,
/// then `sleep 30`. The child and the escapee's pid.
fn filtered_job(
    how: &Contain,
    mode: Containment,
    nr: libc::c_long,
    action: u32,
) -> (GroupChild, u32) {
    let mut command = Command::new("sh");
    command
        .args(["-c", "setsid sleep 30 & echo $!; exec sleep 30"])
        .stdout(std::process::Stdio::piped());
    // SAFETY: `filter` is async-signal-safe and allocates nothing.
    unsafe { command.pre_exec(move || filter(nr, action)) };
    let mut child = how.spawn(&mut command).expect("spawn_contained");
    assert_eq!(child.containment(), mode);
    let escapee = read_pid(child.stdout.take().unwrap());
    (child, escapee)
}

/// Every call of [`CALLS`], refused with `EPERM` or killing the process.
fn every_filter() -> Vec<(String, libc::c_long, u32)> {
    CALLS
        .iter()
        .flat_map(|&(name, nr)| {
            [("refused", REFUSE), ("killing", KILL_PROCESS)]
                .map(|(how, action)| (format!("{name} {how}"), nr, action))
        })
        .collect()
}

/// Issue 42.4: a caller's `pre_exec` hook that installs a seccomp filter refusing (or killing at) a call the keeper
/// makes binds the command alone. Each job (the 8 filters at once, one thread each) ends at its deadline as any job
/// does (timed out, killed by `SIGKILL`; its `setsid` escapee dead, its folder gone), and a supervisor (this test
/// program, re-run) killed with `SIGKILL` takes all its jobs along. Before, the hook ran in the keeper: with `waitid`
/// refused the wait never returned, with `kill` refused a reaper job outlived its caller, with `getrusage` killing, the
/// outcome was "killed by signal 31".
fn hooks_bind_only_the_command(test: &str, mode: Containment) {
    let Some(how) = contain(test, mode) else {
        return;
    };
    if std::env::var_os("GROUPTIMEOUT_TEST_SUPERVISOR").is_some() {
        let jobs: Vec<(GroupChild, u32)> = every_filter()
            .into_iter()
            .map(|(_, nr, action)| filtered_job(&how, mode, nr, action))
            .collect();
        let pids = |f: fn(&(GroupChild, u32)) -> u32| {
            jobs.iter()
                .map(f)
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "escapee {} commands {}",
            pids(|j| j.1),
            pids(|j| j.0.command_id())
        );
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let (done, results) = mpsc::channel();
    for (what, nr, action) in every_filter() {
        let (done, how) = (done.clone(), how.clone());
        std::thread::spawn(move || {
            let (mut child, escapee) = filtered_job(&how, mode, nr, action);
            let _cleanup = KillOnDrop::new(vec![escapee]);
            let folder = job_folder(child.command_id()).filter(|_| mode == Containment::Cgroup);
            let outcome = child
                .wait_timeout(Duration::from_millis(300))
                .map(|o| o.to_string());
            let dead = survivors_after(Duration::from_secs(5), &[escapee]).is_empty();
            let removed = folder.is_none_or(|f| !f.exists());
            let _ = done.send((what, outcome, dead, removed));
        });
    }
    for _ in 0..every_filter().len() {
        let (what, outcome, dead, removed) = results
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{mode:?}: a wait did not return within a minute"));
        assert_eq!(
            outcome.as_deref().ok(),
            Some("timed out; killed by signal 9"),
            "{mode:?}, {what}: {outcome:?}"
        );
        assert!(dead, "{mode:?}, {what}: the escapee survived");
        assert!(removed, "{mode:?}, {what}: the job's folder was left");
    }
    let (mut supervisor, words) = run_as_supervisor(&exact(test, mode), &[]);
    let pids: Vec<u32> = words.iter().filter_map(|w| w.parse().ok()).collect();
    let _cleanup = KillOnDrop::new(pids.clone());
    assert_eq!(pids.len(), 2 * every_filter().len(), "{words:?}");
    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    assert_eq!(
        survivors_after(Duration::from_secs(10), &pids),
        [] as [u32; 0],
        "{mode:?}: a killed supervisor's jobs"
    );
    assert!(
        eventually(Duration::from_secs(10), || job_folders_made_by(
            supervisor.id()
        )
        .is_empty()),
        "{mode:?}: {:?} left",
        job_folders_made_by(supervisor.id())
    );
}

/// The name of the test of `mode` (`--exact`).
fn exact(test: &str, mode: Containment) -> String {
    let _ = mode;
    test.to_owned()
}

#[test]
fn cgroup_a_seccomp_hook_binds_only_the_command() {
    hooks_bind_only_the_command(
        "cgroup_a_seccomp_hook_binds_only_the_command",
        Containment::Cgroup,
    );
}

#[test]
fn reaper_a_seccomp_hook_binds_only_the_command_as_nobody() {
    let test = "reaper_a_seccomp_hook_binds_only_the_command_as_nobody";
    if !rerun_as_nobody(test, test) {
        hooks_bind_only_the_command(test, Containment::Reaper);
    }
}

/// The third test: where the keeper program cannot run (the caller refuses `memfd_create`, or `execveat`:
/// a seccomp filter of its own, as `vm.memfd_noexec` = 2 or a container's profile would refuse them), the keeper modes
/// are not had, and say why: the spawn falls back (to lineage), its reason names the call for both modes, and
/// `require(Cgroup)` and `require(Reaper)` fail with it. Each runs in a re-run of this test program (the filter is
/// this process's for good, and the program is probed once per process).
#[test]
fn a_keeper_program_that_cannot_run_here_is_a_mode_not_had() {
    const REFUSED: &str = "GROUPTIMEOUT_TEST_REFUSED";
    let test = "a_keeper_program_that_cannot_run_here_is_a_mode_not_had";
    if let Ok(name) = std::env::var(REFUSED) {
        let nr = [
            ("memfd_create", libc::SYS_memfd_create),
            ("execveat", libc::SYS_execveat),
        ]
        .into_iter()
        .find(|(n, _)| *n == name)
        .expect("a call")
        .1;
        filter(nr, REFUSE).unwrap();
        let mut child = Contain::new().spawn(&mut Command::new("true")).unwrap();
        let why = child.fallback_reason().unwrap_or_default().to_owned();
        assert_eq!(child.containment(), Containment::Lineage, "{why}");
        assert!(child.wait().unwrap().success());
        assert!(
            why.contains("reaper: ") && why.matches(name.as_str()).count() >= 1,
            "the reason names the call: {why}"
        );
        let mut how = Contain::new();
        for required in [Containment::Cgroup, Containment::Reaper] {
            how.require(required);
            let e = how
                .spawn(&mut Command::new("true"))
                .map(drop)
                .expect_err("required");
            assert!(e.to_string().contains(name.as_str()), "{required:?}: {e}");
            how.cgroup(false);
        }
        return;
    }
    for name in ["memfd_create", "execveat"] {
        passes_alone(test, &[(REFUSED, name)], &format!("{name} refused"));
    }
}

/// GCC's address sanitizer runtime, if it is installed.
fn asan_runtime() -> Option<PathBuf> {
    let usual = Path::new("/usr/lib/x86_64-linux-gnu/libasan.so.8");
    if usual.exists() {
        return Some(usual.to_owned());
    }
    ["/usr/lib", "/usr/lib64", "/usr/lib/aarch64-linux-gnu"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("libasan.so"))
        })
}

/// A caller with a sanitizer runtime preloaded (`LD_PRELOAD` of GCC's `libasan`, which interposes C library calls
/// and keeps its state in anonymous memory): its jobs are contained and end as without it, in each kept mode (a
/// `setsid` escapee dies at the deadline and is a leftover), and the keeper is a process of its own, which holds none
/// of the runtime. Before, the keeper was a copy of the caller, runtime and all, which turned its memory shedding off.
#[test]
fn a_caller_under_a_sanitizer_runtime_keeps_its_jobs() {
    let test = "a_caller_under_a_sanitizer_runtime_keeps_its_jobs";
    if std::env::var_os("GROUPTIMEOUT_TEST_SUPERVISOR").is_some() {
        let preloaded = std::fs::read_to_string("/proc/self/maps")
            .unwrap_or_default()
            .contains("libasan");
        let mut said = format!("escapee preloaded {preloaded}");
        for mode in [Containment::Cgroup, Containment::Reaper] {
            let Some(how) = contain(test, mode) else {
                continue;
            };
            let (mut child, lines) =
                start_job(&how, mode, "setsid sleep 30 & echo $!; exec sleep 30", 1);
            let escapee: u32 = lines[0].parse().unwrap();
            let _cleanup = KillOnDrop::new(vec![escapee]);
            let keeper = child.id();
            let own = std::fs::read_to_string(format!("/proc/{keeper}/maps"))
                .is_ok_and(|maps| !maps.contains("libasan"))
                && std::fs::read_to_string(format!("/proc/{keeper}/comm"))
                    .is_ok_and(|c| c == "group-keeper\n");
            let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
            let dead = survivors_after(Duration::from_secs(5), &[escapee]).is_empty();
            let left = child.leftovers().iter().any(|l| l.pid == escapee);
            let timed_out = outcome.timed_out();
            said.extend([format!(" {mode:?} {own} {timed_out} {dead} {left}")]);
        }
        println!("{said}");
        // Nothing more on standard output, which the test reads one line of and then closes (libtest's own lines
        // would meet a broken pipe).
        std::process::exit(0);
    }
    let Some(runtime) = asan_runtime() else {
        return skip_or_fail(test, "no address sanitizer runtime (libasan.so) installed");
    };
    let runtime = runtime.to_string_lossy().into_owned();
    let (mut supervisor, words) = run_as_supervisor(
        test,
        &[
            ("LD_PRELOAD", runtime.as_str()),
            ("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0"),
        ],
    );
    assert!(supervisor.wait().unwrap().success());
    if words[2] != "true" {
        // A static test program (the musl target's default) loads no library: `LD_PRELOAD` is not read.
        return skipped(
            test,
            "this test program loads no preloaded library (a static build)",
        );
    }
    assert!(words.len() > 3, "no kept mode here: {words:?}");
    for mode in words[3..].chunks(5) {
        assert_eq!(
            &mode[1..],
            ["true"; 4],
            "{mode:?} (keeper its own, timed out, escapee dead, a leftover)"
        );
    }
}

/// The caller's `pre_exec` hooks run in the command's process alone, once per spawn: a hook that appends its pid to
/// a file leaves one line, the command's. Before, they ran in the keeper (the process std forked for the spawn).
#[test]
fn hooks_run_once_in_the_commands_process() {
    let test = "hooks_run_once_in_the_commands_process";
    for mode in [Containment::Cgroup, Containment::Reaper] {
        let Some(how) = contain(test, mode) else {
            continue;
        };
        let dir = TempDir::new(test);
        let file = dir.0.join("pids");
        let path = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
        let mut command = Command::new("true");
        // SAFETY: open, write and close on memory made before the fork: async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                let mut line = [b' '; 12];
                let mut n = libc::getpid().unsigned_abs();
                for at in (0..10).rev() {
                    line[at] = b'0' + u8::try_from(n % 10).unwrap_or(0);
                    n /= 10;
                }
                line[11] = b'\n';
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT,
                    0o600,
                );
                libc::write(fd, line.as_ptr().cast(), line.len());
                libc::close(fd);
                Ok(())
            });
        }
        let mut child = how.spawn(&mut command).unwrap();
        assert_eq!(child.containment(), mode);
        let command_id = child.command_id();
        assert!(child.wait().unwrap().success());
        let ran: Vec<u32> = std::fs::read_to_string(&file)
            .unwrap()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        assert_eq!(
            ran,
            [command_id],
            "{mode:?}: where the hook ran (the keeper is {})",
            child.id()
        );
    }
}
