#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The layers of pagetier.ko run one way: each file uses only the files below it.

    compat.h       the kernels' API differences        uses nothing of ours
    tier_map.c     the map: slots, blocks, segments,   (and events.c, scan.c: services
                   cgroup table, GC bookkeeping         that use nothing of ours)
    tier_gate.c    admission of background I/O
    tier_prefetch.c, tier_wbuf.c, tier_gc.c            staging and prefetch, write buffer,
                                                       collector: never each other
    tier.c         the block device, sysfs, the tier ioctls
    core.c         the module and the control device

A lower layer tells an upper one things only through the ops its caller registered
(struct pt_map_ops, struct pt_io_ops in tier.h), never by naming its functions. This
script finds, in each .c file, every pt_* function defined in another file that it
names (calls, or takes the address of) and fails if that file is not below it; and
fails if compat.h names a function defined in any of the module's .c files.

    tests/kmod/check_layers.py [--root DIR] [--graph]

--graph prints the references between files. Exit status 0, or 1 with one line per
violation.
"""
import argparse
import os
import re
import sys

RANK = {
    "events.c": 1, "scan.c": 1, "tier_map.c": 1,
    "tier_gate.c": 2,
    "tier_prefetch.c": 3, "tier_wbuf.c": 3, "tier_gc.c": 3,
    "tier.c": 4,
    "core.c": 5,
}
DEF_RE = re.compile(r"^[a-z][^\n;=]*?\b(pt_\w+)\(", re.M)
NAME_RE = re.compile(r"\b(pt_\w+)\b")


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--graph", action="store_true")
    args = ap.parse_args()
    kmod = os.path.join(args.root, "kmod")

    sources = sorted(f for f in os.listdir(kmod) if f.endswith(".c"))
    errors = [f"kmod/{f}: not in a layer (add it to RANK)" for f in sources
              if f not in RANK]
    text = {f: strip(open(os.path.join(kmod, f)).read()) for f in sources}
    defined = {}
    for f, t in text.items():
        for m in DEF_RE.finditer(t):
            defined.setdefault(m.group(1), f)

    refs = {}
    for f, t in text.items():
        for name in NAME_RE.findall(t):
            g = defined.get(name)
            if g and g != f:
                refs.setdefault((f, g), set()).add(name)
    for (f, g), names in sorted(refs.items()):
        if f in RANK and g in RANK and RANK[g] >= RANK[f]:
            errors.append(f"kmod/{f} uses {', '.join(sorted(names))} of kmod/{g}, "
                          f"which is not below it")

    compat = strip(open(os.path.join(kmod, "compat.h")).read())
    for name in sorted(set(NAME_RE.findall(compat)) & set(defined)):
        errors.append(f"kmod/compat.h names {name} of kmod/{defined[name]}")

    if args.graph:
        for (f, g), names in sorted(refs.items(), key=lambda e: (-RANK.get(e[0][0], 0), e[0])):
            print(f"{f} -> {g}: {' '.join(sorted(names))}")
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violations")
        return 1
    print(f"check_layers: {len(sources)} files, {len(refs)} file-to-file uses, all downward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
