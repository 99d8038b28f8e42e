//! The tool's `--help` against what the tool does (issue 33.5): its paragraph on job boundaries names, for each
//! boundary (`cgroup`, `reaper`, `lineage`), which callers get it and what escapes it. Each claim is read from the
//! text the tool prints and checked by running the tool as that caller (root; nobody through `setpriv`; a
//! container-like root: a private mount namespace with cgroup2 read-only and `CAP_SYS_PTRACE` dropped; a user at its
//! process limit, `RLIMIT_NPROC`) with `-v` on a hostile tree: a `setsid` child that keeps its environment, an
//! `env -i setsid` one, and `ssh-agent` (non-dumpable) where installed. The boundary `-v` reports (no such line: the
//! cgroup) must be the one the text names for that caller, what the text says escapes must still run when the tool
//! returns, and the rest must be dead (read from `/proc/PID/stat`). Escapees are killed by pid afterwards.
//!
//! The words the test keys on (change one, and the test names the claim that no longer holds):
//! - an entry is a line `  MODE  WHO: WHAT; escapes: CLAUSE` and its indented continuation lines;
//! - WHO is split at `, or ` and `, and `: a part `as root` is root, one with `any other user` is nobody, one with
//!   `in a container` the container-like root, one with `RLIMIT_NPROC` the user at its process limit;
//! - CLAUSE: `environment` or `env -i` says the `env -i setsid` child escapes (and the `setsid` one, which kept its
//!   environment, does not); `left the group` or `setsid` alone says both escape; `ssh-agent` or `setuid` says
//!   ssh-agent escapes; `if the job kills the keeper, what lineage misses` says a job that kills its keeper loses
//!   what the lineage entry says escapes;
//! - the sentence with `--foreground` says `every orphan` is killed; `Elsewhere only the group is reached`.
#![cfg(unix)]

mod common;
#[path = "common/job.rs"]
mod job_common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use grouptimeout::GroupCommandExt;

const BIN: &str = env!("CARGO_BIN_EXE_grouptimeout");
/// No run of the tool may take longer than this (its command ends by itself within a second or two; its timeout is
/// 60 s).
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// A boundary's entry in `--help`: who gets it, and what escapes it.
#[derive(Debug, Clone, Default)]
struct Entry {
    /// The callers, as written (`as root`, `in a delegated cgroup v2`, ...).
    who: Vec<String>,
    /// The text after `escapes:`.
    escapes: String,
}

/// The `--help` text, its lines joined with single spaces (so that a claim may be wrapped anywhere).
fn help() -> (String, String) {
    let out = Command::new(BIN)
        .arg("--help")
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (text, flat)
}

/// The entries of `--help`'s list of boundaries: a line `  MODE  TEXT` (MODE a lowercase word), and the lines
/// indented deeper that follow it.
fn entries(text: &str) -> BTreeMap<String, Entry> {
    let mut raw: Vec<(String, String)> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let first = line.split_whitespace().next().unwrap_or_default();
        if indent == 2
            && first.chars().all(|c| c.is_ascii_lowercase())
            && line[2 + first.len()..].starts_with("  ")
        {
            raw.push((
                first.to_string(),
                line[2 + first.len()..].trim().to_string(),
            ));
            open = true;
        } else if open && indent > 2 {
            let last = raw.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(line.trim());
        } else {
            open = false;
        }
    }
    raw.into_iter()
        .map(|(mode, text)| (mode, entry(&text)))
        .collect()
}

/// An entry's text split into who gets the boundary (before the first `:`) and what escapes it (after `escapes:`).
fn entry(text: &str) -> Entry {
    let (who, rest) = text.split_once(':').unwrap_or((text, ""));
    let escapes = rest
        .split_once("escapes:")
        .map_or("", |(_, clause)| clause)
        .trim()
        .to_string();
    let who = who
        .replace(", and ", ", or ")
        .split(", or ")
        .map(|part| part.trim().to_lowercase())
        .collect();
    Entry { who, escapes }
}

