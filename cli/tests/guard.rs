//! `GroupChild::die_with_parent`: the group dies with the process that holds it, and the guard leaves nothing
//! behind when the group ends normally. Death is read from `/proc/PID/stat`.

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use grouptimeout::{GroupChild, GroupCommandExt};
use grouptimeout_cli::host;
use grouptimeout_job::JobChildExt as _;

const LONG: Duration = Duration::from_secs(60);

/// Where the helper test writes the pids of its command's group.
const PIDS_VAR: &str = "GROUPTIMEOUT_GUARD_PIDS";
/// `shell` (the default guard) or `fork` (`host::die_with_parent_forked`).
const HOW_VAR: &str = "GROUPTIMEOUT_GUARD_HOW";

/// A leader that ignores TERM, INT and HUP and sends TERM to its own group twice: at once (racing the guard's
/// start) and after a line on stdin (the guard is armed by then); then starts a background `sleep` and a member that
/// ignores TERM, INT and HUP, prints their pids and its own, and waits.
const COMMAND: &str = "trap '' TERM INT HUP; kill -TERM 0; read line; kill -TERM 0; \
                       sleep 30 & echo $!; (trap '' TERM INT HUP; exec sleep 31) & echo $!; echo $$; wait";

fn supervisor_killed(how: &str) {
    let file = temp_path(&format!("guard-pids-{how}"));
    let exe = std::env::current_exe().unwrap();
    let mut helper = Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "arrange_and_hang",
            "--test-threads=1",
        ])
        .env(PIDS_VAR, &file)
        .env(HOW_VAR, how)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pids = pids_from_file(&file, 4);
    let written = pids.len() == 4;
    let _cleanup = KillOnDrop::new(pids.clone());
    if !written {
        let _ = helper.kill();
        let _ = helper.wait();
        panic!("the helper did not report its group: {pids:?}");
    }
    let pgid = pids[3];
    // The leader, two background members and the guard (waited for, bounded).
    let members = wait_for_members(pgid, 4);
    assert_eq!(members.len(), 4, "{members:?} vs {pids:?}");
    let _cleanup_all = KillOnDrop::new(members.clone());
    helper.kill().unwrap();
    assert_eq!(helper.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert_eq!(survivors_after(Duration::from_secs(2), &members), []);
}

#[test]
fn the_group_dies_with_a_killed_supervisor() {
    supervisor_killed("shell");
}

#[test]
fn the_group_dies_with_a_killed_supervisor_forked_guard() {
    supervisor_killed("fork");
}

/// Started by the two tests above: arranges `die_with_parent`, reports the group's pids, and waits to be killed.
#[test]
#[ignore = "run by the_group_dies_with_a_killed_supervisor"]
fn arrange_and_hang() {
    let file = std::env::var_os(PIDS_VAR).expect("run by the_group_dies_with_a_killed_supervisor");
    let mut child = Command::new("sh")
        .args(["-c", COMMAND])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    if std::env::var_os(HOW_VAR).is_some_and(|how| how == "fork") {
        // SAFETY: no library of this test registers a `pthread_atfork` handler (std, `libc` and the workspace's crates
        // register none), so the fork runs the C library's own alone, which the condition allows in a process of any
        // number of threads.
        host::die_with_parent_forked(&mut child).unwrap();
    } else {
        child.die_with_parent().unwrap();
    }
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let pids: Vec<String> = (0..3).map(|_| lines.next().unwrap().unwrap()).collect();
    assert_eq!(pids[2], child.id().to_string());
    fs::write(&file, format!("{} {}\n", pids.join(" "), child.id())).unwrap();
    // Killed long before this; a bounded wait in case the killer fails (the drop then kills the group).
    let _ = child.wait_timeout(Duration::from_secs(30));
}

