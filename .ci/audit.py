#!/usr/bin/env python3
"""The auditor's map: per cargo feature, the library's files, code lines, `unsafe` blocks and public items.

A file belongs to the feature named by the `#[cfg(...feature = "NAME"...)]` on its `mod` line (or on its parent
module's), else to the core (what `default-features = false` builds). Code lines are the lines that are not blank
and not comments (`//`, `///`, `//!`), outside `#[cfg(test)]` modules. An `unsafe` block is a `unsafe {`, an
`unsafe fn`, or a `static` placed by an unsafe attribute (`link_section`, `no_mangle`, `export_name`: edition 2024
spells them `#[unsafe(...)]`), counted once per item (all of them are in `src/sys/`). A stand-in module (its `mod`
line has `not(feature = "X")`) belongs to the core but is not compiled where X is on: the rows of the default and of
all features leave it out. The prose above the table (the budget, and what the features would add to the core) is
written from the same numbers. Public items are the `pub` items (functions, methods, types, traits,
constants, modules, re-exports, fields excluded) outside `src/sys/`, which is private. Each file of `src/sys/` is
described by the first line of its module docs (`//!`), which says what its `unsafe` is for.

  .ci/audit.py            print the table
  .ci/audit.py --write    write it into README.md between the audit markers
  .ci/audit.py --check    fail if README.md's table differs, the core is over its budget, or the library's rooms
                          import each other in a circle (CI runs this)

The circles are looked for twice: between files, and between rooms. A file imports another when its code (not a
comment, not a string) names, through `crate::…` or `super::…` (also inside `use crate::{…}`), an item that the other
defines; re-exports are followed to the definition (`crate::GroupChild` is `child.rs`'s, `crate::sys::poll` is
`sys/fd.rs`'s). A room is a module of the crate's root with everything below it: its file and its folder
(`child.rs` and `child/`, `contain/`, `spawn.rs` and `spawn/`); a room imports another when one of its files imports
one of the other's.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")
README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- audit:begin (made by .ci/audit.py --write) -->", "<!-- audit:end -->"
CORE = "core"
# The promise of issue 18: what a core-only build compiles, an auditor can read in an hour.
BUDGET_LINES, BUDGET_UNSAFE = 1000, 25

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
                child = os.path.join(here, named)
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


def feature_deps():
    """{feature: the features it enables} from Cargo.toml's `[features]` table."""
    deps, inside = {}, False
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        for line in f:
            if line.startswith("["):
                inside = line.strip() == "[features]"
                continue
            found = re.match(r"\s*([\w-]+)\s*=\s*\[([^\]]*)\]", line) if inside else None
            if found:
                deps[found.group(1)] = set(re.findall(r'"([\w-]+)"', found.group(2)))
    return deps


def closure(features):
    """`features` and every feature they enable."""
    deps, out, todo = feature_deps(), set(), list(features)
    while todo:
        f = todo.pop()
        if f not in out:
            out.add(f)
            todo += deps.get(f, ())
    return out


def default_features():
    """The features of Cargo.toml's `default = [...]` line."""
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        for line in f:
            found = re.match(r"\s*default\s*=\s*\[([^\]]*)\]", line)
            if found:
                return set(re.findall(r'"([\w-]+)"', found.group(1)))
    return set()


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


