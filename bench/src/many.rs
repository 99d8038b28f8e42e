//! Rows 11 and 12: many concurrent jobs, one supervising process per contender (issue 38's "Numbers").
//!
//! Every measurement runs in a fresh worker process (the bench re-executes itself with `--many-worker …`), so that
//! its CPU time, context switches and peak RSS (`getrusage(RUSAGE_SELF)` in the worker) are the contender's own.
//! Every process a job starts carries `GT_BENCH_MANY=<mark>` in its environment (a mark unique to the worker), so
//! that the bench finds what a contender left behind through `/proc/PID/environ` and kills it by pid.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use grouptimeout::{GroupChild, GroupCommandExt as _};
use grouptimeout_job::JobCommandExt as _;

use crate::{alternate, diff, median, pct, secs, sys, t, Opts};

/// The environment variable that marks every process of a worker's jobs.
const MARK_VAR: &str = "GT_BENCH_MANY";

/// Row 11's contenders: (worker name, label). "baseline" supervises nothing: the floor of a worker process.
const WHO: &[(&str, &str)] = &[
    ("baseline", "baseline: a worker that supervises nothing"),
    (
        "timer",
        "floor: one thread sleeping to each deadline in turn, no children",
    ),
    ("set", "grouptimeout-set `JobSet` (one thread)"),
    (
        "set-contained",
        "grouptimeout-set `JobSet`, every job `spawn_contained`",
    ),
    (
        "set-mixed",
        "grouptimeout-set `JobSet`, every job `spawn_contained`, beside a tenth more plain jobs (`spawn_group`, no \
         daemon)",
    ),
    (
        "set-group",
        "grouptimeout-set `JobSet`, every job `spawn_group` (no `spawn_contained`)",
    ),
    ("threads", "a thread per job, `wait_timeout`"),
    ("adapter", "grouptimeout-tokio `wait` (current-thread runtime)"),
    (
        "adapter-contained",
        "grouptimeout-tokio `wait`, every job `spawn_contained` (current-thread runtime)",
    ),
    (
        "tokio",
        "tokio::process: `process_group(0)`, `timeout_at`, `kill(-pgid)`, `kill_on_drop` (current-thread runtime)",
    ),
    (
        "adapter-mt",
        "grouptimeout-tokio `wait` (multi-thread runtime, 2 workers)",
    ),
    (
        "tokio-mt",
        "tokio::process, as above (multi-thread runtime, 2 workers)",
    ),
];

/// What a worker printed: `key values…` per line.
type Report = HashMap<String, Vec<f64>>;

/// Row 12's idle job counts.
const IDLE: &[usize] = &[10, 100, 1000, 4000];

/// One job of row 11's plan.
struct Job {
    /// Its deadline, after the end of the spawn phase.
    after: Duration,
    /// Whether its leader exits before the deadline (else it runs into it).
    exits: bool,
    /// Whether it starts a `setsid` daemon (spawned with `spawn_contained` by our contenders).
    daemon: bool,
    /// A plain job beside contained ones (`set-mixed`): no daemon, always `spawn_group`.
    plain: bool,
    script: String,
}

/// Which jobs our contenders spawn with `spawn_contained`.
#[derive(Clone, Copy)]
enum Contain {
    /// None: `spawn_group` for all.
    None,
    /// Those with a daemon (a tenth).
    Daemons,
    /// All but the plain ones.
    All,
}

/// splitmix64: a reproducible stream of uniform numbers in [0, 1).
fn uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The jobs of one round: deadlines uniform over 0.2–3 s after the spawn phase; even jobs exit in time (their
/// leader after 30–80 % of their deadline, counted from their own spawn, so before it), odd ones run into it; every
/// job leaves `sleep 100` running in its group; jobs 0, 11, 20, 31, … (a tenth, half of each kind) also start a
/// `setsid sleep 100` daemon, outside the group.
fn plan(n: usize, seed: u64) -> Vec<Job> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            let after = Duration::from_secs_f64(0.2 + 2.8 * uniform(&mut s));
            let exits = i % 2 == 0;
            let daemon = i % 20 == 0 || i % 20 == 11;
            let leader = if exits {
                format!("{:.3}", after.as_secs_f64() * (0.3 + 0.5 * uniform(&mut s)))
            } else {
                "100".into()
            };
            let script = format!(
                "{}sleep 100 & sleep {leader}",
                if daemon { "setsid sleep 100 & " } else { "" }
            );
            Job {
                after,
                exits,
                daemon,
                plain: false,
                script,
            }
        })
        .collect()
}