/// A group whose leader waits for a line on stdin, with a guard; returns it with the guard's pid and the inode of
/// the guard's pipe.
fn guarded(script: &str, piped_out: bool) -> (GroupChild, u32, String) {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &format!("read line; {script}")])
        .stdin(Stdio::piped());
    if piped_out {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = cmd.spawn_group().unwrap();
    child.die_with_parent().unwrap();
    child.die_with_parent().unwrap(); // a second call does nothing
    let members = live_members(child.id());
    let guards: Vec<u32> = members
        .iter()
        .copied()
        .filter(|&p| p != child.id())
        .collect();
    assert_eq!(guards.len(), 1, "{members:?}");
    let pipe = fs::read_link(format!("/proc/{}/fd/0", guards[0]))
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(pipe.starts_with("pipe:"), "{pipe}");
    // Its pipe, /dev/null as stderr, and nothing of this process's but what every child inherits.
    let extra: Vec<u32> = fds_of(guards[0]).into_iter().filter(|&fd| fd > 2).collect();
    let inheritable: Vec<u32> = fds_of(std::process::id())
        .into_iter()
        .filter(|&fd| !is_cloexec(fd))
        .collect();
    assert!(
        extra.iter().all(|fd| inheritable.contains(fd)),
        "the guard holds {extra:?}; only {inheritable:?} are inherited by every child"
    );
    assert!(
        !fds_of(guards[0]).contains(&1),
        "the guard keeps its stdout"
    );
    (child, guards[0], pipe)
}

/// The descriptors open in process `pid`.
fn fds_of(pid: u32) -> Vec<u32> {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Whether this process's descriptor `fd` is close-on-exec (`/proc/self/fdinfo`: `flags` in octal).
fn is_cloexec(fd: u32) -> bool {
    let info = fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|flags| flags & libc::O_CLOEXEC as u32 != 0)
}

/// The guard was ended and reaped (not a zombie of ours), and this process no longer holds its pipe.
fn assert_no_guard_left(guard: u32, pipe: &str) {
    assert_eq!(state_and_group(guard), None, "the guard {guard} is left");
    let held = fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .any(|e| fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy() == pipe));
    assert!(!held, "this process still holds the guard's pipe {pipe}");
}

fn go(child: &mut GroupChild) {
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
}

#[test]
fn a_normal_exit_leaves_no_guard() {
    let (mut child, guard, pipe) = guarded("sleep 30 & exit 3", false);
    go(&mut child);
    let outcome = child.wait_timeout(LONG).unwrap();
    assert_eq!(outcome.status().code(), Some(3));
    assert_no_guard_left(guard, &pipe);
    assert!(eventually(Duration::from_secs(2), || live_members(
        child.id()
    )
    .is_empty()));
}

#[test]
fn a_timeout_leaves_no_guard() {
    let (mut child, guard, pipe) = guarded("", false);
    let outcome = child.wait_timeout(Duration::from_millis(200)).unwrap();
    assert!(outcome.timed_out());
    assert_no_guard_left(guard, &pipe);
}

#[test]
fn a_drop_leaves_no_guard() {
    let (child, guard, pipe) = guarded("", false);
    drop(child);
    assert_no_guard_left(guard, &pipe);
}

#[test]
fn kept_leftovers_are_left_as_they_were_and_unguarded() {
    let (mut child, guard, pipe) = guarded("sleep 30 & echo $!", true);
    child.set_kill_leftovers(false);
    go(&mut child);
    let out: ChildStdout = child.stdout.take().unwrap();
    let leftover = read_pid(out);
    let _cleanup = KillOnDrop::new(vec![leftover]);
    assert!(!child.wait_timeout(LONG).unwrap().timed_out());
    assert_no_guard_left(guard, &pipe);
    // Still running, in the group, and not stopped; nothing else of the group is left.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(300) {
        let (state, group) = state_and_group(leftover).expect("the leftover is gone");
        assert!(
            "RSD".contains(state) && group == child.id(),
            "{state} {group}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(live_members(child.id()), [leftover]);
}

#[test]
fn a_capture_leaves_no_guard_and_closes_its_pipes_at_once() {
    let (mut child, guard, pipe) =
        guarded("echo out; echo err >&2; sleep 30 >/dev/null 2>&1 &", true);
    child.set_kill_leftovers(false);
    go(&mut child);
    let pgid = child.id();
    let captured = child.wait_with_output_timeout(LONG).unwrap();
    let _cleanup = KillOnDrop::new(live_members(pgid));
    assert_eq!(captured.stdout, b"out\n");
    assert_eq!(captured.stderr, b"err\n");
    assert!(captured.pipes_closed);
    assert_no_guard_left(guard, &pipe);
}

/// Whether `unshare` can make private PID and mount namespaces here (root, and `unshare` installed); skips `test`
/// otherwise.
fn namespaces_or_skip(test: &str) -> bool {
    let ok = Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip_or_fail(
            test,
            "unshare -p -f --mount-proc fails (not root, or util-linux's unshare missing)",
        );
    }
    ok
}

