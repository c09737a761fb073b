#!/usr/bin/env python3
"""The manuals against the code: run by `make unit`.

Fails when:
- a key daemon/config.c accepts is missing from pagetierd.conf(5), or the manual documents
  a key the parser does not accept, or documents it in the wrong section ([daemon] or the
  policy keys);
- the default the manual gives a key is not the built-in default (each default is written
  into a configuration and loaded with the daemon's parser: tests/man/config_default.c);
- the keys taken from config.c's source are not those the built pagetierd accepts, or
  not those its "unknown key" message lists;
- an option of `pagetierd --help` or of pagetierd.c's option table is missing from
  pagetierd(8), likewise for pagetierctl(8) and its commands, or a manual documents an
  option or command that the program does not have;
- README.md does not mention a key.

Nothing here is a hand-kept list of keys or options: they come from the source, the
binaries and the manuals' sources (docs/man/*.scd, whose entry layout is described at the
top of each).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

results = []


def check(name, problems):
    """Records one check; problems is a list of strings (empty: passed)."""
    results.append((name, problems))
    status = "ok  " if not problems else "FAIL"
    print(f"{status} {name}")
    for p in problems:
        print(f"       {p}")


def diff(what, have, want, have_name, want_name):
    out = [f"{what} '{k}' is in {want_name} but not in {have_name}" for k in sorted(want - have)]
    out += [f"{what} '{k}' is in {have_name} but not in {want_name}" for k in sorted(have - want)]
    return out


# --- keys from the source ---------------------------------------------------------------

def function_body(src, name):
    """The text of C function @name (from its signature to the closing brace at column 0)."""
    m = re.search(r"^(?:static\s+)?int\s+" + re.escape(name) + r"\s*\(", src, re.M)
    if not m:
        raise SystemExit(f"check_man: function {name} not found in config.c")
    end = src.find("\n}\n", m.end())
    return src[m.start():end]


def source_keys(config_c):
    src = open(config_c).read()
    key_re = re.compile(r'strcmp\(name,\s*"([a-z_0-9]+)"\)')
    policy = set(key_re.findall(function_body(src, "policy_key")))
    main = function_body(src, "main_handler")
    # The [daemon] block of main_handler, up to the [defaults] one.
    start = main.find('strcmp(section, "daemon")')
    stop = main.find('strcmp(section, "defaults")')
    if start < 0 or stop < start:
        raise SystemExit("check_man: the [daemon] block of main_handler not found in config.c")
    daemon = set(key_re.findall(main[start:stop]))
    return daemon, policy


# --- the binary -------------------------------------------------------------------------

def write_config(root, main_text=None, policies=None):
    os.makedirs(os.path.join(root, "containers.d"), exist_ok=True)
    os.chmod(root, 0o755)
    os.chmod(os.path.join(root, "containers.d"), 0o755)
    if main_text is not None:
        with open(os.path.join(root, "pagetierd.conf"), "w") as f:
            f.write(main_text)
    if policies is not None:
        with open(os.path.join(root, "containers.d", "t.conf"), "w") as f:
            f.write(policies)


def check_config(pagetierd, main_text=None, policies=None):
    with tempfile.TemporaryDirectory() as d:
        write_config(d, main_text, policies)
        p = subprocess.run([pagetierd, "--check-config", "--config-dir", d],
                           capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout + p.stderr


def known_list(out):
    m = re.search(r"\(known: ([a-z_0-9, ]+)\)", out)
    return set(k.strip() for k in m.group(1).split(",")) if m else set()


def binary_checks(pagetierd, daemon, policy):
    # What the "unknown key" messages list.
    _, out = check_config(pagetierd, "[daemon]\nno_such_key_x = 1\n")
    check("pagetierd's unknown-key message lists the [daemon] keys of config.c",
          diff("key", known_list(out), daemon, "the message", "config.c"))
    _, out = check_config(pagetierd, None, "[t]\nmatch_cgroup = /t\nno_such_key_x = 1\n")
    check("pagetierd's unknown-key message lists the policy keys of config.c",
          diff("key", known_list(out), policy, "the message", "config.c"))

    # Each key from the source is accepted (a bad value is refused for its value, not
    # as an unknown key), and an unknown one is not: the extraction is the parser's.
    problems = []
    rc, out = check_config(pagetierd, "[daemon]\nno_such_key_x = 1\n")
    if rc == 0 or "unknown key" not in out:
        problems.append(f"an unknown [daemon] key was not refused as unknown: {out.strip()}")
    for k in sorted(daemon):
        rc, out = check_config(pagetierd, f"[daemon]\n{k} = @bad@\n")
        if rc == 0 or "unknown key" in out:
            problems.append(f"[daemon] {k}: {out.strip() or 'accepted @bad@'}")
    for k in sorted(policy):
        match = "" if k in ("match_cgroup", "match_id") else "match_cgroup = /t\n"
        rc, out = check_config(pagetierd, None, f"[t]\n{match}{k} = @bad@\n")
        if rc == 0 or "unknown key" in out:
            problems.append(f"policy {k}: {out.strip() or 'accepted @bad@'}")
    check("pagetierd accepts exactly the keys found in config.c", problems)


# --- pagetierd.conf(5) --------------------------------------------------------------------

def scd_entries(path, entry_re):
    """{heading: [(name, line_no, following lines)]} of the entries of a .scd manual."""
    sections = {}
    heading = None
    lines = open(path).read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            continue
        m = re.match(entry_re, line)
        if m:
            body = []
            for nxt in lines[i + 1:]:
                if nxt and not nxt.startswith("\t"):
                    break
                body.append(nxt)
            sections.setdefault(heading, []).append((m.group(1), i + 1, "\n".join(body)))
    return sections


def conf_man_checks(man, daemon, policy, default_bin):
    sections = scd_entries(man, r"^\*([a-z_0-9]+)\* = ")
    man_daemon = {e[0]: e for e in sections.get("[daemon] SECTION", [])}
    man_policy = {e[0]: e for e in sections.get("POLICY KEYS", [])}
    elsewhere = [f"'{e[0]}' (line {e[1]}) is under '{h}', neither [daemon] SECTION nor POLICY KEYS"
                 for h, es in sections.items() if h not in ("[daemon] SECTION", "POLICY KEYS")
                 for e in es]
    check("pagetierd.conf(5) documents every [daemon] key of config.c, and no other",
          diff("[daemon] key", set(man_daemon), daemon, "pagetierd.conf(5)", "config.c") + elsewhere)
    check("pagetierd.conf(5) documents every policy key of config.c, and no other",
          diff("policy key", set(man_policy), policy, "pagetierd.conf(5)", "config.c"))

    # Defaults: each one, written into a configuration, must load as the built-in one.
    problems = []
    with tempfile.TemporaryDirectory() as d:
        def same_as_builtin(text):
            write_config(d, text)
            p = subprocess.run([default_bin, d], capture_output=True, text=True, timeout=30)
            return p.returncode, (p.stdout + p.stderr).strip()

        # The comparison can tell a difference at all.
        rc, out = same_as_builtin("[daemon]\n")
        if rc != 0:
            problems.append(f"config_default: an empty configuration is not the default: {out}")
        rc, out = same_as_builtin("[defaults]\nidle_threshold = 31s\n")
        if rc != 1:
            problems.append(f"config_default: idle_threshold = 31s was not seen to differ: {out}")
        for section, entries in (("daemon", man_daemon), ("defaults", man_policy)):
            for k, (_, line, body) in sorted(entries.items()):
                m = re.search(r"Default: (?:\*([^*]+)\*|(none))", body)
                if not m:
                    problems.append(f"{k} (line {line}): no 'Default: *VALUE*' or 'Default: none'")
                    continue
                if m.group(2):
                    # "none": a key that names something (match_*), or an optional feature
                    # whose empty value is the built-in default (off).
                    if k not in ("match_cgroup", "match_id"):
                        rc, out = same_as_builtin(f"[{section}]\n{k} =\n")
                        if rc != 0:
                            problems.append(f"{k} (line {line}): 'Default: none', but '{k} =' (empty) is not the built-in default: {out}")
                    continue
                rc, out = same_as_builtin(f"[{section}]\n{k} = {m.group(1)}\n")
                if rc == 1:
                    problems.append(f"{k} (line {line}): the manual's default '{m.group(1)}' is not the built-in one")
                elif rc != 0:
                    problems.append(f"{k} (line {line}): the manual's default '{m.group(1)}' does not load: {out}")
    check("pagetierd.conf(5) gives each key the default the code has", problems)


def readme_checks(readme, keys):
    text = open(readme).read()
    check("README.md mentions every configuration key",
          [f"key '{k}' is not mentioned as `{k}` in README.md" for k in sorted(keys)
           if f"`{k}`" not in text])


# --- options and commands -----------------------------------------------------------------

def help_text(binary):
    p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise SystemExit(f"check_man: {binary} --help exited {p.returncode}")
    return p.stdout


def table_options(c_source):
    """Long options of the getopt_long table in @c_source."""
    src = open(c_source).read()
    return {"--" + o for o in re.findall(
        r'\{\s*"([a-z][a-z0-9-]*)"\s*,\s*(?:no|required|optional)_argument', src)}


def option_checks(prog, binary, c_source, man):
    text = help_text(binary)
    from_help = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))
    from_table = table_options(c_source)
    if not from_table:
        raise SystemExit(f"check_man: no option table found in {c_source}")
    man_opts = {e[0] for e in scd_entries(man, r"^\*(--[a-z][a-z0-9-]*)\*").get("OPTIONS", [])}
    table_name = os.path.basename(c_source) + "'s option table"
    problems = [f"option '{o}' of {prog} --help is not in {prog}(8)"
                for o in sorted(from_help - man_opts)]
    problems += [f"option '{o}' of {table_name} is not in {prog}(8)"
                 for o in sorted(from_table - from_help - man_opts)]
    problems += [f"option '{o}' is in {prog}(8) but {prog} has no such option"
                 for o in sorted(man_opts - from_help - from_table)]
    check(f"{prog}(8) documents every option of {prog} --help and of its option table, and no other",
          problems)
    missing_from_help = sorted(from_table - from_help - {"--help"})
    if missing_from_help:
        print(f"       note: {prog} --help does not list {', '.join(missing_from_help)}")
    return text


def command_checks(prog, text, man):
    from_help = set(m.group(1) for m in re.finditer(r"^  ([a-z]+(?: [a-z]+)*)(?= |$)", text, re.M))
    man_cmds = {e[0] for e in scd_entries(man, r"^\*([a-z]+(?: [a-z]+)*)\*").get("COMMANDS", [])}
    check(f"{prog}(8) documents every command of {prog} --help, and no other",
          diff("command", man_cmds, from_help, f"{prog}(8)", f"{prog} --help"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--bin", required=True, help="directory of pagetierd and pagetierctl")
    ap.add_argument("--config-default", required=True, help="the config_default helper")
    a = ap.parse_args()
    top = os.path.abspath(a.top)
    man = os.path.join(top, "docs", "man")
    pagetierd = os.path.join(a.bin, "pagetierd")
    pagetierctl = os.path.join(a.bin, "pagetierctl")

    daemon, policy = source_keys(os.path.join(top, "daemon", "config.c"))
    if len(daemon) < 5 or len(policy) < 5:
        raise SystemExit(f"check_man: too few keys found in config.c ({daemon}, {policy}): "
                         "has the parser's shape changed?")
    print(f"config.c: {len(daemon)} [daemon] keys, {len(policy)} policy keys")
    binary_checks(pagetierd, daemon, policy)
    conf_man_checks(os.path.join(man, "pagetierd.conf.5.scd"), daemon, policy, a.config_default)
    readme_checks(os.path.join(top, "README.md"), daemon | policy)
    option_checks("pagetierd", pagetierd, os.path.join(top, "daemon", "pagetierd.c"),
                  os.path.join(man, "pagetierd.8.scd"))
    text = option_checks("pagetierctl", pagetierctl, os.path.join(top, "daemon", "pagetierctl.c"),
                         os.path.join(man, "pagetierctl.8.scd"))
    command_checks("pagetierctl", text, os.path.join(man, "pagetierctl.8.scd"))

    failed = sum(1 for _, p in results if p)
    print(f"man: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
