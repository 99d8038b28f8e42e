//! The tool at a real terminal: it hands the terminal to the command's group, passes Ctrl-Z on to the shell, and
//! gives the terminal back.
//!
//! Two pseudo-terminals: `script -qec CMD /dev/null` (a non-interactive `sh` without job control, which does not
//! take the terminal back by itself) and a `tmux` server on its own socket running an interactive `bash` (job
//! control: Ctrl-C, Ctrl-Z, `fg`). Every wait is bounded, every tmux server is killed (its socket removed) when its
//! test ends, and process states are read from `/proc`.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use grouptimeout::GroupCommandExt;

mod common;
#[path = "common/job.rs"]
mod job_common;
use common::{eventually, have, is_dead, KillOnDrop};

const BIN: &str = env!("CARGO_BIN_EXE_grouptimeout");
/// Upper bound of every wait: a regression fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// Runs `sh -c SCRIPT` on a new pseudo-terminal through `script`, with `input` typed in, and returns what the
/// terminal showed (bounded: the whole run is a killed group after [`LIMIT`]).
fn on_script_terminal(script: &str, input: &str) -> String {
    let mut child = Command::new("script")
        .args(["-qec", script, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .expect("spawn script");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let captured = child.wait_with_output_timeout(LIMIT).unwrap();
    assert!(!captured.outcome.timed_out(), "script did not finish");
    String::from_utf8_lossy(&captured.stdout).into_owned()
}

/// What a terminal showed for a command that read `hello` and echoed `got:hello`, then `rc=0` from its shell.
#[track_caller]
fn assert_read_hello_and_exited_0(shown: &str) {
    assert!(
        shown.contains("got:hello") && shown.contains("rc=0"),
        "{shown:?}"
    );
}

/// Fields of `/proc/PID/stat` after the command name: 0 state, 1 ppid, 2 pgrp, 3 session, 4 tty, 5 tpgid.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        stat[stat.rfind(')')? + 1..]
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

/// Whether `pid` is alive and its group is its terminal's foreground group.
fn holds_terminal(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f[2] == f[5])
}

fn is_stopped(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f[0] == "T")
}

/// What a failed test says of process `pid` (the tool): its `stat`, where it sleeps, and its signal masks.
fn state_of(pid: u32) -> String {
    let read = |file: &str| fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    let status = read("status");
    let signals: Vec<&str> = (status.lines())
        .filter(|l| {
            ["State", "SigPnd", "ShdPnd", "SigBlk"]
                .iter()
                .any(|k| l.starts_with(k))
        })
        .collect();
    format!(
        "pid {pid}: stat {:?}, wchan {:?}, {signals:?}, stack {:?}",
        read("stat").trim(),
        read("wchan"),
        read("stack")
    )
}

#[test]
fn the_command_reads_the_terminal() {
    if !have("the_command_reads_the_terminal", "script", "--version") {
        return;
    }
    let shown = on_script_terminal(
        &format!("{BIN} 5 sh -c 'read x; echo got:$x'; echo rc=$?"),
        "hello\n",
    );
    assert_read_hello_and_exited_0(&shown);
}

#[test]
fn the_terminal_is_handed_back() {
    if !have("the_terminal_is_handed_back", "script", "--version") {
        return;
    }
    // The shell that `script` runs has no job control: it does not take the terminal back by itself.
    let shown = on_script_terminal(
        &format!(
            "{BIN} 5 sh -c 'read x'; rc=$?; set -- $(sed 's/.*) //' /proc/$$/stat); echo pgrp=$3 tpgid=$6 rc=$rc"
        ),
        "x\n",
    );
    let line = shown
        .lines()
        .find(|l| l.starts_with("pgrp="))
        .unwrap_or_else(|| panic!("{shown:?}"));
    let fields: Vec<&str> = line
        .split_whitespace()
        .map(|f| f.split('=').nth(1).unwrap())
        .collect();
    assert_eq!(
        fields[0], fields[1],
        "the shell's group lost the terminal: {line}"
    );
    assert_eq!(fields[2], "0", "{line}");
}