/// `n` plain jobs (no daemon), to run beside contained ones.
fn plain_plan(n: usize, seed: u64) -> Vec<Job> {
    plan(n, seed)
        .into_iter()
        .map(|job| Job {
            daemon: false,
            plain: true,
            script: job.script.replace("setsid sleep 100 & ", ""),
            ..job
        })
        .collect()
}

/// A job spawned the way our contenders spawn it: `spawn_contained` as `contain` says, `spawn_group` else.
fn spawn_ours(job: &Job, mark: &str, contain: Contain) -> GroupChild {
    let mut c = Command::new("sh");
    c.args(["-c", &job.script])
        .env(MARK_VAR, mark)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let contained = match contain {
        Contain::None => false,
        Contain::Daemons => job.daemon,
        Contain::All => !job.plain,
    };
    if contained {
        c.spawn_contained()
    } else {
        c.spawn_group()
    }
    .expect("spawn a job")
}

/// A job that ended: its index, whether it timed out, when the contender returned it, and (tokio) when the bench's
/// code sent the kill.
struct Done {
    job: usize,
    timed_out: bool,
    ret: Instant,
    kill: Option<Instant>,
}

/// The end of the spawn phase: the instant every deadline is counted from, and the worker's usage then.
type Base = (Instant, sys::Usage);

fn base() -> Base {
    (Instant::now(), sys::rusage(libc::RUSAGE_SELF))
}

/// The floor of lateness on this machine at this moment: no child at all, one thread that sleeps (`thread::sleep`,
/// i.e. `clock_nanosleep`) to each timed-out job's deadline in turn and stamps its wake-up.
fn run_timer(jobs: &[Job]) -> (Base, Vec<Done>) {
    let b = base();
    let mut order: Vec<usize> = (0..jobs.len()).filter(|&i| !jobs[i].exits).collect();
    order.sort_by_key(|&i| jobs[i].after);
    let done = order
        .into_iter()
        .map(|i| {
            thread::sleep((b.0 + jobs[i].after).saturating_duration_since(Instant::now()));
            Done {
                job: i,
                timed_out: true,
                ret: Instant::now(),
                kill: None,
            }
        })
        .collect();
    (b, done)
}

fn run_set(jobs: &[Job], mark: &str, contain: Contain) -> (Base, Vec<Done>) {
    use grouptimeout_set::JobSet;
    let children: Vec<GroupChild> = jobs.iter().map(|j| spawn_ours(j, mark, contain)).collect();
    let b = base();
    let mut set = JobSet::new().expect("JobSet::new");
    for (i, c) in children.into_iter().enumerate() {
        set.add(i, c, Some(b.0 + jobs[i].after))
            .expect("JobSet::add");
    }
    let mut done = Vec::with_capacity(jobs.len());
    for (i, r) in set {
        let ret = Instant::now();
        let timed_out = r.expect("a job's outcome").outcome().timed_out();
        done.push(Done {
            job: i,
            timed_out,
            ret,
            kill: None,
        });
    }
    (b, done)
}

fn run_threads(jobs: &[Job], mark: &str) -> (Base, Vec<Done>) {
    let children: Vec<GroupChild> = jobs
        .iter()
        .map(|j| spawn_ours(j, mark, Contain::Daemons))
        .collect();
    let b = base();
    let (tx, rx) = mpsc::channel();
    let threads: Vec<_> = children
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            let tx = tx.clone();
            let deadline = b.0 + jobs[i].after;
            thread::spawn(move || {
                let o = c
                    .wait_timeout(deadline.saturating_duration_since(Instant::now()))
                    .expect("wait_timeout");
                let ret = Instant::now();
                tx.send(Done {
                    job: i,
                    timed_out: o.timed_out(),
                    ret,
                    kill: None,
                })
                .expect("send");
            })
        })
        .collect();
    drop(tx);
    for th in threads {
        th.join().expect("a waiting thread");
    }
    (b, rx.iter().collect())
}

