//! The `grouptimeout` binary in hostile environments (issue 8): children it already had, a `/proc` of another PID
//! namespace or none at all, the timeout signal ignored by the caller, few descriptors, signal storms while it
//! exits, and many adopted orphans.
//!
//! Every run is bounded (the tool runs under the library: a hung run is killed and fails the test), output goes to
//! files, and death is checked through `/proc/PID/stat`. The shell scripts find the binary in `$GT`.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use grouptimeout::{GroupChild, GroupCommandExt, Outcome};

mod common;
use common::{eventually, is_dead, is_root, parent_of, temp_path, KillOnDrop};

const BIN: &str = env!("CARGO_BIN_EXE_grouptimeout");
/// No single run may take longer than this: a regression fails instead of hanging.
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// Files of one test, removed when dropped.
struct Files(Vec<PathBuf>);

impl Files {
    /// A fresh path for `name` (in the temporary directory, unique in this process), removed with the others.
    fn path(&mut self, name: &str) -> String {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let path = temp_path(&format!("{}-{name}", COUNT.fetch_add(1, Ordering::SeqCst)));
        self.0.push(path.clone());
        path.to_str().unwrap().to_string()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

/// A finished run: exit code (or 128 + signal) and standard error.
struct Run {
    code: i32,
    stderr: String,
}

/// Starts `program args` with `GT` naming the binary, standard error into a file, in a group of its own.
fn start(program: &str, args: &[&str], stderr: &str) -> GroupChild {
    Command::new(program)
        .args(args)
        // A copy every user may run: some scripts run it as nobody, and the checkout may be in a folder only we may
        // enter.
        .env("GT", common::runnable_by_anyone(BIN.as_ref()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(stderr).unwrap())
        .spawn_group()
        .unwrap()
}

/// Waits (bounded) for a child started with [`start`].
fn finish(child: GroupChild, stderr: &str) -> Run {
    finish_within(child, stderr, RUN_LIMIT)
}

/// Waits at most `limit` for a child started with [`start`].
fn finish_within(mut child: GroupChild, stderr: &str, limit: Duration) -> Run {
    let status = match child.wait_timeout(limit).unwrap() {
        Outcome::Exited(status) => status,
        Outcome::TimedOut(_) | Outcome::Idle(_) => {
            panic!("the run did not finish within {limit:?}")
        }
    };
    Run {
        code: status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        stderr: fs::read_to_string(stderr).unwrap(),
    }
}

/// Runs `program args` to the end (see [`start`]).
fn run(files: &mut Files, program: &str, args: &[&str]) -> Run {
    let stderr = files.path("stderr");
    finish(start(program, args, &stderr), &stderr)
}

/// Runs the `sh` script `script` to the end (see [`start`]).
fn sh(files: &mut Files, script: &str) -> Run {
    run(files, "sh", &["-c", script])
}

/// Waits (bounded) until `path` holds a line, and returns its text.
fn wait_for_line(path: &str) -> String {
    let mut text = String::new();
    let done = eventually(RUN_LIMIT, || {
        text = fs::read_to_string(path).unwrap_or_default();
        text.ends_with('\n')
    });
    assert!(done, "{path} never got a line");
    text
}

/// Waits (bounded) until `path` holds a line, and returns the pids it lists.
fn pids_in(path: &str) -> Vec<u32> {
    wait_for_line(path)
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect()
}

/// Asserts that each process whose pid is in the file `path` dies within a generous bound (see [`pids_in`]); kills
/// the survivors so that nothing is left behind.
fn assert_die(path: &str, what: &str) {
    let pids = listed_in(path);
    let alive = pids.survivors_after(Duration::from_secs(5));
    pids.kill();
    assert!(alive.is_empty(), "{what}: {alive:?} survived");
}

/// Waits (bounded) until `path` holds a line, and returns the processes it lists: a pid whose process started after
/// the file was written is not the one written (it died, and its pid was reused), and counts as dead.
fn listed_in(path: &str) -> KillOnDrop {
    wait_for_line(path);
    KillOnDrop::from_file(path)
}

/// Whether `program args` runs and succeeds here (a tool that is missing or forbidden, such as `unshare` without
/// the right to create namespaces, does not).
fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[test]
fn children_the_tool_already_had_are_left_alone() {
    if common::linux_only(
        "children_the_tool_already_had_are_left_alone",
        "the sweep (the tool as a child subreaper)",
    ) {
        return;
    }
    // Issue 8.2: `sleep 30 & exec grouptimeout …`: the sleep is a child of the tool, but not the command's. (Here
    // through setsid, so that the test's own group kill, when the tool exits, does not reach it.)
    let mut files = Files(Vec::new());
    let (before, escapee) = (files.path("before"), files.path("escapee"));
    // The tool starts once that sleep runs (after its setsid): else the test's group kill at the tool's exit could
    // reach it still in the group (seen once in a full run).
    let script = format!(
        "setsid sleep 30 & echo $! > {before}; i=0; until grep -qx sleep /proc/$!/comm || [ $i -ge 1000 ]; do \
         sleep .01; i=$((i+1)); done; exec \"$GT\" 10 sh -c 'setsid sleep 30 & echo $! > {escapee}'"
    );
    let r = sh(&mut files, &script);
    let before = listed_in(&before);
    let alive = !before.alive().is_empty();
    before.kill();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(alive, "the child the tool already had was killed");
    assert_die(&escapee, "the command's escapee");
    // The same through a process substitution (`exec > >(gzip > FILE)`): all of the output arrives.
    if !works("bash", &["-c", "true"]) || !works("gzip", &["--version"]) {
        return common::skip_or_fail(
            "children_the_tool_already_had_are_left_alone",
            "no bash or no gzip",
        );
    }
    let out = files.path("out.gz");
    let script = format!("exec > >(setsid gzip > {out}); exec \"$GT\" 10 seq 100000");
    let r = run(&mut files, "bash", &["-c", &script]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    #[allow(
        clippy::naive_bytecount,
        reason = "libc is the crate's only dependency, tests included"
    )]
    let lines = || {
        let text = Command::new("gzip")
            .args(["-dc", &out])
            .output()
            .unwrap()
            .stdout;
        text.iter().filter(|&&b| b == b'\n').count()
    };
    eventually(Duration::from_secs(10), || lines() == 100_000);
    assert_eq!(lines(), 100_000, "output lost");
}

#[test]
fn a_proc_of_another_pid_namespace_is_not_trusted() {
    if common::linux_only(
        "a_proc_of_another_pid_namespace_is_not_trusted",
        "the sweep through /proc",
    ) {
        return;
    }
    // Issue 8.3: under `unshare -pf` without `--mount-proc`, /proc lists pids of the outer namespace.
    if !works("unshare", &["-pf", "true"]) {
        return common::skip_or_fail(
            "a_proc_of_another_pid_namespace_is_not_trusted",
            "unshare -pf is missing or not permitted",
        );
    }
    let mut files = Files(Vec::new());
    // As root the command would get a cgroup, which needs no /proc and no sweep: as nobody it gets none.
    let mut argv = vec!["-pf"];
    if is_root() && works("setpriv", &["--version"]) {
        argv.extend([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    let bin = common::runnable_by_anyone(BIN.as_ref());
    argv.extend([
        bin.to_str().unwrap(),
        "5",
        "sh",
        "-c",
        "setsid sleep 30 & exit 3",
    ]);
    let r = run(&mut files, "unshare", &argv);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("/proc is not this process's"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("could not kill"), "{}", r.stderr);
}

#[test]
fn no_proc_is_named_and_the_status_kept() {
    if common::linux_only(
        "no_proc_is_named_and_the_status_kept",
        "the sweep through /proc",
    ) {
        return;
    }
    // Issue 8.6: without /proc the sweep cannot run; say so, naming /proc, and keep the command's status.
    if !works("unshare", &["-m", "true"]) {
        return common::skip_or_fail(
            "no_proc_is_named_and_the_status_kept",
            "unshare -m is missing or not permitted",
        );
    }
    let mut files = Files(Vec::new());
    let script = "umount -l /proc && exec \"$GT\" 5 sh -c 'exit 3'";
    let r = run(&mut files, "unshare", &["-m", "sh", "-c", script]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("cannot use /proc"), "{}", r.stderr);
}

#[test]
fn the_timeout_signal_works_though_the_caller_ignored_it() {
    // Issue 8.4: `-p` exits with the command's status, 128 + the signal that killed it; a command that outlived the
    // timeout would exit 0 after 5 s.
    let mut files = Files(Vec::new());
    // A background job of a non-interactive shell ignores INT (and QUIT).
    let r = sh(&mut files, "\"$GT\" -p -s INT 1 sleep 5 & wait $!");
    assert_eq!(r.code, 128 + libc::SIGINT, "{}", r.stderr);
    let r = sh(&mut files, "trap '' TERM; \"$GT\" -p 1 sleep 5");
    assert_eq!(r.code, 128 + libc::SIGTERM, "{}", r.stderr);
    // A forwarded signal the caller ignored, other than the timeout's, stays ignored for the command.
    let out = files.path("sigign");
    let r = sh(
        &mut files,
        &format!("\"$GT\" 5 grep SigIgn /proc/self/status > {out} & wait $!"),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = fs::read_to_string(&out).unwrap();
    let mask = u64::from_str_radix(text.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_ne!(
        mask & 1 << (libc::SIGINT - 1),
        0,
        "INT not ignored: {mask:x}"
    );
    assert_eq!(mask & 1 << (libc::SIGTERM - 1), 0, "TERM ignored: {mask:x}");
    // The tool never stops on TTIN/TTOU (issue 16.4), but its command keeps their default actions.
    let stops = 1 << (libc::SIGTTIN - 1) | 1 << (libc::SIGTTOU - 1);
    assert_eq!(mask & stops, 0, "TTIN or TTOU ignored: {mask:x}");
}

#[test]
fn few_descriptors_leave_no_survivor() {
    // Issue 8.5: the sweep needs no descriptor beyond the one taken before the command starts.
    if !works("prlimit", &["--nofile=4:1024", "true"]) {
        return common::skip_or_fail("few_descriptors_leave_no_survivor", "no prlimit");
    }
    // musl's posix_spawn needs a pipe that glibc's does not: the same range, 2 higher.
    let fewest = if cfg!(target_env = "musl") { 6 } else { 4 };
    let mut files = Files(Vec::new());
    // As root the tool gets a cgroup where the descriptors allow it, lineage or the plain group below that; as
    // nobody (through setpriv, where it runs), lineage or the group. Every mode ends the escapee in the tool: the
    // cgroup through cgroup.kill, lineage through its mark, the group through the tool's sweep of adopted orphans.
    let mut users = vec![vec![]];
    if common::is_root() && works("setpriv", &["--reuid=65534", "true"]) {
        users.push(vec![
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    // A copy every user may run: the checkout may be in a folder only we may enter.
    let copy = common::runnable_by_anyone(BIN.as_ref());
    for user in &users {
        let bin = if user.is_empty() {
            BIN
        } else {
            copy.to_str().unwrap()
        };
        for n in fewest..=fewest + 6 {
            let escapee = files.path("escapee");
            let _ = fs::remove_file(&escapee);
            // The command raises its own limit again, so that the shell can redirect.
            let script = format!("echo hi; setsid sleep 30 & echo $! > {escapee}; sleep .2");
            let nofile = format!("--nofile={n}:1024");
            let mut args = vec![nofile.as_str()];
            args.extend(user.iter().copied());
            args.extend([bin, "5", "prlimit", "--nofile=1024", "sh", "-c", &script]);
            let r = run(&mut files, "prlimit", &args);
            let what = format!("{n} descriptors {user:?}");
            assert_eq!(r.code, 0, "{what}: {}", r.stderr);
            assert_only_guard_warnings(&r.stderr);
            if common::linux_only(
                "few_descriptors_leave_no_survivor (its escapee)",
                "the sweep (the tool as a child subreaper)",
            ) {
                listed_in(&escapee).kill();
            } else {
                assert_die(&escapee, &what);
            }
        }
    }
    // Where GNU runs (4), grouptimeout runs (musl's: 2 more).
    let r = run(
        &mut files,
        "prlimit",
        &[&format!("--nofile={fewest}:1024"), BIN, "5", "true"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_only_guard_warnings(&r.stderr);
}

fn assert_only_guard_warnings(stderr: &str) {
    // strerror's text: glibc's "Too many open files", musl's "No file descriptors available".
    let emfile = std::io::Error::from_raw_os_error(libc::EMFILE).to_string();
    let emfile = format!(": {}", emfile.split(" (os error").next().unwrap());
    assert!(
        stderr
            .lines()
            // The guard's pipe, or (the shell guard of other systems and the portable build) the shell's start, or a
            // shell that could not run the guard's script (dash exits 2 when a redirection finds no descriptor), or
            // the cgroup.kill it opens; or a lineage kill point with no room to list /proc (the sweep then ends the
            // job's orphans all the same).
            .all(|line| (line.contains("warning: cannot make process group")
                && line.contains("die with this process: /bin/sh exited (status ")
                && line.contains("without arming the guard (is /bin/sh a POSIX shell, with a few descriptors free?)"))
                || ((line.contains("warning: cannot make process group")
                && line.contains("die with this process: "))
                || line.contains(": cannot kill every process the command left behind: "))
                && line.ends_with(&emfile)),
        "{stderr}"
    );
}

/// Runs the tool with `args` and the script `script` under strace, which delays every `sigaltstack` call by
/// 200 ms: std makes one as the process exits, so the tool spends 200 ms in its exit path. From the moment the script
/// created `ready`, `signal` is sent to the tool every millisecond or so until it exits; returns its run.
fn under_a_storm(files: &mut Files, args: &[&str], script: &str, signal: i32) -> Run {
    let (ready, stderr) = (files.path("ready"), files.path("stderr"));
    let script = format!("{script} echo > {ready}; sleep .3; exit 3");
    let mut words = vec![
        "-o",
        "/dev/null",
        "-e",
        "trace=sigaltstack",
        "-e",
        "inject=sigaltstack:delay_exit=200000",
        BIN,
    ];
    words.extend(args);
    words.extend(["sh", "-c", &script]);
    let mut strace = start("strace", &words, &stderr);
    wait_for_line(&ready);
    let children = format!("/proc/{0}/task/{0}/children", strace.id());
    let tool: u32 = fs::read_to_string(children)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let end = Instant::now() + RUN_LIMIT;
    // Through a pidfd opened while the tool is still strace's child (its pid cannot have been reused then), so that
    // no signal reaches a later owner of its pid once strace has reaped it.
    let tool_fd = common::pidfd_of(tool)
        .ok()
        .filter(|_| parent_of(tool) == Some(strace.id()));
    while let Some(fd) = tool_fd.as_ref().filter(|_| {
        matches!(strace.try_wait(), Ok(None))
            && Instant::now() < end
            && parent_of(tool) == Some(strace.id())
    }) {
        common::signal_through(fd, signal);
        std::thread::sleep(Duration::from_millis(1));
    }
    finish(strace, &stderr)
}

#[test]
fn a_signal_storm_while_exiting_does_not_change_the_status() {
    // Issue 8.7: the handled signals stay handled until the tool has exited.
    if !works("strace", &["-o", "/dev/null", "true"]) {
        return common::skip_or_fail(
            "a_signal_storm_while_exiting_does_not_change_the_status",
            "no strace",
        );
    }
    let mut files = Files(Vec::new());
    let r = under_a_storm(&mut files, &["20"], "trap '' TERM;", libc::SIGTERM);
    assert_eq!(r.code, 3, "TERM storm: {}", r.stderr);
    let r = under_a_storm(&mut files, &["20"], "trap '' USR1;", libc::SIGUSR1);
    assert_eq!(r.code, 3, "USR1 storm: {}", r.stderr);
    // The first ALRM sends TERM (ignored) and starts the -k countdown; the next one sends KILL.
    let r = under_a_storm(
        &mut files,
        &["-k", "5", "20"],
        "trap '' TERM;",
        libc::SIGALRM,
    );
    assert_eq!(r.code, 137, "ALRM storm: {}", r.stderr);
}

#[test]
fn reaping_adopted_orphans_costs_what_exited() {
    const DAEMONS: usize = 300;
    const SHORT: usize = 150;
    if common::linux_only(
        "reaping_adopted_orphans_costs_what_exited",
        "the tool as a child subreaper",
    ) {
        return;
    }
    // Issue 8.8: with many adopted daemons alive, each exiting orphan must not cost a pass over all children.
    // Counted in system calls (wait4 and waitid, traced with strace), not in time.
    if !works("strace", &["-o", "/dev/null", "true"]) {
        return common::skip_or_fail("reaping_adopted_orphans_costs_what_exited", "no strace");
    }
    let mut files = Files(Vec::new());
    let (daemons, trace) = (files.path("daemons"), files.path("trace"));
    let script = format!(
        "i=0; while [ $i -lt {DAEMONS} ]; do (sh -c 'echo $$ >> {daemons}; exec sleep 30' &); i=$((i+1)); done
         i=0; while [ $i -lt {SHORT} ]; do (sleep 0.001 &); sleep 0.01; i=$((i+1)); done
         sleep 0.5"
    );
    let started = Instant::now();
    let stderr = files.path("stderr");
    let tool = start(
        "strace",
        &[
            "-o",
            &trace,
            "-e",
            "trace=wait4,waitid",
            "-e",
            "signal=none",
            BIN,
            "60",
            "sh",
            "-c",
            &script,
        ],
        &stderr,
    );
    // 450 forks and execs of `sh` take a few seconds, and more than 20 on a loaded machine (seen once beside three
    // other test runs): bounded by the tool's own deadline instead.
    let r = finish_within(tool, &stderr, Duration::from_secs(70));
    let listed = pids_in(&daemons).len();
    assert_die(&daemons, "adopted daemons");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(listed, DAEMONS);
    let text = fs::read_to_string(&trace).unwrap();
    let waits = text
        .lines()
        .filter(|l| l.starts_with("wait4(") || l.starts_with("waitid("))
        .count();
    // About one wait per exited or killed child, the loop's checks of the command, and the scans for exits no
    // SIGCHLD named (at most 4 a second, each over all children). A pass over all children per SIGCHLD (each
    // short-lived orphan exits on its own, 10 ms apart) makes it about DAEMONS * SHORT (past about 35 s, on a very
    // loaded machine, the allowance for the scans reaches that: the count then cannot tell them apart).
    let scans = 4 * usize::try_from(started.elapsed().as_secs()).unwrap() + 4;
    assert!(
        waits < 3 * (DAEMONS + SHORT) + DAEMONS * scans,
        "{waits} waits for {DAEMONS} daemons and {SHORT} short-lived orphans in {:?}",
        started.elapsed()
    );
}

#[test]
fn the_command_does_not_inherit_the_tools_blocked_signals() {
    // The tool blocks the signals it handles; the command must start without them blocked: in its own group, with
    // --foreground, and through fork + exec (an inherited ignored SIGPIPE).
    let mut files = Files(Vec::new());
    for prefix in ["", "trap '' PIPE;"] {
        for foreground in ["", "-f"] {
            let out = files.path("sigblk");
            let script =
                format!("{prefix} \"$GT\" {foreground} 5 grep SigBlk /proc/self/status > {out}");
            let r = sh(&mut files, &script);
            assert_eq!(r.code, 0, "{}", r.stderr);
            let text = fs::read_to_string(&out).unwrap();
            let hex = text.trim().trim_start_matches("SigBlk:").trim();
            assert_eq!(u64::from_str_radix(hex, 16).unwrap(), 0, "{script}: {text}");
        }
    }
}

#[test]
fn a_command_the_tool_may_not_kill_is_named_at_once_and_left() {
    // Issue 16.9: an unprivileged tool whose command becomes root (a setuid-root program) cannot kill it; it used to
    // wait silently for the command's end. Like GNU it now exits 137 when its KILL fails, and it says why.
    let test = "a_command_the_tool_may_not_kill_is_named_at_once_and_left";
    if !is_root() || !works("setpriv", &["--version"]) {
        return common::skip_or_fail(test, "needs root and setpriv");
    }
    let mut files = Files(Vec::new());
    // A setuid-root copy of setpriv, which makes its command root in every uid.
    let suid = files.path("setpriv");
    fs::copy("/usr/bin/setpriv", &suid).unwrap();
    fs::set_permissions(&suid, std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
    let pid_file = files.path("pid");
    // The deadline leaves the command time to become root first (4 s: under load, the chain of setpriv, the tool, its
    // keeper and the setuid setpriv took more than the 1 s it had before, and the tool killed it while it could).
    let script = format!(
        "setpriv --reuid=65534 --regid=65534 --clear-groups \"$GT\" -k .5 4 {suid} --reuid=0 --regid=0 \
         --clear-groups sh -c 'echo $$ > {pid_file}; exec sleep 30'"
    );
    let started = Instant::now();
    let stderr = files.path("stderr");
    let child = start("sh", &["-c", &script], &stderr);
    let pid = pids_in(&pid_file)[0];
    // Left running on purpose, and not in the run's group: killed by its pid however the test ends.
    let _cleanup = common::KillOnDrop::new(vec![pid]);
    let r = finish(child, &stderr);
    let elapsed = started.elapsed();
    let left = !is_dead(pid);
    // The job's id: the command's pid, or its keeper's (the job's own reaper), which passes signals on to it.
    let id = common::parent_of(pid).filter(|&p| r.stderr.contains(&format!("(pid {p})")));
    assert_eq!(r.code, 137, "{}", r.stderr);
    // Well before the command's own end (30 s): the tool leaves when its KILL fails.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
    assert!(left, "the command was killed after all: {}", r.stderr);
    assert!(
        r.stderr.contains("cannot kill command")
            && r.stderr.contains(&id.unwrap_or(pid).to_string()),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Operation not permitted"), "{}", r.stderr);
}

/// `unshare` arguments that make a PID namespace of the test's own, with its own /proc (in a mount namespace of its
/// own), whose processes all end when the `unshare` is killed.
const OWN_PID_NAMESPACE: [&str; 5] = ["-p", "-f", "--mount-proc", "--kill-child", "--"];

#[test]
fn a_proc_of_the_outer_namespace_is_not_trusted_when_our_pid_matches() {
    // Issue 16.5: under `unshare -pf` without `--mount-proc`, /proc is the outer namespace's; when the tool's pid is
    // the same number in both namespaces, `/proc/self` names it and used to pass the check. `ns_last_pid`, set in
    // both namespaces just before the forks, gives the tool the same pid in both. The outer namespace is one of the
    // test's own (`unshare -p -f --mount-proc`, with its own /proc), never the machine's: there, `ns_last_pid` would
    // steer every other process's pid allocation while it runs.
    let test = "a_proc_of_the_outer_namespace_is_not_trusted_when_our_pid_matches";
    if common::linux_only(test, "the sweep through /proc") {
        return;
    }
    if !is_root()
        || !works("unshare", &[&OWN_PID_NAMESPACE[..], &["true"]].concat())
        || !works("setpriv", &["--version"])
    {
        return common::skip_or_fail(test, "needs root, unshare -p -f --mount-proc and setpriv");
    }
    let mut files = Files(Vec::new());
    // Nothing else runs in the outer namespace, so the first try should do; tried for a while all the same.
    // Far from the outer namespace's first pids, and below any pid_max (at least 301).
    let m = 200;
    let until = Instant::now() + Duration::from_secs(20);
    let mut tries = 0;
    while Instant::now() < until {
        tries += 1;
        let out = files.path("nspid");
        // The outer sh (pid 1 of the outer namespace) execs unshare, whose fork is outer pid m+1 (inner 1); that shell
        // sets its namespace's last pid to m+1 and forks the tool (through setpriv, which execs it: as nobody it gets
        // no cgroup, and needs the sweep): pid m+2 in both when nothing else forked meanwhile. The command records the tool's NSpid line as
        // the outer /proc shows it.
        let script = format!(
            "echo {m} > /proc/sys/kernel/ns_last_pid; exec unshare -pf sh -c 'echo {} > /proc/sys/kernel/ns_last_pid; \
             setpriv --reuid=65534 --regid=65534 --clear-groups \"$GT\" 5 sh -c \"grep NSpid /proc/\\$PPID/status > {out}; setsid sleep 30 & exit 3\"; exit $?'",
            m + 1
        );
        let mut args = OWN_PID_NAMESPACE.to_vec();
        args.extend(["sh", "-c", &script]);
        let r = run(&mut files, "unshare", &args);
        let nspid = fs::read_to_string(&out).unwrap_or_default();
        let tool = (m + 2).to_string();
        if nspid.split_whitespace().skip(1).collect::<Vec<_>>() != [&tool, &tool] {
            continue;
        }
        assert_eq!(r.code, 3, "{}", r.stderr);
        assert!(
            r.stderr.contains("/proc is not this process's") && r.stderr.contains("NSpid"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("could not kill"), "{}", r.stderr);
        return;
    }
    panic!("the tool never got the same pid in both namespaces in {tries} tries (20 s)");
}

/// The copies that `runnable_by_anyone` makes do not pile up in the temporary directory: a folder of them whose test
/// process has ended (its lock free) is removed, one whose process still runs (its lock held) is kept, and so is this
/// process's own.
#[test]
fn copies_for_other_users_of_ended_test_processes_are_removed() {
    let tmp = std::env::temp_dir();
    let folder = |what| tmp.join(format!("{}{what}-{}", common::COPIES, std::process::id()));
    let (ended, running) = (folder("test-ended"), folder("test-running"));
    for dir in [&ended, &running] {
        fs::create_dir_all(dir).unwrap();
        fs::write(dir.join("copy"), "").unwrap();
    }
    fs::File::create(ended.join("lock")).unwrap();
    // Locked (through a file description of its own, as another process would hold it) before it is named `lock`:
    // another test process that starts meanwhile must not take it for an ended one's.
    let held = fs::File::create(running.join(".lock")).unwrap();
    assert!(common::flock(&held, libc::LOCK_EX));
    fs::rename(running.join(".lock"), running.join("lock")).unwrap();
    let own = common::runnable_by_anyone(BIN.as_ref());
    common::remove_ended_copies();
    let kept = running.join("copy").exists();
    drop(held);
    common::remove_ended_copies();
    assert!(!ended.exists(), "the folder of an ended process is left");
    assert!(kept, "the folder of a running process was removed");
    assert!(own.exists(), "this process's own copy was removed");
    assert!(
        !running.exists(),
        "the folder of a process that ended since is left"
    );
}