/// A tmux server on its own socket, running an interactive bash in one pane; killed (and its socket removed) when
/// dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(test: &str) -> Option<Tmux> {
        if !have(test, "tmux", "-V") || !have(test, "bash", "--version") {
            return None;
        }
        let tmux = Tmux {
            socket: common::temp_path(&format!("tmux-{test}")),
        };
        tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "250",
            "-y",
            "50",
            "env PS1='$ ' HISTFILE=/dev/null bash --norc --noprofile -i",
        ]);
        tmux.expect("$ ");
        Some(tmux)
    }

    /// Runs one tmux client command against this server (bounded) and returns its output.
    fn run(&self, args: &[&str]) -> String {
        let child = Command::new("tmux")
            .env_remove("TMUX")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn_group()
            .expect("spawn tmux");
        let captured = child
            .wait_with_output_timeout(Duration::from_secs(10))
            .unwrap();
        String::from_utf8_lossy(&captured.stdout).into_owned()
    }

    /// Types `keys` (tmux key names: `Enter`, `C-z`) into the pane.
    fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Types a command line and Enter.
    fn type_line(&self, line: &str) {
        self.send(&["-l", line]);
        self.send(&["Enter"]);
    }

    /// What the pane shows, history included, wrapped lines joined.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-500", "-t", "0"])
    }

    /// Waits (bounded) until the pane shows `text`; returns the screen then.
    fn wait_for(&self, text: &str) -> Option<String> {
        let mut screen = String::new();
        eventually(LIMIT, || {
            screen = self.screen();
            screen.contains(text)
        })
        .then_some(screen)
    }

    /// Waits (bounded) until the pane shows `text`, and returns the screen then; panics with the screen if it never
    /// does.
    #[track_caller]
    fn expect(&self, text: &str) -> String {
        self.wait_for(text)
            .unwrap_or_else(|| panic!("no {text:?} on the screen: {}", self.screen()))
    }

    /// Asks the shell for the last status (`echo rc=$?`) and waits (bounded) until it shows `rc=CODE`; returns the
    /// screen then.
    #[track_caller]
    fn expect_status(&self, code: i32) -> String {
        self.type_line("echo rc=$?");
        self.expect(&format!("rc={code}"))
    }

    /// Types the command line `line`, whose command prints `pid:N`, and returns N (the leader) with the tool and the
    /// leader, killed when dropped if a test fails.
    fn start_job(&self, line: &str) -> (u32, KillOnDrop) {
        self.type_line(line);
        let pid = self.wait_for_pid();
        let mut tool = common::parent_of(pid).expect("the leader's parent");
        // A contained job's keeper (between the tool and the command) is not the tool.
        if fs::read_to_string(format!("/proc/{tool}/comm"))
            .is_ok_and(|c| c.trim() == "group-keeper")
        {
            tool = common::parent_of(tool).expect("the keeper's parent");
        }
        // The tool first: a command killed first could end its job cleanly, and its keeper then exits inside the job's
        // folder for the tool to remove, which a tool killed an instant later cannot (`spawn_contained`'s docs).
        (pid, KillOnDrop::new(vec![tool, pid]))
    }

    /// Waits (bounded) for an output `pid:N` and returns N.
    fn wait_for_pid(&self) -> u32 {
        let mut pid = None;
        eventually(LIMIT, || {
            // Anywhere in a line: after a background start the shell's prompt may come first.
            pid = self.screen().split("pid:").skip(1).find_map(|rest| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u32>().ok()
            });
            pid.is_some()
        });
        pid.unwrap_or_else(|| panic!("no pid line: {}", self.screen()))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
        let _ = fs::remove_file(&self.socket);
    }
}

