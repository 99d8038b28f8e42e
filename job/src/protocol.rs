//! What a kept job's caller and its keeper program must agree on: the keeper's command line, the orders the caller
//! sends and the notes the keeper sends back, one datagram each on the job's channel (a `SOCK_SEQPACKET` socket
//! pair). One file, std only, compiled into the library (`crate::contain::keeper`) and into the program
//! (`job/keeper/main.rs`, by `#[path]`), so that the two cannot disagree. Every decoder takes any bytes: what it
//! cannot read is `None`, never a panic. And the one helper both sides need alike: [`cgroup_tree`].

use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The program's name (`comm` and `argv[0]`), as the keeper was named before it was a program of its own: never the
/// tool's, so that a kill of the tool by its name (`pkill -x`, `killall`) spares the keeper, which then ends the job.
pub(crate) const KEEPER_NAME: &str = "group-keeper";

/// How many of the processes a kill reached a report names at most (pid and name, about 20 bytes each: a datagram
/// of at most about 200 KiB, under the default socket buffer); the rest are counted (`Report::unnamed`).
pub(crate) const NAMED_AT_MOST: usize = 8192;

/// The folders of the cgroup tree at `dir`: `dir` first, then each sub-cgroup before the sub-cgroups below it (none
/// of the names are followed if `dir` cannot be read).
pub(crate) fn cgroup_tree(dir: &Path) -> Vec<PathBuf> {
    let mut folders = vec![dir.to_path_buf()];
    let mut next = 0;
    while let Some(dir) = folders.get(next).cloned() {
        next += 1;
        if let Ok(entries) = std::fs::read_dir(&dir) {
            folders.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    folders
}

/// What the program is started to do (its command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Start {
    /// Start, check what it needs (its signal descriptor), and exit 0: the spawn's probe.
    Probe,
    /// Keep a job.
    Keep(Keep),
    /// Guard the group `leader` of a job without a keeper (`die_with_parent`): the program is in that group, and kills
    /// it when its `pipe` (a descriptor it inherited, whose other end only the caller holds) reaches end of file,
    /// after the death plan last written on it (`SIGNAL CONT GRACE_MS` lines).
    Guard { pipe: i32, leader: u32 },
}

/// A kept job, as its keeper is told at its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keep {
    /// The keeper's end of the channel (a descriptor it inherited).
    pub(crate) channel: i32,
    /// The command: the keeper's child, leader of the group whose id is the keeper's pid.
    pub(crate) command: u32,
    /// The caller: the keeper's parent, whose death it watches for.
    pub(crate) supervisor: u32,
    /// Cgroup mode: the job's folder, where the keeper was born, and where it moves to before it kills the job (the
    /// caller's own cgroup); `None`: reaper mode.
    pub(crate) cgroup: Option<(PathBuf, PathBuf)>,
}

impl Start {
    /// The command line (without `argv[0]`).
    pub(crate) fn to_args(&self) -> Vec<OsString> {
        match self {
            Start::Probe => vec!["--probe".into()],
            Start::Guard { pipe, leader } => {
                vec![
                    "--guard".into(),
                    pipe.to_string().into(),
                    leader.to_string().into(),
                ]
            }
            Start::Keep(keep) => {
                let mut args: Vec<OsString> = vec![
                    "--keep".into(),
                    keep.channel.to_string().into(),
                    keep.command.to_string().into(),
                    keep.supervisor.to_string().into(),
                ];
                if let Some((folder, leave_to)) = &keep.cgroup {
                    args.push(folder.into());
                    args.push(leave_to.into());
                }
                args
            }
        }
    }

    /// Reads the command line (without `argv[0]`).
    pub(crate) fn from_args(args: &[OsString]) -> Option<Start> {
        let number = |arg: Option<&OsString>| arg?.to_str()?.parse::<u32>().ok();
        match args.first()?.to_str()? {
            "--probe" if args.len() == 1 => Some(Start::Probe),
            "--guard" if args.len() == 3 => Some(Start::Guard {
                pipe: i32::try_from(number(args.get(1))?).ok()?,
                leader: number(args.get(2))?,
            }),
            "--keep" if args.len() == 4 || args.len() == 6 => Some(Start::Keep(Keep {
                channel: i32::try_from(number(args.get(1))?).ok()?,
                command: number(args.get(2))?,
                supervisor: number(args.get(3))?,
                cgroup: match (args.get(4), args.get(5)) {
                    (Some(folder), Some(leave_to)) => {
                        Some((PathBuf::from(folder), PathBuf::from(leave_to)))
                    }
                    _ => None,
                },
            })),
            _ => None,
        }
    }
}

/// What the caller tells its keeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Kill the whole job now (the caller has signalled the command's group itself), then end once the command is
    /// dead, as [`Verdict`](Order::Verdict) `kill`.
    Kill,
    /// Once the command exited: end the rest of the job (`kill`) or leave it running, then exit as the command did.
    Verdict { kill: bool },
    /// When the caller dies: `signal` to the command's group (and the command), then up to `grace_ms` for the job to
    /// end, then kill it. A `signal` of 0 or a grace of 0: kill at once.
    DeathPlan { signal: u32, grace_ms: u32 },
}

