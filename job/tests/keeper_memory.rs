//! A contained job's keeper is a fork of this process: once the command runs, it unmaps the large memory it copied
//! from this process, so it holds no copy of the pages this process writes while the job runs, and it still guards
//! and ends the job. This test program has a 1 MiB thread-local (so a thread's libc data, such as its errno, sits a
//! megabyte away from its thread pointer) and allocates a 64 MiB heap. Death is read from `/proc/PID/stat`.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;
#[path = "common/job.rs"]
mod job_common;

use common::*;

use std::cell::Cell;
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use grouptimeout_job::{Contain, Containment};
use job_common::*;

const HEAP: usize = 64 << 20;

thread_local! {
    /// Makes every thread's static TLS a megabyte larger.
    static LARGE_TLS: [Cell<u8>; 1 << 20] = const { [const { Cell::new(0) }; 1 << 20] };
}

/// How a test spawns in `mode`: `None` (skipped, said why) where the mode cannot be had here.
fn contain(test: &str, mode: Containment) -> Option<Contain> {
    if mode == Containment::Cgroup {
        return cgroup_or_skip(test);
    }
    let mut how = Contain::new();
    how.cgroup(false).require(Containment::Reaper);
    Some(how)
}

/// A heap of `HEAP` bytes, every page written (so mapped and resident), and this thread's large TLS touched.
fn heap() -> Vec<u8> {
    LARGE_TLS.with(|tls| tls.iter().step_by(4096).for_each(|byte| byte.set(1)));
    vec![1u8; HEAP]
}

/// How many bytes of `range` `pid` has mapped.
fn mapped_in(pid: u32, range: &std::ops::Range<usize>) -> usize {
    fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let (from, to) = line.split_whitespace().next()?.split_once('-')?;
            let from = usize::from_str_radix(from, 16).ok()?;
            let to = usize::from_str_radix(to, 16).ok()?;
            Some(to.min(range.end).saturating_sub(from.max(range.start)))
        })
        .sum()
}

/// Whether the keeper `pid` maps at most an eighth of the heap at `range`: it keeps the pages around its stack and
/// its thread's data (errno, thread pointer), which can lie next to the heap.
fn shed(pid: u32, range: &std::ops::Range<usize>) -> bool {
    mapped_in(pid, range) <= HEAP / 8
}

/// The keeper unmaps the heap it copied (but at most an eighth); then this process rewrites its heap, and the job still
/// ends at a deadline (its escapee too) and leaves no folder.
fn sheds_the_callers_memory(test: &str, mode: Containment) {
    let Some(how) = contain(test, mode) else {
        return;
    };
    let mut heap = heap();
    let range = heap.as_ptr() as usize..heap.as_ptr() as usize + heap.len();
    let (mut child, lines) = start_job(&how, mode, "setsid sleep 30 & echo $!; exec sleep 30", 1);
    let escapee: u32 = lines[0].parse().unwrap();
    let _cleanup = KillOnDrop::new(vec![escapee]);
    let folder = job_folder(command_of(child.id()));
    let keeper = child.id();
    assert!(
        eventually(Duration::from_secs(20), || shed(keeper, &range)),
        "{mode:?}: the keeper still maps {} bytes of the heap {range:x?}; its mappings:\n{}",
        mapped_in(keeper, &range),
        fs::read_to_string(format!("/proc/{keeper}/maps")).unwrap_or_default()
    );
    for page in heap.iter_mut().step_by(4096) {
        *page = 2;
    }
    std::hint::black_box(&heap);
    assert!(child
        .wait_timeout(Duration::from_millis(100))
        .unwrap()
        .timed_out());
    assert_eq!(
        survivors_after(Duration::from_secs(5), &[escapee]),
        [] as [u32; 0],
        "{mode:?}"
    );
    if mode == Containment::Cgroup {
        let folder = folder.expect("the job's folder");
        assert!(!folder.exists(), "{} left behind", folder.display());
    }
}

#[test]
fn cgroup_a_keeper_sheds_the_callers_memory() {
    sheds_the_callers_memory(
        "cgroup_a_keeper_sheds_the_callers_memory",
        Containment::Cgroup,
    );
}

#[test]
fn reaper_a_keeper_sheds_the_callers_memory() {
    sheds_the_callers_memory(
        "reaper_a_keeper_sheds_the_callers_memory",
        Containment::Reaper,
    );
}

/// A supervisor (this test program, re-run) with the heap and the large TLS spawns a job from a thread of its own
/// (a test thread) and is killed with `SIGKILL` once its keeper unmapped the heap: the keeper, which guards the job,
/// still ends it (the escapee too) and removes its folder.
fn a_keeper_that_shed_still_guards(test: &str, mode: Containment) {
    if std::env::var_os("GROUPTIMEOUT_TEST_SUPERVISOR").is_some() {
        let how = contain(test, mode).unwrap();
        let heap = heap();
        let range = heap.as_ptr() as usize..heap.as_ptr() as usize + heap.len();
        let (child, lines) = start_job(&how, mode, "setsid sleep 30 & echo $!; exec sleep 30", 1);
        let keeper = child.id();
        let shed = eventually(Duration::from_secs(20), || shed(keeper, &range));
        let folder = job_folder(command_of(keeper))
            .map(|f| f.display().to_string())
            .unwrap_or_default();
        println!(
            "escapee {} command {} shed {shed} folder {folder}",
            lines[0],
            command_of(keeper)
        );
        std::thread::sleep(Duration::from_secs(60));
        drop((child, heap));
        return;
    }
    if contain(test, mode).is_none() {
        return;
    }
    let (mut supervisor, words) = run_as_supervisor(test, &[]);
    let _cleanup_supervisor = KillOnDrop::new(vec![supervisor.id()]);
    let (escapee, command): (u32, u32) = (words[1].parse().unwrap(), words[3].parse().unwrap());
    let _cleanup = KillOnDrop::new(vec![escapee, command]);
    assert_eq!(
        words[5], "true",
        "{mode:?}: the keeper did not unmap the heap"
    );
    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    assert_eq!(
        survivors_after(Duration::from_secs(10), &[escapee, command]),
        [] as [u32; 0],
        "{mode:?}"
    );
    if mode == Containment::Cgroup {
        let folder = PathBuf::from(words.get(7).cloned().unwrap_or_default());
        assert!(
            folder.is_absolute(),
            "{mode:?}: the supervisor named no job folder: {words:?}"
        );
        assert!(
            eventually(Duration::from_secs(10), || !folder.exists()),
            "{} left behind",
            folder.display()
        );
    }
}