/// `fg` continues the job stopped at `pid` and hands it the terminal; it reads a line and ends with status 0.
#[track_caller]
fn fg_hands_on_the_terminal(tmux: &Tmux, pid: u32, procs: &KillOnDrop) {
    tmux.type_line("fg");
    assert!(
        eventually(LIMIT, || holds_terminal(pid) && !is_stopped(pid)),
        "fg did not hand the terminal on"
    );
    tmux.type_line("hi");
    tmux.expect("got:hi");
    tmux.expect_status(0);
    assert!(procs.0.iter().all(|&p| is_dead(p)));
}

#[test]
fn ctrl_c_reaches_the_command_group_directly() {
    let Some(tmux) = Tmux::start("ctrl_c") else {
        return;
    };
    // (A deadline no run of this test reaches: at 20 s, a slow run once timed out just as Ctrl-C was typed.)
    let (pid, procs) = tmux.start_job(&format!("{BIN} -v 120 sh -c 'echo pid:$$; sleep 30'"));
    assert!(
        eventually(LIMIT, || holds_terminal(pid)),
        "the command's group never got the terminal"
    );
    tmux.send(&["C-c"]);
    // bash drops the rest of a command line whose command died of SIGINT: ask for the status on its own line.
    assert!(
        eventually(LIMIT, || is_dead(procs.0[0])),
        "the tool still runs: {}; the screen: {}",
        state_of(procs.0[0]),
        tmux.screen()
    );
    let screen = tmux.expect_status(130);
    // With -v the tool reports every signal it sends: Ctrl-C went to the group, not through the tool.
    assert!(!screen.contains("sending signal"), "{screen}");
    assert!(procs.0.iter().all(|&p| is_dead(p)));
}

#[test]
fn ctrl_z_stops_the_job_and_fg_continues_it_with_the_terminal() {
    let Some(tmux) = Tmux::start("ctrl_z_fg") else {
        return;
    };
    let (pid, procs) = tmux.start_job(&format!(
        "{BIN} 120 sh -c 'echo pid:$$; read x; echo got:$x'"
    ));
    let tool = procs.0[0];
    assert!(eventually(LIMIT, || holds_terminal(pid)));
    tmux.send(&["C-z"]);
    assert!(
        tmux.wait_for("Stopped").is_some(),
        "no \"Stopped\" on the screen: {}; the command {}; the tool {}",
        tmux.screen(),
        state_of(pid),
        state_of(tool)
    );
    assert!(is_stopped(pid) && is_stopped(tool));
    // The shell has the terminal again: the tool took it back before stopping.
    tmux.type_line("echo shell-has-it");
    tmux.expect("\nshell-has-it");
    fg_hands_on_the_terminal(&tmux, pid, &procs);
}

#[test]
fn ctrl_z_then_bg_continues_the_command_without_the_terminal() {
    let Some(tmux) = Tmux::start("ctrl_z_bg") else {
        return;
    };
    // The command finishes once told to (`go` made), not after a fixed time: a Ctrl-Z that comes after the command's
    // end (a test slowed down on a loaded machine) would stop nothing, and no "Stopped" would ever come.
    let go = common::temp_path("ctrl_z_bg_go");
    let (pid, procs) = tmux.start_job(&format!(
        "{BIN} 120 sh -c 'echo pid:$$; read x; echo read:$x; until [ -e {} ]; do sleep 0.1; done; echo done:$x'",
        go.display()
    ));
    assert!(eventually(LIMIT, || holds_terminal(pid)));
    tmux.type_line("early");
    tmux.expect("read:early");
    tmux.send(&["C-z"]);
    tmux.expect("Stopped");
    tmux.type_line("bg");
    // The command runs on in the background, and the shell keeps the terminal.
    assert!(
        eventually(LIMIT, || !is_stopped(pid)),
        "bg did not continue the command"
    );
    assert!(!holds_terminal(pid));
    fs::write(&go, "").unwrap();
    tmux.expect("done:early");
    let _ = fs::remove_file(&go);
    tmux.type_line("wait; echo rc=$?");
    tmux.expect("rc=0");
    assert!(procs.0.iter().all(|&p| is_dead(p)));
}