const KILL: u8 = 1;
const VERDICT: u8 = 2;
const DEATH_PLAN: u8 = 3;
const STOPPED: u8 = 10;
const REPORT: u8 = 11;
const LISTED: u8 = 12;

impl Order {
    pub(crate) fn encode(self) -> [u8; 9] {
        let (tag, a, b) = match self {
            Order::Kill => (KILL, 0, 0),
            Order::Verdict { kill } => (VERDICT, u32::from(kill), 0),
            Order::DeathPlan { signal, grace_ms } => (DEATH_PLAN, signal, grace_ms),
        };
        let mut bytes = [tag, 0, 0, 0, 0, 0, 0, 0, 0];
        bytes[1..5].copy_from_slice(&a.to_le_bytes());
        bytes[5..].copy_from_slice(&b.to_le_bytes());
        bytes
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Order> {
        let mut at = Reader(bytes);
        let (tag, a, b) = (at.u8()?, at.u32()?, at.u32()?);
        Some(match tag {
            KILL => Order::Kill,
            VERDICT => Order::Verdict { kill: a != 0 },
            DEATH_PLAN => Order::DeathPlan {
                signal: a,
                grace_ms: b,
            },
            _ => return None,
        })
    }
}

/// A failure of the keeper's, as an `io::Error` has it: an errno, or a kind and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) errno: i32,
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn of(e: &std::io::Error) -> Failure {
        Failure {
            errno: e.raw_os_error().unwrap_or(0),
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    pub(crate) fn to_error(&self) -> std::io::Error {
        match self.errno {
            0 => std::io::Error::new(self.kind, self.message.clone()),
            errno => std::io::Error::from_raw_os_error(errno),
        }
    }
}

/// The kinds a failure without an errno may have (its kind as a number, both ways).
const KINDS: [ErrorKind; 4] = [
    ErrorKind::Other,
    ErrorKind::PermissionDenied,
    ErrorKind::TimedOut,
    ErrorKind::NotFound,
];

/// What the keeper tells its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Note {
    /// The command stopped, by this signal (the keeper sends its caller `SIGCHLD` too).
    Stopped(u32),
    /// The keeper's last word, written just before it exits as the command did.
    Report(Report),
    /// Told to kill the job, the keeper has stopped the command's group and named its members (or given up waiting
    /// for them to stop): the caller's `SIGKILL` of the group may follow.
    Listed,
}

/// How the CPU time of a [`Report`] was measured (the core's `Measured`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Measured {
    /// The command and what it waited for (a cgroup job whose folder could not be read).
    #[default]
    Leader,
    /// Every process of the job, which the keeper reaped (reaper mode).
    Keeper,
    /// The job's cgroup (`cpu.stat`), the keeper's own use taken out.
    Cgroup,
}

/// The keeper's report: what the job used, what its kills reached, and what failed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Report {
    pub(crate) user_us: u64,
    pub(crate) system_us: u64,
    pub(crate) measured: Measured,
    /// The peak memory in bytes, and whether it is the whole job's (`memory.peak`) or the largest process's.
    pub(crate) memory: Option<(u64, bool)>,
    /// `pids.peak`, the keeper left out.
    pub(crate) processes: Option<u64>,
    /// Cgroup mode: whether the keeper removed the job's folder (it cannot while it lives in it: a job that ended
    /// on its own leaves the folder, empty, to the caller).
    pub(crate) folder_removed: bool,
    /// The processes besides the command that the keeper's kills reached (pid, name), at most [`NAMED_AT_MOST`].
    pub(crate) reached: Vec<(u32, String)>,
    /// The orphans the keeper reaped that `SIGKILL` had killed before a kill of its own (at most [`NAMED_AT_MOST`]):
    /// what the caller's group kill reached, if the caller sent one (it knows).
    pub(crate) killed: Vec<(u32, String)>,
    /// How many more it reached than it names.
    pub(crate) unnamed: u32,
    /// What failed first: its errno (0: none), its kind where it has no errno, and what it says.
    pub(crate) failure: Option<Failure>,
}

