//! Side-by-side benchmark of `grouptimeout` against std, `wait-timeout`, `process_control`, `subprocess` and GNU
//! `timeout`. See `bench/README.md` for what each row measures and how.
//!
//! `cargo run --release --manifest-path bench/Cargo.toml [-- --quick] [-- --only 1,2] [-- --cli PATH]`
//!
//! Linux only: it reads `/proc`, opens pidfds and compares against GNU `timeout`.
// Statistics of timings: counts and nanoseconds become f64 and percentile indices come back from it, all far below
// 2^52 and never negative.
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "statistics of timings, far below 2^52 and never negative"
)]

#[cfg(not(target_os = "linux"))]
compile_error!("the grouptimeout bench runs on Linux only (it reads /proc and uses pidfds)");

mod many;
mod sys;

use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use grouptimeout::{GroupChild, GroupCommandExt as _, Outcome};
use grouptimeout_job::JobChildExt as _;

/// A timeout long enough never to fire in rows that measure exits.
const LONG: Duration = Duration::from_mins(1);

struct Opts {
    quick: bool,
    only: Option<Vec<u32>>,
    cli: Option<PathBuf>,
    variants: bool,
    no_peers: bool,
    scale: f64,
}

impl Opts {
    fn parse() -> Opts {
        let mut o = Opts {
            quick: false,
            only: None,
            cli: None,
            variants: false,
            no_peers: false,
            scale: 1.0,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--quick" => o.quick = true,
                "--variants" => o.variants = true,
                "--no-peers" => o.no_peers = true,
                "--many" => o.only = Some(vec![11, 12]),
                "--scale" => {
                    o.scale = args
                        .next()
                        .and_then(|v| v.parse().ok())
                        .expect("--scale needs a number");
                }
                "--only" => {
                    let v = args.next().expect("--only needs a list such as 1,2,4");
                    o.only = Some(
                        v.split(',')
                            .map(|s| s.trim().parse().expect("row number"))
                            .collect(),
                    );
                }
                "--cli" => o.cli = Some(PathBuf::from(args.next().expect("--cli needs a path"))),
                "-h" | "--help" => {
                    println!(
                        "usage: grouptimeout-bench [--quick] [--only 1,2,...] [--many] [--cli PATH] [--variants] [--no-peers] [--scale F]\n\
                         rows: 1 spawn+wait, 2 exit latency, 3 wakeups/CPU, 4 deadline lateness, 5 1000-member \
                         teardown, 6 CLI, 7 capture (feature `capture`), 8 die_with_parent, 9 32 concurrent waits, 10 spawn_contained (cgroup/lineage), \
                         11 1,000 concurrent jobs (set, threads, tokio adapter, tokio), 12 one exit among idle jobs in a set\n\
                         --many      rows 11 and 12 only (as --only 11,12)\n\
                         --cli PATH  grouptimeout binary for row 6 (else $GROUPTIMEOUT_BIN, else \
                         ../target/release/grouptimeout)\n\
                         --variants  add poll-schedule variants (simulated through try_wait) to rows 1-4\n\
                         --no-peers  rows 1-4 with std and grouptimeout (and variants) only\n\
                         --scale F   multiply every sample count by F"
                    );
                    std::process::exit(0);
                }
                other => panic!("unknown option {other:?}; try --help"),
            }
        }
        o
    }
    fn row(&self, n: u32) -> bool {
        self.only.as_ref().is_none_or(|v| v.contains(&n))
    }
    /// Full count or quick count.
    fn n(&self, full: usize, quick: usize) -> usize {
        let n = if self.quick { quick } else { full };
        ((n as f64 * self.scale).round() as usize).max(1)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// statistics and the table

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s
}
fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let s = sorted(v);
    let i = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
    s[i]
}
/// A distribution-free ~95 % confidence interval for the median: the order statistics n/2 ∓ 0.98·√n.
fn median_ci(v: &[f64]) -> (f64, f64) {
    let s = sorted(v);
    let n = s.len() as f64;
    if s.len() < 6 {
        return (f64::NAN, f64::NAN);
    }
    let lo = (n / 2.0 - 0.98 * n.sqrt()).floor().max(0.0) as usize;
    let hi = ((n / 2.0 + 0.98 * n.sqrt()).ceil() as usize).min(s.len() - 1);
    (s[lo], s[hi])
}
fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let s = sorted(v);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        f64::midpoint(s[n / 2 - 1], s[n / 2])
    }
}
fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
/// Signed `a - b` in seconds.
fn diff(a: Instant, b: Instant) -> f64 {
    if a >= b {
        secs(a - b)
    } else {
        -secs(b - a)
    }
}
/// Formats seconds with a unit that suits the size.
/// A difference of two times, with its sign: `+12 µs`, `−3 µs`.
fn delta(s: f64) -> String {
    if s < 0.0 {
        format!("−{}", t(-s))
    } else {
        format!("+{}", t(s))
    }
}

fn t(s: f64) -> String {
    if s.is_nan() {
        "–".into()
    } else if s.abs() < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s.abs() < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

struct Table {
    rows: Vec<[String; 7]>,
}
impl Table {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        row: &str,
        what: &str,
        who: &str,
        med: String,
        p99: String,
        vs: String,
        note: String,
    ) {
        eprintln!("  {row} {what} | {who}: {med} (p99 {p99}) {vs} {note}");
        self.rows
            .push([row.into(), what.into(), who.into(), med, p99, vs, note]);
    }
    fn render(&self) -> String {
        let mut s = String::new();
        s.push_str("| # | Measurement | Contender | Median | p99 | vs std | Notes |\n");
        s.push_str("|---|---|---|---:|---:|---:|---|\n");
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        s
    }
}

