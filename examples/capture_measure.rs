//! Measures `wait_with_output_timeout` against `Command::output()`; run with `--release`.
//!
//! - `capture_measure speed [MiB] [rounds]`: drains `head -c MiB /dev/zero` (default 256 MiB) through both, alternating
//!   (std first on even rounds, ours first on odd ones), and prints each median and the ratio ours / std.
//! - `capture_measure rss [MiB] [limit]`: captures `head -c MiB /dev/zero` (default 1024 MiB) with an output limit
//!   (default 1 MiB) and prints this process's peak resident set (`VmHWM`). Run it in a fresh process each time.
//! - `capture_measure short [rounds]`: median wall time of capturing `echo hi` (default 201 rounds), alternating
//!   with `Command::output()`.
//! - `capture_measure idle [secs]`: captures a silent `sleep secs` (default 3) and prints the CPU time this process
//!   used meanwhile.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grouptimeout::CommandExt;

fn command(mib: u64) -> Command {
    let mut cmd = Command::new("head");
    cmd.args(["-c", &(mib << 20).to_string(), "/dev/zero"]);
    cmd
}

fn ours(mib: u64, limit: usize) -> (Duration, usize) {
    let start = Instant::now();
    let mut child = command(mib)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .expect("spawn");
    child.set_output_limit(limit);
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(600))
        .expect("capture");
    assert!(captured.outcome.status().success());
    (start.elapsed(), captured.stdout.len())
}

fn std_output(mib: u64) -> (Duration, usize) {
    let start = Instant::now();
    let output = command(mib).output().expect("output");
    assert!(output.status.success());
    (start.elapsed(), output.stdout.len())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn vm_hwm() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("VmHWM: ?")
        .to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| args.get(i).map_or(default, |s| s.parse().expect("number"));
    match args.first().map(String::as_str) {
        Some("speed") => {
            let mib = arg(1, 256);
            let rounds = arg(2, 11);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for round in 0..rounds {
                if round % 2 == 0 {
                    a.push(std_output(mib).0);
                    b.push(ours(mib, usize::MAX).0);
                } else {
                    b.push(ours(mib, usize::MAX).0);
                    a.push(std_output(mib).0);
                }
            }
            let (a, b) = (median(a), median(b));
            println!(
                "{mib} MiB, {rounds} rounds: std output() median {a:?}, wait_with_output_timeout median {b:?}, ratio {:.3}",
                b.as_secs_f64() / a.as_secs_f64()
            );
        }
        Some("rss") => {
            let mib = arg(1, 1024);
            let limit = arg(2, 1 << 20) as usize;
            let (took, kept) = ours(mib, limit);
            println!(
                "{mib} MiB with limit {limit}: kept {kept} bytes in {took:?}; {}",
                vm_hwm()
            );
        }
        Some("short") => {
            let rounds = arg(1, 201);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let start = Instant::now();
                let out = Command::new("echo").arg("hi").output().expect("output");
                a.push(start.elapsed());
                assert_eq!(out.stdout, b"hi\n");
                let start = Instant::now();
                let captured = Command::new("echo")
                    .arg("hi")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn_group()
                    .expect("spawn")
                    .wait_with_output_timeout(Duration::from_secs(60))
                    .expect("capture");
                b.push(start.elapsed());
                assert_eq!(captured.stdout, b"hi\n");
            }
            println!(
                "echo hi, {rounds} rounds: std output() median {:?}, wait_with_output_timeout median {:?}",
                median(a),
                median(b)
            );
        }
        Some("idle") => {
            let secs = arg(1, 3);
            let cpu = || {
                let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
                let rest = stat.rsplit_once(')').expect("stat").1;
                let f: Vec<u64> = rest.split_whitespace().skip(11).take(2).map(|x| x.parse().unwrap()).collect();
                f[0] + f[1]
            };
            let before = cpu();
            let start = Instant::now();
            let captured = Command::new("sleep")
                .arg(secs.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn_group()
                .expect("spawn")
                .wait_with_output_timeout(Duration::from_secs(600))
                .expect("capture");
            assert!(captured.outcome.status().success());
            println!(
                "silent sleep {secs}: waited {:?}, CPU used {} clock ticks (1/100 s)",
                start.elapsed(),
                cpu() - before
            );
        }
        _ => eprintln!("usage: capture_measure speed [MiB] [rounds] | rss [MiB] [limit] | short [rounds] | idle [secs]"),
    }
}
