//! The job boundary where users run it (issue 32): a root caller that runs the command as another user
//! (`Command::uid`), a caller's `pre_exec` hook that unshares the PID namespace, and a process limit that leaves no
//! room for the keeper. The job gets the boundary it can, and a weaker one is never silent (`fallback_reason`,
//! the tool's `-v`). Death is read from `/proc/PID/stat`.
#![cfg(unix)]

mod common;
#[path = "common/job.rs"]
mod job_common;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use super::common::*;
    use super::job_common::*;

    use std::io::{BufRead as _, BufReader};
    use std::os::unix::process::CommandExt as _;
    use std::path::PathBuf;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use grouptimeout::GroupChild;
    use grouptimeout_job::{Contain, Containment, JobChildExt as _};

    const LONG: Duration = Duration::from_secs(60);
    /// Set in a re-run of this binary as another user: the body runs.
    const INNER: &str = "GROUPTIMEOUT_TEST_BOUNDARY_INNER";

    /// The first `n` lines the job prints.
    fn lines(child: &mut GroupChild, n: usize) -> Vec<String> {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        (0..n)
            .map(|_| {
                let mut line = String::new();
                out.read_line(&mut line).expect("a line from the command");
                line.trim().to_owned()
            })
            .collect()
    }

    /// Re-runs test `test` of this binary through `setpriv` with `options`, with [`INNER`] set (the re-run runs the
    /// body), and checks that it passed.
    fn rerun(test: &str, options: &[&str]) {
        let exe = runnable_by_anyone(&std::env::current_exe().unwrap());
        let out = Command::new("setpriv")
            .args(options)
            .arg(exe)
            .args([
                "--exact",
                &format!("linux::{test}"),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(INNER, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Adds a `pre_exec` hook that unshares the PID namespace (before the spawn: it runs in the keeper).
    fn unshare_pid_namespace(command: &mut Command) -> &mut Command {
        // SAFETY: unshare is async-signal-safe and touches no memory.
        unsafe {
            command.pre_exec(|| {
                if libc::unshare(libc::CLONE_NEWPID) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            })
        }
    }

    /// The capability sets of the calling shell, as `/proc/self/status` gives them.
    const CAPS: &str =
        "grep -E '^Cap(Eff|Prm|Inh|Amb)' /proc/$$/status | tr -d '\\t' | tr '\\n' ' '; echo";

    /// Root runs the command as nobody (`Command::uid`, which std applies before the hooks, so the keeper runs as
    /// nobody too): the job still gets its cgroup; the command has none of root's capabilities, its escapee dies at
    /// the deadline, and no folder is left.
    #[test]
    fn another_user_gets_the_cgroup() {
        let test = "another_user_gets_the_cgroup";
        if !is_root() {
            skipped(test, "not root: cannot run a command as another user");
            return;
        }
        let Some(how) = cgroup_or_skip(test) else {
            return;
        };
        let script = format!("id -u; {CAPS}; env -i setsid sleep 311 & echo $!; exec sleep 312");
        let mut child = how
            .spawn(
                Command::new("sh")
                    .args(["-c", &script])
                    .uid(65534)
                    .gid(65534)
                    .stdout(Stdio::piped()),
            )
            .expect("a cgroup for a command run as another user");
        assert_eq!(child.containment(), Containment::Cgroup);
        assert_eq!(child.fallback_reason(), None);
        let folder = job_folder(child.command_id());
        let got = lines(&mut child, 3);
        let escapee: u32 = got[2].parse().unwrap();
        let _cleanup = KillOnDrop::new(vec![escapee]);
        assert_eq!(got[0], "65534");
        assert_eq!(
            got[1],
            "CapInh:0000000000000000 CapPrm:0000000000000000 CapEff:0000000000000000 CapAmb:0000000000000000"
        );
        assert!(child.in_job(escapee));
        let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
        assert!(outcome.timed_out(), "{outcome}");
        assert!(is_dead(escapee), "the escapee survived");
        let folder = folder.expect("the command is in a job folder");
        assert!(!folder.exists(), "{} left", folder.display());
    }

    /// A root caller's `Command::uid` job keeps its cgroup whatever the calling thread's securebits: the keeper
    /// never switches users (std switches in the command's process alone), so it needs no capability kept across a
    /// switch. (When the keeper was the process std forked for the spawn, it switched with the command, and with
    /// `keep_caps_locked` it kept no `CAP_DAC_OVERRIDE`: the job fell back to the reaper.)
    #[test]
    fn another_user_keeps_the_cgroup_with_keep_caps_locked() {
        let test = "another_user_keeps_the_cgroup_with_keep_caps_locked";
        if std::env::var_os(INNER).is_some() {
            let mut command = Command::new("sh");
            command.args(["-c", "id -u"]).uid(65534).gid(65534);
            let child = Contain::new()
                .require(Containment::Cgroup)
                .spawn(command.stdout(Stdio::piped()))
                .unwrap();
            assert_eq!(child.containment(), Containment::Cgroup);
            assert_eq!(child.fallback_reason(), None);
            let out = child.wait_with_output_timeout(LONG).unwrap();
            assert!(out.outcome.status().success(), "{}", out.outcome);
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "65534");
            return;
        }
        if !is_root() {
            skipped(test, "not root: cannot run a command as another user");
            return;
        }
        if cgroup_or_skip(test).is_none() || !have(test, "setpriv", "--version") {
            return;
        }
        rerun(test, &["--securebits=+keep_caps_locked"]);
    }

    /// A caller's `pre_exec` hook that unshares the PID namespace (added before the spawn, so it runs in the keeper):
    /// the command runs, its first child is PID 1 of the new namespace (as without a keeper), it exits 0, and the
    /// job stays contained: its escapee inside the namespace dies with the job.
    #[test]
    fn a_hook_that_unshares_the_pid_namespace_runs_its_command() {
        let test = "a_hook_that_unshares_the_pid_namespace_runs_its_command";
        if !is_root() {
            skipped(
                test,
                "not root: cannot unshare a PID namespace without a user namespace",
            );
            return;
        }
        for mode in [Containment::Cgroup, Containment::Reaper] {
            let mut how = Contain::new();
            if mode == Containment::Cgroup {
                if cgroup_or_skip(test).is_none() {
                    continue;
                }
            } else {
                how.cgroup(false);
            }
            how.require(mode);
            // Sleeps of 313 and 315 s that no other test process, nor another copy of the suite, runs: their
            // durations end in this process's id.
            let id = std::process::id();
            let mut command = Command::new("sh");
            command
                .args([
                    "-c",
                    &format!(
                        "sh -c 'echo inner $$; setsid sleep 313.{id} & exec sleep 315.{id}' & \
                         sleep 0.2; echo outer $$; exec sleep 314"
                    ),
                ])
                .stdout(Stdio::piped());
            unshare_pid_namespace(&mut command);
            let mut child = how.spawn(&mut command).unwrap();
            assert_eq!(child.containment(), mode);
            let mut got = lines(&mut child, 2);
            got.sort();
            assert_eq!(
                got[0], "inner 1",
                "{mode:?}: the command's first child is PID 1 of its namespace"
            );
            assert_eq!(got[1], format!("outer {}", child.command_id()), "{mode:?}");
            // The namespace's processes, found outside by their command lines: its PID 1 and an escapee.
            // The inner shell may not have started its escapee yet when the outer one printed.
            let find = || -> Vec<u32> {
                [313, 315]
                    .iter()
                    .flat_map(|s| with_cmdline(&format!("sleep\u{0}{s}.{id}\u{0}")))
                    .collect()
            };
            eventually(Duration::from_secs(10), || find().len() == 2);
            let inside = find();
            let _cleanup = KillOnDrop::new(inside.clone());
            assert_eq!(inside.len(), 2, "{mode:?}: both run");
            for &pid in &inside {
                assert!(child.in_job(pid), "{mode:?}: {pid} is the job's");
            }
            let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
            assert!(outcome.timed_out(), "{mode:?}: {outcome}");
            assert_eq!(
                survivors_after(Duration::from_secs(5), &inside),
                [] as [u32; 0],
                "{mode:?}"
            );
        }
    }

    /// A caller's hook that joins an existing PID namespace (`setns`, as `nsenter` does) is left alone: in cgroup
    /// mode the command's child is born in that namespace (not as its PID 1: it has one), and the job is contained;
    /// under the reaper, whose orphans would go to that namespace's init, the spawn fails and says why (the hook runs
    /// in the command's process, so the command had started: it is killed, never spawned again in another mode).
    #[test]
    fn a_hook_that_joins_a_pid_namespace_is_left_alone() {
        use std::os::fd::AsRawFd as _;
        let test = "a_hook_that_joins_a_pid_namespace_is_left_alone";
        if !is_root() {
            skipped(test, "not root: cannot join a PID namespace");
            return;
        }
        if !have(test, "unshare", "--version") {
            return;
        }
        // An existing namespace: its PID 1 is a `sleep`.
        let mut holder = Command::new("unshare")
            .args(["--pid", "--fork", "sleep", "316"])
            .spawn()
            .unwrap();
        let init = {
            let mut init = None;
            eventually(Duration::from_secs(10), || {
                // The `sleep`, unshare's child (unshare's own command line names it too).
                let holder = holder.id();
                init = std::fs::read_to_string(format!("/proc/{holder}/task/{holder}/children"))
                    .ok()
                    .and_then(|c| c.split_whitespace().next()?.parse().ok());
                init.is_some()
            });
            init.expect("the namespace's init runs")
        };
        let _cleanup = KillOnDrop::new(vec![init, holder.id()]);
        let namespace = std::fs::File::open(format!("/proc/{init}/ns/pid")).unwrap();
        let fd = namespace.as_raw_fd();
        let joining = |command: &mut Command| {
            // SAFETY: setns is async-signal-safe; the descriptor outlives the spawn.
            unsafe {
                command.pre_exec(move || {
                    if libc::setns(fd, libc::CLONE_NEWPID) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        };
        if let Some(how) = cgroup_or_skip(test) {
            let mut command = Command::new("sh");
            command
                .args(["-c", "sh -c 'echo $$'"])
                .stdout(Stdio::piped());
            joining(&mut command);
            let child = how.spawn(&mut command).unwrap();
            assert_eq!(child.containment(), Containment::Cgroup);
            let out = child.wait_with_output_timeout(LONG).unwrap();
            assert!(out.outcome.status().success(), "{}", out.outcome);
            let inner: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            assert!(
                inner > 1,
                "born in the joined namespace, not a new one: pid {inner}"
            );
        }
        let mut how = Contain::new();
        how.cgroup(false);
        let mut command = Command::new("sleep");
        command.arg("317");
        joining(&mut command);
        let why = how.spawn(&mut command).map(drop).unwrap_err().to_string();
        assert!(why.contains("PID namespace"), "{why}");
        assert_eq!(
            survivors_after(Duration::from_secs(5), &with_cmdline("sleep\u{0}317\u{0}")),
            [] as [u32; 0]
        );
        let _ = holder.kill();
        let _ = holder.wait();
    }

    /// The same hook with a command that exits at once: it exits 0 (it ran), in each kept mode.
    #[test]
    fn a_hook_that_unshares_the_pid_namespace_exits_as_its_command() {
        let test = "a_hook_that_unshares_the_pid_namespace_exits_as_its_command";
        if !is_root() {
            skipped(
                test,
                "not root: cannot unshare a PID namespace without a user namespace",
            );
            return;
        }
        let mut how = Contain::new();
        how.cgroup(false).require(Containment::Reaper);
        let mut command = Command::new("sh");
        command.args(["-c", "echo ran"]).stdout(Stdio::piped());
        unshare_pid_namespace(&mut command);
        let child = how.spawn(&mut command).unwrap();
        let out = child.wait_with_output_timeout(LONG).unwrap();
        assert!(out.outcome.status().success(), "{}", out.outcome);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ran");
    }

    /// The number of processes of real user `uid` now.
    fn processes_of(uid: u32) -> u64 {
        let dirs = std::fs::read_dir("/proc").unwrap().flatten();
        dirs.filter(|e| real_user(&e.path()) == Some(uid)).count() as u64
    }

    /// The number of tasks (threads) of real user `uid` now.
    fn tasks_of(uid: u32) -> u64 {
        let mut n = 0;
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let threads = std::fs::read_to_string(entry.path().join("status"))
                .unwrap_or_default()
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Threads:")
                        .map(|t| t.trim().parse::<u64>().unwrap_or(0))
                })
                .unwrap_or(0);
            n += threads * u64::from(real_user(&entry.path()) == Some(uid));
        }
        n
    }

    /// The real user of the process whose `/proc` folder is `dir`.
    fn real_user(dir: &std::path::Path) -> Option<u32> {
        let status = std::fs::read_to_string(dir.join("status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next()?.parse().ok())
    }

    /// A user id of this test's own, from 60000 to 64999: one that no process has, claimed against the other test
    /// processes on this machine (another copy of the suite may run this test at the same time) for as long as the
    /// returned socket lives. The claim is an abstract Unix socket named after the uid: one process at a time can bind
    /// a name, and the kernel frees it with the socket, however the process ends (no file is left behind).
    fn own_uid() -> (u32, std::os::unix::net::UnixListener) {
        use std::os::linux::net::SocketAddrExt as _;
        use std::os::unix::net::{SocketAddr, UnixListener};
        for k in 0..5000 {
            let uid = 60_000 + (std::process::id() + k) % 5000;
            let name = format!("grouptimeout-test-uid-{uid}");
            let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
            if let Ok(claim) = UnixListener::bind_addr(&addr) {
                if processes_of(uid) == 0 {
                    return (uid, claim);
                }
            }
        }
        panic!("every uid from 60000 to 64999 is in use or claimed");
    }

    /// `RLIMIT_NPROC` one process short of what a kept job needs (it leaves room for the command alone): the job
    /// falls back to lineage, and says why. Run as a user of its own (a uid no other process has), so that the
    /// limit counts this test's processes only.
    #[test]
    fn a_process_limit_one_short_falls_back_and_says_why() {
        let test = "a_process_limit_one_short_falls_back_and_says_why";
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        if std::env::var_os(INNER).is_some() {
            // One process more than this one (this user's only): the keeper's fork fits, its helper does not. Where
            // the kernel counts this process's threads too, std's own fork fails at that limit: one more, then, for
            // each of them.
            let mut before = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit writes the struct, which lives across the call.
            let got = unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &raw mut before) };
            assert_eq!(got, 0);
            let (processes, tasks) = (processes_of(uid), tasks_of(uid));
            let mut spawned = None;
            for room in processes + 1..=tasks + 1 {
                let limit = libc::rlimit {
                    rlim_cur: room,
                    rlim_max: before.rlim_max,
                };
                // SAFETY: setrlimit reads the struct, which lives across the call.
                let set = unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &raw const limit) };
                assert_eq!(set, 0);
                let tried = Contain::new().spawn(&mut Command::new("true"));
                // SAFETY: as above.
                unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &raw const before) };
                if let Ok(child) = tried {
                    spawned = Some(child);
                    break;
                }
            }
            let mut child = spawned.expect("a spawn within the limits tried");
            assert!(child.wait().unwrap().success());
            assert_eq!(child.containment(), Containment::Lineage);
            let why = child.fallback_reason().expect("a reason").to_owned();
            assert!(
                why.contains("reaper:") && why.contains("RLIMIT_NPROC"),
                "{why}"
            );
            return;
        }
        if !is_root() {
            skipped(test, "not root: cannot run as a user of its own");
            return;
        }
        if !have(test, "setpriv", "--version") {
            return;
        }
        let (own, _claim) = own_uid();
        rerun(
            test,
            &[
                &format!("--reuid={own}"),
                &format!("--regid={own}"),
                "--clear-groups",
            ],
        );
    }

    /// The tool's `-v` names a weaker boundary and why (here: nobody, who may not make a cgroup).
    #[test]
    fn the_tools_verbose_names_a_fallback() {
        let test = "the_tools_verbose_names_a_fallback";
        if !is_root() {
            skipped(test, "not root: cannot switch users");
            return;
        }
        if !have(test, "setpriv", "--version") {
            return;
        }
        let tool = runnable_by_anyone(&PathBuf::from(env!("CARGO_BIN_EXE_grouptimeout")));
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(tool)
            .args(["-v", "5", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains("runs with a job boundary of reaper: cgroup: "),
            "{stderr}"
        );
    }
}
