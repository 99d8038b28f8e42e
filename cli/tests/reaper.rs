//! Reaper mode (issue 22.2): the job's keeper is a child subreaper, so every process the command started stays its
//! descendant however it daemonised, and dies with the job. The daemons of the issue (`ssh-agent` and `gpg-agent`,
//! where installed; an `env -i setsid` escapee; a double-forked daemon) must all be dead when the wait returns: as
//! root (the cgroup turned off), as nobody (through `setpriv`), and as root in a container-like setting (a private
//! mount namespace with cgroup2 read-only and `CAP_SYS_PTRACE` dropped); through the library and through the tool.
//! The same again where `clone3` is refused (a seccomp filter that answers it with `ENOSYS`, as container runtimes'
//! default profiles do, or `EPERM`, as older ones did): the keeper falls back to `clone`, and the job keeps its
//! boundary (the cgroup as root, the reaper otherwise). Death is read from `/proc/PID/stat` (a zombie is dead).
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
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    use std::path::PathBuf;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use grouptimeout::GroupChild;
    use grouptimeout_job::{Contain, Containment, JobChildExt as _};

    const LONG: Duration = Duration::from_secs(60);
    /// Set in a re-run of this binary (as nobody, or in the container-like setting): the body runs, with the mode
    /// the library picks by default.
    const INNER: &str = "GROUPTIMEOUT_TEST_REAPER_INNER";
    /// Set in a re-run whose test thread must refuse `clone3` with `EPERM` itself (see [`refuse_clone3`]: libtest
    /// cannot start a test's thread under such a filter, so it cannot wrap the re-run).
    const EPERM_INSIDE: &str = "GROUPTIMEOUT_TEST_EPERM_INSIDE";

    /// The script of the issue: starts the daemons (the agents where installed) and prints one pid a line, then
    /// `ready`, and waits. `$1` is a folder the agents may use (the user's own).
    fn daemons_script(test: &str) -> String {
        // The command's cgroup first (`in PATH`): a job folder of the crate's in cgroup mode.
        let mut script = String::from("d=$1\necho \"in $(sed -n 's/^0:://p' /proc/$$/cgroup)\"\n");
        if runs("ssh-agent", "-k") || fs::metadata("/usr/bin/ssh-agent").is_ok() {
            script.push_str(
                "eval \"$(ssh-agent -s -a \"$d/ssh\" 2>/dev/null)\" >/dev/null; echo \"$SSH_AGENT_PID\"\n",
            );
        } else {
            skip_or_fail(test, "ssh-agent is not installed: the job runs without it");
        }
        if runs("gpg-agent", "--version") && runs("gpg-connect-agent", "--version") {
            // gpg-agent daemonises (a fork) and makes itself non-dumpable; it writes no pid file, so the agent of this
            // folder is asked for its pid (`getinfo pid` answers `D PID`), never looked for by a name.
            script.push_str(
                "gpg-agent --homedir \"$d/gpg\" --daemon >/dev/null 2>&1\n\
                 gpg-connect-agent --no-autostart --homedir \"$d/gpg\" 'getinfo pid' /bye 2>/dev/null | sed -n 's/^D //p'\n",
            );
        } else {
            skip_or_fail(test, "gpg-agent is not installed: the job runs without it");
        }
        // The escapees hold no pipe of the test's: one that survives (a failure) must not keep a read waiting. The
        // double-forked one writes its pid to a file, which is waited for (at most 30 s: on a busy machine the chain may
        // take longer than any fixed pause), so that its pid comes before `ready`.
        script.push_str(
            "env -i setsid sleep 301 >/dev/null 2>&1 & echo $!\n\
             (setsid sh -c 'sleep 302 >/dev/null 2>&1 & echo $! > \"$1/302\"' sh \"$d\" &)\n\
             i=0; while [ ! -s \"$d/302\" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done\n\
             cat \"$d/302\" || echo 'no pid file of sleep 302'\n\
             echo ready\n\
             exec sleep 100\n",
        );
        script
    }

    /// Removes a test's folder when dropped, however the test ends.
    struct RemoveDir(PathBuf);

    impl Drop for RemoveDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// A folder for the agents, which the user running the job may write into.
    fn agent_folder(name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = temp_path(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        fs::create_dir(dir.join("gpg")).unwrap();
        fs::set_permissions(dir.join("gpg"), fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    /// Reads pid lines up to `ready` from `out` (the pids of what the script started, as the script or the agents
    /// themselves said them). The path of an `in PATH` line (the command's cgroup, for [`check_cgroup`]) comes second.
    fn pids_until_ready(out: impl std::io::Read) -> (Vec<u32>, String) {
        let mut pids = Vec::new();
        let mut cgroup = String::new();
        for line in BufReader::new(out).lines() {
            let line = line.unwrap();
            if line.trim() == "ready" {
                break;
            }
            if let Some(path) = line.strip_prefix("in ") {
                path.clone_into(&mut cgroup);
                continue;
            }
            pids.push(
                line.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("not a pid: {line:?}")),
            );
        }
        (pids, cgroup)
    }

    /// Whether the command's cgroup (`cgroup`, from `/proc/PID/cgroup`) fits `mode`: a job folder of the crate's in
    /// cgroup mode, the caller's own cgroup otherwise.
    fn check_cgroup(cgroup: &str, mode: Containment) {
        let in_job_folder = cgroup
            .rsplit('/')
            .next()
            .is_some_and(|name| name.starts_with("grouptimeout-"));
        assert_eq!(
            in_job_folder,
            mode == Containment::Cgroup,
            "{mode:?}: the command ran in {cgroup}"
        );
    }

    /// The library's scenario: the daemons' job, killed at its deadline; every daemon dead when the wait returns. The
    /// job must get `mode`. With [`EPERM_INSIDE`] set, this thread refuses `clone3` with `EPERM` before the spawn
    /// (after the script was made: `runs` spawns through `posix_spawn`, which then fails).
    fn library_scenario(test: &str, how: &Contain, mode: Containment) {
        let dir = agent_folder(&format!("{test}-agents"));
        let _remove = RemoveDir(dir.clone());
        let script = daemons_script(test);
        if std::env::var_os(EPERM_INSIDE).is_some() {
            refuse_clone3(libc::EPERM).unwrap();
        }
        let mut child = how
            .spawn(
                Command::new("sh")
                    .args(["-c", &script, "sh"])
                    .arg(&dir)
                    .stdout(Stdio::piped()),
            )
            .unwrap();
        let (pids, cgroup) = pids_until_ready(child.stdout.take().unwrap());
        let _cleanup = KillOnDrop::new(pids.clone());
        assert_eq!(child.containment(), mode);
        check_cgroup(&cgroup, mode);
        assert!(pids.len() >= 2, "{pids:?}");
        for &pid in &pids {
            assert!(child.in_job(pid), "{pid} is the job's");
        }
        let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
        assert_eq!(outcome.to_string(), "timed out; killed by signal 9");
        let alive: Vec<u32> = pids.iter().copied().filter(|&p| !is_dead(p)).collect();
        assert_eq!(alive, [] as [u32; 0], "alive when the wait returned");
        let reached: Vec<u32> = child.leftovers().iter().map(|l| l.pid).collect();
        for pid in &pids {
            assert!(reached.contains(pid), "{pid} not in leftovers {reached:?}");
        }
    }

    /// How a re-run of this binary is started: as root (as this process runs), as nobody, or as container-like root.
    #[derive(Clone, Copy, Debug)]
    enum As {
        Root,
        Nobody,
        ContainerRoot,
    }

    /// `program args` as `who`: through `setpriv` as nobody; or in a private mount namespace with cgroup2 remounted
    /// read-only and `CAP_SYS_PTRACE` dropped. `None` (skipped) where that cannot be done here.
    fn command_as(
        test: &str,
        who: As,
        program: &std::path::Path,
        args: &[&str],
    ) -> Option<Command> {
        if !is_root() {
            skipped(test, "not root: cannot switch users or mount namespaces");
            return None;
        }
        if !have(test, "setpriv", "--version") {
            return None;
        }
        let program = runnable_by_anyone(program);
        match who {
            As::Root => {
                let mut cmd = Command::new(program);
                cmd.args(args);
                Some(cmd)
            }
            As::Nobody => {
                let mut cmd = Command::new("setpriv");
                cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(program)
                    .args(args);
                Some(cmd)
            }
            As::ContainerRoot => {
                if !have(test, "unshare", "--version") {
                    return None;
                }
                let Some(mount) = cgroup2_mount() else {
                    skipped(test, "no cgroup2 mount here");
                    return None;
                };
                let mut cmd = Command::new("unshare");
                cmd.args(["-m", "sh", "-c"])
                    .arg(
                        "mount -o remount,bind,ro \"$1\" || exit 97; shift; \
                         exec setpriv --bounding-set=-sys_ptrace --inh-caps=-sys_ptrace \"$@\"",
                    )
                    .args(["sh", &mount])
                    .arg(program)
                    .args(args);
                Some(cmd)
            }
        }
    }

    /// Re-runs test `test` of this binary as `who` with [`INNER`] set; `false` when this is that re-run (the caller
    /// runs the body).
    fn rerun_as(test: &str, who: As) -> bool {
        rerun_without_clone3(test, who, None)
    }

    /// As [`rerun_as`], where `clone3` is refused with `errno` (if one): `ENOSYS` around the re-run (the filter on its
    /// outermost command, so that everything below inherits it); `EPERM` in the re-run's test thread, before the
    /// job's spawn ([`EPERM_INSIDE`]).
    fn rerun_without_clone3(test: &str, who: As, errno: Option<i32>) -> bool {
        if std::env::var_os(INNER).is_some() {
            return false;
        }
        let exe = std::env::current_exe().unwrap();
        let Some(mut cmd) = command_as(
            test,
            who,
            &exe,
            &[
                "--exact",
                &format!("linux::{test}"),
                "--nocapture",
                "--test-threads=1",
            ],
        ) else {
            return true;
        };
        match errno {
            Some(libc::EPERM) => {
                cmd.env(EPERM_INSIDE, "1");
            }
            Some(errno) => {
                without_clone3(&mut cmd, errno);
            }
            None => {}
        }
        let out = cmd.env(INNER, "1").output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{who:?}, clone3 refused with {errno:?}: the re-run ended with {} ({}): {stdout}{}",
            out.status,
            if stdout.is_empty() && out.stderr.is_empty() {
                "no output"
            } else {
                "its output follows"
            },
            String::from_utf8_lossy(&out.stderr)
        );
        true
    }

    #[test]
    fn reaper_ends_the_daemons_as_root() {
        let mut how = Contain::new();
        how.cgroup(false).require(Containment::Reaper);
        library_scenario("reaper_ends_the_daemons_as_root", &how, Containment::Reaper);
    }

    #[test]
    fn reaper_ends_the_daemons_as_nobody() {
        let test = "reaper_ends_the_daemons_as_nobody";
        if !rerun_as(test, As::Nobody) {
            library_scenario(test, &Contain::new(), Containment::Reaper);
        }
    }

    #[test]
    fn reaper_ends_the_daemons_as_container_root() {
        let test = "reaper_ends_the_daemons_as_container_root";
        if !rerun_as(test, As::ContainerRoot) {
            library_scenario(test, &Contain::new(), Containment::Reaper);
        }
    }

    /// The tool's scenario: `grouptimeout -v -s KILL 2 sh -c SCRIPT` as `who`; every daemon dead when it returns, and
    /// `-v` names them.
    fn tool_scenario(test: &str, who: As) {
        tool_scenario_without_clone3(test, who, None, Containment::Reaper);
    }

    /// [`tool_scenario`], with `clone3` refused with `errno` (if one) around the outermost command (the tool is no
    /// libtest binary: it needs no thread); the command must run in `mode`'s cgroup (see [`check_cgroup`]).
    fn tool_scenario_without_clone3(test: &str, who: As, errno: Option<i32>, mode: Containment) {
        let tool = PathBuf::from(env!("CARGO_BIN_EXE_grouptimeout"));
        let dir = agent_folder(&format!("{test}-agents"));
        let _remove = RemoveDir(dir.clone());
        let script = daemons_script(test);
        let dir_arg = dir.to_string_lossy().into_owned();
        let args = ["-v", "-s", "KILL", "2", "sh", "-c", &script, "sh", &dir_arg];
        let Some(mut cmd) = command_as(test, who, &tool, &args) else {
            return;
        };
        if let Some(errno) = errno {
            without_clone3(&mut cmd, errno);
        }
        let mut tool = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (pids, cgroup) = pids_until_ready(tool.stdout.take().unwrap());
        let _cleanup = KillOnDrop::new(pids.clone());
        let out = tool.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{stderr}");
        check_cgroup(&cgroup, mode);
        let alive: Vec<u32> = pids.iter().copied().filter(|&p| !is_dead(p)).collect();
        assert_eq!(
            alive,
            [] as [u32; 0],
            "alive when the tool returned: {stderr}"
        );
        for pid in &pids {
            assert!(
                stderr.contains(&format!("{pid} (")),
                "{pid} not named: {stderr}"
            );
        }
    }

    #[test]
    fn the_tool_ends_the_daemons_as_nobody() {
        tool_scenario("the_tool_ends_the_daemons_as_nobody", As::Nobody);
    }

    #[test]
    fn the_tool_ends_the_daemons_as_container_root() {
        tool_scenario(
            "the_tool_ends_the_daemons_as_container_root",
            As::ContainerRoot,
        );
    }

    /// Where `clone3` is refused (`ENOSYS`, as container runtimes' default seccomp profiles answer), root with a
    /// writable cgroup still gets the cgroup (the keeper makes the command with `clone`, which moves itself into the
    /// folder before it runs the command), through the library and through the tool.
    #[test]
    fn without_clone3_root_keeps_the_cgroup() {
        let test = "without_clone3_root_keeps_the_cgroup";
        if std::env::var_os(INNER).is_some() {
            library_scenario(test, &Contain::new(), Containment::Cgroup);
            return;
        }
        if cgroup_or_skip(test).is_none() {
            return;
        }
        rerun_without_clone3(test, As::Root, Some(libc::ENOSYS));
        tool_scenario_without_clone3(test, As::Root, Some(libc::ENOSYS), Containment::Cgroup);
    }

    /// Where `clone3` is refused (`ENOSYS`, and `EPERM` as older runtimes answer), nobody still gets the reaper
    /// (not lineage, which the agents and the `env -i` escapee survive), through the library and through the tool.
    #[test]
    fn without_clone3_nobody_keeps_the_reaper() {
        let test = "without_clone3_nobody_keeps_the_reaper";
        if std::env::var_os(INNER).is_some() {
            library_scenario(test, &Contain::new(), Containment::Reaper);
            return;
        }
        for errno in [libc::ENOSYS, libc::EPERM] {
            rerun_without_clone3(test, As::Nobody, Some(errno));
            tool_scenario_without_clone3(test, As::Nobody, Some(errno), Containment::Reaper);
        }
    }

    /// Where `clone3` is refused (`ENOSYS`, `EPERM`), a container-like root (cgroup2 read-only, no
    /// `CAP_SYS_PTRACE`) still gets the reaper, through the library and through the tool.
    #[test]
    fn without_clone3_container_root_keeps_the_reaper() {
        let test = "without_clone3_container_root_keeps_the_reaper";
        if std::env::var_os(INNER).is_some() {
            library_scenario(test, &Contain::new(), Containment::Reaper);
            return;
        }
        for errno in [libc::ENOSYS, libc::EPERM] {
            rerun_without_clone3(test, As::ContainerRoot, Some(errno));
            tool_scenario_without_clone3(test, As::ContainerRoot, Some(errno), Containment::Reaper);
        }
    }

    /// No name heuristic: a command named `group-keeper` (the keeper's own name; here `bash`, else `dash`, through a
    /// link of that name: not `sh`, which may be busybox, whose applet is chosen by its name, and which CI binds over
    /// `/bin/sh`, that is over dash) that starts an `env -i setsid` daemon and exits at once is contained like any
    /// other. Its keeper once took
    /// a command that exited before the spawn returned, and whose name was still its own, for one whose `exec` had
    /// failed, and left without ending the job (6 of 30 runs). Repeated: the exit must beat the spawn's return.
    #[test]
    fn a_command_named_group_keeper_is_contained() {
        let dir = TempDir::new("named-group-keeper");
        let program = dir.0.join("group-keeper");
        let Some(shell) = ["/bin/bash", "/bin/dash"]
            .into_iter()
            .find(|shell| std::path::Path::new(shell).exists())
        else {
            skip_or_fail(
                "a_command_named_group_keeper_is_contained",
                "neither dash nor bash is installed",
            );
            return;
        };
        std::os::unix::fs::symlink(shell, &program).unwrap();
        for run in 0..30 {
            let mut child = reaper()
                .spawn(
                    Command::new(&program)
                        .args(["-c", "env -i setsid sleep 330 >/dev/null & echo $!"])
                        .stdout(Stdio::piped()),
                )
                .unwrap();
            let daemon = read_pid(child.stdout.take().unwrap());
            let _cleanup = KillOnDrop::new(vec![daemon]);
            child.wait_timeout(LONG).unwrap();
            assert!(is_dead(daemon), "run {run}: the daemon {daemon} survived");
        }
    }

    fn reaper() -> Contain {
        let mut how = Contain::new();
        how.cgroup(false).require(Containment::Reaper);
        how
    }

    fn spawn_script(script: &str) -> GroupChild {
        let child = reaper()
            .spawn(
                Command::new("sh")
                    .args(["-c", script])
                    .stdout(Stdio::piped()),
            )
            .unwrap();
        assert_eq!(child.containment(), Containment::Reaper);
        child
    }

    /// A job whose command exits by itself, leaving escapees: they die at the wait (the leftovers are killed by
    /// default), and the command's exit code is reported.
    #[test]
    fn escapees_of_a_command_that_exited_die_at_the_wait() {
        let mut child = spawn_script(
            "env -i setsid sleep 303 & echo $!; (setsid sleep 304 & echo $!) ; exit 7",
        );
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let pids: Vec<u32> = (0..2)
            .map(|_| lines.next().unwrap().unwrap().trim().parse().unwrap())
            .collect();
        let _cleanup = KillOnDrop::new(pids.clone());
        let status = child.wait_timeout(LONG).unwrap();
        assert_eq!(status.status().code(), Some(7), "{status}");
        assert!(!status.timed_out());
        assert_eq!(survivors_after(Duration::ZERO, &pids), [] as [u32; 0]);
    }

    /// The command's status is reported exactly: exit code, or the signal that killed it; a missing program fails
    /// the spawn with `NotFound` (errno 2).
    #[test]
    fn status_is_mirrored_and_a_missing_program_is_not_found() {
        for (script, code, signal) in [
            ("exit 0", Some(0), None),
            ("exit 42", Some(42), None),
            ("kill -TERM $$", None, Some(libc::SIGTERM)),
            ("kill -USR1 $$", None, Some(libc::SIGUSR1)),
        ] {
            let mut child = spawn_script(script);
            let status = child.wait().unwrap();
            assert_eq!((status.code(), status.signal()), (code, signal), "{script}");
            assert!(!status.core_dumped());
        }
        let e = reaper()
            .spawn(&mut Command::new("/nonexistent/grouptimeout-program"))
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    }

    /// Every `Command` setting still reaches the command: arg0, environment, working folder, user and group, and a
    /// `pre_exec` hook of the caller's (it runs before the command's process exists, in the keeper: what a fork
    /// inherits reaches the command, here the umask).
    #[test]
    fn command_settings_reach_the_command() {
        let dir = temp_path("settings");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).unwrap();
        let _remove = RemoveDir(dir.clone());
        let test = "command_settings_reach_the_command";
        // Not `sh`: busybox's picks its applet by arg0.
        if !have(test, "bash", "--version") {
            return;
        }
        let mut cmd = Command::new("bash");
        cmd.arg0("renamed-sh")
            .args(["-c", "echo $0 $PWD $REAPER_FOO $(id -u) $(id -g) $(umask)"])
            .current_dir(&dir)
            .env("REAPER_FOO", "bar")
            .stdout(Stdio::piped());
        if is_root() {
            cmd.uid(65534).gid(65534);
        }
        // SAFETY: umask is async-signal-safe and touches no memory.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0o027);
                Ok(())
            });
        }
        let child = reaper().spawn(&mut cmd).unwrap();
        let out = child.wait_with_output_timeout(LONG).unwrap();
        let ids = if is_root() {
            "65534 65534".to_owned()
        } else {
            // SAFETY: getuid and getgid have no preconditions.
            unsafe { format!("{} {}", libc::getuid(), libc::getgid()) }
        };
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("renamed-sh {} bar {ids} 0027", dir.display())
        );
    }

    /// Nothing outside the job is touched: this process's other child, another reaper job, and a process of the same
    /// user started beside the job (`setsid`, as an escapee would be) all live on after the job was killed.
    #[test]
    fn nothing_outside_the_job_is_touched() {
        let mut other_child = Command::new("sleep").arg("305").spawn().unwrap();
        let beside = Command::new("setsid")
            .args(["sh", "-c", "sleep 306 >/dev/null 2>&1 & echo $!"])
            .output()
            .unwrap();
        let beside_pid = read_pid(&beside.stdout[..]);
        let _beside = KillOnDrop::new(vec![beside_pid]);
        let mut other_job = spawn_script("setsid sleep 307 & echo $!; exec sleep 308");
        let other_escapee = read_pid(other_job.stdout.take().unwrap());
        let _other = KillOnDrop::new(vec![other_escapee]);

        let mut job = spawn_script("setsid sleep 309 & echo $!; exec sleep 310");
        let escapee = read_pid(job.stdout.take().unwrap());
        let _cleanup = KillOnDrop::new(vec![escapee]);
        assert!(!job.in_job(other_child.id()));
        assert!(!job.in_job(beside_pid));
        assert!(!job.in_job(other_escapee));
        assert!(!job.in_job(job.id()), "the keeper is not the job's");
        assert!(job.in_job(escapee));
        assert!(job
            .wait_timeout(Duration::from_millis(100))
            .unwrap()
            .timed_out());
        assert!(is_dead(escapee));
        assert!(!job.in_job(escapee), "dead");
        for pid in [other_child.id(), beside_pid, other_escapee, other_job.id()] {
            assert!(!is_dead(pid), "{pid} was touched");
        }
        assert_eq!(other_job.try_wait().unwrap(), None);
        drop(other_job);
        assert!(is_dead(other_escapee));
        other_child.kill().unwrap();
        other_child.wait().unwrap();
    }

    /// A job that kills its reaper (`kill -9 $PPID`): the command dies with it, so the wait wakes at once, sees the
    /// keeper killed (`SIGKILL`), and ends the rest another way: the command's group (its id is the keeper's pid, still
    /// unreaped) and, through the backup lineage mark, the escapee that kept its environment. An escapee that cleared
    /// its environment (`env -i`) and left the group survives: the README says so. This is also the case lineage still
    /// catches where the reaper does not.
    #[test]
    fn a_job_that_kills_its_reaper_is_ended_by_its_group_and_mark() {
        let mut child = spawn_script(
            "setsid sleep 311 & echo $!; env -i setsid sleep 312 & echo $!; echo $$; sleep 0.1; \
             kill -9 $PPID; exec sleep 313",
        );
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let mut next = || -> u32 { lines.next().unwrap().unwrap().trim().parse().unwrap() };
        let (marked, cleared, command) = (next(), next(), next());
        let _cleanup = KillOnDrop::new(vec![marked, cleared, command]);
        let started = std::time::Instant::now();
        let outcome = child.wait_timeout(LONG).unwrap();
        assert_eq!(outcome.to_string(), "killed by signal 9");
        // The wait sleeps until the command exits: the command dies with its keeper, so the wait wakes at once.
        assert!(
            started.elapsed() < LONG / 3,
            "the wait saw the keeper's death only after {:?}",
            started.elapsed()
        );
        assert_eq!(
            survivors_after(Duration::from_secs(5), &[marked, command]),
            [] as [u32; 0]
        );
        assert!(
            !is_dead(cleared),
            "the env -i escapee survives (as documented)"
        );
    }

    /// `in_job` of a reaper job: the command and its escapees until they die; never the keeper, never a dead
    /// process, never after the wait.
    #[test]
    fn in_job_follows_the_reaper() {
        let mut child = spawn_script("env -i setsid sleep 314 & echo $!; echo $$; exec sleep 315");
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let escapee: u32 = lines.next().unwrap().unwrap().trim().parse().unwrap();
        let command: u32 = lines.next().unwrap().unwrap().trim().parse().unwrap();
        let _cleanup = KillOnDrop::new(vec![escapee]);
        assert!(child.in_job(escapee));
        assert!(child.in_job(command));
        assert!(!child.in_job(child.id()));
        assert!(!child.in_job(std::process::id()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!child.in_job(escapee));
        assert!(!child.in_job(command));
    }

    /// The supervisor killed (`kill -9` on the tool, as nobody, so that the job has its reaper): the keeper notices
    /// (a parent-death signal) and ends the whole job, escapees that cleared their environment included.
    #[test]
    fn a_killed_supervisor_takes_the_job_along() {
        let test = "a_killed_supervisor_takes_the_job_along";
        let tool = PathBuf::from(env!("CARGO_BIN_EXE_grouptimeout"));
        // Escapees that are still the command's children when the keeper ends the job: they become the keeper's
        // only when the command dies, so the keeper must wait for that (it once stopped when it had no other child).
        let script = "for i in 1 2 3 4 5 6 7 8; do env -i setsid sleep 320 & echo $!; done; \
                      echo $$; echo ready; exec sleep 322";
        let Some(mut cmd) = command_as(test, As::Nobody, &tool, &["60", "sh", "-c", script]) else {
            return;
        };
        let mut tool = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let (pids, _) = pids_until_ready(tool.stdout.take().unwrap());
        let _cleanup = KillOnDrop::new(pids.clone());
        assert_eq!(pids.len(), 9, "{pids:?}");
        tool.kill().unwrap();
        tool.wait().unwrap();
        assert_eq!(
            survivors_after(Duration::from_secs(10), &pids),
            [] as [u32; 0]
        );
    }
}
