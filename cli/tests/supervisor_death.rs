//! The supervisor's death (issue 32, point 7): when the tool dies, even by `kill -9`, its job first gets the tool's
//! timeout signal (as GNU coreutils' `timeout` gives it with `PR_SET_PDEATHSIG` since 9.10), then `SIGKILL` after
//! `--kill-after` (or the tool's fixed grace); a library job whose supervisor dies gets the same plan with the grace
//! of `set_grace`, in every mode. The tool's tests follow the `PR_SET_PDEATHSIG` part of GNU's
//! `tests/timeout/timeout-group.sh` (a command whose trap writes a file, the tool killed with `SIGKILL`, the file
//! awaited), and also check that nothing of the job survives and no cgroup folder is left. Death is read from
//! `/proc/PID/stat` (a zombie is dead); every wait is bounded, and only lower bounds are put on times.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;
#[path = "common/job.rs"]
mod job_common;
use common::*;
use job_common::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use grouptimeout::{signal, GroupChild, GroupCommandExt as _};
use grouptimeout_cli::host;
use grouptimeout_job::{Contain, Containment, JobChildExt as _};

const BIN: &str = env!("CARGO_BIN_EXE_grouptimeout");

/// The job of every test, run as `sh -c JOB sh DIR [TRAPPED [ON_SIGNAL]]`: a shell whose trap for signal `TRAPPED`
/// (TERM by default) writes `DIR/trapped` and then runs `ON_SIGNAL` (`exit 0` by default); a member of its group that
/// ignores `TRAPPED` (only the `SIGKILL` at the grace's end ends it) and one that does not. It writes the three pids
/// (the shell first) to `DIR/pids`.
const JOB: &str = "sig=${2:-TERM}; trap \"touch '$1/trapped'; ${3:-exit 0}\" $sig; \
                   sh -c \"trap '' $sig; exec sleep 31\" & i=$!; sleep 30 & echo $$ $i $! > \"$1/pids\"; \
                   while :; do wait; done";

/// How long a test waits for anything to happen.
const LIMIT: Duration = Duration::from_secs(15);

/// The job's three pids, once it wrote them.
fn job_pids(dir: &Path) -> Vec<u32> {
    let pids = pids_from_file(&dir.join("pids"), 3);
    assert_eq!(pids.len(), 3, "the job did not start");
    pids
}

/// The job's cgroup folder, if it has one of its own (`grouptimeout-…`).
fn own_folder(pid: u32) -> Option<PathBuf> {
    job_folder(pid).filter(|f| {
        f.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("grouptimeout-"))
    })
}

/// Checks the end of a job whose supervisor was killed: its trap ran (so the signal came before any `SIGKILL`), none
/// of `pids` survives, and `folder` (if any) is gone.
fn assert_ended_gracefully(dir: &Path, pids: &KillOnDrop, folder: Option<&Path>) {
    let trapped = eventually(LIMIT, || dir.join("trapped").exists());
    let alive = pids.survivors_after(LIMIT);
    pids.kill();
    let pids = &pids.0;
    assert!(
        trapped,
        "the job's trap never ran: it got no signal before SIGKILL"
    );
    assert!(alive.is_empty(), "{alive:?} of {pids:?} survived");
    if let Some(folder) = folder {
        assert!(
            eventually(LIMIT, || !folder.exists()),
            "{} left behind",
            folder.display()
        );
    }
}

/// Starts the tool with `args` then the job (see [`JOB`]) with `job_args`, and returns it once it set up the job (it
/// sleeps in `sigtimedwait`, its loop) with the job's pids.
fn start_tool(args: &[&str], dir: &Path, job_args: &[&str]) -> (Child, Vec<u32>) {
    start_tool_with(Command::new(BIN), args, dir, job_args)
}

