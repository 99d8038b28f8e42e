//! Helpers of the adapter's tests: jobs that write their pids to files, and death read from `/proc/PID/stat` (never
//! `kill -0`, which a zombie passes).
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::{sleep, Instant};

/// A folder of this test's own, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "grouptimeout-tokio-test-{}-{name}-{n}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The state letter of `/proc/PID/stat` (after the command name, which may hold spaces); `None` once gone.
pub fn state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Dead: gone, a zombie (`Z`) or dying (`X`); it runs no more code.
pub fn is_dead(pid: u32) -> bool {
    !matches!(state(pid), Some(s) if s != 'Z' && s != 'X')
}

/// The pid that a job wrote to `path` (a full line), waiting for it at most 20 s.
pub async fn read_pid(path: &Path) -> u32 {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = fs::read_to_string(path) {
            if let Some(line) = text.strip_suffix('\n') {
                return line.trim().parse().unwrap();
            }
        }
        assert!(
            Instant::now() < end,
            "no pid in {} after 20 s",
            path.display()
        );
        sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (at most 10 s: a killed process may need a moment to be torn down) until every pid is dead; returns
/// those still alive.
pub async fn survivors(pids: &[u32]) -> Vec<u32> {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end && pids.iter().any(|&pid| !is_dead(pid)) {
        sleep(Duration::from_millis(10)).await;
    }
    pids.iter().copied().filter(|&pid| !is_dead(pid)).collect()
}

/// A shell line that writes its own pid to `DIR/leader` and a background `sleep 30` (of its group)'s to `DIR/bg`.
pub fn with_pids(dir: &Scratch, then: &str) -> String {
    format!(
        "echo $$ > {0}/leader; sleep 30 & echo $! > {0}/bg; {then}",
        dir.0.display()
    )
}