/// The kinds of caller the test can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    Root,
    Nobody,
    ContainerRoot,
    /// A user of its own, at its process limit (`RLIMIT_NPROC`): one process more than the tool itself.
    AtProcessLimit,
}

impl Caller {
    const ALL: [Caller; 4] = [
        Caller::Root,
        Caller::Nobody,
        Caller::ContainerRoot,
        Caller::AtProcessLimit,
    ];

    /// Whether a part of an entry's WHO names this caller.
    fn named_by(self, part: &str) -> bool {
        match self {
            Caller::Root => part == "as root",
            Caller::Nobody => part.contains("any other user"),
            Caller::ContainerRoot => part.contains("in a container"),
            Caller::AtProcessLimit => part.contains("rlimit_nproc"),
        }
    }
}

/// The boundary `--help` names for `caller`: exactly one entry must name it.
fn mode_for(entries: &BTreeMap<String, Entry>, caller: Caller) -> String {
    let named: Vec<&String> = entries
        .iter()
        .filter(|(_, e)| e.who.iter().any(|part| caller.named_by(part)))
        .map(|(mode, _)| mode)
        .collect();
    assert_eq!(
        named.len(),
        1,
        "--help names {caller:?} in {named:?}, not in exactly one boundary: {entries:#?}"
    );
    named[0].clone()
}

#[test]
fn help_lists_each_boundary_with_its_callers_and_escapes() {
    let (text, flat) = help();
    let entries = entries(&text);
    // The parse itself is checked: a change that lost the list would compare nothing.
    assert_eq!(
        entries.keys().collect::<Vec<_>>(),
        ["cgroup", "lineage", "reaper"],
        "{text}"
    );
    for caller in Caller::ALL {
        mode_for(&entries, caller);
    }
    for (mode, e) in &entries {
        assert!(!e.escapes.is_empty(), "{mode}: says nothing escapes it");
    }
    assert!(
        flat.contains("-v names the one it got, and why, when it is not the cgroup"),
        "{text}"
    );
    // (the usage line names the tool as it was run: here by its full path)
    for line in text.lines().skip(1) {
        assert!(line.len() <= 80, "wider than 80 columns: {line:?}");
    }
}

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use super::common::*;
    use super::job_common::*;
    use super::*;

    use std::fs;
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;

    /// Which processes of the hostile tree escape a boundary (still run when the tool returned).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    struct Escapes {
        /// `setsid`, environment kept.
        setsid: bool,
        /// `env -i setsid`.
        env_i: bool,
        /// `ssh-agent` (non-dumpable).
        agent: bool,
    }

    /// What an escape clause claims for the hostile tree, the keeper left alone (a condition `if the job kills the
    /// keeper` and what follows it is not read here).
    fn claimed(clause: &str) -> Escapes {
        let clause = clause
            .split("if the job kills the keeper")
            .next()
            .unwrap_or_default();
        let environment = clause.contains("environment") || clause.contains("env -i");
        let left = clause.contains("left the group") || clause.contains("setsid");
        Escapes {
            setsid: left && !environment,
            env_i: left || environment,
            agent: clause.contains("ssh-agent") || clause.contains("setuid"),
        }
    }

    /// The hostile tree, run by `sh -c` with the folder for its files as `$1`, `$2` = `agent` to start ssh-agent,
    /// and `$3` = `kill-keeper` to kill its parent (in reaper mode: the keeper) once the tree runs. Each process
    /// writes its pid to a file of its own (`a`, `b`, `c`); the command's cgroup goes to `cg`. The command waits
    /// until the files are written, then exits (the tool then ends what it left).
    const TREE: &str = r#"d=$1
sed -n 's/^0:://p' /proc/$$/cgroup > "$d/cg"
setsid sh -c 'echo $$ > "$1/a"; exec sleep 300' sh "$d" </dev/null >/dev/null 2>&1 &
env -i setsid sh -c 'echo $$ > "$1/b"; exec sleep 301' sh "$d" </dev/null >/dev/null 2>&1 &
if [ "$2" = agent ]; then
    eval "$(ssh-agent -s -a "$d/agent")" >/dev/null
    echo "$SSH_AGENT_PID" > "$d/c"