/// tokio's current-thread runtime, or (`multi`) its multi-thread runtime with the default number of workers (one
/// per CPU: 2 here), as `#[tokio::main]` makes it.
fn runtime(multi: bool) -> tokio::runtime::Runtime {
    if multi {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    }
    .enable_all()
    .build()
    .expect("tokio runtime")
}

fn run_adapter(jobs: &[Job], mark: &str, multi: bool, contain: Contain) -> (Base, Vec<Done>) {
    runtime(multi).block_on(async {
        let children: Vec<GroupChild> = jobs.iter().map(|j| spawn_ours(j, mark, contain)).collect();
        let b = base();
        let tasks: Vec<_> = children
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let deadline = tokio::time::Instant::from_std(b.0 + jobs[i].after);
                tokio::spawn(async move {
                    let o = grouptimeout_tokio::wait(c, Some(deadline))
                        .await
                        .expect("grouptimeout_tokio::wait");
                    Done {
                        job: i,
                        timed_out: o.outcome.timed_out(),
                        ret: Instant::now(),
                        kill: None,
                    }
                })
            })
            .collect();
        let mut done = Vec::with_capacity(jobs.len());
        for task in tasks {
            done.push(task.await.expect("a task"));
        }
        (b, done)
    })
}

/// tokio's own, as a careful tokio user writes it: each job in its own group, a timer per job; at the deadline
/// `kill(-pgid, SIGKILL)` and a reap; after an exit in time, `kill(-pgid, SIGKILL)` too, for what is left in the
/// group (the group's id cannot be reused while a member lives); `kill_on_drop` as the safety net. A `setsid`
/// daemon is out of reach of all of it.
fn run_tokio(jobs: &[Job], mark: &str, multi: bool) -> (Base, Vec<Done>) {
    runtime(multi).block_on(async {
        let children: Vec<tokio::process::Child> = jobs
            .iter()
            .map(|j| {
                tokio::process::Command::new("sh")
                    .args(["-c", &j.script])
                    .env(MARK_VAR, mark)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .process_group(0)
                    .kill_on_drop(true)
                    .spawn()
                    .expect("spawn a job")
            })
            .collect();
        let b = base();
        let tasks: Vec<_> = children
            .into_iter()
            .enumerate()
            .map(|(i, mut child)| {
                let deadline = tokio::time::Instant::from_std(b.0 + jobs[i].after);
                tokio::spawn(async move {
                    let pgid = child.id().expect("an unreaped child has its id");
                    if let Ok(status) = tokio::time::timeout_at(deadline, child.wait()).await {
                        status.expect("wait");
                        let ret = Instant::now();
                        sys::kill_group(pgid, libc::SIGKILL).expect("kill the group's leftovers");
                        Done {
                            job: i,
                            timed_out: false,
                            ret,
                            kill: None,
                        }
                    } else {
                        let kill = Instant::now();
                        sys::kill_group(pgid, libc::SIGKILL).expect("kill the group");
                        child.wait().await.expect("wait after the kill");
                        Done {
                            job: i,
                            timed_out: true,
                            ret: Instant::now(),
                            kill: Some(kill),
                        }
                    }
                })
            })
            .collect();
        let mut done = Vec::with_capacity(jobs.len());
        for task in tasks {
            done.push(task.await.expect("a task"));
        }
        (b, done)
    })
}