#[test]
fn cgroup_a_keeper_that_shed_still_guards() {
    a_keeper_that_shed_still_guards(
        "cgroup_a_keeper_that_shed_still_guards",
        Containment::Cgroup,
    );
}

#[test]
fn reaper_a_keeper_that_shed_still_guards() {
    a_keeper_that_shed_still_guards(
        "reaper_a_keeper_that_shed_still_guards",
        Containment::Reaper,
    );
}

/// GCC's address sanitizer runtime (`libasan.so.*`), if it is installed: preloaded, it intercepts C library calls
/// that the keeper makes (`waitid`, `read`, `nanosleep`, …) and keeps its shadow memory and its state in anonymous
/// mappings: the interposer a keeper must not pull the memory from under.
fn asan_runtime() -> Option<PathBuf> {
    let mut dirs = vec![PathBuf::from("/usr/lib"), PathBuf::from("/usr/lib64")];
    dirs.extend(
        fs::read_dir("/usr/lib")
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir()),
    );
    dirs.into_iter()
        .flat_map(|dir| fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("libasan.so"))
        })
}

/// A supervisor (this test program, re-run with the address sanitizer runtime preloaded) with the heap spawns a job: its
/// keeper keeps its copy of the heap (the runtime interposes calls the keeper makes, and keeps its state in anonymous
/// memory), and it still guards the job: the command runs until the supervisor's deadline, which ends the job, its
/// escapee too.
fn a_keeper_beside_an_interposer_keeps_its_copy(test: &str, mode: Containment) {
    if std::env::var_os("GROUPTIMEOUT_TEST_SUPERVISOR").is_some() {
        let how = contain(test, mode).unwrap();
        let heap = heap();
        let range = heap.as_ptr() as usize..heap.as_ptr() as usize + heap.len();
        let (mut child, lines) =
            start_job(&how, mode, "setsid sleep 30 & echo $!; exec sleep 30", 1);
        let keeper = child.id();
        // Well past the time the shed is due (10 ms after the command's start).
        std::thread::sleep(Duration::from_millis(500));
        let kept = !shed(keeper, &range);
        let ran = child
            .wait_timeout(Duration::from_millis(300))
            .unwrap()
            .timed_out();
        // A static program (the musl target's default) loads no library: `LD_PRELOAD` is not read.
        let preloaded = fs::read_to_string("/proc/self/maps")
            .unwrap_or_default()
            .contains("libasan");
        println!(
            "escapee {} kept {kept} ran {ran} preloaded {preloaded}",
            lines[0]
        );
        drop((child, heap));
        return;
    }
    let Some(runtime) = asan_runtime() else {
        eprintln!("{test}: skipped: no address sanitizer runtime (libasan.so) installed");
        return;
    };
    if contain(test, mode).is_none() {
        return;
    }
    let runtime = runtime.to_string_lossy().into_owned();
    let (mut supervisor, words) = run_as_supervisor(
        test,
        &[
            ("LD_PRELOAD", runtime.as_str()),
            ("ASAN_OPTIONS", "detect_leaks=0"),
        ],
    );
    let _cleanup_supervisor = KillOnDrop::new(vec![supervisor.id()]);
    let escapee: u32 = words[1].parse().unwrap();
    let _cleanup = KillOnDrop::new(vec![escapee]);
    supervisor.wait().unwrap();
    if words[7] != "true" {
        eprintln!("{test}: skipped: this program loads no preloaded library (a static build)");
        return;
    }
    assert_eq!(
        words[3], "true",
        "{mode:?}: the keeper unmapped its copy beside a preloaded interposer"
    );
    assert_eq!(
        words[5], "true",
        "{mode:?}: the job ended before its deadline (its keeper died)"
    );
    assert_eq!(
        survivors_after(Duration::from_secs(5), &[escapee]),
        [] as [u32; 0],
        "{mode:?}"
    );
}

#[test]
fn cgroup_a_keeper_beside_an_interposer_keeps_its_copy() {
    a_keeper_beside_an_interposer_keeps_its_copy(
        "cgroup_a_keeper_beside_an_interposer_keeps_its_copy",
        Containment::Cgroup,
    );
}

#[test]
fn reaper_a_keeper_beside_an_interposer_keeps_its_copy() {
    a_keeper_beside_an_interposer_keeps_its_copy(
        "reaper_a_keeper_beside_an_interposer_keeps_its_copy",
        Containment::Reaper,
    );
}
