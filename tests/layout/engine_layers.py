#!/usr/bin/env python3
"""The engine's folders include one another without loops (engine/method never reaches back into
engine/train, ...), and the method names appear only in their own folders, their registration and the
option groups that say when a key applies. Needs no build: reads the sources.

Run: engine_layers.py SOURCE_DIR (the ctest engine_layers)."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
engine = root / "engine"
include = re.compile(r'^\s*#\s*include\s*"engine/([^"]+)"')
ROOT = "(engine root)"  # the files directly in engine/ form a layer of their own


def layer_of(relative):
    """The layer of a path below engine/: its first folder, or the engine root for a file placed there."""
    parts = pathlib.PurePosixPath(relative).parts
    return parts[0] if len(parts) > 1 else ROOT


edges = {}  # folder -> {folder: first file that includes it}
for source in sorted(engine.rglob("*")):
    if source.suffix not in (".h", ".cpp"):
        continue
    folder = layer_of(source.relative_to(engine).as_posix())
    for line in source.read_text(errors="replace").splitlines():
        m = include.match(line)
        if m and layer_of(m.group(1)) != folder:
            edges.setdefault(folder, {}).setdefault(layer_of(m.group(1)), str(source.relative_to(root)))

problems = []
# Depth-first search for a cycle, reported with the file behind each step.
state = {}
def visit(folder, path):
    state[folder] = "open"
    for target in sorted(edges.get(folder, {})):
        if state.get(target) == "open":
            loop = path[path.index(target):] + [target]
            steps = [f"{a} -> {b} ({edges[a][b]})" for a, b in zip(loop, loop[1:])]
            problems.append("include loop: " + "; ".join(steps))
        elif target not in state:
            visit(target, path + [target])
    state[folder] = "done"
for folder in sorted(edges):
    if folder not in state:
        visit(folder, [folder])

# No generic layer names a method: it asks the method's registration (engine/config/component_info.h).
method_name = re.compile(r'"(dexml|ngame|unidec|depsl|irene|xrlinear)"')
for layer in ("engine/train", "engine/rank", "engine/session", "engine/cli", "widgets", "app"):
    for source in sorted((root / layer).rglob("*")):
        if source.suffix not in (".h", ".cpp"):
            continue
        for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
            if method_name.search(line):
                problems.append(f"{source.relative_to(root)}:{number}: names a method: {line.strip()}")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"engine layers: {len(edges)} folders, no include loops; no method named in the generic layers")
