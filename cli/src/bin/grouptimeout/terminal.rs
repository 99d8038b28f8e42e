//! Handing the terminal to the command's group, as a shell does for a job, so that an interactive command reads the
//! terminal and gets Ctrl-C, Ctrl-\ and Ctrl-Z directly; and passing its stops on to the shell.
//!
//! Active when the tool has a controlling terminal. When it shares its process group with nobody but its own
//! ancestors (the shell script that waits for it), the command's group gets the terminal at once. In a pipeline
//! (`grouptimeout 5 cmd | less`), whose other members share the tool's group and may read the terminal themselves,
//! it gets the terminal only once it needs it: when the kernel stops it for reading the terminal (`SIGTTIN`) or for
//! writing to it or changing its settings (`SIGTTOU`), as GNU's command, in the pipeline's group, would read it.
//! Without a terminal (scripts, CI) nothing changes, and in the background (`&`, `bg`) the terminal stays where it
//! is.

use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::time::Duration;

use grouptimeout::GroupChild;
use grouptimeout_cli::host::{self, Terminal};

/// The tool's side of job control: who holds the terminal, and what to do when the command stops or the tool is
/// continued.
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts of the job, each set at its own point"
)]
pub struct JobControl {
    /// `None`: inactive (no terminal).
    terminal: Option<Terminal>,
    /// Whether the tool shares its group with other members of a pipeline: the command's group gets the terminal
    /// only once it is stopped for using it, not at the start.
    in_pipeline: bool,
    /// Whether the command's group is to have the terminal while the tool's group is the foreground group: from the
    /// start, or in a pipeline once the command was stopped for using it.
    wants_terminal: bool,
    /// The command's process group, which may hold the terminal; 0 before [`start`](JobControl::start).
    pgid: u32,
    /// Whether a stop for using the terminal may still be continued: once after each hand-over (a command that was
    /// quicker than the hand-over). A leader stopped again while its group holds the terminal has left its group:
    /// continuing it again and again would spin.
    may_retry: bool,
    /// Whether the command is stopped for using the terminal while the tool runs in the background: a shell's `fg`
    /// of a job that is not stopped sends no `SIGCONT`, so the tool checks now and then whether it is in the
    /// foreground (see [`recheck_in`](JobControl::recheck_in)).
    waiting_for_foreground: bool,
    /// Whether the tool's group held the terminal when the tool last handed it on: a Ctrl-Z would then have stopped
    /// that whole group (a script that runs the tool, waited for by the shell), so the tool stops it, not only
    /// itself, as `sudo` does; otherwise the shell would wait for a script that does not stop.
    stop_own_group: bool,
    /// Whether the tool sent the command a stop signal (`-s STOP`): the stop that follows is the tool's doing, and the
    /// command stays stopped until the tool is continued.
    sent_stop: bool,
}

impl JobControl {
    /// Before the spawn (so that the command, which may read the terminal at once, waits as little as possible for
    /// the hand-over): finds the controlling terminal, if the tool may hand it on.
    pub fn new() -> JobControl {
        let terminal = Terminal::controlling().ok().flatten();
        let in_pipeline = terminal.is_some() && on_a_pipe() && !alone_in_group();
        JobControl {
            terminal,
            in_pipeline,
            wants_terminal: false,
            pgid: 0,
            may_retry: false,
            waiting_for_foreground: false,
            stop_own_group: false,
            sent_stop: false,
        }
    }

    /// After the spawn: gives the terminal to the command's group if the tool's group is the foreground group and
    /// shares it with no other member of a pipeline.
    pub fn start(&mut self, child: &GroupChild) {
        self.pgid = child.id();
        self.wants_terminal = !self.in_pipeline;
        self.give_if_foreground(child);
    }

    /// After the tool sent `signal` to the command's group: a stop signal (`-s STOP`) is not undone by a `SIGCONT`
    /// (see [`on_event`](JobControl::on_event)).
    pub fn sent(&mut self, signal: i32) {
        self.sent_stop |= crate::signals::is_stop_signal(signal);
    }

    /// On `SIGCHLD` or `SIGCONT`, or `None` when the wait for signals timed out (see
    /// [`recheck_in`](JobControl::recheck_in)).
    ///
    /// - The command's leader stopped because it used the terminal while its group did not hold it (`SIGTTIN`,
    ///   `SIGTTOU`): if the terminal is the tool's or already the command's (the command was quicker than the
    ///   hand-over), give it and continue the group, once per hand-over. In the background, leave it stopped, as
    ///   without the tool's job control: the timeout still fires, and once a `fg` gave the tool's group the
    ///   terminal, hand it on and continue the command.
    /// - It stopped otherwise (Ctrl-Z, `SIGSTOP`): take the terminal back and stop the tool too (with its whole group
    ///   if that group held the terminal, as Ctrl-Z would have stopped it: a script running the tool stops too), so
    ///   that the shell sees the job stopped; once continued, continue the command. The deadline keeps running
    ///   meanwhile, and a deadline that passed while the tool was stopped fires as soon as it is continued.
    /// - It stopped because the tool sent it a stop signal (`-s STOP`, see [`sent`](JobControl::sent)): the same,
    ///   but the command is continued only when the tool is (`fg`, `bg`), never at once where the tool cannot stop.
    /// - The tool was continued (`fg`, `bg`): hand the terminal on if the tool's group got it, and continue the
    ///   command's group.
    ///
    /// In a pipeline only the first applies until the command was stopped for using the terminal (see
    /// [`wants_terminal`](JobControl::wants_terminal)); the rest from then on.
    pub fn on_event(&mut self, child: &mut GroupChild, signal: Option<i32>) {
        let Some(terminal) = &self.terminal else {
            return;
        };
        match signal {
            Some(libc::SIGCONT) if self.wants_terminal => return self.resume(child),
            Some(libc::SIGCHLD) => {}
            None if self.waiting_for_foreground && terminal.is_foreground().unwrap_or(false) => {
                return self.resume(child)
            }
            _ => return,
        }
        let Ok(Some(stop)) = host::take_stop(child) else {
            return;
        };
        let held = self.holds_terminal();
        let own = std::mem::take(&mut self.sent_stop);
        let for_terminal = !own && (stop == libc::SIGTTIN || stop == libc::SIGTTOU);
        // In a pipeline, until the command needed the terminal, its other stops are left alone: Ctrl-Z reaches the
        // pipeline's group, the tool with it, not the command's.
        if !for_terminal && !self.wants_terminal {
            return;
        }
        if for_terminal {
            self.wants_terminal = true;
            if !held {
                self.give_if_foreground(child);
            }
            if self.may_retry && self.holds_terminal() {
                self.may_retry = false;
                let _ = child.signal(libc::SIGCONT);
            } else if !self.holds_terminal() {
                self.waiting_for_foreground = true;
            }
            return;
        }
        if held {
            let _ = terminal.take_back();
        }
        // Returns once continued, or at once where the tool cannot stop (an orphaned group, `SIGTSTP` ignored).
        if !self.stop_own_group || host::stop_own_group().is_err() {
            let _ = host::stop_self();
        }
        // After a stop of the tool's own, the `SIGCONT` that continues the tool continues the command.
        if !own {
            self.resume(child);
        }
    }