/// [`start_tool`] through `tool`, a command that runs the tool.
fn start_tool_with(
    mut tool: Command,
    args: &[&str],
    dir: &Path,
    job_args: &[&str],
) -> (Child, Vec<u32>) {
    let tool = tool
        .args(args)
        .args(["sh", "-c", JOB, "sh"])
        .arg(dir)
        .args(job_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = job_pids(dir);
    // The plan is set just after the spawn: wait until the tool sleeps in its loop.
    let settled = eventually(LIMIT, || {
        fs::read_to_string(format!("/proc/{}/wchan", tool.id()))
            .is_ok_and(|w| w.contains("sigtimedwait"))
    });
    assert!(settled, "the tool never reached its loop");
    (tool, pids)
}

/// Kills the tool with `SIGKILL` and reaps it.
fn kill_tool(mut tool: Child) {
    tool.kill().unwrap();
    tool.wait().unwrap();
}

/// Issue 32.7 and GNU's test: `kill -9` of the tool, whose command has a `TERM` trap: the trap runs (the default
/// timeout signal came first), then nothing of the job is left (the member that ignores `TERM` gets `SIGKILL`), and
/// neither is the job's folder. Before, the job got `SIGKILL` at once and the trap never ran.
#[test]
fn a_killed_tool_sends_its_timeout_signal_first() {
    let dir = TempDir::new("death-tool-term");
    let (tool, pids) = start_tool(&["25"], &dir.0, &[]);
    let cleanup = KillOnDrop::new(pids.clone());
    let folder = own_folder(pids[0]);
    kill_tool(tool);
    assert_ended_gracefully(&dir.0, &cleanup, folder.as_deref());
}

/// The tool killed the instant its command ended: `SIGKILL` to the tool and to its command (which `sh -c` exec'd),
/// back to back, as `pkill -9` of both would. The keeper of a job that ends clean exits inside the job's folder and
/// leaves its removal to the tool, after its reap; here the tool dies first, so the keeper, seeing it dying (a
/// `SIGKILL` pending, in its exit, its end of the channel closed), leaves the folder and removes it itself. Before,
/// the folder was left behind (CI's terminal tests under busybox `sh`, whose `sh -c` execs its last command, left one
/// in 3 runs of 4). The tool's `SIGKILL` goes first, so that it is sent before the keeper can look (a caller killed
/// after that look is not covered: `spawn_contained`'s docs). Root only (a cgroup of the job's own); 30 rounds.
#[test]
fn a_tool_killed_as_its_command_ends_leaves_no_folder() {
    let test = "a_tool_killed_as_its_command_ends_leaves_no_folder";
    if !is_root() {
        return skipped(test, "not root: no cgroup of the job's own");
    }
    for round in 0..30 {
        let dir = TempDir::new("death-tool-at-end");
        let mut tool = Command::new(BIN)
            .args([
                "30",
                "sh",
                "-c",
                "echo $$ > \"$1/pid\"; exec sleep 30",
                "sh",
            ])
            .arg(&dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let command = pids_from_file(&dir.0.join("pid"), 1);
        assert_eq!(command.len(), 1, "round {round}: the command did not start");
        let cleanup = KillOnDrop::new(command.clone());
        let Some(folder) = own_folder(command[0]) else {
            let _ = tool.kill();
            let _ = tool.wait();
            return skipped(test, "the job got no cgroup of its own here");
        };
        let settled = eventually(LIMIT, || {
            fs::read_to_string(format!("/proc/{}/wchan", tool.id()))
                .is_ok_and(|w| w.contains("sigtimedwait"))
        });
        assert!(settled, "round {round}: the tool never reached its loop");
        for pid in [tool.id(), command[0]] {
            // SAFETY: kill with integers; the tool is ours and `command` the keeper's, both unreaped: pinned.
            unsafe { libc::kill(i32::try_from(pid).unwrap(), libc::SIGKILL) };
        }
        tool.wait().unwrap();
        assert!(cleanup.survivors_after(LIMIT).is_empty(), "round {round}");
        assert!(
            eventually(LIMIT, || !folder.exists()),
            "round {round}: {} left behind",
            folder.display()
        );
    }
}

/// `-s USR1 -k 1`, as GNU's test sends it: the `USR1` trap runs, and a command that goes on after it (it ignores the
/// signal) is killed with `SIGKILL` after about the `-k` duration, not before. Without `-k`, the tool's fixed grace
/// (2 s, README) holds instead.
#[test]
fn a_killed_tool_kills_after_its_kill_after_duration() {
    for (args, grace) in [
        (&["-s", "USR1", "-k", "1", "25"][..], Duration::from_secs(1)),
        (&["-s", "USR1", "25"][..], Duration::from_secs(2)),
    ] {
        let dir = TempDir::new("death-tool-usr1");
        let (tool, pids) = start_tool(args, &dir.0, &["USR1", ":"]);
        let cleanup = KillOnDrop::new(pids.clone());
        let folder = own_folder(pids[0]);
        let killed = Instant::now();
        kill_tool(tool);
        assert!(
            eventually(LIMIT, || is_dead(pids[0])),
            "{args:?}: the command survived"
        );
        let waited = killed.elapsed();
        assert_ended_gracefully(&dir.0, &cleanup, folder.as_deref());
        // The grace starts once the tool is dead, after `killed`: only a lower bound (with a margin for the clock's
        // steps) holds on a loaded machine.
        assert!(
            waited + Duration::from_millis(50) >= grace,
            "{args:?}: killed after {waited:?}"
        );
    }
}

/// The tool as nobody, whose job gets the job's own reaper (no cgroup can be made): its keeper gives the `TERM` trap
/// its run too, then ends the job.
#[test]
fn a_killed_tool_sends_its_timeout_signal_first_as_nobody() {
    use std::os::unix::fs::PermissionsExt as _;
    let test = "a_killed_tool_sends_its_timeout_signal_first_as_nobody";
    if !is_root() {
        return skipped(test, "not root: cannot run the tool as nobody");
    }
    if !have(test, "setpriv", "--version") {
        return;
    }
    let dir = TempDir::new("death-tool-nobody");
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o777)).unwrap();
    let mut setpriv = Command::new("setpriv");
    setpriv
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(runnable_by_anyone(Path::new(BIN)));
    let (tool, pids) = start_tool_with(setpriv, &["25"], &dir.0, &[]);
    let cleanup = KillOnDrop::new(pids.clone());
    assert_eq!(
        own_folder(pids[0]),
        None,
        "nobody got a cgroup: not the reaper's test"
    );
    kill_tool(tool);
    assert_ended_gracefully(&dir.0, &cleanup, None);
}