/// Row 12's worker: `idle` jobs (`sleep 3600`, no deadline) in a set, then `probes` times one more job
/// (`sleep 3600`) that another thread kills (`pidfd_send_signal(SIGKILL)`) 10 ms after the set's thread went to
/// sleep in `next()`: the time from that kill to `next()` returning the job, and the CPU time of the set's thread
/// in that `next()` (`CLOCK_THREAD_CPUTIME_ID`).
fn idle_worker(idle: usize, probes: usize, mark: &str) {
    let spawn = || {
        Command::new("sleep")
            .arg("3600")
            .env(MARK_VAR, mark)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn_group()
            .expect("spawn")
    };
    let mut set = grouptimeout_set::JobSet::new().expect("JobSet::new");
    let t0 = Instant::now();
    for i in 0..idle {
        set.add(i, spawn(), None).expect("JobSet::add");
    }
    let added = secs(t0.elapsed());
    let mut latency = Vec::with_capacity(probes);
    let mut cpu = Vec::with_capacity(probes);
    for p in 0..probes {
        let c = spawn();
        // The leader is unreaped until the set reaps it, so the pid is this child's.
        let fd = sys::pidfd_open(c.id()).expect("pidfd_open");
        set.add(idle + p, c, None).expect("JobSet::add");
        let killer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(10));
            let at = Instant::now();
            sys::pidfd_kill(&fd).expect("pidfd_send_signal");
            at
        });
        let c0 = sys::thread_cpu();
        let (k, r) = set.next().expect("the probe ends");
        let ret = Instant::now();
        let c1 = sys::thread_cpu();
        assert_eq!(k, idle + p, "only the probe ends");
        r.expect("the probe's outcome");
        let at = killer.join().expect("killer");
        // The first `next()` after the adds steps every job once (each job's first step): shown apart.
        if p == 0 {
            println!("first {} {}", diff(ret, at), c1 - c0);
        } else {
            latency.push(diff(ret, at));
            cpu.push(c1 - c0);
        }
    }
    let t1 = Instant::now();
    drop(set);
    let dropped = secs(t1.elapsed());
    let r = sys::rusage(libc::RUSAGE_SELF);
    println!("probe {}", join(&latency));
    println!("probe_cpu {}", join(&cpu));
    println!("added {added}");
    println!("dropped {dropped}");
    println!("maxrss_kib {}", r.maxrss_kib);
}

fn join(v: &[f64]) -> String {
    v.iter().map(f64::to_string).collect::<Vec<_>>().join(" ")
}

/// `--many-worker WHO N SEED MARK` (row 11) or `--many-worker idle N PROBES MARK` (row 12): runs in a fresh process,
/// prints `key values…` lines on stdout, exits.
pub fn worker(args: &[String]) -> ! {
    let [who, n, seed, mark] = args else {
        panic!("--many-worker needs WHO N SEED MARK");
    };
    let n: usize = n.parse().expect("N");
    let seed: u64 = seed.parse().expect("SEED");
    if who == "idle" {
        idle_worker(n, usize::try_from(seed).expect("PROBES"), mark);
        std::process::exit(0);
    }
    let mut jobs = plan(n, seed);
    if who == "set-mixed" {
        jobs.extend(plain_plan(n / 10, seed ^ 0x00be_51de));
    }
    let t0 = Instant::now();
    let r0 = sys::rusage(libc::RUSAGE_SELF);
    let c0 = sys::rusage(libc::RUSAGE_CHILDREN);
    let (b, done) = match who.as_str() {
        "baseline" => (base(), vec![]),
        "timer" => run_timer(&jobs),
        "set" => run_set(&jobs, mark, Contain::Daemons),
        "set-contained" | "set-mixed" => run_set(&jobs, mark, Contain::All),
        "set-group" => run_set(&jobs, mark, Contain::None),
        "threads" => run_threads(&jobs, mark),
        "adapter" => run_adapter(&jobs, mark, false, Contain::Daemons),
        "adapter-contained" => run_adapter(&jobs, mark, false, Contain::All),
        "tokio" => run_tokio(&jobs, mark, false),
        "adapter-mt" => run_adapter(&jobs, mark, true, Contain::Daemons),
        "tokio-mt" => run_tokio(&jobs, mark, true),
        other => panic!("unknown --many-worker contender {other}"),
    };
    let t1 = Instant::now();
    let r1 = sys::rusage(libc::RUSAGE_SELF);
    let c1 = sys::rusage(libc::RUSAGE_CHILDREN);
    let (b_t, b_r) = b;
    let mut late = vec![];
    let mut late_kill = vec![];
    let mut late_plain = vec![];
    let mut late_beside = vec![];
    let mut wrong = 0;
    for d in &done {
        let job = &jobs[d.job];
        if d.timed_out == job.exits {
            wrong += 1;
        }
        if d.timed_out {
            let deadline = b_t + job.after;
            late.push(diff(d.ret, deadline));
            if !job.daemon {
                late_plain.push(diff(d.ret, deadline));
            }
            if job.plain {
                late_beside.push(diff(d.ret, deadline));
            }
            if let Some(k) = d.kill {
                late_kill.push(diff(k, deadline));
            }
        }
    }
    println!("wall {} {}", secs(t1 - t0), secs(t1 - b_t));
    println!("cpu {} {}", r1.cpu - r0.cpu, r1.cpu - b_r.cpu);
    // What the worker reaped used: the commands (and, for contained jobs, their keepers, with the orphans each
    // keeper reaped); processes that no one of ours reaped are not counted.
    println!("cpu_children {}", c1.cpu - c0.cpu);
    println!("nvcsw {} {}", r1.nvcsw - r0.nvcsw, r1.nvcsw - b_r.nvcsw);
    println!("maxrss_kib {}", r1.maxrss_kib);
    println!("ended {} {wrong}", done.len());
    println!("late {}", join(&late));
    println!("late_kill {}", join(&late_kill));
    println!("late_plain {}", join(&late_plain));
    println!("late_beside {}", join(&late_beside));
    std::process::exit(0)
}

