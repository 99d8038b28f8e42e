#!/usr/bin/env python3
"""The auditor's map: per crate of the workspace, counted whole (every feature), its files, code lines, `unsafe`
blocks and public items; per feature where a crate has features; and the budget of `grouptimeout`.

The crates are the root package `grouptimeout` (`src/`), `grouptimeout-job` (`job/src/`), `grouptimeout-cli`
(`cli/src/`: its library, `host`, and the tool's binary in `cli/src/bin/grouptimeout/`, counted in its row),
`grouptimeout-set` (`set/src/`: many jobs waited from one thread) and `grouptimeout-tokio` (`tokio/src/`: the waits
as tokio futures; its own lock file, not a workspace member). A crate
is counted whole, every feature on: what a reviewer who certifies a crate version reads, whatever features a
dependent turns on. A file belongs to the feature named by the `#[cfg(...feature = "NAME"...)]` on its `mod` line (or
on its parent module's), else to the crate's core (what `default-features = false` builds). Code lines are the lines
that are not blank and not comments (`//`, `///`, `//!`), outside `#[cfg(test)]` modules. An `unsafe` block is a
`unsafe {`, an `unsafe fn`, or a `static` placed by an unsafe attribute (`link_section`, `no_mangle`, `export_name`:
edition 2024 spells them `#[unsafe(...)]`), counted once per item; all of them must be in the crate's `sys/`. A
stand-in module (its `mod` line has `not(feature = "X")`) belongs to the core but is not compiled where X is on.
Public items are the `pub` items (functions, methods, types, traits, constants, modules, re-exports, fields excluded)
of a library outside its `sys/`, which is private (the hidden `__private` modules count too); a binary has none. Each
file of a `sys/` with `unsafe` is described by the first line of its module docs (`//!`), which says what its
`unsafe` is for. The prose above the table is written from the same numbers.

  .ci/audit.py            print the table
  .ci/audit.py --write    write AUDITING.md (at the root, shipped in `grouptimeout`'s package): the whole file
  .ci/audit.py --check    fail if AUDITING.md differs from what --write writes, `grouptimeout` is over its budget, a
                          crate's files or rooms import each other in a circle, a `.rs` file under a crate's `src/` is
                          in no module tree, `unsafe` is outside a `sys/`, or a `sys/` file with `unsafe` has no
                          module docs (CI runs this)

The circles are looked for in each crate (each library, and the tool's binary), twice: between files, and between
rooms. A file imports another when its code (not a comment, not a string) names, through `crate::…` or `super::…`
(also inside `use crate::{…}`), an item that the other defines; re-exports are followed to the definition
(`crate::GroupChild` is `child.rs`'s, `crate::sys::poll` is `sys/fd.rs`'s). A room is a module of the crate's root
with everything below it: its file and its folder (`child.rs` and `child/`, `contain/`); a room imports another when
one of its files imports one of the other's.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# (package, its folder, [(root file below its src/, the part of the crate it is)]): a library, and the tool's binary.
CRATES = [
    ("grouptimeout", ".", [("lib.rs", "library")]),
    # The keeper program (job/keeper/, compiled by the build script, embedded by the library) is the job crate's code
    # too: a reviewer of the package reads it.
    ("grouptimeout-job", "job", [("lib.rs", "library"), ("../keeper/main.rs", "the keeper program")]),
    ("grouptimeout-cli", "cli", [("lib.rs", "library (`host`)"), ("bin/grouptimeout/main.rs", "the tool")]),
    ("grouptimeout-set", "set", [("lib.rs", "library")]),
    ("grouptimeout-tokio", "tokio", [("lib.rs", "library")]),
]
BUDGETED = "grouptimeout"
AUDITING = os.path.join(ROOT, "AUDITING.md")
# What AUDITING.md says before the numbers: how the crates depend on each other, and how this script counts.
INTRO = """\
# Auditing