/// A nested tool in the job of a killed tool gets the outer tool's signal (TERM) as any member of the command's group
/// does, and passes it on to its own command, as GNU's does: the inner command's `TERM` trap runs, then nothing of
/// either job survives, and the outer folder (with the inner one in it) is gone. Before, the outer job got `SIGKILL`
/// at once, the inner one with it.
#[test]
fn a_killed_tool_lets_a_nested_tool_pass_its_signal_on() {
    let dir = TempDir::new("death-tool-nested");
    let (tool, pids) = start_tool(&["25", BIN, "-s", "USR1", "25"], &dir.0, &[]);
    let cleanup = KillOnDrop::new(pids.clone());
    let folder = own_folder(pids[0]).and_then(|inner| inner.parent().map(Path::to_path_buf));
    kill_tool(tool);
    assert_ended_gracefully(&dir.0, &cleanup, folder.as_deref());
}

/// How the library test's supervisor starts and guards its job.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `spawn_contained` requiring a cgroup; its keeper guards it.
    Cgroup,
    /// `spawn_contained` without a cgroup: the job's reaper, its keeper, guards it; `die_with_parent`, then
    /// `set_grace` and `die_with_parent` again, which passes the grace on.
    Reaper,
    /// Lineage (no cgroup, no reaper), `die_with_parent` (the guard), then `set_grace` and `die_with_parent`
    /// again, which passes the grace on.
    Lineage,
    /// Lineage, `host::die_with_parent_forked` (once a forked guard; now the same call as `die_with_parent`),
    /// `set_grace` before it.
    LineageForked,
    /// `spawn_group`, `die_with_parent`, `set_grace` before it.
    Group,
}

