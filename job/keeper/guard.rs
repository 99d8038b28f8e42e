//! The guard of a job without a keeper (`die_with_parent` of a plain group or a lineage job): this program, started
//! in the job's group with every signal blocked (so that no signal to the group, a member's `kill 0` or a grace
//! signal, can end it but `SIGKILL`), holding the read end of a pipe whose write end only its caller holds. Its
//! membership keeps the group's id from being reused. When the caller dies, the pipe reaches end of file: the guard
//! gives the death plan the caller last wrote on the pipe (`SIGNAL CONT GRACE_MS`: the signal to its group and to
//! the leader by its pid, should it have left the group; `SIGCONT` unless it stops; up to the grace for the leader to
//! exit), then sends its group `SIGKILL`, itself included.

use std::fs::File;
use std::io::Read as _;
use std::os::fd::{AsRawFd as _, IntoRawFd as _, RawFd};
use std::time::{Duration, Instant};

use crate::sys;

/// Guards the group `leader`, the pipe inherited as `pipe`. Never returns.
pub(crate) fn guard(pipe: RawFd, leader: u32) -> ! {
    sys::block_all();
    sys::set_name(c"group-guard");
    // The pipe on 0, /dev/null on 2, nothing else (not even 1): the guard holds none of its caller's descriptors.
    if pipe != 0 {
        let _ = sys::copy_fd(pipe, 0);
    }
    sys::close_fd(1);
    if let Ok(null) = File::options().write(true).open("/dev/null") {
        if null.as_raw_fd() == 2 {
            let _ = null.into_raw_fd();
        } else {
            let _ = sys::copy_fd(null.as_raw_fd(), 2);
        }
    }
    sys::close_from(3);
    let mut plan = (0u64, 0u64, 0u64);
    let mut line = (0u64, 0u64, 0u64, 0usize);
    let mut buf = [0u8; 256];
    let mut input = sys::file_on_zero();
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                for &b in buf.get(..n).unwrap_or_default() {
                    let field = match line.3 {
                        0 => &mut line.0,
                        1 => &mut line.1,
                        _ => &mut line.2,
                    };
                    match b {
                        b'0'..=b'9' => {
                            *field = field.saturating_mul(10).saturating_add(u64::from(b - b'0'));
                        }
                        b' ' => line.3 = (line.3 + 1).min(2),
                        b'\n' => {
                            plan = (line.0, line.1, line.2);
                            line = (0, 0, 0, 0);
                        }
                        _ => {}
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let (signal, cont, grace_ms) = plan;
    let leader_pid = i32::try_from(leader).unwrap_or(0);
    if let (Ok(signal), true) = (i32::try_from(signal), signal != 0 && grace_ms != 0) {
        sys::signal_own_group(signal);
        // The leader by its pid too, should it have left the group (its pid names no other process: it is the id of
        // the group this process is in).
        let _ = sys::send_signal(leader_pid, signal);
        if cont != 0 {
            sys::signal_own_group(sys::SIGCONT);
            let _ = sys::send_signal(leader_pid, sys::SIGCONT);
        }
        let end = Instant::now() + Duration::from_millis(grace_ms);
        while Instant::now() < end && !gone(leader) {
            let _ = sys::poll_for(&mut [], Some(Duration::from_millis(10)));
        }
    }
    sys::signal_own_group(sys::SIGKILL);
    std::process::exit(1)
}

/// Whether the leader is gone or a zombie.
fn gone(leader: u32) -> bool {
    crate::reaper::Stat::read(leader).is_none_or(|s| s.dead())
}