#[test]
fn ctrl_z_then_the_deadline_passes() {
    let Some(tmux) = Tmux::start("ctrl_z_timeout") else {
        return;
    };
    // The deadline leaves a loaded machine time for the Ctrl-Z (a few tmux calls) before it.
    let (pid, procs) = tmux.start_job(&format!("{BIN} 5 sh -c 'echo pid:$$; read x'"));
    // The tool started before its command printed the pid: its deadline is less than 5 s from here.
    let start = Instant::now();
    assert!(eventually(LIMIT, || holds_terminal(pid)));
    tmux.send(&["C-z"]);
    tmux.expect("Stopped");
    // The deadline passes while the job is stopped; it fires as soon as the job is continued.
    thread::sleep(Duration::from_secs(6).saturating_sub(start.elapsed()));
    assert!(
        is_stopped(pid),
        "the command was continued while the job was stopped"
    );
    tmux.type_line("fg; echo rc=$?");
    tmux.expect("rc=124");
    assert!(procs.0.iter().all(|&p| is_dead(p)));
}

#[test]
fn a_background_run_leaves_the_terminal_alone() {
    let Some(tmux) = Tmux::start("background") else {
        return;
    };
    // In the background the command's read stops it (SIGTTIN), as without the tool; the deadline ends it.
    let (_, procs) = tmux.start_job(&format!(
        "{BIN} 2 sh -c 'echo pid:$$; read x </dev/tty; echo got:$x' & wait $!; echo rc=$?"
    ));
    let screen = tmux.expect("rc=124");
    assert!(!screen.lines().any(|l| l.starts_with("got:")), "{screen}");
    assert!(procs.0.iter().all(|&p| is_dead(p)));
    tmux.type_line("echo shell-has-it");
    tmux.expect("\nshell-has-it");
}

#[test]
fn in_a_pipeline_the_terminal_stays_with_the_pipeline() {
    let Some(tmux) = Tmux::start("pipeline") else {
        return;
    };
    // The tool shares its group with the other side of the pipe, which reads the terminal: it keeps it.
    let (pid, _procs) = tmux.start_job(&format!(
        "{BIN} 10 sh -c 'echo pid:$$ >/dev/tty; sleep 1' | {{ read y </dev/tty; echo typed:$y; }}"
    ));
    tmux.type_line("abc");
    tmux.expect("typed:abc");
    assert!(!holds_terminal(pid));
}

/// Issue 37.5: at an interactive bash, `grouptimeout 10 head -n1 | sed s/^/X/`: the command reads what is typed, as
/// under GNU `timeout` (which shares the pipeline's group with its command), and the terminal goes back to the
/// pipeline's group once it is done, where the other member reads it next. (The tool used to keep the terminal with
/// the pipeline: the command was stopped by `SIGTTIN` until the deadline, and bash then ran the typed line.)
#[test]
fn in_a_pipeline_a_command_that_reads_the_terminal_gets_it() {
    let Some(tmux) = Tmux::start("pipeline_reader") else {
        return;
    };
    let gnu = "/usr/bin/timeout";
    for (tool, marker) in [(gnu, "G"), (BIN, "X")] {
        if tool == gnu && !std::path::Path::new(gnu).exists() {
            continue;
        }
        // The pid line is the only one with a "pid:" the first time round: the second round reads its own.
        tmux.run(&["clear-history", "-t", "0"]);
        tmux.type_line("clear");
        assert!(eventually(LIMIT, || !tmux.screen().contains("pid:")));
        let (_, procs) = tmux.start_job(&format!(
            "{tool} 60 sh -c 'echo pid:$$ >/dev/tty; exec head -n1' | {{ sed s/^/{marker}/; read y </dev/tty; echo typed-{marker}:$y; }}"
        ));
        tmux.type_line("hello");
        tmux.expect(&format!("\n{marker}hello"));
        tmux.type_line("abc");
        tmux.expect(&format!("\ntyped-{marker}:abc"));
        tmux.type_line(&format!("echo rc-{marker}=$?"));
        tmux.expect(&format!("rc-{marker}=0"));
        assert!(procs.0.iter().all(|&p| is_dead(p)), "{tool}");
    }
}

