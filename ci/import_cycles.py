#!/usr/bin/env python3
"""Fails when files of a crate import each other in a loop.

usage: ci/import_cycles.py CRATE_SRC_DIR...

A file depends on another when it names a path (`crate::a::b`, `super::c`,
`self::d`, in a `use` tree or inline) that resolves to the other file's
module: the longest prefix of the path that is a module with a file. Test
code is left out: files named `tests.rs` or under `tests/` or `testing/`,
and everything from a file's `#[cfg(test)]` module on. Prints each loop
found (files in a strongly connected component) and exits 1; prints nothing
and exits 0 when there is none.
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
INLINE = re.compile(rf"\b(crate|super|self)((?:::{IDENT})+)")
USE = re.compile(r"\buse\s+([^;]*);", re.S)
TEST_MODULE = re.compile(r"^\s*#\[cfg\((?:all\()?test\b[^\n]*\n\s*(?:pub(?:\([^)]*\))?\s+)?mod\s", re.M)


def module_files(src):
    """Module path (a tuple) -> file, for every .rs file under src."""
    files = {}
    for folder, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            files[tuple(parts)] = path
    return files


def is_test_file(path):
    parts = path.split(os.sep)
    return parts[-1] == "tests.rs" or parts[-1].endswith("_tests.rs") or "tests" in parts[:-1] or "testing" in parts


def code_of(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = TEST_MODULE.search(text)
    if found:
        text = text[: found.start()]
    # Line comments (docs included) name paths without importing them.
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"] (aliases and globs dropped)."""
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree.rstrip(":*")]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rindex("}")]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    items.append(inner[start:])
    return [p for item in items if item for p in expand_use(prefix + item)]


def paths_in(code):
    # A module file's relative `use` of its own children (`use slot::SlotTask;`
    # in runtime/mod.rs, re-exports) is the module's face, not an import
    # between files: only `crate`, `super` and `self` paths count.
    paths = []
    for m in USE.finditer(code):
        paths += [p for p in expand_use(m.group(1)) if re.match(r"(crate|super|self)\b", p)]
    code_without_uses = USE.sub("", code)
    paths += [m.group(1) + m.group(2) for m in INLINE.finditer(code_without_uses)]
    return paths


def resolve(module, path, files):
    """The module file a path names, seen from `module` (a tuple), or None."""
    parts = path.split("::")
    base = list(module)
    if parts[0] == "crate":
        base, parts = [], parts[1:]
    while parts and parts[0] in ("super", "self"):
        if parts[0] == "super":
            base = base[:-1]
        parts = parts[1:]
    full = base + parts
    for n in range(len(full), 0, -1):
        if tuple(full[:n]) in files:
            return tuple(full[:n])
    return None


def cycles(src):
    files = module_files(src)
    graph = {}
    for module, path in files.items():
        if is_test_file(path):
            continue
        # `super` in a module file (mod.rs, lib.rs) is its own parent's view.
        here = module
        deps = set()
        for p in paths_in(code_of(path)):
            target = resolve(here, p, files)
            if target is not None and target != module and not is_test_file(files[target]):
                deps.add(target)
        graph[module] = deps
    return [sorted(files[m] for m in scc) for scc in strongly_connected(graph) if len(scc) > 1]


def strongly_connected(graph):
    """Tarjan's algorithm, iterative."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    scc.append(member)
                    if member == node:
                        break
                out.append(scc)
    return out


def main(dirs):
    if not dirs:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    found = [c for d in dirs for c in cycles(d)]
    for c in found:
        print("import cycle: " + " <-> ".join(c))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
