#!/usr/bin/env python3
"""Checks that every #include points down the layers (DESIGN.md, "Layers, bottom up").

  scripts/check_layers.py [ROOT]          # ROOT: the repository (default: this script's)
  scripts/check_layers.py --graph [ROOT]  # also print the includes between folders, counted

A source file (.h .hpp .cpp .cc .cu .cuh) belongs to the layer of its top-level folder.
An include resolves as the compiler finds it (the file's own folder, then ROOT and
ROOT/include, Strata's include paths); one that names a file of a higher layer is an
error, reported with its file, line and the two folders. Includes of files outside
the repository (the standard library, Eigen, TBB, ...) are not checked. A folder
holding sources but missing from LAYERS is an error too: place it in the order first.
Exit status 0 when every include points down or sideways, 1 otherwise.
"""

import os
import re
import subprocess
import sys
from collections import Counter

# Bottom up. A folder may include its own layer and the layers below it; the
# folders of one entry are peers and may include each other.
LAYERS = [
    ("tensor",),       # dtypes, storage, TensorImpl, Tensor
    ("kernels",),      # CPU and CUDA kernels: tensor/ only
    ("dispatcher",),   # keys, schemas, operator tables: tensor/ only
    ("transforms",),   # layer stack, wrappers, interpreters, the rule APIs ops/ registers into
    ("ops",),          # one place per operator
    ("func",),         # grad, vjp, jvp, vmap, jacobians, gradcheck: they call ops/
    ("distributed",),  # collectives, DP-SGD helpers
    ("include",),      # the public header, strata/strata.h
    ("tests", "bench", "examples"),
]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
ORDER = " < ".join(", ".join(folders) for folders in LAYERS)
SOURCE = re.compile(r"\.(h|hpp|cpp|cc|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def source_files(root):
    """Paths relative to root: git's tracked and unignored files, else a walk of root."""
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if os.path.realpath(top) == os.path.realpath(root):
            listed = subprocess.run(
                ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                capture_output=True, text=True, check=True).stdout.split("\0")
            return sorted(p for p in listed
                          if SOURCE.search(p) and os.path.isfile(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for folder, dirs, files in os.walk(root):
        # Hidden folders and CMake build trees are not sources.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not os.path.exists(os.path.join(folder, d, "CMakeCache.txt")))
        found += [os.path.relpath(os.path.join(folder, f), root) for f in files if SOURCE.search(f)]
    return sorted(found)


def folder_of(path):
    parts = path.replace(os.sep, "/").split("/")
    return parts[0] if len(parts) > 1 else None


def resolve(root, including, quoted, name):
    """The repository path the include names, or None if it is outside the repository."""
    bases = [os.path.dirname(including)] if quoted else []
    for base in bases + ["", "include"]:
        path = os.path.normpath(os.path.join(base, name))
        if not path.startswith("..") and os.path.isfile(os.path.join(root, path)):
            return path
    # Not found: still an arrow if it names a layer's folder ("ops/gone.h").
    return name if folder_of(name) in RANK else None


def check(root):
    errors, edges, checked = [], Counter(), 0
    files = source_files(root)
    for path in files:
        folder = folder_of(path)
        if folder is None:
            continue
        if folder not in RANK:
            errors.append(f"{path}: folder {folder}/ is not in the layer order; "
                          "add it to LAYERS in scripts/check_layers.py")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for line_number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, path, m.group(1) == '"', m.group(2))
                if target is None:
                    continue
                to = folder_of(target)
                checked += 1
                if to == folder or to is None:
                    continue
                edges[(folder, to)] += 1
                if to not in RANK:
                    errors.append(f"{path}:{line_number}: {folder}/ includes {m.group(2)}, "
                                  f"whose folder {to}/ is not in the layer order")
                elif RANK[to] > RANK[folder]:
                    errors.append(f"{path}:{line_number}: {folder}/ includes {m.group(2)}, "
                                  f"but {to}/ is a higher layer than {folder}/")
    return files, checked, edges, errors


def main(argv):
    graph = "--graph" in argv
    args = [a for a in argv if a != "--graph"]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    files, checked, edges, errors = check(root)
    if graph:
        for (a, b), n in sorted(edges.items(), key=lambda e: (RANK.get(e[0][0], -1), e[0])):
            print(f"  {a}/ -> {b}/: {n}")
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} error(s); includes may only point down the layers "
              f"({ORDER})")
        return 1
    print(f"check_layers: {len(files)} files, {checked} includes of repository files, "
          f"{sum(edges.values())} across folders, all pointing down ({ORDER})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
