//! Features only add: the same downstream code builds, and fails, the same way with and without each feature.
//!
//! A small crate that depends on this one by path is checked (`cargo check --offline`) once per feature set: its
//! library (code that uses the core) must compile in each, and its example, which implements
//! [`GroupCommandExt`](grouptimeout::GroupCommandExt) for a type of its own, must fail in each, because the trait is
//! sealed (were it open, the example would compile without `contain` and fail with it, since `spawn_contained` is a
//! required method that only `contain` adds). Its files live in the test's own folder of the target directory, so
//! that the repository's `.cargo/config.toml` (a vendored registry, say) applies to it too.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The downstream crate's library: what a dependent that uses the core writes.
const LIB: &str = r"
use std::process::Command;
use std::time::Duration;

use grouptimeout::{GroupChild, GroupCommandExt, Outcome};

/// Runs `command` for at most `limit`; whether it exited by itself.
pub fn run(command: &mut Command, limit: Duration) -> std::io::Result<bool> {
    let mut child: GroupChild = command.spawn_group()?;
    Ok(match child.wait_timeout(limit)? {
        Outcome::Exited(_) => true,
        Outcome::TimedOut(_) | Outcome::Idle(_) => false,
    })
}

/// A trait of the dependent's own, implemented for `Command` beside the crate's.
pub trait Named {
    fn name(&self) -> String;
}

impl Named for Command {
    fn name(&self) -> String {
        self.get_program().to_string_lossy().into_owned()
    }
}
";

/// The downstream crate's example: an implementation of the crate's extension trait for a type of its own. It fails
/// on the seal in every build (with `contain`, rustc names the missing `spawn_contained` too).
const OUTSIDE_IMPL: &str = r"
struct Mine;

impl grouptimeout::GroupCommandExt for Mine {
    fn spawn_group(&mut self) -> std::io::Result<grouptimeout::GroupChild> {
        unimplemented!()
    }
}

fn main() {
    let _ = Mine;
}
";

/// The feature sets tried: the core, each feature alone, all of them, and the plain dependency's defaults.
const FEATURE_SETS: &[Option<&[&str]>] = &[Some(&[]), Some(&["capture"]), None];

fn cargo(dir: &Path, target: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .args(args)
        .args(["--offline", "--quiet"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("cannot run cargo")
}

/// Writes the downstream crate: a dependent of `grouptimeout` with `features` (`None`: the defaults).
fn write_crate(dir: &Path, features: Option<&[&str]>) {
    let here = env!("CARGO_MANIFEST_DIR")
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let dependency = match features {
        None => format!(r#"grouptimeout = {{ path = "{here}" }}"#),
        Some(list) => format!(
            r#"grouptimeout = {{ path = "{here}", default-features = false, features = [{}] }}"#,
            list.iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::create_dir_all(dir.join("examples")).unwrap();
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"downstream\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [dependencies]\n{dependency}\n\n[workspace]\n"
        ),
    )
    .unwrap();
    fs::write(dir.join("src/lib.rs"), LIB).unwrap();
    fs::write(dir.join("examples/outside_impl.rs"), OUTSIDE_IMPL).unwrap();
    // The same libc as this crate's lock file names, where there is one (the MSRV check builds without it).
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock");
    if lock.exists() {
        fs::copy(lock, dir.join("Cargo.lock")).unwrap();
    }
}

#[test]
fn every_feature_set_builds_the_same_downstream_code() {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("downstream");
    let target = base.join("target");
    let mut problems = Vec::new();
    for (i, features) in FEATURE_SETS.iter().enumerate() {
        let name = features.map_or("default features".to_owned(), |f| format!("features {f:?}"));
        // This process's own (another copy of this test binary may write the same crate while this one's cargo
        // reads it); the target folder is shared (cargo locks it).
        let dir = base.join(format!("set{i}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        write_crate(&dir, *features);
        let lib = cargo(&dir, &target, &["check", "--lib"]);
        if !lib.status.success() {
            problems.push(format!(
                "{name}: code that uses the core does not compile:\n{}",
                String::from_utf8_lossy(&lib.stderr)
            ));
        }
        let outside = cargo(&dir, &target, &["check", "--example", "outside_impl"]);
        let stderr = String::from_utf8_lossy(&outside.stderr);
        if outside.status.success() {
            problems.push(format!(
                "{name}: an implementation of GroupCommandExt outside the crate compiles"
            ));
        } else if !stderr.contains("E0277") || !stderr.contains("Sealed") {
            problems.push(format!(
                "{name}: an outside implementation of GroupCommandExt fails for another reason than the seal \
                 (E0277, the private supertrait):\n{stderr}"
            ));
        }
        let _ = fs::remove_dir_all(&dir);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