#[test]
fn ctrl_z_where_the_tool_cannot_stop_continues_the_command() {
    if !have("ctrl_z_where_the_tool_cannot_stop", "script", "--version") {
        return;
    }
    // A lone command of `script -c` is exec'd by its shell: the tool leads the session, its group is orphaned and
    // the kernel discards its SIGTSTP. It must not leave the command stopped until the deadline.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "(sleep 1; printf '\\032'; sleep 1; printf 'hello\\n') | script -qec \"{BIN} 10 sh -c 'read x; echo got:\\$x'\" /dev/null; echo rc=$?"
        ))
        .stdout(Stdio::piped())
        .spawn_group()
        .expect("spawn sh");
    child.set_output_limit(1 << 16);
    let captured = child.wait_with_output_timeout(LIMIT).unwrap();
    let shown = String::from_utf8_lossy(&captured.stdout);
    assert_read_hello_and_exited_0(&shown);
}

#[test]
fn a_pipe_from_outside_the_group_does_not_keep_the_terminal() {
    if !have("a_pipe_from_outside_the_group", "script", "--version") {
        return;
    }
    // Standard input is a FIFO, so the tool looks for pipeline members in its group: there are none (its shell
    // waits for it), so the command's group gets the terminal.
    let fifo = common::temp_path("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let shown = on_script_terminal(
        &format!(
            "{BIN} 5 sh -c 'read x </dev/tty; echo got:$x' 0<>{}; echo rc=$?",
            fifo.display()
        ),
        "hello\n",
    );
    let _ = fs::remove_file(&fifo);
    assert_read_hello_and_exited_0(&shown);
}

#[test]
fn take_stop_reports_a_stop_once_and_never_consumes_the_exit() {
    let mut child = Command::new("sleep")
        .arg("30")
        .spawn_group()
        .expect("spawn sleep");
    let _guard = KillOnDrop::new(vec![child.id()]);
    assert_eq!(grouptimeout_cli::host::take_stop(&child).unwrap(), None);
    child.signal(libc::SIGSTOP).unwrap();
    let mut stop = None;
    assert!(eventually(LIMIT, || {
        stop = grouptimeout_cli::host::take_stop(&child).unwrap();
        stop.is_some()
    }));
    assert_eq!(stop, Some(libc::SIGSTOP));
    // Reported once.
    assert_eq!(grouptimeout_cli::host::take_stop(&child).unwrap(), None);
    child.kill().unwrap();
    assert!(eventually(LIMIT, || is_dead(child.id())));
    // An exit is not a stop, and stays for the handle to reap.
    assert_eq!(grouptimeout_cli::host::take_stop(&child).unwrap(), None);
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    // Once reaped, nothing to report.
    assert_eq!(grouptimeout_cli::host::take_stop(&child).unwrap(), None);
}