/// Runs `f(contender, round)` for every round, each round visiting all contenders in a rotated order, so that
/// slow phases of the machine hit every contender alike.
fn alternate(n_contenders: usize, rounds: usize, mut f: impl FnMut(usize, usize)) {
    for r in 0..rounds {
        for k in 0..n_contenders {
            f((r + k) % n_contenders, r);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// contenders that wait for a child to exit

#[derive(Clone, Copy, PartialEq)]
enum Who {
    Std,
    Gt,
    WaitTimeout,
    ProcessControl,
    Subprocess,
    /// The poll loop rebuilt outside the library with another schedule (`--variants`).
    Variant(usize),
    /// A prototype with no poll schedule at all (`--variants`): a pidfd opened right after `spawn_group` (the
    /// leader is unreaped, so the pid is ours), `ppoll` on it with the time left, then `try_wait`.
    Pidfd,
}

impl Who {
    fn name(self) -> String {
        match self {
            Who::Std => "std `Child::wait()`".into(),
            Who::Gt => "grouptimeout".into(),
            Who::WaitTimeout => "wait-timeout 0.2".into(),
            Who::ProcessControl => "process_control 5".into(),
            Who::Subprocess => "subprocess 1".into(),
            Who::Variant(i) => format!("variant {}", VARIANTS[i].0),
            Who::Pidfd => "prototype: pidfd + ppoll, then try_wait".into(),
        }
    }
}

fn waiters(o: &Opts, with_std: bool) -> Vec<Who> {
    let mut v = vec![];
    if with_std {
        v.push(Who::Std);
    }
    v.push(Who::Gt);
    if !o.no_peers {
        v.extend([Who::WaitTimeout, Who::ProcessControl, Who::Subprocess]);
    }
    if o.variants {
        v.extend((0..VARIANTS.len()).map(Who::Variant));
        v.push(Who::Pidfd);
    }
    v
}

type Schedule = fn(Duration) -> Duration;

/// Poll schedules tried with `--variants`: name and step as a function of the child's age (zero = yield once).
const VARIANTS: &[(&str, Schedule)] = &[
    ("lib-copy (spin 1ms, age/20 ≤ 10ms)", |age| {
        if age < Duration::from_millis(1) {
            Duration::ZERO
        } else {
            (age / 20).min(Duration::from_millis(10))
        }
    }),
    ("no spin (50µs doubling ≤ 10ms)", |age| {
        // Stateless stand-in for "50 µs doubling": the step that doubling would have reached at this age.
        let mut step = Duration::from_micros(50);
        let mut t = Duration::ZERO;
        while t + step <= age && step < Duration::from_millis(10) {
            t += step;
            step *= 2;
        }
        step.min(Duration::from_millis(10))
    }),
    ("spin 1ms, age/25 ≤ 10ms", |age| {
        if age < Duration::from_millis(1) {
            Duration::ZERO
        } else {
            (age / 25).min(Duration::from_millis(10))
        }
    }),
    ("spin 1ms, 0.25ms ≤ age/25 ≤ 10ms", |age| {
        if age < Duration::from_millis(1) {
            Duration::ZERO
        } else {
            (age / 25).clamp(Duration::from_micros(250), Duration::from_millis(10))
        }
    }),
];

/// A spawned child of any contender, for rows that wait for a natural exit.
enum Spawned {
    Std(Child),
    Gt(GroupChild),
    Sub(subprocess::Job),
    Var(GroupChild, Schedule, Instant),
    Pidfd(GroupChild, std::os::fd::OwnedFd),
}

impl Spawned {
    fn pid(&self) -> u32 {
        match self {
            Spawned::Std(c) => c.id(),
            Spawned::Gt(c) | Spawned::Var(c, ..) | Spawned::Pidfd(c, _) => c.id(),
            Spawned::Sub(j) => j.pid(),
        }
    }
}

fn spawn(who: Who, prog: &str, args: &[&str], group: bool) -> io::Result<Spawned> {
    match who {
        Who::Gt => Ok(Spawned::Gt(Command::new(prog).args(args).spawn_group()?)),
        Who::Variant(i) => {
            let c = Command::new(prog).args(args).spawn_group()?;
            Ok(Spawned::Var(c, VARIANTS[i].1, Instant::now()))
        }
        Who::Pidfd => {
            let c = Command::new(prog).args(args).spawn_group()?;
            let fd = sys::pidfd_open(c.id())?;
            Ok(Spawned::Pidfd(c, fd))
        }
        Who::Subprocess => {
            let mut e = subprocess::Exec::cmd(prog).args(args);
            if group {
                use subprocess::ExecExt as _;
                e = e.setpgid();
            }
            Ok(Spawned::Sub(e.start()?))
        }
        Who::Std | Who::WaitTimeout | Who::ProcessControl => {
            let mut c = Command::new(prog);
            c.args(args);
            if group {
                use std::os::unix::process::CommandExt as _;
                c.process_group(0);
            }
            Ok(Spawned::Std(c.spawn()?))
        }
    }
}

/// The poll loop of the library, rebuilt on public calls with another schedule (`try_wait` peeks, kills the
/// leftovers and reaps, as the library's own loop does). Returns `None` at the deadline, before killing.
fn variant_wait(
    c: &mut GroupChild,
    step: Schedule,
    since: Instant,
    deadline: Instant,
) -> io::Result<Option<ExitStatus>> {
    loop {
        let now = Instant::now();
        if let Some(s) = c.try_wait()? {
            return Ok(Some(s));
        }
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            return Ok(None);
        }
        let st = step(now.saturating_duration_since(since));
        if st.is_zero() {
            thread::yield_now();
        } else {
            thread::sleep(st.min(left));
        }
    }
}

/// Waits in the contender's way until `deadline`: grouptimeout and the variants take the deadline itself, the peers
/// (which only take a timeout) the time left when they are called, so their own deadline is never earlier.
/// `Ok(None)`: the contender reported a timeout and the child is
/// still unreaped (the caller kills its group and reaps it). For grouptimeout a timeout has already killed and
/// reaped: `Ok(Some(status))` with `timed_out == true`.
fn wait_with(
    who: Who,
    s: &mut Spawned,
    deadline: Instant,
) -> io::Result<(Option<ExitStatus>, bool)> {
    let timeout = deadline.saturating_duration_since(Instant::now());
    match (who, s) {
        (Who::Std, Spawned::Std(c)) => Ok((Some(c.wait()?), false)),
        (Who::Gt, Spawned::Gt(c)) => match c.wait_deadline(deadline)? {
            Outcome::Exited(st) => Ok((Some(st), false)),
            Outcome::TimedOut(st) | Outcome::Idle(st) => Ok((Some(st), true)),
        },
        (Who::WaitTimeout, Spawned::Std(c)) => {
            use wait_timeout::ChildExt as _;
            Ok((c.wait_timeout(timeout)?, false))
        }
        (Who::ProcessControl, Spawned::Std(c)) => {
            use process_control::{ChildExt as _, Control as _};
            let r = c.controlled().time_limit(timeout).wait()?;
            match r {
                // process_control peeks with WNOWAIT: reap through std.
                Some(_) => Ok((Some(c.wait()?), false)),
                None => Ok((None, false)),
            }
        }
        (Who::Subprocess, Spawned::Sub(j)) => {
            let st = j.wait_timeout(timeout)?;
            // subprocess has its own ExitStatus; translate through the raw wait status.
            Ok((st.map(sub_status), false))
        }
        (Who::Variant(_), Spawned::Var(c, step, since)) => {
            if let Some(st) = variant_wait(c, *step, *since, deadline)? {
                Ok((Some(st), false))
            } else {
                // The library reaps a killed leader with a blocking wait; the public API has only polling
                // waits, so spin on try_wait (yielding) to get the same promptness.
                c.kill()?;
                loop {
                    if let Some(st) = c.try_wait()? {
                        return Ok((Some(st), true));
                    }
                    thread::yield_now();
                }
            }
        }
        (Who::Pidfd, Spawned::Pidfd(c, fd)) => loop {
            if let Some(st) = c.try_wait()? {
                return Ok((Some(st), false));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                c.kill()?;
                sys::poll_in(fd);
                let st = c.try_wait()?.expect("pidfd readable, so the leader exited");
                return Ok((Some(st), true));
            }
            sys::ppoll_in(fd, left);
        },
        _ => unreachable!("contender and child kind do not match"),
    }
}

fn sub_status(s: subprocess::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt as _;
    match (s.code(), s.signal()) {
        (Some(c), _) => ExitStatus::from_raw(i32::try_from(c & 0xff).unwrap() << 8),
        (None, Some(sig)) => ExitStatus::from_raw(sig),
        _ => ExitStatus::from_raw(0),
    }
}

/// After a contender reported a timeout without killing: SIGKILL the group (leader still unreaped, so the id is
/// pinned), then reap.
fn kill_and_reap(s: &mut Spawned) -> io::Result<()> {
    sys::kill_group(s.pid(), libc::SIGKILL)?;
    match s {
        Spawned::Std(c) => c.wait().map(drop),
        Spawned::Sub(j) => j.wait().map(drop),
        Spawned::Gt(c) | Spawned::Var(c, ..) | Spawned::Pidfd(c, _) => c.wait().map(drop),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 1: spawn + wait of /bin/true

fn row1(o: &Opts, tab: &mut Table) {
    let who = waiters(o, true);
    let n = o.n(1000, 200);
    eprintln!("row 1: spawn+wait /bin/true, {n} per contender");
    let mut times = vec![vec![]; who.len()];
    let mut cpu = vec![vec![]; who.len()];
    let mut thread_cpu = vec![vec![]; who.len()];
    // warm-up
    for w in &who {
        let mut s = spawn(*w, "/bin/true", &[], false).unwrap();
        wait_with(*w, &mut s, Instant::now() + LONG).unwrap();
    }
    alternate(who.len(), n, |k, _| {
        let c0 = sys::rusage(libc::RUSAGE_SELF);
        let th0 = sys::thread_cpu();
        let t0 = Instant::now();
        let mut s = spawn(who[k], "/bin/true", &[], false).unwrap();
        let (st, _) = wait_with(who[k], &mut s, Instant::now() + LONG).unwrap();
        let dt = t0.elapsed();
        let th1 = sys::thread_cpu();
        let c1 = sys::rusage(libc::RUSAGE_SELF);
        assert!(st.expect("exited").success());
        times[k].push(secs(dt));
        cpu[k].push(c1.cpu - c0.cpu);
        thread_cpu[k].push(th1 - th0);
    });
    let base = median(&times[0]);
    for (k, w) in who.iter().enumerate() {
        let m = median(&times[k]);
        tab.add(
            "1",
            "spawn + wait `/bin/true`",
            &w.name(),
            t(m),
            t(pct(&times[k], 0.99)),
            format!("{:.2}×", m / base),
            format!(
                "n={n}; CPU of this process per run {}{}",
                t(median(&cpu[k])),
                if *w == Who::Gt {
                    "; target ≤ 1.05×"
                } else {
                    ""
                }
            ),
        );
    }
    let base = median(&thread_cpu[0]);
    for (k, w) in who.iter().enumerate() {
        let m = median(&thread_cpu[k]);
        tab.add(
            "1",
            "spawn + wait `/bin/true`: CPU of the waiting thread",
            &w.name(),
            t(m),
            t(pct(&thread_cpu[k], 0.99)),
            format!("{:.2}×", m / base),
            format!(
                "n={n}; CLOCK_THREAD_CPUTIME_ID around spawn + wait{}",
                match w {
                    Who::Gt => "; target ≤ 1.25× std",
                    Who::ProcessControl =>
                        "; its waiting thread is not this one (see the process CPU above)",
                    _ => "",
                }
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 2: added exit-detection latency

/// A thread that blocks in poll(2) on a pidfd and stamps the moment the kernel reports the exit (the same
/// notification that wakes a blocking wait).
struct ExitWatcher {
    tx: mpsc::Sender<std::os::fd::OwnedFd>,
    rx: mpsc::Receiver<Instant>,
}
impl ExitWatcher {
    fn new() -> ExitWatcher {
        let (tx, frx) = mpsc::channel::<std::os::fd::OwnedFd>();
        let (ttx, rx) = mpsc::channel();
        thread::spawn(move || {
            for fd in frx {
                sys::poll_in(&fd);
                let _ = ttx.send(Instant::now());
            }
        });
        ExitWatcher { tx, rx }
    }
    fn watch(&self, pid: u32) {
        self.tx
            .send(sys::pidfd_open(pid).expect("pidfd_open"))
            .unwrap();
    }
    fn exited_at(&self) -> Instant {
        self.rx
            .recv_timeout(Duration::from_secs(30))
            .expect("exit watcher")
    }
}

fn row2(o: &Opts, tab: &mut Table) {
    let who = waiters(o, true);
    let watcher = ExitWatcher::new();
    let cases: [(&str, &str, usize, f64); 3] = [
        ("1 ms", "0.001", o.n(300, 40), 0.2e-3),
        ("100 ms", "0.1", o.n(60, 8), 0.2e-3),
        ("1 s", "1", o.n(25, 3), 0.2e-3),
    ];
    for (label, arg, n, target) in cases {
        eprintln!("row 2: exit latency, `sleep {arg}`, {n} per contender");
        let mut lat = vec![vec![]; who.len()];
        let mut life = vec![];
        let mut cpu = vec![vec![]; who.len()];
        alternate(who.len(), n, |k, _| {
            let c0 = sys::rusage(libc::RUSAGE_SELF);
            let t0 = Instant::now();
            let mut s = spawn(who[k], "sleep", &[arg], false).unwrap();
            watcher.watch(s.pid());
            let (st, _) = wait_with(who[k], &mut s, Instant::now() + LONG).unwrap();
            let ret = Instant::now();
            let exit = watcher.exited_at();
            cpu[k].push(sys::rusage(libc::RUSAGE_SELF).cpu - c0.cpu);
            assert!(st.expect("exited").success());
            lat[k].push(diff(ret, exit));
            life.push(diff(exit, t0));
        });
        let base = median(&lat[0]);
        for (k, w) in who.iter().enumerate() {
            let m = median(&lat[k]);
            let note = if matches!(w, Who::Gt | Who::Variant(_) | Who::Pidfd) {
                let (lo, hi) = median_ci(&lat[k]);
                let ci = if lo.is_nan() {
                    String::new()
                } else {
                    format!("; 95 % CI of the median [{}, {}]", t(lo), t(hi))
                };
                format!(
                    "n={n}{ci}; CPU per run {}; target added ≤ {}",
                    t(median(&cpu[k])),
                    t(target)
                )
            } else {
                format!("n={n}; CPU per run {}", t(median(&cpu[k])))
            };
            tab.add(
                "2",
                &format!(
                    "exit → wait returns, `sleep {arg}` ({label}; lives {})",
                    t(median(&life))
                ),
                &w.name(),
                t(m),
                t(pct(&lat[k], 0.99)),
                if k == 0 {
                    "(floor)".into()
                } else {
                    delta(m - base)
                },
                note,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 3: wakeups and CPU while waiting for a long child

fn row3(o: &Opts, tab: &mut Table) {
    let who = waiters(o, true);
    let secs_child = if o.quick { 2 } else { 10 };
    let rounds = 1;
    eprintln!("row 3: wakeups during a {secs_child} s child, {rounds} per contender");
    let arg = secs_child.to_string();
    let mut res: Vec<Vec<(f64, f64, f64)>> = vec![vec![]; who.len()];
    alternate(who.len(), rounds, |k, _| {
        // RUSAGE_SELF: nothing else runs in this process during the wait, and it includes helper threads
        // (process_control waits in a thread of its own).
        let mut s = spawn(who[k], "sleep", &[&arg], false).unwrap();
        let r0 = sys::rusage(libc::RUSAGE_SELF);
        let t0 = Instant::now();
        wait_with(who[k], &mut s, Instant::now() + LONG).unwrap();
        let wall = secs(t0.elapsed());
        let r1 = sys::rusage(libc::RUSAGE_SELF);
        res[k].push((
            (r1.nvcsw - r0.nvcsw) as f64 / wall,
            (r1.cpu - r0.cpu) / wall * 100.0,
            (r1.nivcsw - r0.nivcsw) as f64 / wall,
        ));
    });
    for (k, w) in who.iter().enumerate() {
        let wk = median(&res[k].iter().map(|r| r.0).collect::<Vec<_>>());
        let cpu = median(&res[k].iter().map(|r| r.1).collect::<Vec<_>>());
        let inv = median(&res[k].iter().map(|r| r.2).collect::<Vec<_>>());
        tab.add(
            "3",
            &format!("waiting on `sleep {secs_child}`: voluntary context switches/s; CPU in Notes"),
            &w.name(),
            format!("{wk:.1} /s"),
            "–".into(),
            "–".into(),
            format!(
                "CPU {cpu:.3} % of a core; involuntary {inv:.1}/s{}",
                if *w == Who::Gt {
                    "; target ≤ 2/s, ≤ 0.05 %"
                } else {
                    ""
                }
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 4: lateness after the deadline, child ignoring everything

const STUBBORN: &str = "trap '' TERM INT HUP QUIT; sleep 30";

fn row4(o: &Opts, tab: &mut Table) {
    let who = waiters(o, false);
    let n = o.n(200, 40);
    eprintln!("row 4: lateness after the deadline, {n} per contender");
    let mut late = vec![vec![]; who.len()];
    let mut early = vec![0usize; who.len()];
    // A cheap deterministic spread of timeouts (5..45 ms), so the deadline falls at every phase of a schedule.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    alternate(who.len(), n, |k, _| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let timeout = Duration::from_micros(5_000 + x % 40_000);
        let mut s = spawn(who[k], "sh", &["-c", STUBBORN], true).unwrap();
        let deadline = Instant::now() + timeout;
        let (st, timed_out) = wait_with(who[k], &mut s, deadline).unwrap();
        match st {
            // grouptimeout (and the variants): killed the group and reaped the leader before returning.
            Some(_) => assert!(timed_out, "{} did not time out", who[k].name()),
            // peers: noticed the deadline; finish the same job (kill the group, reap) inside the timing.
            None => kill_and_reap(&mut s).unwrap(),
        }
        let ret = Instant::now();
        if ret < deadline {
            early[k] += 1;
        }
        late[k].push(diff(ret, deadline));
    });
    for (k, w) in who.iter().enumerate() {
        tab.add(
            "4",
            "deadline → return (group killed, leader reaped); child ignores TERM/INT",
            &w.name(),
            t(median(&late[k])),
            t(pct(&late[k], 0.99)),
            "–".into(),
            format!(
                "n={n}; early returns: {}; max {}{}",
                early[k],
                t(pct(&late[k], 1.0)),
                match w {
                    Who::Gt => "; target median ≤ 1 ms, never early",
                    Who::Variant(_) | Who::Pidfd => "",
                    _ => "; peer notices the deadline, the bench then sends kill(-pgid, SIGKILL) and reaps",
                }
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 5: teardown of a 1000-member group

const MEMBERS: usize = 1000;

fn fan_out_script() -> String {
    format!("i=0; while [ $i -lt {MEMBERS} ]; do sleep 600 & i=$((i+1)); done; wait")
}

/// Waits until the group has its leader and all members; returns their pids.
fn await_members(pgid: u32) -> Option<Vec<u32>> {
    let t0 = Instant::now();
    loop {
        let m = sys::group_members(pgid);
        if m.len() > MEMBERS {
            return Some(m);
        }
        if t0.elapsed() > Duration::from_mins(1) {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Polls until every listed process is dead (gone, zombie, or dead state); returns when that was first seen.
fn await_dead(pids: &[u32]) -> Option<Instant> {
    let t0 = Instant::now();
    let mut left: Vec<u32> = pids.to_vec();
    loop {
        left.retain(|&p| !sys::is_dead(p));
        if left.is_empty() {
            return Some(Instant::now());
        }
        if t0.elapsed() > Duration::from_secs(30) {
            return None;
        }
        thread::sleep(Duration::from_micros(500));
    }
}

fn row5(o: &Opts, tab: &mut Table) {
    let rounds = o.n(5, 1);
    eprintln!("row 5: teardown of a {MEMBERS}-member group, {rounds} per contender");
    let names = [
        "grouptimeout `wait_deadline`",
        "raw `kill(-pgid, SIGKILL)` + `wait()`",
    ];
    let mut ret = [vec![], vec![]];
    let mut dead = [vec![], vec![]];
    let script = fan_out_script();
    alternate(2, rounds, |k, _| {
        let slack = Duration::from_millis(20);
        if k == 0 {
            let mut c = Command::new("sh")
                .args(["-c", &script])
                .spawn_group()
                .unwrap();
            let Some(members) = await_members(c.id()) else {
                let _ = c.kill();
                let _ = c.wait();
                panic!("the group never reached {MEMBERS} members");
            };
            let deadline = Instant::now() + slack;
            let out = c.wait_deadline(deadline).unwrap();
            let r = Instant::now();
            assert!(out.timed_out());
            let d = await_dead(&members).expect("members still alive 30 s after the kill");
            ret[0].push(diff(r, deadline));
            dead[0].push(diff(d, deadline));
        } else {
            use std::os::unix::process::CommandExt as _;
            let mut c = Command::new("sh")
                .args(["-c", &script])
                .process_group(0)
                .spawn()
                .unwrap();
            let Some(members) = await_members(c.id()) else {
                let _ = sys::kill_group(c.id(), libc::SIGKILL);
                let _ = c.wait();
                panic!("the group never reached {MEMBERS} members");
            };
            let deadline = Instant::now() + slack;
            thread::sleep(deadline.saturating_duration_since(Instant::now()));
            sys::kill_group(c.id(), libc::SIGKILL).unwrap();
            c.wait().unwrap();
            let r = Instant::now();
            let d = await_dead(&members).expect("members still alive 30 s after the kill");
            ret[1].push(diff(r, deadline));
            dead[1].push(diff(d, deadline));
        }
    });
    for k in 0..2 {
        tab.add(
            "5",
            &format!("{MEMBERS}-member group: deadline → return"),
            names[k],
            t(median(&ret[k])),
            "–".into(),
            "–".into(),
            format!(
                "n={rounds}; all: {}",
                ret[k].iter().map(|x| t(*x)).collect::<Vec<_>>().join(", ")
            ),
        );
        tab.add(
            "5",
            &format!("{MEMBERS}-member group: deadline → every member dead"),
            names[k],
            t(median(&dead[k])),
            "–".into(),
            "–".into(),
            format!(
                "n={rounds}; all: {}; dead = /proc/PID/stat gone, Z or X (polled every 0.5 ms)",
                dead[k].iter().map(|x| t(*x)).collect::<Vec<_>>().join(", ")
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 6: the CLI against GNU timeout

fn cli_path(o: &Opts) -> PathBuf {
    if let Some(p) = &o.cli {
        return p.clone();
    }
    if let Some(p) = std::env::var_os("GROUPTIMEOUT_BIN") {
        return PathBuf::from(p);
    }
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/release/grouptimeout"
    ))
}

/// Whether `setpriv` can run `bin --version` as nobody here (root, and a binary nobody may run).
fn runs_as_nobody(bin: &std::path::Path) -> bool {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A case of row 6: arguments, runs, exit code, pause before each run (ms), as nobody.
type CliCase = (&'static [&'static str], usize, Option<i32>, u64, bool);

#[allow(
    clippy::too_many_lines,
    reason = "row 6's cases, contenders and table in one place"
)]
fn row6(o: &Opts, tab: &mut Table) {
    let bin = cli_path(o);
    let gnu = PathBuf::from("/usr/bin/timeout");
    // (arguments, runs, exit code, pause before each run: a spaced run shows what back-to-back runs hide, such as
    // an RCU grace period that a migration into a cgroup waits for; as nobody: both through `setpriv`, where the tool
    // gets the job's own reaper instead of a cgroup)
    let cases: [CliCase; 5] = [
        (&["10", "true"], o.n(200, 30), Some(0), 0, false),
        (&["10", "true"], o.n(40, 8), Some(0), 300, false),
        (&[".2", "sleep", "10"], o.n(30, 6), Some(124), 0, false),
        (&["10", "true"], o.n(200, 30), Some(0), 0, true),
        (&["10", "true"], o.n(40, 8), Some(0), 300, true),
    ];
    if !bin.is_file() {
        for (args, ..) in cases {
            tab.add(
                "6",
                &format!("CLI `… {}`", args.join(" ")),
                "grouptimeout CLI",
                "–".into(),
                "–".into(),
                "–".into(),
                format!(
                    "skipped: no binary at {} (build it with `cargo build --release`, or pass --cli PATH / \
                     GROUPTIMEOUT_BIN)",
                    bin.display()
                ),
            );
        }
        if !gnu.is_file() {
            return;
        }
    }
    let mut contenders = vec![("GNU `timeout`", gnu)];
    if bin.is_file() {
        contenders.push(("grouptimeout CLI", bin));
    }
    // Another build of the tool to compare with in the same run (say, before a change).
    if let Some(base) = std::env::var_os("GROUPTIMEOUT_BIN_BASE") {
        contenders.push((
            "grouptimeout CLI ($GROUPTIMEOUT_BIN_BASE)",
            PathBuf::from(base),
        ));
    }
    for (args, n, want, pause, nobody) in cases {
        if nobody && !runs_as_nobody(&contenders[contenders.len() - 1].1) {
            eprintln!("row 6: skipped as nobody (setpriv cannot run the tool as nobody here)");
            continue;
        }
        eprintln!(
            "row 6: CLI `{}`, {n} per contender, {pause} ms apart{}",
            args.join(" "),
            if nobody { ", as nobody" } else { "" }
        );
        let mut times = vec![vec![]; contenders.len()];
        let mut spawned = vec![];
        alternate(contenders.len(), n, |k, _| {
            thread::sleep(Duration::from_millis(pause));
            let t0 = Instant::now();
            let mut c = if nobody {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(&contenders[k].1);
                c
            } else {
                Command::new(&contenders[k].1)
            };
            let mut c = c
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            spawned.push(c.id());
            let st = c.wait().unwrap();
            times[k].push(secs(t0.elapsed()));
            assert_eq!(st.code(), want, "{} {}", contenders[k].0, args.join(" "));
        });
        // Neither CLI may leave its command running: look for survivors in the groups they created.
        thread::sleep(Duration::from_millis(50));
        let left: usize = spawned.iter().map(|&p| sys::group_members(p).len()).sum();
        let base = median(&times[0]);
        for (k, (name, _)) in contenders.iter().enumerate() {
            let m = median(&times[k]);
            tab.add(
                "6",
                &format!(
                    "CLI `… {}` (wall time{}{})",
                    args.join(" "),
                    if pause > 0 {
                        format!(", runs {pause} ms apart")
                    } else {
                        String::new()
                    },
                    if nobody {
                        ", as nobody through `setpriv`"
                    } else {
                        ""
                    }
                ),
                name,
                t(m),
                t(pct(&times[k], 0.99)),
                format!("{:.2}× GNU", m / base),
                format!(
                    "n={n}; exit code {}{}",
                    want.unwrap(),
                    if left > 0 {
                        format!("; {left} processes left in their groups!")
                    } else {
                        String::new()
                    }
                ),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 8: the cost of die_with_parent

fn row8(o: &Opts, tab: &mut Table) {
    let n = o.n(500, 100);
    eprintln!("row 8: spawn+wait /bin/true with die_with_parent, {n} per contender");
    // The guard is the keeper program in its guard mode on Linux (`host::die_with_parent_forked` is the same call
    // now: its guard is no longer a fork of the caller).
    let names = [
        "grouptimeout (no guard)",
        "+ `die_with_parent()` (the guard program)",
    ];
    let run = |k: usize| {
        let mut c = Command::new("/bin/true").spawn_group().unwrap();
        if k == 1 {
            c.die_with_parent().unwrap();
        }
        assert!(c.wait_timeout(LONG).unwrap().status().success());
    };
    for k in 0..names.len() {
        run(k);
    }
    let mut times = vec![vec![]; names.len()];
    alternate(names.len(), n, |k, _| {
        let t0 = Instant::now();
        run(k);
        times[k].push(secs(t0.elapsed()));
    });
    let base = median(&times[0]);
    let rss = sys::rusage(libc::RUSAGE_SELF).maxrss_kib;
    for (k, name) in names.iter().enumerate() {
        let m = median(&times[k]);
        tab.add(
            "8",
            "spawn + wait `/bin/true`, die_with_parent",
            name,
            t(m),
            t(pct(&times[k], 0.99)),
            if k == 0 {
                "(base)".into()
            } else {
                delta(m - base)
            },
            format!(
                "n={n}; bench process peak RSS {:.1} MiB (the guard's start costs the same at any size){}",
                rss as f64 / 1024.0,
                if k == 0 { "" } else { "; target ≤ +1 ms" }
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 7: capture of 256 MiB

const CAPTURE_BYTES: usize = 256 << 20;
const CAPTURE_WHO: &[&str] = &[
    "std",
    #[cfg(feature = "capture")]
    "grouptimeout",
    #[cfg(feature = "capture")]
    "grouptimeout-1MiB",
    "subprocess",
    "process_control",
];

/// Sub-mode run in a fresh process: capture `head -c 256MiB /dev/zero` one way, print seconds, peak RSS, bytes.
fn capture_child(who: &str) -> ! {
    let head = || {
        let mut c = Command::new("head");
        c.args(["-c", &CAPTURE_BYTES.to_string(), "/dev/zero"])
            .stdin(Stdio::null());
        c
    };
    let t0 = Instant::now();
    let len = match who {
        "std" => head().output().unwrap().stdout.len(),
        #[cfg(feature = "capture")]
        "grouptimeout" => {
            let mut c = head()
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn_group()
                .unwrap();
            c.set_output_limit(2 * CAPTURE_BYTES);
            let cap = c.wait_with_output_timeout(LONG).unwrap();
            assert!(cap.stdout_omitted == 0 && !cap.outcome.timed_out());
            cap.stdout.len()
        }
        #[cfg(feature = "capture")]
        "grouptimeout-1MiB" => {
            let mut c = head()
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn_group()
                .unwrap();
            c.set_output_limit(1 << 20);
            let cap = c.wait_with_output_timeout(LONG).unwrap();
            assert!(cap.stdout_omitted > 0 && !cap.outcome.timed_out());
            assert!(
                cap.stdout.len() <= (1 << 20) + 4096,
                "kept {} bytes",
                cap.stdout.len()
            );
            cap.stdout.len()
        }
        "subprocess" => subprocess::Exec::cmd("head")
            .args(["-c", &CAPTURE_BYTES.to_string(), "/dev/zero"])
            .stdout(subprocess::Redirection::Pipe)
            .stderr(subprocess::Redirection::Pipe)
            .capture()
            .unwrap()
            .stdout
            .len(),
        "process_control" => {
            use process_control::{ChildExt as _, Control as _};
            let c = head()
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            c.controlled_with_output()
                .time_limit(LONG)
                .wait()
                .unwrap()
                .expect("no timeout")
                .stdout
                .len()
        }
        "baseline" => 0,
        other => panic!("unknown capture contender {other}"),
    };
    let dt = secs(t0.elapsed());
    let r = sys::rusage(libc::RUSAGE_SELF);
    println!("{dt} {} {len}", r.maxrss_kib);
    std::process::exit(0)
}

fn row7(o: &Opts, tab: &mut Table) {
    let rounds = o.n(9, 2);
    let mut who: Vec<&str> = vec!["baseline"];
    who.extend(CAPTURE_WHO);
    eprintln!("row 7: capture 256 MiB, {rounds} per contender, each in a fresh process");
    let exe = std::env::current_exe().unwrap();
    let mut time = vec![vec![]; who.len()];
    let mut rss = vec![vec![]; who.len()];
    alternate(who.len(), rounds, |k, _| {
        let out = Command::new(&exe)
            .args(["--capture-child", who[k]])
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "capture child {} failed", who[k]);
        let s = String::from_utf8_lossy(&out.stdout);
        let v: Vec<f64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
        if who[k] != "baseline" && who[k] != "grouptimeout-1MiB" {
            assert_eq!(
                v[2] as usize, CAPTURE_BYTES,
                "{} captured the wrong length",
                who[k]
            );
        }
        time[k].push(v[0]);
        rss[k].push(v[1] * 1024.0);
    });
    let base = median(&time[1]);
    for (k, w) in who.iter().enumerate() {
        let m = median(&time[k]);
        tab.add(
            "7",
            "capture 256 MiB of stdout: time; peak RSS in Notes",
            &match *w {
                "std" => "std `Command::output()`".to_string(),
                "baseline" => "baseline (bench process, no capture)".to_string(),
                "grouptimeout" => "grouptimeout `wait_with_output_timeout`".to_string(),
                "grouptimeout-1MiB" => {
                    "grouptimeout `wait_with_output_timeout`, 1 MiB limit".to_string()
                }
                "subprocess" => "subprocess 1 `capture()`".to_string(),
                "process_control" => "process_control 5 `controlled_with_output`".to_string(),
                x => x.to_string(),
            },
            if *w == "baseline" { "–".into() } else { t(m) },
            "–".into(),
            if *w == "baseline" {
                "–".into()
            } else {
                format!("{:.2}×", m / base)
            },
            format!(
                "n={rounds}; peak RSS {:.1} MiB{}",
                median(&rss[k]) / f64::from(1 << 20),
                match *w {
                    "grouptimeout" => "; target ≤ 1.1× std",
                    "grouptimeout-1MiB" => "; target peak RSS < ~16 MiB",
                    _ => "",
                }
            ),
        );
    }
    if !cfg!(feature = "capture") {
        tab.add(
            "7",
            "capture 256 MiB of stdout",
            "grouptimeout",
            "–".into(),
            "–".into(),
            "–".into(),
            "skipped: built without `--features capture`".into(),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// row 9: many concurrent waits in one process

/// Threads in row 9, each waiting on a child of its own.
const CONCURRENT: usize = 32;

fn row9(o: &Opts, tab: &mut Table) {
    let who = waiters(o, true);
    let secs_child = if o.quick { 2 } else { 5 };
    eprintln!("row 9: {CONCURRENT} threads each waiting on its own `sleep {secs_child}`, 1 round per contender");
    let arg = secs_child.to_string();
    let mut res = vec![(0.0, 0.0); who.len()];
    alternate(who.len(), 1, |k, _| {
        let ready = std::sync::Barrier::new(CONCURRENT + 1);
        let (r0, t0) = thread::scope(|scope| {
            for _ in 0..CONCURRENT {
                scope.spawn(|| {
                    let mut s = spawn(who[k], "sleep", &[&arg], false).unwrap();
                    ready.wait();
                    let (st, _) = wait_with(who[k], &mut s, Instant::now() + LONG).unwrap();
                    assert!(st.expect("exited").success());
                });
            }
            // Counted from the moment every child runs and every thread is about to wait.
            ready.wait();
            (sys::rusage(libc::RUSAGE_SELF), Instant::now())
        });
        let wall = secs(t0.elapsed());
        let r1 = sys::rusage(libc::RUSAGE_SELF);
        res[k] = (
            (r1.nvcsw - r0.nvcsw) as f64 / wall,
            (r1.cpu - r0.cpu) / wall * 100.0,
        );
    });
    for (k, w) in who.iter().enumerate() {
        let (wakeups, cpu) = res[k];
        tab.add(
            "9",
            &format!(
                "{CONCURRENT} threads, each waiting on its own `sleep {secs_child}`: voluntary context switches/s \
                 of the process; CPU in Notes"
            ),
            &w.name(),
            format!("{wakeups:.1} /s"),
            "–".into(),
            "–".into(),
            format!(
                "CPU {cpu:.3} % of a core; includes the {CONCURRENT} thread exits{}",
                if *w == Who::Gt {
                    "; target ≤ 100/s"
                } else {
                    ""
                }
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// How this build of the library sleeps in a wait: whether a wait on a running child holds a pidfd (another thread
/// looks while the wait sleeps, then ends the child by closing its standard input).
fn library_wait() -> &'static str {
    let pidfds = || {
        std::fs::read_dir("/proc/self/fd").map_or(0, |d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().contains("pidfd"))
                })
                .count()
        })
    };
    let before = pidfds();
    let mut child = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn_group()
        .expect("spawn cat");
    let stdin = child.stdin.take().expect("piped stdin");
    let looker = thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(1);
        let mut seen = false;
        while !seen && Instant::now() < end {
            thread::sleep(Duration::from_millis(5));
            seen = pidfds() > before;
        }
        drop(stdin);
        seen
    });
    child.wait_timeout(LONG).expect("wait for cat");
    if looker.join().expect("looker thread") {
        "pidfd (sleeps in ppoll until the exit)"
    } else {
        "poll schedule (no pidfd: --cfg grouptimeout_no_pidfd, or none could be opened)"
    }
}

fn machine_header(o: &Opts) -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim()
        .to_string();
    let nproc = thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    let load = read("/proc/loadavg");
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.retain(|a| !a.is_empty());
    let features = if cfg!(feature = "capture") {
        " --features capture"
    } else {
        ""
    };
    let sep = if args.is_empty() {
        String::new()
    } else {
        format!(" -- {}", args.join(" "))
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Command: `cargo run --release --manifest-path bench/Cargo.toml{features}{sep}`  "
    );
    let _ = writeln!(
        s,
        "Machine: {nproc} CPUs (nproc), {cpu}, Linux {kernel}; load average at start {}  ",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(s, "Mode: {}  ", if o.quick { "--quick" } else { "full" });
    let _ = writeln!(s, "Library wait: {}  ", library_wait());
    s
}

/// Row 10: the job boundary of `spawn_contained` (cgroup and lineage modes) against `spawn_group`: spawn + wait of
/// `/bin/true`; ending a job with 200 `setsid` escapees; the lineage scan's cost with 1,000 more processes on the host.
#[allow(
    clippy::too_many_lines,
    reason = "row 10's three parts, each a table of contenders"
)]
fn row10(o: &Opts, tab: &mut Table) {
    use grouptimeout_job::{Contain, Containment};
    let modes: [(&str, Option<Containment>); 4] = [
        ("grouptimeout `spawn_group`", None),
        ("`spawn_contained`, cgroup", Some(Containment::Cgroup)),
        ("`spawn_contained`, lineage", Some(Containment::Lineage)),
        ("`spawn_contained`, reaper", Some(Containment::Reaper)),
    ];
    let contain = |mode: Option<Containment>| {
        let mut c = Contain::new();
        match mode {
            Some(Containment::Lineage) => {
                c.cgroup(false).reaper(false).require(Containment::Lineage);
            }
            Some(Containment::Reaper) => {
                c.cgroup(false).require(Containment::Reaper);
            }
            Some(m) => {
                c.require(m);
            }
            None => {}
        }
        c
    };
    let spawn = |mode: Option<Containment>, cmd: &mut Command| match mode {
        None => cmd.spawn_group(),
        Some(_) => contain(mode).spawn(cmd),
    };
    for (_, m) in &modes {
        spawn(*m, &mut Command::new("/bin/true"))
            .unwrap()
            .wait()
            .unwrap();
    }
    // Back to back, then each spawn 250 ms after the last one: a migration into a cgroup waits for an RCU grace
    // period unless one just passed, which back-to-back spawns hide (issue 23).
    for (row, label, n, pause) in [
        (
            "10a",
            "spawn + wait `/bin/true`, with the job boundary",
            o.n(400, 60),
            0,
        ),
        (
            "10a'",
            "spawn + wait `/bin/true`, spawns 250 ms apart",
            o.n(40, 8),
            250,
        ),
    ] {
        eprintln!("row {row}: spawn(+contain) + wait /bin/true, {n} per mode, {pause} ms apart");
        let mut times = vec![vec![]; modes.len()];
        alternate(modes.len(), n, |k, _| {
            std::thread::sleep(Duration::from_millis(pause));
            let t0 = Instant::now();
            let mut c = spawn(modes[k].1, &mut Command::new("/bin/true")).unwrap();
            assert!(c.wait().unwrap().success());
            times[k].push(secs(t0.elapsed()));
        });
        let base = median(&times[0]);
        for (k, (name, _)) in modes.iter().enumerate() {
            let m = median(&times[k]);
            tab.add(
                "10",
                label,
                name,
                t(m),
                t(pct(&times[k], 0.99)),
                String::new(),
                format!(
                    "n={n}; {:+.3} ms vs `spawn_group`{}",
                    (m - base) * 1e3,
                    match k {
                        1 | 3 => "; target ≤ +0.5 ms",
                        2 if pause == 0 => "; target ≤ +1 ms",
                        _ => "",
                    }
                ),
            );
        }
    }

    let n = o.n(20, 5);
    eprintln!("row 10b: end a job with 200 setsid escapees, {n} per mode");
    let script = "i=0; while [ $i -lt 200 ]; do setsid sleep 60 & i=$((i+1)); done; echo ready; exec sleep 60";
    let mut times = vec![vec![]; 3];
    let mut running = [0usize; 3];
    alternate(3, n, |k, _| {
        let mut c = spawn(
            modes[k + 1].1,
            Command::new("sh")
                .args(["-c", script])
                .stdout(Stdio::piped()),
        )
        .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(c.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let t0 = Instant::now();
        let out = c.wait_timeout(Duration::ZERO).unwrap();
        times[k].push(secs(t0.elapsed()));
        assert!(out.timed_out());
        let left: Vec<u32> = c.leftovers().iter().map(|l| l.pid).collect();
        assert!(left.len() >= 200, "{} leftovers", left.len());
        let alive = left.iter().filter(|&&p| !sys::is_dead(p)).count();
        running[k] += alive;
        let end = Instant::now() + Duration::from_secs(1);
        while left.iter().any(|&p| !sys::is_dead(p)) && Instant::now() < end {
            thread::sleep(Duration::from_millis(1));
        }
        assert!(
            left.iter().all(|&p| sys::is_dead(p)),
            "escapees alive 1 s after the wait"
        );
    });
    for k in 0..3 {
        tab.add(
            "10",
            "end a job with 200 `setsid` escapees: from the kill to the wait's return",
            modes[k + 1].0,
            t(median(&times[k])),
            t(pct(&times[k], 0.99)),
            String::new(),
            format!(
                "n={n}; not yet a zombie in /proc right after the wait: {} escapees in all runs (all dead 1 s later); \
                 target ≤ 100 ms",
                running[k]
            ),
        );
    }

    let n = o.n(100, 20);
    eprintln!("row 10c: kill point (lineage, reaper) with 1,000 more processes on the host, {n} runs per mode");
    let mut extra: Vec<std::process::Child> = (0..1000)
        .map(|_| Command::new("sleep").arg("600").spawn().unwrap())
        .collect();
    let kill_modes = [2, 3];
    let mut times = vec![vec![]; kill_modes.len()];
    alternate(kill_modes.len(), n, |k, _| {
        let mut c = spawn(modes[kill_modes[k]].1, Command::new("sleep").arg("60")).unwrap();
        let t0 = Instant::now();
        c.kill().unwrap();
        times[k].push(secs(t0.elapsed()));
        c.wait().unwrap();
    });
    let procs = std::fs::read_dir("/proc")
        .unwrap()
        .filter(|e| {
            e.as_ref().is_ok_and(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|s| s.parse::<u32>().is_ok())
            })
        })
        .count();
    for mut x in extra.drain(..) {
        let _ = x.kill();
        let _ = x.wait();
    }
    for (k, &mode) in kill_modes.iter().enumerate() {
        tab.add(
            "10",
            if mode == 2 {
                "lineage kill point (`kill()`: /proc scan, pidfds, group kill)"
            } else {
                "reaper kill point (`kill()`: group kill, the keeper's descendants through pidfds)"
            },
            modes[mode].0,
            t(median(&times[k])),
            t(pct(&times[k], 0.99)),
            String::new(),
            format!(
                "n={n}; {procs} processes on the host during the scan; target ≤ {}",
                if mode == 2 { "5 ms" } else { "2 ms" }
            ),
        );
    }

    // The caller's size: a kept spawn starts its keeper from a child that shares the caller's memory until it execs
    // the keeper program (as `posix_spawn` starts a command), so neither the spawn nor the caller's later writes to
    // its memory should cost more with a large heap (issue 43: from 0 MiB to 2 GiB, within 0.3 ms; the rewrite as
    // after a plain spawn). Each heap is touched (mapped) before its rounds; the notes give the resident memory of
    // the spawned process (the keeper, or `sleep`) after the rewrite.
    let n = o.n(12, 3);
    let big_modes = [0, 1, 3];
    let mut at_size: Vec<Vec<f64>> = vec![];
    for heap_mib in [0usize, 2048] {
        eprintln!(
            "row 10d: a caller with a {heap_mib} MiB heap, {n} rounds per mode, 250 ms apart"
        );
        let mut heap = vec![1u8; heap_mib << 20];
        let (mut spawned, mut rewrite, mut kept) = (
            vec![vec![]; big_modes.len()],
            vec![vec![]; big_modes.len()],
            vec![vec![]; big_modes.len()],
        );
        alternate(big_modes.len(), n, |k, _| {
            let mode = modes[big_modes[k]].1;
            thread::sleep(Duration::from_millis(250));
            let t0 = Instant::now();
            let mut c = spawn(mode, &mut Command::new("/bin/true")).unwrap();
            assert!(c.wait().unwrap().success());
            spawned[k].push(secs(t0.elapsed()));
            thread::sleep(Duration::from_millis(250));
            let mut c = spawn(mode, Command::new("sleep").arg("60")).unwrap();
            thread::sleep(Duration::from_millis(300));
            let t0 = Instant::now();
            for page in heap.iter_mut().step_by(4096) {
                *page = page.wrapping_add(1);
            }
            rewrite[k].push(secs(t0.elapsed()));
            kept[k].push(sys::resident_mib(c.id()));
            c.kill().unwrap();
            c.wait().unwrap();
        });
        std::hint::black_box(&heap);
        drop(heap);
        let base = median(&spawned[0]);
        let medians: Vec<f64> = spawned.iter().map(|v| median(v)).collect();
        for (k, &mode) in big_modes.iter().enumerate() {
            let m = medians[k];
            let versus_small = at_size
                .first()
                .map_or_else(String::new, |small: &Vec<f64>| {
                    format!(
                        "; {:+.2} ms vs a 0 MiB heap{}",
                        (m - small[k]) * 1e3,
                        if k == 0 {
                            ""
                        } else {
                            " (target within 0.3 ms)"
                        }
                    )
                });
            tab.add(
                "10",
                &format!("spawn + wait `/bin/true` from a caller with a {heap_mib} MiB heap, spawns 250 ms apart"),
                modes[mode].0,
                t(m),
                t(pct(&spawned[k], 0.99)),
                String::new(),
                format!(
                    "n={n}; {:+.2} ms, {:.2}× vs `spawn_group`{versus_small}",
                    (m - base) * 1e3,
                    m / base
                ),
            );
        }
        let rewrite_base = median(&rewrite[0]);
        for (k, &mode) in big_modes.iter().enumerate().filter(|_| heap_mib > 0) {
            tab.add(
                "10",
                &format!(
                    "the caller rewrites its {heap_mib} MiB heap (a byte per page) 300 ms after spawning `sleep 60`"
                ),
                modes[mode].0,
                t(median(&rewrite[k])),
                t(pct(&rewrite[k], 0.99)),
                String::new(),
                format!(
                    "n={n}; {:.2}× the rewrite after `spawn_group`; resident memory of the spawned process (the \
                     keeper, or `sleep`) after the rewrite: {:.1} MiB",
                    median(&rewrite[k]) / rewrite_base,
                    median(&kept[k])
                ),
            );
        }
        at_size.push(medians);
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.first().map(String::as_str) {
        Some("--capture-child") if argv.len() > 1 => capture_child(&argv[1]),
        Some("--many-worker") => many::worker(&argv[1..]),
        _ => {}
    }
    // Rows 11 and 12 hold a descriptor or more per job (4,000 jobs in row 12): this process (and the workers it
    // starts) may use up to the hard limit. Nothing machine-wide changes.
    let (soft, hard) = sys::raise_nofile();
    assert!(
        soft >= 8192,
        "RLIMIT_NOFILE {soft} (hard {hard}): rows 11 and 12 need 8192"
    );
    let o = Opts::parse();
    let header = machine_header(&o);
    let t0 = Instant::now();
    let mut tab = Table { rows: vec![] };
    if o.row(1) {
        row1(&o, &mut tab);
    }
    if o.row(2) {
        row2(&o, &mut tab);
    }
    if o.row(3) {
        row3(&o, &mut tab);
    }
    if o.row(4) {
        row4(&o, &mut tab);
    }
    if o.row(5) {
        row5(&o, &mut tab);
    }
    if o.row(6) {
        row6(&o, &mut tab);
    }
    if o.row(7) {
        row7(&o, &mut tab);
    }
    if o.row(8) {
        row8(&o, &mut tab);
    }
    if o.row(9) {
        row9(&o, &mut tab);
    }
    if o.row(10) {
        row10(&o, &mut tab);
    }
    let mut many = String::new();
    if o.row(11) {
        many.push_str(&many::row11(&o));
    }
    if o.row(12) {
        many.push('\n');
        many.push_str(&many::row12(&o));
    }
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{header}Total run time: {:.0} s; load average at end {}  \n",
        t0.elapsed().as_secs_f64(),
        load_end
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    if !tab.rows.is_empty() {
        print!("{}", tab.render());
    }
    if !many.is_empty() {
        print!("\n{many}");
    }
}