fi
until [ -s "$d/a" ] && [ -s "$d/b" ]; do sleep 0.05; done
if [ "$3" = kill-keeper ]; then
    kill -9 $PPID
    sleep 30
fi
"#;

    /// The hard limit on this process's processes, as `prlimit` takes it (`unlimited` or a number).
    fn hard_process_limit() -> String {
        let limits = fs::read_to_string("/proc/self/limits").unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max processes"))
            .expect("Max processes in /proc/self/limits");
        line.split_whitespace().nth(3).unwrap().to_string()
    }

    /// The tool run with `args` as `caller`; `None` (skipped, saying why) where that cannot be done here.
    fn tool_as(test: &str, caller: Caller, args: &[&str]) -> Option<Command> {
        if !is_root() {
            skipped(test, "not root: cannot switch users or mount namespaces");
            return None;
        }
        if !have(test, "setpriv", "--version") {
            return None;
        }
        let tool = runnable_by_anyone(Path::new(BIN));
        let mut cmd;
        match caller {
            Caller::Root => {
                cmd = Command::new(tool);
            }
            Caller::Nobody => {
                cmd = Command::new("setpriv");
                cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(tool);
            }
            Caller::ContainerRoot => {
                if !have(test, "unshare", "--version") {
                    return None;
                }
                let Some(mount) = cgroup2_mount() else {
                    skipped(test, "no cgroup2 mount here");
                    return None;
                };
                cmd = Command::new("unshare");
                cmd.args(["-m", "sh", "-c"])
                    .arg(
                        "mount -o remount,bind,ro \"$1\" || exit 97; shift; \
                         exec setpriv --bounding-set=-sys_ptrace --inh-caps=-sys_ptrace \"$@\"",
                    )
                    .args(["sh", &mount])
                    .arg(tool);
            }
            Caller::AtProcessLimit => {
                if !have(test, "prlimit", "--version") {
                    return None;
                }
                // A user of this test's own, so that no other process counts against its limit: the tool is its
                // only process, the limit 2 (soft; the hard one stays), so its keeper is made but cannot make the
                // command. The command raises its own soft limit again (prlimit execs it) for the tree.
                let uid = (1_000_000_000 + std::process::id()).to_string();
                cmd = Command::new("prlimit");
                cmd.arg("--nproc=2:")
                    .arg("setpriv")
                    .arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={uid}"))
                    .arg("--clear-groups")
                    .arg(tool);
                let at = args.iter().position(|&a| a == "sh").unwrap();
                let (options, command) = args.split_at(at);
                cmd.args(options)
                    .arg("prlimit")
                    .arg(format!("--nproc={}:", hard_process_limit()));
                cmd.args(command);
                return Some(cmd);
            }
        }
        cmd.args(args);
        Some(cmd)
    }

    /// What a run of the tool on the hostile tree showed.
    struct Run {
        /// The boundary `-v` named (`cgroup` where it named none).
        mode: String,
        /// The command's cgroup, as `/proc/PID/cgroup` names it.
        cgroup: String,
        /// Which processes of the tree still ran when the tool had returned.
        escaped: Escapes,
        /// The tool's standard error.
        stderr: String,
        /// Whether the tree had ssh-agent (installed here).
        agent: bool,
    }

    /// Runs the tool as `caller` with `options` on the hostile tree (`kill_keeper`: see [`TREE`]); `None` when
    /// skipped. Every process of the tree is killed by pid before this returns, and the tool must have left no
    /// cgroup folder.
    fn run(test: &str, caller: Caller, options: &[&str], kill_keeper: bool) -> Option<Run> {
        let dir = TempDir::new(test);
        fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o777)).unwrap();
        let agent = runs("ssh-agent", "-k") || fs::metadata("/usr/bin/ssh-agent").is_ok();
        if !agent {
            skip_or_fail(test, "ssh-agent is not installed: the tree runs without it");
        }
        let folder = dir.0.to_string_lossy().into_owned();
        let mut args: Vec<&str> = options.to_vec();
        args.extend([
            "60",
            "sh",
            "-c",
            TREE,
            "sh",
            &folder,
            if agent { "agent" } else { "-" },
            if kill_keeper { "kill-keeper" } else { "-" },
        ]);
        let mut cmd = tool_as(test, caller, &args)?;
        let tool = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn_group()
            .unwrap();
        let tool_pid = tool.id();
        let out = tool.wait_with_output_timeout(RUN_LIMIT).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        // Read before any check, so that a failing check still kills them; a pid whose process started after its file
        // was written is not the one written (it died, and the pid was reused).
        let tree = ["a", "b", "c"].map(|name| KillOnDrop::from_file(dir.0.join(name)));
        let running = |p: &KillOnDrop| !p.alive().is_empty();
        let escaped = Escapes {
            setsid: running(&tree[0]),
            env_i: running(&tree[1]),
            agent: running(&tree[2]),
        };
        let [a, b, c] = tree.each_ref().map(|p| p.0.first());
        assert!(
            !out.outcome.timed_out(),
            "{caller:?}: the tool ran longer than {RUN_LIMIT:?}: {stderr}"
        );
        assert!(
            a.is_some() && b.is_some() && (c.is_some() || !agent),
            "{caller:?}: the tree did not start: {stderr}"
        );
        assert_eq!(
            job_folders_made_by(tool_pid),
            [] as [std::path::PathBuf; 0],
            "{caller:?}: cgroup folders left behind"
        );
        let mode = stderr
            .split(" runs with a job boundary of ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .unwrap_or("cgroup")
            .to_string();
        let cgroup = fs::read_to_string(dir.0.join("cg"))
            .unwrap_or_default()
            .trim()
            .to_string();
        // Those that escaped, killed now (the drop kills them too when a check fails first); dead when this returns.
        tree.iter().for_each(KillOnDrop::kill);
        assert_eq!(
            tree.iter()
                .flat_map(|p| p.survivors_after(Duration::from_secs(10)))
                .collect::<Vec<_>>(),
            [] as [u32; 0]
        );
        Some(Run {
            mode,
            cgroup,
            escaped,
            stderr,
            agent,
        })
    }

    /// `caller` gets the boundary `--help` names for it, and what escapes it is what `--help` says.
    fn caller_gets_what_help_says(test: &str, caller: Caller) {
        let (printed, _) = help();
        let entries = entries(&printed);
        let mode = mode_for(&entries, caller);
        // Root gets a cgroup only where one can be made: elsewhere (root in a container) the test cannot be root.
        if caller == Caller::Root && cgroup_or_skip(test).is_none() {
            return;
        }
        let Some(run) = run(test, caller, &["-v"], false) else {
            return;
        };
        assert_eq!(
            run.mode, mode,
            "--help says {caller:?} gets {mode}; -v said: {}",
            run.stderr
        );
        let in_job_folder = run
            .cgroup
            .rsplit('/')
            .next()
            .is_some_and(|name| name.starts_with("grouptimeout-"));
        assert_eq!(
            in_job_folder,
            mode == "cgroup",
            "{caller:?} ({mode}): the command ran in the cgroup {}",
            run.cgroup
        );
        let mut says = claimed(&entries[&mode].escapes);
        says.agent &= run.agent;
        assert_eq!(
            run.escaped, says,
            "{caller:?} ({mode}): --help says escapes: {:?}; {}",
            entries[&mode].escapes, run.stderr
        );
    }

    #[test]
    fn root_gets_the_boundary_help_names() {
        caller_gets_what_help_says("root_gets_the_boundary_help_names", Caller::Root);
    }

    #[test]
    fn nobody_gets_the_boundary_help_names() {
        caller_gets_what_help_says("nobody_gets_the_boundary_help_names", Caller::Nobody);
    }

    #[test]
    fn container_root_gets_the_boundary_help_names() {
        caller_gets_what_help_says(
            "container_root_gets_the_boundary_help_names",
            Caller::ContainerRoot,
        );
    }

    #[test]
    fn a_user_at_its_process_limit_gets_the_boundary_help_names() {
        caller_gets_what_help_says(
            "a_user_at_its_process_limit_gets_the_boundary_help_names",
            Caller::AtProcessLimit,
        );
    }

    /// A reaper job that kills its keeper: `--help` says what escapes then (what lineage misses), and that is what
    /// escapes.
    #[test]
    fn a_job_that_kills_its_keeper_loses_what_help_says() {
        let test = "a_job_that_kills_its_keeper_loses_what_help_says";
        let (printed, _) = help();
        let entries = entries(&printed);
        let mode = mode_for(&entries, Caller::Nobody);
        let Some(run) = run(test, Caller::Nobody, &["-v"], true) else {
            return;
        };
        assert_eq!(run.mode, mode, "{}", run.stderr);
        let clause = &entries[&mode].escapes;
        let Some((_, then)) = clause.split_once("if the job kills the keeper") else {
            panic!(
                "{mode}: a job that killed its keeper lost {:?}, and --help does not say so: {clause:?}",
                run.escaped
            );
        };
        // The words after the condition: what another entry says escapes it ("what lineage misses"), or a clause.
        let mut says = entries
            .iter()
            .find(|(other, _)| *other != &mode && then.contains(other.as_str()))
            .map_or_else(|| claimed(then), |(_, e)| claimed(&e.escapes));
        says.agent &= run.agent;
        assert_eq!(
            run.escaped, says,
            "{mode}, the keeper killed: --help says {then:?}; {}",
            run.stderr
        );
    }

    /// With `--foreground`, on Linux, every orphan the command leaves is killed once it exits: as `--help` says.
    #[test]
    fn foreground_kills_every_orphan_as_help_says() {
        let test = "foreground_kills_every_orphan_as_help_says";
        let (printed, flat) = help();
        // From "with --foreground (no group)" to the end of its sentence.
        let at = flat
            .find("with --foreground (no group)")
            .unwrap_or_else(|| panic!("--help says nothing of --foreground's boundary: {printed}"));
        let sentence = flat[at..].split(". ").next().unwrap_or_default();
        let Some(run) = run(test, Caller::Root, &["-v", "--foreground"], false) else {
            return;
        };
        assert!(!run.stderr.contains("job boundary"), "{}", run.stderr);
        let says_all = sentence.contains("every orphan");
        assert_eq!(
            run.escaped,
            Escapes::default(),
            "--foreground: --help says {sentence:?}; {}",
            run.stderr
        );
        assert!(
            says_all,
            "--foreground killed every orphan, --help says {sentence:?}"
        );
    }
}

