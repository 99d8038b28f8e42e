//! Signals and a contained job (issue 32, points 5 and 6): a supervisor nested in the job keeps its own signal plan
//! (only `SIGKILL` reaches everything, as systemd's `KillMode=mixed`), and the job's keeper, stopped by `kill -STOP`,
//! never keeps a wait past the command's exit; `command_id` names the command. In cgroup mode (where a cgroup can be
//! made), reaper mode and lineage mode. Death is read from `/proc/PID/stat`.
#![cfg(unix)]

mod common;
#[path = "common/job.rs"]
mod job_common;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use super::common::*;
    use super::job_common::*;

    use std::fs;
    use std::io::{BufRead as _, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use grouptimeout::GroupChild;
    use grouptimeout_job::{Contain, Containment, JobChildExt as _};

    const LONG: Duration = Duration::from_secs(60);
    const TOOL: &str = env!("CARGO_BIN_EXE_grouptimeout");

    /// How a test of `mode` spawns: `None` (skipped, said why) where the mode cannot be had here.
    fn contain(test: &str, mode: Containment) -> Option<Contain> {
        let mut how = Contain::new();
        match mode {
            Containment::Cgroup => return cgroup_or_skip(test),
            Containment::Reaper => how.cgroup(false),
            _ => how.cgroup(false).reaper(false),
        };
        how.require(mode);
        Some(how)
    }

    /// Defines one test per mode for a scenario `fn(test, &Contain, Containment)`.
    macro_rules! each_mode {
        ($scenario:ident, $cgroup:ident, $reaper:ident, $lineage:ident) => {
            #[test]
            fn $cgroup() {
                let test = stringify!($cgroup);
                if let Some(how) = contain(test, Containment::Cgroup) {
                    $scenario(test, &how, Containment::Cgroup);
                }
            }
            #[test]
            fn $reaper() {
                let test = stringify!($reaper);
                if let Some(how) = contain(test, Containment::Reaper) {
                    $scenario(test, &how, Containment::Reaper);
                }
            }
            #[test]
            fn $lineage() {
                let test = stringify!($lineage);
                if let Some(how) = contain(test, Containment::Lineage) {
                    $scenario(test, &how, Containment::Lineage);
                }
            }
        };
    }

    /// The tool, `-s USR1`, over a shell whose `USR1` and `ALRM` traps write their names to `dir/trapped` (the USR1
    /// trap then exits 3 when `exit_on_usr1`); the shell starts a `setsid` escapee (its pid in `dir/escapee`) and a
    /// member of its group, says `dir/ready`, and waits.
    fn nested_tool(
        how: &Contain,
        mode: Containment,
        dir: &std::path::Path,
        exit_on_usr1: bool,
    ) -> GroupChild {
        let d = dir.display();
        let on_usr1 = if exit_on_usr1 { "; exit 3" } else { "" };
        let script = format!(
            "trap 'echo USR1 >> {d}/trapped{on_usr1}' USR1; trap 'echo ALRM >> {d}/trapped' ALRM; \
             setsid sleep 30 & echo $! > {d}/escapee; sleep 30 & echo > {d}/ready; \
             while :; do wait; done"
        );
        let child = how
            .spawn(
                Command::new(TOOL)
                    .args(["-s", "USR1", "25", "sh", "-c", &script])
                    .stdin(Stdio::null()),
            )
            .expect("spawn_contained");
        assert_eq!(child.containment(), mode);
        assert!(
            eventually(Duration::from_secs(20), || dir.join("ready").exists()),
            "{mode:?}: the nested command never got ready"
        );
        child
    }

    fn trapped(dir: &std::path::Path) -> String {
        fs::read_to_string(dir.join("trapped")).unwrap_or_default()
    }

    fn escapee(dir: &std::path::Path) -> u32 {
        fs::read_to_string(dir.join("escapee"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// A library job whose command is the tool (`-s USR1`): a catchable signal sent to the job (`signal`, and the
    /// deadline's grace signal), `ALRM`, reaches the tool, which times out and sends its own `USR1` to its command;
    /// the command never gets the `ALRM` itself (it did when every process of the job was signalled one by one: then
    /// both traps ran). The `SIGKILL` after the grace still reaches everything: the nested job's `setsid` escapee,
    /// alive until then (the catchable signal did not reach it), dies with the job.
    fn nested_supervisor_keeps_its_plan(test: &str, how: &Contain, mode: Containment) {
        // `signal`: the tool's command traps USR1 and exits; the tool exits 124 (it timed out).
        let dir = TempDir::new(&format!("{test}-signal"));
        let mut child = nested_tool(how, mode, &dir.0, true);
        let _cleanup = KillOnDrop::new(vec![escapee(&dir.0)]);
        child.signal(libc::SIGALRM).unwrap();
        let outcome = child.wait_timeout(LONG).unwrap();
        assert_eq!(outcome.to_string(), "exited with status 124", "{mode:?}");
        assert_eq!(
            trapped(&dir.0),
            "USR1\n",
            "{mode:?}: what the command's traps saw"
        );
        assert!(
            is_dead(escapee(&dir.0)),
            "{mode:?}: the nested job's escapee survived"
        );

        // The deadline's grace signal: the command traps USR1 and runs on; the kill after it ends the whole job.
        let dir = TempDir::new(&format!("{test}-grace"));
        let mut child = nested_tool(how, mode, &dir.0, false);
        let tool = child.command_id();
        let _folders = RemoveFoldersOf(tool);
        let escapee = escapee(&dir.0);
        let _cleanup = KillOnDrop::new(vec![escapee]);
        let handle = child.handle();
        let trap_file = dir.0.clone();
        // Kills the job (a handle's `SIGKILL`) once the trap ran, or after 20 s; says whether the escapee lived then.
        let killer = std::thread::spawn(move || {
            eventually(Duration::from_secs(20), || {
                trapped(&trap_file).contains("USR1")
            });
            std::thread::sleep(Duration::from_millis(200));
            let alive = !is_dead(escapee);
            handle.kill().unwrap();
            alive
        });
        child.set_grace(libc::SIGALRM, LONG);
        let started = Instant::now();
        let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
        let alive_before_the_kill = killer.join().unwrap();
        assert_eq!(
            outcome.to_string(),
            "timed out; killed by signal 9",
            "{mode:?}"
        );
        assert!(
            started.elapsed() < LONG / 2,
            "{mode:?}: {:?}",
            started.elapsed()
        );
        // Only the nested tool's USR1, never the job's ALRM. In reaper mode the nested tool's keeper may see the tool
        // die of the job's SIGKILL a moment before the SIGKILL reaches it, and give the command the nested tool's
        // death plan first (its USR1 once more): the kill walks the job's processes one by one.
        let saw = trapped(&dir.0);
        assert!(
            saw.starts_with("USR1\n") && saw.lines().all(|l| l == "USR1"),
            "{mode:?}: what the command's traps saw: {saw:?}"
        );
        assert!(
            alive_before_the_kill,
            "{mode:?}: the nested job's escapee died before the SIGKILL"
        );
        assert_eq!(
            survivors_after(Duration::from_secs(5), &[escapee]),
            [] as [u32; 0],
            "{mode:?}: the SIGKILL missed the nested job's escapee"
        );
    }

    /// The nested tool `0`, as root, made a cgroup for its job in its own: inside the job's cgroup in cgroup mode (and
    /// removed with it), else beside this process's, where the SIGKILL of the tool and its keeper leaves it (empty).
    /// Removed when dropped (however the test ends) once empty (its processes may still be dying), within 10 s.
    struct RemoveFoldersOf(u32);

    impl Drop for RemoveFoldersOf {
        fn drop(&mut self) {
            eventually(Duration::from_secs(10), || {
                job_folders_made_by(self.0)
                    .into_iter()
                    .all(|folder| fs::remove_dir(folder).is_ok())
            });
        }
    }

    each_mode!(
        nested_supervisor_keeps_its_plan,
        cgroup_a_nested_supervisor_keeps_its_plan,
        reaper_a_nested_supervisor_keeps_its_plan,
        lineage_a_nested_supervisor_keeps_its_plan
    );

    /// Spawns `script` (under `sh -c`, stdin and stdout piped) and reads its first line.
    fn spawn_reading(how: &Contain, mode: Containment, script: &str) -> (GroupChild, String) {
        let mut command = Command::new("sh");
        command.args(["-c", script]).stdin(Stdio::piped());
        spawn_command_reading(how, mode, &mut command)
    }

    /// Spawns `command` (stdout piped), checks that it got `mode`, and reads its first line.
    fn spawn_command_reading(
        how: &Contain,
        mode: Containment,
        command: &mut Command,
    ) -> (GroupChild, String) {
        let mut child = how
            .spawn(command.stdout(Stdio::piped()))
            .expect("spawn_contained");
        assert_eq!(child.containment(), mode);
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("a line from the command");
        (child, line.trim().to_string())
    }

    fn send(signal: &str, pid: u32) {
        let ok = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal} {pid}");
    }

    fn stopped(pid: u32) -> bool {
        state_and_group(pid).is_some_and(|(state, _)| state == 'T')
    }

    /// `command_id` is the command's pid (the keeper's child in a kept job, `id` itself in lineage mode), and
    /// `in_job` says so. `kill -STOP` of the keeper (`id`) stops only the keeper; the command then exits: the wait
    /// still returns with the command's status long before its deadline (and `wait`, with none, returns at all), and
    /// nothing of the job is left.
    fn a_stopped_keeper_keeps_no_wait(test: &str, how: &Contain, mode: Containment) {
        let kept = mode != Containment::Lineage;
        // The command leaves a member of its group behind: its keeper must wait for the verdict.
        let (mut child, line) = spawn_reading(how, mode, "sleep 300 & echo $! $$; read x; exit 5");
        let pids: Vec<u32> = line.split(' ').map(|p| p.parse().unwrap()).collect();
        let (left, command) = (pids[0], pids[1]);
        let _cleanup = KillOnDrop::new(vec![left, command]);
        assert_eq!(child.command_id(), command, "{mode:?}");
        assert_eq!(child.command_id() != child.id(), kept, "{mode:?}");
        assert!(child.in_job(child.command_id()), "{mode:?}");
        assert!(child.in_job(left), "{mode:?}");
        let folder = (mode == Containment::Cgroup).then(|| job_folder(command).unwrap());
        if kept {
            send("-STOP", child.id());
            assert!(
                eventually(Duration::from_secs(20), || stopped(child.id())),
                "{mode:?}"
            );
        }
        drop(child.stdin.take()); // the command reads end of file and exits
        let started = Instant::now();
        let outcome = child.wait_timeout(LONG).unwrap();
        assert_eq!(outcome.to_string(), "exited with status 5", "{mode:?}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{mode:?}: the wait returned after {:?}",
            started.elapsed()
        );
        assert_eq!(
            survivors_after(Duration::from_secs(5), &[left, command]),
            [] as [u32; 0]
        );
        if let Some(folder) = folder {
            assert!(
                !folder.exists(),
                "{mode:?}: {} left behind",
                folder.display()
            );
        }

        // A command that leaves nothing, and a wait with no deadline.
        let (mut child, line) = spawn_reading(how, mode, "echo $$; read x; exit 6");
        let command: u32 = line.parse().unwrap();
        let _cleanup = KillOnDrop::new(vec![command]);
        assert_eq!(child.command_id(), command, "{mode:?}");
        let keeper = child.id();
        // The keeper is our child, unreaped: a pidfd opened now names it, and a signal sent through it never reaches
        // another process that has its pid once the wait below reaped it (by `kill`, `-CONT` could).
        let keeper_fd = pidfd_of(keeper).unwrap();
        if kept {
            send("-STOP", keeper);
            assert!(
                eventually(Duration::from_secs(20), || stopped(keeper)),
                "{mode:?}"
            );
        }
        drop(child.stdin.take());
        let (tx, rx) = mpsc::channel();
        let took = returns_within(
            Duration::from_secs(20),
            move || {
                let _ = tx.send(child.wait().map(|status| status.code()));
            },
            || {
                signal_through(&keeper_fd, libc::SIGCONT);
            },
        );
        assert!(
            took.is_some(),
            "{mode:?}: a wait with no deadline did not return ({test})"
        );
        assert_eq!(rx.recv().unwrap().unwrap(), Some(6), "{mode:?}");
        assert!(is_dead(command), "{mode:?}");
    }

    each_mode!(
        a_stopped_keeper_keeps_no_wait,
        cgroup_a_stopped_keeper_keeps_no_wait,
        reaper_a_stopped_keeper_keeps_no_wait,
        lineage_a_stopped_keeper_keeps_no_wait
    );

    /// A kept job's command that left its group (`setpgrp`) still gets a catchable signal sent to the job: by its
    /// pid (the group's signal misses it), and once (its handler counts). Passes on 138652e too (each process of the
    /// job was signalled then): it checks that the group-only signal still reaches a command outside its group.
    fn a_command_that_left_its_group_gets_the_signal(test: &str, how: &Contain, mode: Containment) {
        if !have(test, "perl", "-v") {
            return;
        }
        let script = "setpgrp(0, 0); my $n = 0; $SIG{TERM} = sub { $n++ }; \
                      $| = 1; print \"$$\\n\"; sleep 1 until $n; sleep 1; exit 40 + $n";
        let (mut child, line) =
            spawn_command_reading(how, mode, Command::new("perl").args(["-e", script]));
        let command: u32 = line.parse().unwrap();
        let _cleanup = KillOnDrop::new(vec![command]);
        assert_eq!(child.command_id(), command, "{mode:?}");
        if mode != Containment::Lineage {
            // (In lineage mode the command leads its group: `setpgrp` leaves it there.)
            let group = state_and_group(command).unwrap().1;
            assert_ne!(group, child.id(), "{mode:?}: still in its group");
        }
        child.signal(libc::SIGTERM).unwrap();
        let outcome = child.wait_timeout(LONG).unwrap();
        assert_eq!(outcome.to_string(), "exited with status 41", "{mode:?}");
    }

    each_mode!(
        a_command_that_left_its_group_gets_the_signal,
        cgroup_a_command_that_left_its_group_gets_the_signal,
        reaper_a_command_that_left_its_group_gets_the_signal,
        lineage_a_command_that_left_its_group_gets_the_signal
    );
}