impl Note {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Note::Stopped(signal) => {
                out.push(STOPPED);
                out.extend_from_slice(&signal.to_le_bytes());
            }
            Note::Listed => out.push(LISTED),
            Note::Report(r) => {
                out.push(REPORT);
                out.extend_from_slice(&r.user_us.to_le_bytes());
                out.extend_from_slice(&r.system_us.to_le_bytes());
                out.push(match r.measured {
                    Measured::Leader => 0,
                    Measured::Keeper => 1,
                    Measured::Cgroup => 2,
                });
                let (memory, whole) = r.memory.unwrap_or((0, false));
                let flags = u8::from(r.memory.is_some())
                    | u8::from(whole) << 1
                    | u8::from(r.processes.is_some()) << 2
                    | u8::from(r.folder_removed) << 3
                    | u8::from(r.failure.is_some()) << 4;
                out.push(flags);
                out.extend_from_slice(&memory.to_le_bytes());
                out.extend_from_slice(&r.processes.unwrap_or(0).to_le_bytes());
                if let Some(failure) = &r.failure {
                    out.extend_from_slice(&failure.errno.to_le_bytes());
                    let kind = KINDS.iter().position(|&k| k == failure.kind).unwrap_or(0);
                    out.push(u8::try_from(kind).unwrap_or(0));
                    text(&mut out, failure.message.as_bytes());
                }
                let unnamed = [&r.reached, &r.killed]
                    .iter()
                    .map(|list| list.len().saturating_sub(NAMED_AT_MOST))
                    .sum::<usize>();
                let unnamed = u32::try_from(unnamed).unwrap_or(u32::MAX);
                out.extend_from_slice(&r.unnamed.saturating_add(unnamed).to_le_bytes());
                for list in [&r.reached, &r.killed] {
                    let named = list.len().min(NAMED_AT_MOST);
                    out.extend_from_slice(&u32::try_from(named).unwrap_or(0).to_le_bytes());
                    for (pid, name) in list.iter().take(named) {
                        out.extend_from_slice(&pid.to_le_bytes());
                        text(&mut out, name.as_bytes());
                    }
                }
            }
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Note> {
        let mut at = Reader(bytes);
        match at.u8()? {
            STOPPED => Some(Note::Stopped(at.u32()?)),
            LISTED => Some(Note::Listed),
            REPORT => {
                let user_us = at.u64()?;
                let system_us = at.u64()?;
                let measured = match at.u8()? {
                    1 => Measured::Keeper,
                    2 => Measured::Cgroup,
                    _ => Measured::Leader,
                };
                let flags = at.u8()?;
                let (memory, processes) = (at.u64()?, at.u64()?);
                let failure = if flags & 16 != 0 {
                    let errno = i32::from_le_bytes(at.take(4)?.try_into().ok()?);
                    let kind = KINDS.get(usize::from(at.u8()?)).copied()?;
                    let message = at.text()?;
                    Some(Failure {
                        errno,
                        kind,
                        message,
                    })
                } else {
                    None
                };
                let unnamed = at.u32()?;
                let mut lists = [Vec::new(), Vec::new()];
                for list in &mut lists {
                    for _ in 0..at.u32()? {
                        list.push((at.u32()?, at.text()?));
                    }
                }
                let [reached, killed] = lists;
                Some(Note::Report(Report {
                    user_us,
                    system_us,
                    measured,
                    memory: (flags & 1 != 0).then_some((memory, flags & 2 != 0)),
                    processes: (flags & 4 != 0).then_some(processes),
                    folder_removed: flags & 8 != 0,
                    reached,
                    killed,
                    unnamed,
                    failure,
                }))
            }
            _ => None,
        }
    }
}

/// A text of at most 255 bytes, after its length.
fn text(out: &mut Vec<u8>, bytes: &[u8]) {
    let bytes = bytes.get(..bytes.len().min(255)).unwrap_or_default();
    out.push(u8::try_from(bytes.len()).unwrap_or(0));
    out.extend_from_slice(bytes);
}

/// Reads a datagram from its start.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn text(&mut self) -> Option<String> {
        let len = usize::from(self.u8()?);
        Some(String::from_utf8_lossy(self.take(len)?).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_as_written() {
        for order in [
            Order::Kill,
            Order::Verdict { kill: true },
            Order::Verdict { kill: false },
            Order::DeathPlan {
                signal: 15,
                grace_ms: 2500,
            },
        ] {
            assert_eq!(Order::decode(&order.encode()), Some(order));
        }
        let report = Note::Report(Report {
            user_us: 7,
            system_us: 9,
            measured: Measured::Cgroup,
            memory: Some((1 << 33, true)),
            processes: Some(3),
            folder_removed: true,
            reached: vec![(42, "sleep".into()), (43, String::new())],
            killed: vec![(44, "sh".into())],
            unnamed: 1,
            failure: Some(Failure {
                errno: 0,
                kind: ErrorKind::PermissionDenied,
                message: "no".into(),
            }),
        });
        assert_eq!(Note::decode(&report.encode()), Some(report));
        assert_eq!(
            Note::decode(&Note::Stopped(19).encode()),
            Some(Note::Stopped(19))
        );
        assert_eq!(Note::decode(&Note::Listed.encode()), Some(Note::Listed));
        let start = Start::Keep(Keep {
            channel: 5,
            command: 77,
            supervisor: 76,
            cgroup: Some(("/a b".into(), "/c".into())),
        });
        assert_eq!(Start::from_args(&start.to_args()), Some(start));
        let guard = Start::Guard { pipe: 0, leader: 9 };
        assert_eq!(Start::from_args(&guard.to_args()), Some(guard));
    }

    #[test]
    fn what_cannot_be_read_is_none() {
        for bytes in [
            &[][..],
            &[REPORT, 1, 2],
            &[99, 0, 0, 0, 0, 0, 0, 0, 0],
            &[STOPPED, 1],
        ] {
            assert_eq!(Note::decode(bytes), None);
            assert_eq!(Order::decode(bytes), None);
        }
    }
}