/// Where the build takes the portable branches (macOS, FreeBSD; on Linux a `grouptimeout_portable` build), only the
/// group is reached, as `--help` says: a `setsid` child and an `env -i setsid` one both escape.
#[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
#[test]
fn elsewhere_only_the_group_is_reached() {
    use std::fs;
    let (text, flat) = help();
    assert!(
        flat.contains("Elsewhere only the group is reached"),
        "{text}"
    );
    let dir = common::TempDir::new("elsewhere");
    let folder = dir.0.to_string_lossy().into_owned();
    let tree =
        "setsid sh -c 'echo $$ > \"$1/a\"; exec sleep 300' sh \"$1\" </dev/null >/dev/null 2>&1 &
env -i setsid sh -c 'echo $$ > \"$1/b\"; exec sleep 301' sh \"$1\" </dev/null >/dev/null 2>&1 &
until [ -s \"$1/a\" ] && [ -s \"$1/b\" ]; do sleep 0.05; done";
    let out = Command::new(BIN)
        .args(["-v", "60", "sh", "-c", tree, "sh", &folder])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap()
        .wait_with_output_timeout(RUN_LIMIT)
        .unwrap();
    let pids: Vec<u32> = ["a", "b"]
        .iter()
        .filter_map(|f| fs::read_to_string(dir.0.join(f)).ok()?.trim().parse().ok())
        .collect();
    let _cleanup = common::KillOnDrop::new(pids.clone());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(pids.len(), 2, "{stderr}");
    assert!(
        pids.iter().all(|&p| !common::is_dead(p)),
        "--help says only the group is reached, but the tool killed what left it: {stderr}"
    );
}