<!-- Made by .ci/audit.py --write from the sources of the five crates; CI (.ci/audit.py --check) fails when it is
stale. Edit the script, not this file. -->

What each crate of grouptimeout costs a reviewer: per crate its files, code lines, `unsafe` blocks and public items,
and what the `unsafe` of each file is for. `.ci/audit.py` in the source repository writes this file from the sources,
and CI (`.ci/audit.py --check`) fails when it is stale, when the core crate is over its budget (below), or when a
crate's files, or its rooms, import each other in a circle (a file imports the file that defines what it names
through `crate::…` or `super::`, re-exports followed; a room is a module of the crate's root with its folder, such as
`child.rs` and `child/`, and imports another room when one of its files imports one of the other's; the check names
the files or rooms of the circle and the lines that make it).

The crates import downward: `grouptimeout-cli` uses `grouptimeout-job` and `grouptimeout`; `grouptimeout-job`,
`grouptimeout-set` and `grouptimeout-tokio` use `grouptimeout` (the last two its public API alone, the stepped wait);
and `grouptimeout` uses none of them. Besides the public API, `grouptimeout-job` and `grouptimeout-cli` use
`grouptimeout`'s hidden module `__private` (`src/__private.rs`: the `Boundary` trait of `src/boundary.rs`, which a
contained job's boundary implements, and a few of the core's `sys` helpers), and `grouptimeout-cli` uses
`grouptimeout-job`'s; both pin the crate they use by its exact version, which keeps other versions out (not other
crates: any crate can name `__private`). The core trusts no boundary with its own promises: it checks its own child
before every signal and sends every group signal itself. `src/boundary.rs` says what a boundary can still change:
end or prolong a wait, block, and spare a keeper outside the group its signal by pid.