/// Inside a private PID namespace (so that the kill by name reaches only this test's processes): runs the tool on a
/// command, waits (bounded) for its guard to leave the tool's group, runs `kill_by_name`, and says whether the
/// command died then (`dead`) or not (`alive`), read from the namespace's `/proc/PID/stat`. After a death it waits
/// (bounded) for the guard to end too, and panics if the command's cgroup (as root the tool makes one) is left.
fn killed_by_name(kill_by_name: &str) -> String {
    const SCRIPT: &str = r#"
        # guard-name-test: /proc/1 must be this script, or this /proc is not the private namespace's.
        grep -q guard-name-test /proc/1/cmdline || { echo "not in a private PID namespace"; exit 99; }
        dir=$(mktemp -d)
        "$1" 60 sh -c 'echo $$ > "$1"; exec sleep 60' sh "$dir/pid" &
        tool=$!
        i=0
        # The guard renamed itself (group-guard; a job in a cgroup has its keeper, group-keeper, instead) and left the
        # tool's group: a kill by the tool's name misses it. Where the tool takes the portable branches, its guard is
        # the shell guard: an `sh` child of the tool in the command's group, other than the command.
        until [ -s "$dir/pid" ] && { [ -n "$(pgrep -o -x 'group-(guard|keeper)')" ] \
            && [ "$(ps -o pgid= -p "$(pgrep -o -x 'group-(guard|keeper)')" | tr -d ' ')" != "$tool" ] \
            || pgrep -P "$tool" -g "$(cat "$dir/pid")" -x sh | grep -qvx "$(cat "$dir/pid")"; } \
            || [ $i -ge 200 ]; do
            sleep 0.05; i=$((i + 1))
        done
        pid=$(cat "$dir/pid"); rm -r "$dir"
        folder=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
        $2 >/dev/null || echo "no process killed by name"
        i=0
        while [ $i -lt 100 ]; do
            state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
            case "$state" in ''|Z|X) break;; esac
            sleep 0.05; i=$((i + 1))
        done
        [ $i -lt 100 ] || { echo alive; exit 0; }
        # The guard (for a job in a cgroup: its keeper) removes the job's cgroup after the command's death: this
        # script's exit ends the namespace and kills the guard, so it waits for the guard first (it left an empty
        # folder 1 in 2 runs under load), while one runs (the keeper, a child of this script once the tool died, stays
        # a zombie).
        running_guard() {
            for g in $(pgrep -x 'group-(guard|keeper)'); do
                case "$(sed 's/.*) //' "/proc/$g/stat" 2>/dev/null | cut -c1)" in ''|Z|X) ;; *) return 0;; esac
            done
            return 1
        }
        i=0
        while running_guard && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
        echo dead
        echo "folder:$folder"
    "#;
    let out = Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "sh", "-c", SCRIPT, "sh"])
        .arg(env!("CARGO_BIN_EXE_grouptimeout"))
        .arg(kill_by_name)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (said, folder) = stdout.split_once("\nfolder:").unwrap_or((&stdout, ""));
    let folder = folder.trim();
    // The command's cgroup is a job folder of its own only where the tool made one (not on the portable branches,
    // nor in reaper mode): the cgroup the test runs in is not the tool's to remove.
    if folder
        .rsplit('/')
        .next()
        .is_some_and(|name| name.starts_with("grouptimeout-"))
    {
        let path = cgroup_folder(folder).unwrap();
        assert!(
            !path.exists(),
            "{kill_by_name}: {} was left behind",
            path.display()
        );
    }
    said.trim().to_string()
}

/// `pkill -x` and `killall` by the tool's name kill the tool, not its guard, which then kills the command's group.
#[test]
fn the_tools_guard_survives_a_kill_by_the_tools_name() {
    let test = "the_tools_guard_survives_a_kill_by_the_tools_name";
    if !namespaces_or_skip(test) {
        return;
    }
    for (tool, kill) in [
        ("pkill", "pkill -9 -x grouptimeout"),
        ("pkill", "pkill -9 grouptimeout"),
        ("killall", "killall -9 grouptimeout"),
    ] {
        if Command::new(tool).arg("-V").output().is_err() {
            return skip_or_fail(test, &format!("{tool} is missing (procps, psmisc)"));
        }
        assert_eq!(killed_by_name(kill), "dead", "{kill}");
    }
}