/// Runs one worker and parses its `key values…` lines; then counts (and kills, by pid) what its jobs left.
fn run_worker(args: &[&str], mark: &str) -> (Report, usize) {
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new(exe)
        .arg("--many-worker")
        .args(args)
        .arg(mark)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run a worker");
    assert!(
        out.status.success(),
        "worker {args:?} failed: {}",
        out.status
    );
    let mut m = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.split_whitespace();
        if let Some(k) = f.next() {
            m.insert(
                k.to_string(),
                f.map(|x| x.parse().expect("a number")).collect(),
            );
        }
    }
    (m, leftovers(mark))
}

/// Counts the live processes that carry `mark` (300 ms after the worker ended, so that killed ones are gone), then
/// kills them by pid and waits (up to 5 s) until none is left.
fn leftovers(mark: &str) -> usize {
    let entry = format!("{MARK_VAR}={mark}");
    thread::sleep(Duration::from_millis(300));
    let left = sys::marked(&entry);
    let end = Instant::now() + Duration::from_secs(5);
    let mut now = left.clone();
    while !now.is_empty() && Instant::now() < end {
        for &pid in &now {
            sys::kill_marked(pid, &entry);
        }
        thread::sleep(Duration::from_millis(20));
        now = sys::marked(&entry);
    }
    assert!(now.is_empty(), "could not kill the leftovers {now:?}");
    left.len()
}

fn first(m: &Report, k: &str, i: usize) -> f64 {
    m.get(k).and_then(|v| v.get(i).copied()).unwrap_or(f64::NAN)
}

fn mib(kib: f64) -> String {
    format!("{:.1} MiB", kib / 1024.0)
}

/// "median (p99)" of per-round values.
fn mp(v: &[f64], f: impl Fn(f64) -> String) -> String {
    if v.len() < 2 {
        f(median(v))
    } else {
        format!("{} ({})", f(median(v)), f(pct(v, 0.99)))
    }
}

fn yes(ok: bool) -> &'static str {
    if ok {
        "**met**"
    } else {
        "**not met**"
    }
}

