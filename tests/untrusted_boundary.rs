//! A boundary attached through the hidden `__private` (which any crate can name) is trusted with none of this
//! crate's signals (issue 37.3): whatever it answers, no signal of this crate follows a foreign reap of the leader
//! that came before its own check (one in the instant between that check and the `kill(2)` is not seen: see
//! `src/boundary.rs`), and every kill reaches the whole group. (What it is trusted with, the two promises of the
//! `unsafe` trait's contract, this boundary keeps: it watches the leader and lists no descriptor.)

mod common;

use std::any::Any;
use std::io;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use grouptimeout::__private::{self as private, Boundary};
use grouptimeout::{GroupChild, GroupCommandExt};

/// What a [`Liar`] says of the leader's exit.
#[derive(Debug, Clone, Copy)]
enum Says {
    /// Always this, whatever the leader does (and also after someone else reaped it).
    Always(bool),
    /// The truth (`waitid` with `WNOWAIT`, as the core's own check).
    Truth,
}

/// A boundary that signals nothing and answers as told: `exited` as `says`; `signal` returns `Ok` without calling
/// the group's signal; `keeps_group` answers `kept` ("the leader is my keeper, spare it").
#[derive(Debug)]
struct Liar {
    says: Says,
    kept: bool,
}

impl Liar {
    fn boundary(says: Says, kept: bool) -> Arc<dyn Boundary> {
        Arc::new(Liar { says, kept })
    }
}

// SAFETY: `watched` is the leader, and `rest_exited` (provided) lists no descriptor: the contract's two promises.
unsafe impl Boundary for Liar {
    fn watched(&self, leader: u32) -> u32 {
        leader
    }
    fn exited(&self, leader: u32) -> io::Result<bool> {
        match self.says {
            Says::Always(exited) => Ok(exited),
            Says::Truth => private::sys::has_exited(leader),
        }
    }
    fn signal(&self, _: u32, _: i32, _: &mut dyn FnMut() -> io::Result<()>) -> io::Result<()> {
        Ok(())
    }
    fn keeps_group(&self, _: u32) -> bool {
        self.kept
    }
    fn judge(&self, _: u32, _: bool) {}
    fn take_reached(&self) {}
    fn end(&self, _: bool) -> io::Result<()> {
        Ok(())
    }
    fn record(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        None
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `sh -c SCRIPT` with its stdout piped: SCRIPT starts `sleep 60 &` first and prints its pid.
fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command
        .args(["-c", &format!("sleep 60 & echo $!; {script}")])
        .stdout(Stdio::piped());
    command
}

/// The member `sleep 60` that `child`'s script printed, killed by pid when the test ends.
fn member_of(child: &mut GroupChild) -> (u32, KillOnDrop) {
    let member = read_pid(child.stdout.take().expect("piped stdout"));
    assert_eq!(state_and_group(member).map(|(_, g)| g), Some(child.id()));
    (member, KillOnDrop::new(vec![member]))
}

/// Spawns `sh` (whose leader exits at once, leaving its member `sleep 60` in the group) with `boundary`, and reaps the
/// leader as someone else would (a `waitpid` elsewhere in the program): the group's id lives on in the member.
fn reaped_by_someone_else(boundary: Arc<dyn Boundary>) -> (GroupChild, u32, KillOnDrop) {
    let mut child = private::spawn(&mut sh("exit 0"), boundary).unwrap();
    let (member, cleanup) = member_of(&mut child);
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: `status` is a live int; `pid` is our child, which nothing else in this test waits for.
    assert_eq!(unsafe { libc::waitpid(pid, &raw mut status, 0) }, pid);
    (child, member, cleanup)
}

fn echild<T: std::fmt::Debug>(result: io::Result<T>) {
    let err = result.expect_err("refused after a foreign reap");
    assert_eq!(err.raw_os_error(), Some(libc::ECHILD), "{err:?}");
}

/// The member was signalled by nothing: still alive a while after the calls.
fn untouched(member: u32) {
    assert!(
        !eventually(Duration::from_millis(500), || is_dead(member)),
        "the member {member} of a group whose leader someone else reaped was signalled"
    );
}

#[test]
fn a_boundary_that_hides_a_foreign_reap_cannot_make_the_core_signal() {
    // `exited` says the leader runs, where the core's own check says ECHILD.
    let (mut child, member, _cleanup) =
        reaped_by_someone_else(Liar::boundary(Says::Always(false), false));
    echild(child.kill());
    echild(child.signal(libc::SIGTERM));
    echild(child.handle().kill());
    echild(child.wait_timeout(Duration::ZERO));
    drop(child);
    untouched(member);
}

#[test]
fn a_boundary_that_says_a_foreign_reaped_leader_exited_cannot_make_the_core_signal() {
    // `exited` says "exited": the wait goes on to the leftovers' kill, which the core refuses.
    let (mut child, member, _cleanup) =
        reaped_by_someone_else(Liar::boundary(Says::Always(true), false));
    echild(child.try_wait());
    echild(child.wait());
    echild(child.wait_timeout(Duration::from_secs(1)));
    drop(child);
    untouched(member);
}

/// Every process of the group dies (checked in `/proc`), long before it would end on its own.
fn all_dead(pids: &[u32]) {
    assert_eq!(
        survivors_after(Duration::from_secs(10), pids),
        Vec::<u32>::new(),
        "a boundary that signals nothing kept members of the group alive"
    );
}

#[test]
fn a_boundary_that_signals_nothing_cannot_keep_the_group_from_a_deadline() {
    for kept in [true, false] {
        // The leader would run 5 s, its member 60 s.
        let mut child =
            private::spawn(&mut sh("exec sleep 5"), Liar::boundary(Says::Truth, kept)).unwrap();
        let leader = child.id();
        let (member, _cleanup) = member_of(&mut child);
        let outcome = child.wait_timeout(Duration::from_millis(200)).unwrap();
        assert!(outcome.timed_out(), "{outcome:?}");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&outcome.status()),
            Some(libc::SIGKILL),
            "kept {kept}: the leader was not killed at the deadline: {outcome:?}"
        );
        all_dead(&[leader, member]);
    }
}

#[test]
fn a_boundary_that_signals_nothing_cannot_keep_the_group_from_a_kill_or_a_signal() {
    for kept in [true, false] {
        let boundary = || Liar::boundary(Says::Truth, kept);
        // `kill`, then the wait.
        let mut child = private::spawn(&mut sh("exec sleep 30"), boundary()).unwrap();
        let leader = child.id();
        let (member, _cleanup) = member_of(&mut child);
        child.kill().unwrap();
        all_dead(&[leader, member]);
        assert!(!child.wait().unwrap().success());

        // A handle's kill, the boundary attached after the spawn.
        let mut child = sh("exec sleep 30").spawn_group().unwrap();
        private::attach(&mut child, boundary()).unwrap();
        let leader = child.id();
        let (member, _cleanup) = member_of(&mut child);
        child.handle().kill().unwrap();
        all_dead(&[leader, member]);
        assert!(!child.wait().unwrap().success());

        // A catchable signal reaches the group too (`sleep` dies of SIGTERM).
        let mut child = private::spawn(&mut sh("exec sleep 30"), boundary()).unwrap();
        let leader = child.id();
        let (member, _cleanup) = member_of(&mut child);
        child.signal(libc::SIGTERM).unwrap();
        all_dead(&[leader, member]);
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGTERM)
        );
    }
}