    /// How long the tool may wait for a signal before it calls [`on_event`](JobControl::on_event) with `None`:
    /// `None` (no limit) unless the command waits for the terminal while the tool runs in the background.
    pub fn recheck_in(&self) -> Option<Duration> {
        self.waiting_for_foreground
            .then_some(Duration::from_millis(100))
    }

    /// Before the tool exits or abandons the command: its own group gets the terminal back, if the command's group
    /// holds it (the command may be gone: a group whose members all exited keeps the terminal).
    pub fn finish(&self) {
        if let Some(terminal) = self.terminal.as_ref().filter(|_| self.holds_terminal()) {
            let _ = terminal.take_back();
        }
    }

    /// Whether the command's group holds the terminal.
    fn holds_terminal(&self) -> bool {
        self.terminal
            .as_ref()
            .is_some_and(|t| t.is_held_by(self.pgid).unwrap_or(false))
    }

    /// Gives the terminal to the command if the tool's group holds it, then continues the command's group.
    fn resume(&mut self, child: &mut GroupChild) {
        self.waiting_for_foreground = false;
        self.give_if_foreground(child);
        let _ = child.signal(libc::SIGCONT);
    }

    /// Gives the terminal to the command's group if it is to have it ([`wants_terminal`](JobControl::wants_terminal))
    /// and the tool's group is the foreground group.
    fn give_if_foreground(&mut self, child: &GroupChild) {
        if let Some(terminal) = self.terminal.as_ref().filter(|_| self.wants_terminal) {
            if terminal.is_foreground().unwrap_or(false) && terminal.give_to(child).is_ok() {
                self.may_retry = true;
                self.stop_own_group = true;
            }
        }
    }
}

/// Whether standard input or output is a pipe (or a socket): then the tool may be one member of a pipeline, whose
/// other members share its group. Otherwise [`alone_in_group`] is not asked.
fn on_a_pipe() -> bool {
    [io::stdin().as_fd(), io::stdout().as_fd()]
        .into_iter()
        .any(|fd| {
            fd.try_clone_to_owned()
                .and_then(|fd| fs::File::from(fd).metadata())
                .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket())
        })
}

/// Whether no other live process shares the tool's group but its ancestors (a script waiting for it). The other
/// members of a pipeline are children of the shell that started it, which is the tool's parent or the nearest
/// ancestor outside the group: so this lists the children of the tool and of each ancestor up to that one
/// (`/proc/PID/task/*/children`), a few reads instead of a scan of `/proc` (which took 60 ms on a busy machine).
/// `false` when `/proc` cannot tell (not Linux): the terminal then stays where it is.
fn alone_in_group() -> bool {
    let mut pid = std::process::id();
    let Some((_, group)) = parent_and_group(pid) else {
        return false;
    };
    let mut below = None;
    loop {
        let Some(children) = children_of(pid) else {
            return false;
        };
        let shared = children
            .into_iter()
            .filter(|&child| Some(child) != below)
            .any(|child| parent_and_group(child).is_some_and(|(_, g)| g == group));
        if shared {
            return false;
        }
        match parent_and_group(pid) {
            Some((parent, g)) if g == group && parent > 1 => {
                below = Some(pid);
                pid = parent;
            }
            // `pid` is outside the group (the shell that started the tool, or its pipeline): the search ends there.
            Some(_) => return true,
            None => return false,
        }
    }
}

/// The children of `pid`, from `/proc/PID/task/*/children` (Linux with `CONFIG_PROC_CHILDREN`).
fn children_of(pid: u32) -> Option<Vec<u32>> {
    let mut children = Vec::new();
    for task in fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let text = fs::read_to_string(task.ok()?.path().join("children")).ok()?;
        children.extend(
            text.split_ascii_whitespace()
                .filter_map(|s| s.parse::<u32>().ok()),
        );
    }
    Some(children)
}

/// Parent pid and process group of `/proc/PID`, for a process that is alive (not a zombie).
fn parent_and_group(pid: u32) -> Option<(u32, u32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields we want follow the last ')'.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    (state != "Z" && state != "X").then_some((parent, group))
}