`grouptimeout` spawns no thread, installs no signal handler and registers nothing that runs before `main`; neither
does `grouptimeout-job`, whose keeper and guard are processes of their own (a program, `job/keeper/`, exec'd from a
memory file that the first contained spawn of a process makes and keeps open), nor `grouptimeout-set` (it works in the
calls of the thread that owns the set), nor `grouptimeout-tokio` (its futures run in the caller's runtime, which it
does not start). What is process-wide (signal handlers and masks, the subreaper flag, the terminal, the C library's
locale, the one function run before `main`: an `.init_array` entry that records whether `SIGPIPE` was inherited
ignored and which standard descriptors were closed) is in `grouptimeout-cli` alone, so that a crate that depends on
the libraries gets none of it, whatever else its build holds (CI checks each library's `.init_array`).

How it counts: each crate on its own, and its `capture` feature apart from the rest of it. Code lines are the lines
that are neither blank nor comments (`//`, `///`, `//!`), outside `#[cfg(test)]` modules; an `unsafe` block is an
`unsafe {`, an `unsafe fn`, or a static placed by an attribute that edition 2024 marks unsafe (the `#[link_section]`
static that registers the function `grouptimeout-cli` runs before `main`), all of them in the crate's `src/sys/`
(`src/sys/`, `job/src/sys/`, `cli/src/sys/`, `set/src/sys/`, `tokio/src/sys/`; and `job/keeper/sys/`, the keeper
program's, which `grouptimeout-job`'s build script compiles and its library embeds: counted in that crate's row),
each with its `// SAFETY:` comment;
public items are the `pub` functions, methods, types, traits, constants, modules and re-exports outside the crate's
`sys` module. A file is counted whole where it is compiled: its items gated for other systems count too.

## The counts

"""
CORE = "core"
# The promise of issues 18 and 33: all of `grouptimeout`'s src/, every feature counted, an auditor can read in a day.
# Raised from 1,500 lines for issue 39 (the job's usage, streamed output, per-stream limits, the idle end): the
# core-only build grew too (1,058 to 1,228: the usage and the whole-job wait); the way back under 1,500 is the
# capture as a crate of its own.
BUDGET_LINES, BUDGET_UNSAFE = 1750, 25

MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
FEATURE = re.compile(r'feature\s*=\s*"([\w-]+)"')
PATH = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')
PUB_ITEM = re.compile(r"^\s*pub\s+(?:unsafe\s+)?(?:const\s+fn|fn|struct|enum|trait|mod|use|const|static|type)\b")
UNSAFE = re.compile(r"\bunsafe\s*(?:\{|fn\b)")
# An attribute that is unsafe in edition 2024 (`#[unsafe(link_section = …)]`), also inside `cfg_attr`.
UNSAFE_ATTR = re.compile(r"\b(?:link_section|no_mangle|export_name)\b")
ITEM = re.compile(r"(?:pub(?:\([^)]*\))?\s+)?(?:static|fn|extern)\b")
# file -> the feature whose absence compiles it (the stand-ins, `#[cfg(not(feature = "X"))]`); filled by module_files.
STAND_INS = {}


def module_files(path, feature, modpath=()):
    """Yields (file, feature, module path) for `path` and the modules it declares, inheriting `feature`.

    A `mod` line's attributes (also those spread over several lines) decide: `feature = "X"` in its `cfg` puts the
    module in feature X, `not(feature = "X")` (a stand-in for a build without X) in its parent's, and `#[path]`
    names its file."""
    yield path, feature, modpath
    with open(path) as f:
        lines = f.read().splitlines()
    here = os.path.dirname(path)
    base = os.path.splitext(os.path.basename(path))[0]
    subdir = here if base in ("lib", "mod", "main") else os.path.join(here, base)
    attrs = []
    depth = 0
    for line in lines:
        stripped = line.strip()
        if depth > 0 or stripped.startswith("#["):
            if depth == 0:
                attrs.append("")
            attrs[-1] += " " + stripped
            depth += stripped.count("[") - stripped.count("]")
            continue
        m = MOD.match(line)
        if m:
            own = None
            for a in attrs:
                if a.lstrip().startswith("#[cfg") and FEATURE.search(a):
                    if not re.search(r'not\(\s*feature', a):
                        own = FEATURE.search(a).group(1)
            without = next(
                (re.search(r'not\(\s*feature\s*=\s*"([\w-]+)"', a).group(1) for a in attrs
                 if a.lstrip().startswith("#[cfg") and re.search(r'not\(\s*feature', a)),
                None,
            )
            named = next((PATH.search(a).group(1) for a in attrs if PATH.search(a)), None)
            name = m.group(1)
            if named:
                child = os.path.normpath(os.path.join(here, named))
            else:
                child = os.path.join(subdir, name + ".rs")
                if not os.path.exists(child):
                    child = os.path.join(subdir, name, "mod.rs")
            if without:
                STAND_INS[child] = without
            yield from module_files(child, own or feature, modpath + (name,))
        if stripped and not stripped.startswith("//"):
            attrs = []


def measure(path):
    """(code lines, unsafe blocks, public items) of one file, without its `#[cfg(test)]` modules."""
    code = unsafe = public = 0
    unsafe_attr = False
    skip_depth = None
    pending_test = False
    with open(path) as f:
        for line in f:
            s = line.strip()
            if skip_depth is not None:
                skip_depth += s.count("{") - s.count("}")
                if skip_depth <= 0:
                    skip_depth = None
                continue
            if s == "#[cfg(test)]":
                pending_test = True
                continue
            if pending_test and re.match(r"(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", s):
                skip_depth = s.count("{") - s.count("}")
                pending_test = False
                continue
            pending_test = False
            if not s or s.startswith("//"):
                continue
            code += 1
            unsafe += len(UNSAFE.findall(s))
            if UNSAFE_ATTR.search(s) and not s.startswith("use "):
                unsafe_attr = True
            elif unsafe_attr and ITEM.match(s):
                unsafe += 1  # the item the attributes above place
                unsafe_attr = False
            if PUB_ITEM.match(line) and "/sys/" not in path:
                public += 1
    return code, unsafe, public


def manifest_features(folder):
    """({feature: the features it enables}, the default features) from a crate's `Cargo.toml` `[features]` table;
    what a feature enables in another crate (`dep/feature`) is left out."""
    deps, inside = {}, False
    with open(os.path.join(ROOT, folder, "Cargo.toml")) as f:
        for line in f:
            if line.startswith("["):
                inside = line.strip() == "[features]"
                continue
            found = re.match(r"\s*([\w-]+)\s*=\s*\[([^\]]*)\]", line) if inside else None
            if found:
                deps[found.group(1)] = set(re.findall(r'"([\w-]+)"', found.group(2)))
    return {f: d for f, d in deps.items() if f != "default"}, deps.get("default", set())


def closure(features, deps):
    """`features` and every feature of the same crate they enable."""
    out, todo = set(), list(features)
    while todo:
        f = todo.pop()
        if f not in out:
            out.add(f)
            todo += deps.get(f, ())
    return out


def workspace_members():
    """The `members` of the root `Cargo.toml`'s `[workspace]`, and the root package itself (".")."""
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        text = f.read()
    found = re.search(r"^\[workspace\][^\[]*?^members\s*=\s*\[([^\]]*)\]", text, re.M | re.S)
    return {"."} | set(re.findall(r'"([^"]+)"', found.group(1) if found else ""))


def doc_line(path):
    """The first sentence of a file's module docs."""
    words = []
    with open(path) as f:
        for line in f:
            if not line.startswith("//!") or (words and not line[3:].strip()):
                break
            words.append(line[3:].strip())
    text = " ".join(words)
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def crate_src(folder):
    return os.path.normpath(os.path.join(ROOT, folder, "src"))


def tree_files(folder, root_file):
    """[(file, feature)] of one module tree (a library's or a binary's), sorted."""
    path = os.path.normpath(os.path.join(crate_src(folder), root_file))
    return sorted({(p, feature) for p, feature, _ in module_files(path, CORE)})


def total(paths):
    """(code lines, unsafe blocks, public items) of `paths`."""
    measured = [measure(p) for p in paths]
    return tuple(sum(m[i] for m in measured) for i in range(3))


def names(paths, base):
    return ", ".join(f"`{os.path.relpath(p, base)}`" for p in paths)


def is_binary(root_file):
    return root_file != "lib.rs"


def table():
    """(AUDITING.md's text after its introduction, {crate: (code lines, unsafe blocks)}, problems)."""
    out = [
        "| crate | part | files | code lines | `unsafe` blocks | public items |",
        "|---|---|---|---:|---:|---:|",
    ]
    sys_lines, notes, problems, totals, parts = [], [], [], {}, {}
    for crate, folder, roots in CRATES:
        src = crate_src(folder)
        deps, default = manifest_features(folder)
        trees = [(root_file, label, tree_files(folder, root_file)) for root_file, label in roots]
        every = sorted({p for _, _, files in trees for p in files})
        lines, unsafe, _ = total(p for p, _ in every)
        public = sum(total(p for p, _ in files)[2] for root_file, _, files in trees if not is_binary(root_file))
        totals[crate] = (lines, unsafe)
        # Every Rust file below src/ is in a module tree, so that the crate is counted whole.
        for here, _, found in os.walk(src):
            for name in found:
                path = os.path.join(here, name)
                if name.endswith(".rs") and path not in {p for p, _ in every}:
                    problems.append(f"{os.path.relpath(path, ROOT)} is in no module tree of {crate}: count it")
        rows = []  # (part, files, base folder of their names, binary?)
        for root_file, label, files in trees:
            features = sorted({f for _, f in files}, key=lambda f: (f != CORE, f))
            base = os.path.dirname(os.path.normpath(os.path.join(src, root_file)))
            if features == [CORE] or not deps:
                rows.append((label if len(trees) > 1 else None, [p for p, _ in files], base, is_binary(root_file)))
                continue
            for feature in features:
                if feature == CORE:
                    part = "core (`default-features = false`)"
                else:
                    part = f"`{feature}`" + (" (default)" if feature in closure(default, deps) else "")
                rows.append((part, [p for p, f in files if f == feature], base, is_binary(root_file)))
        for feature in sorted(deps):
            if not any(f == feature for _, f in every):
                notes.append(
                    f"`{crate}`'s feature `{feature}` has no file of its own (only items inside the files counted)."
                )
        whole = "whole crate" + (", every feature" if deps else "")
        if len(rows) == 1 and rows[0][0] is None:
            out.append(f"| `{crate}` | **{whole}** | {names(rows[0][1], rows[0][2])} | {lines} | {unsafe} | {public} |")
        else:
            out.append(f"| `{crate}` | **{whole}** | {len(every)} files | {lines} | {unsafe} | {public} |")
            for part, paths, base, binary in rows:
                p_lines, p_unsafe, p_public = total(paths)
                shown = "–" if binary else p_public
                where = f"`{os.path.relpath(base, ROOT)}/`: " if binary else ""
                out.append(f"| | {part} | {where}{names(paths, base)} | {p_lines} | {p_unsafe} | {shown} |")
                parts[(crate, part)] = (p_lines, p_unsafe)
        for path, feature in every:
            rel = os.path.relpath(path, ROOT)
            u = measure(path)[1]
            in_sys = "sys" in os.path.relpath(path, src).split(os.sep)[:-1]
            if u and not in_sys:
                problems.append(f"{rel} has {u} unsafe blocks outside its crate's sys/")
            if u and in_sys:
                described = doc_line(path)
                if not described:
                    problems.append(f"{rel} has unsafe and no module docs (`//!`) saying what it is for")
                tag = f"`{crate}`" + ("" if feature == CORE or not deps else f", `{feature}`")
                sys_lines.append(f"- `{rel}` ({tag}, {u}): {described}")
    notes.append(
        "Public items count the hidden `__private` modules too (the interface between the crates, pinned by an exact "
        "version); a binary has none."
    )
    out += [""] + notes + [""]
    out.append("What the `unsafe` of each file in a crate's `sys/` is for:")
    out.append("")
    out += sys_lines
    b_lines, b_unsafe = totals[BUDGETED]
    core = parts.get((BUDGETED, "core (`default-features = false`)"), (b_lines, b_unsafe))
    job, cli, jobset = totals["grouptimeout-job"], totals["grouptimeout-cli"], totals["grouptimeout-set"]
    adapter = totals["grouptimeout-tokio"]
    host = parts.get(("grouptimeout-cli", "library (`host`)"), (0, 0))
    job_lib = parts.get(("grouptimeout-job", "library"), (0, 0))
    program = parts.get(("grouptimeout-job", "the keeper program"), (0, 0))
    tool = parts.get(("grouptimeout-cli", "the tool"), (0, 0))
    prose = (
        "Each crate is counted whole, every feature on: what a reviewer who certifies a crate version reads, whatever "
        f"features a dependent turns on. `{BUDGETED}`'s budget: **at most {BUDGET_LINES:,} code lines and "
        f"{BUDGET_UNSAFE} `unsafe` blocks in all of its `src/`**; it has {b_lines:,} and {b_unsafe} (a core-only "
        f"build, `default-features = false`, compiles {core[0]:,} and {core[1]}). `grouptimeout-job` has "
        f"{job[0]:,} code lines and {job[1]} `unsafe` blocks (its library {job_lib[0]:,} and {job_lib[1]}, the keeper "
        f"program {program[0]:,} and {program[1]}); `grouptimeout-cli` {cli[0]:,} and {cli[1]} (its "
        f"library `host` {host[0]:,} and {host[1]}, the tool {tool[0]:,} and {tool[1]}); `grouptimeout-set` "
        f"{jobset[0]:,} and {jobset[1]}; `grouptimeout-tokio` {adapter[0]:,} and {adapter[1]}. A dependent of "
        f"`{BUDGETED}` alone compiles none of the others (CI checks it)."
    )
    return prose + "\n\n" + "\n".join(out) + "\n", totals, problems


def code_only(text):
    """`text` without its comments, string literals and char literals (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            end = n if end < 0 else end + 1 + len(hashes)
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append("\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x..|.)|[^\\'\n])'", text[i:]):
            i += re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x..|.)|[^\\'\n])'", text[i:]).end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


DEFINES = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?:const\s+fn|fn|struct|enum|trait|const|static|type|union)\s+(\w+)",
    re.M,
)
PATH_TOKEN = re.compile(r"\s*(::|\{|\}|,|\*|\bas\b|\w+)")


def use_tree(text, i):
    """Parses the path (tree) that starts at `text[i]` (`crate::a::{b, c::D}`, `super::x`): ([segments, …], end)."""
    paths, prefix, expect_name = [], [], True
    while True:
        m = PATH_TOKEN.match(text, i)
        if not m:
            break
        tok = m.group(1)
        if expect_name and tok == "{":
            inner, i = [], m.end()
            while True:
                sub, i = use_tree(text, i)
                inner += sub
                m2 = PATH_TOKEN.match(text, i)
                if not m2 or m2.group(1) == "}":
                    i = m2.end() if m2 else i
                    break
                i = m2.end()  # ","
            return [prefix + p for p in inner] or [prefix], i
        if expect_name and (tok == "*" or re.fullmatch(r"\w+", tok)) and tok != "as":
            prefix.append(tok)
            i, expect_name = m.end(), False
            continue
        if not expect_name and tok == "::":
            i, expect_name = m.end(), True
            continue
        break
    paths.append(prefix)
    return paths, i


def import_edges(lib):
    """{(file, file): first "file:line" that makes the edge}, in the module tree whose root file is `lib` (file names
    relative to its folder): a file imports the file that defines what it names through `crate::` or `super::`
    (re-exports such as `lib.rs`'s `pub use child::GroupChild` and `sys`'s globs are followed to the definition)."""
    base = os.path.dirname(lib)
    module = {}  # module path -> file
    for path, _, modpath in module_files(lib, CORE):
        module.setdefault(modpath, path)
    code = {}
    for path in set(module.values()):
        with open(path) as f:
            code[path] = code_only(f.read())
    uses = {}  # file -> [segments of each `use`, last one the name it binds (or "*")]
    for path, text in code.items():
        uses[path] = []
        for m in re.finditer(r"\buse\s+", text):
            tree, _ = use_tree(text, m.end())
            uses[path] += [t for t in tree if t]

    def resolve(modpath, segments, seen=()):
        """The files that define what `segments` (relative to module `modpath`) names."""
        if not segments or (modpath, tuple(segments)) in seen:
            return set()
        seen = seen + ((modpath, tuple(segments)),)
        head, rest = segments[0], segments[1:]
        if head == "crate":
            return resolve((), rest, seen)
        if head == "super":
            return resolve(modpath[:-1], rest, seen)
        if head == "self":
            return resolve(modpath, rest, seen)
        here = module.get(modpath)
        if here is None:
            return set()
        if modpath + (head,) in module:
            return resolve(modpath + (head,), rest, seen) if rest else {module[modpath + (head,)]}
        if head in DEFINES.findall(code[here]):
            return {here}
        found = set()
        for u in uses[here]:
            if u[-1] == head or u[-1] == "*":
                target = u[:-1] + [head] + rest if u[-1] == "*" else u + rest
                if target[0] in ("crate", "super", "self") or modpath + (target[0],) in module:
                    found |= resolve(modpath, target, seen)
        return found

    owner = {path: modpath for modpath, path in sorted(module.items(), key=lambda kv: len(kv[0]))}
    edges = {}
    for path, text in code.items():
        modpath = owner[path]
        for m in re.finditer(r"\b(?<!::)(crate|super)::", text):
            lineno = text.count("\n", 0, m.start()) + 1
            tree, _ = use_tree(text, m.start())
            for segments in tree:
                for target in resolve(modpath, [s for s in segments if s != "*"] or segments):
                    if target != path:
                        edge = (os.path.relpath(path, base), os.path.relpath(target, base))
                        edges.setdefault(edge, f"{os.path.relpath(path, ROOT)}:{lineno}")
    return edges


def room(path):
    """The room of a file (relative to its crate's root file's folder): its module's first segment below the crate root (`child/life.rs` and
    `child.rs` are both `child/`, `spawn.rs` is `spawn/`)."""
    first = path.split(os.sep)[0]
    return (first[:-3] if first.endswith(".rs") else first) + "/"


def room_edges(edges):
    """{(room, room): first "file:line" that makes the edge}, from the file edges of `import_edges`."""
    rooms = {}
    for (a, b), where in sorted(edges.items(), key=lambda kv: kv[1]):
        if room(a) != room(b):
            rooms.setdefault((room(a), room(b)), where)
    return rooms


def import_circles(edges):
    """One circle of imports per group of rooms that all reach each other: [([room, …, first room again], group)]."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(set(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    circles = []
    for group in groups:
        start = min(group)
        # The shortest way back to `start` inside the group (breadth first).
        paths = {start: [start]}
        queue = [start]
        while queue:
            v = queue.pop(0)
            for w in sorted(graph[v] & group):
                if w == start:
                    circles.append((paths[v] + [start], sorted(group)))
                    queue = []
                    break
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    queue.append(w)
    return circles


def main():
    text, totals, problems = table()
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("", "--write", "--check"):
        sys.exit(__doc__)
    if not mode:
        sys.stdout.write(text)
    new = INTRO + text
    if mode == "--write":
        with open(AUDITING, "w") as f:
            f.write(new)
    if mode == "--check":
        try:
            with open(AUDITING) as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        if old != new:
            problems.insert(0, "AUDITING.md is missing or out of date: run .ci/audit.py --write\n\n" + text)
    known = {folder for _, folder, _ in CRATES}
    for member in sorted(workspace_members() - known):
        problems.append(f"the workspace member {member} is not one of the auditor's crates (CRATES): add it")
    for crate, folder, roots in CRATES:
        for root_file, _ in roots:
            files = import_edges(os.path.normpath(os.path.join(crate_src(folder), root_file)))
            tree = os.path.relpath(os.path.join(crate_src(folder), root_file), ROOT)
            for what, edges in (("files", files), ("rooms", room_edges(files))):
                for circle, group in import_circles(edges):
                    steps = ", ".join(f"{a} -> {b} ({edges[(a, b)]})" for a, b in zip(circle, circle[1:]))
                    problems.append(
                        f"a circle of imports between {what} of {crate} ({tree}): {' -> '.join(circle)}: {steps}; "
                        f"{what} that reach each other: {', '.join(group)}"
                    )
    lines, unsafe = totals[BUDGETED]
    if lines > BUDGET_LINES:
        problems.append(f"{BUDGETED} has {lines} code lines in all of its src/, over its budget of {BUDGET_LINES}")
    if unsafe > BUDGET_UNSAFE:
        problems.append(f"{BUDGETED} has {unsafe} unsafe blocks in all of its src/, over its budget of {BUDGET_UNSAFE}")
    if problems and mode == "--check":
        sys.exit("\n".join(problems))
    for p in problems:
        print("audit:", p, file=sys.stderr)


if __name__ == "__main__":
    main()