/// Row 11: 1,000 concurrent jobs (200 with `--quick`), each contender in a fresh worker, contenders alternating.
/// Returns a markdown section.
#[allow(clippy::too_many_lines, reason = "one table and its goals")]
pub fn row11(o: &Opts) -> String {
    let n = if o.quick { 200 } else { 1000 };
    let rounds = o.n(5, 1);
    eprintln!(
        "row 11: {n} concurrent jobs, {rounds} rounds, each contender in a fresh worker process"
    );
    let mut res: Vec<Vec<(Report, usize)>> = vec![vec![]; WHO.len()];
    alternate(WHO.len(), rounds, |k, r| {
        let mark = format!("{}-{r}-{}", std::process::id(), WHO[k].0);
        let seed = 0x5eed + r as u64;
        let got = run_worker(&[WHO[k].0, &n.to_string(), &seed.to_string()], &mark);
        eprintln!(
            "  round {r} {}: wall {:.2} s, CPU {:.3} s, RSS {:.1} MiB, left {}",
            WHO[k].0,
            first(&got.0, "wall", 0),
            first(&got.0, "cpu", 0),
            first(&got.0, "maxrss_kib", 0) / 1024.0,
            got.1
        );
        res[k].push(got);
    });
    let per = |k: usize, key: &str, i: usize| -> Vec<f64> {
        res[k].iter().map(|(m, _)| first(m, key, i)).collect()
    };
    let pooled = |k: usize, key: &str| -> Vec<f64> {
        res[k]
            .iter()
            .flat_map(|(m, _)| m.get(key).cloned().unwrap_or_default())
            .collect()
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#### Row 11: {n} concurrent jobs, {rounds} round(s), one worker process per contender and round\n"
    );
    let _ = writeln!(
        s,
        "| Contender | Wall, all | Wall, supervision | CPU, supervision | CPU, all | CPU, reaped children | Peak RSS | \
         Wake-ups, supervision | Lateness p50 | Lateness p99 | Lateness max | Left | Wrong outcomes |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (k, (w, label)) in WHO.iter().enumerate() {
        let late = pooled(k, "late");
        let late_kill = pooled(k, "late_kill");
        let left: Vec<usize> = res[k].iter().map(|(_, l)| *l).collect();
        let wrong: f64 = per(k, "ended", 1).iter().sum();
        let ended: f64 = per(k, "ended", 0).iter().sum();
        let lat = |v: &[f64], p: f64| {
            if v.is_empty() {
                "–".to_string()
            } else {
                t(pct(v, p))
            }
        };
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            mp(&per(k, "wall", 0), t),
            mp(&per(k, "wall", 1), t),
            mp(&per(k, "cpu", 1), t),
            mp(&per(k, "cpu", 0), t),
            mp(&per(k, "cpu_children", 0), t),
            mp(&per(k, "maxrss_kib", 0), mib),
            mp(&per(k, "nvcsw", 1), |x| format!("{x:.0}")),
            lat(&late, 0.5),
            lat(&late, 0.99),
            lat(&late, 1.0),
            left.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            if *w == "baseline" || *w == "timer" {
                "–".to_string()
            } else {
                format!("{wrong:.0} of {ended:.0}")
            },
        );
        if *w == "set" {
            let plain = pooled(k, "late_plain");
            let _ = writeln!(
                s,
                "| ↳ same, lateness of the jobs without a daemon (`spawn_group`) only | | | | | | | | {} | {} | {} | | |",
                lat(&plain, 0.5),
                lat(&plain, 0.99),
                lat(&plain, 1.0)
            );
        }
        if *w == "set-mixed" {
            let beside = pooled(k, "late_beside");
            let _ = writeln!(
                s,
                "| ↳ same, lateness of the plain jobs only | | | | | | | | {} | {} | {} | | |",
                lat(&beside, 0.5),
                lat(&beside, 0.99),
                lat(&beside, 1.0)
            );
        }
        if !late_kill.is_empty() {
            let _ = writeln!(
                s,
                "| ↳ same, lateness to the `kill(-pgid)` call | | | | | | | | {} | {} | {} | | |",
                lat(&late_kill, 0.5),
                lat(&late_kill, 0.99),
                lat(&late_kill, 1.0)
            );
        }
    }
    let idx = |name: &str| {
        WHO.iter()
            .position(|(w, _)| *w == name)
            .expect("a contender")
    };
    let (timer, set, set_group, threads) =
        (idx("timer"), idx("set"), idx("set-group"), idx("threads"));
    let (adapter, tok, adapter_mt, tok_mt) = (
        idx("adapter"),
        idx("tokio"),
        idx("adapter-mt"),
        idx("tokio-mt"),
    );
    let base_rss = median(&per(idx("baseline"), "maxrss_kib", 0));
    let left_sum = |k: usize| res[k].iter().map(|(_, l)| *l).sum::<usize>();
    let left_med = |k: usize| median(&res[k].iter().map(|(_, l)| *l as f64).collect::<Vec<_>>());
    let (set_contained, set_mixed, adapter_contained) = (
        idx("set-contained"),
        idx("set-mixed"),
        idx("adapter-contained"),
    );
    let ours_left = left_sum(set)
        + left_sum(threads)
        + left_sum(adapter)
        + left_sum(adapter_mt)
        + left_sum(set_contained)
        + left_sum(set_mixed)
        + left_sum(adapter_contained);
    let p99 = |k: usize| pct(&pooled(k, "late"), 0.99);
    let rounds_p99 = |k: usize| {
        res[k]
            .iter()
            .map(|(m, _)| t(pct(m.get("late").map_or(&[][..], Vec::as_slice), 0.99)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cpu = |k: usize| median(&per(k, "cpu", 1));
    let rss = |k: usize| median(&per(k, "maxrss_kib", 0));
    let _ = writeln!(s, "\nGoals:\n");
    let _ = writeln!(
        s,
        "- nothing left by ours: {} ({ours_left} processes left by the sets, the threads and the adapters (both \
         runtimes) over all rounds; tokio's own left {} per round (median; {} on the multi-thread runtime), the set \
         without `spawn_contained` {})",
        yes(ours_left == 0),
        left_med(tok),
        left_med(tok_mt),
        left_med(set_group)
    );
    let _ = writeln!(
        s,
        "- lateness p99 ≤ 2 ms: the set {} ({}; per round {}; without `spawn_contained` {}), the adapter {} ({}; \
         multi-thread runtime {}), a thread per job {} ({}); tokio's own {} to its reap, {} to its kill \
         (multi-thread runtime: {}, {}); the floor (a timer alone) {}, per round {}",
        yes(p99(set) <= 2e-3),
        t(p99(set)),
        rounds_p99(set),
        t(p99(set_group)),
        yes(p99(adapter) <= 2e-3),
        t(p99(adapter)),
        t(p99(adapter_mt)),
        yes(p99(threads) <= 2e-3),
        t(p99(threads)),
        t(p99(tok)),
        t(pct(&pooled(tok, "late_kill"), 0.99)),
        t(p99(tok_mt)),
        t(pct(&pooled(tok_mt, "late_kill"), 0.99)),
        t(p99(timer)),
        rounds_p99(timer)
    );
    let _ = writeln!(
        s,
        "- the set's CPU ≤ tokio's: {} (supervision, medians: the set {}, without `spawn_contained` {} ({}), tokio's \
         own {}, on the multi-thread runtime {}; the adapter {}, on the multi-thread runtime {})",
        yes(cpu(set) <= cpu(tok)),
        t(cpu(set)),
        t(cpu(set_group)),
        yes(cpu(set_group) <= cpu(tok)),
        t(cpu(tok)),
        t(cpu(tok_mt)),
        t(cpu(adapter)),
        t(cpu(adapter_mt))
    );
    let _ = writeln!(
        s,
        "- the set's peak RSS ≤ ¼ of a thread per job's: {} (medians {} vs {}, ratio {:.2}; above the baseline \
         worker's {}: {} vs {}, ratio {:.2})",
        yes(rss(set) <= rss(threads) / 4.0),
        mib(rss(set)),
        mib(rss(threads)),
        rss(set) / rss(threads),
        mib(base_rss),
        mib(rss(set) - base_rss),
        mib(rss(threads) - base_rss),
        (rss(set) - base_rss) / (rss(threads) - base_rss)
    );
    // Issue 43: every job contained, its keeper a program of its own that does the job's kills and reads.
    let with_children = |k: usize| median(&per(k, "cpu", 0)) + median(&per(k, "cpu_children", 0));
    let _ = writeln!(
        s,
        "- every job contained, the set's own CPU ≤ 1.25× tokio's: {} (supervision, medians: {} vs {}, {:.2}×; the \
         adapter with every job contained {}); with the reaped children (keepers and commands) ≤ 1.4×: {} (the \
         worker's whole run, medians: {} vs {}, {:.2}×)",
        yes(cpu(set_contained) <= 1.25 * cpu(tok)),
        t(cpu(set_contained)),
        t(cpu(tok)),
        cpu(set_contained) / cpu(tok),
        t(cpu(adapter_contained)),
        yes(with_children(set_contained) <= 1.4 * with_children(tok)),
        t(with_children(set_contained)),
        t(with_children(tok)),
        with_children(set_contained) / with_children(tok)
    );
    let beside = pct(&pooled(set_mixed, "late_beside"), 0.99);
    let _ = writeln!(
        s,
        "- plain jobs beside {n} ending contained jobs, lateness p99 ≤ 2× an all-plain set's: {} ({} vs {}, {:.2}×)",
        yes(beside <= 2.0 * p99(set_group)),
        t(beside),
        t(p99(set_group)),
        beside / p99(set_group)
    );
    s
}

/// Row 12: one exit's wake-up with 10 / 100 / 1,000 / 4,000 idle jobs in the set, each count in a fresh worker,
/// counts alternating. Returns a markdown section.
pub fn row12(o: &Opts) -> String {
    let idle: Vec<usize> = if o.quick {
        IDLE[..3].to_vec()
    } else {
        IDLE.to_vec()
    };
    let rounds = o.n(3, 1);
    let probes = o.n(41, 11);
    eprintln!(
        "row 12: one exit among {idle:?} idle jobs in a set, {rounds} rounds of {probes} probes, fresh workers"
    );
    let mut res: Vec<Vec<Report>> = vec![vec![]; idle.len()];
    alternate(idle.len(), rounds, |k, r| {
        let mark = format!("{}-{r}-idle{}", std::process::id(), idle[k]);
        let (m, left) = run_worker(&["idle", &idle[k].to_string(), &probes.to_string()], &mark);
        assert_eq!(left, 0, "the set left idle jobs behind");
        eprintln!(
            "  round {r} idle {}: median {}",
            idle[k],
            t(median(&m["probe"]))
        );
        res[k].push(m);
    });
    let pooled = |k: usize, key: &str| -> Vec<f64> {
        res[k]
            .iter()
            .flat_map(|m| m.get(key).cloned().unwrap_or_default())
            .collect()
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#### Row 12: one exit among idle jobs in a set ({rounds} round(s) of {probes} probes per count)\n"
    );
    let _ = writeln!(
        s,
        "| Idle jobs | Kill → `next()` returns, median | p99 | vs 10 idle | CPU of `next()`, median | p99 | vs 10 idle | \
         First probe: kill → return; CPU (median) | Adding the idle jobs | Dropping the set | Peak RSS |"
    );
    let _ = writeln!(
        s,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let per = |k: usize, i: usize| -> Vec<f64> {
        res[k]
            .iter()
            .map(|m| {
                m.get("first")
                    .and_then(|v| v.get(i).copied())
                    .unwrap_or(f64::NAN)
            })
            .collect()
    };
    let m0 = median(&pooled(0, "probe"));
    let c0 = median(&pooled(0, "probe_cpu"));
    for (k, n) in idle.iter().enumerate() {
        let p = pooled(k, "probe");
        let c = pooled(k, "probe_cpu");
        let _ = writeln!(
            s,
            "| {n} | {} | {} | {:.2}× | {} | {} | {:.2}× | {}; {} | {} | {} | {} |",
            t(median(&p)),
            t(pct(&p, 0.99)),
            median(&p) / m0,
            t(median(&c)),
            t(pct(&c, 0.99)),
            median(&c) / c0,
            t(median(&per(k, 0))),
            t(median(&per(k, 1))),
            t(median(&pooled(k, "added"))),
            t(median(&pooled(k, "dropped"))),
            mib(median(&pooled(k, "maxrss_kib")))
        );
    }
    let last = median(&pooled(idle.len() - 1, "probe"));
    let last_cpu = median(&pooled(idle.len() - 1, "probe_cpu"));
    let _ = writeln!(
        s,
        "\nGoal: {} idle jobs add ≤ 2× to one exit's wake-up: {} (latency {:.2}×, CPU {:.2}× the medians at 10 idle \
         jobs)",
        idle[idle.len() - 1],
        yes(last <= 2.0 * m0 && last_cpu <= 2.0 * c0),
        last / m0,
        last_cpu / c0
    );
    s
}
