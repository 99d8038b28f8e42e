//! What a plain group used (issue 39.1): the leader's resource usage from its reap (`wait4`), known once any wait
//! (blocking, stepped, capturing, `try_wait`) reaped it, none before, and labelled partial (`Measured::Leader`).

use std::process::Command;
use std::time::{Duration, Instant};

use grouptimeout::{GroupChild, GroupCommandExt as _, Measured, Step, Usage};

/// A leader that waits for a child that burns about 0.2 s of user CPU (a fixed count of shell arithmetic) and exits.
fn burner() -> GroupChild {
    Command::new("sh")
        .args([
            "-c",
            "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; exit 0",
        ])
        .spawn_group()
        .unwrap()
}

/// The usage of a leader that waited for its burning child: the child's CPU is in it, labelled partial.
fn check(usage: Option<Usage>) {
    let usage = usage.expect("usage once the leader was reaped");
    assert_eq!(usage.measured, Measured::Leader, "{usage:?}");
    assert!(usage.user >= Duration::from_millis(50), "{usage:?}");
    assert_eq!(usage.cpu(), usage.user + usage.system);
    assert!(
        !usage.memory_whole_job && usage.memory.is_some_and(|m| m > 0),
        "{usage:?}"
    );
    assert_eq!(usage.processes, None);
}

#[test]
fn every_wait_gives_the_leaders_usage_once_it_reaped_it() {
    let mut child = burner();
    assert_eq!(child.usage(), None);
    child.wait_timeout(Duration::from_secs(60)).unwrap();
    check(child.usage());

    let mut child = burner();
    while child.try_wait().unwrap().is_none() {
        assert_eq!(child.usage(), None);
        std::thread::sleep(Duration::from_millis(5));
    }
    check(child.usage());

    let mut child = burner();
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Step::Pending(_) = child.step(Some(deadline)).unwrap() {
        std::thread::sleep(Duration::from_millis(5));
    }
    check(child.usage());

    #[cfg(feature = "capture")]
    {
        let captured = burner()
            .wait_with_output_timeout(Duration::from_secs(60))
            .unwrap();
        check(Some(captured.usage));
    }
}
