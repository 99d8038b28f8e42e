//! Reaper mode, as this process sees it (the keeper kills the job itself: `job/keeper/reaper.rs`): the job is the
//! keeper's descendants, since the keeper is a child subreaper and every orphan of the job is re-parented to it,
//! however it daemonised. Here: whether a process is one of them.

use super::proc::Stat;

/// How far `in_tree` follows parents up.
const DEPTH_LIMIT: usize = 64;
/// Whether live process `pid` descends from `keeper` (its parents, followed up at most `DEPTH_LIMIT` steps, reach
/// it). The keeper itself is not the job's.
pub(super) fn in_tree(keeper: u32, pid: u32) -> bool {
    if pid == keeper {
        return false;
    }
    let mut at = pid;
    for _ in 0..DEPTH_LIMIT {
        let Some(stat) = Stat::read(at) else {
            return false;
        };
        if stat.dead() {
            return false;
        }
        if stat.ppid == keeper {
            return true;
        }
        if stat.ppid <= 1 {
            return false;
        }
        at = stat.ppid;
    }
    false
}
