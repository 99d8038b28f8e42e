//! Builds the keeper program (`keeper/main.rs`, see `doc/keeper.md`, "Where the program comes from") into
//! `$OUT_DIR/gt-keeper`, which the library embeds (`include_bytes!`) and execs from a sealed memory file for each
//! kept job: with the `rustc` that cargo hands this script (`RUSTC`, not `RUSTC_WRAPPER`: a wrapper such as sccache
//! is for cargo's own units), linked statically where it can be. For a glibc target it first tries the same
//! architecture's musl target (`x86_64-unknown-linux-musl` for `x86_64-unknown-linux-gnu`), where that target's std
//! is installed (`rustup target add …`) and links with the system's defaults: a static musl program starts in about a
//! third of the time of a static glibc one, whose start asks the CPU for its features and caches (`cpuid`, which
//! traps to the hypervisor in a virtual machine: measured here, 265-280 µs against 650-720 µs per start of the
//! program, and the program is 0.5 MB instead of 1.3 MB), and every kept job starts it once. Then it builds for the
//! target cargo builds for (`TARGET`; `RUSTC_LINKER` where cargo was told a linker): static (glibc's `libc.a`; musl
//! always), else dynamic.
//!
//! Of the caller's `RUSTFLAGS` (`CARGO_ENCODED_RUSTFLAGS`) it passes only what linking for the target may need (`-L`,
//! `-C linker=`, `-C link-arg(s)=`, `-C link-self-contained=`, `--sysroot`): the rest is for the caller's own code,
//! and would change a small program that must behave the same everywhere (instrumentation such as
//! `-C instrument-coverage`, whose program would write profiles in the job's folder; sanitizers, which need their
//! runtimes; `--cfg`s and lint levels; `-C target-cpu`, which is only speed).
//!
//! A target without the program (not Linux, `--cfg grouptimeout_portable`, docs.rs) gets an empty file and no
//! message. A build that cannot compile or link it (an architecture the program does not know, a cross build
//! without a linker, no C library to link against) must not fail the crate: it warns (`cargo:warning`), leaves the
//! file empty, and says why in `GROUPTIMEOUT_KEEPER_MISSING`; the library then has no keeper modes, and says so.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=keeper");
    println!("cargo:rerun-if-changed=src/protocol.rs");
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    let out = env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    let program = Path::new(&out).join("gt-keeper");
    let missing = if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux")
        || env::var_os("CARGO_CFG_GROUPTIMEOUT_PORTABLE").is_some()
        || env::var_os("DOCS_RS").is_some()
    {
        String::from("this build has no keeper program (not Linux, or a portable or docs build)")
    } else {
        match build(&program) {
            Ok(()) => String::new(),
            Err(why) => {
                println!("cargo:warning=grouptimeout-job: no keeper program, so no cgroup or reaper mode: {why}");
                why
            }
        }
    };
    if !missing.is_empty() {
        fs::write(&program, b"").expect("OUT_DIR is writable");
    }
    println!("cargo:rustc-env=GROUPTIMEOUT_KEEPER_MISSING={missing}");
}

/// Compiles the program to `program`: for the musl target of a glibc target's architecture first, then for the
/// target, static, then dynamic. The error says why none worked.
fn build(program: &Path) -> Result<(), String> {
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if !["x86_64", "aarch64", "riscv64"].contains(&arch.as_str()) {
        return Err(format!(
            "the program is for 64-bit Linux (x86-64, AArch64, RISC-V), not {arch}"
        ));
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = env::var("TARGET").map_err(|_| "cargo set no TARGET".to_owned())?;
    let source = Path::new(&env::var_os("CARGO_MANIFEST_DIR").ok_or("no CARGO_MANIFEST_DIR")?)
        .join("keeper")
        .join("main.rs");
    let mut attempts = Vec::new();
    if let Some(musl) = target.strip_suffix("-linux-gnu") {
        attempts.push((format!("{musl}-linux-musl"), "+crt-static", false));
    }
    attempts.push((target.clone(), "+crt-static", true));
    attempts.push((target, "-crt-static", true));
    let mut last = String::new();
    for (target, link, ours) in attempts {
        let mut rustc = Command::new(&rustc);
        rustc
            .arg(&source)
            .args([
                "--edition",
                "2021",
                "--crate-type",
                "bin",
                "--crate-name",
                "gt_keeper",
            ])
            .args(["--target", &target, "--cap-lints", "allow"])
            .args([
                "-C",
                "opt-level=s",
                "-C",
                "panic=abort",
                "-C",
                "strip=symbols",
            ])
            .args(["-C", "debuginfo=0", "-C", "codegen-units=1"])
            .args(["-C", &format!("target-feature={link}")])
            .args(["--cfg", "grouptimeout_keeper_program", "-o"])
            .arg(program);
        // The caller's linking flags and linker are for `TARGET`: a musl build (not `ours`) takes rustc's defaults.
        if ours {
            rustc.args(link_flags());
            if let Some(linker) = env::var_os("RUSTC_LINKER") {
                let mut flag = OsString::from("linker=");
                flag.push(linker);
                rustc.arg("-C").arg(flag);
            }
        }
        match rustc.output() {
            Ok(done) if done.status.success() => return Ok(()),
            Ok(done) => {
                let said = String::from_utf8_lossy(&done.stderr);
                let first = said.lines().find(|l| l.starts_with("error")).unwrap_or("");
                last = format!("rustc failed for {target} ({link}): {first}");
            }
            Err(e) => return Err(format!("cannot run rustc: {e}")),
        }
    }
    Err(last)
}

/// What of the caller's `RUSTFLAGS` is for linking (see the module docs).
fn link_flags() -> Vec<String> {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flags: Vec<&str> = flags.split('\x1f').filter(|f| !f.is_empty()).collect();
    let linking = |value: &str| {
        ["linker=", "link-arg=", "link-args=", "link-self-contained="]
            .iter()
            .any(|p| value.starts_with(p))
    };
    let mut kept = Vec::new();
    let mut at = 0;
    while let Some(&flag) = flags.get(at) {
        at += 1;
        let next = flags.get(at).copied();
        match flag {
            "-L" | "--sysroot" | "-C" | "--codegen" => {
                let Some(value) = next else { break };
                at += 1;
                if (flag == "-L" || flag == "--sysroot") || linking(value) {
                    kept.extend([flag.to_owned(), value.to_owned()]);
                }
            }
            _ if flag.starts_with("-L") || flag.starts_with("--sysroot=") => {
                kept.push(flag.to_owned());
            }
            _ if flag.strip_prefix("-C").is_some_and(linking) => kept.push(flag.to_owned()),
            _ => {}
        }
    }
    kept
}
