#!/usr/bin/env python3
"""Watches the cgroup folder WHERE for new job folders (`grouptimeout-PID-*`) while a test run goes on, and writes one
line per new folder to standard output: its name, whether this run made it, and who made it.

    job_folders.py WHERE ROOT [TREE]

Who made it: the command line of PID (the process named in the folder's name), of its parent and grandparent, the
names of their threads (libtest names each test's thread after the test, cut to 15 bytes), and the first processes
found inside the folder with their parents. PID is the maker's pid in its own PID namespace: for a tool run in a
private one it names some other process here, and the processes inside (seen here with their real pids) tell more.

Whether this run made it: `ours` when PID or a process inside the folder descends from process ROOT (the script
that runs the tests) or from a process that runs a program from the folder TREE (the checkout under test: tests
start the tool through tmux, whose server is no descendant), `other` when neither does (another run on the same machine, in the same cgroup), `unknown`
when that could not be told (the maker and the processes inside were gone before it looked; counted as ours).
A folder is looked at again every few milliseconds until it is told, for at most 5 s.

Runs until its standard input closes (or it is killed). Used by .ci/run: when a test run leaves folders behind,
these lines name the tests that made them.
"""
import os
import select
import sys
import time


def read(path, limit=300):
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    return data.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:limit]


def parent(pid):
    stat = read(f"/proc/{pid}/stat", 4096)
    try:
        return int(stat[stat.rindex(")") + 2 :].split()[1])
    except (AttributeError, ValueError, IndexError):
        return None


def ours(pid, root, tree):
    """Whether `pid` is process `root`, or runs a program from the folder `tree` (the checkout under test)."""
    if pid == root:
        return True
    try:
        return bool(tree) and os.readlink(f"/proc/{pid}/exe").startswith(tree + "/")
    except OSError:
        return False


def descends(pid, root, tree):
    """True or False when `pid`'s ancestry could be read, None when `pid` is gone."""
    seen = 0
    while pid and seen < 64:
        if ours(pid, root, tree):
            return True
        up = parent(pid)
        if up is None:
            return None if seen == 0 else False
        pid, seen = up, seen + 1
    return False


def threads(pid):
    try:
        names = {read(f"/proc/{pid}/task/{t}/comm") for t in os.listdir(f"/proc/{pid}/task")}
    except OSError:
        return []
    return sorted(n for n in names if n and ("::" in n or "_" in n))


def describe(pid, procs):
    parts = []
    ppid = parent(pid)
    grand = parent(ppid) if ppid else None
    for what, p in (("pid", pid), ("parent", ppid), ("grandparent", grand)):
        if p:
            parts.append(f"{what} {p}: {read(f'/proc/{p}/cmdline') or '(gone)'}")
    for p in (pid, ppid):
        names = threads(p) if p else []
        if names:
            parts.append(f"threads of {p}: {', '.join(names)[:400]}")
    for p in procs[:2]:
        up = parent(p)
        parts.append(f"inside {p}: {read(f'/proc/{p}/cmdline') or '(gone)'} (parent {up}: "
                     f"{read(f'/proc/{up}/cmdline', 150) if up else '(gone)'})")
    return " | ".join(parts)


def main():
    where, root = sys.argv[1], int(sys.argv[2])
    tree = os.path.realpath(sys.argv[3]) if len(sys.argv) > 3 else ""
    # Every folder there is new to it: the script may have made one before this process started to look.
    seen = set()
    pending = {}  # name -> (first seen, maker pid, description)
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], 0.002)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break
        try:
            names = [n for n in os.listdir(where) if n.startswith("grouptimeout-")]
        except OSError:
            break
        now = time.monotonic()
        for name in names:
            if name not in seen:
                seen.add(name)
                try:
                    pid = int(name.split("-")[1])
                except (IndexError, ValueError):
                    continue
                pending[name] = (now, pid, None)
        for name, (first, pid, said) in list(pending.items()):
            procs = [int(p) for p in (read(os.path.join(where, name, "cgroup.procs"), 4096) or "").split()]
            if said is None:
                said = describe(pid, procs)
            verdicts = [descends(p, root, tree) for p in procs]
            # The name's pid is the maker's only in our PID namespace: trust it when it has no process inside yet
            # only if the folder's processes do not say otherwise.
            verdicts.append(descends(pid, root, tree))
            if True in verdicts:
                verdict = "ours"
            elif procs and all(v is False for v in verdicts[:-1]) and verdicts[-1] is not True:
                verdict = "other"
            elif not procs and verdicts[-1] is False and now - first > 0.5:
                verdict = "other"
            elif now - first > 5 or not os.path.isdir(os.path.join(where, name)):
                verdict = "unknown"
            else:
                pending[name] = (first, pid, said)
                continue
            del pending[name]
            print(f"{name} {verdict} {time.strftime('%H:%M:%S')} | {said}", flush=True)
    for name, (_, _, said) in pending.items():
        print(f"{name} unknown {time.strftime('%H:%M:%S')} | {said}", flush=True)


if __name__ == "__main__":
    main()
