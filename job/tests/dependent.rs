//! What a dependent of both libraries (`grouptimeout` and this crate) sees when it gets something wrong: each getter
//! of `GroupChild` is `#[must_use]`, and rustc's advice for a missing trait import names a path that compiles.
//!
//! A small crate that depends on both by path is checked (`cargo check --offline`): `grouptimeout` where this crate's
//! build finds it (`cargo metadata`: the workspace's root in the repository, the unpacked sibling when the packages
//! are tested as published, the registry's copy for a downloaded crate), patched in for crates.io so that this
//! crate's own requirement (`=0.1.0`) resolves to it too. Its files live in the test's own folder of the target
//! directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An example that drops what each getter of `GroupChild` returns, its own and those `grouptimeout-job` adds: each
/// must be `#[must_use]` (issue 24.4), so with `unused_must_use` denied it fails once per getter. Checked with both
/// crates, every feature on.
const GETTERS: &str = r#"
#![deny(unused_must_use)]
use grouptimeout::GroupCommandExt as _;
use grouptimeout_job::JobChildExt as _;

fn main() -> std::io::Result<()> {
    let mut child = std::process::Command::new("true").spawn_group()?;
    child.id();
    child.handle();
    child.containment();
    child.leftovers();
    child.in_job(1);
    child.guard_id();
    child.command_id();
    child.fallback_reason();
    child.wait()?;
    Ok(())
}
"#;

/// `GroupChild`'s getters, as rustc names them in its `unused_must_use` errors.
const GETTER_NAMES: &[&str] = &[
    "id",
    "handle",
    "containment",
    "leftovers",
    "in_job",
    "guard_id",
    "command_id",
    "fallback_reason",
];

/// An example that calls `spawn_group` without importing `GroupCommandExt`, and names only this crate in its code: rustc
/// then loads `grouptimeout` as this crate's dependency, and suggests the trait by the path where it is defined.
const MISSING_IMPORT: &str = r#"
use grouptimeout_job::JobChildExt as _;

fn main() {
    let _ = std::process::Command::new("true").spawn_group();
}
"#;

/// The import rustc must suggest for `MISSING_IMPORT`, which must then compile.
const SUGGESTED: &str = "use grouptimeout::GroupCommandExt;";

fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .args(args)
        .args(["--offline", "--quiet"])
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dependent/target"),
        )
        .env_remove("CARGO_BUILD_TARGET")
        // The outer build's flags (CI's musl pass denies warnings, others add cfgs) are not a dependent's: its example
        // holds an import that is unused on purpose.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("cannot run cargo")
}

/// The folder of the `grouptimeout` this crate builds against, and the lock file of the build (its workspace's), from
/// `cargo metadata` (read as text: the tests have no JSON parser).
fn core_and_lock() -> (String, PathBuf) {
    let out = cargo(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["metadata", "--format-version", "1"],
    );
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let string_after = |from: usize, key: &str| -> Option<String> {
        let start = json[from..].find(&format!("\"{key}\":\""))? + from + key.len() + 4;
        let end = json[start..].find('"')? + start;
        Some(json[start..end].replace("\\\\", "\\"))
    };
    // A package's object starts with its name and version; a dependency's has its name, then its source.
    let package = json
        .find("{\"name\":\"grouptimeout\",\"version\":")
        .expect("cargo metadata lists no package grouptimeout");
    let manifest =
        string_after(package, "manifest_path").expect("grouptimeout has no manifest_path");
    let core = Path::new(&manifest)
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let root = string_after(0, "workspace_root").expect("cargo metadata gives no workspace_root");
    (core, Path::new(&root).join("Cargo.lock"))
}

/// The folder of a dependent, removed (with what it holds) when dropped.
struct Dependent(PathBuf);

impl Drop for Dependent {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Writes the dependent in `name` (a folder of its own, and of this process's: another copy of this test binary may
/// run the same test at once, and rewrite the example while this one's cargo reads it) with `example` as
/// `examples/main.rs`. The target folder is shared (cargo locks it; the libraries are built there once).
fn write_dependent(name: &str, example: &str) -> Dependent {
    let (core, lock) = core_and_lock();
    let quoted = |path: &str| path.replace('\\', "\\\\").replace('"', "\\\"");
    let (core, job) = (quoted(&core), quoted(env!("CARGO_MANIFEST_DIR")));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("dependent")
        .join(format!("{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::create_dir_all(dir.join("examples")).unwrap();
    // A name of its own (and of this process's): the dependents share a target folder, where cargo tells packages
    // apart by name and version, not by folder (each is its own workspace's root), so that one dependent's check could
    // be taken for another's, whose example is newer than its own.
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"dependent-{name}-{}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [dependencies]\ngrouptimeout = {{ path = \"{core}\" }}\ngrouptimeout-job = {{ path = \"{job}\" }}\n\n\
             [patch.crates-io]\ngrouptimeout = {{ path = \"{core}\" }}\n\n[workspace]\n",
            std::process::id()
        ),
    )
    .unwrap();
    fs::write(dir.join("src/lib.rs"), "").unwrap();
    fs::write(dir.join("examples/main.rs"), example).unwrap();
    // The same libc as the build's lock file names, where there is one (the MSRV check builds without it).
    if lock.exists() {
        fs::copy(lock, dir.join("Cargo.lock")).unwrap();
    }
    Dependent(dir)
}

#[test]
fn every_getter_of_group_child_is_must_use() {
    let dir = write_dependent("getters", GETTERS);
    let out = cargo(&dir.0, &["check", "--example", "main"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "dropping every getter's value compiles"
    );
    let missing: Vec<&str> = GETTER_NAMES
        .iter()
        .copied()
        // rustc names a method by its path (`GroupChild::id`, `grouptimeout_job::JobChildExt::leftovers`), or, for
        // some of a trait's, by its name alone (`in_job`).
        .filter(|name| {
            !stderr.lines().any(|line| {
                line.starts_with("error: unused return value of `")
                    && (line.contains(&format!("::{name}` that must be used"))
                        || line.contains(&format!("`{name}` that must be used")))
            })
        })
        .collect();
    assert!(missing.is_empty(), "not #[must_use]: {missing:?}\n{stderr}");
}

#[test]
fn a_missing_import_is_suggested_by_a_path_that_compiles() {
    let dir = write_dependent("missing_import", MISSING_IMPORT);
    let out = cargo(&dir.0, &["check", "--example", "main"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "spawn_group compiles without its trait"
    );
    assert!(
        stderr.contains(&format!("+ {SUGGESTED}")),
        "rustc does not suggest `{SUGGESTED}`:\n{stderr}"
    );
    fs::write(
        dir.0.join("examples/main.rs"),
        format!("{SUGGESTED}\n{MISSING_IMPORT}"),
    )
    .unwrap();
    let out = cargo(&dir.0, &["check", "--example", "main"]);
    assert!(
        out.status.success(),
        "with the import rustc suggests, the example does not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