def table():
    rows = {}
    files = sorted({(path, feature) for path, feature, _ in module_files(os.path.join(SRC, "lib.rs"), CORE)})
    for path, feature in files:
        rows.setdefault(feature, []).append((os.path.relpath(path, ROOT), *measure(path)))
    out = ["| feature | files | code lines | `unsafe` blocks | public items |", "|---|---|---:|---:|---:|"]
    totals = {}
    for feature in sorted(rows, key=lambda f: (f != CORE, f)):
        entries = rows[feature]
        lines, unsafe, public = (sum(e[i] for e in entries) for i in (1, 2, 3))
        totals[feature] = (lines, unsafe)
        names = ", ".join(f"`{e[0][4:]}`" for e in entries)
        label = "core (`default-features = false`)" if feature == CORE else f"`{feature}`"
        out.append(f"| {label} | {names} | {lines} | {unsafe} | {public} |")
    def build(features):
        """(code lines, unsafe blocks) of what a build with `features` (and those they enable) compiles."""
        on = closure(features)
        compiled = [
            measure(path)
            for path, feature in files
            if (feature == CORE or feature in on) and STAND_INS.get(path) not in on
        ]
        return sum(m[0] for m in compiled), sum(m[1] for m in compiled)

    default = closure(default_features())
    names = ", ".join(f"`{f}`" for f in sorted(default))
    out.append("| default features (core, {}) | | {} | {} | |".format(names, *build(default)))
    out.append("| all features | | {} | {} | |".format(*build(rows)))
    out.append("")
    out.append("What the `unsafe` of each file in `src/sys/` is for:")
    out.append("")
    for path, feature in files:
        if "/sys/" in path and measure(path)[1]:
            rel = os.path.relpath(path, ROOT)
            tag = "core" if feature == CORE else f"`{feature}`"
            out.append(f"- `{rel[4:]}` ({tag}, {measure(path)[1]}): {doc_line(path)}")
    core_lines, core_unsafe = totals.get(CORE, (0, 0))
    with_capture, with_guard, with_contain = build({"capture"}), build({"guard"}), build({"contain"})
    guard_child = measure(os.path.join(SRC, "sys", "guard.rs"))[1]
    prose = (
        f"The core's budget: **at most {BUDGET_LINES:,} code lines and {BUDGET_UNSAFE} `unsafe` blocks**; it has "
        f"{core_lines:,} and {core_unsafe}. `capture` and `guard` are features, not core, because the budget does not "
        f"hold them: a core-only build with `capture` would be {with_capture[0]:,} code lines, with `guard` "
        f"{with_guard[0]:,} lines and {with_guard[1]} `unsafe` blocks (the forked guard's async-signal-safe child, "
        f"`sys/guard.rs`, alone has {guard_child}); with `contain` it is {with_contain[0]:,} code lines. The pipe "
        "helpers that `capture` and `guard` share (`cloexec_pipe`, `set_nonblocking`) sit in the core's `sys/fd.rs` "
        "and count there, although a core-only build does not compile them. A stand-in (`guard/none.rs`, "
        "`contain/none.rs`) counts in the core's row, and not in the rows of the builds that have its feature."
    )
    return prose + "\n\n" + "\n".join(out) + "\n", (core_lines, core_unsafe)


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


def import_edges():
    """{(file, file): first "file:line" that makes the edge}: a file imports the file that defines what it names
    through `crate::` or `super::` (re-exports such as `lib.rs`'s `pub use child::GroupChild` and `sys`'s globs are
    followed to the definition)."""
    lib = os.path.join(SRC, "lib.rs")
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
                        edge = (os.path.relpath(path, SRC), os.path.relpath(target, SRC))
                        edges.setdefault(edge, f"{os.path.relpath(path, ROOT)}:{lineno}")
    return edges


def room(path):
    """The room of a file (relative to `src/`): its module's first segment below the crate root (`child/life.rs` and
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
    text, (core_lines, core_unsafe) = table()
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("", "--write", "--check"):
        sys.exit(__doc__)
    if not mode:
        sys.stdout.write(text)
    with open(README) as f:
        readme = f.read()
    if mode:
        if BEGIN not in readme or END not in readme:
            sys.exit(f"README.md has no audit markers ({BEGIN} … {END})")
        head, rest = readme.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        new = f"{head}{BEGIN}\n{text}{END}{tail}"
        if mode == "--write":
            with open(README, "w") as f:
                f.write(new)
    problems = []
    if mode == "--check" and new != readme:
        problems.append("README.md's auditing table is out of date: run .ci/audit.py --write\n\n" + text)
    files = import_edges()
    for what, edges in (("files", files), ("rooms", room_edges(files))):
        for circle, group in import_circles(edges):
            steps = ", ".join(f"{a} -> {b} ({edges[(a, b)]})" for a, b in zip(circle, circle[1:]))
            problems.append(
                f"a circle of imports between {what}: {' -> '.join(circle)}: {steps}; {what} that reach each other: "
                f"{', '.join(group)}"
            )
    if core_lines > BUDGET_LINES:
        problems.append(f"the core has {core_lines} code lines, over its budget of {BUDGET_LINES}")
    if core_unsafe > BUDGET_UNSAFE:
        problems.append(f"the core has {core_unsafe} unsafe blocks, over its budget of {BUDGET_UNSAFE}")
    if problems and mode == "--check":
        sys.exit("\n".join(problems))
    for p in problems:
        print("audit:", p, file=sys.stderr)


if __name__ == "__main__":
    main()
