#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The columns of /sys/block/pagetierN/*_stat against kmod/README.md.

Each *_stat file prints the table pt_<file>_cols[] of kmod/tier.c, one PT_COL*("name",
width, ...) line per column, in order. This checks, on the host, that kmod/README.md
documents each of those files with a table whose rows are the same names in the same
order, numbered from 1, and that every table is used by a PT_STAT_ATTR() and every
documented *_stat file has a table.

    tests/kmod/check_stat_columns.py [--root DIR]

Exit status 0 when they agree; 1 with one line per difference otherwise.
"""
import argparse
import os
import re
import sys

TABLE_RE = re.compile(
    r"static const struct pt_stat_col pt_(\w+)_cols\[\]\s*=\s*\{(.*?)\n\};", re.S)
COL_RE = re.compile(r'PT_COL\w*\(\s*"(\w+)"')
ATTR_RE = re.compile(r"PT_STAT_ATTR\((\w+)\);")
# A README section: a line that starts with `name_stat` and ends with a colon, then a
# table whose rows are | n | `column` | meaning |.
HEAD_RE = re.compile(r"^`(\w+_stat)`[^`\n]*:\s*$")
ROW_RE = re.compile(r"^\|\s*(\d+)\s*\|\s*`(\w+)`\s*\|")


def source_tables(text):
    tables = {}
    for m in TABLE_RE.finditer(text):
        tables[m.group(1)] = COL_RE.findall(m.group(2))
    return tables, ATTR_RE.findall(text)


def readme_tables(text):
    tables, current, rows = {}, None, None
    for line in text.splitlines():
        m = HEAD_RE.match(line)
        if m:
            current, rows = m.group(1), []
            tables[current] = rows
            continue
        if current is None:
            continue
        r = ROW_RE.match(line)
        if r:
            rows.append((int(r.group(1)), r.group(2)))
        elif rows and not line.startswith("|"):
            current = None   # the table ended
    return tables


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = ap.parse_args()
    src = open(os.path.join(args.root, "kmod", "tier.c")).read()
    doc = open(os.path.join(args.root, "kmod", "README.md")).read()

    tables, attrs = source_tables(src)
    documented = readme_tables(doc)
    errors = []
    if not tables:
        errors.append("kmod/tier.c: no pt_<file>_cols[] table found")
    for f in sorted(set(tables) - set(attrs)):
        errors.append(f"kmod/tier.c: pt_{f}_cols[] has no PT_STAT_ATTR({f})")
    for f in sorted(set(attrs) - set(tables)):
        errors.append(f"kmod/tier.c: PT_STAT_ATTR({f}) has no pt_{f}_cols[]")
    for f in sorted(set(documented) - set(tables)):
        errors.append(f"kmod/README.md: `{f}` is documented but has no table in kmod/tier.c")
    for f, cols in sorted(tables.items()):
        rows = documented.get(f)
        if rows is None:
            errors.append(f"kmod/README.md: no column table for `{f}`")
            continue
        for i, (n, _) in enumerate(rows):
            if n != i + 1:
                errors.append(f"kmod/README.md: `{f}` row {i + 1} is numbered {n}")
        names = [name for _, name in rows]
        for i in range(max(len(cols), len(names))):
            c = cols[i] if i < len(cols) else "(none)"
            d = names[i] if i < len(names) else "(none)"
            if c != d:
                errors.append(f"`{f}` column {i + 1}: kmod/tier.c has {c}, "
                              f"kmod/README.md has {d}")
    for e in errors:
        print(e)
    total = sum(len(c) for c in tables.values())
    if errors:
        print(f"check_stat_columns: {len(errors)} differences")
        return 1
    print(f"check_stat_columns: {len(tables)} files, {total} columns, README agrees")
    return 0


if __name__ == "__main__":
    sys.exit(main())