/// The supervisor's part (in a re-run of this test binary, see `run_as_supervisor`): starts the job in folder `dir`
/// as `mode` says, with `set_grace(SIGTERM, 1 s)` passed on by `die_with_parent`, says so, and sleeps until it is
/// killed.
fn supervise(mode: Mode, dir: &str) {
    let mut command = Command::new("sh");
    command.args(["-c", JOB, "sh", dir]);
    let (mut child, expected): (GroupChild, _) = match mode {
        Mode::Cgroup => {
            let mut how = Contain::new();
            how.require(Containment::Cgroup);
            (how.spawn(&mut command).unwrap(), Containment::Cgroup)
        }
        Mode::Reaper => (
            Contain::new().cgroup(false).spawn(&mut command).unwrap(),
            Containment::Reaper,
        ),
        Mode::Lineage | Mode::LineageForked => (
            Contain::new()
                .cgroup(false)
                .reaper(false)
                .spawn(&mut command)
                .unwrap(),
            Containment::Lineage,
        ),
        Mode::Group => (command.spawn_group().unwrap(), Containment::Group),
    };
    assert_eq!(child.containment(), expected);
    let grace = Duration::from_secs(1);
    match mode {
        Mode::Lineage | Mode::Reaper => {
            child.die_with_parent().unwrap();
            child.set_grace(signal::SIGTERM, grace);
            child.die_with_parent().unwrap();
        }
        Mode::LineageForked => {
            child.set_grace(signal::SIGTERM, grace);
            // SAFETY: no library of this test registers a `pthread_atfork` handler (std, `libc` and the workspace's crates
            // register none), so the fork runs the C library's own alone, which the condition allows in a process of any
            // number of threads.
            host::die_with_parent_forked(&mut child).unwrap();
        }
        _ => {
            child.set_grace(signal::SIGTERM, grace);
            child.die_with_parent().unwrap();
        }
    }
    println!("escapee ready");
    std::thread::sleep(Duration::from_secs(60));
}

/// Issue 32.7 for the library: a supervisor that set `set_grace(SIGTERM, 1 s)` and `die_with_parent` is killed with
/// `SIGKILL`: the job's `TERM` trap runs, then nothing of it survives (its member that ignores `TERM` included), and
/// no folder is left. Before, the job got `SIGKILL` at once.
fn library_job(test: &str, mode: Mode) {
    if let Some(dir) =
        std::env::var_os("GROUPTIMEOUT_TEST_SUPERVISOR").and(std::env::var_os("DEATH_DIR"))
    {
        return supervise(mode, dir.to_str().unwrap());
    }
    if matches!(mode, Mode::Cgroup) && cgroup_or_skip(test).is_none() {
        return;
    }
    let dir = TempDir::new(test);
    let (mut supervisor, _) = run_as_supervisor(test, &[("DEATH_DIR", dir.0.to_str().unwrap())]);
    let _supervisor = KillOnDrop::new(vec![supervisor.id()]);
    let pids = job_pids(&dir.0);
    let cleanup = KillOnDrop::new(pids.clone());
    let folder = own_folder(pids[0]);
    assert_eq!(folder.is_some(), matches!(mode, Mode::Cgroup), "{mode:?}");
    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    assert_ended_gracefully(&dir.0, &cleanup, folder.as_deref());
}

#[test]
fn a_dead_supervisors_cgroup_job_gets_its_grace() {
    library_job("a_dead_supervisors_cgroup_job_gets_its_grace", Mode::Cgroup);
}

#[test]
fn a_dead_supervisors_reaper_job_gets_its_grace() {
    library_job("a_dead_supervisors_reaper_job_gets_its_grace", Mode::Reaper);
}

#[test]
fn a_dead_supervisors_lineage_job_gets_its_grace() {
    library_job(
        "a_dead_supervisors_lineage_job_gets_its_grace",
        Mode::Lineage,
    );
}

#[test]
fn a_dead_supervisors_forked_guard_gives_the_grace() {
    library_job(
        "a_dead_supervisors_forked_guard_gives_the_grace",
        Mode::LineageForked,
    );
}

#[test]
fn a_dead_supervisors_group_gets_its_grace() {
    library_job("a_dead_supervisors_group_gets_its_grace", Mode::Group);
}
