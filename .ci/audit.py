#!/usr/bin/env python3
"""The auditor's map: per cargo feature, the library's files, code lines, `unsafe` blocks and public items.

A file belongs to the feature named by the `#[cfg(...feature = "NAME"...)]` on its `mod` line (or on its parent
module's), else to the core (what `default-features = false` builds). Code lines are the lines that are not blank
and not comments (`//`, `///`, `//!`), outside `#[cfg(test)]` modules. An `unsafe` block is a `unsafe {` or an
`unsafe fn` (all of them are in `src/sys/`). Public items are the `pub` items (functions, methods, types, traits,
constants, modules, re-exports, fields excluded) outside `src/sys/`, which is private. Each file of `src/sys/` is
described by the first line of its module docs (`//!`), which says what its `unsafe` is for.

  .ci/audit.py            print the table
  .ci/audit.py --write    write it into README.md between the audit markers
  .ci/audit.py --check    fail if README.md's table differs, or the core is over its budget (CI runs this)
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


def module_files(path, feature):
    """Yields (file, feature) for `path` and the modules it declares, inheriting `feature`.

    A `mod` line's attributes (also those spread over several lines) decide: `feature = "X"` in its `cfg` puts the
    module in feature X, `not(feature = "X")` (a stand-in for a build without X) in its parent's, and `#[path]`
    names its file."""
    yield path, feature
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
            named = next((PATH.search(a).group(1) for a in attrs if PATH.search(a)), None)
            name = m.group(1)
            if named:
                child = os.path.join(here, named)
            else:
                child = os.path.join(subdir, name + ".rs")
                if not os.path.exists(child):
                    child = os.path.join(subdir, name, "mod.rs")
            yield from module_files(child, own or feature)
        if stripped and not stripped.startswith("//"):
            attrs = []


def measure(path):
    """(code lines, unsafe blocks, public items) of one file, without its `#[cfg(test)]` modules."""
    code = unsafe = public = 0
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
            if PUB_ITEM.match(line) and "/sys/" not in path:
                public += 1
    return code, unsafe, public


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
    files = sorted(set(module_files(os.path.join(SRC, "lib.rs"), CORE)))
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
    all_lines = sum(t[0] for t in totals.values())
    all_unsafe = sum(t[1] for t in totals.values())
    out.append(f"| all (default features) | | {all_lines} | {all_unsafe} | |")
    out.append("")
    out.append("What the `unsafe` of each file in `src/sys/` is for:")
    out.append("")
    for path, feature in files:
        if "/sys/" in path and measure(path)[1]:
            rel = os.path.relpath(path, ROOT)
            tag = "core" if feature == CORE else f"`{feature}`"
            out.append(f"- `{rel[4:]}` ({tag}, {measure(path)[1]}): {doc_line(path)}")
    return "\n".join(out) + "\n", totals.get(CORE, (0, 0))


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
        elif new != readme:
            sys.exit("README.md's auditing table is out of date: run .ci/audit.py --write\n\n" + text)
    problems = []
    if core_lines > BUDGET_LINES:
        problems.append(f"the core has {core_lines} code lines, over its budget of {BUDGET_LINES}")
    if core_unsafe > BUDGET_UNSAFE:
        problems.append(f"the core has {core_unsafe} unsafe blocks, over its budget of {BUDGET_UNSAFE}")
    if problems and mode == "--check":
        sys.exit("; ".join(problems))
    for p in problems:
        print("audit:", p, file=sys.stderr)


if __name__ == "__main__":
    main()