/// Voluntary context switches of `pid` so far: how often it went to sleep.
fn sleeps(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_leader_that_left_its_group_is_not_continued_again_and_again() {
    let Some(tmux) = Tmux::start("left_group") else {
        return;
    };
    // The leader joins the shell's group (which ignores SIGTTIN; above the tool, and above a contained job's keeper)
    // and reads: each read stops it again, alone, while
    // its own group holds the terminal.
    let (pid, procs) = tmux.start_job(&format!(
        "{BIN} 4 perl -e 'open F, \"/proc/\".getppid().\"/stat\"; @f = split / /, <F>; if ($f[1] eq \"(group-keeper)\") {{ open F, \"/proc/$f[3]/stat\"; @f = split / /, <F> }} setpgrp(0, getpgrp($f[3])); $|=1; print \"pid:$$\\n\"; sysread(STDIN, $x, 1)'"
    ));
    let tool = procs.0[0];
    assert!(eventually(LIMIT, || is_stopped(pid)));
    thread::sleep(Duration::from_millis(300));
    // Counted on the command, which runs only when continued: the tool itself may wake every 10 ms where it polls
    // for its signals (macOS, `--cfg grouptimeout_portable`).
    let before = sleeps(pid);
    thread::sleep(Duration::from_secs(1));
    let woken = sleeps(pid) - before;
    assert!(
        woken < 50,
        "the command woke {woken} times in a second: the tool keeps continuing it"
    );
    assert!(eventually(LIMIT, || is_dead(tool)), "no timeout");
    tmux.expect_status(124);
}

#[test]
fn fg_hands_the_terminal_to_a_command_started_in_the_background() {
    let Some(tmux) = Tmux::start("background_fg") else {
        return;
    };
    // The reader is sed, which calls read(2) at once: busybox sh's `read` first waits in poll(2), which a background
    // job may do without being stopped.
    let (pid, procs) = tmux.start_job(&format!(
        "{BIN} 120 sh -c 'echo pid:$$; exec sed \"s/^/got:/;q\"' &"
    ));
    // Its read stopped it (SIGTTIN), as any background job; the terminal stayed with the shell.
    assert!(eventually(LIMIT, || is_stopped(pid)));
    assert!(!holds_terminal(pid));
    fg_hands_on_the_terminal(&tmux, pid, &procs);
}

#[test]
fn stty_tostop_never_stops_the_tool() {
    // Issue 16.4: with `stty tostop`, a background tool's `-v` message raised SIGTTOU and stopped it before it sent
    // the deadline's signal; the command ran on until `fg`. Its pid goes to a file: the command's own write to the
    // terminal would stop it (it keeps the default action, as without the tool).
    let Some(tmux) = Tmux::start("tostop") else {
        return;
    };
    let file = common::temp_path("tostop-pid");
    tmux.type_line(&format!(
        "stty tostop; {BIN} -v 2 sh -c 'echo $$ > {0}; exec sleep 30' & wait $!; echo rc=$?; stty -tostop",
        file.display()
    ));
    let mut pid = None;
    assert!(eventually(LIMIT, || {
        pid = fs::read_to_string(&file)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        pid.is_some()
    }));
    let _ = fs::remove_file(&file);
    let pid: u32 = pid.unwrap();
    let procs = KillOnDrop::new(vec![pid, common::parent_of(pid).expect("the tool")]);
    let screen = tmux.expect("\nrc=");
    assert!(screen.contains("rc=124"), "{screen}");
    assert!(screen.contains("sending signal TERM"), "{screen}");
    assert!(procs.0.iter().all(|&p| is_dead(p)));
}

#[test]
fn ctrl_z_stops_a_script_that_runs_the_tool() {
    // Issue 16.11: the shell waits for the script's group; stopping the tool alone left no prompt.
    let Some(tmux) = Tmux::start("ctrl_z_script") else {
        return;
    };
    let (pid, mut procs) = tmux.start_job(&format!(
        "sh -c '{BIN} 120 sh -c \"echo pid:\\$\\$; read x; echo got:\\$x\"; echo after'"
    ));
    let tool = procs.0[0];
    procs.0.push(common::parent_of(tool).expect("the script"));
    assert!(eventually(LIMIT, || holds_terminal(pid)));
    tmux.send(&["C-z"]);
    tmux.expect("Stopped");
    assert!(procs.0.iter().all(|&p| is_stopped(p)));
    tmux.type_line("jobs; echo shell-has-it");
    tmux.expect("\nshell-has-it");
    fg_hands_on_the_terminal(&tmux, pid, &procs);
    // The script printed "after" before its status was shown, but the terminal may have echoed the status request,
    // typed meanwhile, in front of it ("echo rc=$?after"): a line that ends with it (the command line ends "after'").
    let screen = tmux.screen();
    assert!(
        screen.lines().any(|line| line.ends_with("after")),
        "no \"after\" on the screen: {screen}"
    );
}
