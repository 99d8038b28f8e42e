//! `gt-keeper`, the keeper program of a contained job (`grouptimeout-job`'s cgroup and reaper modes): the spawn
//! execs it, from a sealed memory file, in the child that started the command, so that the job's keeper is a process
//! of its own that runs this program and nothing of its caller's (`job/doc/keeper.md` says what it does, step by
//! step). The library's build script compiles it (`job/build.rs`); cargo also builds it as the example `gt-keeper`,
//! so that clippy and rustfmt see it, where it does nothing but on the supported targets.
//!
//! - `keep.rs`: the keeper's life: its start, its watch of the command and of its caller, the orders it takes, and
//!   its end (the report, the exit as the command's).
//! - `cgroup.rs`: the job's cgroup folder (cgroup mode): who is left in it, the freeze, list and kill, the usage,
//!   the removal; `reaper.rs`: the job as the keeper's descendants (reaper mode, and both modes' orphans).
//! - `guard.rs`: the guard of a job without a keeper (`die_with_parent`), the same program started otherwise.
//! - `sys/`: the few calls into the C library that std does not make.
//! - `../src/protocol.rs`: the command line and the messages, shared with the library.
#![cfg_attr(
    not(all(
        target_os = "linux",
        any(
            target_arch = "x86_64",
            target_arch = "aarch64",
            target_arch = "riscv64"
        )
    )),
    allow(dead_code, reason = "the program runs on 64-bit Linux only")
)]

#[cfg(all(
    grouptimeout_keeper_program,
    not(all(
        target_os = "linux",
        any(
            target_arch = "x86_64",
            target_arch = "aarch64",
            target_arch = "riscv64"
        )
    ))
))]
compile_error!("the keeper program is for 64-bit Linux (x86-64, AArch64, RISC-V) only");

#[allow(dead_code, reason = "the library and the program each use their half")]
#[path = "../src/protocol.rs"]
mod protocol;

/// Its items on the targets the program runs on (64-bit Linux); elsewhere, where cargo builds the example for
/// clippy, none.
macro_rules! on_linux {
    ($($item:item)*) => {$(
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")
        ))]
        $item
    )*};
}

on_linux! {
    mod cgroup;
    mod guard;
    mod keep;
    mod reaper;
    mod sys;
}

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let start = protocol::Start::from_args(&args);
    #[cfg(all(
        target_os = "linux",
        any(
            target_arch = "x86_64",
            target_arch = "aarch64",
            target_arch = "riscv64"
        )
    ))]
    match start {
        Some(protocol::Start::Probe) => keep::probe(),
        Some(protocol::Start::Keep(job)) => keep::keep(&job),
        Some(protocol::Start::Guard { pipe, leader }) => guard::guard(pipe, leader),
        None => {}
    }
    let _ = start;
    eprintln!(
        "gt-keeper: the keeper of grouptimeout-job's contained jobs, started by its spawn only"
    );
    std::process::exit(2);
}