/// `/bin/true` bound over `/bin/sh` (in a mount namespace of its own): on Linux the guard is the keeper program in its
/// guard mode, which needs no shell, and is armed (before, the guard was `/bin/sh` there too, and its start failed);
/// where the guard is the shell (`--cfg grouptimeout_portable`), its start fails saying that `/bin/sh` exited without
/// arming it, not that something killed it.
#[test]
fn a_sh_that_exits_at_once_is_named_in_the_error() {
    let test = "a_sh_that_exits_at_once_is_named_in_the_error";
    if !namespaces_or_skip(test) {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount --bind /bin/true /bin/sh && exec \"$@\"",
            "sh",
        ])
        .arg(exe)
        .args([
            "--ignored",
            "--exact",
            "guard_with_a_false_sh",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(PIDS_VAR, "set")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if cfg!(all(target_os = "linux", not(grouptimeout_portable))) {
        assert!(
            stdout.contains("GUARDED") && stdout.contains("1 passed"),
            "{stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let error = stdout
        .lines()
        .find_map(|l| l.split_once("ERROR: ").map(|(_, error)| error))
        .unwrap_or_else(|| {
            panic!(
                "no error reported: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(
        error.contains("/bin/sh exited (status 0) without arming the guard"),
        "{error}"
    );
    assert!(!error.contains("killed"), "{error}");
}

/// Run by `a_sh_that_exits_at_once_is_named_in_the_error` with a `/bin/sh` that is `/bin/true`.
#[test]
#[ignore = "run by a_sh_that_exits_at_once_is_named_in_the_error"]
fn guard_with_a_false_sh() {
    assert!(
        std::env::var_os(PIDS_VAR).is_some(),
        "run by a_sh_that_exits_at_once_is_named_in_the_error"
    );
    let mut child = Command::new("sleep").arg("60").spawn_group().unwrap();
    if cfg!(all(target_os = "linux", not(grouptimeout_portable))) {
        child
            .die_with_parent()
            .expect("the program guard needs no shell");
        let guard = child.guard_id().expect("a guard");
        // (It names itself at its start: until then its name is its memory file's, `memfd:group-kee…`.)
        assert!(eventually(Duration::from_secs(10), || fs::read_to_string(
            format!("/proc/{guard}/comm")
        )
        .is_ok_and(|name| name == "group-guard\n")));
        println!("GUARDED");
        return;
    }
    let error = child
        .die_with_parent()
        .expect_err("a guard with /bin/true as /bin/sh");
    assert_eq!(child.guard_id(), None);
    println!("ERROR: {error}");
}

/// A guard that cannot be reaped at once after its `SIGKILL` (traced by a stopped `strace`: its exit goes to the
/// tracer first) must not keep the drop waiting past its bound (about a second each for the leader and the guard).
#[test]
fn a_guard_that_cannot_be_reaped_does_not_block_the_drop() {
    let test = "a_guard_that_cannot_be_reaped_does_not_block_the_drop";
    let mut child = Command::new("sleep").arg("60").spawn_group().unwrap();
    child.die_with_parent().unwrap();
    let guard = child.guard_id().unwrap();
    let Ok(mut strace) = Command::new("strace")
        .args(["-o", "/dev/null", "-p", &guard.to_string()])
        .stderr(Stdio::null())
        .spawn()
    else {
        return skip_or_fail(test, "strace is missing");
    };
    let traced = eventually(Duration::from_secs(10), || {
        fs::read_to_string(format!("/proc/{guard}/status"))
            .unwrap_or_default()
            .lines()
            .any(|l| l.starts_with("TracerPid:") && l.split_whitespace().nth(1) != Some("0"))
    });
    let stopped = traced
        && host::signal_child(&mut strace, libc::SIGSTOP).is_ok()
        && eventually(Duration::from_secs(5), || {
            state_and_group(strace.id()).is_some_and(|(s, _)| s == 'T')
        });
    if !stopped {
        let _ = strace.kill();
        let _ = strace.wait();
        panic!("strace did not attach to the guard, or did not stop (attached: {traced})");
    }
    // Bounded: if the drop blocks, strace is killed after 20 s (the guard can be reaped then) and the test fails.
    let took = returns_within(
        Duration::from_secs(20),
        move || drop(child),
        || {
            let _ = strace.kill();
        },
    );
    // The guard, left unreaped by the drop, dies with strace and stays a zombie of this test process until it exits.
    let _ = strace.kill();
    let _ = strace.wait();
    let took = took.expect("the drop blocked on the traced guard");
    assert!(took < Duration::from_secs(6), "the drop took {took:?}");
    assert!(
        eventually(Duration::from_secs(5), || is_dead(guard)),
        "{:?} {took:?}",
        state_and_group(guard)
    );
}
